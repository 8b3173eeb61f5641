"""Property: a plain publish (``c``, ``t`` and ``data``, nothing else) does on the lane that skips
proposals and acks exactly what it does on the general path: the same messages to every socket,
failures and their order included, and the same SOW.

Two servers get the same frames; one of them has its plain publishes take the general path (its
change log is a ``LocalLog`` that offers no plain lane, so ``Engine.execute`` decodes every
command in full).
The frames mix plain publishes that fail every way one can (no topic, a topic that is not a
string or is too long, data that is not an object, a key that is missing or not a scalar, a write
the user is not entitled to, a record the entitlement filter refuses, before logon) with ones
that succeed, and with commands that only look plain (an extra field, another command).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from server.core.log.local import LocalLog
from server.core.sow.txlog import LogEntry

from .harness import Harness


class GeneralLog:
    """The local log, with every command taking the general path. (It wraps the log rather than
    subclass it: the compiled core's classes take no subclasses written in Python.)"""

    def __init__(self, broker: Any) -> None:
        self._log = LocalLog(broker)

    @property
    def plain_lane(self) -> Callable[[LogEntry], None] | None:
        return None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._log, name)


TOPICS = [
    {"name": "orders", "key": ["/id"]},
    {"name": "quotes", "key": ["/sym", "/venue"], "expiration": "5s"},
]
USERS = [
    {"user_id": "feed", "password": "pw", "read": ["*"], "write": ["*"]},
    {
        "user_id": "desk",
        "password": "pw",
        "read": ["*"],
        "write": ["orders"],
        "filter": {"orders": "/qty < 50"},
    },
]

scalars = st.one_of(st.integers(-3, 3), st.sampled_from(["a", "b", ""]), st.booleans(), st.none())
records = st.fixed_dictionaries(
    {},
    optional={
        "id": st.one_of(scalars, st.lists(st.integers(0, 2), max_size=1)),
        "sym": st.sampled_from(["MSFT", "AAPL"]),
        "venue": st.sampled_from(["X", "Y"]),
        "qty": st.integers(0, 100),
    },
)
data = st.one_of(records, records, scalars, st.lists(st.integers(0, 2), max_size=2))
topic_names = st.one_of(
    st.sampled_from(["orders", "quotes", "plain", ""]), st.just("t" * 300), st.integers(0, 1), st.none()
)


@st.composite
def commands(draw: st.DrawFn) -> dict[str, Any]:
    command: dict[str, Any] = {"c": "publish", "t": draw(topic_names), "data": draw(data)}
    if command["t"] is None:
        del command["t"]
    shape = draw(st.sampled_from(["plain", "plain", "plain", "cid", "acks", "seq", "delta", "other"]))
    if shape == "cid":
        command["cid"] = draw(st.integers(0, 9))
    elif shape == "acks":
        command["a"] = "processed"
    elif shape == "seq":
        command["s"] = draw(st.integers(1, 5))
    elif shape == "delta":
        command["c"] = "delta_publish"
    elif shape == "other":
        command = {"c": "sow", "t": "orders", "cid": 1}
    return command


frames = st.tuples(st.integers(0, 3), st.lists(commands(), min_size=1, max_size=6))


def _server(general: bool) -> tuple[Harness, list[Any]]:
    h = Harness(topics=TOPICS, log=GeneralLog if general else LocalLog, auth={"user": USERS})
    assert (h.broker.changes.plain_lane is None) is general  # which path Engine.execute takes
    peers = [h.peer() for _ in range(4)]
    # feed and desk log on, each with a subscriber; the fourth socket never logs on.
    for peer, user in zip(peers[:3], ["feed", "desk", "feed"], strict=True):
        peer.send({"c": "logon", "user_id": user, "pw": "pw"})
    for peer in peers[:3]:
        peer.send({"c": "subscribe", "t": "orders", "sub_id": "o", "o": "oof"})
        peer.send({"c": "subscribe", "t": "quotes", "sub_id": "q"})
        peer.send({"c": "subscribe", "t": "plain", "sub_id": "p"})
    return h, peers


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(frames, min_size=1, max_size=12), st.integers(0, 3))
def test_a_plain_publish_does_on_the_lane_what_it_does_on_the_general_path(
    sent: list[tuple[int, list[dict[str, Any]]]], tick: int
) -> None:
    lane, lane_peers = _server(general=False)
    general, general_peers = _server(general=True)
    for sender, frame in sent:
        for h, peers in ((lane, lane_peers), (general, general_peers)):
            h.clock.now += tick  # expiries (quotes live 5 s) fall due alike on both
            h.broker.advance(h.clock.now)
            peers[sender].send(*copy.deepcopy(frame))
        for lane_peer, general_peer in zip(lane_peers, general_peers, strict=True):
            assert lane_peer.take() == general_peer.take()
    for name in ("orders", "quotes"):
        lane_records = {k: v.data for k, v in lane.broker.topics[name].records.items()}
        general_records = {k: v.data for k, v in general.broker.topics[name].records.items()}
        assert lane_records == general_records


def test_the_lane_is_taken_and_refuses_what_the_general_path_refuses() -> None:
    """The lane runs (a frame of plain publishes changes the SOW with no proposal) and a failure
    on it is acked like any other: ``processed`` ``failure`` with the reason, in command order."""
    h, peers = _server(general=False)
    feed, never_logged_on = peers[0], peers[3]
    frame = [
        {"c": "publish", "t": "orders", "data": {"id": 1, "qty": 1}},
        {"c": "publish", "t": "orders", "data": {"qty": 2}},
        {"c": "publish", "t": "orders", "data": {"id": 2, "qty": 3}},
    ]
    messages = feed.send(*frame)
    failures = [m for m in messages if m["c"] == "ack"]
    assert [(m["status"], m["reason"]) for m in failures] == [
        ("failure", "bad message: key field /id must be a string, number or boolean, not missing")
    ]
    assert sorted(v.data["id"] for v in h.broker.topics["orders"].records.values()) == [1, 2]
    # The failure comes between the first publish's delivery and the third's.
    failure = next(i for i, m in enumerate(messages) if m["c"] == "ack")
    assert [m["data"]["id"] for m in messages[:failure]] == [1]
    assert [m["data"]["id"] for m in messages[failure + 1 :]] == [2]
    refused = never_logged_on.send(frame[0])
    assert [(m["c"], m["status"], m["reason"]) for m in refused] == [
        ("ack", "failure", "logon required: send logon first")
    ]
