"""Kept orders as range indexes (docs/protocol.md, Kept orders): a window whose filter bounds the
field a kept order sorts by first gets its order from the records in that range of the kept order,
found by bisection, instead of a pass of its gates over the whole topic.

A conjunct of a filter (its top-level ``AND`` chain) that compares a field with a constant
(``/f = 7``, ``/f < 'x'``, ``7 <= /f``, ``/f BETWEEN 1 AND 9``, ``/f IN (1, '2')``) is true of a
scalar only inside one interval of numbers and one of texts (values.py: a number compares with a
number, and with a string that parses as one; strings compare as text, and after every number
when they do not parse). A kept order sorts numbers (booleans as 1 and 0) in one group and
non-empty strings in another (orderby.py), so each interval is a slice of it. What the slices
cannot hold is read as well: every string when the constant is a number (``' 7'`` and ``'1e3'``
compare as numbers, but sort as text), and every record whose field holds an array of two or
more values (it sorts by its first, and matches if any matches: ``KeptOrder.spread``). NULL,
missing, empty strings and objects never satisfy a comparison: they are never read.

The slices are candidates, a superset of what the filter can match: every gate is tested on
each, so the order made is the one a pass over the topic makes (a property test holds it to).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from sortedcontainers import SortedList

from ..filters import Filter, ast
from ..filters.fields import read_field
from ..filters.orderby import Keyed, OrderBy, term_part
from ..filters.values import parse_number
from ..records.version import RecordVersion
from .windows import Decoded, SortKey, Window, WindowOrder, WindowSpec, match_all, sort_entries

PAYS = 0.25  # the most of the topic the candidates may be for the index to be used
FEW = 0.1  # below it (of the topic), the records that pass are sorted, not found by a walk

Interval = tuple[Any, bool, Any, bool]  # low, low included, high, high included; None: unbounded
Bounds = tuple[Interval | None, Interval | None]  # what a comparison is true of: numbers, texts
Span = tuple[int, int]  # positions in an order, from (included) to (excluded)
SAMPLES = (0, "a")  # a number and a text: term_part gives the group of each in either direction
_FLIPPED = {"=": "=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


class _After:
    """Greater than anything: after a probe's last item, it bisects past every sort key that
    begins with the probe's items (the next item of a sort key is a group or the SowKey)."""

    __slots__ = ()

    def __lt__(self, other: object) -> bool:
        return False

    def __gt__(self, other: object) -> bool:
        return True


AFTER = _After()


class KeptOrder(WindowOrder):
    """A kept order by an ``orderby`` (orders.py), which also knows the records whose first
    field holds an array of two or more values: they sort by their first value, but a filter may
    match any of them, so no range of the order holds them all."""

    def __init__(self, order: OrderBy, records: Iterable[RecordVersion]) -> None:
        self.steps = steps = order.terms[0].steps
        self.descending = order.terms[0].descending
        # A top-level field is read inline: this runs for every change of the topic.
        self._name = steps[0] if len(steps) == 1 and type(steps[0]) is str else None
        self.spread: set[str] = set()
        self.sort_key = order.sort_key  # read by _entry, which also notes the records spread
        entries = [self._entry(version) for version in records]
        sort_entries(entries, order.sort_key)
        super().__init__(order.sort_key, match_all, entries)

    def apply(self, key: str, new: RecordVersion | None) -> list[Window]:
        if new is None and self.spread:
            self.spread.discard(key)
        return super().apply(key, new)

    def _entry(self, version: RecordVersion) -> SortKey:
        data = version.data  # decoded once, for the sort key and the first field
        name = self._name
        value = data.get(name) if name is not None and type(data) is dict else read_field(data, self.steps)
        if type(value) is list and len(value) > 1:
            self.spread.add(version.key)
        elif self.spread:
            self.spread.discard(version.key)
        return self.sort_key(Decoded(version.key, data))


def _interval(op: str, value: Any) -> Interval:
    if op == "=":
        return (value, True, value, True)
    if op in ("<", "<="):
        return (None, True, value, op == "<=")
    return (value, op == ">=", None, True)


def compared(op: str, value: Any) -> Bounds | None:
    """What ``/f op value`` can be true of (op one of = < <= > >=); None: not a constant we read."""
    kind = type(value)
    if kind is bool:
        value, kind = int(value), int
    if kind is int or kind is float:
        return (_interval(op, value), (None, True, None, True))  # every string: ' 7' is 7
    if value is None or value == "":
        return (None, None)  # NULL: a comparison with it is never true
    if kind is not str:
        return None
    number = parse_number(value)
    if number is not None:
        numbers: Interval | None = _interval(op, number)
    else:
        numbers = (None, True, None, True) if op in ("<", "<=") else None  # numbers sort first
    return (numbers, _interval(op, value))


def restriction(node: ast.Node) -> tuple[tuple[str | int, ...], list[list[Bounds]]] | None:
    """The field a conjunct bounds and how: a union of intersections of ``Bounds``; None when it
    is no comparison of a field with constants."""
    if isinstance(node, ast.Compare) and node.op in _FLIPPED:
        for field, literal, op in (
            (node.left, node.right, node.op),
            (node.right, node.left, _FLIPPED[node.op]),
        ):
            if isinstance(field, ast.Field) and isinstance(literal, ast.Literal):
                bounds = compared(op, literal.value)
                return (field.steps, [[bounds]]) if bounds is not None else None
        return None
    if isinstance(node, ast.Between) and isinstance(node.operand, ast.Field):
        if isinstance(node.low, ast.Literal) and isinstance(node.high, ast.Literal):
            low, high = compared(">=", node.low.value), compared("<=", node.high.value)
            if low is not None and high is not None:
                return (node.operand.steps, [[low, high]])
        return None
    if isinstance(node, ast.In) and isinstance(node.operand, ast.Field):
        items = [compared("=", item.value) if isinstance(item, ast.Literal) else None for item in node.items]
        if all(bounds is not None for bounds in items):
            return (node.operand.steps, [[bounds] for bounds in items if bounds is not None])
    return None


def conjuncts(filters: Iterable[Filter]) -> Iterator[ast.Node]:
    """The conjuncts of every filter: a record passes the gates only when each is true."""
    for gate in filters:
        tree = gate.tree
        yield from tree.items if isinstance(tree, ast.Logical) and tree.op == "AND" else (tree,)


def _span(ordered: SortedList, descending: bool, sample: Any, interval: Interval) -> Span:
    """The positions of ``ordered`` whose first term's value, of the class of ``sample``, lies
    in ``interval``."""
    group = term_part(sample, descending)[0]
    low, low_in, high, high_in = interval
    if descending:  # the greatest value first
        low, low_in, high, high_in = high, high_in, low, low_in
    first = (group,) if low is None else (*term_part(low, descending), *(() if low_in else (AFTER,)))
    last = (group + 1,) if high is None else (*term_part(high, descending), *((AFTER,) if high_in else ()))
    start = ordered.bisect_left(first)
    return start, max(start, ordered.bisect_left(last))


def spans(ordered: SortedList, descending: bool, alternatives: list[list[Bounds]]) -> list[Span]:
    """The positions the bounds can be true of, in order, none twice."""
    found: list[Span] = []
    for terms in alternatives:
        for index, sample in enumerate(SAMPLES):
            intervals = [bounds[index] for bounds in terms]
            parts = [_span(ordered, descending, sample, i) for i in intervals if i is not None]
            if len(parts) == len(intervals):
                start, end = max(part[0] for part in parts), min(part[1] for part in parts)
                if start < end:
                    found.append((start, end))
    found.sort()
    merged: list[Span] = []
    for start, end in found:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


@dataclass(frozen=True, slots=True)
class Plan:
    """Where a window's records can be: ``spans`` of ``kept``, and its ``spread`` records."""

    kept: KeptOrder
    spans: list[Span]
    size: int  # how many candidates

    def candidates(self) -> Iterator[SortKey]:
        """The candidates' sort keys in ``kept``: the spans' in order, then the spread ones
        that no span holds."""
        ordered = self.kept.sorted
        for start, end in self.spans:
            yield from ordered.islice(start, end)
        for key in self.kept.spread:
            entry = self.kept.keys[key]
            at = ordered.bisect_left(entry)
            if not any(start <= at < end for start, end in self.spans):
                yield entry


def plan(kept: Iterable[WindowOrder], filters: Iterable[Filter]) -> Plan | None:
    """The fewest candidates any conjunct of ``filters`` finds in a kept order that sorts by its
    field first; None when no conjunct bounds such a field."""
    bounded = [each for node in conjuncts(filters) if (each := restriction(node)) is not None]
    best: Plan | None = None
    for order in kept:
        if not isinstance(order, KeptOrder):
            continue
        for steps, alternatives in bounded:
            if steps != order.steps:
                continue
            found = spans(order.sorted, order.descending, alternatives)
            size = sum(end - start for start, end in found) + len(order.spread)
            if best is None or size < best.size:
                best = Plan(order, found, size)
    return best


def indexed_order(
    kept: Mapping[OrderBy | None, WindowOrder],
    spec: WindowSpec,
    filters: Iterable[Filter],
    matches: Callable[[Any], bool],
    records: Mapping[str, RecordVersion],
    pays: float = PAYS,
) -> WindowOrder | None:
    """The order of the records that pass ``matches`` (whose filters are ``filters``) by
    ``spec``'s sort, made from the candidates of the best plan; None when there is none with
    at most ``pays`` of the topic's records (then a pass over the topic is as quick)."""
    found = plan(kept.values(), filters)
    if found is None or found.size > pays * len(records):
        return None
    same = kept.get(spec.order) is found.kept
    passing: list[SortKey] = []
    decoded: list[Decoded] = []
    for entry in found.candidates():
        key = entry[-1]
        version = records.get(key)
        if version is None:
            continue
        data = version.data
        if matches(data):
            passing.append(entry)
            decoded.append(Decoded(key, data))
    if same:
        if found.kept.spread:
            passing.sort()  # the spread ones come last
        return WindowOrder(found.kept.sort_key, matches, passing)
    return _reordered(kept.get(spec.order), spec.sort_key, matches, decoded, len(records))


def _reordered(
    base: WindowOrder | None,
    sort_key: Callable[[Keyed], SortKey],
    matches: Callable[[Any], bool],
    decoded: list[Decoded],
    size: int,
) -> WindowOrder:
    """The order of ``decoded`` (they pass ``matches``) by ``sort_key``: sorted when they are
    few, or when no kept order ``base`` sorts by it; else found by a walk of ``base``."""
    if base is None or len(decoded) < FEW * size:
        entries = [sort_key(item) for item in decoded]
        entries.sort()
        return WindowOrder(sort_key, matches, entries)
    passing = {item.key for item in decoded}
    return WindowOrder(base.sort_key, matches, [entry for entry in base.sorted if entry[-1] in passing])
