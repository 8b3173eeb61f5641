"""What the socket-queue conflation tests share: topics of every policy and mode, a harness with a
small queue, and a client's view rebuilt from the messages it received."""

from __future__ import annotations

from typing import Any

import jsonpatch

from server.core.records.merge import merge_record

from ..harness import Harness, Peer


def topic(name: str, policy: str, mode: str = "replace", **extra: Any) -> dict[str, Any]:
    return {"name": name, "key": ["/id"], "conflation": policy, "conflation_mode": mode, **extra}


TOPICS = [
    topic("c", "conflate"),
    topic("a", "always"),
    topic("aa", "always", "append"),
    topic("ca", "conflate", "append"),
    topic("o", "off"),
    topic("u", "unsubscribe"),
    topic("s", "always", conflation_merge="tests.core.queue.merge_functions:sum_count"),
    topic("bad", "always", conflation_merge="tests.core.queue.merge_functions:broken"),
]


def hub(max_messages: int = 20) -> Harness:
    return Harness(topics=TOPICS, server={"queue_max_messages": max_messages})


def publish(t: str, record_id: int, **fields: Any) -> dict[str, Any]:
    return {"c": "publish", "t": t, "data": {"id": record_id, **fields}}


def deliveries(peer: Peer) -> list[dict[str, Any]]:
    return [m for m in peer.take() if m["c"] in ("p", "oof", "sow")]


def rebuild(messages: list[dict[str, Any]], views: dict[str, dict[str, Any]]) -> None:
    """Apply received messages to each subscription's view, as a client does."""
    for m in messages:
        for sid in m.get("sids", ()):
            view = views.setdefault(sid, {})
            if m["c"] == "oof":
                view.pop(m["k"], None)
            elif "data" in m:
                view[m["k"]] = m["data"]
            elif "patch" in m:
                view[m["k"]] = jsonpatch.apply_patch(view[m["k"]], m["patch"])
            else:
                view[m["k"]] = merge_record(view[m["k"]], m["delta"])
