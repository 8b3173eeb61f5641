"""A transaction's deletes by filter over a big topic, read in slices before it runs
(handlers/preparing_tx.py): whatever other sockets write between the slices, the transaction
deletes, acks and sends what it would have run whole once those writes were done."""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

import pytest

from server.core.fanout.passes import Selection
from server.core.handlers import publishing
from server.core.handlers.preparation import Several

from .test_preparing import RECORDS, change, seeded, side_by_side

NEW = RECORDS + 100  # a record no other change names


def delete(text: str, topic: str = "t") -> dict[str, Any]:
    return {"c": "sow_delete", "t": topic, "filter": text}


def publish(n: int, lvl: int, s: str) -> dict[str, Any]:
    return {"c": "publish", "t": "t", "data": {"id": n, "lvl": lvl, "s": s}}


# Each a transaction's commands: deletes by filter alone; with publishes before them that make a
# record match (or stop matching) and a delete by keys between them; over two topics.
TRANSACTIONS: list[list[dict[str, Any]]] = [
    [delete("/lvl > 6")],
    [
        publish(NEW, 8, "s1"),  # matches the delete after it: deleted with the stored records
        publish(4, 0, "s4"),  # stored with lvl 4: matches nothing now
        delete("/lvl > 6 OR /id = 4"),
        {"c": "sow_delete", "t": "t", "sow_keys": ["3"]},
        delete("/s = 's3' OR /lvl = 2"),
        publish(7, 8, "s7"),  # deleted by the first delete, written again after it
    ],
    [
        delete("/lvl = 1"),
        delete("/lvl > 7", "small"),
        {"c": "publish", "t": "small", "data": {"id": 1, "lvl": 9}},
    ],
]


@pytest.mark.parametrize("changes", [3, 300])
@pytest.mark.parametrize("case", range(len(TRANSACTIONS)))
def test_a_transactions_deletes_read_in_slices_decide_what_they_would_have_when_its_turn_came(
    case: int, changes: int
) -> None:
    command = {"c": "tx", "cid": "x", "a": "processed", "cmds": TRANSACTIONS[case]}
    watch = {"c": "sow_and_subscribe", "t": "t", "o": "oof", "cid": "w", "sub_id": "w"}
    two = side_by_side(command, random.Random(case * 10 + changes), 400, True, watch, changes)
    answered = two.sliced_writer.take()
    assert answered == two.whole_writer.send(command)
    assert answered[-1]["status"] == "success", answered[-1]
    assert two.sliced_reader.take() == two.whole_reader.take()  # the same tx block, in order
    for name in ("t", "small"):
        sliced, whole = two.sliced.broker.topics[name], two.whole.broker.topics[name]
        assert [(k, v.data) for k, v in sliced.records.items()] == [
            (k, v.data) for k, v in whole.records.items()
        ]
        assert sliced.prepared == []
    rng = random.Random(case)
    for frame in [[change(rng) for _ in range(50)] for _ in range(3)]:  # and what follows it
        two.sliced_writer.send(*frame)
        two.whole_writer.send(*frame)
        assert two.sliced_reader.take() == two.whole_reader.take()


def test_one_pass_a_topic_whatever_its_deletes_and_several_topics_read_together() -> None:
    h, _, writer = seeded()
    one_topic = {"c": "tx", "cid": "x", "cmds": [delete("/lvl = 1"), delete("/lvl = 2")]}
    prepared = h.engine.prepare(writer.session, one_topic)
    assert prepared is not None and isinstance(prepared._work, Selection)
    prepared.release()
    prepared = h.engine.prepare(writer.session, {**one_topic, "cmds": TRANSACTIONS[2]})
    assert prepared is not None and isinstance(prepared._work, Several)
    assert [topic.name for topic, _ in prepared._work.passes] == ["t", "small"]
    prepared.release()


def test_a_transaction_without_deletes_by_filter_or_refused_whatever_it_finds_reads_nothing() -> None:
    h, _, writer = seeded()
    for cmds in (
        [publish(1, 1, "s1"), {"c": "sow_delete", "t": "t", "sow_keys": ["2"]}],  # no filter
        [delete("/lvl > 3", "small")],  # a small topic: cheaper whole
        [delete("/lvl < UNIX_TIMESTAMP()")],  # which records pass is a matter of when
        [delete(f"/qty = {n}") for n in range(600)],  # over its budget whatever it finds
        [delete("/lvl = 1", "nowhere")],  # refused when it runs, in its own words
    ):
        assert h.engine.prepare(writer.session, {"c": "tx", "cid": "x", "cmds": cmds}) is None, cmds
    refused = writer.send({"c": "tx", "cid": "x", "cmds": [delete(f"/qty = {n}") for n in range(600)]})
    assert refused[-1]["status"] == "failure" and "units of work" in refused[-1]["reason"]


@pytest.mark.pure
def test_in_its_step_each_delete_by_filter_reads_only_what_the_pass_found(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its filters evaluated on the records the pass found (any of them passes), as the
    transaction's earlier commands left them: none of the thousands the pass left out."""
    h, _, writer = seeded()
    raw = {"c": "tx", "cid": "x", "cmds": [delete("/lvl = 1"), delete("/lvl = 8")]}
    prepared = h.engine.prepare(writer.session, raw)
    assert prepared is not None
    while not prepared.advance():
        pass
    asked: list[Any] = []
    real = publishing.compile_filter

    def watched(text: str) -> Any:
        compiled = real(text)
        return SimpleNamespace(matches=lambda data, ctx: asked.append(data) or compiled.matches(data, ctx))

    monkeypatch.setattr(publishing, "compile_filter", watched)
    h.engine.execute(writer.session, raw, prepared)
    assert writer.take()[-1]["status"] == "success"
    ones, eights = (sum(1 for n in range(RECORDS) if n % 9 == lvl) for lvl in (1, 8))
    # The first reads both levels; the second, what the first left of them.
    assert len(asked) == (ones + eights) + eights
    assert all(
        record["lvl"] != lvl
        for lvl in (1, 8)
        for record in (v.data for v in h.broker.topics["t"].records.values())
    )
