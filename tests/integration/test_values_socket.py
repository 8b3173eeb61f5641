"""Values the server cannot hold exactly are refused whole over a real socket, and nothing
poisons a topic or a shutdown (issue 11, items 5, 7, 8 and 9)."""

from __future__ import annotations

import signal
from typing import Any

from ..waiting import HANG_S
from .client import Client
from .conftest import StartServer

TOPICS = [
    {"name": "orders", "key": ["/order"], "durable": True},
    {"name": "quotes", "key": ["/id"]},
]
BIG = 2**64  # the first integer orjson would have read as a float


def deep_publish(order: int, levels: int, cid: str) -> str:
    """A publish whose record is ``levels`` deep, written by hand: orjson writes only 254."""
    deep = '{"n":' * levels + "1" + "}" * levels
    return f'{{"c":"publish","t":"orders","cid":"{cid}","data":{{"order":{order},"deep":{deep}}}}}'


async def raw_request(client: Client, frame: str, cid: Any) -> dict[str, Any]:
    await client.ws.send(frame)
    acks = await client.ack(cid)
    return acks[-1]


async def sow_orders(client: Client, cid: str) -> list[Any]:
    got = await client.request({"c": "sow", "t": "orders", "cid": cid})
    got += await client.until(lambda m: m["c"] == "group_end")
    return sorted(m["data"]["order"] for m in got if m["c"] == "sow")


async def test_unwritable_records_and_inexact_integers_are_refused_and_poison_nothing(
    start_server: StartServer,
) -> None:
    server = start_server(topics=TOPICS)
    client = await Client.connect(server.url)
    await client.request({"c": "publish", "t": "orders", "cid": "ok", "data": {"order": 1}})
    for levels in (260, 300):
        refused = await raw_request(client, deep_publish(2, levels, f"deep{levels}"), f"deep{levels}")
        assert refused["status"] == "failure" and refused["reason"].startswith("bad message: data nested")
    for n in (BIG, BIG + 1):
        frame = f'{{"c":"publish","t":"orders","cid":"big","data":{{"order":{n}}}}}'
        refused = await raw_request(client, frame, "big")
        assert refused["reason"].startswith(f"bad message: integer {n} is out of range")
    edge = f'{{"c":"publish","t":"orders","cid":"edge","data":{{"order":{BIG - 1}}}}}'
    assert (await raw_request(client, edge, "edge"))["status"] == "success"
    # The topic still answers, on this socket and on a new one, and so do heartbeats.
    assert await sow_orders(client, "q1") == [1, BIG - 1]
    await client.send({"c": "heartbeat"})
    assert (await client.recv()) == {"c": "heartbeat"}
    other = await Client.connect(server.url)
    assert await sow_orders(other, "q2") == [1, BIG - 1]
    await client.close()
    await other.close()
    # Every acked durable publish is on disk: a clean shutdown, and a restart that has them all.
    assert server.stop(signal.SIGTERM) == 0
    assert "Traceback" not in server.output() and " ERROR " not in server.output()
    again = start_server(topics=TOPICS)
    client = await Client.connect(again.url)
    assert await sow_orders(client, "q3") == [1, BIG - 1]
    await client.close()


async def test_a_republish_with_a_shorter_lifetime_expires_at_it(start_server: StartServer) -> None:
    server = start_server(topics=TOPICS)
    client = await Client.connect(server.url)
    await client.request({"c": "sow_and_subscribe", "t": "quotes", "cid": "w", "o": "oof"})
    await client.until(lambda m: m["c"] == "group_end")
    await client.request({"c": "publish", "t": "quotes", "cid": "p1", "e": 12, "data": {"id": 1}})
    await client.request({"c": "publish", "t": "quotes", "cid": "p2", "e": 1, "data": {"id": 1}})
    oof = await client.until(lambda m: m["c"] == "oof", timeout=HANG_S)
    assert oof[-1]["reason"] == "expired" and oof[-1]["data"] == {"id": 1}
    await client.close()


async def test_filter_numbers_are_a_bad_filter_with_no_traceback(start_server: StartServer) -> None:
    server = start_server(topics=TOPICS)
    client = await Client.connect(server.url)
    for cid, text in (
        ("f1", "/order = " + "1" * 5000),
        ("f2", "/order = 1e400"),
        ("f3", "/a[" + "1" * 5000 + "] = 1"),
    ):
        [ack] = await client.request({"c": "sow", "t": "orders", "cid": cid, "filter": text})
        assert ack["status"] == "failure" and ack["reason"].startswith("bad filter: ")
        assert ack["reason"].endswith(("column 10", "column 3"))
    await client.request({"c": "publish", "t": "orders", "cid": "p", "data": {"order": 1, "sym": "abc"}})
    got = await client.request({"c": "sow", "t": "orders", "cid": "r", "filter": "RIGHT(/sym, 5) = 'abc'"})
    got += await client.until(lambda m: m["c"] == "group_end")
    assert [m["data"]["sym"] for m in got if m["c"] == "sow"] == ["abc"]
    await client.close()
    assert "Traceback" not in server.output()
