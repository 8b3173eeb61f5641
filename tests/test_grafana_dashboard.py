"""docs/grafana/sowpush.json, checked as data: it imports into Grafana (a datasource input, unique
panel ids, panels that do not overlap), and every query asks for metrics a real server exports,
by labels they carry."""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .integration.server_process import ServerProcess, write_config
from .waiting import HANG_S

ROOT = Path(__file__).resolve().parents[1]
DASHBOARD = ROOT / "docs" / "grafana" / "sowpush.json"
# Exported only by a --workers port (asgi/whole_port.py) or a cluster node (asgi/metrics.py):
# tests/cluster/test_workers.py scrapes them from a real one.
WORKERS_ONLY = {"push_worker_up"}
CLUSTER_ONLY = {
    "push_cluster_node",
    "push_cluster_conflicts_total",
    "push_cluster_entries_applied_total",
    "push_cluster_changes_in_flight",
}
LABELS = {"topic", "worker", "node", "le", "instance", "job"}  # Prometheus adds instance and job
PROMQL_WORDS = {
    "sum", "max", "min", "avg", "by", "without", "rate", "increase", "histogram_quantile", "label_values",
}  # fmt: skip


def load() -> dict[str, Any]:
    return dict(json.loads(DASHBOARD.read_text()))


def queries(dashboard: dict[str, Any]) -> Iterator[str]:
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            yield target["expr"]
    for variable in dashboard["templating"]["list"]:
        yield variable["definition"]


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """The metric names a server exports once it has served a topic."""
    directory = tmp_path_factory.mktemp("grafana")
    topics = [{"name": "orders", "key": ["/id"], "durable": True}]
    config = write_config(directory / "server.toml", {}, topics)
    server = ServerProcess(config, directory / "data")
    try:
        with urllib.request.urlopen(server.http + "/metrics", timeout=HANG_S) as answer:
            text = answer.read().decode()
    finally:
        server.stop()
    return set(re.findall(r"^(\w+)(?:\{|\s)", text, re.MULTILINE))


def test_it_imports_with_a_datasource_input_and_panels_that_do_not_overlap() -> None:
    dashboard = load()
    assert [item["name"] for item in dashboard["__inputs"]] == ["DS_PROMETHEUS"]
    panels = dashboard["panels"]
    assert len({panel["id"] for panel in panels}) == len(panels)
    cells: dict[tuple[int, int], str] = {}
    for panel in panels:
        assert panel["datasource"]["uid"] == "${DS_PROMETHEUS}"
        assert panel["title"] and panel["targets"]
        box = panel["gridPos"]
        assert box["x"] + box["w"] <= 24, panel["title"]  # Grafana's grid is 24 columns wide
        for x in range(box["x"], box["x"] + box["w"]):
            for y in range(box["y"], box["y"] + box["h"]):
                assert (x, y) not in cells, f"{panel['title']} overlaps {cells[(x, y)]}"
                cells[(x, y)] = panel["title"]
        assert len({target["refId"] for target in panel["targets"]}) == len(panel["targets"])


def test_every_query_names_exported_metrics_and_their_labels(exported: set[str]) -> None:
    known = exported | WORKERS_ONLY | CLUSTER_ONLY
    assert {"push_changes_total", "push_sent_bytes_total", "process_cpu_seconds_total"} <= exported
    variables = {variable["name"] for variable in load()["templating"]["list"]}
    used: set[str] = set()
    for query in queries(load()):
        assert query.count("(") == query.count(")"), query
        names = set(re.findall(r"\b(?:push|process)_\w+", query))
        assert names, query
        assert names <= known, f"{query}: {names - known} not exported"
        used |= names
        for grouping in re.findall(r"\bby \(([^)]*)\)", query):
            labels = {label.strip() for label in grouping.split(",")}
            assert labels <= LABELS, query
            # Worker 0 of one node is not worker 0 of another: a worker is named by both.
            assert "worker" not in labels or "instance" in labels, query
        for selector in re.findall(r"\{([^}]*)\}", query):
            for label, value in re.findall(r'(\w+)=~?"([^"]*)"', selector):
                assert label in LABELS, query
                assert not value.startswith("$") or value[1:] in variables, query
        words = set(re.findall(r"\b([a-z_]+)\s*\(", query))
        assert words <= PROMQL_WORDS, query
    # Subscriptions are each worker's own: the topic's are their sum, never one worker's.
    one_workers = re.compile(r"\b(max|min|avg) by \([^)]*\) \(push_subscriptions")
    assert not [query for query in queries(load()) if one_workers.search(query)]
    # Every worker and cluster node applies every change: summed, a publish rate would be N times.
    assert not [
        query for query in queries(load()) if re.search(r"\bsum\b[^(]*\(rate\(push_changes_total", query)
    ]
    assert any("max by (topic) (rate(push_changes_total" in query for query in queries(load()))
    # The figures an operator asks for first are on it.
    assert {"push_changes_total", "push_sent_bytes_total", "push_worker_up", "push_queued_messages"} <= used
    assert {"process_cpu_seconds_total", "process_resident_memory_bytes"} <= used
