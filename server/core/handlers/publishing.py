"""``publish``, ``delta_publish`` and ``sow_delete``: decide a change, then propose it to the log.

The path is a straight line: validate, deduplicate by (client name, ``s``), merge (delta
publish), check entitlements, then propose the change's log entries to the server's
``ChangeLog`` (broker/changelog.py). Alone (log/local.py) the change is applied, logged and acked at once;
in a cluster (log/shared.py) it is applied and acked when the shared log brings it back, and a
change decided against a record version that another node replaced meanwhile is decided again
here (``retries``), on the newer version.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from ..broker.changelog import ABSENT, PLAIN_STREAM, Proposal, stream_id
from ..errors import BAD_MESSAGE, CommandError
from ..fanout.passes import Selection
from ..filters import compile_filter
from ..filters.functions import EvalContext
from ..protocol.commands import Header, Publish, SowDelete
from ..records.merge import merge_record
from ..records.version import check_encodable
from ..session.quota import admit_filter_pass
from ..settings.unkept import no_sow
from ..sow.txlog import DELETE, PUBLISH, LogEntry
from .acks import ack_duplicate, check_logged_on, received

if TYPE_CHECKING:
    from ..broker.broker import Broker
    from ..fanout.topic import Topic
    from ..session.session import Session

# The changes a transaction decided before this command, (topic, SowKey) -> the record's data
# (None: deleted): its later commands are decided on them (transactions.py).
Decided = Mapping[tuple[str, str], Any]
NOTHING_DECIDED: Decided = {}
# What plain pub/sub meant for a publish to a topic the server does not keep (settings/unkept.py).
PLAIN_PUBLISH = "the publish reached only its live subscribers, and nothing is stored"


def is_duplicate(broker: Broker, session: Session, seq: int | None) -> bool:
    name = session.client_name
    return name is not None and seq is not None and seq <= broker.sequences.get(name, 0)


def publish(broker: Broker, session: Session, header: Header, body: Publish, retries: int = 0) -> None:
    """Publish or delta publish (``retries``: how often a cluster decided it again, on a newer
    version of the record that another node wrote meanwhile)."""
    session.check_write(body.topic)
    seq, name = body.seq, session.client_name
    if seq is not None and is_duplicate(broker, session, seq):
        ack_duplicate(broker, session, header, seq)
        return
    broker.changes.check_available()
    entry, expect = decide_publish(broker, session, body)
    # Everything that can refuse the command has run: from here on it is the log's.
    if header.acks and not retries:
        received(session, header)
    topic = broker.topics.get(body.topic)
    # A plain topic: nothing stored, the publish only passes through; it is refused or accepted
    # the same whether or not someone listens.
    stream = topic.name if topic is not None and topic.is_sow else PLAIN_STREAM
    proposal = Proposal(stream, [entry], [expect], session, header, body, name, seq)
    proposal.retries = retries
    if stream == PLAIN_STREAM and (header.wants_processed or header.wants("persisted")):
        unkept = broker.kept.unkept(body.topic)  # asked only when an ack will carry it
        if unkept is not None:
            proposal.notice = unkept.warning(PLAIN_PUBLISH)
    broker.changes.propose(proposal)


def publish_plain(broker: Broker, session: Session, body: Publish, apply: Callable[[LogEntry], None]) -> None:
    """A plain publish (``commands.plain_publish``: no cid, acks or sequence number) to a log
    that applies a change at once (a server alone: ``ChangeLog.plain_lane`` is ``apply``).
    Nothing is acked, so it is decided as ``publish`` decides it and applied without a proposal:
    a feed's frames of plain publishes skip the steps they do not use (a fifth of their cost in
    the engine)."""
    check_logged_on(broker, session)
    session.check_write(body.topic)
    entry, _ = decide_publish(broker, session, body)
    apply(entry)


def decide_publish(
    broker: Broker, session: Session, body: Publish, pending: Decided = NOTHING_DECIDED
) -> tuple[LogEntry, str | None]:
    """The log entry of a publish or delta publish, and the version of the record it was decided
    against (a cluster checks it is still current; None: any will do)."""
    topic = broker.topics.get(body.topic)
    entitlement = session.entitlement(body.topic, broker.clock)
    now, name = broker.now(), session.client_name
    if topic is None or topic.key_spec is None:
        encoded = check_encodable(body.data)
        entitlement.check_write(None, body.data)
        return LogEntry(0, PUBLISH, body.topic, "", body.data, name, body.seq, now, None, encoded), None
    key = topic.key_spec.sow_key(body.data)
    stored = topic.records.get(key)
    # The record it replaces matters to a delta and to a write entitlement only: a stored record
    # is kept encoded (records/version.py), and a plain publish does not decode it.
    old = None
    if body.delta or entitlement.restricted:
        old = pending.get((topic.name, key), stored.data if stored else None)
    data = merge_record(old, body.data) if body.delta and old is not None else body.data
    # What is stored, logged and delivered must be writable, or a later sow, log write or
    # snapshot fails with the publish long acked: refused here, before anything is applied.
    encoded = check_encodable(data)
    # Checked against the record it replaces and the merged record it stores (docs/protocol.md,
    # Delta subscriptions and OOF).
    entitlement.check_write(old, data)
    lifetime = body.expiration_s
    if lifetime is None and topic.config is not None:
        lifetime = topic.config.expiration_s
    expires_at = now + lifetime if lifetime else None
    # Decided against ``old``: a delta merged into it, or a write entitlement checked on it,
    # holds only while the record is still that version (a cluster checks; alone it always is).
    expect = None
    if body.delta or entitlement.restricted:
        expect = ABSENT if stored is None else stream_id(stored.seq)
    return LogEntry(0, PUBLISH, topic.name, key, data, name, body.seq, now, expires_at, encoded), expect


def sow_delete(broker: Broker, session: Session, header: Header, body: SowDelete, retries: int = 0) -> None:
    session.check_write(body.topic)
    topic = broker.topics.get(body.topic)
    if topic is None or topic.key_spec is None:
        raise no_sow(body.topic, broker.kept.unkept(body.topic))
    if is_duplicate(broker, session, body.seq):
        assert body.seq is not None
        ack_duplicate(broker, session, header, body.seq)
        return
    broker.changes.check_available()
    entries, expect = decide_delete(broker, session, body)
    if not retries:
        received(session, header)
    name, seq = session.client_name, body.seq
    if entries:
        entries[-1].seq = seq
    counts = {"matches": len(entries), "records_deleted": len(entries)}
    proposal = Proposal(topic.name, entries, expect, session, header, body, name, seq, counts)
    proposal.retries = retries
    broker.changes.propose(proposal)


def decide_delete(
    broker: Broker,
    session: Session,
    body: SowDelete,
    pending: Decided = NOTHING_DECIDED,
    checked_only: bool = False,
    candidates: Mapping[str, Any] | None = None,
) -> tuple[list[LogEntry], list[str | None]]:
    """The log entries of a ``sow_delete`` (one per record it deletes), and the version each was
    decided against. ``checked_only``: refused as it would be, but a filter never passed over the
    records (for a transaction refused whatever it matches: transactions.py). ``candidates``: the
    only records of the topic (key -> data, in its order) a transaction's delete by filter may
    delete, found in slices before it ran (preparing_tx.py)."""
    topic = broker.topics.get(body.topic)
    if topic is None or topic.key_spec is None:
        raise no_sow(body.topic, broker.kept.unkept(body.topic))
    entitlement = session.entitlement(body.topic, broker.clock)
    # The records it names, as the transaction's earlier commands left them: found by key where it
    # names keys (no pass over the topic), by a pass where it has a filter.
    matched: dict[str, Any]
    prepared = (
        topic.take_prepared(delete_share(body.filter, entitlement.ctx))
        if body.filter is not None and not pending
        else None
    )
    if isinstance(prepared, Selection) and body.filter is not None:  # read in slices (preparing.py)
        admit_filter_pass(body.filter, len(topic.records))
        _, versions, _ = prepared.finish(0, None)
        matched = {version.key: version.data for version in versions}
    elif body.filter is not None:
        admit_filter_pass(body.filter, len(topic.records) + len(pending))
        match = compile_filter(body.filter)
        ctx = entitlement.ctx  # USER() and CLIENT_NAME() are the deleting session's
        read: Iterable[tuple[str, Any]] = () if checked_only else _records(topic, pending, candidates)
        matched = {key: data for key, data in read if match.matches(data, ctx)}
    else:
        if body.sow_keys is not None:
            named = list(dict.fromkeys(body.sow_keys))
        elif isinstance(body.data, dict):
            named = [topic.key_spec.sow_key(body.data)]
        else:
            raise CommandError(BAD_MESSAGE, "data must be a JSON object")
        matched = {key: data for key in named if (data := _data_of(topic, pending, key)) is not None}
    # A delete reaches only the records its user may see; the others are as if absent.
    keys = [key for key, data in matched.items() if not entitlement.restricted or entitlement.allows(data)]
    now, name = broker.now(), session.client_name
    entries = [LogEntry(0, DELETE, topic.name, key, None, name, None, now, None) for key in keys]
    # Each delete holds only while its record is still the version it was decided on (it matched
    # the filter, and its user may see it): in a cluster another node may have changed it since.
    records = topic.records
    expect: list[str | None] = [stream_id(records[key].seq) if key in records else ABSENT for key in keys]
    return entries, expect


def delete_share(text: str, ctx: EvalContext) -> tuple[Any, ...]:
    """Which ``sow_delete`` by filter a pass in slices found the records of (preparing.py): its
    filter, and the caller its filter may name (USER(), CLIENT_NAME())."""
    return ("sow_delete", text, ctx.user, ctx.client_name)


def _data_of(topic: Topic, pending: Decided, key: str) -> Any:
    """The data of record ``key`` as a transaction's earlier commands left it (None: none)."""
    if (topic.name, key) in pending:
        return pending[(topic.name, key)]  # None: deleted by an earlier command
    version = topic.records.get(key)
    return None if version is None else version.data


def _records(
    topic: Topic, pending: Decided, candidates: Mapping[str, Any] | None
) -> Iterator[tuple[str, Any]]:
    """The records of ``topic`` (key, data) as a transaction's earlier commands left them: all of
    them, or only its ``candidates`` (and those the transaction wrote)."""
    stored: Iterable[tuple[str, Any]]
    if candidates is not None:
        stored = candidates.items()
    else:
        stored = ((key, version.data) for key, version in topic.records.items())
    if not pending:
        yield from stored
        return
    name = topic.name
    for key, data in stored:
        if (name, key) not in pending:
            yield key, data
    for (changed_topic, key), data in pending.items():
        if changed_topic == name and data is not None:
            yield key, data
