"""``/metrics`` and ``/status.json`` of a ``--workers`` port, whichever worker answers: its own
figures and every sibling's (runtime/siblings.py), each metric labelled with the worker it comes
from (``worker="0"``...), so that one scrape sees the whole port and a series never jumps from
one process to another between scrapes (what Prometheus's multi-process mode gives a
pre-forking server, with the workers kept apart instead of summed: a sum is one ``sum by`` away,
and a slow worker stays visible).

``push_worker_up{worker}`` is 1 for each worker whose figures are in the scrape, 0 for one that
did not answer in time (restarting, or too busy): like Prometheus's own ``up``, so an alert can
say which.
"""

from __future__ import annotations

from collections.abc import Iterator

import orjson
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from ..runtime.hub import Hub
from ..runtime.siblings import Answer, Siblings
from ..runtime.status import Status
from ..runtime.status_merge import merged_report
from .metrics import node_registry

WORKER_LABEL = "worker"


class _Labelled(Collector):
    """Every sample of ``registry`` with the label ``worker``."""

    def __init__(self, registry: CollectorRegistry, worker: int) -> None:
        self.registry = registry
        self.worker = str(worker)

    def collect(self) -> Iterator[Metric]:
        for family in self.registry.collect():
            labelled = Metric(family.name, family.documentation, family.type, family.unit)
            worker = {WORKER_LABEL: self.worker}
            labelled.samples = [s._replace(labels={**s.labels, **worker}) for s in family.samples]
            yield labelled


class _Families(Collector):
    def __init__(self, families: list[Metric]) -> None:
        self.families = families

    def collect(self) -> Iterator[Metric]:
        return iter(self.families)


def worker_metrics(hub: Hub, worker: int) -> bytes:
    """This worker's metrics in the text format, each sample labelled with ``worker``."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Labelled(node_registry(hub), worker))
    return generate_latest(registry)


def merged_metrics(answers: dict[int, bytes | None]) -> bytes:
    """The workers' metrics (None: a worker that did not answer) as one exposition: each family
    once, with every worker's samples."""
    families: dict[str, Metric] = {}
    for text in answers.values():
        if text is None:
            continue
        for family in text_string_to_metric_families(text.decode("utf-8")):
            into = families.setdefault(family.name, family)
            if into is not family:
                into.samples.extend(family.samples)
    up = GaugeMetricFamily(
        "push_worker_up", "1 for each worker whose figures are in this scrape, 0 for one that did not answer",
        labels=[WORKER_LABEL],
    )  # fmt: skip
    for worker in sorted(answers):
        up.add_metric([str(worker)], 0 if answers[worker] is None else 1)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Families([up, *families.values()]))
    return generate_latest(registry)


async def port_metrics(hub: Hub, siblings: Siblings) -> bytes:
    own = worker_metrics(hub, siblings.index)
    return merged_metrics({siblings.index: own, **await siblings.ask("metrics")})


async def port_status(status: Status, siblings: Siblings) -> dict[str, object]:
    others = {
        index: orjson.loads(answer) if answer is not None else None
        for index, answer in (await siblings.ask("status")).items()
    }
    return merged_report(siblings.index, await status.report(), others)


def answering(hub: Hub, status: Status, siblings: Siblings) -> Answer:
    """What this worker tells a sibling that asks: its own figures, never its siblings'."""

    async def answer(question: str) -> bytes:
        if question == "metrics":
            return worker_metrics(hub, siblings.index)
        return orjson.dumps(await status.report())

    return answer
