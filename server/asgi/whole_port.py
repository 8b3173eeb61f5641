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
from typing import Any

import orjson
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from ..runtime.hub import Hub
from ..runtime.siblings import Answer, Siblings
from ..runtime.status import Status
from ..runtime.status_merge import mergeable, merged_report
from .metrics import node_registry

WORKER_LABEL = "worker"
UP_HELP = "1 for each worker whose figures are in this scrape, 0 for one that did not answer"


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


def worker_metrics(hub: Hub, worker: int) -> bytes:
    """This worker's metrics in the text format, each sample labelled with ``worker``."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Labelled(node_registry(hub), worker))
    return generate_latest(registry)


def merged_metrics(answers: dict[int, bytes | None]) -> bytes:
    """The workers' metrics (None: a worker that did not answer) as one exposition: each family
    once, its HELP and TYPE then every worker's samples. Each worker's text is already labelled,
    so the texts are merged as they are, never parsed: a scrape costs the answering worker (whose
    event loop also serves sockets) a pass over lines, not a parse of every sample."""
    headers: dict[str, list[str]] = {}
    samples: dict[str, list[str]] = {}
    for text in answers.values():
        if text is None:
            continue
        family = ""
        for line in text.decode("utf-8").splitlines():
            if line.startswith("# HELP "):
                family = line.split(" ", 3)[2]
                headers.setdefault(family, [line])
                samples.setdefault(family, [])
            elif line.startswith("# TYPE "):
                if len(headers.get(family, ())) == 1:
                    headers[family].append(line)
            elif line and not line.startswith("#") and family in samples:
                samples[family].append(line)
    up = [f"# HELP push_worker_up {UP_HELP}", "# TYPE push_worker_up gauge"]
    for worker in sorted(answers):
        up.append(f'push_worker_up{{{WORKER_LABEL}="{worker}"}} {0.0 if answers[worker] is None else 1.0}')
    lines = up + [line for family in headers for line in (*headers[family], *samples[family])]
    return ("\n".join(lines) + "\n").encode("utf-8")


async def port_metrics(hub: Hub, siblings: Siblings) -> bytes:
    own = worker_metrics(hub, siblings.index)
    return merged_metrics({siblings.index: own, **await siblings.ask("metrics")})


async def port_status(status: Status, siblings: Siblings) -> dict[str, object]:
    others = {index: report_of(answer) for index, answer in (await siblings.ask("status")).items()}
    return merged_report(siblings.index, await status.report(), others)


def report_of(answer: bytes | None) -> dict[str, Any] | None:
    """A sibling's status report, or None when it is not one this worker can merge (a worker of
    another version, started from other code on disk, say): that sibling counts as not answering."""
    if answer is None:
        return None
    try:
        report = orjson.loads(answer)
    except orjson.JSONDecodeError:
        return None
    return report if isinstance(report, dict) and mergeable(report) else None


def answering(hub: Hub, status: Status, siblings: Siblings) -> Answer:
    """What this worker tells a sibling that asks: its own figures, never its siblings'."""

    async def answer(question: str) -> bytes:
        if question == "metrics":
            return worker_metrics(hub, siblings.index)
        return orjson.dumps(await status.report())

    return answer
