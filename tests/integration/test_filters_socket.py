"""``sow`` with each kind of filter over a real socket, and a filter error with its column."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ..work import Stopwatch
from .client import Client
from .server_process import ServerProcess

Connect = Callable[..., Any]

RECORDS = [
    {
        "order": 1,
        "sym": "MSFT",
        "qty": 150,
        "px": 12.5,
        "side": "B",
        "trader": "tom",
        "tags": ["hot"],
        "buyer": {"id": "B1"},
        "note": "",
    },
    {
        "order": 2,
        "sym": "IBM",
        "qty": 50,
        "px": 120.0,
        "side": "S",
        "trader": "ann",
        "tags": ["new", "hot"],
        "buyer": {"id": "B2"},
    },
    {
        "order": 3,
        "sym": "msft",
        "qty": "75",
        "px": 9.0,
        "side": "B",
        "trader": "ted",
        "tags": [],
        "buyer": {"id": "B1"},
        "note": "rush",
    },
]

CASES = [
    ("/qty > 60", [1, 3]),
    ("/qty = '50'", [2]),
    ("/sym = 'MSFT' AND /side = 'B'", [1]),
    ("/sym = 'IBM' OR /px < 10", [2, 3]),
    ("NOT /side = 'B'", [2]),
    ("/side IN ('S', 'X')", [2]),
    ("/side NOT IN ('S')", [1, 3]),
    ("/px BETWEEN 10 AND 200", [1, 2]),
    ("/trader LIKE '^t'", [1, 3]),
    ("/sym LIKE '(?i)^msft$'", [1, 3]),
    ("/sym BEGINS WITH ('MS', 'IB')", [1, 2]),
    ("/trader ENDS WITH ('n')", [2]),
    ("/note IS NULL", [1, 2]),
    ("/note IS NOT NULL", [3]),
    ("/tags = 'hot'", [1, 2]),
    ("/tags[1] = 'hot'", [2]),
    ("/buyer/id = 'B1'", [1, 3]),
    ("/qty * /px > 1000", [1, 2]),
    ("UPPER(/sym) = 'MSFT'", [1, 3]),
    ("LENGTH(/trader) = 3 AND SUBSTR(/trader, -1) = 'n'", [2]),
    ("COALESCE(/note, 'none') = 'none'", [1, 2]),
]


@pytest.fixture
async def loaded(connect: Connect) -> Client:
    client: Client = await connect()
    await client.send(*[{"c": "publish", "t": "orders", "data": record} for record in RECORDS])
    await client.request({"c": "flush", "cid": "loaded"})
    return client


async def test_sow_with_each_kind_of_filter(loaded: Client) -> None:
    for number, (text, expected) in enumerate(CASES):
        got = await loaded.request(
            {"c": "sow", "t": "orders", "cid": number, "filter": text, "orderby": "/order"}
        )
        got += await loaded.until(lambda m: m["c"] == "group_end")
        assert [m["data"]["order"] for m in got if m["c"] == "sow"] == expected, text


async def test_a_bad_filter_names_the_column(loaded: Client) -> None:
    ack = (await loaded.request({"c": "sow", "t": "orders", "cid": "bad", "filter": "/qty > 1 AND (/px <"}))[
        -1
    ]
    assert ack["status"] == "failure"
    assert ack["reason"] == "bad filter: expected an expression but found end of filter at column 20"


async def test_a_catastrophic_like_pattern_does_not_stall_other_sockets(
    connect: Connect, server: ServerProcess
) -> None:
    attacker, bystander = await connect(), await connect()
    await attacker.send({"c": "publish", "t": "orders", "data": {"order": 1, "s": "a" * 50_000 + "!"}})
    await attacker.send({"c": "subscribe", "t": "orders", "cid": "evil", "filter": "/s LIKE '^(a+)+$'"})
    for n in range(50):
        await attacker.send({"c": "publish", "t": "orders", "data": {"order": n, "s": "a" * 50_000 + "!"}})
    waited = Stopwatch(server.process.pid)  # (what other work on the machine takes is not counted)
    assert (await bystander.request({"c": "heartbeat", "cid": "hb"}))[-1]["status"] == "success"
    assert waited.elapsed() < 2.0
