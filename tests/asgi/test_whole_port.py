"""A ``--workers`` port's metrics merged from each worker's exposition, and the siblings' socket
protocol: a whole answer or none (server/asgi/whole_port.py, server/runtime/siblings.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.parser import text_string_to_metric_families

from server.asgi.whole_port import merged_metrics
from server.runtime.siblings import Siblings


def exposition(worker: str, connections: float, changes: float) -> bytes:
    """What a worker says: a gauge, a counter and a histogram, labelled with the worker."""

    class Worker:
        def collect(self) -> list[object]:
            gauge = GaugeMetricFamily("push_connections", "Open WebSocket connections", labels=["worker"])
            gauge.add_metric([worker], connections)
            counter = CounterMetricFamily("push_changes", "Changes", labels=["topic", "worker"])
            counter.add_metric(["orders", worker], changes)
            histogram = HistogramMetricFamily("push_write_latency_seconds", "Latency", labels=["worker"])
            histogram.add_metric([worker], [("0.1", 1.0), ("+Inf", 2.0)], 0.5)
            return [gauge, counter, histogram]

    registry = CollectorRegistry(auto_describe=False)
    registry.register(Worker())  # type: ignore[arg-type]
    return generate_latest(registry)


def test_each_family_once_with_every_workers_samples_and_who_answered() -> None:
    text = merged_metrics({0: exposition("0", 3, 10), 1: exposition("1", 4, 20), 2: None}).decode()
    assert text.count("# HELP push_connections ") == 1 and text.count("# TYPE push_changes_total ") == 1
    families = {f.name: f for f in text_string_to_metric_families(text)}  # a valid exposition
    samples = [sample for family in families.values() for sample in family.samples]
    values = {(s.name, tuple(sorted(s.labels.items()))): s.value for s in samples}
    assert values[("push_connections", (("worker", "0"),))] == 3
    assert values[("push_connections", (("worker", "1"),))] == 4
    assert values[("push_changes_total", (("topic", "orders"), ("worker", "1")))] == 20
    assert values[("push_write_latency_seconds_count", (("worker", "0"),))] == 2
    assert [values[("push_worker_up", (("worker", w),))] for w in "012"] == [1, 1, 0]
    assert families["push_write_latency_seconds"].type == "histogram"
    # Each family's samples stand together, under its own header.
    lines = text.splitlines()
    for name in ("push_connections", "push_write_latency_seconds"):
        at = lines.index(next(line for line in lines if line.startswith(f"# TYPE {name}")))
        assert all(line.startswith(name) for line in lines[at + 1 : at + 3])


async def test_a_sibling_answers_whole_or_counts_as_not_answering(tmp_path: Path) -> None:
    def capacity() -> tuple[int, int]:
        return 3, 3

    answering, asking, cut_off = (Siblings(str(tmp_path), i, 3, capacity) for i in range(3))

    async def answer(question: str) -> bytes:
        return question.encode() * 100_000  # more than one read takes

    await answering.serve(answer)

    async def half_then_gone(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readline()
        writer.write(b"1000\nonly part of it")  # killed while it wrote
        await writer.drain()
        writer.close()

    dying = await asyncio.start_unix_server(half_then_gone, path=str(cut_off.path(2)))
    try:
        answers = await asking.ask("metrics")
        assert answers == {0: b"metrics" * 100_000, 2: None}
        assert (tmp_path / "worker-0.sock").stat().st_mode & 0o777 == 0o600
    finally:
        dying.close()
        await answering.close()
    assert await asking.ask("status") == {0: None, 2: None}  # gone: not answering, at once
