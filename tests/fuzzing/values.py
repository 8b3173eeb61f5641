"""JSON text with hostile leaves (``Raw``, ``Nested``, ``Big``) and strategies for values and records."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson
from hypothesis import strategies as st

# -- JSON text with hostile leaves -------------------------------------------------------------


@dataclass(frozen=True)
class Raw:
    """JSON text written into a frame verbatim: numbers orjson cannot write, invalid UTF-8."""

    text: bytes

    def __repr__(self) -> str:
        shown = self.text if len(self.text) <= 60 else self.text[:40] + b"...%d bytes" % len(self.text)
        return f"Raw({shown!r})"


@dataclass(frozen=True)
class Nested:
    """``depth`` nested arrays or objects around ``inner``, built only when encoded (cheap to shrink)."""

    depth: int
    kind: str = "list"  # or "dict"

    def __repr__(self) -> str:
        return f"Nested({self.depth}, {self.kind!r})"


@dataclass(frozen=True)
class Big:
    """A string of ``size`` characters (``unit`` repeated), built only when encoded."""

    size: int
    unit: str = "x"

    def build(self) -> str:
        return (self.unit * (self.size // max(1, len(self.unit)) + 1))[: self.size]

    def __repr__(self) -> str:
        return f"Big({self.size}, {self.unit!r})"


def encode(value: Any) -> bytes:
    """``value`` as JSON text; ``Raw``, ``Nested`` and ``Big`` parts as they describe."""
    out: list[bytes] = []
    _encode(value, out)
    return b"".join(out)


def _encode(value: Any, out: list[bytes]) -> None:
    if isinstance(value, Raw):
        out.append(value.text)
    elif isinstance(value, Nested):
        opening, closing = (b"[", b"]") if value.kind == "list" else (b'{"a":', b"}")
        out.append(opening * value.depth + b"1" + closing * value.depth)
    elif isinstance(value, Big):
        out.append(orjson.dumps(value.build()))
    elif isinstance(value, dict):
        out.append(b"{")
        for index, (name, item) in enumerate(value.items()):
            if index:
                out.append(b",")
            out.append(orjson.dumps(str(name)) + b":")
            _encode(item, out)
        out.append(b"}")
    elif isinstance(value, list | tuple):
        out.append(b"[")
        for index, item in enumerate(value):
            if index:
                out.append(b",")
            _encode(item, out)
        out.append(b"]")
    elif isinstance(value, int) and not isinstance(value, bool):
        out.append(str(value).encode())  # any size: orjson reads a huge one as a float
    else:
        out.append(orjson.dumps(value))


def materialise(value: Any) -> Any:
    """``value`` as plain Python (what a decoder would see), for the in-process validator target."""
    return orjson.loads(encode(value))


# -- leaves ------------------------------------------------------------------------------------

FIELD_NAMES = ("a", "b", "order", "id", "qty", "px", "s", "customer", "legs", "name with spaces", "buyer")
CUSTOMERS = st.sampled_from(["Alice", "Bob", "alice", "", None])

huge_numbers = st.sampled_from(
    [
        Raw(b"1e308"),
        Raw(b"-1e308"),
        Raw(b"1e999"),  # infinity: orjson refuses the frame
        Raw(b"123456789012345678901234567890"),
        Raw(b"18446744073709551615"),
        Raw(b"18446744073709551616"),
        Raw(b"-9223372036854775809"),
        Raw(b"1" * 5000),
        Raw(b"0." + b"0" * 400 + b"1"),
        Raw(b"4.9e-324"),
        Raw(b"-0.0"),
        Raw(b"1E400"),
    ]
)
text_values = st.one_of(
    st.text(max_size=12),
    st.sampled_from(
        ["", " ", "1", " 2 ", "1e5", "-0", "true", "FALSE", "null", "NaN", "Infinity", "é", "\x00"]
    ),
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.integers(-(2**63), 2**64 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    text_values,
)
big_strings = st.builds(
    Big, st.sampled_from([1_000, 60_000, 250_000, 1_100_000]), st.sampled_from(["x", "a", "ab", "é", "\\"])
)
invalid_text = st.sampled_from(
    [
        Raw(b'"\xff\xfe"'),
        Raw(b'"\xc3"'),
        Raw(b'"\xed\xa0\x80"'),  # a surrogate encoded as UTF-8
        Raw(b'"\\ud800"'),  # a lone surrogate escape
        Raw(b'"\\udc00\\ud800"'),
        Raw(b'"\\u0000"'),
    ]
)
deep_values = st.builds(
    Nested,
    st.one_of(st.sampled_from([2, 100, 254, 255, 256, 500, 1023, 1024, 1025]), st.integers(1, 1100)),
    st.sampled_from(["list", "dict"]),
)


def json_values(max_leaves: int = 12) -> st.SearchStrategy[Any]:
    """Plain JSON values as a decoder produces them (no NaN, no integer beyond 64 bits)."""
    keys = st.one_of(st.sampled_from(FIELD_NAMES), st.text(max_size=4))
    return st.recursive(
        scalars,
        lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=5)),
        max_leaves=max_leaves,
    )


def hostile_values() -> st.SearchStrategy[Any]:
    """Anything a hostile client may put where a field's value goes."""
    return HOSTILE


def _hostile() -> st.SearchStrategy[Any]:
    return st.one_of(
        scalars,
        json_values(6),
        huge_numbers,
        big_strings,
        deep_values,
        invalid_text,
        st.lists(st.integers(), min_size=0, max_size=3),
    )


HOSTILE = _hostile()
key_values = st.one_of(
    st.integers(0, 6),
    st.sampled_from([1.0, 0.5, -0.0, 1e300, 2.0**63, "1", "a", "", True, False]),
    st.none(),
    st.lists(st.integers(0, 2), max_size=2),
    st.just({"nested": 1}),
)


@st.composite
def records(draw: st.DrawFn) -> Any:
    """A record for one of the fuzz topics: usually with plausible keys, sometimes not."""
    record: dict[str, Any] = {}
    if draw(st.booleans()):
        record["order"] = draw(key_values)
    if draw(st.integers(0, 3)) == 0:
        record["id"] = draw(key_values)
    if draw(st.integers(0, 3)) == 0:
        record["buyer"] = {"id": draw(key_values)}
    fields = draw(st.dictionaries(st.sampled_from(FIELD_NAMES), hostile_values(), max_size=4))
    for name, value in fields.items():
        record.setdefault(name, value)
    if draw(st.integers(0, 9)) == 0:
        return draw(hostile_values())  # not an object at all
    return record
