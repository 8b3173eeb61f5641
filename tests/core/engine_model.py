"""The reference model of the model-based engine test (test_engine_model.py); the client that
rebuilds its views only from the messages it receives is in model_views.py.

The model is meant to be obviously right: a dict per topic (id -> record), filters, entitlements
and select lists written as plain Python next to the text the server is given, and for each
subscription the set of records the server must consider it to hold (``known``). Its expected
view is those records, projected through its select list.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Record = dict[str, Any]
Predicate = Callable[[Record], bool]
Projection = Callable[[Record], Record]

KEYS = (1, 2, 3)  # record ids: few, so that records collide, conflate and flap


def newer_wins(older: Record, newer: Record) -> Record:
    """A structural merge (``conflation_merge``) whose result the model can predict: the newer
    record, as a new object (so the engine takes its structural-merge path)."""
    return dict(newer)


def same_parity(queued: list[Record | None], new: Record | None) -> int | None:
    """A ``conflation_match`` that keeps one queued message per parity of ``x`` and record: the
    new message conflates with the newest queued one of its parity, or is queued beside them."""
    parity = _number(new, "x") if new is not None else None
    for index in range(len(queued) - 1, -1, -1):
        old = queued[index]
        if old is not None and (_number(old, "x") or 0) % 2 == (parity or 0) % 2:
            return index
    return None


def _number(record: Record, name: str) -> int | None:
    value = record.get(name)
    return value if type(value) is int else None


def _compare(name: str, test: Callable[[int], bool]) -> Predicate:
    """A comparison with a field: a missing field is NULL, and NULL never matches (docs/protocol.md,
    Filters)."""

    def predicate(record: Record) -> bool:
        value = _number(record, name)
        return value is not None and test(value)

    return predicate


def _nested_a(record: Record) -> int | None:
    nested = record.get("n")
    if type(nested) is not dict:
        return None
    value = nested.get("a")
    return value if type(value) is int else None


@dataclass(frozen=True)
class Filter:
    text: str | None
    matches: Predicate


FILTERS = (
    Filter(None, lambda record: True),
    Filter("/x > 3", _compare("x", lambda x: x > 3)),
    Filter("/x <= 5", _compare("x", lambda x: x <= 5)),
    Filter("/x > 6", _compare("x", lambda x: x > 6)),
    Filter("/x IN (1, 3, 5, 7)", _compare("x", lambda x: x in (1, 3, 5, 7))),
    Filter("/n/a = 1", lambda record: _nested_a(record) == 1),
)
DELETE_FILTERS = FILTERS[1:]

# Users and their entitlement filters (the same on every topic); "feed" publishes.
ENTITLEMENTS: dict[str, Filter] = {
    "u0": FILTERS[0],
    "u1": Filter("/lvl < 6", _compare("lvl", lambda lvl: lvl < 6)),
    "u2": Filter("/lvl >= 3", _compare("lvl", lambda lvl: lvl >= 3)),
}


def _without_s(record: Record) -> Record:
    return {name: value for name, value in record.items() if name != "s"}


def _without_n_b(record: Record) -> Record:
    out = dict(record)
    if type(out.get("n")) is dict:
        out["n"] = {name: value for name, value in out["n"].items() if name != "b"}
    return out


def _only_id_v_x(record: Record) -> Record:
    return {name: value for name, value in record.items() if name in ("id", "v", "x")}


@dataclass(frozen=True)
class Select:
    text: str | None  # the inside of select=[...]; every list keeps /id and /v
    project: Projection


SELECTS = (
    Select(None, dict),
    Select("-/s", _without_s),
    Select("-/n/b", _without_n_b),
    Select("-/,+/id,+/v,+/x", _only_id_v_x),
)


def merge_delta(held: Any, delta: Any) -> Any:
    """docs/protocol.md, Publish and delta publish: fields present replace fields, objects merge
    field by field, arrays and scalars replace whole, fields absent stay."""
    if type(held) is not dict or type(delta) is not dict:
        return delta
    merged = dict(held)
    for name, value in delta.items():
        old = merged.get(name)
        merged[name] = merge_delta(old, value) if type(old) is dict and type(value) is dict else value
    return merged


# Topics: one per socket-queue policy and mode, and structural merges.
TOPICS: dict[str, dict[str, Any]] = {
    "conflate": {"conflation": "conflate", "conflation_mode": "replace"},
    "conflate_append": {"conflation": "conflate", "conflation_mode": "append"},
    "always": {"conflation": "always", "conflation_mode": "replace"},
    "always_append": {"conflation": "always", "conflation_mode": "append"},
    "off": {"conflation": "off"},
    "unsubscribe": {"conflation": "unsubscribe"},
    "merge": {
        "conflation": "always",
        "conflation_mode": "replace",
        "conflation_merge": "tests.core.engine_model:newer_wins",
    },
    "matched": {
        "conflation": "always",
        "conflation_mode": "replace",
        "conflation_match": "tests.core.engine_model:same_parity",
        "conflation_merge": "tests.core.engine_model:newer_wins",
    },
    "merge_append": {
        "conflation": "conflate",
        "conflation_mode": "append",
        "conflation_merge": "tests.core.engine_model:newer_wins",
    },
}


def topic_configs() -> list[dict[str, Any]]:
    return [{"name": name, "key": ["/id"], **settings} for name, settings in TOPICS.items()]


SNAPSHOT = {"sow_and_subscribe", "sow_and_delta_subscribe"}
DELTA = {"delta_subscribe", "sow_and_delta_subscribe"}


@dataclass
class Sub:
    """One subscription as the model sees it."""

    client: str
    sid: str
    topic: str
    command: str
    filter: Filter
    entitlement: Filter
    select: Select
    oof: bool
    merge: bool  # delta=merge
    no_sowkey: bool
    send_keys: bool
    conflation: bool  # conflation=1s
    no_empties: bool
    known: set[int] = field(default_factory=set)  # ids the server must consider it holds
    dropped: bool = False  # unsubscribed for back pressure (seen by the client)

    @property
    def snapshot(self) -> bool:
        return self.command in SNAPSHOT

    @property
    def delta(self) -> bool:
        return self.command in DELTA

    def in_view(self, record: Record) -> bool:
        return self.filter.matches(record) and self.entitlement.matches(record)

    def options(self, replace: bool = False) -> str:
        items = ["replace"] if replace else []
        if self.oof:
            items.append("oof")
        if self.select.text is not None:
            items.append(f"select=[{self.select.text}]")
        if self.merge:
            items.append("delta=merge")
        if self.no_sowkey:
            items.append("no_sowkey")
        if not self.send_keys:
            items.append("send_keys=false")
        if self.conflation:
            items.append("conflation=1s")
        if self.no_empties:
            items.append("no_empties")
        return ",".join(items)

    def command_for(self, cid: str, replace: bool = False) -> dict[str, Any]:
        command: dict[str, Any] = {"c": self.command, "cid": cid, "t": self.topic, "sub_id": self.sid}
        if self.filter.text is not None:
            command["filter"] = self.filter.text
        options = self.options(replace)
        if options:
            command["o"] = options
        return command


class Model:
    """The State of the World per topic, expiry times, and every subscription's ``known`` set."""

    def __init__(self) -> None:
        self.sow: dict[str, dict[int, Record]] = {name: {} for name in TOPICS}
        self.expires: dict[tuple[str, int], float] = {}
        self.subs: list[Sub] = []  # live in the model (not unsubscribed)

    def view_keys(self, sub: Sub) -> set[int]:
        return {key for key, record in self.sow[sub.topic].items() if sub.in_view(record)}

    def expected(self, sub: Sub) -> dict[int, Record]:
        records = self.sow[sub.topic]
        return {key: sub.select.project(records[key]) for key in sub.known}

    def subscribe(self, sub: Sub) -> None:
        sub.known = self.view_keys(sub) if sub.snapshot else set()
        self.subs.append(sub)

    def replace(self, old: Sub, new: Sub) -> None:
        keep = self.view_keys(new)
        new.known = keep if new.snapshot else old.known & keep
        self.subs[self.subs.index(old)] = new

    def unsubscribe(self, sub: Sub) -> None:
        self.subs.remove(sub)

    def _changed(self, topic: str, key: int, record: Record | None) -> None:
        for sub in self.subs:
            if sub.topic != topic:
                continue
            if record is not None and sub.in_view(record):
                sub.known.add(key)
            else:
                sub.known.discard(key)

    def publish(self, topic: str, data: Record, delta: bool, expires_at: float | None) -> None:
        key = data["id"]
        old = self.sow[topic].get(key)
        record = merge_delta(old, data) if delta and old is not None else dict(data)
        self.sow[topic][key] = record
        if expires_at is None:
            self.expires.pop((topic, key), None)
        else:
            self.expires[topic, key] = expires_at
        self._changed(topic, key, record)

    def delete(self, topic: str, key: int) -> None:
        if self.sow[topic].pop(key, None) is not None:
            self.expires.pop((topic, key), None)
            self._changed(topic, key, None)

    def delete_where(self, topic: str, matches: Predicate) -> None:
        for key in [key for key, record in self.sow[topic].items() if matches(record)]:
            self.delete(topic, key)

    def expire(self, now: float) -> bool:
        """Expire every record whose time has come by ``now``; whether any did."""
        due = [slot for slot, at in sorted(self.expires.items(), key=lambda item: item[1]) if at <= now]
        for topic, key in due:
            self.delete(topic, key)
        return bool(due)
