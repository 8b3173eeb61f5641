"""``publish``, ``delta_publish`` and ``sow_delete``: change the SOW, then fan the change out.

The path is a straight line: validate, deduplicate by (client name, ``s``), merge (delta
publish), apply to the SOW, fan out, ack.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .commands import Header, Publish, SowDelete
from .errors import BAD_MESSAGE, INVALID_TOPIC, CommandError
from .filters import compile_filter
from .merge import merge_record
from .records import RecordVersion

if TYPE_CHECKING:
    from .engine import Engine
    from .session import Session


def _is_duplicate(engine: Engine, session: Session, seq: int | None) -> bool:
    name = session.client_name
    return name is not None and seq is not None and seq <= engine.sequences.get(name, 0)


def _accept_sequence(engine: Engine, session: Session, seq: int | None) -> None:
    if session.client_name is not None and seq is not None:
        engine.sequences[session.client_name] = seq


def _ack_applied(engine: Engine, session: Session, header: Header, seq: int | None, **fields: Any) -> None:
    if seq is not None:
        fields["s"] = seq
    engine.processed(session, header, **fields)
    if header.wants("persisted"):
        engine.ack(session, header, "persisted", **({"s": seq} if seq is not None else {}))
    if header.wants("stats"):
        engine.ack(session, header, "stats", **fields)


def _ack_duplicate(engine: Engine, session: Session, header: Header, seq: int) -> None:
    engine.received(session, header)
    if header.wants_processed:
        engine.ack(session, header, "processed", reason="duplicate", s=seq)
    if header.wants("persisted"):
        engine.ack(session, header, "persisted", reason="duplicate", s=seq)


def _applied_without_fan_out(engine: Engine, session: Session, header: Header, seq: int | None) -> None:
    if header.acks:
        engine.received(session, header)
    if seq is not None:
        _accept_sequence(engine, session, seq)
    if header.acks or header.cid is not None:
        _ack_applied(engine, session, header, seq)


def publish(engine: Engine, session: Session, header: Header, body: Publish) -> None:
    if session.user is not None:
        engine.check_write(session, body.topic)
    topic = engine.topics.get(body.topic)
    seq = body.seq
    if seq is not None and _is_duplicate(engine, session, seq):
        _ack_duplicate(engine, session, header, seq)
        return
    if topic is None:
        # A plain topic nobody subscribes to: nothing to store and no one to tell.
        _applied_without_fan_out(engine, session, header, seq)
        return
    now = engine.clock()
    key_spec = topic.key_spec
    key: str | None = None
    old: RecordVersion | None = None
    data = body.data
    expires_at: float | None = None
    if key_spec is not None:
        key = key_spec.sow_key(data)
        old = topic.records.get(key)
        if body.delta and old is not None:
            data = merge_record(old.data, data)
        lifetime = body.expiration_s
        if lifetime is None and topic.config is not None:
            lifetime = topic.config.expiration_s
        if lifetime:
            expires_at = now + lifetime
    # Everything that can refuse the command has run: from here on it is applied.
    if header.acks:
        engine.received(session, header)
    if seq is not None:
        _accept_sequence(engine, session, seq)
    new = RecordVersion(key or "", data, engine.next_apply_seq(), now, expires_at)
    if key is not None:
        topic.records[key] = new
    topic.fan_out(key, old, new)
    if header.acks or header.cid is not None:
        _ack_applied(engine, session, header, seq)


def sow_delete(engine: Engine, session: Session, header: Header, body: SowDelete) -> None:
    engine.check_write(session, body.topic)
    topic = engine.topics.get(body.topic)
    if topic is None or topic.key_spec is None:
        raise CommandError(INVALID_TOPIC, f"{body.topic!r} has no SOW (it is not a configured topic)")
    if _is_duplicate(engine, session, body.seq):
        assert body.seq is not None
        _ack_duplicate(engine, session, header, body.seq)
        return
    if body.filter is not None:
        match = compile_filter(body.filter)
        keys = [key for key, version in topic.records.items() if match.matches(version.data)]
    elif body.sow_keys is not None:
        keys = [key for key in body.sow_keys if key in topic.records]
    else:
        if not isinstance(body.data, dict):
            raise CommandError(BAD_MESSAGE, "data must be a JSON object")
        key = topic.key_spec.sow_key(body.data)
        keys = [key] if key in topic.records else []
    engine.received(session, header)
    _accept_sequence(engine, session, body.seq)
    for key in keys:
        old = topic.records.pop(key)
        topic.fan_out(key, old, None)
    _ack_applied(engine, session, header, body.seq, matches=len(keys), records_deleted=len(keys))
