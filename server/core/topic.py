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
        # Two lanes, one entry per socket: sockets whose only subscription here is stateless
        # (the common dashboard case) get the shared body straight away; the rest ask each
        # subscription what the change means for it.
        self._fast: dict[Session, Subscription] = {}
        self._general: dict[Session, list[Subscription]] = {}
        self.name_json = orjson.dumps(name)
        # The pending run of fast-lane deliveries (see run.py): shared bodies and their records.
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
        self.subscribers.setdefault(subscription.session, []).append(subscription)
        self._sort(subscription.session)

    def remove(self, subscription: Subscription) -> None:
        session = subscription.session
        subs = self.subscribers.get(session)
        if subs is None:
            return
        self._end_run()
        subs[:] = [sub for sub in subs if sub is not subscription]
        if not subs:
            del self.subscribers[session]
        self._sort(session)

    def replace(self, old: Subscription, new: Subscription) -> None:
        self._end_run()
        subs = self.subscribers[old.session]
        subs[subs.index(old)] = new
        self._sort(old.session)

    def _sort(self, session: Session) -> None:
        self._fast.pop(session, None)
        self._general.pop(session, None)
        subs = self.subscribers.get(session)
        if not subs:
            return
        if len(subs) == 1 and subs[0].stateless:
            self._fast[session] = subs[0]
        else:
            self._general[session] = subs

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
        memo: Memo = {}
        for session, subs in self._general.items():
            if len(subs) == 1:
                sub = subs[0]
                outcome = sub.on_change(key, old, new, memo)
                if outcome is not None:
                    session.send_pair(sub.heads[outcome[0]], outcome[1])
                continue
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
        interleaved: list[bytes] = [b""] * (2 * count)
        interleaved[1::2] = bodies
        for session, sub in self._fast.items():
            head_p = sub.heads[P]
            if sub.unfiltered:
                parts = interleaved.copy()
                parts[::2] = [head_p] * count
                queued = session.outbox.push_pairs(parts, count, body_bytes + count * (len(head_p) + 2))
                if queued:
                    if queued == count:
                        session.after_push(1)
                    continue
            for shared, record in zip(bodies, records, strict=True):
                if sub.unfiltered or sub.matches(record):
                    queued = session.outbox.push_pair(head_p, shared)
                    if queued < 2:
                        session.after_push(queued)
                        if not queued:
                            break

    def deliver(self, session: Session, outcome: Outcome, sids: list[Any]) -> None:
        command, encoded = outcome
        session.send_pair(head(command, self.name_json, sids), encoded)
