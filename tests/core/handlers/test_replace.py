"""``replace`` keeps every guarantee a new subscription has: nothing lost, nothing twice, and the
client's view ends equal to the server's."""

from __future__ import annotations

from itertools import compress
from typing import Any

import jsonpatch
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from server.core.handlers import replacing

from ..harness import Harness, Peer, of_type


def publish(order: int, **fields: Any) -> dict[str, Any]:
    return {"c": "publish", "t": "orders", "data": {"order": order, **fields}}


@pytest.fixture
def h() -> Harness:
    return Harness()


def subscribe(peer: Peer, command: str, options: str, filter_text: str | None = None) -> list[dict[str, Any]]:
    fields: dict[str, Any] = {"c": command, "t": "orders", "sub_id": "s", "o": options}
    if filter_text is not None:
        fields["filter"] = filter_text
    return peer.send(fields)


@pytest.mark.parametrize("old_options", ["", "select=[-/note]", "oof"])
def test_records_the_new_filter_drops_leave_when_either_side_asks_for_oof(
    h: Harness, old_options: str
) -> None:
    feed, peer = h.peer(), h.peer()
    feed.send(publish(1, qty=1), publish(2, qty=20))
    subscribe(peer, "sow_and_subscribe", old_options)
    out = subscribe(peer, "subscribe", "oof,replace", "/qty > 10")
    assert [(m["data"]["order"], m["reason"]) for m in of_type(out, "oof")] == [(1, "match")]


def test_a_new_select_list_resends_the_records_it_keeps(h: Harness) -> None:
    feed, peer = h.peer(), h.peer()
    feed.send(publish(1, qty=1, note="a"))
    snapshot = subscribe(peer, "sow_and_delta_subscribe", "oof")
    view = of_type(snapshot, "sow")[0]["data"]
    out = subscribe(peer, "delta_subscribe", "oof,replace,select=[-/note]")
    assert [m["data"] for m in of_type(out, "p")] == [{"order": 1, "qty": 1}]
    view = of_type(out, "p")[0]["data"]
    feed.send(publish(1, qty=2, note="b"))
    for message in of_type(peer.take(), "p"):
        view = jsonpatch.apply_patch(view, message["patch"]) if "patch" in message else message["data"]
    assert view == {"order": 1, "qty": 2}


def test_changes_waiting_for_a_conflation_interval_are_not_lost(h: Harness) -> None:
    feed, peer = h.peer(), h.peer()
    feed.send(publish(1, qty=1))
    subscribe(peer, "sow_and_subscribe", "conflation=5s")
    feed.send(publish(1, qty=2))
    assert peer.take() == []
    out = subscribe(peer, "subscribe", "replace")
    assert [m["data"]["qty"] for m in of_type(out, "p")] == [2]
    h.clock.now += 10
    h.broker.advance(h.clock.now)
    assert peer.take() == [], "delivered once, not again at the interval's end"


def test_replace_keeps_the_topic(h: Harness) -> None:
    feed, peer = h.peer(), h.peer()
    subscribe(peer, "subscribe", "")
    out = peer.send({"c": "subscribe", "t": "trades", "sub_id": "s", "o": "replace", "cid": "r"})
    assert out[0]["status"] == "failure" and out[0]["reason"].startswith(
        "invalid options: replace keeps the topic"
    )
    feed.send(publish(1))
    assert [m["data"]["order"] for m in of_type(peer.take(), "p")] == [1]


def test_a_change_after_the_snapshot_of_a_replace_is_sent_after_it() -> None:
    """A snapshot is the whole view: the client drops every record of the sub_id it held that the
    snapshot does not name (docs/protocol.md, Viewports). A change queued after a replace's
    snapshot must therefore be written after it, even one of a record the snapshot does not hold
    whose OOF, queued by the replace before the snapshot, is still waiting (the socket does not
    read, and an ``always`` topic folds every change of a record into its queued entry)."""
    h = Harness(topics=[{"name": "always", "key": ["/id"], "conflation": "always"}])
    feed, peer = h.peer(), h.peer()
    subscribe_to = {"t": "always", "sub_id": "s", "o": "oof"}
    peer.send({"c": "sow_and_delta_subscribe", **subscribe_to, "filter": "/x < 5"})
    feed.send({"c": "publish", "t": "always", "data": {"id": 1, "x": 1}})
    assert [m["c"] for m in peer.take()] == ["p"]
    # The new filter drops record 1 (an OOF), and the snapshot is empty: no record has x > 6.
    replace = {"c": "sow_and_delta_subscribe", **subscribe_to, "filter": "/x > 6", "o": "oof,replace"}
    h.engine.receive(peer.session, orjson.dumps(replace))  # not read: the client is stalled
    feed.send({"c": "publish", "t": "always", "data": {"id": 1, "x": 9}})  # it enters the new view
    out = peer.take()
    assert [m["c"] for m in out] == ["oof", "group_begin", "group_end", "p"]
    assert out[-1]["data"] == {"id": 1, "x": 9}


@given(
    held=st.lists(st.integers(0, 50), unique=True),
    dropped=st.sets(st.integers(0, 50)),
    kept=st.sets(st.integers(0, 50)),
    already=st.dictionaries(st.integers(0, 50).map(str), st.integers()),
)
def test_the_kept_views_are_remembered_in_the_clients_order_whichever_way(
    held: list[int], dropped: set[int], kept: set[int], already: dict[str, int]
) -> None:
    """The copy of what the old subscription remembered, less what leaves, is exactly the records
    kept inserted one by one: the same keys, views and order (also when some it held are gone, or
    something is remembered already, where it inserts them one by one)."""
    before = {str(n): f"view of {n}" for n in held}
    keys = [key for key in before if int(key) not in dropped]  # (a dropped one: a record gone since)
    views = [before[key] for key in keys]
    keeps = [int(key) in kept for key in keys]
    one_by_one = dict(already)
    one_by_one.update(compress(zip(keys, views, strict=True), keeps))
    remembered = dict(already)
    replacing._remember_kept(remembered, before, keys, views, keeps)
    assert list(remembered.items()) == list(one_by_one.items())
