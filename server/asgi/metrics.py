"""``/metrics`` in the Prometheus text format, read from the hub when scraped."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, ProcessCollector, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from ..core.fanout.topic import Topic
from ..runtime.hub import Hub
from ..runtime.status import (
    aggregations,
    groups,
    merged,
    queue_depths,
    subscriptions,
    topics_by_label,
    with_groups,
)

if TYPE_CHECKING:
    from ..runtime.redis_log import RedisLog


class HubCollector(Collector):
    def __init__(self, hub: Hub) -> None:
        self.hub = hub

    def collect(self) -> Iterator[Metric]:
        broker = self.hub.engine.broker
        yield GaugeMetricFamily(
            "push_connections", "Open WebSocket connections", value=len(self.hub.connections)
        )
        yield CounterMetricFamily("push_commands", "Commands processed", value=broker.commands_processed)
        yield CounterMetricFamily(
            "push_background_conflations",
            "Socket queues conflated early, in idle time, past a quarter of their limit",
            value=broker.background_conflations,
        )
        labelled = topics_by_label(self.hub)
        records = GaugeMetricFamily("push_sow_records", "Records in each topic's SOW", labels=["topic"])
        live = GaugeMetricFamily("push_subscriptions", "Live subscriptions per topic", labels=["topic"])
        views = GaugeMetricFamily(
            "push_aggregations",
            "Aggregations (shared by identical aggregated views) per topic",
            labels=["topic"],
        )
        grouped = GaugeMetricFamily(
            "push_groups", "Groups held by each topic's aggregations", labels=["topic"]
        )
        for label, topics in labelled.items():
            if topics[0].is_sow:
                records.add_metric([label], sum(len(topic.records) for topic in topics))
                views.add_metric([label], sum(len(aggregations(topic)) for topic in topics))
                grouped.add_metric([label], groups(topics))
            live.add_metric([label], subscriptions(topics))
        changes = CounterMetricFamily(
            "push_changes",
            "Changes applied to each topic's SOW (publishes, delta publishes, deletes, expiries)",
            labels=["topic"],
        )
        for label, topics in labelled.items():
            if topics[0].is_sow:
                changes.add_metric([label], sum(topic.sow.changes for topic in topics))
        yield records
        yield changes
        yield live
        yield views
        yield grouped
        for counter, help_text in (
            ("sent_bytes", "Bytes of messages about each topic written to sockets (snapshots included)"),
            ("conflated", "Queued messages merged into newer ones for slow sockets"),
            ("dropped", "Queued messages dropped for unsubscribe-policy topics"),
            ("unsubscribed", "Subscriptions dropped for back pressure"),
            ("closed_slow", "Sockets closed with 4001 on a message of this topic"),
        ):
            family = CounterMetricFamily(f"push_{counter}", help_text, labels=["topic"])
            for label, topics in labelled.items():
                family.add_metric([label], sum(topic.counters[counter] for topic in with_groups(topics)))
            yield family
        depth = GaugeMetricFamily(
            "push_queued_messages",
            "Messages about each topic's changes waiting in socket queues",
            labels=["topic"],
        )
        depths = queue_depths(self.hub)
        for label in labelled:
            depth.add_metric([label], depths.get(label, 0))
        yield depth
        yield from latency_metrics(labelled)
        store = self.hub.store
        yield CounterMetricFamily(
            "push_log_damaged_frames",
            "Damaged stretches of the transaction log found (each one frame or more); their changes are lost",
            value=store.damaged_frames if store is not None else 0,
        )
        queued = sum(c.session.outbox.queued_bytes for c in self.hub.connections)
        yield GaugeMetricFamily("push_queued_bytes", "Bytes waiting in outbound socket queues", value=queued)
        if self.hub.cluster is not None:
            yield from cluster_metrics(self.hub.cluster)


def latency_metrics(labelled: dict[str, list[Topic]]) -> Iterator[Metric]:
    for kind, name, help_text in (
        (
            "written",
            "push_write_latency_seconds",
            "From a change's ts to its message's frame handed to a socket",
        ),
        (
            "persisted",
            "push_persist_latency_seconds",
            "From a durable change's ts to its log write synced to disk",
        ),
    ):
        family = HistogramMetricFamily(name, help_text, labels=["topic"])
        for label, topics in labelled.items():
            histogram = merged([getattr(topic.latency, kind) for topic in with_groups(topics)])
            buckets = [
                ("+Inf" if math.isinf(bound) else repr(bound), count)
                for bound, count in histogram.cumulative()
            ]
            family.add_metric([label], buckets, histogram.sum)
        yield family


def cluster_metrics(cluster: RedisLog) -> Iterator[Metric]:
    shared = cluster.shared
    node = GaugeMetricFamily("push_cluster_node", "This cluster node (1: serving)", labels=["node"])
    node.add_metric([shared.node], 1 if cluster.healthy else 0)
    yield node
    yield CounterMetricFamily(
        "push_cluster_conflicts",
        "Changes decided again because another node changed their record first",
        value=shared.conflicts,
    )
    yield CounterMetricFamily(
        "push_cluster_entries_applied", "Shared log entries applied on this node", value=shared.applied
    )
    yield GaugeMetricFamily(
        "push_cluster_changes_in_flight", "Changes proposed and not yet acked", value=len(shared.pending)
    )


def node_registry(hub: Hub) -> CollectorRegistry:
    """The node's metrics, read from ``hub`` when collected."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(HubCollector(hub))
    # The process's own: CPU seconds, resident and virtual memory, open files, start time.
    ProcessCollector(registry=registry)
    return registry


def render_metrics(hub: Hub) -> bytes:
    return generate_latest(node_registry(hub))
