"""Property (docs/protocol.md, Reloading entitlements): after any reload of ``[auth]``, every live
``oof`` view that a client rebuilt from the messages it received equals what a fresh subscription
with the new entitlements sees, and no message ever carried a row the entitlement in force did not
allow.

Random records are published and deleted, and the user's entitlement filter is replaced at random
(with ``USER()``, with none at all), under subscriptions of every kind: plain, delta (patch and
merge), select lists, subscription conflation, and windows with and without ``positions``.
"""

from __future__ import annotations

from typing import Any

import jsonpatch
import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from server.core.filters import compile_filter
from server.core.filters.functions import EvalContext
from server.core.records.merge import merge_record
from server.core.settings.config import parse_config

from ..harness import Harness, Peer

TOPICS = [{"name": "orders", "key": ["/id"]}]
ENTITLEMENTS = (
    None,
    "/owner = 'u0'",
    "/owner IN ('u0', 'u1')",
    "/level < 4",
    "/owner = USER()",
    "/owner = 'u1' OR /level > 6",
    "/level > 100",
)
SUBSCRIPTIONS: tuple[dict[str, Any], ...] = (
    {"c": "sow_and_subscribe", "o": "oof"},
    {"c": "sow_and_subscribe", "o": "oof", "filter": "/level > 2"},
    {"c": "sow_and_delta_subscribe", "o": "oof"},
    {"c": "sow_and_delta_subscribe", "o": "oof,delta=merge,no_empties"},
    {"c": "sow_and_subscribe", "o": "oof,select=[-/secret]"},
    {"c": "sow_and_subscribe", "o": "oof,conflation=1s"},
    {"c": "sow_and_subscribe", "o": "oof", "top_n": 2, "orderby": "/level DESC"},
    {"c": "sow_and_delta_subscribe", "o": "oof,positions", "top_n": 3, "skip_n": 1, "orderby": "/level"},
    {"c": "sow_and_subscribe", "o": "oof", "top_n": 2},
)
OWNERS = ("u0", "u1", "u2")

records = st.fixed_dictionaries(
    {
        "id": st.integers(1, 6),
        "owner": st.sampled_from(OWNERS),
        "level": st.integers(0, 9),
        "secret": st.text("xy", max_size=2),
    }
)
operations = st.lists(
    st.one_of(
        st.tuples(st.just("publish"), records),
        st.tuples(st.just("delete"), st.integers(1, 6)),
        st.tuples(st.just("reload"), st.sampled_from(ENTITLEMENTS)),
    ),
    min_size=1,
    max_size=25,
)


def users(entitlement: str | None) -> dict[str, Any] | None:
    viewer: dict[str, Any] = {"user_id": "u0", "password": "pw", "read": ["*"], "write": []}
    if entitlement is not None:
        viewer["filter"] = {"orders": entitlement}
    feed = {"user_id": "feed", "password": "pw", "read": ["*"], "write": ["*"]}
    return parse_config({"topic": TOPICS, "auth": {"user": [viewer, feed]}}).users


def logged_on(h: Harness, user_id: str) -> Peer:
    peer = h.peer()
    h.engine.receive(peer.session, orjson.dumps({"c": "logon", "user_id": user_id, "pw": "pw"}))
    peer.take()
    return peer


class Views:
    """What one socket rebuilt from its messages: sub_id -> SowKey -> record."""

    def __init__(self) -> None:
        self.views: dict[Any, dict[str, Any]] = {}

    def receive(self, messages: list[dict[str, Any]], allows: Any) -> None:
        for message in messages:
            c = message["c"]
            if c == "sow":
                assert allows(message["data"]), message
                self.views.setdefault(message["query_id"], {})[message["k"]] = message["data"]
            elif c == "p":
                for sid in message["sids"]:
                    view = self.views.setdefault(sid, {})
                    key = message["k"]
                    if "data" in message:
                        record = message["data"]
                    elif "patch" in message:
                        record = jsonpatch.apply_patch(view[key], message["patch"])
                    else:
                        record = merge_record(view[key], message["delta"])
                    assert allows(record), message
                    view[key] = record
            elif c == "oof":
                assert allows(message["data"]) or message["reason"] == "entitlement", message
                for sid in message["sids"]:
                    assert message["k"] in self.views.get(sid, {}), message
                    self.views[sid].pop(message["k"])


def fresh(h: Harness, command: dict[str, Any]) -> dict[str, Any]:
    """What a new socket of the same user sees with the same subscription, now."""
    peer = logged_on(h, "u0")
    h.engine.receive(peer.session, orjson.dumps({**command, "t": "orders", "sub_id": "f"}))
    got = Views()
    got.receive(peer.take(), lambda data: True)
    h.broker.close_session(peer.session)
    return got.views.get("f", {})


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    start=st.sampled_from(ENTITLEMENTS),
    initial=st.lists(records, max_size=8),
    chosen=st.lists(st.integers(0, len(SUBSCRIPTIONS) - 1), min_size=1, max_size=4, unique=True),
    steps=operations,
)
def test_after_a_reload_every_view_is_what_a_fresh_subscription_sees(
    start: str | None, initial: list[dict[str, Any]], chosen: list[int], steps: list[tuple[Any, Any]]
) -> None:
    h = Harness(topics=TOPICS, auth={"user": []})
    h.engine.reload_auth(users(start))
    feed, viewer = logged_on(h, "feed"), logged_on(h, "u0")
    entitlement = [start]

    def allows(data: Any) -> bool:
        text = entitlement[0]
        return text is None or compile_filter(text).matches(data, EvalContext(user="u0"))

    for record in initial:
        h.engine.receive(feed.session, orjson.dumps({"c": "publish", "t": "orders", "data": record}))
    commands = {f"s{index}": SUBSCRIPTIONS[index] for index in chosen}
    views = Views()
    for sub_id, command in commands.items():
        h.engine.receive(viewer.session, orjson.dumps({**command, "t": "orders", "sub_id": sub_id}))
    views.receive(viewer.take(), allows)
    for kind, value in steps:
        if kind == "publish":
            h.engine.receive(feed.session, orjson.dumps({"c": "publish", "t": "orders", "data": value}))
        elif kind == "delete":
            h.engine.receive(
                feed.session, orjson.dumps({"c": "sow_delete", "t": "orders", "data": {"id": value}})
            )
        else:
            h.engine.reload_auth(users(value))
            entitlement[0] = value
        h.clock.now += 2  # every conflation interval ends
        h.broker.advance(h.clock.now)
        messages = viewer.take()
        if kind == "reload":  # only records whose place flipped: an entry is new to its view
            for message in messages:
                if message["c"] == "p":
                    assert "data" in message, message
                    assert all(message["k"] not in views.views.get(sid, {}) for sid in message["sids"])
        views.receive(messages, allows)
        for sub_id, command in commands.items():
            assert views.views.get(sub_id, {}) == fresh(h, command), (sub_id, command)
