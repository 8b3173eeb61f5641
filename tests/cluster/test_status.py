"""The status page of a cluster node names the cluster's live nodes (from their liveness keys)."""

from __future__ import annotations

import json
from typing import Any

from ..integration.test_front_door import http
from ..waiting import eventually
from .conftest import StartNode


def status(node_http: str) -> dict[str, object]:
    code, _, body = http(node_http + "/status.json")
    assert code == 200
    report: dict[str, object] = json.loads(body)
    return report


def test_each_node_lists_the_live_nodes_of_its_cluster(start_node: StartNode) -> None:
    first, second = start_node(), start_node()

    def both_listed() -> dict[str, Any] | None:
        cluster = status(first.http)["cluster"]
        assert isinstance(cluster, dict)
        return cluster if len(cluster["nodes"]) == 2 else None

    cluster = eventually(both_listed, "both nodes in the first one's /status")
    assert cluster["healthy"] is True
    assert cluster["node"] in cluster["nodes"] and len(cluster["nodes"]) == 2
    other = status(second.http)["cluster"]
    assert isinstance(other, dict)
    assert other["node"] != cluster["node"] and set(other["nodes"]) == set(cluster["nodes"])
