"""Snapshots of the durable SOW, and rebuilding the broker from a snapshot plus the log tail.

A snapshot is framed like the log (see sow/txlog.py): a header
``["snapshot", format, lsn, sequences, owners]`` (``owners``: client name -> user id, absent from
snapshots written before names had owners), frames of records
``[topic, key, data, seq, timestamp, expires_at]``, and a footer ``["end", count]``. Format 2
adds, per durable topic, a frame ``{"history": topic, "floor": lsn, "changes": [...]}``: the
topic's recent changes (sow/history.py), so views resume across a restart. Without its
footer a snapshot is incomplete and is not used. Recovery loads the newest complete snapshot and
applies the log entries after its LSN, so restart time grows with the SOW and the tail, not with
history.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..records.version import RecordVersion
from ..sow.history import Held, Past, past
from ..sow.txlog import DELETE, EXPIRE, OWNER, PUBLISH, TX, LogEntry, frame, scan, transaction_changes

if TYPE_CHECKING:
    from ..broker.broker import Broker

log = logging.getLogger("server.recovery")

SNAPSHOT_FORMAT = 2
READABLE_FORMATS = (1, 2)

History = tuple[int, list[Held]]  # a topic's history: its floor and its changes


@dataclass(slots=True)
class Snapshot:
    lsn: int
    sequences: dict[str, int]
    rows: list[tuple[str, RecordVersion]]
    owners: dict[str, str] = field(default_factory=dict)  # client name -> the user it belongs to
    histories: dict[str, History] = field(default_factory=dict)  # topic -> its recent changes


@dataclass(slots=True)
class Restored:
    records: int = 0
    entries: int = 0
    lsn: int = 0
    skipped_topics: set[str] = field(default_factory=set)


def capture(broker: Broker) -> Snapshot:
    """The durable state now: cheap, because record versions are immutable and only referenced."""
    rows = [
        (name, version)
        for name, topic in broker.topics.items()
        if topic.durable
        for version in topic.records.values()
    ]
    histories = {
        name: (topic.sow.history.floor, topic.sow.history.held())
        for name, topic in broker.topics.items()
        if topic.durable and topic.sow.history is not None
    }
    return Snapshot(
        broker.durability.last_lsn, dict(broker.sequences), rows, dict(broker.name_owners), histories
    )


CHUNK = 1000  # records per frame: the per-frame work is shared by a thousand records


def encode_snapshot(snapshot: Snapshot) -> Iterator[bytes]:
    yield frame(["snapshot", SNAPSHOT_FORMAT, snapshot.lsn, snapshot.sequences, snapshot.owners])
    rows = snapshot.rows
    for start in range(0, len(rows), CHUNK):
        yield frame(
            [
                [name, v.key, v.data, v.seq, v.timestamp, v.expires_at]
                for name, v in rows[start : start + CHUNK]
            ]
        )
    for name, (floor, changes) in snapshot.histories.items():
        for start in range(0, max(1, len(changes)), CHUNK):
            encoded = [
                [change.lsn, change.key, _version_row(change.old), change.gone, change.timestamp]
                for change in map(past, changes[start : start + CHUNK])
            ]
            yield frame({"history": name, "floor": floor, "changes": encoded})
    yield frame(["end", len(rows)])


def decode_snapshot(buffer: bytes) -> Snapshot | None:
    """The snapshot in ``buffer``, or None when it is incomplete or damaged."""
    found = scan(buffer)
    payloads = found.payloads
    if found.problem is not None or len(payloads) < 2:
        return None
    header, footer = payloads[0], payloads[-1]
    rows: list[tuple[str, RecordVersion]] = []
    histories: dict[str, History] = {}
    for chunk in payloads[1:-1]:
        if isinstance(chunk, dict):
            changes = histories.setdefault(chunk["history"], (chunk["floor"], []))[1]
            changes.extend(_past(*change) for change in chunk["changes"])
            continue
        rows.extend((name, RecordVersion(key, data, seq, ts, exp)) for name, key, data, seq, ts, exp in chunk)
    if header[0] != "snapshot" or header[1] not in READABLE_FORMATS or footer != ["end", len(rows)]:
        return None
    owners = dict(header[4]) if len(header) > 4 else {}
    return Snapshot(header[2], dict(header[3]), rows, owners, histories)


def _version_row(version: RecordVersion | None) -> list[Any] | None:
    if version is None:
        return None
    return [version.data, version.seq, version.timestamp, version.expires_at]


def _past(lsn: int, key: str, old: list[Any] | None, gone: str | None, timestamp: float) -> Past:
    version = None if old is None else RecordVersion(key, *old)
    if version is not None:
        version.compact()
    return Past(lsn, key, version, gone, timestamp)


def restore(broker: Broker, snapshot: Snapshot | None, entries: Iterable[Any]) -> Restored:
    """Rebuild every durable topic, the publisher sequences, the client names' owners and the LSN
    counter (no fan-out: nobody is connected yet). ``entries`` are log payloads in log order."""
    report = Restored()
    sequences: dict[str, int] = {}
    owners: dict[str, str] = {}
    lsn = 0
    durable = {name: topic for name, topic in broker.topics.items() if topic.durable}
    if snapshot is not None:
        lsn = snapshot.lsn
        sequences.update(snapshot.sequences)
        owners.update(snapshot.owners)
        rows: dict[str, list[RecordVersion]] = {name: [] for name in durable}
        for name, version in snapshot.rows:
            loaded = rows.get(name)
            if loaded is None:
                report.skipped_topics.add(name)
                continue
            loaded.append(version)
            lsn = max(lsn, version.seq)
        for name, durable_topic in durable.items():
            # A snapshot without the topic's history stands for changes not known one by one.
            floor, changes = snapshot.histories.get(name, (snapshot.lsn, []))
            # The expiries are armed below, once the tail has had its say.
            durable_topic.sow.load(rows[name], floor, changes)
    for payload in entries:
        entry = LogEntry.from_payload(payload)
        if snapshot is not None and entry.lsn <= snapshot.lsn:
            continue
        report.entries += 1
        lsn = max(lsn, entry.lsn)
        if entry.client_name is not None and entry.seq is not None:
            sequences[entry.client_name] = max(sequences.get(entry.client_name, 0), entry.seq)
        if entry.op == OWNER:
            if entry.client_name is not None and isinstance(entry.data, str):
                owners[entry.client_name] = entry.data  # a later claim wins (the owner had left)
            continue
        for change in transaction_changes(entry) if entry.op == TX else (entry,):
            topic = durable.get(change.topic)
            if topic is None:
                if change.op in (PUBLISH, DELETE, EXPIRE):
                    report.skipped_topics.add(change.topic)
                continue
            topic.sow.apply(change)
    for topic in durable.values():
        topic.orders.rebuild(topic.records)  # its kept orders (nothing fanned the records out)
        for version in topic.records.values():
            version.compact()  # the log's tail restored records whole (nothing fanned them out)
            if version.expires_at is not None:
                broker.timers.expire_at(topic.name, version.key, version.expires_at)
    report.records = sum(len(topic.records) for topic in durable.values())
    report.lsn = lsn
    broker.load_sequences(sequences)
    broker.load_owners(owners)
    broker.durability.restored(lsn)
    broker.lsns.restart(lsn)  # the next change is numbered after everything in the log
    if report.skipped_topics:
        log.warning(
            "the log holds records of topics that are no longer durable topics, not restored: %s",
            ", ".join(sorted(report.skipped_topics)),
        )
    return report
