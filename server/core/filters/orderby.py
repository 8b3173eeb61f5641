"""``orderby``: ``/field [ASC|DESC]``, comma separated.

The order over mixed types is total and stable: numbers (booleans as 1 and 0) before strings,
strings by code point, NULL (missing, null, empty string, objects) last in both directions,
arrays by their first element, ties broken by SowKey.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..cache import COMPILED
from ..errors import INVALID_ORDER_BY, CommandError, FilterError
from ..paths import MISSING
from .fields import read_field
from .lexer import Kind, tokenize


class Keyed(Protocol):
    @property
    def key(self) -> str: ...

    @property
    def data(self) -> Any: ...


@dataclass(frozen=True, slots=True)
class OrderTerm:
    steps: tuple[str | int, ...]
    descending: bool


def _sort_value(value: Any) -> tuple[int, Any]:
    if type(value) is list:
        value = value[0] if value else None
    kind = type(value)
    if kind is bool:
        return (0, int(value))
    if kind is int or kind is float:
        return (0, value)
    if kind is str and value:
        return (1, value)
    return (2, 0)


@dataclass(frozen=True, slots=True)
class OrderBy:
    terms: tuple[OrderTerm, ...]

    def sort(self, items: Sequence[Keyed]) -> list[Keyed]:
        ordered = sorted(items, key=lambda item: item.key)
        for term in reversed(self.terms):
            steps = term.steps

            def key(item: Keyed, steps: tuple[str | int, ...] = steps) -> tuple[int, Any]:
                value = read_field(item.data, steps)
                return _sort_value(None if value is MISSING else value)

            if term.descending:
                # NULLs stay last: sort the non-NULL ones descending and append the rest.
                present = [item for item in ordered if key(item)[0] < 2]
                absent = [item for item in ordered if key(item)[0] == 2]
                ordered = sorted(present, key=key, reverse=True)
                # reverse=True keeps equal items in their original order in CPython's stable sort.
                ordered.extend(absent)
            else:
                ordered.sort(key=key)
        return ordered


ORDERBY_BYTES_PER_CHAR = 32  # what a parsed order-by holds a character of its text (measured: ~11)


def parse_orderby(text: str) -> OrderBy:
    """Parse (cached in the shared byte-bounded cache); raises ``CommandError`` (invalid order by)."""
    key = ("orderby", text)
    found: OrderBy | None = COMPILED.get(key)
    if found is None:
        found = _parse(text)
        COMPILED.put(key, found, 512 + ORDERBY_BYTES_PER_CHAR * len(text))
    return found


def _parse(text: str) -> OrderBy:
    try:
        tokens = tokenize(text)
    except FilterError as error:
        raise CommandError(INVALID_ORDER_BY, error.detail) from None
    terms: list[OrderTerm] = []
    pos = 0
    while True:
        token = tokens[pos]
        if token.kind is not Kind.PATH:
            raise CommandError(INVALID_ORDER_BY, f"expected a field path at column {token.column}")
        assert isinstance(token.value, tuple)
        pos += 1
        descending = False
        word = tokens[pos].text.upper() if tokens[pos].kind is Kind.WORD else ""
        if word in ("ASC", "DESC"):
            descending = word == "DESC"
            pos += 1
        terms.append(OrderTerm(token.value, descending))
        if tokens[pos].kind is Kind.END:
            return OrderBy(tuple(terms))
        if tokens[pos].kind is not Kind.COMMA:
            raise CommandError(INVALID_ORDER_BY, f"expected ',' at column {tokens[pos].column}")
        pos += 1
