"""Model-based test of a cluster (docs/protocol.md, Cluster): three real nodes (``python -m
server``) sharing one real ``redis-server``, driven by a Hypothesis state machine; the reference is
the shared log itself, read back from Redis and replayed (cluster_model.py).

Rules: frames of publishes (some with a 1 s lifetime), delta publishes and deletes (by key and
by filter) over three records, each frame sent by one of six publishers (two a node, each logged
on with its own client name, every change with its ``s``) without waiting for its acks, then
maybe a moment's pause or a wait for every ack; publishers on two or three nodes delta-publishing
one record at once (the Redis script's conflicts and retries); ``sow_and_subscribe`` and
``sow_and_delta_subscribe`` with ``oof`` and a filter, on any node (up to three opened with the
example, at most four open at once); a subscriber that closes and subscribes again on another node.

Checked once the cluster is quiet after each example (every command answered, no expiry due,
every node's SOW equal to the others' and to the log's):

- the log: each ``p`` entry is its command's record (a publish's data; a delta publish merged
  into the record it replaced in the log, whatever node merged it), each ``d`` comes from a delete
  of that record, each ``x`` expires the current version once it is due; every acked change is in
  the log once, a failed one not at all; each publisher's changes in the order it sent them;
- deletes act on the records as they stand at their place in the log (as one server applying
  that order would; the place lies between the socket's earlier and later changes): a filter
  delete removes only records its filter matches there, ``records_deleted`` counts records that
  were there, and a record that stood unchanged through that span and matches the delete (its
  key or filter) is deleted: a delete right after its own socket's publish of the record sees it;
- every node's SOW is the log's (polled until they agree, 20 s at most);
- every subscriber (polled until it has it all, 5 s at most): its view equals the final SOW
  under its filter, and its snapshot and each record's messages (``data`` or JSON patch, and OOFs
  with their reason and body) are exactly what a single server sends that takes the snapshot at
  some position of the log and applies the rest; a subscriber closed early got a beginning of
  each record's messages.

Each example starts from an empty topic: everything is deleted and every node's SOW is awaited
empty, and only the log entries after that are the example's. ``SOWPUSH_CLUSTER_MODEL_EXAMPLES``
(default 15) and ``SOWPUSH_CLUSTER_MODEL_STEPS`` (default 30) scale the run.
"""

from __future__ import annotations

import asyncio
import itertools
import os
from collections.abc import Coroutine
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    precondition,
    rule,
    run_state_machine_as_test,
)

from ..core.engine_model import FILTERS, Filter
from ..waiting import HANG_S, eventually_async
from .cluster_driver import NODES, TOPIC, UNIQUE, Cluster, Publisher, Socket, Subscriber, until
from .cluster_model import (
    AckViolation,
    Command,
    Log,
    MessageViolation,
    NotQuiet,
    SubscriberMismatch,
    check_commands,
    check_deletes,
)
from .cluster_views import matches_for, received
from .conftest import StartNode
from .redis_process import RedisProcess

pytestmark = [pytest.mark.slow, pytest.mark.timeout(8 * HANG_S)]  # shrinking a failure takes minutes

T = TypeVar("T")

PUBLISHERS = 6  # publisher i sends to node i % NODES
MAX_SUBSCRIBERS = 4  # open at once
KEYS = (1, 2, 3)
QUIET_TIMEOUT = 20.0
DELIVERY_TIMEOUT = 5.0


# -- what a rule may draw ------------------------------------------------------------------

key = st.sampled_from(KEYS)
node = st.integers(0, NODES - 1)
slot = st.integers(0, PUBLISHERS - 1)
digit = st.integers(0, 9)
small = st.integers(0, 2)
publish_op = st.tuples(
    st.just("publish"),
    key,
    st.fixed_dictionaries({"x": digit}, optional={"n": st.fixed_dictionaries({"a": small, "b": small})}),
    st.sampled_from([None, None, 1]),  # e: some records live one second
)
delta_fields = st.fixed_dictionaries(
    {}, optional={"x": digit, "n": st.fixed_dictionaries({}, optional={"a": small, "b": small})}
)
delta_op = st.tuples(st.just("delta_publish"), key, delta_fields, st.none())
delete_op = st.tuples(st.just("delete_key"), key)
filter_delete_op = st.tuples(st.just("delete_filter"), st.sampled_from(FILTERS[1:]))
write_op = st.one_of(publish_op, publish_op, delta_op, delta_op, delete_op, filter_delete_op)
THEN = ("", "", "pause", "acks")  # after a frame: nothing, a moment, or every ack


class ClusterMachine(RuleBasedStateMachine):
    def __init__(self, cluster: Cluster) -> None:
        super().__init__()
        self.cluster = cluster
        self.publishers: dict[int, Publisher] = {}
        self.subscribers: list[Subscriber] = []
        self.commands: dict[tuple[str, int], Command] = {}
        self.log_from = "0-0"
        self.started = False
        self.broken = False  # a step raised: teardown only cleans up

    def run(self, step: Coroutine[Any, Any, T]) -> T:
        self.broken = True
        task = self.cluster.loop.create_task(step)
        try:
            result = self.cluster.loop.run_until_complete(task)
        except BaseException:  # a timeout, ^C: the step must not go on in a later one
            task.cancel()
            raise
        self.broken = False
        return result

    # -- an empty topic, and the first subscribers -----------------------------------------

    @initialize(subscribers=st.lists(st.tuples(node, st.booleans(), st.sampled_from(FILTERS)), max_size=3))
    def start(self, subscribers: list[tuple[int, bool, Filter]]) -> None:
        self.run(self._empty())
        self.started = True
        for chosen, delta, filter_ in subscribers:
            self.run(self._subscribe(chosen, delta, filter_))

    async def _empty(self) -> None:
        """Delete every record left, until every node's SOW is empty; the log after that is ours."""
        socket = self.cluster.queries[0]
        for attempt in itertools.count():
            await socket.send([{"c": "sow_delete", "t": TOPIC, "filter": "1 = 1", "cid": "clear"}])
            await until(
                lambda: any(m.get("cid") == "clear" for m in socket.messages),
                HANG_S,
                lambda: "no ack to the delete of every record",
            )
            socket.messages.clear()

            if not any(await eventually_async(self.cluster.agreed, "the nodes never agreed on what is left")):
                self.log_from = self.cluster.tail()
                return
            if attempt == 5:
                raise NotQuiet(f"the nodes keep records after deleting all: {await self.cluster.sows()}")

    # -- rules ----------------------------------------------------------------------------

    @rule(slot=slot, ops=st.lists(write_op, min_size=1, max_size=6), then=st.sampled_from(THEN))
    def write(self, slot: int, ops: list[tuple[Any, ...]], then: str) -> None:
        """One frame of changes from one publisher, not waiting for its acks; then, maybe, a
        moment for the nodes to go on, or every publisher waits for its acks (so what is sent
        next comes after them)."""
        self.run(self._write(slot, ops, then))

    @rule(
        slots=st.lists(slot, min_size=2, max_size=3, unique_by=lambda s: s % NODES),
        record=key,
        deltas=st.lists(delta_fields, min_size=3, max_size=3),
        then=st.sampled_from(THEN),
    )
    def race(self, slots: list[int], record: int, deltas: list[dict[str, Any]], then: str) -> None:
        """Publishers on different nodes delta-publish the same record at once."""
        for index, chosen in enumerate(slots):
            ops = [("delta_publish", record, deltas[index], None)]
            self.run(self._write(chosen, ops, "" if index < len(slots) - 1 else then))

    async def _write(self, slot: int, ops: list[tuple[Any, ...]], then: str) -> None:
        publisher = self.publishers.get(slot)
        if publisher is None:
            publisher = self.publishers[slot] = await self._logon(slot % NODES)
        commands = []
        for op in ops:
            publisher.sent += 1
            command = Command(op[0], publisher.name, publisher.socket.node, publisher.sent)
            if command.kind in ("publish", "delta_publish"):
                command.data = {"id": op[1], "u": next(UNIQUE), **op[2]}
                command.e = op[3]
            elif command.kind == "delete_key":
                command.key = op[1]
            else:
                command.filter = op[1]
            self.commands[publisher.name, command.s] = command
            commands.append(command.wire(TOPIC))
        await publisher.socket.send(commands)
        if then == "pause":
            await asyncio.sleep(0.05)
        elif then == "acks":
            await self._answered(HANG_S)

    async def _logon(self, node: int) -> Publisher:
        socket = await Socket.open(self.cluster.nodes[node].url, node)
        publisher = Publisher(socket, f"pub{next(UNIQUE)}")
        await socket.send([{"c": "logon", "client_name": publisher.name, "cid": "logon"}])
        await until(
            lambda: any(m.get("cid") == "logon" for m in socket.messages),
            HANG_S,
            lambda: f"no logon ack for {publisher.name}: {socket.messages}",
        )
        ack = socket.messages.pop()
        if ack.get("status") != "success" or socket.messages:
            raise AckViolation(f"{publisher.name}'s logon: {[*socket.messages, ack]}")
        return publisher

    def live(self) -> list[Subscriber]:
        return [s for s in self.subscribers if not s.closed]

    @precondition(lambda self: len(self.live()) < MAX_SUBSCRIBERS)
    @rule(chosen=node, delta=st.booleans(), filter_=st.sampled_from(FILTERS))
    def subscribe(self, chosen: int, delta: bool, filter_: Filter) -> None:
        self.run(self._subscribe(chosen, delta, filter_))

    async def _subscribe(self, chosen: int, delta: bool, filter_: Filter) -> None:
        socket = await Socket.open(self.cluster.nodes[chosen].url, chosen)
        subscriber = Subscriber(socket, f"s{next(UNIQUE)}", delta, filter_)
        self.subscribers.append(subscriber)
        command: dict[str, Any] = {
            "c": "sow_and_delta_subscribe" if delta else "sow_and_subscribe",
            "t": TOPIC,
            "sub_id": subscriber.sid,
            "cid": subscriber.cid,
            "o": "oof",
        }
        if filter_.text is not None:
            command["filter"] = filter_.text
        await socket.send([command])

    @precondition(lambda self: bool(self.live()))
    @rule(index=st.integers(0, MAX_SUBSCRIBERS - 1), hop=st.integers(1, NODES - 1))
    def move(self, index: int, hop: int) -> None:
        """A subscriber closes its socket and subscribes again (a new sub_id) on another node."""
        live = self.live()
        self.run(self._move(live[index % len(live)], hop))

    async def _move(self, subscriber: Subscriber, hop: int) -> None:
        await subscriber.socket.close()
        subscriber.closed = True
        await self._subscribe((subscriber.socket.node + hop) % NODES, subscriber.delta, subscriber.filter)

    # -- the invariants -------------------------------------------------------------------

    def teardown(self) -> None:
        try:
            if self.started and not self.broken:
                self.run(self._check())
        finally:
            sockets = [p.socket for p in self.publishers.values()]
            sockets += [s.socket for s in self.subscribers if not s.closed]
            self.cluster.loop.run_until_complete(close_all(sockets))

    def _read_acks(self) -> None:
        for publisher in self.publishers.values():
            for message in publisher.socket.messages:
                cid = message.get("cid")
                s = int(cid[1:]) if isinstance(cid, str) and cid[1:].isdigit() else None
                command = self.commands.get((publisher.name, s)) if s is not None else None
                if message.get("c") != "ack" or command is None:
                    raise MessageViolation(f"publisher {publisher.name} was sent {message}")
                if message.get("a") == "stats" and command.delete:
                    command.stats.append(message)
                elif message.get("a") == "processed":
                    command.processed.append(message)
                else:
                    raise MessageViolation(f"publisher {publisher.name}: an ack not asked for: {message}")
            publisher.socket.messages.clear()

    async def _answered(self, timeout: float) -> None:
        def done() -> bool:
            self._read_acks()
            return all(command.answered for command in self.commands.values())

        def missing() -> str:
            waiting = [c.describe() for c in self.commands.values() if not c.answered]
            return f"commands not answered in {timeout} s: {waiting}"

        try:
            await until(done, timeout, missing)
        except TimeoutError as error:
            raise AckViolation(str(error)) from None

    async def _quiet(self) -> Log:
        """Once every command is answered: the log, when no expiry is due and every node's SOW is
        the log's (docs/protocol.md, Cluster: once the cluster is quiet, sow is the same on every node)."""
        await self._answered(HANG_S)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + QUIET_TIMEOUT
        while True:
            log = Log(self.cluster.entries(self.log_from), self.commands, self.cluster.sow_keys)
            sows = await self.cluster.sows()
            if not log.expires and all(sow == log.sow for sow in sows):
                return log
            if loop.time() > deadline:
                break
            await asyncio.sleep(0.05)
        nodes = "\n".join(f"  node{i}: {sow}" for i, sow in enumerate(sows))
        agree = "agree" if all(sow == sows[0] for sow in sows) else "DISAGREE"
        raise NotQuiet(
            f"not quiet after {QUIET_TIMEOUT} s: the nodes {agree}\n{nodes}\n  the log's SOW: {log.sow} "
            f"(expiries due: {log.expires})\nthe log:\n{log.describe()}"
        )

    async def _check(self) -> None:
        log = await self._quiet()
        check_commands(log, self.commands)
        check_deletes(log, self.commands)
        await self._check_subscribers(log)
        for change in log.changes:
            event(f"log: {change.op}")
        if any(len(c.entries) > 1 for c in self.commands.values()):
            event("a delete of several records")

    async def _check_subscribers(self, log: Log) -> None:
        """Each subscriber has (or, closed early, began) exactly what a single server sends. A
        subscriber still owed messages is waited for; one sent a wrong message fails at once."""

        def verdicts() -> tuple[list[str], list[str]]:
            wrong, owed = [], []
            for subscriber in self.subscribers:
                got = received(subscriber.socket.messages, subscriber.sid, subscriber.cid)
                live = not subscriber.closed
                where = f"{subscriber.describe()}:\n  "
                state = f"\n  snapshot {got.snapshot}\n  messages {got.events}"
                if live and subscriber.socket.closed_by_server:
                    wrong.append(f"{where}its socket was closed ({subscriber.socket.ws.close_code}){state}")
                    continue
                if got.snapshot is None:
                    if live:
                        owed.append(f"{where}no snapshot (group_end)")
                    continue
                position, why = matches_for(log, got, subscriber.filter, subscriber.delta, complete=False)
                if position is None:
                    wrong.append(where + why + state)
                elif live:
                    position, why = matches_for(log, got, subscriber.filter, subscriber.delta, complete=True)
                    expected = {k: r for k, r in log.sow.items() if subscriber.filter.matches(r)}
                    if position is None or got.view != expected:
                        owed.append(
                            f"{where}{why}; view {got.view}, final SOW under its filter {expected}{state}"
                        )
            return wrong, owed

        loop = asyncio.get_running_loop()
        deadline = loop.time() + DELIVERY_TIMEOUT
        while True:
            wrong, owed = verdicts()
            if wrong or (owed and loop.time() > deadline):
                problems = "\n".join(wrong) or f"still owed after {DELIVERY_TIMEOUT} s:\n" + "\n".join(owed)
                raise SubscriberMismatch(f"{problems}\nthe log:\n{log.describe()}\nthe final SOW: {log.sow}")
            if not owed:
                break
            await asyncio.sleep(0.05)
        for subscriber in self.subscribers:
            event("subscriber moved" if subscriber.closed else "subscriber")


EXAMPLES = int(os.environ.get("SOWPUSH_CLUSTER_MODEL_EXAMPLES", "15"))
STEPS = int(os.environ.get("SOWPUSH_CLUSTER_MODEL_STEPS", "30"))
SETTINGS = settings(
    max_examples=EXAMPLES,
    stateful_step_count=STEPS,
    deadline=None,
    report_multiple_bugs=False,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


async def open_queries(cluster: Cluster) -> None:
    cluster.queries = [await Socket.open(node.url, i) for i, node in enumerate(cluster.nodes)]


async def close_all(sockets: list[Socket]) -> None:
    await asyncio.gather(*(socket.close() for socket in sockets))


def test_a_cluster_behaves_like_one_server_applying_its_log(
    start_node: StartNode, redis_server: RedisProcess
) -> None:
    topics = [{"name": TOPIC, "key": ["/id"]}]
    nodes = [start_node(topics=topics) for _ in range(NODES)]
    loop = asyncio.new_event_loop()
    cluster = Cluster(nodes, redis_server.client(), loop)
    try:
        loop.run_until_complete(open_queries(cluster))
        run_state_machine_as_test(lambda: ClusterMachine(cluster), settings=SETTINGS)
    finally:
        loop.run_until_complete(close_all(cluster.queries))
        loop.close()
        cluster.redis.close()
