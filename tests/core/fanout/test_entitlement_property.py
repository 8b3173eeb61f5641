"""Property: no message to a user ever carries a row, patch result or OOF body that the user's
entitlement filter does not allow, and no write outside the entitlement changes the SOW.

Random users with random entitlement filters publish, delta publish, delete, subscribe (every
kind, with deltas, select lists, OOF, subscription conflation, replace), unsubscribe and let
time pass, over sockets with small queues (so socket-queue conflation and structural merges
run too). Each user's views are rebuilt only from the messages it received.
"""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from server.core.filters import compile_filter
from server.core.filters.functions import EvalContext
from server.core.records.merge import merge_record

from ..harness import Harness, Peer

USERS = ("u0", "u1", "u2", "u3")
ENTITLEMENTS = (
    "/owner = 'u0'",
    "/owner IN ('u0', 'u1')",
    "/level < 3",
    "/owner = USER()",
    "/owner = 'u1' OR /level > 7",
    None,
)
FILTERS = (None, "/level > 2", "/level <= 5", "/owner = 'u1'", "/id IN (1, 2, 3)")
OPTIONS = (
    "oof",
    "oof,delta=merge",
    "oof,select=[-/secret]",
    "oof,conflation=1s",
    "no_empties,oof",
    "",
    "select=[-/secret]",
)
SUBSCRIBE = ("subscribe", "sow_and_subscribe", "delta_subscribe", "sow_and_delta_subscribe")

records = st.fixed_dictionaries(
    {
        "id": st.integers(1, 3),
        "owner": st.sampled_from(USERS),
        "level": st.integers(0, 9),
        "secret": st.text("xyz", max_size=2),
    }
)
partial = st.fixed_dictionaries(
    {"id": st.integers(1, 3)},
    optional={"owner": st.sampled_from(USERS), "level": st.integers(0, 9), "secret": st.just("s")},
)
user_index = st.integers(0, len(USERS) - 1)
operations = st.one_of(
    st.tuples(st.just("publish"), user_index, records, st.sampled_from([None, 0, 1, 3])),
    st.tuples(st.just("delta_publish"), user_index, partial),
    st.tuples(st.just("delete"), user_index, st.sampled_from((*FILTERS[1:], "1 = 1"))),
    st.tuples(st.just("delete_key"), user_index, st.integers(1, 3)),
    st.tuples(
        st.just("subscribe"),
        user_index,
        st.sampled_from(SUBSCRIBE),
        st.integers(0, 2),
        st.sampled_from(FILTERS),
        st.sampled_from(OPTIONS),
    ),
    st.tuples(st.just("replace"), user_index, st.integers(0, 2), st.sampled_from(FILTERS)),
    st.tuples(st.just("unsubscribe"), user_index, st.integers(0, 2)),
    st.tuples(st.just("advance"), st.sampled_from([0.5, 1.0, 3.0])),
    st.tuples(st.just("drain"), user_index),
    st.tuples(st.just("stall"), user_index),
)


class Client:
    """One user's socket and the views it rebuilt from what it received."""

    def __init__(self, peer: Peer, user_id: str, entitlement: str | None) -> None:
        self.peer = peer
        self.user_id = user_id
        rule = compile_filter(entitlement) if entitlement is not None else None
        ctx = EvalContext(user=user_id)
        self.allows = (lambda data: True) if rule is None else (lambda data: rule.matches(data, ctx))
        self.views: dict[Any, dict[str, Any]] = {}
        self.stalled = False

    def check(self, what: str, data: Any) -> None:
        assert self.allows(data), f"{self.user_id} was sent {what} outside its entitlement: {data}"

    def receive(self) -> None:
        for message in self.peer.take():
            c = message["c"]
            if c == "sow":
                self.check("a snapshot record", message["data"])
                self.views.setdefault(message["query_id"], {})[message["k"]] = message["data"]
            elif c == "p":
                for sid in message["sids"]:
                    self._apply(self.views.setdefault(sid, {}), message)
            elif c == "oof":
                self.check("an OOF body", message["data"])
                for sid in message["sids"]:
                    self.views.get(sid, {}).pop(message["k"], None)

    def _apply(self, view: dict[str, Any], message: dict[str, Any]) -> None:
        key = message.get("k")
        if "data" in message:
            record = message["data"]
        elif "patch" in message:
            record = jsonpatch.apply_patch(view[key], message["patch"])
        else:
            record = merge_record(view[key], message["delta"])
        self.check("a record (after its delta)", record)
        if key is not None:
            view[key] = record


def sow_of(h: Harness) -> dict[str, Any]:
    return {key: version.data for key, version in h.broker.topics["orders"].records.items()}


def run(h: Harness, clients: list[Client], operation: tuple[Any, ...]) -> None:
    kind = operation[0]
    if kind == "advance":
        h.clock.now += operation[1]
        h.broker.advance(h.clock.now)
        return
    client = clients[operation[1]]
    peer = client.peer
    if peer.session.close_code is not None:
        return
    before = sow_of(h)
    command: dict[str, Any]
    if kind == "publish":
        command = {"c": "publish", "t": "orders", "data": operation[2]}
        if operation[3] is not None:
            command["e"] = operation[3]
    elif kind == "delta_publish":
        command = {"c": "delta_publish", "t": "orders", "data": operation[2]}
    elif kind == "delete":
        command = {"c": "sow_delete", "t": "orders", "filter": operation[2]}
    elif kind == "delete_key":
        command = {"c": "sow_delete", "t": "orders", "data": {"id": operation[2]}}
    elif kind == "subscribe":
        _, _, c, sub, text, options = operation
        command = {"c": c, "t": "orders", "sub_id": f"s{sub}", "o": options}
        if text is not None:
            command["filter"] = text
    elif kind == "replace":
        command = {"c": "sow_and_subscribe", "t": "orders", "sub_id": f"s{operation[2]}", "o": "replace,oof"}
        if operation[3] is not None:
            command["filter"] = operation[3]
    elif kind == "unsubscribe":
        command = {"c": "unsubscribe", "sub_id": f"s{operation[2]}"}
    elif kind == "drain":
        client.stalled = False
        return
    else:
        client.stalled = True
        return
    command["cid"] = "c"
    h.engine.receive(peer.session, _dumps(command))
    after = sow_of(h)
    if kind in ("publish", "delta_publish", "delete", "delete_key"):
        for key in before.keys() | after.keys():
            if before.get(key) != after.get(key):
                for state in (before.get(key), after.get(key)):
                    if state is not None:
                        assert client.allows(state), f"{client.user_id} changed a row it may not: {state}"


def _dumps(command: dict[str, Any]) -> bytes:
    return orjson.dumps(command)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    entitlements=st.lists(st.sampled_from(ENTITLEMENTS), min_size=len(USERS), max_size=len(USERS)),
    policy=st.sampled_from(["conflate", "always", "off", "unsubscribe"]),
    merge=st.booleans(),
    operations=st.lists(operations, min_size=5, max_size=60),
)
def test_nothing_outside_an_entitlement_is_ever_sent_or_written(
    entitlements: list[str | None], policy: str, merge: bool, operations: list[tuple[Any, ...]]
) -> None:
    topic: dict[str, Any] = {"name": "orders", "key": ["/id"], "conflation": policy}
    if merge:
        topic["conflation_merge"] = "tests.core.queue.merge_functions:reassign"
    users = []
    for user_id, text in zip(USERS, entitlements, strict=True):
        entry: dict[str, Any] = {"user_id": user_id, "password": "pw", "read": ["*"], "write": ["*"]}
        if text is not None:
            entry["filter"] = {"orders": text}
        users.append(entry)
    h = Harness(topics=[topic], auth={"user": users}, server={"queue_max_messages": 6})
    clients = []
    for user_id, text in zip(USERS, entitlements, strict=True):
        peer = h.peer()
        h.engine.receive(peer.session, _dumps({"c": "logon", "user_id": user_id, "pw": "pw"}))
        peer.take()
        clients.append(Client(peer, user_id, text))
    for operation in operations:
        run(h, clients, copy.deepcopy(operation))
        for client in clients:
            if not client.stalled:
                client.receive()
    for client in clients:
        client.receive()
