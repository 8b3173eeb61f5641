"""Transactions under socket-queue conflation (docs/protocol.md, Transactions and Conflation), as a property.

The same changes go to two engines, once as transactions and once as plain publishes, each with a
socket that never reads. The socket receiving transactions must survive at least as long (in
changes applied) as the one receiving plain publishes: a transaction may be merged with later
changes, so it never needs more room than the same changes conflated. And when it survives, what
it was sent, applied in order by a client, goes only through states the view really had (each
block takes it to the state after some transaction: never part of one) and ends equal to the
view of the SOW.
"""

from __future__ import annotations

from typing import Any

import jsonpatch
import orjson
from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from server.core.records.merge import merge_record

from ..harness import Harness, Peer
from .conflation_hub import TOPICS

View = dict[str, Any]
Views = dict[str, View]  # by sub_id

record_id = st.integers(0, 4)
x = st.integers(0, 5)
change = st.one_of(
    st.builds(lambda i, v: {"c": "publish", "data": {"id": i, "x": v}}, record_id, x),
    st.builds(lambda i, v: {"c": "delta_publish", "data": {"id": i, "x": v}}, record_id, x),
    st.builds(lambda i, v: {"c": "delta_publish", "data": {"id": i, "y": v}}, record_id, x),
    st.builds(lambda i: {"c": "sow_delete", "filter": f"/id = {i}"}, record_id),
)
SUBSCRIPTIONS = [
    {"c": "sow_and_subscribe", "o": "oof", "filter": "/x > 2"},
    {"c": "sow_and_delta_subscribe", "o": "oof", "filter": "/x > 2"},
    {"c": "sow_and_delta_subscribe", "o": "oof"},
    {"c": "sow_and_subscribe", "o": "oof"},
    {"c": "sow_and_delta_subscribe", "o": "oof,positions", "top_n": 2, "orderby": "/x"},  # a window
    {"c": "sow_and_delta_subscribe", "o": "oof,delta=merge,select=[-/y]", "filter": "/x < 4"},
]
QUERY = ("filter", "top_n", "orderby")  # what a subscription's view is, as a sow query


def query_of(subscription: dict[str, Any]) -> dict[str, Any]:
    query = {name: subscription[name] for name in QUERY if name in subscription}
    selects = [item for item in subscription.get("o", "").split(",") if item.startswith("select=")]
    return {**query, "o": selects[0]} if selects else query


class Run:
    """One engine, a publisher and a stalled socket with one or more subscriptions (s0, s1...)."""

    def __init__(self, topic: str, subscriptions: list[dict[str, Any]], bounds: tuple[int, int]) -> None:
        max_messages, max_bytes = bounds
        self.h = Harness(
            topics=TOPICS, server={"queue_max_messages": max_messages, "queue_max_bytes": max_bytes}
        )
        self.topic = topic
        self.queries = {f"s{n}": query_of(subscription) for n, subscription in enumerate(subscriptions)}
        self.publisher = self.h.peer()
        self.stalled = self.h.peer()
        self.views: Views = {sid: {} for sid in self.queries}
        commands = [
            {**subscription, "t": topic, "sub_id": sid}
            for sid, subscription in zip(self.queries, subscriptions, strict=True)
        ]
        for m in self.stalled.send(*commands):
            if m["c"] == "sow":
                self.views[m["query_id"]][m["k"]] = m["data"]
        self.applied = 0
        self.closed_at: int | None = None  # changes applied when the socket was closed

    def send(self, command: dict[str, Any], changes: int) -> None:
        self.h.engine.receive(self.publisher.session, orjson.dumps(command))
        self.publisher.session.outbox.take_frame(1 << 30)  # the publisher reads its acks
        self.applied += changes
        if self.closed_at is None and self.stalled.session.close_code is not None:
            assert self.stalled.session.close_code == 4001
            self.closed_at = self.applied

    def sow(self) -> Views:
        """Each subscription's view as the SOW has it now."""
        views = {}
        for sid, fields in self.queries.items():
            query = {"c": "sow", "t": self.topic, "query_id": "q", **fields}
            views[sid] = {m["k"]: m["data"] for m in self.h.peer().send(query) if m["c"] == "sow"}
        return views


def with_topic(command: dict[str, Any], topic: str) -> dict[str, Any]:
    return {**command, "t": topic}


def apply(views: Views, message: dict[str, Any]) -> None:
    assert message["c"] in ("p", "oof"), message
    key = message["k"]
    for sid in message["sids"]:
        view = views[sid]
        if message["c"] == "oof":
            # (An OOF is never silenced, even for a record that came and went while queued.)
            view.pop(key, None)
        elif "data" in message:
            view[key] = message["data"]
        elif "delta" in message:
            view[key] = merge_record(view[key], message["delta"])
        else:
            view[key] = jsonpatch.apply_patch(view[key], message["patch"])


def state(views: Views) -> bytes:
    return orjson.dumps(views, option=orjson.OPT_SORT_KEYS)


PLAIN = ("ack", "unsubscribed")  # messages about no topic's changes


def sent_bytes(peer: Peer) -> int:
    return sum(topic.counters["sent_bytes"] for topic in peer.engine.broker.topics.values())


def received(peer: Peer) -> list[list[dict[str, Any]]]:
    outbox = peer.session.outbox
    frames = []
    before, written = sent_bytes(peer), 0
    while (frame := outbox.take_frame(1 << 30)) is not None:
        frames.append(orjson.loads(frame))
        # A frame's messages, each with its separator: the topics' bytes, but for plain ones.
        written += len(frame) - 1
        written -= sum(len(orjson.dumps(m)) + 1 for m in frames[-1] if m["c"] in PLAIN)
    # What the queue counted came off with what it wrote, merged or not.
    assert (outbox.queued_messages, outbox.queued_bytes) == (0, 0)
    # And what it wrote is counted, merged or not, as the bytes sent of the topics (exactly).
    assert sent_bytes(peer) - before == written
    return frames


subscriptions = st.lists(st.sampled_from(SUBSCRIPTIONS), min_size=1, max_size=2)
# (queue_max_messages, queue_max_bytes): a message is some 60 to 110 bytes
bounds = st.tuples(st.sampled_from([4, 6, 10, 16, 1000]), st.sampled_from([300, 600, 1500, 1 << 20]))


@settings(max_examples=300, deadline=None)
@example(  # a fold that grows a queued entry needs no room as a plain publish: none merged either
    topic="c",
    subscriptions=[SUBSCRIPTIONS[2], SUBSCRIPTIONS[3]],
    bounds=(4, 1 << 20),
    transactions=[
        [{"c": "publish", "data": {"id": 0, "x": 0}}],
        [{"c": "publish", "data": {"id": 0, "x": 0}}, {"c": "publish", "data": {"id": 1, "x": 0}}],
        [{"c": "publish", "data": {"id": 2, "x": 0}}, {"c": "publish", "data": {"id": 1, "x": 0}}],
    ],
)
@given(
    topic=st.sampled_from(["c", "ca", "a", "aa", "o"]),
    subscriptions=subscriptions,
    bounds=bounds,
    transactions=st.lists(st.lists(change, min_size=1, max_size=4), min_size=1, max_size=40),
)
def test_transactions_are_closed_no_sooner_than_plain_publishes_and_never_seen_in_part(
    topic: str,
    subscriptions: list[dict[str, Any]],
    bounds: tuple[int, int],
    transactions: list[list[dict[str, Any]]],
) -> None:
    as_tx = Run(topic, subscriptions, bounds)
    plain = Run(topic, subscriptions, bounds)
    states = [state(as_tx.sow())]  # the views after each transaction
    for changes in transactions:
        commands = [with_topic(command, topic) for command in changes]
        as_tx.send({"c": "tx", "cmds": commands}, len(commands))
        states.append(state(as_tx.sow()))
        for command in commands:
            plain.send(command, 1)
    event("closed as transactions" if as_tx.closed_at is not None else "open as transactions")
    event("closed as plain publishes" if plain.closed_at is not None else "open as plain publishes")
    if as_tx.closed_at is not None:
        assert plain.closed_at is not None and as_tx.closed_at >= plain.closed_at, (
            f"closed after {as_tx.closed_at} changes as transactions, {plain.closed_at} as plain publishes"
        )
        return
    views = as_tx.views
    for frame in received(as_tx.stalled):
        block = None
        for message in frame:
            if message["c"] == "tx_begin":
                assert block is None, "a block inside a block"
                block = message["tx"]
            elif message["c"] == "tx_end":
                assert message["tx"] == block
                block = None
                assert state(views) in states, "a state the views never had: part of a transaction"
            else:
                assert block is not None, "a message outside a block: the feed sends only transactions"
                apply(views, message)
        assert block is None, "a block split across frames"
    assert views == as_tx.sow()


step = st.one_of(
    st.tuples(st.just("tx"), st.lists(change, min_size=1, max_size=4)),
    st.tuples(st.just("plain"), st.lists(change, min_size=1, max_size=3)),
    st.tuples(st.just("read"), st.just([])),
)


@settings(max_examples=300, deadline=None)
@given(
    topic=st.sampled_from(["c", "ca", "a", "aa", "o", "u"]),
    subscriptions=subscriptions,
    bounds=bounds,
    steps=st.lists(step, min_size=1, max_size=40),
)
def test_transactions_mixed_with_plain_publishes_reach_a_slow_client_whole(
    topic: str,
    subscriptions: list[dict[str, Any]],
    bounds: tuple[int, int],
    steps: list[tuple[str, list[dict[str, Any]]]],
) -> None:
    """Transactions and plain publishes, and a client that reads now and then: every block it
    gets is whole, and its views end equal to the SOW's (unless it was closed, or a subscription
    was dropped by the ``unsubscribe`` policy)."""
    run = Run(topic, subscriptions, bounds)
    views = run.views
    dropped: set[str] = set()

    def read() -> None:
        for frame in received(run.stalled):
            inside = False
            for message in frame:
                if message["c"] in ("tx_begin", "tx_end"):
                    assert inside == (message["c"] == "tx_end"), "blocks open and close in turn"
                    inside = not inside
                elif message["c"] == "unsubscribed":
                    assert not inside and topic == "u"
                    dropped.add(message["sub_id"])
                else:
                    assert not dropped & set(message["sids"]), "a message after unsubscribed"
                    apply(views, message)
            assert not inside, "a block split across frames"

    for kind, changes in steps:
        commands = [with_topic(command, topic) for command in changes]
        if kind == "tx":
            run.send({"c": "tx", "cmds": commands}, len(commands))
        elif kind == "plain":
            for command in commands:
                run.send(command, 1)
        else:
            read()
    if run.closed_at is not None:
        assert topic != "u", "the unsubscribe policy drops the subscription, not the socket"
        return
    read()
    expected = run.sow()
    assert {sid: views[sid] for sid in views if sid not in dropped} == {
        sid: expected[sid] for sid in expected if sid not in dropped
    }
