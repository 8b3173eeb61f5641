"""Encoding of server-to-client messages (docs/protocol.md, Messages from the server), once, with orjson.

Delivery messages are built from two parts so that the expensive part is encoded once per
(record version, view) and shared across sockets: a per-socket head carrying ``c``, ``t`` and
``sids``, and a shared body carrying ``k`` and the payload.
"""

from __future__ import annotations

from typing import Any

import orjson

from ..records.version import trimmed

HEARTBEAT = b'{"c":"heartbeat"}'


def dumps(value: Any) -> bytes:
    """``value`` encoded, in a bytes object of its own size: a message may wait in a slow
    socket's queue, and orjson's own result holds 4 KB however short it is (records.trimmed)."""
    return trimmed(orjson.dumps(value))


def ack(kind: str, cid: Any, status: str = "success", reason: str | None = None, **fields: Any) -> bytes:
    message: dict[str, Any] = {"c": "ack", "a": kind}
    if cid is not None:
        message["cid"] = cid
    message["status"] = status
    if reason is not None:
        message["reason"] = reason
    message.update(fields)
    return dumps(message)


def group_begin(query_id: Any) -> bytes:
    return dumps({"c": "group_begin", "query_id": query_id})


def group_end(query_id: Any, records: int, **fields: Any) -> bytes:
    """``fields``: ``bm`` and ``resumed`` of a ``resume`` subscription's snapshot (docs/protocol.md,
    Resuming a view)."""
    return dumps({"c": "group_end", "query_id": query_id, "records": records, **fields})


def unsubscribed(sub_id: Any, reason: str) -> bytes:
    return dumps({"c": "unsubscribed", "sub_id": sub_id, "reason": reason})


# The commands of the two messages about a record (their heads start ``{"c":"p"`` or ``"oof"``).
P_COMMAND = b"p"
OOF_COMMAND = b"oof"


def body(fields: dict[str, Any]) -> bytes:
    """The shared tail of a delivery: ``"k":...,"data":...}`` (the object without its opening brace)."""
    return orjson.dumps(fields)[1:]


def record_body(
    key: str | None,
    data: Any,
    reason: str | None = None,
    ts: str | None = None,
    bm: str | None = None,
    encoded: bytes | None = None,
) -> bytes:
    """The body of every message that carries a whole record (``sow``, ``p`` with ``data``,
    ``oof``): the one place their fields are laid out (queue/snapshots.py's ``JoinedRows``
    writes snapshot rows in this same layout without calling it, and a property test holds the
    two to the same bytes). ``key`` None: no ``k`` (a plain topic, or
    ``no_sowkey``); ``data`` is the record as this reader may see it (its select list applied).
    When the reader sees the whole record, ``encoded`` may be given instead: the record's own
    encoding, which orjson writes in as it is (``orjson.Fragment``)."""
    fields: dict[str, Any] = {} if key is None else {"k": key}
    if reason is not None:
        fields["reason"] = reason
    fields["data"] = data if encoded is None else orjson.Fragment(encoded)
    if ts is not None:
        fields["ts"] = ts
    if bm is not None:
        fields["bm"] = bm
    return orjson.dumps(fields)[1:]


def head(command: bytes, topic_json: bytes, sids: list[Any]) -> bytes:
    """The per-socket start of a delivery, ``{"c":"p","t":...,"sids":[...]``: a head and a body
    joined by a comma make the message, so a frame can join heads and bodies without copying."""
    return b'{"c":"' + command + b'","t":' + topic_json + b',"sids":' + orjson.dumps(sids)


def join(head: bytes, body: bytes) -> bytes:
    return head + b"," + body


def snapshot_head(topic_json: bytes, query_json: bytes) -> bytes:
    return b'{"c":"sow","t":' + topic_json + b',"query_id":' + query_json
