"""Live windows (docs/protocol.md, Live windows), proved by property tests.

The property test drives windows of every shape (ascending and descending orders over mixed
types and NULLs, filters, entitlements, skip and top, full and delta subscriptions, oof and
positions) with random publishes, delta publishes and deletes, and checks after every frame that
what each subscriber rebuilt from its messages is exactly the window computed from scratch, that
each ``pos`` is the record's place after the change, and that nothing is sent for a change that
leaves a window as it was.
"""

from __future__ import annotations

from typing import Any

import jsonpatch
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from server.core.filters.orderby import parse_orderby
from server.core.records.version import RecordVersion

from ..harness import Harness, acks
from .windows_cases import AUTH, TOPICS, publish

# -- the property test --------------------------------------------------------------------

VALUES = st.one_of(st.integers(-3, 3), st.sampled_from(["a", "b", ""]), st.none(), st.booleans())
ORDERS = st.sampled_from([None, "/s", "/s DESC", "/s, /id DESC", "/lvl DESC, /s", "/n/a"])
FILTERS = st.sampled_from([None, "/lvl > 1", "/lvl <= 6"])
KEYS = Harness(topics=TOPICS).broker.topics["t"].key_spec
assert KEYS is not None


def brute_force(
    sow: dict[int, dict[str, Any]], order: str | None, filter_: str | None, user: str, skip: int, top: int
) -> list[int]:
    def passes(data: dict[str, Any]) -> bool:
        lvl = data.get("lvl")
        if user == "low" and not (isinstance(lvl, int) and lvl < 5):
            return False
        if filter_ == "/lvl > 1":
            return isinstance(lvl, int) and lvl > 1
        if filter_ == "/lvl <= 6":
            return isinstance(lvl, int) and lvl <= 6
        return True

    versions = [RecordVersion(KEYS.sow_key(data), data, 0, 0.0) for data in sow.values() if passes(data)]
    ordered = sorted(versions, key=lambda v: v.key) if order is None else parse_orderby(order).sort(versions)
    return [v.data["id"] for v in ordered[skip : skip + top]]


class Viewer:
    def __init__(self, h: Harness, topic: str, spec: dict[str, Any]) -> None:
        self.peer = h.peer()
        self.positions: list[tuple[int, int]] = []  # (record, pos) received since last asked
        self.kinds: set[str] = set()  # the kinds of message received
        self.order: list[int] = []  # the window's order, rebuilt from pos and OOFs alone
        # Applied one at a time, the messages of each change rebuild the order. A queue conflated
        # by the socket's policy, and an interval's release, carry each record's position after
        # all of its changes instead (docs/protocol.md): there the order is not checked.
        self.ordered = not (spec["lazy"] and topic == "c") and not spec["interval"]
        self.user = spec["user"]
        assert acks(self.peer.send({"c": "logon", "cid": "l", "user_id": self.user, "pw": "pw"})) == [
            ("processed", "success")
        ]
        self.spec = spec
        self.view: dict[int, dict[str, Any]] = {}
        self.keys: dict[str, int] = {}
        command = "sow_and_delta_subscribe" if spec["delta"] else "sow_and_subscribe"
        fields: dict[str, Any] = {"top_n": spec["top"], "skip_n": spec["skip"]}
        if spec["order"] is not None:
            fields["orderby"] = spec["order"]
        if spec["filter"] is not None:
            fields["filter"] = spec["filter"]
        options = ["oof", "positions"] + (["delta=merge"] if spec["merge"] else [])
        options += ["select=[-/n]"] if spec["select"] else []  # ordered by /n/a, never sent
        options += ["conflation=1s"] if spec["interval"] else []
        got = self.peer.send(
            {"c": command, "t": topic, "sub_id": "w", "cid": "q", "o": ",".join(options), **fields}
        )
        self.receive(got)

    def receive(self, messages: list[dict[str, Any]]) -> None:
        for m in messages:
            self.kinds.add(f"{m['c']} {m.get('reason', '')}".strip())
            if m["c"] in ("sow", "p"):
                assert "pos" in m, f"a window message without its position: {m}"
            if m["c"] in ("sow", "p") and "data" in m:
                self.view[m["data"]["id"]] = m["data"]
                self.keys[m["k"]] = m["data"]["id"]
                self.check_position(m)
            elif m["c"] == "p" and "patch" in m:
                record_id = self.keys[m["k"]]
                self.view[record_id] = jsonpatch.apply_patch(self.view[record_id], m["patch"])
                self.check_position(m)
            elif m["c"] == "p" and "delta" in m:
                record_id = self.keys[m["k"]]
                self.view[record_id] = {**self.view[record_id], **m["delta"]}
                self.check_position(m)
            elif m["c"] == "oof":
                self.view.pop(m["data"]["id"], None)
                if m["data"]["id"] in self.order:  # an OOF moves the rows below it up
                    self.order.remove(m["data"]["id"])
            elif m["c"] not in ("ack", "group_begin", "group_end"):
                raise AssertionError(f"unexpected {m}")

    def expected(self, sow: dict[int, dict[str, Any]]) -> list[int]:
        spec = self.spec
        return brute_force(sow, spec["order"], spec["filter"], self.user, spec["skip"], spec["top"])

    def check_position(self, m: dict[str, Any]) -> None:
        record_id = self.keys[m["k"]]
        self.positions.append((record_id, m["pos"]))
        # The client rule of docs/protocol.md: an entry at pos p moves the rows from p down.
        if record_id in self.order:
            self.order.remove(record_id)
        self.order.insert(m["pos"] - 1, record_id)


record_st = st.fixed_dictionaries(
    {"s": VALUES, "lvl": st.integers(0, 9), "n": st.fixed_dictionaries({"a": VALUES})}
)
op_st = st.one_of(
    st.tuples(st.just("publish"), st.integers(0, 7), record_st),
    st.tuples(st.just("delta"), st.integers(0, 7), st.fixed_dictionaries({"s": VALUES})),
    st.tuples(st.just("delete"), st.integers(0, 7), st.none()),
)
spec_st = st.fixed_dictionaries(
    {
        "order": ORDERS,
        "filter": FILTERS,
        "skip": st.integers(0, 3),
        "top": st.integers(0, 4),
        "delta": st.booleans(),
        "merge": st.booleans(),
        "user": st.sampled_from(["all", "low"]),
        "lazy": st.booleans(),
        "interval": st.booleans(),
        "select": st.booleans(),
    }
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    topic=st.sampled_from(["t", "c"]),
    initial=st.dictionaries(st.integers(0, 7), record_st, max_size=8),
    specs=st.lists(spec_st, min_size=1, max_size=3),
    frames=st.lists(st.lists(op_st, min_size=1, max_size=4), max_size=12),
)
def test_every_window_rebuilt_from_its_messages_is_the_window(
    topic: str,
    initial: dict[int, dict[str, Any]],
    specs: list[dict[str, Any]],
    frames: list[list[tuple[Any, ...]]],
) -> None:
    """Topic ``c`` conflates every socket queue (always); a ``lazy`` viewer reads only after
    each frame, so its queue conflates; an ``interval`` viewer asked for conflation=1s."""
    h = Harness(topics=TOPICS, auth=AUTH)
    feed = h.peer()
    feed.send({"c": "logon", "cid": "l", "user_id": "all", "pw": "pw"})
    sow: dict[int, dict[str, Any]] = {}
    if initial:
        feed.send(*[publish(i, topic, **data) for i, data in initial.items()])
        sow = {i: {"id": i, **data} for i, data in initial.items()}
    viewers = [Viewer(h, topic, spec) for spec in specs]
    for viewer in viewers:
        check(viewer, sow)
        viewer.positions = []
    for frame in frames:
        for op, record_id, data in frame:
            if op == "publish":
                command = publish(record_id, topic, **data)
            elif op == "delta":
                command = {"c": "delta_publish", "t": topic, "data": {"id": record_id, **data}}
            else:
                command = {"c": "sow_delete", "t": topic, "filter": f"/id = {record_id}"}
            # One change at a time, so that positions and silence can be checked.
            before_views = [set(viewer.view) for viewer in viewers]
            apply(sow, command)
            feed.send(command)
            for viewer, before in zip(viewers, before_views, strict=True):
                if viewer.spec["lazy"] or viewer.spec["interval"]:
                    continue
                viewer.positions = []
                got = viewer.peer.take()
                viewer.receive(got)
                expected = viewer.expected(sow)
                for held_id, pos in viewer.positions:
                    assert expected.index(held_id) + 1 == pos, (held_id, pos, expected)
                if record_id not in before and record_id not in expected and before == set(expected):
                    assert got == [], f"a change outside the window sent {got}"
                check(viewer, sow)
        h.clock.now += 2  # past every conflation interval
        h.broker.advance(h.clock.now)
        for viewer in viewers:
            viewer.receive(viewer.peer.take())
            check(viewer, sow)
    for viewer in viewers:  # what the run exercised (pytest --hypothesis-show-statistics)
        for kind in viewer.kinds:
            event(kind)


def apply(sow: dict[int, dict[str, Any]], command: dict[str, Any]) -> None:
    """The change ``command`` makes to the model SOW."""
    if command["c"] == "sow_delete":
        sow.pop(int(command["filter"].rpartition(" ")[2]), None)
        return
    data = command["data"]
    if command["c"] == "publish":
        sow[data["id"]] = data
    else:
        sow[data["id"]] = {**sow.get(data["id"], {}), **data}


def check(viewer: Viewer, sow: dict[int, dict[str, Any]]) -> None:
    expected = viewer.expected(sow)
    if viewer.ordered:
        assert viewer.order == expected, (viewer.spec, "the order rebuilt from pos", viewer.order, expected)
    held = {i: {k: v for k, v in sow[i].items() if k != "n" or not viewer.spec["select"]} for i in expected}
    assert viewer.view == held, (viewer.spec, expected, viewer.view)


# -- the order ------------------------------------------------------------------------------


def reference_sort(order: str, versions: list[RecordVersion]) -> list[RecordVersion]:
    """The order as a sort per term, last term first (stable), NULLs last in both directions:
    the definition ``OrderBy.sort_key`` must agree with."""

    def value(version: RecordVersion, path: str) -> tuple[int, Any]:
        found: Any = version.data
        for step in path.strip("/").split("/"):
            found = found.get(step) if isinstance(found, dict) else None
        if type(found) is list:
            found = found[0] if found else None
        if type(found) is bool:
            return (0, int(found))
        if type(found) in (int, float):
            return (0, found)
        if type(found) is str and found:
            return (1, found)
        return (2, 0)

    ordered = sorted(versions, key=lambda v: v.key)
    for term in reversed([t.strip() for t in order.split(",")]):
        path, _, direction = term.partition(" ")
        if direction == "DESC":
            present = [v for v in ordered if value(v, path)[0] < 2]
            absent = [v for v in ordered if value(v, path)[0] == 2]
            ordered = sorted(present, key=lambda v: value(v, path), reverse=True) + absent
        else:
            ordered.sort(key=lambda v: value(v, path))
    return ordered


MIXED = st.one_of(
    st.integers(-5, 5),
    st.floats(-5, 5, allow_nan=False),
    st.text("ab", max_size=2),
    st.none(),
    st.booleans(),
    st.lists(st.integers(0, 3), max_size=2),
    st.just({"x": 1}),
)


@settings(max_examples=500, deadline=None)
@given(
    rows=st.lists(st.fixed_dictionaries({"a": MIXED, "b": MIXED}), max_size=12),
    order=st.sampled_from(["/a", "/a DESC", "/a, /b", "/a DESC, /b DESC", "/b, /a DESC", "/c DESC"]),
)
def test_the_sort_key_is_the_documented_order(rows: list[dict[str, Any]], order: str) -> None:
    versions = [RecordVersion(f"k{i:02d}", row, i, 0.0) for i, row in enumerate(rows)]
    assert parse_orderby(order).sort(versions) == reference_sort(order, versions)
