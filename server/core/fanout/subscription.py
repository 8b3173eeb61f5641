"""One subscription's view of a topic: does a record match, what does the subscriber hold,
and what message (if any) a change to a record means for it (docs/protocol.md, Delta subscriptions and OOF).

A subscription that needs to know what it holds (delta subscriptions, and ``oof``) keeps
``held``: SowKey -> the (selected) view it last received. Views are shared, immutable objects,
so holding one costs a reference.

``Memo`` caches views and encoded bodies for the duration of one change's fan-out: subscribers
with the same view of the same change share the same bytes, whichever socket they are on. How a
subscription reads a record and lays out its messages is in bodies.py.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import orjson

from ..filters import Filter
from ..filters.entitlement import ENTITLEMENT, UNRESTRICTED, Entitlement
from ..filters.functions import EvalContext
from ..protocol.options import Options
from ..protocol.wire import OOF_COMMAND, P_COMMAND, head
from ..queue.delivery import FULL, INSERT, OOF, UPDATE
from ..records.keys import KeySpec
from ..records.version import RecordVersion
from .bodies import Memo, RecordReader
from .intervals import Held, Waiting, conflation_key
from .windows import Window, WindowSpec, in_position_order, match_all

# What a change means for a subscription: (kind, body, base, view, version) -- see queue/delivery.py.
Message = tuple[str, bytes, Any, Any, RecordVersion]
Owed = tuple[int, str | None, Message]  # a change an interval released: (arrival order, key, change)


_ORDER = itertools.count()


def _matcher(
    filters: tuple[Filter, ...], ctx: EvalContext, entitlement: Entitlement
) -> Callable[[Any], bool]:
    """One predicate for "is this record in the view": the user's entitlement and the
    subscription's own filters. Which of them failed is asked separately, when it matters."""
    gate = entitlement.filter
    checks = (*filters, gate) if gate is not None else filters
    if not checks:
        return match_all
    if len(checks) == 1:
        only = checks[0]
        only_ctx = entitlement.ctx if gate is not None else ctx
        return lambda data: only.matches(data, only_ctx)
    if gate is None:
        return lambda data: all(f.matches(data, ctx) for f in filters)
    allows = entitlement.allows
    return lambda data: allows(data) and all(f.matches(data, ctx) for f in filters)


class Subscription(RecordReader):
    # Slots: a socket with a subscription lives for hours, and its instance dict cost 1.6 KB.
    __slots__ = (
        "_select_id",
        "_stateless_when_shown",
        "bookmarked",
        "closed",
        "count_queued",
        "counted",
        "ctx",
        "delta",
        "dropped",
        "entitlement",
        "filters",
        "head_oof",
        "head_p",
        "held",
        "index_term",
        "interval",
        "key_spec",
        "matches",
        "options",
        "order",
        "replay_buffer",
        "replaying",
        "schedule",
        "session",
        "stateless",
        "sub_id",
        "successor",
        "topic",
        "topic_ref",
        "unfiltered",
        "view_kind",
        "waiting",
        "window",
        "window_spec",
    )

    def __init__(
        self,
        session: Any,
        sub_id: Any,
        topic: str,
        filters: tuple[Filter, ...],
        options: Options,
        delta: bool,
        key_spec: KeySpec | None,
        ctx: EvalContext,
        entitlement: Entitlement = UNRESTRICTED,
    ) -> None:
        self.session = session
        self.sub_id = sub_id
        self.topic = topic
        self.filters = filters  # the subscription's own; the entitlement is a gate of its own
        self.options = options
        self.delta = delta and key_spec is not None  # plain topics have no records to diff against
        self.key_spec = key_spec
        self.ctx = ctx
        tracks = key_spec is not None and (self.delta or options.oof)
        self.held: dict[str, Any] | None = {} if tracks else None
        select = options.select
        self._select_id = select.text if select is not None else None
        # Subscriptions with equal view kinds get byte-identical bodies for the same change.
        # A bookmark subscription (subscribe with bm) carries its log position on every message.
        self.bookmarked = False
        self.replaying = False  # replaying the log: live changes wait in replay_buffer
        self.replay_buffer: list[tuple[str | None, RecordVersion | None, RecordVersion | None, str]] = []
        self.view_kind: tuple[Any, ...] = (self._select_id, options.no_sowkey, options.timestamp, False)
        self.count_queued: Any = None  # the count message its number waits in (queue/counts.py)
        self.dropped = False  # unsubscribed for back pressure; the broker removes it after the command
        self.closed = False  # unsubscribed: timers that still name it do nothing
        # The subscription that took over this sub_id by ``replace``: messages still queued for
        # this one are the sid's, so dropping them drops the sid as it is now.
        self.successor: Subscription | None = None
        # Subscription conflation: changes waiting for the end of their interval, per key.
        self.interval = options.conflation_s
        self.waiting = Waiting()
        self.schedule: Callable[[Subscription, float], None] = lambda subscription, due: None
        self.topic_ref: Any = None  # the Topic, set when the subscription is added to it
        # A live window (docs/protocol.md, Live windows): what was asked, and the window the topic gave it.
        self.window_spec: WindowSpec | None = None
        self.window: Window | None = None
        self.counted: int | None = None  # option count: the number it was last sent (counting.py)
        self.entitle(entitlement)
        self.order = next(_ORDER)  # subscription order, for listing sids the same way every time
        # Sent the shared full body of every matching change, with nothing to remember: the
        # topic can deliver to it without asking on_change.
        self.stateless = (
            self.held is None
            and select is None
            and not options.no_sowkey
            and not options.timestamp
            and options.conflation_s is None
        )
        self._stateless_when_shown = self.stateless
        # The heads of its own messages (several subscriptions named in one message share one
        # made then): a ``p`` head now, an ``oof`` head the first time one is sent (message_head).
        self.head_p = head(P_COMMAND, orjson.dumps(topic), [sub_id])
        self.head_oof: bytes | None = None

    def message_head(self, command: bytes) -> bytes:
        """The head of a ``p`` (``command`` P_COMMAND) or ``oof`` message naming this subscription."""
        if command == P_COMMAND:
            return self.head_p
        found = self.head_oof
        if found is None:
            found = self.head_oof = head(OOF_COMMAND, orjson.dumps(self.topic), [self.sub_id])
        return found

    def entitle(self, entitlement: Entitlement) -> None:
        """Take the gate of the user's entitlement: what is in the view, whether anything is
        filtered, and which term indexes it. Once the subscription is added, only its topic changes
        it (``Topic.regate``): the topic's lanes and index depend on it."""
        filters = self.filters
        self.entitlement = entitlement
        self.matches = _matcher(filters, self.ctx, entitlement)
        self.unfiltered = not filters and not entitlement.restricted
        gates = (*filters, entitlement.filter) if entitlement.filter is not None else filters
        terms = [f.index_term for f in gates if f.index_term is not None]
        self.index_term = min(terms, key=lambda term: len(term.keys)) if terms else None

    def hide(self, interval: float | None) -> None:
        """While its socket's page is hidden (docs/protocol.md, Hidden views), changes wait as under
        subscription conflation, at least ``interval``; None: shown again, back to its own options.
        (The topic re-sorts it: a hidden subscription is never in the fast lane.)"""
        own = self.options.conflation_s
        if interval is None:
            self.interval = own
            self.stateless = self._stateless_when_shown
            return
        if self.interval == own:
            self._stateless_when_shown = self.stateless
        self.interval = interval if own is None else max(own, interval)
        self.stateless = False

    def hold_window(self, spec: WindowSpec) -> None:
        """Make this a window subscription (before the topic adds it): its view is the range of
        ``spec``'s order, and every change is asked what it means (never the shared run)."""
        self.window_spec = spec
        self.stateless = False

    @property
    def positions(self) -> bool:
        """Whether its messages carry the record's position in the window (option positions)."""
        return self.window is not None and self.options.positions

    def in_view(self, key: str | None, data: Any) -> bool:
        """Whether the record is in this subscription's view: it passes the gates and, for a
        window, is in its range (the window's order has taken the change being fanned out)."""
        window = self.window
        if window is None:
            return self.matches(data)
        return key is not None and window.holds(key)

    def view(self, version: RecordVersion, memo: Memo) -> Any:
        """The record as this subscription sees it; within one change (``memo``), one object for
        every subscription that sees it alike, which is how their messages are grouped."""
        select = self.options.select
        memo_key: tuple[Any, ...] = ("data", id(version))
        record = memo.get(memo_key)
        if record is None:
            record = memo[memo_key] = self.record(version)
        if select is None:
            return record
        memo_key = ("view", id(version), self._select_id)
        found = memo.get(memo_key)
        if found is None:
            found = memo[memo_key] = select.apply(record)
        return found

    def remember(self, key: str, view: Any) -> None:
        if self.held is not None:
            self.held[key] = view

    def take_held(self, views: dict[str, Any]) -> bool:
        """Remember ``views`` (SowKey -> the view it was sent), as they are, when it remembers
        nothing yet: a pass in slices made them, and taking them costs nothing of their number.
        False when it holds some already (its caller remembers each)."""
        if self.held is None or self.held:
            return False
        self.held = views
        return True

    def on_change(
        self,
        key: str | None,
        old: RecordVersion | None,
        new: RecordVersion | None,
        memo: Memo,
        gone: str = "deleted",
    ) -> Message | None:
        """What this subscription is sent about a change of record ``key`` from ``old`` to ``new``."""
        if self.replaying:
            self.replay_buffer.append((key, old, new, gone))
            return None
        return self.replayed(key, old, new, memo, gone)

    def bookmark(self) -> None:
        """Make this a bookmark subscription: every message carries its ``bm``."""
        self.bookmarked = True
        self.stateless = False
        self.view_kind = (*self.view_kind[:3], True)

    def hand_over(self, new: Subscription) -> None:
        """``new`` takes over this one's ``sub_id`` (a ``replace``, a viewport's move). The client
        knows the sub_id, not which subscription serves it: one dropped for back pressure (its
        ``unsubscribed`` queued, perhaps while the replace's own ack was queued) stays dropped,
        whichever subscription serves it now."""
        self.successor = new
        if self.dropped:
            new.dropped = True

    def replayed(
        self,
        key: str | None,
        old: RecordVersion | None,
        new: RecordVersion | None,
        memo: Memo,
        gone: str = "deleted",
    ) -> Message | None:
        """``on_change`` for a change read back from the log (or a live one, after the replay)."""
        if self.dropped:
            return None
        if self.interval is not None:
            self._defer(key, old, new, gone)
            return None
        if new is not None and self.in_view(key, self.record(new)):
            return self._in_view(key, new, memo)
        if self.held is None or key is None:
            return None
        if new is None:
            assert old is not None
            return self.oof(key, old, gone, memo)
        if not self.entitlement.allows(self.record(new)):
            # The user may not see the new state: the body is the last state they were sent (the
            # view held), its bookmark the change's.
            return self.oof(key, new, ENTITLEMENT, memo)
        return self.oof(key, new, "match", memo)

    def _defer(
        self, key: str | None, old: RecordVersion | None, new: RecordVersion | None, gone: str
    ) -> None:
        assert self.interval is not None
        latest = new if new is not None else old
        assert latest is not None
        ckey = conflation_key(self.options.conflation_key, key, self.record(latest))
        frames = self.session.tx_frames
        tx = frames.tx if frames is not None else None
        # From the time of the unit of work (Broker.now), not a fresh clock reading: the changes
        # one command or transaction causes fall due together, in every subscription.
        due = (frames.now() if frames is not None else self.ctx.clock()) + self.interval
        if self.waiting.add(ckey, key, old, new, gone, due, tx) is not None:
            self.schedule(self, due)

    def release(self, now: float) -> tuple[list[Owed], str | None]:
        """The deliveries of every interval that has ended by ``now``, each with the order its
        first change arrived in, and the transaction they complete (None: none): every key a
        transaction changed goes with any of them."""
        entries, tx = self.waiting.due(now)
        out: list[Owed] = []
        for entry in entries:
            change = self._conflated(entry, {})  # a memo is good for one change only
            if change is not None:
                out.append((entry.order, entry.key, change))
        return in_position_order(self.window, self.positions, out), tx

    def _in_view(
        self, key: str | None, new: RecordVersion, memo: Memo, carried: frozenset[str] = frozenset()
    ) -> Message | None:
        """The message for a record that is (now) in this subscription's view (None: an empty
        change that ``no_empties`` suppresses)."""
        view = self.view(new, memo)
        held = self.held
        if held is None or key is None:
            return FULL, self.full_body(key, new, view, memo), None, view, new
        previous = held.get(key)
        held[key] = view
        if previous is None:
            return INSERT, self.full_body(key, new, view, memo), None, view, new
        if not self.delta:
            return UPDATE, self.full_body(key, new, view, memo), previous, view, new
        delta = self.delta_body(key, new, previous, view, memo, carried)
        if delta is None:
            # An empty change, not sent: the client holds what it held (equal to the new view)
            # and so does ``held``, the very object, which a merge in the socket queue may name.
            held[key] = previous
            return None
        return UPDATE, delta, previous, view, new

    def _conflated(self, entry: Held, memo: Memo) -> Message | None:
        key, new = entry.key, entry.latest
        if new is not None and self.in_view(key, self.record(new)):
            return self._in_view(key, new, memo, frozenset(entry.carried))
        if self.held is None or key is None:
            return None
        previous = self.held.pop(key, None)
        if previous is None or not self.options.oof:
            return None
        # In and out within the interval: the OOF carries the state delivered before it.
        version = new if new is not None else entry.deleted_from
        assert version is not None
        reason = entry.gone if new is None else self.left_because(new)
        return OOF, self.full_body(key, version, previous, {}, reason), previous, previous, version

    def left_because(self, new: RecordVersion) -> str:
        """Why a record that still exists left this view."""
        return "match" if self.entitlement.allows(self.record(new)) else ENTITLEMENT

    def oof(self, key: str, version: RecordVersion, reason: str, memo: Memo) -> Message | None:
        """Forget ``key``; the OOF message to send when the subscriber asked for them.

        The body is ``version`` when the user may see it, otherwise the last state the
        subscriber was sent: an OOF body never shows what the entitlement hides."""
        if self.held is None:
            return None
        previous = self.held.pop(key, None)
        if previous is None or not self.options.oof:
            return None
        return self.oof_message(key, version, reason, previous, memo)

    def oof_message(
        self, key: str, version: RecordVersion, reason: str, previous: Any, memo: Memo
    ) -> Message | None:
        """The OOF for ``key`` leaving this view: the body is ``version`` when the user may see it,
        otherwise ``previous`` (the last state the subscriber was sent; None: nothing to send)."""
        if not self.entitlement.allows(self.record(version)):
            if previous is None:
                return None
            if reason == "match":
                reason = ENTITLEMENT
            # Rendered for this subscription alone: the memo's bodies belong to the visible version.
            return OOF, self.full_body(key, version, previous, {}, reason), previous, previous, version
        view = self.view(version, memo)
        return OOF, self.full_body(key, version, view, memo, reason), previous, view, version
