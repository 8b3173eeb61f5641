"""``grouping`` and ``projection`` (docs/protocol.md, Aggregated views), parsed once per query.

A projection is a list of items, each ``EXPRESSION [AS /path]``: an aggregate
(``SUM(/qty * /px) AS /notional``, ``COUNT(*) AS /n``), a grouping field (``/desk``), or any
other expression, which takes its value from the group's most recently changed record (AMPS).
Arguments are filter-language value expressions, compiled by the filter compiler, so an
aggregate evaluates exactly what a filter would. Everything past the limits, or malformed, is
refused with ``invalid options`` before anything is built.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import INVALID_OPTIONS, CommandError, FilterError
from ..filters import Filter, ast, compile_filter
from ..limits import AGGREGATE_UNITS, MAX_PROJECTION_BYTES
from ..protocol.lists import at_top_level, closing
from ..records.paths import PathSteps, format_path, parse_path

AGGREGATES = ("SUM", "COUNT", "COUNT_DISTINCT", "AVG", "MIN", "MAX", "STDDEV_POP", "STDDEV_SAMP")
MAX_GROUPING_FIELDS = 16
MAX_PROJECTED_FIELDS = 64
# A group record holds a record's value (at most MAX_RECORD_DEPTH levels, records/version.py) where
# its projection puts it: an ``AS`` path deeper than this could make a group record no message can
# carry. A bare path is its own output: the value under it is that much shallower.
MAX_OUTPUT_DEPTH = 16
# What a group weighs in the counts of groups (session/held.py): about this many bytes with its
# table's entry, and once more per as many bytes of its record's field names and of the text
# literals its values are made of (every group record holds them: 64 KB of names made each of
# 20,000 groups a record of 64 KB, 1.3 GB for one `sow`; 64 KB of a literal over 6,000, 384 MB).
GROUP_BYTES = 440

_CALL = re.compile(r"\s*([A-Za-z_]+)\s*\(", re.DOTALL)
_ANY_AGGREGATE = re.compile(r"\b(" + "|".join(AGGREGATES) + r")\s*\(", re.IGNORECASE)
_AS = re.compile(r"\sAS\s", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Field:
    """One projected field: where it goes in the group record, and what it holds."""

    output: PathSteps
    function: str | None  # an aggregate's name; None: a plain field
    argument: Filter | None  # the expression (None: COUNT(*))
    group_index: int | None  # a plain field that is a grouping field: which one
    path: PathSteps | None = None  # a plain field that is a bare path: copied as it is


@dataclass(frozen=True, slots=True)
class Spec:
    """A parsed grouping and projection. ``text`` is their canonical form: equal texts are the
    same aggregation (what identical subscriptions share a state by)."""

    grouping: tuple[PathSteps, ...]
    fields: tuple[Field, ...]
    text: str
    group_weight: int = 1  # how many groups one of its groups counts as (``GROUP_BYTES``)

    @property
    def aggregates(self) -> tuple[int, ...]:
        return tuple(i for i, f in enumerate(self.fields) if f.function is not None)

    @property
    def cost(self) -> int:
        """What projecting one record costs, in the filter budget's units (filters/cost.py): each
        projected field ``AGGREGATE_UNITS`` and its argument's estimated cost."""
        return sum(AGGREGATE_UNITS + (f.argument.cost if f.argument is not None else 0) for f in self.fields)


def _record_bytes(fields: tuple[Field, ...]) -> int:
    """The bytes every group record of ``fields`` holds whatever its values: the field names,
    each once, as its JSON holds it (``/a/b`` and ``/a/c`` hold ``a`` once), with its quotes and
    colon; and the text literals a field's value is made of."""
    names = {f.output[: depth + 1] for f in fields for depth in range(len(f.output))}
    literals = sum(_literal_bytes(f.argument.tree) for f in fields if f.argument is not None)
    return sum(len(str(name[-1])) + 3 for name in names) + literals


def _literal_bytes(node: ast.Node) -> int:
    """The bytes of the text literals that can be part of an expression's value: itself, or among
    a function's arguments (``CONCAT``, ``COALESCE``, ``REPLACE``'s replacement: once, at
    least). A comparison's, a pattern's or a number's are not: those make a truth or a number."""
    if isinstance(node, ast.Literal):
        return len(node.value.encode()) if isinstance(node.value, str) else 0
    if isinstance(node, ast.Call):
        return sum(_literal_bytes(argument) for argument in node.args)
    return 0


def _refuse(detail: str) -> CommandError:
    return CommandError(INVALID_OPTIONS, detail)


def _path(text: str, what: str) -> PathSteps:
    try:
        steps = parse_path(text.strip())
    except ValueError as error:
        raise _refuse(f"{what}: {error}") from None
    if not steps or any(isinstance(step, int) for step in steps):
        raise _refuse(f"{what}: {text.strip()!r} must name an object field, like /desk")
    return steps


def _expression(text: str, item: str) -> Filter:
    try:
        return compile_filter(text)
    except FilterError as error:
        raise _refuse(f"projection: {item!r}: {error.detail}") from None


def _item(item: str, grouping: tuple[PathSteps, ...]) -> Field:
    expression, output_text = item, None
    found = [m for m in _AS.finditer(item) if at_top_level(item, m.start())]
    if found:
        last = found[-1]
        expression, output_text = item[: last.start()].strip(), item[last.end() :].strip()
        if len(_path(output_text, "projection")) > MAX_OUTPUT_DEPTH:
            raise _refuse(f"projection: {item!r}: AS names a path more than {MAX_OUTPUT_DEPTH} levels deep")
    call = _CALL.match(expression)
    function = call.group(1).upper() if call is not None else None
    if (
        call is not None
        and function in AGGREGATES
        and closing(expression, call.end() - 1) == len(expression.rstrip()) - 1
    ):
        inner = expression[call.end() : expression.rstrip().rfind(")")].strip()
        if _ANY_AGGREGATE.search(inner):
            raise _refuse(f"projection: {item!r} is an aggregate of an aggregate")
        if output_text is None:
            raise _refuse(f"projection: {item!r} needs AS /name for its result")
        argument = None
        if inner == "*":
            if function != "COUNT":
                raise _refuse(f"projection: only COUNT takes *, not {function}")
        elif not inner:
            raise _refuse(f"projection: {function} takes one argument")
        else:
            argument = _expression(inner, item)
        return Field(_path(output_text, "projection"), function, argument, None)
    if _ANY_AGGREGATE.search(expression):
        raise _refuse(f"projection: {item!r}: an aggregate must be the whole expression")
    compiled = _expression(expression, item)
    tree = compiled.tree
    steps = tree.steps if isinstance(tree, ast.Field) else None
    if output_text is None and steps is None:
        raise _refuse(f"projection: {item!r} needs AS /name")
    if output_text is not None:
        output = _path(output_text, "projection")
    else:
        assert steps is not None
        if not steps or any(isinstance(step, int) for step in steps):
            raise _refuse(f"projection: {item!r} needs AS /name")
        output = steps
    index = grouping.index(steps) if steps is not None and steps in grouping else None
    return Field(output, None, compiled, index, steps)


def parse_aggregation(grouping: list[str] | None, projection: list[str] | None) -> Spec:
    """The aggregation of a query's ``grouping`` and ``projection`` items (either may be None;
    ``grouping`` alone projects the grouping fields and ``COUNT(*) AS /count``; ``projection``
    alone makes one group of every record)."""
    if projection is not None and sum(len(item) + 1 for item in projection) > MAX_PROJECTION_BYTES:
        raise _refuse(f"projection longer than 64 KB ({MAX_PROJECTION_BYTES} bytes)")
    groups = grouping or []
    if len(groups) > MAX_GROUPING_FIELDS:
        raise _refuse(f"more than {MAX_GROUPING_FIELDS} grouping fields")
    steps = tuple(_path(text, "grouping") for text in groups)
    if len(set(steps)) != len(steps):
        raise _refuse("grouping names a field twice")
    if projection is None:
        projection = [*(format_path(s) for s in steps), "COUNT(*) AS /count"]
    if not projection:
        raise _refuse("projection is empty")
    if len(projection) > MAX_PROJECTED_FIELDS:
        raise _refuse(f"more than {MAX_PROJECTED_FIELDS} projected fields")
    fields = tuple(_item(item, steps) for item in projection)
    outputs = [f.output for f in fields]
    if len(set(outputs)) != len(outputs):
        raise _refuse("projection names an output field twice")
    for out in outputs:  # /a and /a/b cannot both be written
        if any(other != out and other[: len(out)] == out for other in outputs):
            raise _refuse(f"projection writes {format_path(out)} and a field inside it")
    text = (
        "grouping=[" + ",".join(format_path(s) for s in steps) + "],projection=[" + ",".join(projection) + "]"
    )
    return Spec(steps, fields, text, 1 + _record_bytes(fields) // GROUP_BYTES)
