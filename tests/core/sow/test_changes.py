"""Applying a change is deterministic: the live SOW is exactly what its log entries rebuild.

Random publishes, delta publishes (with lifetimes), deletes and expiries go through a real engine
with a durable topic; the entries it logged, applied in order to an empty SOW with no clock and
no engine, must give the same records, versions, timestamps and expiries. That is what lets a
recovering server, or another node reading a shared log, hold the same state."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from server.core.sow.store import Sow

from ..harness import Harness, entries_of

TOPICS = [{"name": "t", "key": ["/id"], "durable": True}]

operation = st.one_of(
    st.tuples(st.just("publish"), st.integers(0, 5), st.integers(0, 3), st.sampled_from([None, 1, 5])),
    st.tuples(st.just("delta"), st.integers(0, 5), st.integers(0, 3), st.sampled_from([None, 2])),
    st.tuples(st.just("delete"), st.integers(0, 5), st.none(), st.none()),
    st.tuples(st.just("tick"), st.none(), st.none(), st.sampled_from([1, 3])),
)


def command(op: str, record: int | None, value: int | None, extra: Any) -> dict[str, Any]:
    if op == "delete":
        return {"c": "sow_delete", "t": "t", "filter": f"/id = {record}"}
    data = {"id": record, "v": value}
    command: dict[str, Any] = {"c": "delta_publish" if op == "delta" else "publish", "t": "t", "data": data}
    if extra is not None:
        command["e"] = extra
    return command


@settings(max_examples=200, deadline=None)
@given(st.lists(operation, max_size=40))
def test_the_log_rebuilds_the_live_sow_exactly(operations: list[tuple[Any, ...]]) -> None:
    h = Harness(topics=TOPICS)
    feed = h.peer()
    for op, record, value, extra in operations:
        if op == "tick":
            h.clock.now += extra
            h.broker.advance(h.clock.now)
        else:
            feed.send(command(op, record, value, extra))
    rebuilt = Sow()
    for entry in entries_of(h):
        if entry.topic == "t":
            rebuilt.apply(entry)
    live = h.broker.topics["t"].records

    def state(records: Any) -> dict[str, tuple[Any, ...]]:
        return {k: (v.data, v.seq, v.timestamp, v.expires_at) for k, v in records.items()}

    assert state(rebuilt.records) == state(live)
