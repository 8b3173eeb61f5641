"""``publish``, ``delta_publish`` and ``sow_delete``: change the SOW, log it, fan it out, ack.

The path is a straight line: validate, deduplicate by (client name, ``s``), merge (delta
publish), apply to the SOW, append to the transaction log (durable topics), fan out, ack. The
``persisted`` ack of a durable change waits for the log to be on disk (see durability.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .changes import apply_entry
from .commands import Header, Publish, SowDelete
from .errors import BAD_MESSAGE, INVALID_TOPIC, UNAVAILABLE, CommandError
from .filters import compile_filter
from .merge import merge_record
from .records import RecordVersion, check_encodable
from .shared_log import ABSENT, PLAIN_STREAM, Proposal, SharedLog, stream_id
from .txlog import DELETE, PUBLISH, SEQUENCE, Entry

if TYPE_CHECKING:
    from .engine import Engine
    from .session import Session


def _is_duplicate(engine: Engine, session: Session, seq: int | None) -> bool:
    name = session.client_name
    return name is not None and seq is not None and seq <= engine.sequences.get(name, 0)


def _accept_sequence(engine: Engine, session: Session, seq: int | None, lsn: int) -> None:
    """Remember ``seq`` now (deduplication) and as persisted once the log is on disk up to ``lsn``."""
    name = session.client_name
    if name is not None and seq is not None:
        engine.sequences[name] = seq
        engine.durability.wait(lsn, None, None, name, seq)


def ack_applied(
    engine: Engine, session: Session, header: Header, seq: int | None, lsn: int | None, **fields: Any
) -> None:
    """processed, persisted (now, or once the log is on disk up to ``lsn``), stats."""
    if seq is not None:
        fields["s"] = seq
    engine.processed(session, header, **fields)
    if header.wants("persisted"):
        if lsn is None:
            engine.ack(session, header, "persisted", **({"s": seq} if seq is not None else {}))
        else:
            engine.persisted_ack(session, header, lsn, seq)
    if header.wants("stats"):
        engine.ack(session, header, "stats", **fields)


def ack_duplicate(engine: Engine, session: Session, header: Header, seq: int) -> None:
    engine.received(session, header)
    if header.wants_processed:
        engine.ack(session, header, "processed", reason="duplicate", s=seq)
    if header.wants("persisted"):
        engine.persisted_ack(session, header, engine.durability.last_lsn, seq, reason="duplicate")


def _shared_log(engine: Engine) -> SharedLog | None:
    """The cluster's shared log, when this server is a node of one; refuses the change when the
    node cannot reach it (PROTOCOL 10: nothing half-applied)."""
    shared = engine.shared
    if shared is not None and not shared.available:
        raise CommandError(UNAVAILABLE, "this node cannot reach the cluster's shared log; try again")
    return shared


def publish(engine: Engine, session: Session, header: Header, body: Publish, retries: int = 0) -> None:
    """Publish or delta publish (``retries``: how often a cluster decided it again, on a newer
    version of the record that another node wrote meanwhile)."""
    if session.user is not None:
        engine.check_write(session, body.topic)
    topic = engine.topics.get(body.topic)
    seq = body.seq
    if seq is not None and _is_duplicate(engine, session, seq):
        ack_duplicate(engine, session, header, seq)
        return
    shared = _shared_log(engine)
    entitlement = session.entitlement(body.topic, engine.clock)
    if shared is not None and (topic is None or topic.key_spec is None):
        check_encodable(body.data)  # another node's subscribers may listen: through the log
        entitlement.check_write(None, body.data)
        if header.acks and not retries:
            engine.received(session, header)
        name = session.client_name
        entry = Entry(0, PUBLISH, body.topic, "", body.data, name, seq, engine.clock(), None)
        shared.propose(Proposal(PLAIN_STREAM, [entry], [None], session, header, body, name, seq))
        return
    if topic is None:
        # A plain topic nobody subscribes to: nothing to store and no one to tell; but the same
        # publish is refused or accepted whether or not someone listens.
        check_encodable(body.data)
        entitlement.check_write(None, body.data)
        if header.acks:
            engine.received(session, header)
        _accept_sequence(engine, session, seq, engine.durability.last_lsn)
        if header.acks or header.cid is not None:
            ack_applied(engine, session, header, seq, None)
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
    # What is stored, logged and delivered must be writable, or a later sow, log write or
    # snapshot fails with the publish long acked: refused here, before anything is applied.
    check_encodable(data)
    # Checked against the record it replaces and the merged record it stores (PROTOCOL 6.2).
    entitlement.check_write(old.data if old is not None else None, data)
    if key_spec is not None:
        lifetime = body.expiration_s
        if lifetime is None and topic.config is not None:
            lifetime = topic.config.expiration_s
        if lifetime:
            expires_at = now + lifetime
    # Everything that can refuse the command has run: from here on it is applied.
    if header.acks and not retries:
        engine.received(session, header)
    if shared is not None and key is not None:
        # Decided against ``old``: a delta merged into it, or a write entitlement checked on it,
        # holds only while the cluster's record is still that version (else it is decided again).
        expect = None
        if body.delta or entitlement.restricted:
            expect = ABSENT if old is None else stream_id(old.seq)
        entry = Entry(0, PUBLISH, topic.name, key, data, session.client_name, seq, now, expires_at)
        proposal = Proposal(topic.name, [entry], [expect], session, header, body, session.client_name, seq)
        proposal.retries = retries
        shared.propose(proposal)
        return
    entry = Entry(
        engine.next_apply_seq(),
        PUBLISH,
        topic.name,
        key or "",
        data,
        session.client_name,
        seq,
        now,
        expires_at,
    )
    lsn: int | None = None
    if key is not None:
        old, new = apply_entry(topic.sow, entry)
        if expires_at is not None:
            engine.timers.expire_at(topic.name, key, expires_at)
        if topic.durable:
            lsn = entry.lsn
            engine.log(entry)
    else:  # a plain topic keeps nothing: the version is only delivered
        new = RecordVersion("", data, entry.lsn, now, expires_at)
    if header.wants("persisted") and lsn is not None:
        # The persisted ack's waiter also records the sequence as persisted.
        if seq is not None and session.client_name is not None:
            engine.sequences[session.client_name] = seq
    else:
        _accept_sequence(engine, session, seq, lsn if lsn is not None else engine.durability.last_lsn)
    topic.fan_out(key, old, new)
    if header.acks or header.cid is not None:
        ack_applied(engine, session, header, seq, lsn)


def sow_delete(engine: Engine, session: Session, header: Header, body: SowDelete) -> None:
    engine.check_write(session, body.topic)
    topic = engine.topics.get(body.topic)
    if topic is None or topic.key_spec is None:
        raise CommandError(INVALID_TOPIC, f"{body.topic!r} has no SOW (it is not a configured topic)")
    if _is_duplicate(engine, session, body.seq):
        assert body.seq is not None
        ack_duplicate(engine, session, header, body.seq)
        return
    shared = _shared_log(engine)
    entitlement = session.entitlement(body.topic, engine.clock)
    if body.filter is not None:
        match = compile_filter(body.filter)
        ctx = entitlement.ctx  # USER() and CLIENT_NAME() are the deleting session's
        keys = [key for key, version in topic.records.items() if match.matches(version.data, ctx)]
    elif body.sow_keys is not None:
        keys = [key for key in dict.fromkeys(body.sow_keys) if key in topic.records]
    else:
        if not isinstance(body.data, dict):
            raise CommandError(BAD_MESSAGE, "data must be a JSON object")
        key = topic.key_spec.sow_key(body.data)
        keys = [key] if key in topic.records else []
    # A delete reaches only the records its user may see; the others are as if absent.
    if entitlement.restricted:
        keys = [key for key in keys if entitlement.allows(topic.records[key].data)]
    engine.received(session, header)
    if shared is not None:
        now = engine.clock()
        name, seq = session.client_name, body.seq
        entries = [
            Entry(0, DELETE, topic.name, key, None, name, seq if i == len(keys) - 1 else None, now, None)
            for i, key in enumerate(keys)
        ]
        counts = {"matches": len(keys), "records_deleted": len(keys)}
        shared.propose(
            Proposal(topic.name, entries, [None] * len(entries), session, header, body, name, seq, counts)
        )
        return
    durable = topic.durable
    lsn: int | None = None
    now = engine.clock()
    for position, key in enumerate(keys):
        last = position == len(keys) - 1
        seq = body.seq if last else None
        # A delete to a topic that is not durable is numbered 0: its LSN names nothing.
        entry = Entry(
            engine.next_apply_seq() if durable else 0,
            DELETE,
            topic.name,
            key,
            None,
            session.client_name,
            seq,
            now,
            None,
        )
        old, _ = apply_entry(topic.sow, entry)
        if durable:
            lsn = entry.lsn
            engine.log(entry)
        topic.fan_out(key, old, None)
    if durable and lsn is None and body.seq is not None and session.client_name is not None:
        lsn = engine.next_apply_seq()
        engine.log(Entry(lsn, SEQUENCE, topic.name, "", None, session.client_name, body.seq, now, None))
    _accept_sequence(engine, session, body.seq, lsn if lsn is not None else engine.durability.last_lsn)
    ack_applied(engine, session, header, body.seq, lsn, matches=len(keys), records_deleted=len(keys))
