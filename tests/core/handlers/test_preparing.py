"""A query whose pass over a big topic is read in slices before it runs (handlers/preparing.py):
whatever other sockets publish between its slices, what its socket is sent, then and afterwards,
is byte for byte what it would be sent had the query run whole once those publishes were done."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import orjson
import pytest

from server.core.engine import Engine
from server.core.handlers.preparation import Several
from server.core.records.keys import KeySpec

from ..harness import Harness, Peer

# ``t`` keeps an order by ``/s``: a window by it is a walk of that order, filtered (orders.py).
TOPICS = [{"name": "t", "key": ["/id"], "orders": ["/s"]}, {"name": "small", "key": ["/id"]}]
RECORDS = 8_000  # enough for a sorted pass to be read in slices
KEY = KeySpec.parse(["/id"])


def seeded() -> tuple[Harness, Peer, Peer]:
    h = Harness(topics=TOPICS)
    reader, writer = h.peer(), h.peer()
    rows = [
        {"c": "publish", "t": "t", "data": {"id": n, "lvl": n % 9, "s": f"s{n % 31}"}} for n in range(RECORDS)
    ]
    for first in range(0, RECORDS, 1000):
        writer.send(*rows[first : first + 1000])
    writer.take()
    return h, reader, writer


def change(rng: random.Random, by_key: bool = False) -> dict[str, Any]:
    """A publish or a delete (by a filter, or ``by_key``) of a record of the topic, or of one new
    to it."""
    record = rng.randrange(RECORDS + 50)
    if rng.random() < 0.25:
        if by_key:  # (a delete by filter reads every record: hundreds a frame are slow to test)
            return {"c": "sow_delete", "t": "t", "sow_keys": [KEY.sow_key({"id": record})]}
        return {"c": "sow_delete", "t": "t", "filter": f"/id = {record}"}
    return {
        "c": "publish",
        "t": "t",
        "data": {"id": record, "lvl": rng.randrange(9), "s": f"s{rng.randrange(31)}"},
    }


QUERIES = [
    {"c": "sow_and_subscribe", "t": "t", "filter": "/lvl > 2", "orderby": "/s", "top_n": 30, "cid": "q"},
    {"c": "sow", "t": "t", "filter": "/lvl > 3", "cid": "q"},
    {
        "c": "sow",
        "t": "t",
        "filter": "/lvl > 3",
        "orderby": "/s DESC, /lvl",
        "top_n": 25,
        "skip_n": 3,
        "cid": "q",
    },
    {"c": "sow_and_subscribe", "t": "t", "filter": "/lvl < 7", "orderby": "/lvl", "top_n": 20, "cid": "q"},
    {"c": "sow_and_delta_subscribe", "t": "t", "orderby": "/lvl DESC", "top_n": 10, "o": "oof", "cid": "q"},
    {"c": "sow_and_delta_subscribe", "t": "t", "filter": "/s = 's3' OR /lvl = 2", "o": "oof", "cid": "q"},
    # Subscriptions that remember every record of their snapshot, the views made in slices and
    # taken whole: sorted, of every record, and through a select list.
    {"c": "sow_and_delta_subscribe", "t": "t", "filter": "/lvl > 1", "orderby": "/s DESC, /lvl", "cid": "q"},
    {"c": "sow_and_subscribe", "t": "t", "orderby": "/lvl", "o": "oof", "cid": "q"},
    {"c": "sow_and_delta_subscribe", "t": "t", "o": "oof,select=[-/s]", "cid": "q"},
]


def remembered(reader: Peer) -> dict[str, Any]:
    """What each subscription of ``reader`` remembers it sent (None: it remembers nothing)."""
    return {sub_id: sub.held for sub_id, sub in reader.session.subscriptions.items()}


def run(
    engine: Engine, peer: Peer, command: dict[str, Any], between: list[list[dict[str, Any]]], writer: Peer
) -> int:
    """Run ``command`` with its pass in slices, a frame of ``between`` fed between each two of its
    slices (every stage of it: reading, merging, putting an order together); how many were fed."""
    raw = orjson.loads(orjson.dumps(command))
    prepared = engine.prepare(peer.session, raw)
    assert prepared is not None, "the pass was not read in slices"
    fed = 0
    while not prepared.advance():
        if fed < len(between):
            writer.send(*between[fed])
            fed += 1
    engine.execute(peer.session, raw, prepared)
    engine.broker.settle()
    return fed


@dataclass
class SideBySide:
    """Two seeded servers: one where ``command`` was read in slices with frames of changes fed
    between its slices (``fed`` of them), and one where the same frames were sent, then nothing
    else yet (the test sends ``command`` whole there)."""

    sliced: Harness
    sliced_reader: Peer
    sliced_writer: Peer
    whole: Harness
    whole_reader: Peer
    whole_writer: Peer
    between: list[list[dict[str, Any]]]
    fed: int


def side_by_side(
    command: dict[str, Any],
    rng: random.Random,
    frames: int,
    by_writer: bool = False,
    first: dict[str, Any] | None = None,
    changes: int = 3,
    prelude: list[list[dict[str, Any]]] | None = None,
) -> SideBySide:
    """``command`` read in slices by the reader (or the writer), frames of 1 to ``changes``
    changes between its slices (more than 3: its deletes by key); the same changes on the other
    server. ``first``: what both readers send before; ``prelude``: frames both writers send
    before that."""
    by_key = changes > 3
    between = [[change(rng, by_key) for _ in range(rng.randrange(1, changes + 1))] for _ in range(frames)]
    sliced, sliced_reader, sliced_writer = seeded()
    whole, whole_reader, whole_writer = seeded()
    for frame in prelude or []:
        sliced_writer.send(*frame)
        whole_writer.send(*frame)
    if first is not None:
        sliced_reader.send(first)
        whole_reader.send(first)
    peer = sliced_writer if by_writer else sliced_reader
    fed = run(sliced.engine, peer, command, between, sliced_writer)
    assert fed >= 3, f"only {fed} slices"
    assert fed < len(between), "more slices than frames: the last stages saw no writes"
    for frame in between[:fed]:  # what the sliced pass saw between its slices, before it runs whole
        whole_writer.send(*frame)
    return SideBySide(sliced, sliced_reader, sliced_writer, whole, whole_reader, whole_writer, between, fed)


def orders(h: Harness) -> list[list[Any]]:
    """Every window order of the topic, in full."""
    return [list(order.sorted) for order in h.broker.topics["t"].orders]


@pytest.mark.parametrize("query", range(len(QUERIES)))
def test_a_query_read_in_slices_is_answered_as_if_it_ran_whole_when_its_turn_came(query: int) -> None:
    rng = random.Random(query)
    command = QUERIES[query]
    two = side_by_side(command, rng, 400)
    answered = two.sliced_reader.take()
    assert answered == two.whole_reader.send(command)
    assert orders(two.sliced) == orders(two.whole)  # the whole order, not only the window's rows
    assert remembered(two.sliced_reader) == remembered(two.whole_reader)
    assert any(m.get("c") == "sow" for m in answered)
    later = [*two.between[two.fed : two.fed + 20], [change(rng) for _ in range(200)]]
    for frame in later:  # and the live subscription's changes after it
        two.sliced_writer.send(*frame)
        two.whole_writer.send(*frame)
        assert two.sliced_reader.take() == two.whole_reader.take()


@pytest.mark.parametrize("query", range(len(QUERIES)))
def test_a_query_whose_topic_is_rewritten_while_it_is_read_catches_up_and_answers_as_if_run_whole(
    query: int,
) -> None:
    """Hundreds of changes between each two slices: once read, the pass takes them a slice at a
    time (fanout/passes.py, catching up), while more are written, and its end is still exact."""
    rng = random.Random(1_000 + query)
    command = QUERIES[query]
    two = side_by_side(command, rng, 400, changes=300)
    assert two.sliced_reader.take() == two.whole_reader.send(command)
    assert orders(two.sliced) == orders(two.whole)
    assert remembered(two.sliced_reader) == remembered(two.whole_reader)


def test_a_small_topic_or_a_cheap_pass_runs_whole() -> None:
    h, reader, _ = seeded()
    small = {"c": "sow", "t": "small", "filter": "/lvl > 3", "cid": "q"}
    assert h.engine.prepare(reader.session, small) is None
    assert h.engine.prepare(reader.session, {"c": "sow", "t": "t", "cid": "q"}) is None  # every record
    publish = {"c": "publish", "t": "t", "data": {"id": 1}}
    assert h.engine.prepare(reader.session, publish) is None


def test_a_pass_the_budget_refuses_is_refused_when_it_runs_not_read() -> None:
    h, reader, _ = seeded()
    costly = " OR ".join(f"/s LIKE 'x{n}.*'" for n in range(60))
    command = {"c": "sow", "t": "t", "filter": costly, "cid": "q"}
    assert h.engine.prepare(reader.session, command) is None
    replies = reader.send(command)
    assert replies[-1]["status"] == "failure" and "too costly" in replies[-1]["reason"]


@pytest.mark.parametrize("changes", [3, 300])
@pytest.mark.parametrize("text", ["/lvl > 5", "/s = 's3' OR /lvl = 2"])
def test_a_delete_by_filter_read_in_slices_deletes_what_it_would_have_when_its_turn_came(
    text: str, changes: int
) -> None:
    """A ``sow_delete`` by filter finds its records in slices, then deletes them in one step: those
    that pass as the records are then, in the records' order (its OOFs, its ack's counts)."""
    command = {"c": "sow_delete", "t": "t", "filter": text, "cid": "d", "a": "processed,stats"}
    watch = {"c": "sow_and_subscribe", "t": "t", "o": "oof", "cid": "w", "sub_id": "w"}
    two = side_by_side(command, random.Random(text), 400, by_writer=True, first=watch, changes=changes)
    assert two.sliced_writer.take() == two.whole_writer.send(command)
    assert two.sliced_reader.take() == two.whole_reader.take()  # the same OOFs, in the same order
    records = two.sliced.broker.topics["t"].records
    assert list(records) == list(two.whole.broker.topics["t"].records)
    assert two.sliced.broker.topics["t"].prepared == []


def test_a_delete_by_keys_or_of_a_small_topic_runs_whole() -> None:
    h, reader, _ = seeded()
    by_key = {"c": "sow_delete", "t": "t", "sow_keys": ["1"], "cid": "d"}
    assert h.engine.prepare(reader.session, by_key) is None
    small = {"c": "sow_delete", "t": "small", "filter": "/lvl > 3", "cid": "d"}
    assert h.engine.prepare(reader.session, small) is None


def test_a_pass_whose_filter_reads_the_clock_runs_whole() -> None:
    """Which records pass ``UNIX_TIMESTAMP()`` is a matter of when: asked a slice at a time, a
    delete by it deleted none of what it deleted run whole."""
    h, reader, _ = seeded()
    for command in (
        {"c": "sow_delete", "t": "t", "filter": "/lvl < UNIX_TIMESTAMP()", "cid": "d"},
        {"c": "sow", "t": "t", "filter": "/lvl > 3 AND /lvl < UNIX_TIMESTAMP()", "cid": "q"},
    ):
        assert h.engine.prepare(reader.session, command) is None


# A subscription, then the replace of it: plain (it remembers nothing: what it holds is what its
# filter matches) or with OOFs or deltas (it remembers what it sent), to a filter that keeps some
# of it, with OOFs for what leaves or another view of what stays.
def sub(c: str, text: str | None = None, o: str | None = None, **more: Any) -> dict[str, Any]:
    """A command on subscription ``r`` of ``t``: its filter ``text``, its options ``o``."""
    return {
        "c": c,
        "t": "t",
        "sub_id": "r",
        **({"filter": text} if text else {}),
        **({"o": o} if o else {}),
        **more,
    }


REPLACES = [
    (sub("subscribe", "/lvl > 2", cid="s"), sub("subscribe", "/lvl < 6", "replace,oof", cid="q")),
    (
        sub("sow_and_subscribe", "/lvl > 2", "oof", cid="s"),
        sub("subscribe", "/s = 's3' OR /lvl = 2", "replace,oof", cid="q"),
    ),
    (
        sub("sow_and_delta_subscribe", cid="s"),
        sub("delta_subscribe", "/lvl > 4", "replace,select=[-/lvl]", cid="q"),
    ),
    # A sow_and_* replace: its snapshot read in slices too, alone (a plain subscription given
    # another plain filter re-decides nothing) or after the re-decision.
    (sub("subscribe", "/lvl > 2", cid="s"), sub("sow_and_subscribe", "/lvl < 6", "replace", cid="q")),
    (
        sub("sow_and_subscribe", "/lvl > 2", "oof", cid="s"),
        sub("sow_and_delta_subscribe", "/s = 's3' OR /lvl < 4", "replace,oof", orderby="/s DESC", cid="q"),
    ),
]


@pytest.mark.parametrize("changes", [3, 300])
@pytest.mark.parametrize("case", range(len(REPLACES)))
def test_a_replace_read_in_slices_redecides_what_it_would_have_when_its_turn_came(
    case: int, changes: int
) -> None:
    """A ``replace`` finds what its client holds and what the new filter keeps of it in slices,
    then sends what leaves and what is sent again in one step: byte for byte what it would have
    sent run whole then, and the same live changes after it."""
    first, command = REPLACES[case]
    rng = random.Random(case * 10 + changes)
    two = side_by_side(command, rng, 400, first=first, changes=changes)
    answered = two.sliced_reader.take()
    assert answered == two.whole_reader.send(command)
    assert any(m.get("c") == "ack" and m.get("cid") == "q" and m["status"] == "success" for m in answered)
    assert two.sliced.broker.topics["t"].prepared == []
    later = [*two.between[two.fed : two.fed + 20], [change(rng) for _ in range(200)]]
    for frame in later:
        two.sliced_writer.send(*frame)
        two.whole_writer.send(*frame)
        assert two.sliced_reader.take() == two.whole_reader.take()


def test_a_replace_of_a_window_or_over_a_small_topic_runs_whole() -> None:
    h, reader, _ = seeded()
    reader.send({"c": "sow_and_subscribe", "t": "t", "sub_id": "w", "orderby": "/s", "top_n": 5, "cid": "w"})
    moved = {
        "c": "sow_and_subscribe",
        "t": "t",
        "sub_id": "w",
        "filter": "/lvl > 2",
        "orderby": "/s",
        "top_n": 5,
        "o": "replace",
        "cid": "m",
    }
    assert h.engine.prepare(reader.session, moved) is None  # a window's re-decision is its order's
    reader.send({"c": "subscribe", "t": "small", "sub_id": "s", "cid": "s"})
    small = {"c": "subscribe", "t": "small", "sub_id": "s", "filter": "/lvl > 2", "o": "replace", "cid": "r"}
    assert h.engine.prepare(reader.session, small) is None
    reader.send({"c": "subscribe", "t": "t", "sub_id": "p", "cid": "p"})
    with_oof = {
        "c": "subscribe",
        "t": "t",
        "sub_id": "p",
        "filter": "/lvl > 2",
        "o": "replace,oof",
        "cid": "r",
    }
    assert h.engine.prepare(reader.session, with_oof) is not None
    clock = {**with_oof, "filter": "/lvl < UNIX_TIMESTAMP()"}
    assert h.engine.prepare(reader.session, clock) is None


def test_a_plain_subscription_given_another_plain_filter_reads_no_record() -> None:
    """Nothing is sent or remembered of what it holds (no OOFs, the same view): its replace makes no
    pass, in slices or whole, and the next change is decided by the new filter."""
    h, reader, writer = seeded()
    reader.send({"c": "subscribe", "t": "t", "sub_id": "p", "filter": "/lvl > 2", "cid": "p"})
    plain = {"c": "subscribe", "t": "t", "sub_id": "p", "filter": "/lvl < 2", "o": "replace", "cid": "r"}
    assert h.engine.prepare(reader.session, plain) is None
    subscription = reader.session.subscriptions["p"]
    asked: list[Any] = []
    matches = subscription.matches
    subscription.matches = lambda data: asked.append(data) or matches(data)  # (what a pass asks)
    assert reader.send(plain)[-1]["status"] == "success"
    assert asked == [], "the replace read the records"
    writer.send({"c": "publish", "t": "t", "data": {"id": 1, "lvl": 1, "s": "s1"}})
    writer.send({"c": "publish", "t": "t", "data": {"id": 2, "lvl": 5, "s": "s1"}})
    assert [m["data"]["id"] for m in reader.take() if m["c"] == "p"] == [1]


def test_a_sow_and_subscribe_replace_reads_its_snapshot_in_slices_after_its_redecision() -> None:
    h, reader, _ = seeded()
    for (first, command), passes in zip(REPLACES[3:], (1, 2), strict=True):
        reader.send(first)
        prepared = h.engine.prepare(reader.session, command)
        assert prepared is not None
        work = prepared._work
        found = work.passes if isinstance(work, Several) else [(prepared.topic, work)]
        assert len(found) == passes, command
        assert found[-1][1].share[0] != "replace", "the snapshot's pass comes last"
        prepared.release()
        reader.send({"c": "unsubscribe", "sub_id": "r", "cid": "u"})
