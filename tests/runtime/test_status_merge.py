"""The status of a ``--workers`` port: the workers' reports merged into one (what each figure
becomes is said in runtime/status_merge.py)."""

from __future__ import annotations

from typing import Any

from server.runtime.status import SLOWEST
from server.runtime.status_merge import merged_report


def topic(name: str, records: int, subscriptions: int, p99: float | None, **counters: int) -> dict[str, Any]:
    latency = {"count": 10 if p99 is not None else 0, "p50_ms": p99 and p99 / 2, "p99_ms": p99}
    return {
        "topic": name, "sow": True, "durable": False, "records": records, "subscriptions": subscriptions,
        "aggregations": 0, "groups": 0, "queued": 1, "conflated": 0, "dropped": 0, "unsubscribed": 0,
        "closed_slow": 0, "sent_bytes": 100, **counters,
        "written": latency, "persisted": {"count": 0, "p50_ms": None, "p99_ms": None},
    }  # fmt: skip


def socket(session: int, queued: int) -> dict[str, Any]:
    return {"session": session, "queued_messages": queued, "queued_bytes": queued * 10, "label": f"{session}"}


def report(connections: int, topics: list[dict[str, Any]], slowest: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "now": "t", "started": "t0", "connections": connections, "commands": connections * 100,
        "queued_bytes": connections * 7, "latency_window_s": 60.0, "topics": topics, "slowest": slowest,
        "cluster": {"node": "n"},
    }  # fmt: skip


def test_each_workers_figures_are_summed_and_its_sockets_named() -> None:
    own = report(2, [topic("orders", 100, 2, 4.0)], [socket(1, 5), socket(2, 0)])
    other = report(3, [topic("orders", 90, 3, 9.0), topic("quotes", 5, 1, None)], [socket(1, 7)])
    merged = merged_report(1, own, {0: other, 2: None})
    assert (merged["connections"], merged["commands"], merged["queued_bytes"]) == (5, 500, 35)
    assert merged["answered_by"] == 1 and merged["cluster"] == {"node": "n"}
    assert merged["workers"] == [
        {"worker": 0, "answered": True, "connections": 3, "commands": 300, "queued_bytes": 21},
        {"worker": 1, "answered": True, "connections": 2, "commands": 200, "queued_bytes": 14},
        {"worker": 2, "answered": False},
    ]
    orders, quotes = merged["topics"]
    # Every worker holds the cluster's whole state: one still loading holds fewer records.
    assert orders["records"] == 100 and orders["subscriptions"] == 5 and orders["sent_bytes"] == 200
    assert orders["written"] == {"count": 20, "p50_ms": 4.5, "p99_ms": 9.0}  # the worst worker's
    assert quotes["records"] == 5 and quotes["written"]["p99_ms"] is None
    assert [(row["worker"], row["session"]) for row in merged["slowest"]] == [(0, 1), (1, 1), (1, 2)]
    assert own["topics"][0]["written"]["p99_ms"] == 4.0  # the worker's own report is not changed


def test_the_slowest_sockets_are_the_slowest_of_every_worker() -> None:
    reports = {w: report(20, [], [socket(w * 100 + n, n + w) for n in range(SLOWEST)]) for w in range(3)}
    merged = merged_report(0, reports[0], {1: reports[1], 2: reports[2]})
    queued = [row["queued_messages"] for row in merged["slowest"]]
    assert len(queued) == SLOWEST and queued == sorted(queued, reverse=True) and queued[0] == SLOWEST + 1
