"""One projection's group records, written from a group table (docs/protocol.md, Aggregated
views): the fields a subscription projected, each from the table's inputs and accumulators.

Projections over one grouping of the same input records share one table (groups.py): a change
updates the table once, and each projection writes the groups it touched in its own fields.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..records.paths import MISSING, set_path
from .groups import Group, GroupTable, Touched
from .inputs import Output
from .parse import Spec


@dataclass(slots=True)  # not frozen: one is made per group written, and frozen costs 1 us more
class GroupChange:
    key: str
    new: bool  # the group did not exist before the changes drained
    after: dict[str, Any] | None  # now (None: its last record left)
    gone: str  # why it went, when it went: match, deleted or expired
    seq: int
    timestamp: float


class Projection:
    """``spec``'s fields over ``table`` (the inputs it lacks read from each record the table holds:
    ``read``, a record's data now by its key)."""

    __slots__ = ("_outputs", "spec", "table")

    def __init__(self, table: GroupTable, spec: Spec, read: Callable[[str], Any] | None = None) -> None:
        self.table = table
        self.spec = spec
        self._outputs: list[Output] = table.adopt(spec, read)

    @property
    def outputs(self) -> list[Output]:
        """Where each field comes from: renumbered in place when the table compacts."""
        return self._outputs

    def record(self, group: Group) -> dict[str, Any]:
        """The group's record: its projected fields, in projection order."""
        out: dict[str, Any] = {}
        members = group.members
        latest = next(reversed(members.values()))
        accumulators = group.accumulators
        for name, output, kind, slot, argument in self._outputs:
            if kind == "of":
                value = accumulators[slot].of(argument)  # type: ignore[attr-defined]
            elif kind == "plain":
                # A plain field, grouping fields too, is the latest record's (1 and 1.0 are one group).
                value = latest[slot]
                if value is MISSING:
                    continue
            elif kind == "all":
                value = len(members)
            else:
                value = accumulators[slot].result()
            if name is not None:
                out[name] = value
            else:
                set_path(out, output, value)
        return out

    def changes(self, touched: list[Touched]) -> list[GroupChange]:
        """One change per group ``touched`` (drained from the table), versioned by the last change
        that touched it (a transaction's changes share its LSN); a group that came and went
        between two drains: none."""
        groups = self.table.groups
        changes: list[GroupChange] = []
        for mark in touched:
            group = groups.get(mark.key)
            if group is None:
                if mark.existed:
                    changes.append(GroupChange(mark.key, False, None, mark.gone, mark.seq, mark.timestamp))
                continue
            record = self.record(group)
            changes.append(
                GroupChange(mark.key, not mark.existed, record, mark.gone, mark.seq, mark.timestamp)
            )
        return changes

    def everything(self) -> list[GroupChange]:
        """Every group the table holds, as new, in the order of the changes that last touched them."""
        ordered = sorted(self.table.groups.values(), key=_by_seq)
        return [GroupChange(g.key, True, self.record(g), "match", g.seq, g.timestamp) for g in ordered]


def _by_seq(group: Group) -> int:
    return group.seq
