"""What ``/status`` shows people, and the per-topic figures ``/metrics`` shares with it.

Labels stay bounded: configured topics by name, every plain topic made on first use under one
label (anyone may publish to a new name, and each would otherwise be a label for ever). An
aggregated view's topic of groups (core/aggregate/view.py) is its source topic's: its
subscriptions, counters and latency count under the source's label, which also reports how many
aggregations it feeds and the groups they hold.
Latency here is recent: the page polls, and each answer reports the observations since the
oldest sample that is at most ``WINDOW_S`` old (a minute), so a page left open shows the last
minute, not the average since the server started.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any

from ..core.aggregate.view import Aggregation, aggregations_of
from ..core.fanout.topic import Topic
from ..core.queue.latency import Histogram
from ..core.records.version import format_timestamp
from .hub import Hub

UNCONFIGURED = "(unconfigured)"
WINDOW_S = 60.0
SAMPLE_EVERY_S = 5.0
SLOWEST = 10  # sockets shown, those with the most queued

Key = tuple[str, str]  # (topic label, "written" | "persisted")


def label_of(topic: Topic) -> str:
    return topic.name if topic.config is not None else UNCONFIGURED


def topics_by_label(hub: Hub) -> dict[str, list[Topic]]:
    groups: dict[str, list[Topic]] = {}
    for topic in hub.engine.broker.topics.values():
        groups.setdefault(label_of(topic), []).append(topic)
    return groups


def with_groups(topics: list[Topic]) -> list[Topic]:
    """``topics`` and the topics of groups of the aggregations they feed."""
    return [*topics, *(view.topic for topic in topics for view in aggregations(topic))]


def aggregations(topic: Topic) -> list[Aggregation]:
    """The aggregations ``topic`` feeds (shared by identical aggregated views)."""
    return aggregations_of(topic)


def subscriptions(topics: list[Topic]) -> int:
    """Live subscriptions of ``topics`` and of the aggregated views over them."""
    return sum(len(subs) for topic in with_groups(topics) for subs in topic.subscribers.values())


def groups(topics: list[Topic]) -> int:
    """The groups the aggregations of ``topics`` hold."""
    return sum(len(view.topic.records) for topic in topics for view in aggregations(topic))


def merged(histograms: list[Histogram]) -> Histogram:
    total = Histogram()
    for histogram in histograms:
        total.counts = [a + b for a, b in zip(total.counts, histogram.counts, strict=True)]
        total.sum += histogram.sum
    return total


def queue_depths(hub: Hub) -> dict[str, int]:
    """Messages about changes waiting in every socket queue, per label (only non-empty queues are read)."""
    depths: dict[str, int] = {}
    topics = hub.engine.broker.topics
    for connection in hub.connections:
        outbox = connection.session.outbox
        if outbox.queued_messages:
            for name, count in outbox.depth_by_topic().items():
                topic = topics.get(name)
                label = label_of(topic) if topic is not None else UNCONFIGURED
                depths[label] = depths.get(label, 0) + count
    return depths


def _millis(histogram: Histogram) -> dict[str, Any]:
    p50, p99 = histogram.quantile(0.5), histogram.quantile(0.99)
    return {
        "count": histogram.count,
        "p50_ms": None if p50 is None else round(p50 * 1000, 2),
        "p99_ms": None if p99 is None else round(p99 * 1000, 2),
    }


class Status:
    """The status page's report; keeps samples of the latency counts to report the last minute."""

    def __init__(self, hub: Hub) -> None:
        self.hub = hub
        self.started = hub.clock()
        self._samples: deque[tuple[float, dict[Key, list[int]]]] = deque()

    def _recent(self, now: float, current: dict[Key, Histogram]) -> dict[Key, Histogram]:
        """The observations of the last minute: since the oldest sample kept (the whole histogram
        on the first look, when there is no earlier sample)."""
        samples = self._samples
        baseline = samples[0] if samples else None
        if not samples or now - samples[-1][0] >= SAMPLE_EVERY_S:
            samples.append((now, {key: list(h.counts) for key, h in current.items()}))
        while len(samples) > 1 and now - samples[1][0] >= WINDOW_S:
            samples.popleft()
        if baseline is not None:
            baseline = samples[0]
        recent: dict[Key, Histogram] = {}
        for key, histogram in current.items():
            earlier = baseline[1].get(key) if baseline is not None else None
            recent[key] = histogram if earlier is None else histogram.since(earlier)
        return recent

    async def report(self) -> dict[str, Any]:
        hub, engine, now = self.hub, self.hub.engine, self.hub.clock()
        labelled = topics_by_label(hub)
        current: dict[Key, Histogram] = {}
        for label, topics in labelled.items():
            every = with_groups(topics)
            current[(label, "written")] = merged([t.latency.written for t in every])
            current[(label, "persisted")] = merged([t.latency.persisted for t in every])
        recent = self._recent(time.monotonic(), current)
        depths = queue_depths(hub)
        rows = []
        for label, topics in sorted(labelled.items()):
            first = topics[0]
            every = with_groups(topics)
            rows.append(
                {
                    "topic": label,
                    "sow": first.is_sow,
                    "durable": bool(first.config is not None and first.config.durable),
                    "records": sum(len(t.records) for t in topics if t.is_sow),
                    "subscriptions": subscriptions(topics),
                    "aggregations": sum(len(aggregations(t)) for t in topics),
                    "groups": groups(topics),
                    "queued": depths.get(label, 0),
                    **{name: sum(t.counters[name] for t in every) for name in first.counters},
                    "written": _millis(recent[(label, "written")]),
                    "persisted": _millis(recent[(label, "persisted")]),
                }
            )
        return {
            "now": format_timestamp(now),
            "started": format_timestamp(self.started),
            "connections": len(hub.connections),
            "commands": engine.broker.commands_processed,
            "queued_bytes": sum(c.session.outbox.queued_bytes for c in hub.connections),
            "latency_window_s": WINDOW_S,
            "topics": rows,
            "slowest": self._slowest(),
            "cluster": await self._cluster(),
        }

    def _slowest(self) -> list[dict[str, Any]]:
        sessions = [c.session for c in self.hub.connections]
        sessions.sort(key=lambda s: (s.outbox.queued_messages, s.outbox.queued_bytes), reverse=True)
        rows = []
        for session in sessions[:SLOWEST]:
            outbox = session.outbox
            offered = outbox.sent + outbox.conflated
            rows.append(
                {
                    "session": session.id,
                    "client_name": session.client_name,
                    "user": session.user_id,
                    "label": session.label,
                    "peer": session.peer,
                    "subscriptions": len(session.subscriptions),
                    "queued_messages": outbox.queued_messages,
                    "queued_bytes": outbox.queued_bytes,
                    "sent": outbox.sent,
                    "conflated": outbox.conflated,
                    "conflation_ratio": round(outbox.conflated / offered, 4) if offered else 0.0,
                    "hidden": session.hidden_interval is not None,
                }
            )
        return rows

    async def _cluster(self) -> dict[str, Any] | None:
        cluster = self.hub.cluster
        if cluster is None:
            return None
        return {
            "node": cluster.shared.node,
            "healthy": cluster.healthy,
            "nodes": await cluster.names.live_nodes(),
            "conflicts": cluster.shared.conflicts,
            "applied": cluster.shared.applied,
            "in_flight": len(cluster.shared.pending),
        }
