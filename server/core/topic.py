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
from .subscription import Memo, Outcome, Subscription
from .wire import head

if TYPE_CHECKING:
    from .session import Session


class Topic:
    def __init__(self, name: str, config: TopicConfig | None) -> None:
        self.name = name
        self.config = config
        self.key_spec: KeySpec | None = config.key_spec if config is not None else None
        self.records: dict[str, RecordVersion] = {}
        self.subscribers: dict[Session, list[Subscription]] = {}
        self.name_json = orjson.dumps(name)

    @property
    def is_sow(self) -> bool:
        return self.key_spec is not None

    def add(self, subscription: Subscription) -> None:
        self.subscribers.setdefault(subscription.session, []).append(subscription)

    def remove(self, subscription: Subscription) -> None:
        subs = self.subscribers.get(subscription.session)
        if subs is None:
            return
        subs[:] = [sub for sub in subs if sub is not subscription]
        if not subs:
            del self.subscribers[subscription.session]

    def replace(self, old: Subscription, new: Subscription) -> None:
        subs = self.subscribers[old.session]
        subs[subs.index(old)] = new

    def fan_out(self, key: str | None, old: RecordVersion | None, new: RecordVersion | None) -> None:
        memo: Memo = {}
        for session, subs in self.subscribers.items():
            if len(subs) == 1:
                sub = subs[0]
                outcome = sub.on_change(key, old, new, memo)
                if outcome is not None:
                    self.deliver(session, outcome, [sub.sub_id])
                continue
            groups: dict[Outcome, list[Any]] = {}
            for sub in subs:
                outcome = sub.on_change(key, old, new, memo)
                if outcome is not None:
                    groups.setdefault(outcome, []).append(sub.sub_id)
            for outcome, sids in groups.items():
                self.deliver(session, outcome, sids)

    def deliver(self, session: Session, outcome: Outcome, sids: list[Any]) -> None:
        command, body = outcome
        session.send(head(command, self.name_json, sids) + body)
