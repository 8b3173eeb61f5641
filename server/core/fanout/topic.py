"""A topic: its State of the World (for configured topics) and who is subscribed to it.

``fan_out`` is the single path every change takes to subscribers: for each socket it asks each
of that socket's subscriptions what the change means for it, groups the subscriptions whose
message is byte-for-byte the same, and queues one message per group naming them all in ``sids``.
It never waits on a socket: queuing is a synchronous push into the socket's outbox.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import orjson

from ..protocol.wire import OOF_COMMAND, P_COMMAND, head, record_body
from ..queue.delivery import COUNTERS, OOF, Delivery, QueuePolicy, RunBatch
from ..queue.latency import TopicLatency
from ..records.keys import KeySpec
from ..records.version import RecordVersion, trimmed
from ..settings.config import TopicConfig
from ..sow.store import Sow
from .bodies import Memo
from .counting import Counting
from .orders import WindowOrders, kept_orders, order_share
from .run import FanOutRun
from .subindex import SubscriptionIndex
from .subscription import Message, Subscription
from .window_messages import window_changes
from .windows import Window

if TYPE_CHECKING:
    from ..filters.entitlement import Entitlement
    from .ports import Derived, Prepared, Subscriber


class Topic:
    def __init__(
        self,
        name: str,
        config: TopicConfig | None,
        run: FanOutRun,
        merge_function: Any = None,
        match_function: Any = None,
    ) -> None:
        self.name = name
        self.config = config
        self.key_spec: KeySpec | None = config.key_spec if config is not None else None
        self.counters = dict.fromkeys(COUNTERS, 0)
        self.latency = TopicLatency()
        self.sow = Sow()  # the only writer of the records
        self.derived: dict[Any, Derived] = {}  # the aggregations its changes feed (aggregate/view.py)
        self.subscribers: dict[Subscriber, list[Subscription]] = {}
        self.name_json = trimmed(orjson.dumps(name))
        # What its deliveries tell a socket queue (the queue never sees the topic itself); the
        # merger and matcher are imported by the composition root.
        self.queue = QueuePolicy(
            name,
            self.name_json,
            config.conflation if config is not None else "conflate",
            config.conflation_mode if config is not None else "replace",
            merge_function,
            match_function,
            self.counters,
            self.latency,
        )
        # Two lanes, each socket in one. The fast lane holds sockets whose only subscription
        # here is stateless (the common dashboard case): they get the shared body, batched into
        # runs (see run.py), and filtered ones are found through an index of their filters.
        # The general lane asks each subscription what a change means for it.
        self._fast: dict[Subscriber, Subscription] = {}
        self._fast_unfiltered: dict[Subscriber, Subscription] = {}
        self._fast_filtered = SubscriptionIndex()
        self._general: dict[Subscriber, list[Subscription]] = {}
        self._general_index = SubscriptionIndex()
        # The pending run of fast-lane deliveries: shared bodies, keys and versions.
        self._run = run
        self._run_bodies: list[bytes] = []
        self._run_keys: list[str | None] = []
        self._run_versions: list[RecordVersion] = []
        self._run_bytes = 0
        # Live windows' orders, shared by windows with the same gates and order (orders.py).
        self.orders = WindowOrders(kept_orders(config))
        self.counting = Counting(self.queue)  # subscriptions with the option count
        # What passes in slices made for the command now running (handlers/preparing.py): a
        # snapshot's records, a replace's re-decision, an aggregation's groups, each taken by
        # what it was made for (its share) instead of a pass of its own (``take_prepared``).
        self.prepared: list[Prepared] = []

    def take_prepared(self, share: tuple[Any, ...]) -> Prepared | None:
        """What a pass in slices made for ``share`` (a snapshot's gates and order, say), taken:
        a command's part finds its own and no other's."""
        for index, prepared in enumerate(self.prepared):
            if prepared.share == share:
                return self.prepared.pop(index)
        return None

    def drop_prepared(self, prepared: Prepared) -> None:
        """Let go of ``prepared`` if its command did not take it."""
        for index, held in enumerate(self.prepared):
            if held is prepared:
                del self.prepared[index]
                return

    @property
    def records(self) -> Mapping[str, RecordVersion]:
        """The SOW's records by SowKey, read-only (``sow`` writes them)."""
        return self.sow.records

    @property
    def durable(self) -> bool:
        """Whether its changes go to the transaction log: the one place this is decided."""
        return self.config is not None and self.config.durable

    @property
    def is_sow(self) -> bool:
        return self.key_spec is not None

    @property
    def change_cost(self) -> int:
        """What each change of its records costs a subscription beyond its own filter, in the
        filter budget's units (session/quota.py): nothing; a topic of groups, its aggregation's."""
        return 0

    @property
    def listened(self) -> bool:
        """Whether anyone hears its changes: a subscription, or an aggregation fed by it (whose
        own subscribers are on its topic of groups, not here)."""
        return bool(self.subscribers or self.derived)

    def defers_to(self, subscriber: Subscriber) -> bool:
        """Whether deliveries to ``session`` may be waiting in this topic's run."""
        return subscriber in self._fast

    def add(self, subscription: Subscription) -> None:
        self._end_run()
        subscription.topic_ref = self
        self._open_window(subscription)
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
        self._close_window(subscription)

    def replace(self, old: Subscription, new: Subscription) -> None:
        self._end_run()
        new.topic_ref = self
        self._open_window(new)
        self._unsort(old.session)
        subs = self.subscribers[old.session]
        subs[subs.index(old)] = new
        self._sort(old.session)
        self._close_window(old)

    def resort(self, session: Subscriber) -> None:
        """Put ``session`` in the lane its subscriptions now call for (one was hidden or shown)."""
        self._end_run()
        self._unsort(session)
        self._sort(session)

    def regate(self, subscription: Subscription, entitlement: Entitlement) -> None:
        """Give ``subscription`` its user's reloaded entitlement (handlers/reentitle.py): its lane, its
        index entry and its window's order go with the gate."""
        self._end_run()
        self._unsort(subscription.session)
        self._close_window(subscription)
        subscription.entitle(entitlement)
        self._open_window(subscription)
        self._sort(subscription.session)

    def recheck(self, session: Subscriber, subs: list[Subscription], key: str) -> None:
        """Re-decide record ``key`` for ``subs`` (of ``session``, none a window) as if it had
        changed to itself: their gates moved, the record did not (handlers/reentitle.py)."""
        version = self.records[key]
        self._deliver_changes(session, subs, key, version, version, {}, "deleted", timed=False)

    def has_order(self, subscription: Subscription | None) -> bool:
        """Whether ``subscription`` is a window whose order exists already (shared, or kept by
        the subscription a ``replace`` swaps out): opening it reads the order, not the topic."""
        return subscription is not None and self.orders.holds(self.order_share(subscription))

    def order_share(self, subscription: Subscription) -> tuple[Any, ...] | None:
        """What a window subscription's window shares its order by, None when it is not a
        window of a SOW topic."""
        return order_share(subscription) if self.is_sow else None

    def _open_window(self, subscription: Subscription) -> None:
        """Give a window subscription its window, over its gates' shared order; count for count."""
        if self.is_sow:
            self.orders.open(subscription, self.records)
        self.counting.open(subscription, self.records)

    def _close_window(self, subscription: Subscription) -> None:
        self.counting.close(subscription)
        self.orders.close(subscription)

    def _unsort(self, session: Subscriber) -> None:
        fast = self._fast.pop(session, None)
        if fast is not None:
            self._fast_unfiltered.pop(session, None)
            self._fast_filtered.discard(fast)
        for sub in self._general.pop(session, ()):
            self._general_index.discard(sub)

    def _sort(self, session: Subscriber) -> None:
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
            # Windows are found through their orders (fan_out), the others asked here.
            general = [sub for sub in subs if sub.window is None]
            if general:
                self._general[session] = general
                for sub in general:
                    self._general_index.add(sub)

    def _end_run(self) -> None:
        if self._run.topic is self:
            self._run.flush()

    def fan_out(
        self, key: str | None, old: RecordVersion | None, new: RecordVersion | None, gone: str = "deleted"
    ) -> None:
        """Tell every subscriber what the change of ``key`` from ``old`` to ``new`` means for it
        (``new`` is None when the record went away; ``gone`` says why: deleted or expired)."""
        try:
            self._fan_out(key, old, new, gone)
            self.counting.changed(old, new)  # behind the change's own messages
        finally:
            if new is not None and key is not None:
                self._run.stored(new)

    def _fan_out(
        self, key: str | None, old: RecordVersion | None, new: RecordVersion | None, gone: str
    ) -> None:
        touched: list[Window] = self.orders.apply(key, new) if key is not None and self.orders else []
        if new is not None and self._fast:
            self._run.join(self)
            shared = record_body(key, None, encoded=new.encoded)  # what every stateless subscription gets
            self._run_bodies.append(shared)
            self._run_keys.append(key)
            self._run_versions.append(new)
            self._run_bytes += len(shared)
        if not self._general and not touched:
            return
        memo: Memo = {}
        # The windows the change touched, by socket: asked with the socket's other subscriptions,
        # so that one message names every subscription whose message is the same.
        windows: dict[Subscriber, list[Subscription]] = {}
        for window in touched:
            windows.setdefault(window.subscription.session, []).append(window.subscription)
        if not self._general_index.indexed:
            for session, subs in self._general.items():
                self._deliver_changes(session, subs, key, old, new, memo, gone, windows.pop(session, ()))
        else:
            # A subscription that holds the record matched the old version, so candidates for
            # the old and the new version cover every message, OOFs included.
            records = [v.data for v in (new, old) if v is not None]
            by_session: dict[Subscriber, list[Subscription]] = {}
            for sub in self._general_index.candidates(*records):
                by_session.setdefault(sub.session, []).append(sub)
            for session, subs in by_session.items():
                self._deliver_changes(session, subs, key, old, new, memo, gone, windows.pop(session, ()))
        for session, window_subs in windows.items():
            self._deliver_changes(session, [], key, old, new, memo, gone, window_subs)

    def _deliver_changes(
        self,
        session: Subscriber,
        subs: list[Subscription],
        key: str | None,
        old: RecordVersion | None,
        new: RecordVersion | None,
        memo: Memo,
        gone: str,
        windows: list[Subscription] | tuple[()] = (),
        timed: bool = True,
    ) -> None:
        """One socket's messages about a change: the changed record's first, then those about
        the records the change pushed across a window's edge (queued together, so they go in
        the same frame), then the windows' with ``positions`` in their own order."""
        if len(subs) == 1 and not windows:
            sub = subs[0]
            change = sub.on_change(key, old, new, memo, gone)
            if change is not None:
                self.deliver(session, (sub,), key, change, timed)
            return
        # One message for several subscriptions only when it is the same message about the same
        # record over the same base and view: what conflation later makes of it is then the
        # same for each of them.
        groups: dict[tuple[str | None, str, bytes, int, int], tuple[list[Subscription], Message]] = {}
        for sub in subs:
            change = sub.on_change(key, old, new, memo, gone)
            if change is not None:
                kind, encoded, base, view, _ = change
                groups.setdefault((key, kind, encoded, id(base), id(view)), ([], change))[0].append(sub)
        edges: dict[tuple[str | None, str, bytes, int, int], tuple[list[Subscription], Message]] = {}
        own: list[tuple[Subscription, str | None, Message]] = []
        for sub in windows:
            for record_key, change in window_changes(sub, key, old, new, memo, gone, self.records):
                if sub.positions:  # its head carries its own pos, in its own order
                    own.append((sub, record_key, change))
                    continue
                kind, encoded, base, view, _ = change
                into = groups if record_key == key else edges
                into.setdefault((record_key, kind, encoded, id(base), id(view)), ([], change))[0].append(sub)
        for (record_key, *_), (members, change) in (*groups.items(), *edges.items()):
            self.deliver(session, tuple(members), record_key, change, timed)
        for sub, record_key, change in own:
            self.deliver(session, (sub,), record_key, change, timed)

    def deliver(
        self,
        session: Subscriber,
        subs: tuple[Subscription, ...],
        key: str | None,
        change: Message,
        timed: bool = True,
    ) -> None:
        """Queue one message about record ``key`` for ``subs``, all subscriptions of ``session``.

        Subscriptions dropped for back pressure are left out here, the one place every message
        about a record passes: queueing an earlier message of the same change can drop them."""
        if len(subs) == 1:  # the common case, without a generator per message
            if subs[0].dropped:
                return
        elif any(sub.dropped for sub in subs):
            subs = tuple(sub for sub in subs if not sub.dropped)
            if not subs:
                return
        kind, encoded, base, view, version = change
        command = OOF_COMMAND if kind == OOF else P_COMMAND
        if len(subs) == 1:
            sub = subs[0]
            message_head = sub.message_head(command)
            if command is P_COMMAND and sub.positions and key is not None:
                assert sub.window is not None
                position = sub.window.position(key)
                if position is not None:
                    message_head += b',"pos":%d' % position
        else:
            message_head = head(command, self.name_json, [sub.sub_id for sub in subs])
        record = (self.name, key) if key is not None else None
        delivery = Delivery(self.queue, record, kind, message_head, encoded, subs, base, view, version)
        delivery.timed = timed
        session.deliver(delivery)

    def flush_run(self) -> None:
        """Push the pending run to every fast-lane socket (called by ``FanOutRun``)."""
        bodies, keys, versions = self._run_bodies, self._run_keys, self._run_versions
        count, body_bytes = len(bodies), self._run_bytes
        self._run_bodies, self._run_keys, self._run_versions, self._run_bytes = [], [], [], 0
        if not count:
            return
        for session, sub in self._fast_unfiltered.items():
            if not sub.dropped:
                head_p = sub.head_p
                size = body_bytes + count * (len(head_p) + 2)
                session.deliver_run(RunBatch(self.queue, sub, head_p, bodies, keys, versions, size))
        if not len(self._fast_filtered):
            return
        selected: dict[Subscription, list[int]] = {}
        for index, version in enumerate(versions):
            for sub in self._fast_filtered.candidates(version.data):
                if sub.matches(version.data):
                    selected.setdefault(sub, []).append(index)
        for sub, indexes in selected.items():
            if sub.dropped:
                continue
            head_p = sub.head_p
            chosen = [bodies[i] for i in indexes]
            size = sum(len(b) for b in chosen) + len(chosen) * (len(head_p) + 2)
            batch = RunBatch(
                self.queue,
                sub,
                head_p,
                chosen,
                [keys[i] for i in indexes],
                [versions[i] for i in indexes],
                size,
            )
            sub.session.deliver_run(batch)
