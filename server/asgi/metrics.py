"""``/metrics`` in the Prometheus text format, read from the hub when scraped."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ..runtime.hub import Hub


class HubCollector(Collector):
    def __init__(self, hub: Hub) -> None:
        self.hub = hub

    def collect(self) -> Iterator[Metric]:
        engine = self.hub.engine
        yield GaugeMetricFamily(
            "push_connections", "Open WebSocket connections", value=len(self.hub.connections)
        )
        yield CounterMetricFamily("push_commands", "Commands processed", value=engine.commands_processed)
        records = GaugeMetricFamily("push_sow_records", "Records in each topic's SOW", labels=["topic"])
        subscriptions = GaugeMetricFamily(
            "push_subscriptions", "Live subscriptions per topic", labels=["topic"]
        )
        for name, topic in engine.topics.items():
            if topic.is_sow:
                records.add_metric([name], len(topic.records))
            subscriptions.add_metric([name], sum(len(subs) for subs in topic.subscribers.values()))
        yield records
        yield subscriptions
        queued = sum(c.session.outbox.queued_bytes for c in self.hub.connections)
        yield GaugeMetricFamily("push_queued_bytes", "Bytes waiting in outbound socket queues", value=queued)


def render_metrics(hub: Hub) -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(HubCollector(hub))
    return generate_latest(registry)
