"""``publish``, ``delta_publish`` and ``sow_delete``: decide a change, then propose it to the log.

The path is a straight line: validate, deduplicate by (client name, ``s``), merge (delta
publish), check entitlements, then propose the change's log entries to the server's
``ChangeLog`` (ports.py). Alone (local_log.py) the change is applied, logged and acked at once;
in a cluster (shared_log.py) it is applied and acked when the shared log brings it back, and a
change decided against a record version that another node replaced meanwhile is decided again
here (``retries``), on the newer version.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .commands import Header, Publish, SowDelete
from .errors import BAD_MESSAGE, INVALID_TOPIC, CommandError
from .filters import compile_filter
from .local_log import ack_duplicate
from .merge import merge_record
from .records import check_encodable
from .shared_log import ABSENT, PLAIN_STREAM, Proposal, stream_id
from .txlog import DELETE, PUBLISH, Entry

if TYPE_CHECKING:
    from .engine import Engine
    from .session import Session


def _is_duplicate(engine: Engine, session: Session, seq: int | None) -> bool:
    name = session.client_name
    return name is not None and seq is not None and seq <= engine.sequences.get(name, 0)


def publish(engine: Engine, session: Session, header: Header, body: Publish, retries: int = 0) -> None:
    """Publish or delta publish (``retries``: how often a cluster decided it again, on a newer
    version of the record that another node wrote meanwhile)."""
    if session.user is not None:
        engine.check_write(session, body.topic)
    topic = engine.topics.get(body.topic)
    seq, name = body.seq, session.client_name
    if seq is not None and _is_duplicate(engine, session, seq):
        ack_duplicate(engine, session, header, seq)
        return
    engine.changes.check_available()
    entitlement = session.entitlement(body.topic, engine.clock)
    now = engine.clock()
    if topic is None or topic.key_spec is None:
        # A plain topic: nothing stored, the publish only passes through; it is refused or
        # accepted the same whether or not someone listens.
        check_encodable(body.data)
        entitlement.check_write(None, body.data)
        if header.acks and not retries:
            engine.received(session, header)
        entry = Entry(0, PUBLISH, body.topic, "", body.data, name, seq, now, None)
        engine.changes.propose(Proposal(PLAIN_STREAM, [entry], [None], session, header, body, name, seq))
        return
    key = topic.key_spec.sow_key(body.data)
    old = topic.records.get(key)
    data = merge_record(old.data, body.data) if body.delta and old is not None else body.data
    # What is stored, logged and delivered must be writable, or a later sow, log write or
    # snapshot fails with the publish long acked: refused here, before anything is applied.
    check_encodable(data)
    # Checked against the record it replaces and the merged record it stores (PROTOCOL 6.2).
    entitlement.check_write(old.data if old is not None else None, data)
    lifetime = body.expiration_s
    if lifetime is None and topic.config is not None:
        lifetime = topic.config.expiration_s
    expires_at = now + lifetime if lifetime else None
    # Everything that can refuse the command has run: from here on it is the log's.
    if header.acks and not retries:
        engine.received(session, header)
    # Decided against ``old``: a delta merged into it, or a write entitlement checked on it,
    # holds only while the record is still that version (a cluster checks; alone it always is).
    expect = None
    if body.delta or entitlement.restricted:
        expect = ABSENT if old is None else stream_id(old.seq)
    entry = Entry(0, PUBLISH, topic.name, key, data, name, seq, now, expires_at)
    proposal = Proposal(topic.name, [entry], [expect], session, header, body, name, seq)
    proposal.retries = retries
    engine.changes.propose(proposal)


def sow_delete(engine: Engine, session: Session, header: Header, body: SowDelete, retries: int = 0) -> None:
    engine.check_write(session, body.topic)
    topic = engine.topics.get(body.topic)
    if topic is None or topic.key_spec is None:
        raise CommandError(INVALID_TOPIC, f"{body.topic!r} has no SOW (it is not a configured topic)")
    if _is_duplicate(engine, session, body.seq):
        assert body.seq is not None
        ack_duplicate(engine, session, header, body.seq)
        return
    engine.changes.check_available()
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
    if not retries:
        engine.received(session, header)
    now, name, seq = engine.clock(), session.client_name, body.seq
    last = len(keys) - 1
    entries = [
        Entry(0, DELETE, topic.name, key, None, name, seq if i == last else None, now, None)
        for i, key in enumerate(keys)
    ]
    # Each delete holds only while its record is still the version it was decided on (it matched
    # the filter, and its user may see it): in a cluster another node may have changed it since.
    expect: list[str | None] = [stream_id(topic.records[key].seq) for key in keys]
    counts = {"matches": len(keys), "records_deleted": len(keys)}
    proposal = Proposal(topic.name, entries, expect, session, header, body, name, seq, counts)
    proposal.retries = retries
    engine.changes.propose(proposal)
