"""A model of aggregated views over a real server: random publishes, delta publishes, deletes and
transactions by a desk; a user with an entitlement filter holds an aggregated delta view, rebuilt
from its snapshot, patches and OOFs; the groups it holds equal the groups computed from scratch
over the records the model knows the user may see (docs/protocol.md, Aggregated views). Midway,
the same user opens a second view with other columns over the same grouping (it shares the first
one's group table, which reads the inputs it lacks then): its groups are checked the same way."""

from __future__ import annotations

import asyncio
import itertools
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonpatch
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from server.core.aggregate.parse import parse_aggregation

from ..core.aggregate.reference import groups_from_scratch, remember
from .client import Client, Message
from .server_process import ServerProcess, auth_section, write_config

PROJECTION = [
    "/desk",
    "SUM(/qty) AS /qty",
    "COUNT(*) AS /n",
    "COUNT(/px) AS /priced",
    "COUNT_DISTINCT(/px) AS /prices",
    "AVG(/qty) AS /avg",
    "MIN(/px) AS /low",
    "MAX(/px) AS /high",
    "STDDEV_POP(/qty) AS /sd",
]
SPEC = parse_aggregation(["/desk"], PROJECTION)
# Other columns over the same grouping: a sum of /px and the largest /qty are inputs the first
# projection's table lacks; the deviation of /qty and COUNT(*) it has already.
SECOND = [
    "/desk",
    "SUM(/px) AS /px_total",
    "MAX(/qty) AS /top",
    "STDDEV_SAMP(/qty) AS /sds",
    "COUNT(*) AS /n",
]
SECOND_SPEC = parse_aggregation(["/desk"], SECOND)
USERS = auth_section(
    {"user_id": "desk", "password": "d", "read": ["*"], "write": ["*"]},
    {
        "user_id": "alice",
        "password": "a",
        "read": ["*"],
        "write": [],
        "filter": {"orders": "/customer = 'Alice'"},
    },
)
RUNS = itertools.count(1)

FIELDS = st.fixed_dictionaries(
    {"customer": st.sampled_from(["Alice", "Alice", "Bob"])},
    optional={
        "desk": st.sampled_from(["a", "b", "c", None]),
        "qty": st.one_of(st.none(), st.integers(-50, 50), st.sampled_from([0.5, 2.25, -1.5])),
        "px": st.one_of(st.none(), st.integers(1, 5), st.sampled_from([1.5, "2"])),
    },
)
STEP = st.one_of(
    st.tuples(st.just("publish"), st.integers(0, 7), FIELDS),
    st.tuples(st.just("delta_publish"), st.integers(0, 7), FIELDS),
    st.tuples(st.just("delete"), st.integers(0, 7), st.none()),
    st.tuples(st.just("tx"), st.integers(0, 7), st.lists(st.tuples(st.integers(0, 7), FIELDS), max_size=4)),
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    path: Path = tmp_path_factory.mktemp("aggregation_model")
    config = write_config(path / "server.toml", {}, [{"name": "orders", "key": ["/order"]}], USERS)
    process = ServerProcess(config, path / "data")
    yield process
    process.stop()


async def _logon(url: str, user: str, password: str) -> Client:
    client = await Client.connect(url)
    replies = await client.request({"c": "logon", "cid": "l", "user_id": user, "pw": password})
    assert replies[-1]["status"] == "success", replies
    return client


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, int | float) and isinstance(b, int | float) and math.isclose(a, b, abs_tol=1e-9)
    return bool(a == b)


def _apply(view: dict[str, Any], message: Message) -> None:
    c = message["c"]
    if c == "sow" or (c == "p" and "data" in message):
        view[message["k"]] = message["data"]
    elif c == "p":
        view[message["k"]] = jsonpatch.apply_patch(view[message["k"]], message["patch"])
    elif c == "oof":
        del view[message["k"]]


async def _open(client: Client, run: int, projection: list[str]) -> dict[str, Any]:
    """An aggregated delta view of ``run``'s records, from its snapshot."""
    await client.send(
        {
            "c": "sow_and_delta_subscribe",
            "t": "orders",
            "cid": "v",
            "filter": f"/run = {run}",
            "o": "oof",
            "grouping": ["/desk"],
            "projection": projection,
        }
    )
    view: dict[str, Any] = {}
    for message in await client.until(lambda m: m["c"] == "group_end"):
        _apply(view, message)
    return view


async def _run(url: str, steps: list[tuple[str, int, Any]], joins: int) -> None:
    run = next(RUNS)
    desk = await _logon(url, "desk", "d")
    alice = await _logon(url, "alice", "a")
    other = await _logon(url, "alice", "a")  # the same user: the same gates, so one table
    try:
        view = await _open(alice, run, PROJECTION)
        second: dict[str, Any] | None = None
        records: dict[int, dict[str, Any]] = {}  # what the model knows: order -> record
        order_of_change: list[int] = []

        def changed(order: int, data: dict[str, Any] | None) -> None:
            remember(records, order_of_change, order, data)

        def publish(order: int, fields: dict[str, Any], delta: bool) -> Message:
            key = run * 100 + order
            data = {**fields, "order": key, "run": run}
            merged = {**records[order], **data} if delta and order in records else data
            changed(order, merged)
            return {"c": "delta_publish" if delta else "publish", "t": "orders", "data": data}

        commands: list[Message] = []
        for index, (kind, order, detail) in enumerate(steps):
            if index == joins:
                if commands:
                    await desk.send(*commands)
                    commands = []
                await desk.request({"c": "flush", "cid": "f"})
                second = await _open(other, run, SECOND)
            if kind in ("publish", "delta_publish"):
                commands.append(publish(order, detail, kind == "delta_publish"))
            elif kind == "delete":
                changed(order, None)
                commands.append({"c": "sow_delete", "t": "orders", "data": {"order": run * 100 + order}})
            else:
                cmds = [publish(o, fields, False) for o, fields in detail]
                if cmds:
                    commands.append({"c": "tx", "cmds": cmds})
        if commands:
            await desk.send(*commands)
        await desk.request({"c": "flush", "cid": "f"})
        if second is None:
            second = await _open(other, run, SECOND)
        # What the desk's changes sent Alice is queued before the ack of her own flush.
        for message in await alice.request({"c": "flush", "cid": "f2"}):
            _apply(view, message)
        for message in await other.request({"c": "flush", "cid": "f3"}):
            _apply(second, message)
        visible = {str(k): r for k, r in records.items() if r.get("customer") == "Alice"}
        changes = [str(k) for k in order_of_change]
        expected = groups_from_scratch(SPEC, visible, changes)
        assert _same(view, expected), (view, expected)
        expected_second = groups_from_scratch(SECOND_SPEC, visible, changes)
        assert _same(second, expected_second), (second, expected_second)
    finally:
        await desk.close()
        await alice.close()
        await other.close()


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(STEP, max_size=30), joins=st.integers(0, 30))
def test_the_groups_a_client_rebuilds_equal_the_groups_from_scratch(
    server: ServerProcess, steps: list[tuple[str, int, Any]], joins: int
) -> None:
    asyncio.run(_run(server.url, steps, joins))
