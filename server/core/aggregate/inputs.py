"""What a group table reads of each record and keeps per group (docs/protocol.md, Aggregated
views): its inputs (a plain field's value, or an aggregate's argument prepared) and the
accumulators over them, shared by every projection over the table, and where each projected field
finds its value (``Output``).

Projections register what they need (``register``): an input or an accumulator another one has
is shared (the functions of one family over one argument share one accumulator: SUM and AVG of
/px one sum, MIN and MAX one sorted list), and what is missing is added at the end, so that what
the others hold keeps its place. When projections leave, ``renumber`` keeps only what the others
still use.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

from ..filters.functions import EvalContext
from ..records.paths import PathSteps
from .functions import FAMILY, Accumulator, Count, Distinct, Extreme, Sum
from .parse import Field, Spec
from .readers import Reader, aggregate_reader, plain_reader

# Where a projected field's value comes from (projection.py): its top-level name (None: a deeper
# path), its path, its kind (plain: an input's value in the latest record; all: COUNT(*); of: an
# accumulator's ``of`` the argument; result: the accumulator's result), the input or accumulator
# slot, and the argument of ``of`` (SUM, AVG and the deviations by name, MIN or MAX by ``least``).
Output = tuple[str | None, PathSteps, str, int, Any]

COUNT_ALL = -1  # COUNT(*): the group's members, counted by the group itself


def _stddev_shares(spec: Spec) -> set[tuple[str, str]]:
    """The (family, argument) of ``spec``'s deviations: their sums keep squares too."""
    return {
        (FAMILY[f.function], f.argument.text)
        for f in spec.fields
        if f.function is not None and f.function.startswith("STDDEV") and f.argument is not None
    }


def _plain_input(f: Field) -> tuple[Any, ...]:
    """What a plain field's reader reads: fields with equal ones share one input."""
    text = f.argument.text if f.argument is not None else None
    return ("plain", f.path, text, f.group_index is not None)


class TableInputs:
    """One table's inputs and accumulators."""

    def __init__(self, ctx: EvalContext) -> None:
        self.ctx = ctx
        # What a record contributes: one value per input, by what it reads.
        self.readers: list[Reader] = []
        self.input_of: dict[tuple[Any, ...], int] = {}
        # Each group's accumulators: (input, family, whether it keeps squares for STDDEV), and
        # the newest by (family, argument): one with squares serves SUM too.
        self.accumulated: list[tuple[int, str, bool]] = []
        self.accumulator_of: dict[tuple[str, str], int] = {}
        self.slots: list[tuple[int, int]] = []  # (input, accumulator slot)

    def missing(self, spec: Spec) -> int:
        """How many inputs and accumulators ``spec`` needs that are not kept yet."""
        stddev = _stddev_shares(spec)
        needed: set[tuple[Any, ...]] = set()
        for f in spec.fields:
            if f.function is None:
                if _plain_input(f) not in self.input_of:
                    needed.add(_plain_input(f))
            elif f.argument is not None:
                share = (FAMILY[f.function], f.argument.text)
                slot = self.accumulator_of.get(share)
                if slot is None or (share in stddev and not self.accumulated[slot][2]):
                    needed.add(share)
        return len(needed)

    def register(self, spec: Spec) -> tuple[list[int], list[int], list[Output]]:
        """Register ``spec``'s inputs and accumulators: the inputs and accumulator slots added,
        and its outputs."""
        added: list[int] = []
        new_slots: list[int] = []
        stddev = _stddev_shares(spec)

        def input_of(share: tuple[Any, ...], make: Callable[[], Reader]) -> int:
            index = self.input_of.get(share)
            if index is None:
                index = self.input_of[share] = len(self.readers)
                self.readers.append(make())
                added.append(index)
            return index

        outputs: list[Output] = []
        for f in spec.fields:
            output = f.output
            name = output[0] if len(output) == 1 and isinstance(output[0], str) else None
            if f.function is None:
                index = input_of(_plain_input(f), partial(plain_reader, f, self.ctx))
                outputs.append((name, output, "plain", index, None))
                continue
            argument = f.argument
            if argument is None:
                outputs.append((name, output, "all", COUNT_ALL, None))
                continue
            family = FAMILY[f.function]
            share = (family, argument.text)
            squares = share in stddev
            slot = self.accumulator_of.get(share)
            if slot is None or (squares and not self.accumulated[slot][2]):
                index = input_of(share, partial(aggregate_reader, family, argument, self.ctx))
                slot = self.accumulator_of[share] = len(self.accumulated)
                self.accumulated.append((index, family, squares))
                new_slots.append(slot)
            if family == "sum":
                outputs.append((name, output, "of", slot, f.function))
            elif family == "extreme":
                outputs.append((name, output, "of", slot, f.function == "MIN"))
            else:
                outputs.append((name, output, "result", slot, None))
        if new_slots:
            self.slots = [(index, slot) for slot, (index, _, _) in enumerate(self.accumulated)]
        return added, new_slots, outputs

    def new_accumulators(self, slots: Iterable[int] | None = None) -> list[Accumulator]:
        """A group's accumulators: all of them, or those of ``slots``."""
        out: list[Accumulator] = []
        chosen = range(len(self.accumulated)) if slots is None else slots
        for slot in chosen:
            _, family, stddev = self.accumulated[slot]
            if family == "sum":
                out.append(Sum("SUM", stddev))
            elif family == "extreme":
                out.append(Extreme(True))
            elif family == "count":
                out.append(Count())
            else:
                out.append(Distinct())
        return out

    def renumber(self, outputs: list[list[Output]]) -> tuple[list[int], list[int]] | None:
        """Keep only what ``outputs`` (every remaining projection's, renumbered in place) use: the
        inputs and accumulator slots kept, for the table to keep of each member and group; None
        when they use everything."""
        used_inputs = {slot for each in outputs for _, _, kind, slot, _ in each if kind == "plain"}
        used_slots = {slot for each in outputs for _, _, kind, slot, _ in each if kind in ("of", "result")}
        used_inputs |= {self.accumulated[slot][0] for slot in used_slots}
        if len(used_inputs) == len(self.readers) and len(used_slots) == len(self.accumulated):
            return None
        keep_inputs, keep_slots = sorted(used_inputs), sorted(used_slots)
        input_map = {old: new for new, old in enumerate(keep_inputs)}
        slot_map = {old: new for new, old in enumerate(keep_slots)}
        share_of = {index: share for share, index in self.input_of.items()}
        self.readers = [self.readers[index] for index in keep_inputs]
        self.input_of = {share_of[index]: input_map[index] for index in keep_inputs}
        accumulated = [self.accumulated[slot] for slot in keep_slots]
        self.accumulated = [(input_map[index], family, squares) for index, family, squares in accumulated]
        # The newest accumulator of each (family, argument), by its input's share.
        olds = zip(keep_slots, accumulated, strict=True)
        self.accumulator_of = {share_of[index]: slot_map[old] for old, (index, _, _) in olds}
        self.slots = [(index, slot) for slot, (index, _, _) in enumerate(self.accumulated)]
        for each in outputs:
            for at, (name, path, kind, slot, argument) in enumerate(each):
                if kind == "plain":
                    each[at] = (name, path, kind, input_map[slot], argument)
                elif kind != "all":
                    each[at] = (name, path, kind, slot_map[slot], argument)
        return keep_inputs, keep_slots


def settle(accumulators: Iterable[Accumulator]) -> None:
    """Sort what the MIN and MAX accumulators among ``accumulators`` gathered unsorted."""
    for accumulator in accumulators:
        if isinstance(accumulator, Extreme):
            accumulator.settle()
