"""Entitlement filters (docs/protocol.md, Entitlements): the rows one user may see and change in one topic.

An entitlement is not part of a subscription's filter. It is a gate of its own that every read
path and every write path passes, so that leaving it is never mistaken for an ordinary filter
miss:

- reads: a subscription admits a record only when ``allows`` it (snapshots, live messages,
  replays, conflated and merged messages all go through ``Subscription``); a record that stops
  being allowed leaves the user's views with reason ``entitlement``, and the OOF body is the last
  state the user was allowed to see, never the new one;
- writes: ``check_write`` refuses (``not entitled``) a publish or delta publish unless both the
  record it replaces and the record it stores are allowed (a delta publish is checked against
  the merged record), and a delete only ever reaches records that are allowed.
"""

from __future__ import annotations

from typing import Any

from ..errors import NOT_ENTITLED, CommandError
from . import Filter
from .functions import EvalContext

ENTITLEMENT = "entitlement"  # the OOF reason


def gate_share(filters: tuple[Filter, ...], entitlement: Entitlement, ctx: EvalContext) -> tuple[Any, ...]:
    """What decides which records pass a view's gates (its own filters and its user's entitlement
    filter), for views to share what they derive from them (an order, a count, an aggregation):
    the filters' texts, and the caller only when a filter's value depends on it (USER(),
    CLIENT_NAME()). So a thousand users of one blotter, logged on as themselves, share one order."""
    gate = entitlement.filter
    gates = (*filters, gate) if gate is not None else filters
    caller = (ctx.user, ctx.client_name) if any(f.reads_caller for f in gates) else None
    return (tuple(f.text for f in filters), gate.text if gate is not None else None, caller)


class Entitlement:
    """What one user may see of one topic. ``filter`` None: every record."""

    __slots__ = ("ctx", "filter", "topic", "user_id")

    def __init__(self, topic: str, filter: Filter | None, ctx: EvalContext) -> None:
        self.topic = topic
        self.filter = filter
        self.ctx = ctx
        self.user_id = ctx.user

    @property
    def restricted(self) -> bool:
        return self.filter is not None

    def allows(self, data: Any) -> bool:
        return self.filter is None or self.filter.matches(data, self.ctx)

    def check_write(self, old: Any, new: Any) -> None:
        """Refuse a write that would replace a record the user may not see, or store one."""
        if self.filter is None:
            return
        # One reason for both cases, so a refusal says as little as it can about rows the user
        # may not see (that the write is refused at all is unavoidable).
        if (old is not None and not self.filter.matches(old, self.ctx)) or not self.filter.matches(
            new, self.ctx
        ):
            raise CommandError(
                NOT_ENTITLED, f"user {self.user_id!r} may write only records matching {self.filter.text!r}"
            )


UNRESTRICTED = Entitlement("", None, EvalContext())
