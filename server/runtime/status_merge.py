"""The status of a ``--workers`` port: every worker's report (status.py) merged into one, so that
the page says the same whichever worker answers it.

Figures that count what each worker holds or did (connections, commands, queued messages and
bytes, subscriptions, aggregations, groups, the per-topic counters) are summed. A topic's
records are the largest any worker holds (every worker holds the whole state of the cluster; a
worker still loading holds fewer). Latencies cannot be merged from quantiles: the count is summed
and p50 and p99 are the worst worker's. The slowest sockets are the slowest of all workers, each
naming its worker; ``workers`` lists each worker's own totals, and which did not answer.
"""

from __future__ import annotations

from typing import Any

from .status import SLOWEST

LATENCIES = ("written", "persisted")
NOT_SUMMED = {"topic", "sow", "durable", "records", *LATENCIES}
WORKER_TOTALS = ("connections", "commands", "queued_bytes")


Report = dict[str, Any]
TOPIC_FIELDS = ("topic", "records", *LATENCIES)
SOCKET_FIELDS = ("queued_messages", "queued_bytes")


def mergeable(report: Report) -> bool:
    """Whether ``report`` holds what merging reads (a worker of another version may not)."""
    try:
        return (
            all(isinstance(report[name], int) for name in WORKER_TOTALS)
            and all(all(name in row for name in TOPIC_FIELDS) for row in report["topics"])
            and all(all(name in row for name in SOCKET_FIELDS) for row in report["slowest"])
        )
    except (KeyError, TypeError):
        return False


def merged_report(index: int, own: Report, others: dict[int, Report | None]) -> Report:
    """Worker ``index``'s report ``own`` and its siblings' (None: a sibling that did not answer)."""
    reports = {index: own, **{i: r for i, r in others.items() if r is not None}}
    workers = [
        {"worker": i, "answered": True, **{name: reports[i][name] for name in WORKER_TOTALS}}
        if i in reports
        else {"worker": i, "answered": False}
        for i in sorted([index, *others])
    ]
    slowest = [{**row, "worker": i} for i, report in reports.items() for row in report["slowest"]]
    slowest.sort(key=lambda row: (row["queued_messages"], row["queued_bytes"]), reverse=True)
    return {
        **own,
        **{name: sum(report[name] for report in reports.values()) for name in WORKER_TOTALS},
        "topics": _merged_topics([report["topics"] for report in reports.values()]),
        "slowest": slowest[:SLOWEST],
        "answered_by": index,
        "workers": workers,
    }


def _merged_topics(tables: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    merged: dict[str, dict[str, Any]] = {}
    for table in tables:
        for row in table:
            into = merged.get(row["topic"])
            if into is None:
                merged[row["topic"]] = {**row, **{kind: dict(row[kind]) for kind in LATENCIES}}
                continue
            into["records"] = max(into["records"], row["records"])
            for name, value in row.items():
                if name not in NOT_SUMMED and type(value) in (int, float):
                    into[name] = into.get(name, 0) + value
            for kind in LATENCIES:
                _worst_of(into[kind], row[kind])
    return [merged[name] for name in sorted(merged)]


def _worst_of(into: dict[str, Any], latency: dict[str, Any]) -> None:
    into["count"] += latency["count"]
    for quantile in ("p50_ms", "p99_ms"):
        values = [v for v in (into[quantile], latency[quantile]) if v is not None]
        into[quantile] = max(values) if values else None
