"""A viewport against a model (docs/protocol.md, Viewports): random publishes, deletes and moves
(new skip, top, orderby and filter) over a real socket, for a user whose entitlement hides some
rows. A client that keeps its rows from nothing but the messages (``pos``, key-only ``sow``
messages, OOFs, ``count``) must show, after every step, what the server computes from scratch:
a one-off ``sow`` of the same filter, order and range, and the number of matching records; over
groups (docs/protocol.md, Aggregated views), the groups computed from the model's records."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.sync.client import ClientConnection, connect

from server.core.aggregate.parse import parse_aggregation
from server.core.filters import parse_orderby

from ..core.aggregate.reference import groups_from_scratch
from ..waiting import HANG_S
from .conftest import StartServer
from .server_process import ServerProcess, auth_section

Message = dict[str, Any]

USERS = [
    {"user_id": "desk", "password": "d", "read": ["orders"], "write": ["orders"]},
    {"user_id": "alice", "password": "a", "read": ["orders"], "write": []}
    | {"filter": {"orders": "/cat = 'a'"}},
]
ORDERS = [None, "/qty", "/qty DESC", "/order DESC"]
FILTERS: dict[str | None, Any] = {
    None: lambda r: True,
    "/qty > 3": lambda r: r["qty"] > 3,
    "/qty % 2 = 0": lambda r: r["qty"] % 2 == 0,
}

publishes = st.tuples(st.just("publish"), st.integers(0, 14), st.integers(0, 9), st.sampled_from("aas"))
deletes = st.tuples(st.just("delete"), st.integers(0, 14))
moves = st.tuples(
    st.just("move"),
    st.integers(0, 6),  # skip_n
    st.integers(1, 6),  # top_n
    st.sampled_from(ORDERS),
    st.sampled_from(sorted(FILTERS, key=str)),
)
steps = st.lists(st.one_of(publishes, publishes, deletes, moves), min_size=1, max_size=25)


class Socket:
    """A synchronous client that reads messages out of the server's array frames."""

    def __init__(self, url: str, user: str, password: str, opened: ExitStack) -> None:
        self.ws: ClientConnection = opened.enter_context(
            connect(url, open_timeout=HANG_S, ping_interval=None)
        )
        self.cids = itertools.count()
        self.request({"c": "logon", "user_id": user, "pw": password})

    def request(self, command: Message) -> list[Message]:
        """Send ``command`` and return every message up to its processed ack."""
        cid = f"c{next(self.cids)}"
        self.ws.send(orjson.dumps({**command, "cid": cid}).decode())
        seen: list[Message] = []
        while True:
            frame = orjson.loads(self.ws.recv(timeout=HANG_S))
            for message in frame if isinstance(frame, list) else [frame]:
                seen.append(message)
            if any(m.get("c") == "ack" and m.get("cid") == cid for m in seen):
                return seen

    def until_group_end(self, seen: list[Message]) -> list[Message]:
        while not any(m["c"] == "group_end" for m in seen):
            frame = orjson.loads(self.ws.recv(timeout=HANG_S))
            seen += frame if isinstance(frame, list) else [frame]
        return seen


@dataclass
class Viewport:
    """What the client knows, from the messages alone."""

    rows: list[str] = field(default_factory=list)
    records: dict[str, Any] = field(default_factory=dict)
    count: int | None = None

    def take(self, messages: list[Message]) -> None:
        answer: list[str] | None = None
        for m in messages:
            kind = m["c"]
            if kind == "oof":
                self.records.pop(m["k"], None)
                if m["k"] in self.rows:
                    self.rows.remove(m["k"])
            elif kind == "group_begin":
                answer = []
            elif kind == "sow":
                assert answer is not None and m["pos"] == len(answer) + 1
                if "data" in m:
                    self.records[m["k"]] = m["data"]
                else:
                    assert m["k"] in self.records, "a key-only row the client never had"
                answer.append(m["k"])
            elif kind == "group_end":
                assert answer is not None
                self.rows = answer
                self.records = {k: self.records[k] for k in answer}
                self.count = m.get("matches")
                answer = None
            elif kind == "p":
                self.records[m["k"]] = m["data"]
                if m["k"] in self.rows:
                    self.rows.remove(m["k"])
                self.rows.insert(m["pos"] - 1, m["k"])
            elif kind == "count":
                self.count = m["matches"]

    def shown(self) -> list[Any]:
        return [self.records[k] for k in self.rows]


def command(
    sub_id: str, skip: int, top: int, orderby: str | None, filter_: str | None, first: bool
) -> Message:
    out: Message = {
        "c": "sow_and_subscribe",
        "t": "orders",
        "sub_id": sub_id,
        "top_n": top,
        "skip_n": skip,
        "o": "oof,positions,count" + ("" if first else ",replace"),
    }
    if orderby is not None:
        out["orderby"] = orderby
    if filter_ is not None:
        out["filter"] = filter_
    return out


@pytest.fixture
def server(start_server: StartServer) -> ServerProcess:
    return start_server(extra=auth_section(*USERS))


IDS: Iterator[str] = (f"v{n}" for n in itertools.count())  # a sub_id per example


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=steps)
def test_a_client_rebuilds_its_viewport_from_the_messages(server: ServerProcess, steps: list[Any]) -> None:
    with ExitStack() as opened:
        desk, alice = Socket(server.url, "desk", "d", opened), Socket(server.url, "alice", "a", opened)
        desk.request({"c": "sow_delete", "t": "orders", "filter": "/order >= 0"})
        sub_id = next(IDS)
        view = Viewport()
        window: tuple[int, int, str | None, str | None] = (0, 3, None, None)
        view.take(alice.until_group_end(alice.request(command(sub_id, *window, first=True))))
        for step in steps:
            if step[0] == "publish":
                _, order, qty, cat = step
                desk.request(
                    {"c": "publish", "t": "orders", "data": {"order": order, "qty": qty, "cat": cat}}
                )
            elif step[0] == "delete":
                desk.request({"c": "sow_delete", "t": "orders", "filter": f"/order = {step[1]}"})
            else:
                window = step[1:]
                view.take(alice.until_group_end(alice.request(command(sub_id, *window, first=False))))
            view.take(alice.request({"c": "flush"}))  # every message the step caused, then the ack
            check(desk, alice, view, window)


def check(
    desk: Socket, alice: Socket, view: Viewport, window: tuple[int, int, str | None, str | None]
) -> None:
    skip, top, orderby, filter_ = window
    query: Message = {"c": "sow", "t": "orders"}
    if filter_ is not None:
        query["filter"] = filter_
    if orderby is not None:
        query.update(orderby=orderby, top_n=top, skip_n=skip)
    found = [m for m in alice.until_group_end(alice.request(query)) if m["c"] == "sow"]
    if orderby is None:  # a window without orderby is in SowKey order (a one-off sow is not)
        found = sorted(found, key=lambda m: m["k"])[skip : skip + top]
    expected = [m["data"] for m in found]
    assert view.shown() == expected
    everything = desk.until_group_end(desk.request({"c": "sow", "t": "orders"}))
    records = [m["data"] for m in everything if m["c"] == "sow"]
    assert view.count == sum(1 for r in records if r["cat"] == "a" and FILTERS[filter_](r))


# The same, over groups: a window over an aggregated view of the rows Alice may see, moved
# (range, order over projected fields, and a filter of the input records, which moves it onto
# another aggregation); it must show the groups computed from scratch over the model's records.
PROJECTION = ["/qty", "COUNT(*) AS /n", "SUM(/order) AS /total"]
SPEC = parse_aggregation(["/qty"], PROJECTION)
GROUP_ORDERS = [None, "/total", "/total DESC", "/n DESC, /qty"]
group_moves = st.tuples(
    st.just("move"),
    st.integers(0, 4),  # skip_n
    st.integers(1, 4),  # top_n
    st.sampled_from(GROUP_ORDERS),
    st.sampled_from(sorted(FILTERS, key=str)),
)
group_steps = st.lists(st.one_of(publishes, publishes, deletes, group_moves), min_size=1, max_size=25)


@dataclass(frozen=True)
class Group:
    key: str
    data: Any


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=group_steps)
def test_a_client_rebuilds_its_viewport_over_groups_from_the_messages(
    server: ServerProcess, steps: list[Any]
) -> None:
    with ExitStack() as opened:
        desk, alice = Socket(server.url, "desk", "d", opened), Socket(server.url, "alice", "a", opened)
        desk.request({"c": "sow_delete", "t": "orders", "filter": "/order >= 0"})
        records: dict[str, Any] = {}  # what the model knows: key -> record, in order of change
        sub_id = next(IDS)
        view = Viewport()
        window: tuple[int, int, str | None, str | None] = (0, 3, None, None)
        view.take(alice.until_group_end(alice.request(grouped(command(sub_id, *window, first=True)))))
        for step in steps:
            if step[0] == "publish":
                _, order, qty, cat = step
                record = {"order": order, "qty": qty, "cat": cat}
                records.pop(str(order), None)
                records[str(order)] = record
                desk.request({"c": "publish", "t": "orders", "data": record})
            elif step[0] == "delete":
                records.pop(str(step[1]), None)
                desk.request({"c": "sow_delete", "t": "orders", "filter": f"/order = {step[1]}"})
            else:
                window = step[1:]
                moved = grouped(command(sub_id, *window, first=False))
                view.take(alice.until_group_end(alice.request(moved)))
            view.take(alice.request({"c": "flush"}))  # every message the step caused, then the ack
            skip, top, orderby, filter_ = window
            visible = {k: r for k, r in records.items() if r["cat"] == "a" and FILTERS[filter_](r)}
            groups = [Group(k, g) for k, g in groups_from_scratch(SPEC, visible, list(records)).items()]
            ordered = parse_orderby(orderby).sort(groups) if orderby else sorted(groups, key=lambda g: g.key)
            assert view.shown() == [g.data for g in ordered[skip : skip + top]]
            assert view.count == len(groups)


def grouped(command: Message) -> Message:
    return {**command, "grouping": ["/qty"], "projection": PROJECTION}
