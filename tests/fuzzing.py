"""Hostile inputs for the frame decoder, the command validator and the filter language, and the
properties each must keep whatever it is fed (issue 10, "Prove it").

Shared by ``bench/fuzz.py`` (minutes of fuzzing) and ``tests/core/test_fuzz.py`` (seconds, in the
suite). Every target is a Hypothesis strategy plus a check that raises ``AssertionError`` (with
what went wrong) when a property breaks:

- ``frames``: ``Engine.receive`` never raises, no command fails unexpectedly inside the engine
  (``log.exception``), every command with a ``cid`` gets exactly one ``processed`` ack (and a
  failed one nothing else), failure reasons are protocol words, refused and read-only commands
  leave the SOW and the publisher sequences as they were, every queued message is JSON, and two
  observers (a full and a patch delta subscription) always hold exactly the SOW;
- ``commands``: ``decode_header`` / ``decode_body`` raise nothing but ``CommandError``;
- ``filters``: ``compile_filter`` raises nothing but ``FilterError`` (``bad filter`` with a column
  inside the text), a compiled filter's evaluation over JSON records never raises and ``matches``
  returns a bool that agrees with the unspecialised evaluator;
- ``orderby``, ``options``, ``select``: only ``CommandError`` / ``ValueError`` as documented, and
  the compiled result never raises on records.
"""

from __future__ import annotations

import logging
import math
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import jsonpatch
import orjson
from hypothesis import strategies as st

from server.core.commands import decode_body, decode_header
from server.core.errors import CommandError, FilterError
from server.core.filters import compile_filter, compiler, parse_orderby
from server.core.filters.functions import FUNCTIONS, EvalContext
from server.core.options import parse_logon_options, parse_options
from server.core.select import parse_select
from tests.core.harness import Harness, Peer

# Reasons a failure ack may start with (PROTOCOL 6.5, plus `name in use` of 6.4).
REASONS = (
    "bad filter",
    "invalid topic",
    "invalid options",
    "invalid order by",
    "not entitled",
    "auth failure",
    "logon required",
    "subid in use",
    "no topic",
    "bad message",
    "unavailable",
    "name in use",
)
WRITE_COMMANDS = frozenset({"publish", "delta_publish", "sow_delete", "tx"})
QUERY_COMMANDS = ("sow", "subscribe", "sow_and_subscribe", "delta_subscribe", "sow_and_delta_subscribe")
COMMAND_NAMES = (
    "logon",
    "publish",
    "delta_publish",
    "sow_delete",
    *QUERY_COMMANDS,
    "unsubscribe",
    "heartbeat",
    "flush",
    "tx",
    "visibility",
)
FUZZ_TOPICS: list[dict[str, Any]] = [
    {"name": "orders", "key": ["/order"]},
    {"name": "trades", "key": ["/buyer/id", "/id"]},
    {"name": "ledger", "key": ["/id"], "durable": True, "expiration": "30s", "conflation": "always"},
]
SOW_TOPICS = ("orders", "trades", "ledger")


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


# -- filters, order-by, options, select lists ---------------------------------------------------

_TEMPLATE = re.compile(r"«(.+?)\*(\d+)»")


def expand(text: str) -> str:
    """``«x*5000»`` written out: big literals stay small in the strategies' reprs."""
    return _TEMPLATE.sub(lambda match: match.group(1) * int(match.group(2)), text)


PATH_TEXTS = (
    "/a",
    "/b",
    "/order",
    "/qty",
    "/px",
    "/s",
    "/customer",
    "/a/b",
    "/a[0]",
    "/legs/qty",
    "/legs[1]/qty",
    "[/name with spaces]",
    "/buyer/id",
    "/x9$@",
)
NUMBER_TEXTS = st.sampled_from(
    [
        "0",
        "1",
        "-1",
        "2.5",
        ".5",
        "6.022E23",
        "1e999",
        "1e-999",
        "9223372036854775808",
        "«1*400»",
        "«9*4301»",  # past CPython's int() digit limit
        "0.000001",
        "1E308",
    ]
).map(expand)
REGEX_TEXTS = st.one_of(
    st.sampled_from(
        [
            "^a",
            "a$",
            "(?i)ab",
            "(.*a){20}",
            "(a+)+$",
            "«(*300»a«)*300»",
            "«(*5000»a«)*5000»",
            "a{1000}{1000}",
            "a{1001}",
            "(x{1000}){1000}",
            "\\p{L}+",
            "[[:alpha:]]",
            "(?P<n>a)(?P=n)",
            "\\1",
            "[",
            "(?<!a)b",
            "\\",
            "\x00",
            "é+",
        ]
    ).map(expand),
    st.text(alphabet="ab.*+?()[]{}|^$\\d0123456789,-:iP<>=!", max_size=20),
)


def _quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


string_literals = st.one_of(
    st.builds(_quote, text_values),
    st.sampled_from(["''", '""', "'\\'", "'it''s'", "'a\\n'", "'«z*70000»'", "'unclosed"]).map(expand),
)
atoms = st.one_of(
    st.sampled_from(PATH_TEXTS),
    NUMBER_TEXTS,
    string_literals,
    st.sampled_from(["NULL", "TRUE", "FALSE", "null", "True"]),
)
function_names = st.sampled_from([*sorted(FUNCTIONS), "NOPE", "upper", "SUM"])


def _call(name: str, args: list[str]) -> str:
    return f"{name}({', '.join(args)})"


def _extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    comparison = st.sampled_from(["=", "==", "!=", "<>", "<", "<=", ">", ">="])
    arithmetic = st.sampled_from(["+", "-", "*", "/", "%"])
    logical = st.sampled_from(["AND", "OR", "and", "or"])
    negated = st.sampled_from(["", "NOT "])
    items = st.lists(inner, min_size=1, max_size=4).map(", ".join)
    return st.one_of(
        st.builds(lambda a, op, b: f"{a} {op} {b}", inner, comparison, inner),
        st.builds(lambda a, op, b: f"{a} {op} {b}", inner, arithmetic, inner),
        st.builds(lambda a, op, b: f"{a} {op} {b}", inner, logical, inner),
        st.builds(lambda a: f"NOT {a}", inner),
        st.builds(lambda a: f"-{a}", inner),
        st.builds(lambda a: f"({a})", inner),
        st.builds(lambda a, n, lo, hi: f"{a} {n}BETWEEN {lo} AND {hi}", inner, negated, inner, inner),
        st.builds(lambda a, n, xs: f"{a} {n}IN ({xs})", inner, negated, items),
        st.builds(lambda a, n, p: f"{a} {n}LIKE {_quote(p)}", inner, negated, REGEX_TEXTS),
        st.builds(lambda a, n, xs: f"{a} {n}BEGINS WITH ({xs})", inner, negated, items),
        st.builds(lambda a, n, xs: f"{a} {n}ENDS WITH ({xs})", inner, negated, items),
        st.builds(lambda a, n: f"{a} IS {n}NULL", inner, negated),
        st.builds(_call, function_names, st.lists(inner, max_size=4)),
        st.builds(
            lambda p, a, b: f"REGEXP_REPLACE({p}, {_quote(a)}, {_quote(b)})",
            inner,
            REGEX_TEXTS,
            st.sampled_from(["", "x", "\\1", "\\9", "\\0", "$1", "\\\\", "xxxxxxxx"]),
        ),
        st.builds(
            lambda n, a: "REPLACE(" * n + a + ", 'x', 'xxxxxxxx')" * n,
            st.integers(1, 8),
            inner,
        ),
        st.builds(lambda n, a: "(" * n + a + ")" * n, st.sampled_from([50, 99, 101, 1000, 20_000]), inner),
        st.builds(lambda a, n: f"ROUND({a}, {n})", inner, NUMBER_TEXTS),
    )


grammar_filters = st.recursive(atoms, _extend, max_leaves=8)


@st.composite
def mutated(draw: st.DrawFn, base: st.SearchStrategy[str]) -> str:
    """``base`` with a few characters inserted, deleted or replaced: the parser's error paths."""
    text = draw(base)
    for _ in range(draw(st.integers(0, 3))):
        position = draw(st.integers(0, len(text)))
        action = draw(st.sampled_from(["insert", "delete", "replace"]))
        char = draw(st.sampled_from([*"()[]'\"/,\\ =<>!-+*%.0eE", "AND", "NOT", "IN", "é", "\x00"]))
        if action == "insert":
            text = text[:position] + char + text[position:]
        elif action == "delete":
            text = text[:position] + text[position + 1 :]
        else:
            text = text[:position] + char + text[position + 1 :]
    return text


filter_texts = st.one_of(
    grammar_filters,
    mutated(grammar_filters),
    st.text(alphabet="/ab()[]'\",=<>!-+*%.0123456789eE ANDORNTILKE", max_size=40),
    st.text(max_size=20),
)
orderby_texts = st.one_of(
    st.lists(
        st.builds(
            lambda path, direction: f"{path}{direction}",
            st.sampled_from([*PATH_TEXTS, "", "qty", "/", "//a", "/a[", "/a[99999999999999999999]"]),
            st.sampled_from(["", " ASC", " DESC", " desc", " UP", ","]),
        ),
        min_size=1,
        max_size=4,
    ).map(", ".join),
    mutated(st.sampled_from(["/qty DESC, /px", "/order", "[/name with spaces] ASC"])),
    st.text(max_size=20),
)
select_texts = st.one_of(
    st.lists(
        st.builds(
            lambda sign, path: sign + path,
            st.sampled_from(["+", "-", "", "*", "+ "]),
            st.sampled_from([*PATH_TEXTS, "/", "", "/a/", "/a[0]", "/a//b"]),
        ),
        min_size=0,
        max_size=5,
    ).map(",".join),
    st.text(max_size=15),
)
DURATIONS = [
    "250ms",
    "1s",
    "0s",
    "0ms",
    "100000h",
    "1e3s",
    "1.5m",
    "-1s",
    "99999999999999999999999h",
    "s",
    "",
]
option_items = st.one_of(
    st.sampled_from(
        [
            "oof",
            "no_empties",
            "no_sowkey",
            "send_keys",
            "send_keys=false",
            "send_keys=maybe",
            "timestamp",
            "replace",
            "resume",
            "positions",
            "delta=patch",
            "delta=merge",
            "delta=",
            "oof=1",
            "unknown",
            "=",
            "top_n=",
            "top_n=-1",
            "top_n=99999999999999999999999",
            "skip_n=0",
            "conflation_key=[/id]",
            "conflation_key=[/a,/b[0]]",
            "conflation_key=[]",
            "conflation_key=/id",
            "select=[",
            "select=]",
            "select=[[]]",
            "select=[-/,+/id]",
        ]
    ),
    st.builds(lambda d: f"conflation={d}", st.sampled_from(DURATIONS)),
    st.builds(lambda n: f"top_n={n}", st.integers(0, 10**6)),
    st.builds(lambda s: f"select=[{s}]", select_texts),
    st.builds(lambda s: f"conflation_key=[{s}]", select_texts),
)
option_texts = st.one_of(
    st.lists(option_items, max_size=5).map(", ".join),
    mutated(st.sampled_from(["oof,select=[-/,+/id],conflation=250ms", "top_n=5, skip_n=2"])),
    st.text(max_size=20),
    st.builds(lambda n: ",".join(["oof"] * n), st.sampled_from([1000, 100_000])),
)

# -- commands and frames -----------------------------------------------------------------------

RELEVANT_FIELDS: dict[str, tuple[str, ...]] = {
    "logon": ("client_name", "user_id", "pw", "o"),
    "publish": ("t", "data", "s", "e"),
    "delta_publish": ("t", "data", "s", "e"),
    "sow_delete": ("t", "filter", "sow_keys", "data", "s"),
    "sow": ("t", "filter", "o", "bs", "top_n", "skip_n", "orderby", "query_id"),
    "subscribe": ("t", "filter", "o", "sub_id", "bm"),
    "delta_subscribe": ("t", "filter", "o", "sub_id", "bm"),
    "sow_and_subscribe": ("t", "filter", "o", "bs", "top_n", "skip_n", "orderby", "query_id", "sub_id"),
    "sow_and_delta_subscribe": ("t", "filter", "o", "top_n", "skip_n", "orderby", "query_id", "sub_id"),
    "unsubscribe": ("sub_id",),
    "heartbeat": (),
    "flush": (),
    "tx": ("cmds", "s"),
    "visibility": ("hidden",),
}
ALL_FIELDS = tuple(sorted({name for names in RELEVANT_FIELDS.values() for name in names}))
ack_lists = st.one_of(
    st.lists(
        st.sampled_from(["received", "processed", "persisted", "completed", "stats", "", " ", "nope"]),
        max_size=4,
    ).map(",".join),
    st.sampled_from(["processed", "processed,persisted,stats,completed"]),
)
identifiers = st.one_of(
    st.integers(0, 5), st.sampled_from(["q", "s1", "all", "", " ", "a,b"]), st.text(max_size=6)
)


def _plausible(name: str, command: st.SearchStrategy[Any] | None) -> st.SearchStrategy[Any]:
    if name == "t":
        return st.sampled_from([*SOW_TOPICS, "plain", "orders", "orders"])
    if name == "data":
        return records()
    if name == "s":
        return st.integers(-1, 6)
    if name == "e":
        return st.sampled_from([0, 1, 0.001, 30, 1e300, -1, 86400 * 365 * 1000])
    if name == "filter":
        return filter_texts
    if name == "orderby":
        return orderby_texts
    if name == "o":
        return option_texts
    if name == "sow_keys":
        return st.one_of(st.lists(st.text(max_size=22), max_size=3), st.text(max_size=30))
    if name in ("bs", "top_n", "skip_n"):
        return st.integers(-1, 5)
    if name in ("sub_id", "query_id"):
        return identifiers
    if name == "bm":
        return st.sampled_from(["0", "now", "", "1", "99999999999999999999", "2020-01-01T00:00:00Z", "x|y"])
    if name in ("client_name", "user_id", "pw"):
        return st.one_of(st.sampled_from(["feed", "alice", "bob", "", "desk-1"]), st.text(max_size=8))
    if name == "cmds":
        return st.lists(command, max_size=3) if command is not None else st.just([])
    if name == "hidden":
        return st.booleans()
    raise AssertionError(name)


@st.composite
def commands(draw: st.DrawFn, depth: int = 0) -> Any:
    """One command: usually well-formed enough to reach deep code, with some field hostile."""
    if draw(st.integers(0, 14)) == 0:
        return draw(hostile_values())  # not an object
    c = draw(st.one_of(st.sampled_from(COMMAND_NAMES), st.sampled_from(["", "PUBLISH", "ack", "p"])))
    command: dict[str, Any] = {"c": c}
    if draw(st.integers(0, 19)) == 0:
        command["c"] = draw(hostile_values())
    inner = commands(depth + 1) if depth == 0 else None
    for name in RELEVANT_FIELDS.get(c, ()):
        if draw(st.integers(0, 9)) < 7:
            hostile = draw(st.integers(0, 7)) == 0
            command[name] = draw(hostile_values() if hostile else _plausible(name, inner))
    for name in draw(st.lists(st.sampled_from(ALL_FIELDS), max_size=2)):
        command.setdefault(name, draw(hostile_values()))
    if draw(st.integers(0, 3)) > 0:
        command["a"] = draw(st.one_of(ack_lists, hostile_values()) if draw(st.booleans()) else ack_lists)
    return command


@dataclass(frozen=True)
class Flood:
    """``count`` copies of ``command`` in one array frame."""

    command: Any
    count: int

    def __repr__(self) -> str:
        return f"Flood({self.command!r}, {self.count})"


FLOOD_BYTES = 4_000_000  # a flood of big commands is cut to this many bytes


def flood_count(flood: Flood, one: bytes) -> int:
    return max(1, min(flood.count, FLOOD_BYTES // max(1, len(one))))


@dataclass(frozen=True)
class Tick:
    """Advance the engine's clock (expiries, conflation intervals)."""

    seconds: float


@dataclass(frozen=True)
class RawFrame:
    """Bytes (or text) as the socket delivered them."""

    data: bytes | str

    def __repr__(self) -> str:
        data = self.data
        shown = data if len(data) <= 80 else data[:60]
        return f"RawFrame({shown!r}{'' if len(data) <= 80 else f' ...{len(data)} long'})"


@st.composite
def mutated_frames(draw: st.DrawFn) -> RawFrame:
    data = bytearray(encode(draw(commands())))
    for _ in range(draw(st.integers(1, 4))):
        position = draw(st.integers(0, len(data)))
        byte = draw(st.sampled_from([*b'{}[]",:\\0e-', 0xFF, 0xC3, 0x80, 0x00]))
        if draw(st.booleans()) or position == len(data):
            data.insert(position, byte)
        else:
            del data[position]
    return RawFrame(bytes(data))


def flood_frames(max_count: int) -> st.SearchStrategy[Flood]:
    return st.builds(
        Flood,
        st.one_of(
            st.sampled_from(
                [
                    {"c": "heartbeat"},
                    1,
                    {"c": "x"},
                    {"c": "publish", "t": "orders", "data": {"order": 1}},
                    {"c": "sow", "t": "orders", "filter": "/order > 0"},
                ]
            ),
            commands(),
        ),
        st.integers(2, max_count),
    )


@st.composite
def applied_writes(draw: st.DrawFn) -> dict[str, Any]:
    """A write that has every key right, so it is applied, with hostile values inside the record:
    what reaches the SOW, the fan-out, the diff and the encoder."""
    topic = draw(st.sampled_from(SOW_TOPICS))
    keys: dict[str, dict[str, Any]] = {
        "orders": {"order": draw(st.integers(0, 5))},
        "trades": {"buyer": {"id": draw(st.integers(0, 2))}, "id": draw(st.integers(0, 2))},
        "ledger": {"id": draw(st.sampled_from(["x", "y", 1]))},
    }
    key = keys[topic]
    data = {**draw(st.dictionaries(st.sampled_from(FIELD_NAMES), HOSTILE, max_size=3)), **key}
    if draw(st.booleans()):
        data["customer"] = draw(CUSTOMERS)
    c = draw(st.sampled_from(["publish", "delta_publish", "publish", "sow_delete"]))
    command: dict[str, Any] = {"c": c, "t": topic}
    if c == "sow_delete" and draw(st.booleans()):
        command["filter"] = draw(
            st.one_of(
                st.sampled_from(["/customer = 'Bob'", "/order >= 0", "/customer IS NULL"]), filter_texts
            )
        )
    else:
        command["data"] = data
    if draw(st.booleans()):
        command["cid"] = draw(st.integers(0, 3))
    return command


@st.composite
def applied_queries(draw: st.DrawFn) -> dict[str, Any]:
    """A query or subscription that is well formed but for one hostile filter, order-by or option."""
    c = draw(st.sampled_from(QUERY_COMMANDS))
    command: dict[str, Any] = {"c": c, "t": draw(st.sampled_from(SOW_TOPICS)), "cid": draw(identifiers)}
    field_name = draw(st.sampled_from(["filter", "o", "orderby", "top_n", "filter"]))
    command[field_name] = draw(_plausible(field_name, None))
    return command


def frames(max_flood: int = 2_000) -> st.SearchStrategy[Any]:
    """One step of a hostile client: a frame (command, array, flood, raw bytes) or a clock tick."""
    return st.one_of(
        commands(),
        applied_writes(),
        applied_queries(),
        st.lists(st.one_of(applied_writes(), applied_queries()), max_size=4),
        commands(),
        st.lists(commands(), max_size=6),
        flood_frames(max_flood),
        mutated_frames(),
        st.builds(RawFrame, st.binary(max_size=64)),
        st.builds(
            RawFrame,
            st.sampled_from(
                [
                    b"",
                    b"[]",
                    b"{}",
                    b"null",
                    b'{"c":"heartbeat","cid":"\xff"}',
                    '{"c":"heartbeat","cid":"\ud800"}',
                    '[{"c":"heartbeat","cid":1}]',
                    b'\xef\xbb\xbf{"c":"heartbeat","cid":1}',
                    b'{"c":"heartbeat","cid":1,"cid":2}',
                    b'{"c":"publish","t":"orders","data":{"order":1},"data":{"order":2},"cid":"d"}',
                ]
            ),
        ),
        st.builds(lambda n: RawFrame(b"[" * n + b"]" * n), st.sampled_from([255, 1024, 1025, 100_000])),
        st.builds(Tick, st.sampled_from([0.1, 1.0, 31.0, 3600.0, 1e7])),
    )


def frame_bytes(step: Any) -> bytes | str:
    if isinstance(step, RawFrame):
        return step.data
    if isinstance(step, Flood):
        one = encode(step.command)
        return b"[" + b",".join([one] * flood_count(step, one)) + b"]"
    return encode(step)


# With [auth] (the frames-auth target): the attacker is alice, who may write every topic but sees
# and touches only Alice's orders; the observers may read everything and write nothing.
FUZZ_AUTH: dict[str, Any] = {
    "user": [
        {"user_id": "feed", "password": "f", "read": ["*"], "write": ["*"]},
        {
            "user_id": "alice",
            "password": "a",
            "read": ["*"],
            "write": ["*"],
            "filter": {"orders": "/customer = 'Alice'"},
        },
        {"user_id": "watcher", "password": "w", "read": ["*"], "write": []},
    ]
}
FEED = {"c": "logon", "user_id": "feed", "pw": "f", "client_name": "feed"}
ATTACKER = {"c": "logon", "user_id": "alice", "pw": "a", "client_name": "desk"}
WATCHER = {"c": "logon", "user_id": "watcher", "pw": "w"}

SEED_FRAMES: list[dict[str, Any]] = [
    {
        "c": "publish",
        "t": "orders",
        "data": {"order": n, "qty": n * 10, "s": f"o{n}", "a": {"b": n}, "customer": ["Alice", "Bob"][n % 2]},
    }
    for n in range(4)
] + [
    {"c": "publish", "t": "trades", "data": {"buyer": {"id": 1}, "id": 2, "qty": 5}},
    {"c": "publish", "t": "ledger", "data": {"id": "x", "qty": 1}},
]

# -- the engine target ---------------------------------------------------------------------------


class _Captured(logging.Handler):
    """Records every log entry that carries an exception: a command that failed unexpectedly."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.failures: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info or record.levelno >= logging.ERROR:
            summary = record.getMessage()[:300]
            if record.exc_info and record.exc_info[1] is not None:
                error = record.exc_info[1]
                summary += f"\n    {type(error).__name__}: {str(error)[:300]}"
                tb = error.__traceback__
                while tb is not None and tb.tb_next is not None:
                    tb = tb.tb_next
                if tb is not None:
                    code = tb.tb_frame.f_code
                    summary += f"\n    raised at {code.co_filename}:{tb.tb_lineno} in {code.co_name}"
            self.failures.append(summary)


@contextmanager
def captured_failures() -> Iterator[_Captured]:
    handler = _Captured()
    logger = logging.getLogger("server")
    logger.addHandler(handler)
    previous = logger.level
    logger.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous)


def _valid_cid(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _freeze(value: Any) -> Any:
    """A hashable form of a cid (1 and "1" stay distinct)."""
    return (type(value).__name__, value)


@dataclass
class _View:
    """What an observer's subscription holds: SowKey -> record."""

    records: dict[str, Any] = field(default_factory=dict)


class EngineRig:
    """An engine with three SOW topics, an attacker socket and two observer sockets.

    ``step`` feeds one hostile frame (or clock tick) from the attacker and checks every property;
    it raises ``AssertionError`` naming the broken one.
    """

    def __init__(self, slow_s: float = 5.0, auth: bool = False) -> None:
        self.harness = Harness(FUZZ_TOPICS, **({"auth": FUZZ_AUTH} if auth else {}))
        self.engine = self.harness.engine
        self.slow_s = slow_s
        self.auth = auth
        self.attacker = self._connect(ATTACKER)
        self.full_observer = self._connect(WATCHER)
        self.delta_observer = self._connect(WATCHER)
        feed = self._connect(FEED)
        for message in (
            self.full_observer.send({"c": "sow_and_subscribe", "t": "orders", "cid": "full", "o": "oof"})
            + self.delta_observer.send(
                {"c": "sow_and_delta_subscribe", "t": "orders", "cid": "delta", "o": "oof"}
            )
            + feed.send(*SEED_FRAMES)
        ):
            if message.get("c") == "ack":
                assert message.get("status") == "success", f"setting up the rig failed: {message}"
        self.engine.close_session(feed.session)
        self.views = {"full": _View(), "delta": _View()}
        self._observe()

    def _connect(self, logon: dict[str, Any]) -> Peer:
        """A new socket; with ``[auth]``, logged on with ``logon``."""
        peer = self.harness.peer()
        if self.auth:
            replies = peer.send({**logon, "cid": "logon"})
            assert replies and replies[-1]["status"] == "success", f"logon failed: {replies}"
        return peer

    # -- state ---------------------------------------------------------------------------------

    def stored(self) -> tuple[dict[str, dict[str, Any]], dict[str, int]]:
        """The SOW of every topic (record versions are immutable: identity is enough) and the
        publisher sequences."""
        sow = {name: dict(self.engine.topics[name].records) for name in SOW_TOPICS}
        return sow, dict(self.engine.sequences)

    def _sow_data(self, topic: str) -> dict[str, Any]:
        return {key: version.data for key, version in self.engine.topics[topic].records.items()}

    # -- one step --------------------------------------------------------------------------------

    def step(self, step: Any) -> None:
        if isinstance(step, Tick):
            self.harness.clock.now += step.seconds
            with captured_failures() as failures:
                self.engine.advance(self.harness.clock.now)
            assert not failures.failures, "advance() failed unexpectedly:\n" + "\n".join(failures.failures)
            self._observe()
            return
        frame = frame_bytes(step)
        if self.attacker.session.close_code is not None:
            self.engine.close_session(self.attacker.session)  # the runtime would; the client reconnects
            self.attacker = self._connect(ATTACKER)
        before = self.stored()
        started = time.perf_counter()
        with captured_failures() as failures:
            try:
                self.engine.receive(self.attacker.session, frame)
            except Exception as error:
                raise AssertionError(f"Engine.receive raised {type(error).__name__}: {error}") from error
            messages = self._take(self.attacker)
        elapsed = time.perf_counter() - started
        assert not failures.failures, "a command failed unexpectedly in the engine:\n" + "\n".join(
            failures.failures
        )
        per_command = elapsed / max(1, len(step) if isinstance(step, list) else 1)
        if isinstance(step, Flood):
            per_command = elapsed / flood_count(step, encode(step.command))
        assert per_command < self.slow_s, f"one command took {per_command:.1f} s to process"
        self._check_acks(frame, messages, before)
        self._observe()

    def _take(self, peer: Peer) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = []
        while (frame := peer.session.outbox.take_frame(1 << 20)) is not None:
            try:
                decoded = orjson.loads(frame)
            except orjson.JSONDecodeError as error:
                raise AssertionError(
                    f"the server queued a frame that is not JSON: {frame[:200]!r}"
                ) from error
            assert isinstance(decoded, list), f"an outbound frame is not an array: {frame[:200]!r}"
            for message in decoded:
                assert isinstance(message, dict) and isinstance(message.get("c"), str), (
                    f"an outbound message without c: {message!r:.200}"
                )
            messages.extend(decoded)
        return messages

    def _check_acks(self, frame: bytes | str, messages: list[dict[str, Any]], before: Any) -> None:
        for message in messages:
            if message["c"] == "ack":
                assert message.get("status") in ("success", "failure"), f"ack without a status: {message}"
                if message["status"] == "failure":
                    reason = message.get("reason")
                    assert isinstance(reason, str) and reason.startswith(REASONS), (
                        f"failure reason is not a protocol word: {reason!r:.200}"
                    )
                    assert message.get("a") == "processed", f"a failure ack that is not processed: {message}"
        try:
            decoded = orjson.loads(frame)
        except orjson.JSONDecodeError:
            acks = [m for m in messages if m["c"] == "ack"]
            assert len(messages) == 1 and len(acks) == 1, f"a frame that is not JSON got {messages!r:.300}"
            assert acks[0]["status"] == "failure" and acks[0]["reason"].startswith("bad message")
            assert self.stored() == before, "a frame that is not JSON changed the SOW"
            return
        commands_in = decoded if isinstance(decoded, list) else [decoded]
        closed = self.attacker.session.close_code is not None
        counts: dict[Any, int] = {}
        for raw in commands_in:
            if isinstance(raw, dict) and _valid_cid(raw.get("cid")):
                counts[_freeze(raw["cid"])] = counts.get(_freeze(raw["cid"]), 0) + 1
        unique = {cid for cid, n in counts.items() if n == 1}
        processed: dict[Any, list[dict[str, Any]]] = {}
        every_ack: dict[Any, list[dict[str, Any]]] = {}
        for message in messages:
            if message["c"] == "ack" and _valid_cid(message.get("cid")):
                cid = _freeze(message["cid"])
                every_ack.setdefault(cid, []).append(message)
                if message["a"] == "processed":
                    processed.setdefault(cid, []).append(message)
        for cid in unique:
            got = processed.get(cid, [])
            if closed:
                assert len(got) <= 1, f"command cid={cid[1]!r:.80} got {len(got)} processed acks"
            else:
                assert len(got) == 1, (
                    f"command cid={cid[1]!r:.80} got {len(got)} processed acks: {got!r:.300}"
                )
            if got and got[0]["status"] == "failure":
                others = [m for m in every_ack.get(cid, []) if m is not got[0]]
                assert not others, f"a failed command (cid={cid[1]!r:.80}) got more acks: {others!r:.300}"
        non_objects = sum(not isinstance(raw, dict) for raw in commands_in)
        cidless_failures = sum(
            1 for m in messages if m["c"] == "ack" and m.get("cid") is None and m["status"] == "failure"
        )
        if not closed:
            assert cidless_failures >= non_objects, (
                f"{non_objects} elements are not commands but only {cidless_failures} failure acks came"
            )
        # Which writes may have changed the SOW: those not known to have been refused.
        may_write = False
        for raw in commands_in:
            if (
                not isinstance(raw, dict)
                or not isinstance(raw.get("c"), str)
                or raw["c"] not in WRITE_COMMANDS
            ):
                continue
            cid = _freeze(raw.get("cid")) if _valid_cid(raw.get("cid")) else None
            if cid is None or cid not in unique or not processed.get(cid):
                may_write = True
                continue
            ack = processed[cid][0]
            if ack["status"] == "success" and ack.get("reason") != "duplicate":
                may_write = True
        if not may_write:
            after = self.stored()
            assert after[0] == before[0], (
                f"refused or read-only commands changed the SOW: {self._sow_diff(before[0], after[0])}"
            )
            assert after[1] == before[1], (
                f"refused commands moved publisher sequences: {before[1]} -> {after[1]}"
            )

    def _sow_diff(self, before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]]) -> str:
        changes = []
        for topic in SOW_TOPICS:
            for key in set(before[topic]) | set(after[topic]):
                old, new = before[topic].get(key), after[topic].get(key)
                if old is not new:
                    was, now = getattr(old, "data", None), getattr(new, "data", None)
                    changes.append(f"{topic}/{key}: {was!r:.80} -> {now!r:.80}")
        return "; ".join(changes[:5])

    # -- observers -------------------------------------------------------------------------------

    def _observe(self) -> None:
        """Both observers' views, updated from what they were sent, equal the ``orders`` SOW."""
        for name, peer in (("full", self.full_observer), ("delta", self.delta_observer)):
            messages = self._take(peer)
            if peer.session.close_code is not None:
                continue  # closed for back pressure: nothing more to check
            view = self.views[name].records
            for message in messages:
                c = message["c"]
                if c in ("sow", "p"):
                    key = message.get("k")
                    assert isinstance(key, str), f"{name} observer: a {c} message without k: {message!r:.200}"
                    if "data" in message:
                        view[key] = message["data"]
                    elif "patch" in message:
                        assert key in view, f"delta observer: a patch for a record it never had: {key}"
                        try:
                            view[key] = jsonpatch.apply_patch(view[key], message["patch"])
                        except jsonpatch.JsonPatchException as error:
                            raise AssertionError(f"a patch that does not apply: {message!r:.300}") from error
                    else:
                        raise AssertionError(
                            f"{name} observer: a {c} message without a body: {message!r:.200}"
                        )
                elif c == "oof":
                    view.pop(str(message.get("k")), None)
            sow = self._sow_data("orders")
            if view != sow:
                missing = sorted(set(sow) - set(view))[:3]
                extra = sorted(set(view) - set(sow))[:3]
                wrong = [k for k in set(sow) & set(view) if sow[k] != view[k]][:3]
                raise AssertionError(
                    f"the {name} observer's view differs from the SOW: missing {missing}, extra {extra}, "
                    f"different {[(k, view[k], sow[k]) for k in wrong]!r:.400}"
                )


def check_frames(steps: list[Any], slow_s: float = 5.0, auth: bool = False) -> None:
    rig = EngineRig(slow_s, auth)
    for step in steps:
        rig.step(step)


# -- the validator target --------------------------------------------------------------------------

VALIDATOR_REASONS = ("bad message", "no topic", "invalid options")


def check_command(raw: Any) -> None:
    """``decode_header`` and ``decode_body`` raise nothing but ``CommandError`` (with a protocol reason)."""
    value = materialise_or_none(raw)
    if value is _UNDECODABLE:
        return
    try:
        header = decode_header(value)
        decode_body(header, value)
    except CommandError as error:
        assert error.reason.startswith(VALIDATOR_REASONS), f"unexpected reason {error.reason!r:.200}"
    except Exception as error:
        raise AssertionError(f"the validator raised {type(error).__name__}: {error}") from error


_UNDECODABLE = object()


def materialise_or_none(raw: Any) -> Any:
    try:
        return materialise(raw)
    except orjson.JSONDecodeError:
        return _UNDECODABLE


# -- the filter language targets ----------------------------------------------------------------------


def evaluation_records() -> st.SearchStrategy[list[Any]]:
    return st.lists(
        json_values(10).map(lambda value: orjson.loads(orjson.dumps(value))), min_size=1, max_size=6
    )


def _timed(what: str, slow_s: float, action: Callable[[], Any]) -> Any:
    started = time.perf_counter()
    result = action()
    elapsed = time.perf_counter() - started
    assert elapsed < slow_s, f"{what} took {elapsed:.1f} s"
    return result


def check_filter(text: str, records_in: list[Any], slow_s: float = 5.0) -> None:
    try:
        compiled = _timed("compiling the filter", slow_s, lambda: compile_filter(text))
    except FilterError as error:
        assert error.reason.startswith("bad filter"), f"a filter error with reason {error.reason!r:.200}"
        assert 1 <= error.column <= len(text) + 1, (
            f"error column {error.column} outside a {len(text)}-char filter"
        )
        return
    except Exception as error:
        raise AssertionError(f"compile_filter raised {type(error).__name__}: {str(error)[:300]}") from error
    general = _general(text)
    ctx = EvalContext(lambda: 1_800_000_000.0, "alice", "desk-1")
    for record in records_in:
        try:
            started = time.perf_counter()
            compiled.evaluate(record, ctx)
            elapsed = time.perf_counter() - started
            assert elapsed < slow_s, f"evaluating the filter on one record took {elapsed:.1f} s"
        except AssertionError:
            raise
        except Exception as error:
            raise AssertionError(
                f"evaluating the filter raised {type(error).__name__}: {str(error)[:300]} on {record!r:.200}"
            ) from error
        outcome = compiled.matches(record, ctx)
        assert type(outcome) is bool, f"matches returned {outcome!r}"
        if general is not None:
            expected = general.matches(record, ctx)
            assert outcome == expected, (
                f"the specialised evaluator says {outcome}, the general one {expected}, on {record!r:.200}"
            )


def _general(text: str) -> Any:
    builder = getattr(compiler, "general_filter", None)
    if builder is None:
        return None
    try:
        return builder(text)
    except Exception:
        return None


def check_orderby(text: str, records_in: list[Any]) -> None:
    try:
        order = parse_orderby(text)
    except CommandError as error:
        assert error.reason.startswith("invalid order by"), f"reason {error.reason!r:.200}"
        return
    except Exception as error:
        raise AssertionError(f"parse_orderby raised {type(error).__name__}: {error}") from error
    items = [_Keyed(f"k{index}", record) for index, record in enumerate(records_in)]
    try:
        ordered = order.sort(items)
    except Exception as error:
        raise AssertionError(f"sorting by {text!r} raised {type(error).__name__}: {error}") from error
    assert sorted(item.key for item in ordered) == sorted(item.key for item in items), "sort lost records"


@dataclass(frozen=True)
class _Keyed:
    key: str
    data: Any


def check_options(text: str) -> None:
    for parse, reason in ((parse_options, "invalid options"), (parse_logon_options, "invalid options")):
        try:
            parsed = parse(text)
        except CommandError as error:
            assert error.reason.startswith(reason), f"reason {error.reason!r:.200}"
            continue
        except Exception as error:
            raise AssertionError(f"{parse.__name__} raised {type(error).__name__}: {error}") from error
        conflation = getattr(parsed, "conflation_s", None)
        if conflation is not None:
            assert math.isfinite(conflation) and conflation >= 0, f"conflation interval {conflation}"


def check_select(text: str, records_in: list[Any]) -> None:
    try:
        selected = parse_select(text)
    except ValueError:
        return
    except Exception as error:
        raise AssertionError(f"parse_select raised {type(error).__name__}: {error}") from error
    for record in records_in:
        try:
            view = selected.apply(record)
        except Exception as error:
            raise AssertionError(f"select apply raised {type(error).__name__}: {error}") from error
        orjson.dumps(view)


# -- the targets, by name ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    name: str
    strategy: st.SearchStrategy[Any]
    check: Callable[..., None]
    what: str


def targets(max_flood: int = 2_000, max_steps: int = 6, slow_s: float = 5.0) -> dict[str, Target]:
    """Every fuzz target. ``check`` takes the strategy's value as its one argument."""
    return {
        target.name: target
        for target in (
            Target(
                "frames",
                st.lists(frames(max_flood), min_size=1, max_size=max_steps),
                lambda steps: check_frames(steps, slow_s),
                "Engine.receive on hostile frames (acks, SOW unchanged by refusals, observers)",
            ),
            Target(
                "frames-auth",
                st.lists(frames(max_flood), min_size=1, max_size=max_steps),
                lambda steps: check_frames(steps, slow_s, auth=True),
                "the same with [auth]: the attacker is alice, entitled to /customer = 'Alice' orders",
            ),
            Target("commands", commands(), check_command, "decode_header / decode_body"),
            Target(
                "filters",
                st.tuples(filter_texts, evaluation_records()),
                lambda case: check_filter(case[0], case[1], slow_s),
                "compile_filter and evaluation",
            ),
            Target(
                "orderby",
                st.tuples(orderby_texts, evaluation_records()),
                lambda case: check_orderby(*case),
                "parse_orderby and sorting",
            ),
            Target("options", option_texts, check_options, "parse_options / parse_logon_options"),
            Target(
                "select",
                st.tuples(select_texts, evaluation_records()),
                lambda case: check_select(*case),
                "parse_select and apply",
            ),
        )
    }
