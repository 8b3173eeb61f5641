"""The reference side of the cluster model test (test_cluster_model.py): the shared log read back
from Redis and replayed against the commands the test sent, and what one server that applied
that log would have sent each subscriber (docs/protocol.md, Cluster).

Everything here is plain data: the test does the I/O. Records have an ``id`` (1 to 3) and a ``u``
that is new with every publish and delta publish, so each ``p`` entry of the log is the work of
exactly one command, found by its ``(client name, s)``.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..core.engine_model import Filter, Record, merge_delta

Event = tuple[str, str, Record]  # ("p", "data" | "patch", state) or ("oof", reason, body)
Events = dict[int, list[Event]]  # record id -> what one subscription was sent about it, in order


class ClusterViolation(AssertionError):
    """The cluster did something a single server that applied the shared log would not. The
    subclasses name the kind, so that Hypothesis reports (and shrinks) each kind on its own."""


class LogViolation(ClusterViolation):
    """The shared log holds what no command sent, a change twice, a wrong merge, or misses an
    acked change; or a command's ack disagrees with what it appended."""


class DeleteViolation(ClusterViolation):
    """A delete did not act on the record as it stood at its place in the log: it missed the
    socket's own earlier publish, removed a record its filter no longer matched, or counted a
    record that was already gone."""


class AckViolation(ClusterViolation):
    """A command without exactly one processed ack (and stats ack when asked), or one that failed."""


class NotQuiet(ClusterViolation):
    """The nodes' SOWs did not come to agree with each other and with the log."""


class MessageViolation(ClusterViolation):
    """A message a subscriber or publisher should not have been sent, or one out of its place."""


class SubscriberMismatch(ClusterViolation):
    """A subscriber's view or messages are not what a single server applying the log sends."""


@dataclass
class Command:
    """One change a publisher sent."""

    kind: str  # publish, delta_publish, delete_key, delete_filter
    publisher: str  # its client name
    node: int
    s: int
    data: Record | None = None
    key: int | None = None
    filter: Filter | None = None
    e: int | None = None
    processed: list[dict[str, Any]] = field(default_factory=list)
    stats: list[dict[str, Any]] = field(default_factory=list)
    entries: list[int] = field(default_factory=list)  # its log entries (indexes of Log.changes)

    @property
    def cid(self) -> str:
        return f"c{self.s}"

    @property
    def delete(self) -> bool:
        return self.kind.startswith("delete")

    def wire(self, topic: str) -> dict[str, Any]:
        command: dict[str, Any] = {"cid": self.cid, "t": topic, "s": self.s}
        if self.kind == "delete_key":
            command.update(c="sow_delete", data={"id": self.key}, a="stats")
        elif self.kind == "delete_filter":
            assert self.filter is not None
            command.update(c="sow_delete", filter=self.filter.text, a="stats")
        else:
            command.update(c=self.kind, data=self.data)
            if self.e is not None:
                command["e"] = self.e
        return command

    @property
    def answered(self) -> bool:
        """Its acks are all in (a failed command gets one processed ack and nothing else)."""
        if not self.processed:
            return False
        return not self.delete or self.processed[0].get("status") != "success" or bool(self.stats)

    @property
    def succeeded(self) -> bool:
        return bool(self.processed) and self.processed[0].get("status") == "success"

    def describe(self) -> str:
        what = {
            "delete_key": f"id={self.key}",
            "delete_filter": f"filter={getattr(self.filter, 'text', None)}",
        }
        body = what.get(self.kind, f"data={self.data}" + (f" e={self.e}" if self.e is not None else ""))
        return f"{self.publisher}@node{self.node} s={self.s} {self.kind} {body}"


@dataclass(frozen=True)
class Change:
    """One entry of the shared log, replayed."""

    index: int
    stream_id: str
    op: str  # p (publish or delta publish), d (delete), x (expiry)
    id: int
    before: Record | None  # the record just before it, in log order
    state: Record | None  # the record after it (None: gone)
    command: Command | None  # None for an expiry
    expires_at: float | None

    def describe(self) -> str:
        who = self.command.describe() if self.command is not None else "expiry"
        return f"#{self.index} {self.stream_id} {self.op} id={self.id} -> {self.state} (from {who})"


def lsn_of(stream_id: str) -> int:
    ms, _, n = stream_id.partition("-")
    return int(ms) << 20 | int(n)


class Log:
    """The stream entries one example appended, replayed in order against the commands sent.

    ``states[p]`` is the SOW after the first ``p`` changes; ``sow`` the SOW after all of them.
    Replaying checks every entry: a ``p`` entry is its command's record (a publish's data, or a
    delta merged into the record it replaced in the log), a ``d`` entry comes from a delete of
    that record, an ``x`` entry expires the record's current version once its time has come."""

    def __init__(
        self,
        raw: list[tuple[bytes, dict[bytes, bytes]]],
        commands: dict[tuple[str, int], Command],
        sow_keys: dict[str, int],
    ) -> None:
        self.changes: list[Change] = []
        self.states: list[dict[int, Record]] = [{}]
        self.expires: dict[int, float] = {}  # ids whose current version has an expiry time
        self.versions: dict[int, str] = {}  # id -> stream ID of the entry that wrote it
        for command in commands.values():
            command.entries = []
        group: list[tuple[str, list[Any]]] = []  # a multi-record delete's entries so far (no s)
        for raw_id, fields in raw:
            stream_id = raw_id.decode()
            entry = orjson.loads(fields[b"e"])
            _, op, _, sow_key, data, name, s, timestamp, _ = entry
            if op == "p" and isinstance(data, dict):
                sow_keys.setdefault(sow_key, data.get("id"))
            if group and (name != group[0][1][5] or op != "d"):
                raise LogViolation(f"a delete's entries are not contiguous in the log: {group} then {entry}")
            if op == "d" and name is not None and s is None:
                group.append((stream_id, entry))
                continue
            command = None
            if name is not None:
                command = commands.get((name, s))
                if command is None:
                    raise LogViolation(f"log entry {stream_id} {entry} comes from no command of this example")
            for grouped_id, grouped in [*group, (stream_id, entry)]:
                self._apply(grouped_id, grouped, command, sow_keys, timestamp)
            group = []
        if group:
            raise LogViolation(f"a delete's entries without the entry that ends them: {group}")
        self.sow = self.states[-1]

    def _apply(
        self,
        stream_id: str,
        entry: list[Any],
        command: Command | None,
        sow_keys: dict[str, int],
        timestamp: float,
    ) -> None:
        _, op, _, sow_key, data, _, _, _, expires_at = entry
        record_id = sow_keys.get(sow_key)
        if record_id is None:
            raise LogViolation(f"log entry {stream_id} {entry} names a record never published")
        sow = self.states[-1]
        before = sow.get(record_id)
        index = len(self.changes)
        state: Record | None = None
        where = f"log entry #{index} {stream_id} {entry}"
        if op == "p":
            if command is None or command.kind not in ("publish", "delta_publish"):
                raise LogViolation(f"{where} is a publish from a command that is not one")
            assert command.data is not None
            if command.entries:
                raise LogViolation(f"{where}: the command {command.describe()} is in the log twice")
            if command.kind == "publish":
                expected = command.data
                if (expires_at is None) != (command.e is None):
                    raise LogViolation(f"{where}: expiry time {expires_at} for e={command.e}")
            else:
                expected = merge_delta(before, command.data) if before is not None else command.data
            if data != expected:
                raise LogViolation(
                    f"{where}: the record is {data}, but {command.describe()} on {before} (the record "
                    f"it replaced in the log) gives {expected}"
                )
            state = data
        elif op == "d":
            if command is None or not command.delete:
                raise LogViolation(f"{where} is a delete from a command that is not one")
            if command.kind == "delete_key" and command.key != record_id:
                raise LogViolation(f"{where}: {command.describe()} deleted record {record_id}")
        elif op == "x":
            if command is not None:
                raise LogViolation(f"{where}: an expiry from a command")
            if before is None:
                raise LogViolation(f"{where}: record {record_id} expired, but it is not in the SOW")
            at = self.expires.get(record_id)
            if at is None or timestamp < at - 0.005:
                raise LogViolation(f"{where}: record {record_id} (expires at {at}) expired at {timestamp}")
            if data != lsn_of(self.versions[record_id]):
                raise LogViolation(
                    f"{where}: expires version {data}, the record's is {lsn_of(self.versions[record_id])}"
                )
        else:
            raise LogViolation(f"{where}: unknown op {op!r}")
        if command is not None:
            command.entries.append(index)
        new_sow = dict(sow)
        if state is None:
            new_sow.pop(record_id, None)
            self.expires.pop(record_id, None)
            self.versions.pop(record_id, None)
        else:
            new_sow[record_id] = state
            self.versions[record_id] = stream_id
            if expires_at is None:
                self.expires.pop(record_id, None)
            else:
                self.expires[record_id] = expires_at
        self.states.append(new_sow)
        self.changes.append(Change(index, stream_id, op, record_id, before, state, command, expires_at))

    def describe(self) -> str:
        return "\n".join("  " + change.describe() for change in self.changes) or "  (empty)"


def check_commands(log: Log, commands: dict[tuple[str, int], Command]) -> None:
    """Every command has its acks; every acked change is in the log (once); a failed one is not;
    each publisher's changes are in the log in the order it sent them (docs/protocol.md, Cluster: a socket's
    commands keep their order); a delete's stats count the records it removed."""
    for command in commands.values():
        if len(command.processed) != 1 or (command.delete and command.succeeded and len(command.stats) != 1):
            raise AckViolation(f"{command.describe()}: acks {command.processed} / stats {command.stats}")
        ack = command.processed[0]
        if not command.succeeded:
            if not str(ack.get("reason", "")).startswith("unavailable: the record kept changing"):
                raise AckViolation(f"{command.describe()} failed: {ack}")
            if command.entries:
                raise LogViolation(
                    f"{command.describe()} failed ({ack}) but is in the log: {command.entries}"
                )
            continue
        if ack.get("reason") == "duplicate":
            raise AckViolation(f"{command.describe()}: acked as a duplicate, but its s was never sent before")
        if not command.delete and len(command.entries) != 1:
            raise LogViolation(
                f"{command.describe()} was acked, but it is in the log {len(command.entries)} times"
            )
        if command.delete:
            deleted = command.stats[0].get("records_deleted")
            if deleted != len(command.entries):
                raise LogViolation(
                    f"{command.describe()}: stats say {deleted} records deleted, the log has "
                    f"{len(command.entries)} entries of it"
                )
    by_publisher: dict[str, list[int]] = defaultdict(list)
    for change in log.changes:
        if change.command is not None:
            by_publisher[change.command.publisher].append(change.command.s)
    for publisher, sequence in by_publisher.items():
        if sequence != sorted(sequence):
            raise LogViolation(
                f"{publisher}'s changes are in the log out of the order it sent them: {sequence}"
            )


def check_deletes(log: Log, commands: dict[tuple[str, int], Command]) -> None:
    """A delete acts on the records as they stand at its place in the log, as on one server.

    A delete's place is after its socket's earlier changes and before its later ones (docs/protocol.md,
    Cluster: a socket's commands keep their order), so it lies between the last log entry of the
    publisher's earlier commands and the first of its later ones. There:

    - each record it deleted was there (``records_deleted`` counts records removed), and matched
      its filter;
    - a record that it did not delete, and that stood unchanged through that whole span, did not
      match it (not its key, not its filter): a delete sent right after the same socket's
      publish of the record must delete it, whichever node applied what when."""
    for change in log.changes:
        command = change.command
        if change.op != "d" or command is None:
            continue
        if change.before is None:
            raise DeleteViolation(
                f"{command.describe()} counts record {change.id} as deleted at log entry "
                f"#{change.index}, where it was already gone:\n{log.describe()}"
            )
        if command.filter is not None and not command.filter.matches(change.before):
            raise DeleteViolation(
                f"{command.describe()} deleted {change.before} at log entry #{change.index}, which its "
                f"filter does not match:\n{log.describe()}"
            )
    by_publisher: dict[str, list[Command]] = defaultdict(list)
    for command in sorted(commands.values(), key=lambda c: c.s):
        by_publisher[command.publisher].append(command)
    for sent in by_publisher.values():
        for number, command in enumerate(sent):
            if not command.delete or not command.succeeded:
                continue
            after = max((i for earlier in sent[:number] for i in earlier.entries), default=-1)
            before = min((i for later in sent[number + 1 :] for i in later.entries), default=len(log.changes))
            deleted = {log.changes[i].id for i in command.entries}
            changed = {
                change.id for change in log.changes[after + 1 : before] if change.command is not command
            }
            for key, record in log.states[after + 1].items():
                if key in deleted or key in changed:
                    continue
                if command.key == key or (command.filter is not None and command.filter.matches(record)):
                    raise DeleteViolation(
                        f"{command.describe()} did not delete {record}, which stood unchanged from log "
                        f"entry #{after} (the socket's change before it) to #{before} (the socket's "
                        f"change after it; or the end):\n{log.describe()}"
                    )
