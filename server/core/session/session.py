"""One client connection as the core sees it: who it is, its subscriptions, its outbox.

Every push goes through ``_settle``: a push that does not fit first lets the runtime try to
write (``SessionPort.try_write``), then conflates the queue (``Outbox.relieve``), drops the
subscriptions of ``unsubscribe`` topics that were queued for (telling the client), and when the
message still does not fit, closes the socket with 4001. What the broker finishes after the unit
of work (subscriptions dropped, queues to conflate in the background) a session notes in the
``Commons`` it was made with, and the broker drains them (broker/broker.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, cast

from ..errors import INVALID_TOPIC, NOT_ENTITLED, CommandError
from ..fanout.run import FanOutRun

# Imported when the module runs, not only for type checking: a dataclass's field types must exist
# when the compiled core creates the class (scripts/compile_core.py).
from ..fanout.subscription import Subscription
from ..fanout.tx_frames import TxFrames
from ..filters import compile_filter
from ..filters.entitlement import Entitlement
from ..filters.functions import EvalContext
from ..protocol import wire
from ..queue.counts import queue_counts, withdraw
from ..queue.delivery import FULL, Delivery, kept_for
from ..queue.outbox import Outbox
from ..settings.unkept import KeptTopics

if TYPE_CHECKING:
    from ..queue.delivery import QueuePolicy, RunBatch, TxBlock
    from ..settings.config import UserConfig

CLOSE_SLOW_CONSUMER = 4001
CLOSE_NAME_IN_USE = 4002
CLOSE_POLICY = 1008


class SessionPort(Protocol):
    """What the core asks of its socket in the runtime (runtime/connection.py) right when a push
    needs it: a socket's writer must not wait for the end of the unit of work, as the tasks the
    runtime wakes after it (runtime/pump.py) do. Given to the ``Session`` at construction and never
    set after; neither method calls back into the core."""

    def wake(self) -> None:
        """Something is queued: the socket's writer must run (it sleeps while the outbox is empty)."""

    def try_write(self) -> None:
        """The outbox is full: write what it holds now, as far as the transport takes it, so that a
        burst to a healthy socket is written rather than conflated (docs/protocol.md, Conflation,
        first step)."""


@dataclass(frozen=True, slots=True)
class Commons:
    """What every session of one broker shares, given at construction (Broker.open_session): the
    fan-out run, the transaction being applied, and where a session notes what the broker
    finishes after the unit of work."""

    run: FanOutRun
    tx_frames: TxFrames  # holds the messages of a transaction being applied (fanout/tx_frames.py)
    # Subscriptions dropped for back pressure, removed by Broker.settle (not at once: the topic
    # that queued the message may be iterating its subscribers).
    dropped: list[tuple[Session, list[Subscription]]]
    # Sessions whose queues passed a quarter of a bound, in order, for background conflation
    # (Broker.conflate_crowded); None: background conflation is off.
    crowded: dict[Session, None] | None
    # The configured topics, when a command on any other fails (``unconfigured_topics =
    # "refuse"``); None: any other is a plain pub/sub topic.
    configured: KeptTopics | None = None


class Session:
    def __init__(
        self, session_id: int, outbox: Outbox, port: SessionPort, commons: Commons, peer: str | None = None
    ) -> None:
        self.id = session_id
        self.run = commons.run
        self.tx_frames = commons.tx_frames
        self._dropped = commons.dropped
        self._crowded = commons.crowded
        self._configured = commons.configured
        self.outbox = outbox
        self._wake = port.wake
        self._try_write = port.try_write
        self.client_name: str | None = None
        self.user_id: str | None = None
        self.label: str | None = None  # what the client says it is, for /status (not an identity)
        self.user: UserConfig | None = None
        self.peer = peer  # the remote address: logons are throttled by it
        self.logged_on = False
        self.subscriptions: dict[Any, Subscription] = {}
        self._entitlements: dict[str, Entitlement] = {}
        self.close_code: int | None = None
        self.close_reason = ""
        self._crowded_at = max(1, outbox.max_messages // 4)
        # While the page is hidden (docs/protocol.md, Hidden views): the interval its subscriptions
        # deliver at.
        self.hidden_interval: float | None = None
        # Count messages (queue/counts.py): the one queued per subscription, and those held in
        # the transaction being applied (its ID, then one delivery per subscription).
        self._tx_counts: tuple[str | None, dict[Any, Delivery]] = (None, {})

    def __repr__(self) -> str:
        return f"Session({self.id}, client_name={self.client_name!r})"

    def entitlement(self, topic: str, clock: Callable[[], float]) -> Entitlement:
        """What this session's user may see and change of ``topic`` (docs/protocol.md, Entitlements)."""
        found = self._entitlements.get(topic)
        if found is None or found.ctx.user != self.user_id or found.ctx.client_name != self.client_name:
            text = self.user.filters.get(topic) if self.user is not None else None
            ctx = EvalContext(clock, self.user_id, self.client_name)
            found = Entitlement(topic, compile_filter(text) if text else None, ctx)
            self._entitlements[topic] = found
        return found

    def reauthorize(self, user: UserConfig | None) -> None:
        """``[auth]`` was reloaded (docs/protocol.md, Reloading entitlements): the user's read and
        write lists and entitlement filters are ``user``'s from now on (None: no ``[auth]``,
        anything goes). The socket keeps its identity and its logon."""
        self.user = user
        self._entitlements.clear()

    def check_read(self, topic: str) -> None:
        """Every command that reads a topic passes here first: whether the topic may be used at
        all, then whether this user may read it."""
        self._check_configured(topic)
        if self.user is not None and not self.user.may_read(topic):
            raise CommandError(NOT_ENTITLED, f"user {self.user_id!r} may not read {topic!r}")

    def check_write(self, topic: str) -> None:
        """Every command that writes a topic passes here first (as ``check_read``)."""
        self._check_configured(topic)
        if self.user is not None and not self.user.may_write(topic):
            raise CommandError(NOT_ENTITLED, f"user {self.user_id!r} may not write {topic!r}")

    def _check_configured(self, topic: str) -> None:
        configured = self._configured
        unkept = configured.unkept(topic) if configured is not None else None
        if unkept is not None:
            raise CommandError(
                INVALID_TOPIC,
                f"{topic!r} is not a configured topic, and this server refuses others "
                f'(unconfigured_topics = "refuse"); {unkept.hint}',
                unkept.fields(),
            )

    def _end_run(self) -> None:
        topic = self.run.topic
        if topic is not None and topic.defers_to(self):
            self.run.flush()

    def send(self, message: bytes) -> None:
        """Queue a plain message (never conflated)."""
        self._end_run()
        outbox = self.outbox
        self._settle(outbox.push(message), lambda: outbox.push(message), None)

    def count(self, policy: QueuePolicy, numbers: dict[Any, int]) -> None:
        """Tell subscriptions of this socket the new size of their views (docs/protocol.md,
        Viewports): behind the change that made it, at most one queued per subscription, and
        inside a transaction at the end of its block, once per subscription, the last number."""
        tx = self.tx_frames.tx
        if tx is None:
            message = queue_counts(policy.name_json, numbers)
            self.send_stream(message, 1, 48 + 16 * len(numbers), policy=policy)
            return
        if self._tx_counts[0] != tx:
            self._tx_counts = (tx, {})
        held = self._tx_counts[1]
        for sub, number in numbers.items():
            withdraw(sub)  # the block's number is newer than one queued before it
            body = b'"matches":%d}' % number
            delivery = held.get(sub)
            if delivery is None:
                sids = wire.head(b"count", policy.name_json, [sub.sub_id])
                held[sub] = delivery = Delivery(policy, None, FULL, sids, body, (sub,))
                self.tx_frames.hold_last(self, delivery)
            else:  # not queued yet: the block is made when the transaction ends
                delivery.body = body
                delivery.size = len(delivery.head) + len(body) + 2

    def deliver(self, delivery: Delivery) -> None:
        frames = self.tx_frames
        if frames.tx is not None:
            frames.hold(self, delivery)
            return
        self._end_run()
        self._deliver(delivery)

    def deliver_tx(self, block: TxBlock) -> None:
        """Queue a transaction's messages for this socket, whole (fanout/tx_frames.py)."""
        outbox = self.outbox
        queued = outbox.push_tx(block)
        if queued == block.counted:
            self._wake()  # the block is all there is: the writer may be asleep

        def retry(last: bool = False) -> int:
            # Relief may have dropped subscriptions the block has messages for: not theirs.
            left = block.without()
            if left is None:
                return outbox.queued_messages or 1  # nothing of it is left to queue: it "fits"
            # The last try merges it with the transactions queued before, as a plain publish
            # folds into its record's queued message, before the socket is closed for want of room.
            return outbox.push_tx(left, squeeze=last)

        self._settle(queued, retry, None, lambda: retry(last=True))

    def _deliver(self, delivery: Delivery) -> None:
        outbox = self.outbox

        def retry() -> int:
            # Relief may have dropped some of the subscriptions it is for: it is not for them
            # any more (whichever of them come first in its sids).
            left = kept_for(delivery, ())
            if not isinstance(left, Delivery):
                return outbox.queued_messages or 1  # nothing of it is left to queue: it "fits"
            return outbox.push_delivery(left)

        self._settle(outbox.push_delivery(delivery), retry, delivery.policy)

    def deliver_run(self, batch: RunBatch) -> None:
        """Queue a run (called by the topic while it flushes its run: no run to end)."""
        frames = self.tx_frames
        if frames.tx is not None:
            frames.hold(self, batch)
            return
        queued = self.outbox.push_run(batch)
        if queued:
            if queued == len(batch.bodies):
                self._wake()
            elif queued > self._crowded_at or self.outbox.queued_bytes * 4 > self.outbox.max_bytes:
                self._note_crowded()
            return
        for delivery in batch.deliveries():
            if self.close_code is not None or batch.subs[0].dropped:
                return
            self._deliver(delivery)

    def send_stream(
        self,
        stream: Iterator[bytes],
        count: int = 0,
        size: int = 0,
        records: Iterable[tuple[str, str]] = (),
        whole: Subscription | None = None,
        opening: bytes = b"",
        closing: bytes = b"",
        policy: QueuePolicy | None = None,
    ) -> None:
        """Queue a lazy snapshot of ``count`` messages (about ``size`` bytes encoded) of
        ``policy``'s topic, written between ``opening`` and ``closing`` (counted in), that
        sends ``records`` (topic, key), the whole view of subscription ``whole`` (if any): it
        counts against the queue's bounds like any message, and when it does not fit the same
        rule applies (write, conflate, close with 4001)."""
        if self.close_code is None:
            self._end_run()
            outbox = self.outbox

            def retry() -> int:
                if whole is not None and whole.dropped:
                    # Relief dropped the subscription (its ``unsubscribed`` is queued): nothing
                    # of it follows, this snapshot neither.
                    return outbox.queued_messages or 1
                return outbox.push_stream(stream, count, size, records, whole, opening, closing, policy)

            idle = not outbox  # the writer sleeps: a stream of several messages must wake it too
            self._settle(retry(), retry, None)
            if idle and outbox:
                self._wake()

    def _settle(
        self,
        queued: int,
        retry: Callable[[], int],
        policy: QueuePolicy | None,
        last: Callable[[], int] | None = None,
    ) -> None:
        """``retry`` pushes again after a write; ``last`` (default: ``retry``) after a relief."""
        if queued > 1:
            if queued > self._crowded_at or self.outbox.queued_bytes * 4 > self.outbox.max_bytes:
                self._note_crowded()
            return
        if queued == 1:
            self._wake()  # the writer sleeps only when the outbox is empty
            return
        if self.close_code is not None:
            return
        self._try_write()
        queued = retry()
        if not queued:
            dropped = self.outbox.relieve()
            if dropped:
                # The outbox holds this session's own subscriptions (as Readers).
                self._drop(cast("list[Subscription]", dropped))
            queued = (last or retry)()
        if queued:
            self._wake()
            return
        if policy is not None:
            policy.counters["closed_slow"] += 1
        outbox = self.outbox
        self.request_close(
            CLOSE_SLOW_CONSUMER,
            f"slow consumer: outbound queue full ({outbox.queued_messages} messages, "
            f"{outbox.queued_bytes} bytes)",
        )

    def _drop(self, subscriptions: list[Subscription]) -> None:
        """Drop the sub_ids whose queued messages the unsubscribe policy discarded. The client
        knows a sub_id, not which subscription object served it: messages of one that was
        since replaced drop the one that replaced it; one since unsubscribed needs no notice."""
        current: list[Subscription] = []
        for queued in subscriptions:
            subscription = queued
            while subscription.successor is not None:
                subscription.dropped = True
                subscription = subscription.successor
            if subscription.dropped or subscription.closed:
                continue
            subscription.dropped = True
            subscription.topic_ref.counters["unsubscribed"] += 1
            self.outbox.push(wire.unsubscribed(subscription.sub_id, "back_pressure"), force=True)
            current.append(subscription)
        self._dropped.append((self, current))

    def _note_crowded(self) -> None:
        """The queue passed a quarter of a bound: the broker conflates it in the background."""
        crowded = self._crowded
        if crowded is not None and self.outbox.crowded:
            crowded[self] = None  # a session noted already keeps its place

    def request_close(self, code: int, reason: str) -> None:
        """Ask the runtime to close this socket; nothing more is queued for it."""
        if self.close_code is None:
            self.close_code = code
            self.close_reason = reason
            if code == CLOSE_SLOW_CONSUMER:
                self.outbox.close()
        self._wake()
