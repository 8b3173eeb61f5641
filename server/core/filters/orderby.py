"""``orderby``: ``/field [ASC|DESC]``, comma separated.

The order over mixed types is total and stable: numbers (booleans as 1 and 0) before strings,
strings by code point, NULL (missing, null, empty string, objects) last in both directions,
arrays by their first element, ties broken by SowKey.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..errors import INVALID_ORDER_BY, CommandError, FilterError
from ..limits import MAX_ORDERBY_LENGTH, MAX_ORDERBY_TERMS
from ..records.paths import MISSING
from .cache import COMPILED
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


class _Descending:
    """A string sorted in descending order inside an ascending sort key."""

    __slots__ = ("value",)

    def __init__(self, value: str) -> None:
        self.value = value

    def __lt__(self, other: _Descending) -> bool:
        return other.value < self.value

    def __gt__(self, other: _Descending) -> bool:
        return other.value > self.value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Descending) and other.value == self.value

    def __hash__(self) -> int:
        return hash(self.value)


@dataclass(frozen=True, slots=True)
class OrderBy:
    """A parsed ``orderby``. Orders are equal (and shared) by their terms; ``sort_key`` is the
    one definition of the order, made once per order (a fast path for the common shape)."""

    terms: tuple[OrderTerm, ...]
    sort_key: Callable[[Keyed], tuple[Any, ...]] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sort_key", _key_function(self.terms))

    def sort(self, items: Sequence[Keyed]) -> list[Keyed]:
        return sorted(items, key=self.sort_key)


def _key(terms: tuple[OrderTerm, ...], data: Any, key: str) -> tuple[Any, ...]:
    """A record's place in an order as one ascending key, unique per SowKey: used to sort a
    snapshot and to keep a live window sorted. Per term a group and a value: ascending, numbers
    (0) before strings (1); descending, strings (0) before numbers (1), each descending; NULL (2)
    last either way."""
    parts: list[Any] = []
    for term in terms:
        value = read_field(data, term.steps)
        parts += term_part(None if value is MISSING else value, term.descending)
    parts.append(key)
    return tuple(parts)


def term_part(value: Any, descending: bool) -> tuple[int, Any]:
    """What one term's ``value`` puts in a sort key (see ``_key``): its group and its value."""
    group, plain = _sort_value(value)
    if not descending or group == 2:
        return (group, plain)
    if group == 0:
        return (1, -plain)
    return (0, _Descending(plain))


def _key_function(terms: tuple[OrderTerm, ...]) -> Callable[[Keyed], tuple[Any, ...]]:
    """``_key`` of an item, reading its data once (a stored record decodes on each read). One
    top-level field holding a number, or a string in ascending order, takes a fast path that
    makes the same key (a property test holds it to ``_key``): building the order of a big topic
    is mostly this, once per record."""

    def general(item: Keyed) -> tuple[Any, ...]:
        return _key(terms, item.data, item.key)

    steps = terms[0].steps if len(terms) == 1 else ()
    if len(steps) != 1 or type(steps[0]) is not str:
        return general
    name, descending = steps[0], terms[0].descending

    def one_field(item: Keyed) -> tuple[Any, ...]:
        data = item.data
        value: Any = data.get(name) if type(data) is dict else None
        kind = type(value)
        if kind is int or kind is float:
            return (1, -value, item.key) if descending else (0, value, item.key)
        if kind is str and value and not descending:
            return (1, value, item.key)
        return _key(terms, data, item.key)

    return one_field


def sowkey_order(item: Keyed) -> tuple[Any, ...]:
    """The order without ``orderby``: by SowKey."""
    return (item.key,)


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
    # Bounded because every sort key reads every term: an order-by of 2,000 terms made one
    # ``sow`` of a single row hold every other socket for 18 s, and a window pays it per publish.
    if len(text) > MAX_ORDERBY_LENGTH:
        raise CommandError(INVALID_ORDER_BY, f"longer than {MAX_ORDERBY_LENGTH} characters ({len(text)})")
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
        if len(terms) > MAX_ORDERBY_TERMS:
            raise CommandError(INVALID_ORDER_BY, f"more than {MAX_ORDERBY_TERMS} fields")
        if tokens[pos].kind is Kind.END:
            return OrderBy(tuple(terms))
        if tokens[pos].kind is not Kind.COMMA:
            raise CommandError(INVALID_ORDER_BY, f"expected ',' at column {tokens[pos].column}")
        pos += 1
