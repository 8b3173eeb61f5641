"""Strategies for a hostile client's commands and frames; the fuzz users and the seed records."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from tests.fuzzing.languages import filter_texts, option_texts, orderby_texts
from tests.fuzzing.values import CUSTOMERS, FIELD_NAMES, HOSTILE, encode, hostile_values, records

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
SOW_TOPICS = ("orders", "trades", "ledger")

RELEVANT_FIELDS: dict[str, tuple[str, ...]] = {
    "logon": ("client_name", "user_id", "pw", "o"),
    "publish": ("t", "data", "s", "e"),
    "delta_publish": ("t", "data", "s", "e"),
    "sow_delete": ("t", "filter", "sow_keys", "data", "s"),
    "sow": ("t", "filter", "o", "bs", "top_n", "skip_n", "orderby", "query_id", "grouping", "projection"),
    "subscribe": ("t", "filter", "o", "sub_id", "bm"),
    "delta_subscribe": ("t", "filter", "o", "sub_id", "bm"),
    "sow_and_subscribe": (
        *("t", "filter", "o", "bs", "top_n", "skip_n", "orderby", "query_id", "sub_id"),
        *("grouping", "projection"),
    ),
    "sow_and_delta_subscribe": (
        *("t", "filter", "o", "top_n", "skip_n", "orderby", "query_id", "sub_id"),
        *("grouping", "projection"),
    ),
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
    if name == "grouping":
        return st.sampled_from([["/qty"], ["/s"], ["/id"], ["/s", "/qty"], [], ["qty"], "/qty"])
    if name == "projection":
        return st.sampled_from(
            [
                ["/qty", "COUNT(/id) AS /n"],
                ["/s", "SUM(/qty) AS /total", "MIN(/qty) AS /low", "MAX(/id) AS /high"],
                ["AVG(/qty) AS /mean", "COUNT(*) AS /all"],
                ["/qty"],
                ["SUM(SUM(/qty)) AS /x"],
                [],
            ]
        )
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
