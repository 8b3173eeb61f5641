"""Model-based test of the engine (issue 11): every client's view, rebuilt only from the messages
it received, equals the view of an obviously right model (engine_model.py), and messages about
a record never go back in time.

The machine drives the real engine through the harness: a publisher and three subscribers
(users with different entitlement filters, some logged on with ``conflation=off``; a socket
closed with 4001 connects again) over one or two topics (every socket-queue policy and mode,
structural merges) with small queues. Rules: frames of publishes, delta publishes (with and
without expiry) and deletes by key and by filter, and frames of many changes of one hot record;
subscriptions of every kind with filters, select lists, oof, patch and merge deltas, no_sowkey
and subscription conflation, several per socket with overlapping filters; ``replace``;
unsubscribe; stalls (a stalled client does not read; one that reads takes what is queued
whenever the engine tries to write); the clock moving on (expiries, conflation intervals).

Checked as messages arrive (engine_model.ClientViews): per-record order, per subscription and
per socket (a version ``v`` in every record); messages only for live sids of the right topic;
snapshots between group_begin and group_end with the right count; ``k`` exactly when not
``no_sowkey``; deltas that apply to what the client holds; ``unsubscribed`` only on an
``unsubscribe`` topic. Checked after every drain (the clock past every conflation interval,
every client has read everything; stalled clients stay stalled afterwards): each
subscription's view equals the model's (with ``oof``; without it a client cannot remove records
that left, so every record of the model's view must be held with the model's value), and every
command with a cid got exactly one processed ack. A 4001 close ends a socket's checks when its
policies allow it (see ``_may_close``); otherwise it is a failure.

Put back one at a time, each defect it was built to find fails it within a few hundred examples
(a few seconds to half a minute): replace-mode conflation reordering one record's messages, OOFs
queued one per flip instead of conflated, a structural merge rendered without the select list and
``no_sowkey``, ``replace`` without OOFs, a shorter lifetime ignored, ``conflation=off`` turning
off the ``unsubscribe`` policy. 5,000 examples of 100 steps pass (about 6 minutes).

``SOWPUSH_MODEL_EXAMPLES`` and ``SOWPUSH_MODEL_STEPS`` scale the run (for a long CI job);
``pytest --hypothesis-show-statistics`` shows what a run exercised.
"""

from __future__ import annotations

import os
from dataclasses import replace as dataclass_replace
from typing import Any

import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import initialize, rule

from ..waiting import HANG_S
from .engine_model import (
    DELTA,
    ENTITLEMENTS,
    FILTERS,
    SELECTS,
    TOPICS,
    Filter,
    Select,
    Sub,
    topic_configs,
)
from .harness import Harness
from .model_draws import COMMANDS, INTERVAL, MAX_SUBS, QUEUE_SIZES, digit, key, topic_slot, write_op
from .model_sockets import EngineSockets
from .model_views import ViewMismatch


class EngineMachine(EngineSockets):
    @initialize(
        topics=st.lists(st.sampled_from(sorted(TOPICS)), min_size=1, max_size=2, unique=True),
        max_messages=st.sampled_from(QUEUE_SIZES),
        conflation=st.tuples(st.booleans(), st.booleans(), st.booleans()),
        stalled=st.tuples(st.booleans(), st.booleans(), st.booleans()),
    )
    def start(
        self,
        topics: list[str],
        max_messages: int,
        conflation: tuple[bool, bool, bool],
        stalled: tuple[bool, bool, bool],
    ) -> None:
        users: list[dict[str, Any]] = [{"user_id": "feed", "password": "pw", "read": ["*"], "write": ["*"]}]
        for user, entitlement in ENTITLEMENTS.items():
            entry: dict[str, Any] = {"user_id": user, "password": "pw", "read": ["*"], "write": []}
            if entitlement.text is not None:
                entry["filter"] = dict.fromkeys(TOPICS, entitlement.text)
            users.append(entry)
        self.h = Harness(
            topics=topic_configs(),
            auth={"user": users},
            server={"queue_max_messages": max_messages, "hidden_interval": "1s"},
        )
        self.topics = topics
        self.max_messages = max_messages
        self.publisher = self._logon("feed", "feed", True)
        for (user, _), on, stall in zip(ENTITLEMENTS.items(), conflation, stalled, strict=True):
            self.clients.append(self._logon(f"c{len(self.clients)}-{user}", user, on))
            self.clients[-1].stalled = stall

    # -- rules ----------------------------------------------------------------------------

    @rule(ops=st.lists(write_op, min_size=1, max_size=3))
    def write(self, ops: list[tuple[Any, ...]]) -> None:
        """A frame of a few changes."""
        self._write(ops)

    @rule(ops=st.lists(write_op, min_size=4, max_size=12))
    def burst(self, ops: list[tuple[Any, ...]]) -> None:
        """A frame of many changes: queues fill and conflate."""
        self._write(ops)

    @rule(
        slot=topic_slot,
        record=key,
        changes=st.lists(st.tuples(digit, digit, st.booleans()), min_size=4, max_size=16),
    )
    def hot(self, slot: int, record: int, changes: list[tuple[int, int, bool]]) -> None:
        """A frame of many changes of one record: it flaps in and out of filters and
        entitlements, and its queued messages conflate."""
        ops: list[tuple[Any, ...]] = []
        for x, lvl, delta in changes:
            if delta:
                ops.append(("delta_publish", slot, {"id": record, "x": x, "lvl": lvl, "v": True}, 0))
            else:
                data = {"id": record, "x": x, "lvl": lvl, "n": {"a": x % 3, "b": lvl % 3}}
                ops.append(("publish", slot, data, None))
        self._write(ops)

    @rule(ops=st.lists(write_op, min_size=2, max_size=8))
    def transaction(self, ops: list[tuple[Any, ...]]) -> None:
        """The changes as one transaction (docs/protocol.md, Transactions): applied whole, delivered
        in one frame."""
        self._write(ops, transaction=True)

    def _write(self, ops: list[tuple[Any, ...]], transaction: bool = False) -> None:
        """One frame of publishes, delta publishes and deletes from the publisher (or one
        transaction of them)."""
        commands = []
        now = self.h.clock.now
        for op in ops:
            kind, slot = op[0], op[1]
            topic = self.topics[slot % len(self.topics)]
            command: dict[str, Any] = {"c": kind, "cid": self.next("w"), "t": topic}
            if kind in ("publish", "delta_publish"):
                data = dict(op[2])
                exists = data["id"] in self.model.sow[topic]
                if data.pop("v", False) or kind == "publish" or not exists:
                    data["v"] = self.counter
                command["data"] = data
                lifetime = op[3]
                if lifetime is not None:
                    command["e"] = lifetime
                self.model.publish(topic, data, kind == "delta_publish", now + lifetime if lifetime else None)
            elif kind == "delete_key":
                command.update(c="sow_delete", data={"id": op[2]})
                self.model.delete(topic, op[2])
            else:
                command.update(c="sow_delete", filter=op[2].text)
                self.model.delete_where(topic, op[2].matches)
            commands.append(command)
        if transaction:
            for command in commands:
                del command["cid"]
            commands = [{"c": "tx", "cid": self.next("t"), "cmds": commands}]
            for client in self.clients:
                client.transactions_since_empty += 1
        self._send(self.publisher, commands)

    @rule(
        client=st.integers(0, 2),
        command=st.sampled_from(COMMANDS),
        slot=topic_slot,
        filter_=st.sampled_from(FILTERS),
        select=st.sampled_from(SELECTS),
        oof=st.booleans(),
        merge=st.booleans(),
        no_sowkey=st.booleans(),
        send_keys=st.booleans(),
        conflation=st.booleans(),
        no_empties=st.booleans(),
    )
    def subscribe(
        self,
        client: int,
        command: str,
        slot: int,
        filter_: Filter,
        select: Select,
        oof: bool,
        merge: bool,
        no_sowkey: bool,
        send_keys: bool,
        conflation: bool,
        no_empties: bool,
    ) -> None:
        chosen = self._client(client)
        if chosen is None or len(self._subs_of(chosen)) >= MAX_SUBS:
            return
        delta = command in DELTA
        merge = merge and delta
        no_sowkey = no_sowkey and (merge or not delta)  # a patch names its record by k alone
        send_keys = send_keys or not merge or no_sowkey  # a merge delta needs k or its keys
        sub = Sub(
            client=chosen.name,
            sid=self.next("s"),
            topic=self.topics[slot % len(self.topics)],
            command=command,
            filter=filter_,
            entitlement=ENTITLEMENTS[chosen.user],
            select=select,
            oof=oof,
            merge=merge,
            no_sowkey=no_sowkey,
            send_keys=send_keys,
            conflation=conflation,
            no_empties=no_empties,
        )
        chosen.subs[sub.sid] = sub
        self.model.subscribe(sub)
        self._send(chosen, [sub.command_for(self.next("q"))], sub.sid)

    @rule(
        client=st.integers(0, 2),
        index=st.integers(0, MAX_SUBS - 1),
        filter_=st.sampled_from(FILTERS),
        snapshot=st.booleans(),
    )
    def replace(self, client: int, index: int, filter_: Filter, snapshot: bool) -> None:
        """The same sub_id with a new filter (and with or without a snapshot), o: replace."""
        chosen = self._client(client)
        subs = [] if chosen is None else self._subs_of(chosen)
        if chosen is None or not subs:
            return
        old = subs[index % len(subs)]
        if old.sid not in chosen.peer.session.subscriptions:
            return  # dropped for back pressure, and the client has not read it yet
        delta = old.command in DELTA
        command = ("sow_and_" if snapshot else "") + ("delta_subscribe" if delta else "subscribe")
        new = dataclass_replace(old, command=command, filter=filter_, known=set())
        chosen.subs[new.sid] = new
        self.model.replace(old, new)
        self._send(chosen, [new.command_for(self.next("r"), replace=True)], new.sid)

    @rule(client=st.integers(0, 2), index=st.integers(0, MAX_SUBS - 1))
    def unsubscribe(self, client: int, index: int) -> None:
        chosen = self._client(client)
        subs = [] if chosen is None else self._subs_of(chosen)
        if chosen is None or not subs:
            return
        sub = subs[index % len(subs)]
        self.model.unsubscribe(sub)
        self._send(chosen, [{"c": "unsubscribe", "cid": self.next("u"), "sub_id": sub.sid}], sub.sid)

    @rule(client=st.integers(0, 2), reads=st.booleans())
    def reading(self, client: int, reads: bool) -> None:
        """The client stops reading (its queue fills, conflates, or closes it) or reads again."""
        self.clients[client].stalled = not reads
        self._settle()

    @rule(client=st.integers(0, 2), hidden=st.booleans())
    def visibility(self, client: int, hidden: bool) -> None:
        """The client's page is hidden (its messages wait, hidden_interval) or shown again
        (docs/protocol.md, Hidden views)."""
        chosen = self._client(client)
        if chosen is not None:
            self._send(chosen, [{"c": "visibility", "hidden": hidden, "cid": self.next("v")}])

    @rule(seconds=st.sampled_from([0.5, 1.0, 3.0]))
    def tick(self, seconds: float) -> None:
        """Time passes: records expire, conflation intervals end."""
        self.h.clock.now += seconds
        self.h.broker.advance(self.h.clock.now)
        self.model.expire(self.h.clock.now)
        self._settle()

    @rule(skip=st.integers(0, 2))
    def drain(self, skip: int) -> None:
        """Check (one time in three: queues must have time to fill between checks)."""
        if not skip:
            self._drain_and_check()

    def teardown(self) -> None:
        if self.clients:
            self._drain_and_check()
            # What the run exercised (pytest --hypothesis-show-statistics).
            for name, topic in self.h.broker.topics.items():
                for counter, value in topic.counters.items():
                    if value:
                        event(f"{counter} on {name}")
            for client in self.sockets:
                for kind in client.views.kinds:
                    event(f"received {kind}")
                if client.closed:
                    event("closed 4001 (allowed)")

    # -- the invariants -------------------------------------------------------------------

    def _drain_and_check(self) -> None:
        """Past every conflation interval, every client reads everything; then each view must be
        the model's, and every command must have had its one processed ack."""
        while True:  # an expiry starts an interval of its own: advance until none expires
            self.h.clock.now += INTERVAL
            self.h.broker.advance(self.h.clock.now)
            if not self.model.expire(self.h.clock.now):
                break
        self._settle(everyone=True)  # stalled clients read too, and stay stalled afterwards
        self._settle(everyone=True)  # a dropped subscription's queue emptied: nothing more can arrive
        for client in self.sockets:
            if not client.closed:
                client.views.check_acks()
        clients = {client.name: client for client in self.sockets}
        for sub in self.model.subs:
            client = clients[sub.client]
            if client.closed or sub.dropped:
                continue
            expected = self.model.expected(sub)
            held = client.views.views.get(sub.sid, {})
            where = (
                f"{client.name} sid {sub.sid} ({sub.command} {sub.topic} "
                f"filter={sub.filter.text!r} o={sub.options()!r})"
            )
            if sub.oof:
                if held != expected:
                    raise ViewMismatch(f"{where}: view {held} != model {expected}")
                continue
            for record_id, record in expected.items():
                if held.get(record_id) != record:
                    raise ViewMismatch(f"{where}: holds {held.get(record_id)} of {record_id}, model {record}")


EXAMPLES = int(os.environ.get("SOWPUSH_MODEL_EXAMPLES", "1000"))
STEPS = int(os.environ.get("SOWPUSH_MODEL_STEPS", "100"))


# The examples are run in four parts of a quarter each, so that xdist can run the parts on four
# workers at once (scripts/test) instead of one worker running all of them at the end of the suite.
# Each part is a class of its own: a derandomized run (Hypothesis's CI profile) draws a machine's
# examples from a seed made of its class's name and source, so parts of one class would all draw
# the same examples; four classes draw four different sets, as four random runs do.
class EngineMachine1(EngineMachine):
    """The first quarter of the examples."""


class EngineMachine2(EngineMachine):
    """The second quarter of the examples."""


class EngineMachine3(EngineMachine):
    """The third quarter of the examples."""


class EngineMachine4(EngineMachine):
    """The fourth quarter of the examples."""


PARTS = (EngineMachine1, EngineMachine2, EngineMachine3, EngineMachine4)


def as_test(machine: type[EngineMachine]) -> Any:
    machine.TestCase.settings = settings(
        max_examples=-(-EXAMPLES // len(PARTS)),  # rounded up: EXAMPLES in all, at least
        stateful_step_count=STEPS,
        deadline=None,
        report_multiple_bugs=False,  # one failure at a time, shrunk in minutes rather than many
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.filter_too_much,
            HealthCheck.large_base_example,
        ],
    )
    # About 20 s a part when it passes; a failure adds up to five minutes of shrinking.
    return pytest.mark.timeout(8 * HANG_S)(pytest.mark.slow(machine.TestCase))


TestEngineModel1, TestEngineModel2, TestEngineModel3, TestEngineModel4 = (as_test(m) for m in PARTS)
