"""A delta subscriber's copy of a record, rebuilt from what it was sent, equals the server's
after its topic's ``conflation_merge`` kept the older record in its socket's queue, whatever was
queued between the merge and the next message about the record.

Reported: an ``always`` topic with a merger, an update, an update the merger answered with the
older record, a ``sow`` query on the same socket, another publish: the client ended with
``{id:1,count:4,x:0}`` while the server's record was ``{id:1,count:4,x:1}``. The snapshot cut the
queue's index, and the next delta was taken from the newest state the fan-out had made, which
the client never held (queue/conflation.py's ``Net.sends``: what the subscription holds is now
corrected when the merge is decided)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
import pytest

from ..harness import Harness, Peer
from .conflation_hub import publish, rebuild, topic

MERGING = [
    topic("m", "always", conflation_merge="tests.core.queue.merge_functions:by_kind"),
    topic("mc", "conflate", conflation_merge="tests.core.queue.merge_functions:by_kind"),
]

Copies = dict[str, dict[str, Any]]
Between = Callable[[Peer, Peer, str], None]


def subscribed(peer: Peer, t: str, options: str, how: str = "sow_and_delta_subscribe") -> Copies:
    """``s``, a delta subscription, and the client's copies of the records its snapshot sent."""
    command: dict[str, Any] = {"c": how, "t": t, "sub_id": "s"}
    if options:
        command["o"] = options
    return {"s": {m["k"]: m["data"] for m in peer.send(command) if m["c"] == "sow"}}


def the_sow(h: Harness, t: str) -> dict[str, Any]:
    return {key: version.data for key, version in h.engine.broker.topics[t].records.items()}


def queue(peer: Peer, command: dict[str, Any]) -> None:
    """``command`` from ``peer``, what it is sent left queued (the client is not reading)."""
    peer.engine.receive(peer.session, orjson.dumps(command))


def a_sow_query(publisher: Peer, peer: Peer, t: str) -> None:
    queue(peer, {"c": "sow", "t": t, "query_id": "q"})


def another_subscriptions_snapshot(publisher: Peer, peer: Peer, t: str) -> None:
    queue(peer, {"c": "sow_and_subscribe", "t": t, "sub_id": "o"})


def a_transaction(publisher: Peer, peer: Peer, t: str) -> None:
    update = publish(t, 1, count=3, x=1, keep="newer")
    publisher.send({"c": "tx", "cid": "tx", "cmds": [update]})


def an_empty_change_and_a_sow_query(publisher: Peer, peer: Peer, t: str) -> None:
    """The record published again as it is: an empty change, which ``no_empties`` does not send."""
    publisher.send(publish(t, 1, count=2, x=1, keep="older"))
    a_sow_query(publisher, peer, t)


def merged_then(h: Harness, t: str, options: str, between: Between) -> tuple[Peer, Peer, Copies]:
    """A record, a delta subscriber, an update and an update the merger answers with the older
    record (``{count:1,x:0}`` is what the client is to hold), then ``between``."""
    publisher, peer = h.peer(), h.peer()
    publisher.send(publish(t, 1, count=0, x=0))
    copies = subscribed(peer, t, options)
    publisher.send(publish(t, 1, count=1, x=0))
    publisher.send(publish(t, 1, count=2, x=1, keep="older"))
    between(publisher, peer, t)
    return publisher, peer, copies


LIVE = {
    "a sow query": a_sow_query,
    "another subscription's snapshot": another_subscriptions_snapshot,
    "a transaction": a_transaction,
}


@pytest.mark.parametrize(
    "options", ["", "delta=merge", "delta=merge,select=[-/keep]"], ids=["patch", "merge-delta", "select"]
)
@pytest.mark.parametrize("between", LIVE)
def test_a_clients_copy_equals_the_sow_after_the_older_was_kept_and_a_snapshot_or_transaction(
    between: str, options: str
) -> None:
    h = Harness(topics=MERGING, server={"queue_max_messages": 1000})
    publisher, peer, copies = merged_then(h, "m", options, LIVE[between])
    publisher.send(publish("m", 1, count=4, x=1, keep="newer"))
    rebuild(peer.take(), copies)
    sow = the_sow(h, "m")
    if "select" in options:  # the view: the record without /keep
        sow = {key: {f: v for f, v in data.items() if f != "keep"} for key, data in sow.items()}
    assert copies["s"] == sow
    assert [data["x"] for data in copies["s"].values()] == [1]
    assert h.engine.broker.topics["m"].counters["conflated"] == 1, "the older kept"


def replace_with(options: str) -> Between:
    """``s`` replaced by a delta subscription with ``options`` (the same view)."""

    def replaced(publisher: Peer, peer: Peer, t: str) -> None:
        again = ",".join(filter(None, ["replace", options]))
        queue(peer, {"c": "delta_subscribe", "t": t, "sub_id": "s", "o": again})

    return replaced


@pytest.mark.parametrize("options", ["", "delta=merge"], ids=["patch", "merge-delta"])
def test_a_subscription_replaced_after_a_merge_takes_over_what_the_client_holds(options: str) -> None:
    """A ``replace`` copies what the old subscription holds: by then it is what the merge sends."""
    h = Harness(topics=MERGING, server={"queue_max_messages": 1000})
    publisher, peer, copies = merged_then(h, "m", options, replace_with(options))
    publisher.send(publish("m", 1, count=4, x=1, keep="newer"))
    rebuild(peer.take(), copies)
    assert copies["s"] == the_sow(h, "m")


@pytest.mark.parametrize(
    "published", [True, False], ids=["published-then-relieved", "relieved-then-published"]
)
def test_a_relief_that_merges_a_replaced_subscriptions_messages_corrects_its_successor(
    published: bool,
) -> None:
    """The old subscription's messages are merged by a relief after the ``replace`` copied what it
    held: what the new one holds is corrected too (it holds the same views)."""
    h = Harness(topics=MERGING, server={"queue_max_messages": 6})
    publisher, peer, copies = merged_then(h, "mc", "delta=merge", replace_with("delta=merge"))
    if published:
        publisher.send(publish("mc", 1, count=4, x=1, keep="newer"))
    assert list(h.engine.broker.crowded) == [peer.session] and peer.session.outbox.crowded
    h.engine.broker.conflate_crowded(lambda: False)
    assert h.engine.broker.topics["mc"].counters["conflated"] == 1, "relieved, the older kept"
    if not published:
        publisher.send(publish("mc", 1, count=4, x=1, keep="newer"))
    rebuild(peer.take(), copies)
    assert copies["s"] == the_sow(h, "mc")


def test_a_stateless_subscription_replaced_by_a_delta_one_after_a_merge() -> None:
    h = Harness(topics=MERGING, server={"queue_max_messages": 1000})
    publisher, peer = h.peer(), h.peer()
    publisher.send(publish("m", 1, count=0, x=0))
    copies = subscribed(peer, "m", "", "sow_and_subscribe")
    publisher.send(publish("m", 1, count=1, x=0))
    publisher.send(publish("m", 1, count=2, x=1, keep="older"))
    replace_with("delta=merge")(publisher, peer, "m")
    publisher.send(publish("m", 1, count=4, x=1, keep="newer"))
    rebuild(peer.take(), copies)
    assert copies["s"] == the_sow(h, "m")


# -- a relief decides merges over messages queued already ------------------------------------------

RELIEVED = {
    "a sow query": (a_sow_query, "", 5),
    "a transaction": (a_transaction, "", 4),
    "an empty change and a sow query": (an_empty_change_and_a_sow_query, "no_empties", 5),
}


@pytest.mark.parametrize("how", ["full", "background"])
@pytest.mark.parametrize("delta", ["", "delta=merge"], ids=["patch", "merge-delta"])
@pytest.mark.parametrize("between", RELIEVED)
def test_a_relief_that_merges_queued_messages_keeps_the_clients_copy_right(
    between: str, delta: str, how: str
) -> None:
    """A ``conflate`` topic's messages are queued as they come until a relief (the queue full, or
    background conflation) merges them, after the fan-out made the messages queued behind them."""
    queue_by, options, full_at = RELIEVED[between]
    max_messages = full_at if how == "full" else 12
    h = Harness(topics=MERGING, server={"queue_max_messages": max_messages})
    publisher, peer, copies = merged_then(h, "mc", ",".join(filter(None, [delta, options])), queue_by)
    outbox = peer.session.outbox
    assert not outbox.keyed and h.engine.broker.topics["mc"].counters["conflated"] == 0, "nothing merged yet"
    if how == "full":
        assert outbox.queued_messages == max_messages, "full: the next message brings a relief"
    publisher.send(publish("mc", 1, count=4, x=1, keep="newer"))
    if how == "background":
        assert list(h.engine.broker.crowded) == [peer.session]
        h.engine.broker.conflate_crowded(lambda: False)
    assert outbox.keyed and h.engine.broker.topics["mc"].counters["conflated"] >= 1, (
        "relieved, the older kept"
    )
    assert peer.session.close_code is None
    rebuild(peer.take(), copies)
    assert copies["s"] == the_sow(h, "mc")
