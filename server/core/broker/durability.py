"""What the broker owes the disk and what the disk owes the clients (docs/protocol.md, Durability).

The broker appends encoded log entries here as it applies durable changes. The runtime takes
everything pending, writes and fsyncs it in one go (group commit), and reports the LSN that is
now on disk; ``made_durable`` then returns the persisted acks that became due:
- acks of commands that carried a publisher sequence ``s`` are batched, one per socket and
  client name, carrying the highest ``s`` and no ``cid`` (it covers every earlier sequence);
- other persisted acks go one by one, with their ``cid``.

A sequence counts as persisted for its client name (what logon reports) once everything
appended before it is on disk, so a later non-durable publish never reports an earlier durable
one as safe before it is.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..protocol import wire

# Imported when the module runs, not only for type checking: a dataclass's field types must exist
# when the compiled core creates the class (scripts/compile_core.py).
from ..session.session import Session
from ..sow.txlog import frame_entries

if TYPE_CHECKING:
    from ..queue.latency import Histogram


@dataclass(slots=True)
class _Waiter:
    lsn: int  # due once the log is on disk up to here
    session: Session | None  # None: only a sequence to record as persisted
    cid: Any
    client_name: str | None
    seq: int | None
    reason: str | None


class Durability:
    def __init__(self) -> None:
        self._pending: list[bytes] = []
        self.last_lsn = 0  # the highest LSN appended
        self.durable_lsn = 0  # the highest LSN on disk
        # Entries appended since start: LSNs jump at every restart (a new epoch), so the length of
        # the log tail is counted, not computed from LSNs.
        self.appended = 0
        self._waiters: deque[_Waiter] = deque()
        self.persisted_sequences: dict[str, int] = {}
        # Changes appended and not yet on disk: (LSN, its topic's persisted latency, its ts).
        self._timed: deque[tuple[int, Histogram, float]] = deque()

    def __bool__(self) -> bool:
        return bool(self._pending)

    def append(self, lsn: int, payload: bytes) -> None:
        self._pending.append(payload)
        self.appended += 1
        self.last_lsn = max(self.last_lsn, lsn)

    def time(self, lsn: int, histogram: Histogram, timestamp: float) -> None:
        """Observe in ``histogram`` how long after ``timestamp`` the change at ``lsn`` is on disk."""
        self._timed.append((lsn, histogram, timestamp))

    def take(self) -> tuple[bytes, int] | None:
        """Everything pending as one frame (a group commit), and the LSN it reaches; None when nothing is."""
        if not self._pending:
            return None
        data = frame_entries(self._pending)
        self._pending = []
        return data, self.last_lsn

    def restored(self, lsn: int) -> None:
        """Recovery found the log on disk up to ``lsn``."""
        self.last_lsn = self.durable_lsn = lsn

    def load_sequences(self, sequences: Mapping[str, int]) -> None:
        """The sequences a log holds, persisted (recovery, or a cluster's load from Redis)."""
        self.persisted_sequences = dict(sequences)

    def wait(
        self,
        lsn: int,
        session: Session | None,
        cid: Any = None,
        client_name: str | None = None,
        seq: int | None = None,
        reason: str | None = None,
    ) -> bool:
        """Register a persisted ack (or, with no session, a sequence) due at ``lsn``.

        Returns False, registering nothing, when ``lsn`` is already on disk: the caller acts now.
        """
        if lsn <= self.durable_lsn:
            if client_name is not None and seq is not None:
                self.persist_sequence(client_name, seq)
            return False
        waiters = self._waiters
        if waiters and reason is None and seq is not None and client_name is not None:
            last = waiters[-1]
            # A feed's publishes each carry the next sequence: one waiter covers them all.
            if (
                last.session is session
                and last.client_name == client_name
                and last.reason is None
                and last.seq is not None
                and seq >= last.seq
                and lsn >= last.lsn
            ):
                last.seq, last.lsn = seq, lsn
                return True
        waiters.append(_Waiter(lsn, session, cid, client_name, seq, reason))
        return True

    def persist_sequence(self, client_name: str, seq: int) -> None:
        """``seq`` of ``client_name`` is in the log: what a logon reports, at least."""
        if seq > self.persisted_sequences.get(client_name, 0):
            self.persisted_sequences[client_name] = seq

    def made_durable(self, lsn: int, now: float) -> list[tuple[Session, bytes]]:
        """The log is on disk up to ``lsn`` at ``now``: the acks that are now due, in order, per socket."""
        self.durable_lsn = max(self.durable_lsn, lsn)
        timed = self._timed
        while timed and timed[0][0] <= self.durable_lsn:
            _, histogram, timestamp = timed.popleft()
            histogram.observe(now - timestamp)
        acks: list[tuple[Session, bytes]] = []
        batched: dict[tuple[Session, str], int] = {}
        waiters = self._waiters
        while waiters and waiters[0].lsn <= self.durable_lsn:
            waiter = waiters.popleft()
            if waiter.client_name is not None and waiter.seq is not None:
                self.persist_sequence(waiter.client_name, waiter.seq)
            session = waiter.session
            if session is None:
                continue
            if waiter.client_name is not None and waiter.seq is not None and waiter.reason is None:
                group = (session, waiter.client_name)
                batched[group] = max(batched.get(group, 0), waiter.seq)
                continue
            fields: dict[str, Any] = {} if waiter.seq is None else {"s": waiter.seq}
            acks.append((session, wire.ack("persisted", waiter.cid, reason=waiter.reason, **fields)))
        for (session, _), seq in batched.items():
            acks.append((session, wire.ack("persisted", None, s=seq)))
        return acks
