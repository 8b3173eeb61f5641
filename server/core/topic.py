"""A topic: its State of the World (for configured topics) and who is subscribed to it.

``fan_out`` is the single path every change takes to subscribers: for each socket it asks each
of that socket's subscriptions what the change means for it, groups the subscriptions whose
message is byte-for-byte the same, and queues one message per group naming them all in ``sids``.
It never waits on a socket: queuing is a synchronous push into the socket's outbox.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from .config import TopicConfig
from .keys import KeySpec
from .records import RecordVersion
from .run import FanOutRun
from .subindex import SubscriptionIndex
from .subscription import Memo, Outcome, P, Subscription
from .wire import body, head

if TYPE_CHECKING:
    from .session import Session


class Topic:
    def __init__(self, name: str, config: TopicConfig | None, run: FanOutRun) -> None:
        self.name = name
        self.config = config
        self.key_spec: KeySpec | None = config.key_spec if config is not None else None
        self.records: dict[str, RecordVersion] = {}
        self.subscribers: dict[Session, list[Subscription]] = {}
        self.name_json = orjson.dumps(name)
        # Two lanes, each socket in one. The fast lane holds sockets whose only subscription
        # here is stateless (the common dashboard case): they get the shared body, batched into
        # runs (see run.py), and filtered ones are found through an index of their filters.
        # The general lane asks each subscription what a change means for it.
        self._fast: dict[Session, Subscription] = {}
        self._fast_unfiltered: dict[Session, Subscription] = {}
        self._fast_filtered = SubscriptionIndex()
        self._general: dict[Session, list[Subscription]] = {}
        self._general_index = SubscriptionIndex()
        # The pending run of fast-lane deliveries: shared bodies and their records.
        self._run = run
        self._run_bodies: list[bytes] = []
        self._run_records: list[Any] = []
        self._run_bytes = 0

    @property
    def is_sow(self) -> bool:
        return self.key_spec is not None

    def defers_to(self, session: Session) -> bool:
        """Whether deliveries to ``session`` may be waiting in this topic's run."""
        return session in self._fast

    def add(self, subscription: Subscription) -> None:
        self._end_run()
        self._unsort(subscription.session)
        self.subscribers.setdefault(subscription.session, []).append(subscription)
        self._sort(subscription.session)

    def remove(self, subscription: Subscription) -> None:
        session = subscription.session
        subs = self.subscribers.get(session)
        if subs is None:
            return
        self._end_run()
        self._unsort(session)
        subs[:] = [sub for sub in subs if sub is not subscription]
        if not subs:
            del self.subscribers[session]
        self._sort(session)

    def replace(self, old: Subscription, new: Subscription) -> None:
        self._end_run()
        self._unsort(old.session)
        subs = self.subscribers[old.session]
        subs[subs.index(old)] = new
        self._sort(old.session)

    def _unsort(self, session: Session) -> None:
        fast = self._fast.pop(session, None)
        if fast is not None:
            self._fast_unfiltered.pop(session, None)
            self._fast_filtered.discard(fast)
        for sub in self._general.pop(session, ()):
            self._general_index.discard(sub)

    def _sort(self, session: Session) -> None:
        subs = self.subscribers.get(session)
        if not subs:
            return
        if len(subs) == 1 and subs[0].stateless:
            sub = subs[0]
            self._fast[session] = sub
            if sub.unfiltered:
                self._fast_unfiltered[session] = sub
            else:
                self._fast_filtered.add(sub)
        else:
            self._general[session] = subs
            for sub in subs:
                self._general_index.add(sub)

    def _end_run(self) -> None:
        if self._run.topic is self:
            self._run.flush()

    def fan_out(self, key: str | None, old: RecordVersion | None, new: RecordVersion | None) -> None:
        if new is not None and self._fast:
            self._run.join(self)
            data = new.data
            shared = body({"k": key, "data": data} if key is not None else {"data": data})
            self._run_bodies.append(shared)
            self._run_records.append(data)
            self._run_bytes += len(shared)
        if not self._general:
            return
        memo: Memo = {}
        if not self._general_index.indexed:
            for session, subs in self._general.items():
                self._deliver_changes(session, subs, key, old, new, memo)
            return
        # A subscription that holds the record matched the old version, so candidates for the
        # old and the new version cover every message, OOFs included.
        records = [v.data for v in (new, old) if v is not None]
        by_session: dict[Session, list[Subscription]] = {}
        for sub in self._general_index.candidates(*records):
            by_session.setdefault(sub.session, []).append(sub)
        for session, subs in by_session.items():
            self._deliver_changes(session, subs, key, old, new, memo)

    def _deliver_changes(
        self,
        session: Session,
        subs: list[Subscription],
        key: str | None,
        old: RecordVersion | None,
        new: RecordVersion | None,
        memo: Memo,
    ) -> None:
        if len(subs) == 1:
            sub = subs[0]
            outcome = sub.on_change(key, old, new, memo)
            if outcome is not None:
                session.send_pair(sub.heads[outcome[0]], outcome[1])
            return
        groups: dict[Outcome, list[Any]] = {}
        for sub in subs:
            outcome = sub.on_change(key, old, new, memo)
            if outcome is not None:
                groups.setdefault(outcome, []).append(sub.sub_id)
        for outcome, sids in groups.items():
            self.deliver(session, outcome, sids)

    def flush_run(self) -> None:
        """Push the pending run to every fast-lane socket (called by ``FanOutRun``)."""
        bodies, records = self._run_bodies, self._run_records
        count, body_bytes = len(bodies), self._run_bytes
        self._run_bodies, self._run_records, self._run_bytes = [], [], 0
        if not count:
            return
        if self._fast_unfiltered:
            interleaved: list[bytes] = [b""] * (2 * count)
            interleaved[1::2] = bodies
            for session, sub in self._fast_unfiltered.items():
                head_p = sub.heads[P]
                parts = interleaved.copy()
                parts[::2] = [head_p] * count  # slice assignment: the heads go in, in C
                queued = session.outbox.push_pairs(parts, count, body_bytes + count * (len(head_p) + 2))
                if queued:
                    if queued == count:
                        session.after_push(1)
                    continue
                for shared in bodies:  # it does not all fit: one by one, up to the 4001 close
                    self._push(session, sub, shared)
        if len(self._fast_filtered):
            for shared, record in zip(bodies, records, strict=True):
                for sub in self._fast_filtered.candidates(record):
                    if sub.matches(record):
                        self._push(sub.session, sub, shared)

    @staticmethod
    def _push(session: Session, sub: Subscription, shared: bytes) -> None:
        queued = session.outbox.push_pair(sub.heads[P], shared)
        if queued < 2:
            session.after_push(queued)

    def deliver(self, session: Session, outcome: Outcome, sids: list[Any]) -> None:
        command, encoded = outcome
        session.send_pair(head(command, self.name_json, sids), encoded)
