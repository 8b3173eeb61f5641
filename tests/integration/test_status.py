"""Latency you can see: /metrics' histograms and queue depths, and /status.json, on a real server."""

from __future__ import annotations

import json
import re

import orjson
import websockets

from ..waiting import HANG_S
from .client import Client
from .conftest import StartServer
from .test_front_door import http

ROUNDS = 40  # of 100 records of 4 kB: more than loopback's socket buffers hold

TOPICS = [
    {"name": "orders", "key": ["/order"], "durable": True},
    {"name": "quotes", "key": ["/sym"]},
]


def sample(metrics: str, name: str, **labels: str) -> float:
    """The value of one sample of the Prometheus text ``metrics`` (labels in any order)."""
    for line in metrics.splitlines():
        match = re.fullmatch(r"(\w+)(?:\{(.*)\})? (\S+)", line)
        if match is None or match.group(1) != name:
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', match.group(2) or ""))
        if found == labels:
            return float(match.group(3))
    raise AssertionError(f"no sample {name}{labels} in /metrics")


async def test_metrics_time_changes_to_sockets_and_to_disk(start_server: StartServer) -> None:
    server = start_server({}, TOPICS)
    publisher, reader = await Client.connect(server.url), await Client.connect(server.url)
    await reader.send({"c": "sow_and_subscribe", "t": "orders", "cid": "s"})
    await reader.until(lambda m: m.get("c") == "group_end")
    await publisher.send({"c": "logon", "client_name": "feed"})
    for n in range(20):
        await publisher.send({"c": "publish", "t": "orders", "s": n + 1, "data": {"order": n}})
    await publisher.request(
        {"c": "publish", "t": "orders", "cid": "last", "a": "persisted", "data": {"order": 99}}, "persisted"
    )
    await reader.until(lambda m: m.get("c") == "p" and m["data"]["order"] == 99)
    # Anyone may subscribe to new names: they share one label instead of growing the label set.
    for n in range(5):
        await reader.request({"c": "subscribe", "t": f"scratch-{n}", "cid": f"x{n}"})

    status, _, metrics = http(server.http + "/metrics")
    assert status == 200
    written = sample(metrics, "push_write_latency_seconds_count", topic="orders")
    assert written == 21
    assert sample(metrics, "push_write_latency_seconds_bucket", topic="orders", le="+Inf") == 21
    assert 0 < sample(metrics, "push_write_latency_seconds_sum", topic="orders") < 21 * 5
    assert sample(metrics, "push_persist_latency_seconds_count", topic="orders") == 21
    assert sample(metrics, "push_persist_latency_seconds_count", topic="quotes") == 0
    assert sample(metrics, "push_queued_messages", topic="orders") == 0
    assert sample(metrics, "push_changes_total", topic="orders") == 21
    assert sample(metrics, "push_changes_total", topic="quotes") == 0
    assert sample(metrics, "process_cpu_seconds_total") > 0
    assert sample(metrics, "process_resident_memory_bytes") > 10_000_000
    assert "scratch-" not in metrics
    assert sample(metrics, "push_subscriptions", topic="(unconfigured)") == 5
    await publisher.close()
    await reader.close()


async def test_status_names_the_slowest_sockets_and_each_topics_figures(start_server: StartServer) -> None:
    server = start_server({"queue_max_messages": 100_000}, TOPICS)
    publisher, reader = await Client.connect(server.url), await Client.connect(server.url)
    # It stops reading after one frame; closing it at the end waits 1 s (not the library's 10) for
    # a close frame stuck behind what it never read.
    stalled = await Client.connect(server.url, max_queue=1, close_timeout=1)
    await stalled.send({"c": "logon", "client_name": "stalled-desk", "label": "ann, dashboard, tab 3f9a"})
    await stalled.send({"c": "subscribe", "t": "quotes", "cid": "q"})
    await reader.request({"c": "subscribe", "t": "quotes", "cid": "q"})
    away = await Client.connect(server.url)
    await away.request({"c": "logon", "cid": "l", "client_name": "away-desk"})
    await away.request({"c": "visibility", "cid": "v", "hidden": True})
    pad = "x" * 4000
    for round_ in range(ROUNDS):
        await publisher.send(
            *[
                {"c": "publish", "t": "quotes", "data": {"sym": f"S{n}", "r": round_, "pad": pad}}
                for n in range(100)
            ]
        )
    await publisher.request({"c": "flush", "cid": "f"})
    last = {"sym": "S99", "r": ROUNDS - 1, "pad": pad}
    await reader.until(lambda m: m.get("c") == "p" and m["data"] == last)

    status, headers, body = http(server.http + "/status.json")
    assert status == 200 and headers["cache-control"] == "no-store"
    report = json.loads(body)
    assert report["connections"] == 4
    quotes = next(row for row in report["topics"] if row["topic"] == "quotes")
    assert quotes["records"] == 100 and quotes["subscriptions"] == 2 and quotes["sow"] is True
    assert quotes["written"]["count"] > 100 * ROUNDS // 2  # the reader's messages (some conflated)
    assert quotes["written"]["p50_ms"] is not None
    slowest = report["slowest"][0]
    assert slowest["client_name"] == "stalled-desk" and slowest["hidden"] is False
    assert slowest["label"] == "ann, dashboard, tab 3f9a"
    assert slowest["queued_messages"] > 0 and slowest["queued_bytes"] > 0
    assert {row["client_name"]: row["hidden"] for row in report["slowest"]}["away-desk"] is True
    assert report["cluster"] is None
    status, _, page = http(server.http + "/status")
    assert status == 200 and "/static/status.js" in page
    for client in (publisher, reader, stalled, away):
        await client.close()


async def test_bytes_sent_are_counted_for_the_topic_the_messages_are_about(
    start_server: StartServer,
) -> None:
    server = start_server({}, TOPICS)
    publisher = await Client.connect(server.url)
    for n in range(50):
        await publisher.send({"c": "publish", "t": "orders", "data": {"order": n, "note": "x" * n}})
    await publisher.request({"c": "flush", "cid": "f"})
    # No cid: no ack. Every frame this socket gets is about orders: its snapshot, then changes.
    async with websockets.connect(server.url, open_timeout=HANG_S, ping_interval=None) as reader:
        await reader.send(orjson.dumps({"c": "sow_and_subscribe", "t": "orders", "sub_id": "s"}))
        frames = [await reader.recv(decode=False)]
        while b"group_end" not in frames[-1]:
            frames.append(await reader.recv(decode=False))
        for n in range(50, 80):
            await publisher.send({"c": "publish", "t": "orders", "data": {"order": n}})
        while b'"order":79' not in frames[-1]:
            frames.append(await reader.recv(decode=False))
        _, _, metrics = http(server.http + "/metrics")
    received = sum(len(frame) for frame in frames)
    sent = sample(metrics, "push_sent_bytes_total", topic="orders")
    # Each message counts its bytes and the comma after it; a frame's brackets are no topic's.
    assert received - len(frames) <= sent <= received
    assert sample(metrics, "push_sent_bytes_total", topic="quotes") == 0
    _, _, body = http(server.http + "/status.json")
    assert {row["topic"]: row["sent_bytes"] for row in json.loads(body)["topics"]} == {
        "orders": sent,
        "quotes": 0,
    }
    await publisher.close()


async def test_status_is_guarded_like_metrics(start_server: StartServer) -> None:
    server = start_server({"metrics_token": "s3cret"}, TOPICS)
    status, headers, _ = http(server.http + "/status.json")
    assert status == 401 and headers["www-authenticate"].startswith("Bearer")
    status, _, body = http(server.http + "/status.json", {"Authorization": "Bearer s3cret"})
    assert status == 200 and json.loads(body)["connections"] == 0
    status, _, _ = http(server.http + "/status")  # the page itself holds no figures
    assert status == 200


async def test_aggregated_views_count_under_their_topic(start_server: StartServer) -> None:
    server = start_server({}, TOPICS)
    publisher, viewer = await Client.connect(server.url), await Client.connect(server.url)
    await publisher.send(
        *[{"c": "publish", "t": "quotes", "data": {"sym": f"S{n}", "desk": n % 3}} for n in range(9)]
    )
    await publisher.request({"c": "flush", "cid": "f"})
    by_desk = {"c": "sow_and_subscribe", "t": "quotes", "grouping": ["/desk"]}
    for cid, extra in (("a", {}), ("b", {}), ("c", {"filter": "/desk = 0"})):  # a and b share one
        await viewer.request({**by_desk, "cid": cid, **extra})
    await publisher.send({"c": "publish", "t": "quotes", "data": {"sym": "S9", "desk": 1}})
    await viewer.until(lambda m: m.get("c") == "p")
    _, _, metrics = http(server.http + "/metrics")
    assert sample(metrics, "push_aggregations", topic="quotes") == 2
    assert sample(metrics, "push_groups", topic="quotes") == 3 + 1
    assert sample(metrics, "push_subscriptions", topic="quotes") == 3
    assert sample(metrics, "push_write_latency_seconds_count", topic="quotes") >= 1  # a group's message
    _, _, body = http(server.http + "/status.json")
    quotes = next(row for row in json.loads(body)["topics"] if row["topic"] == "quotes")
    assert (quotes["aggregations"], quotes["groups"], quotes["subscriptions"]) == (2, 4, 3)
    for client in (publisher, viewer):
        await client.close()
