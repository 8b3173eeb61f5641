"""The option ``count`` (docs/protocol.md, Viewports): a subscription is told how many records
pass its filter and its user's entitlement, in ``group_end`` and then in a ``count`` message
whenever the number changes.

A window counts its order (``len(order)``, kept by the order anyway). Any other subscription
counts through a ``CountView``: the number of records that pass one set of gates, kept up to date
by each change at O(1) (a change moves it by -1, 0 or +1: did the old version pass, does the new
one), shared by every count subscription with those gates, and made by one pass over the topic
when the first of them comes. After each change the topic asks ``settle``, which tells each
socket the numbers that moved, once per change, behind the change's own messages.

A subscription that delivers at intervals (subscription conflation, a hidden page) is told when
its interval releases its changes (fanout/tx_frames.py), so its count is never ahead of the
records it has been sent by more than what the interval still holds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sized
from typing import TYPE_CHECKING, Any

from ..filters.entitlement import gate_share
from ..records.version import RecordVersion

if TYPE_CHECKING:
    from ..queue.delivery import QueuePolicy
    from .ports import Subscriber
    from .subscription import Subscription


class CountView:
    """How many records of a topic pass one set of gates, kept as they change."""

    __slots__ = ("matches", "share", "size", "users")

    def __init__(
        self, share: tuple[Any, ...], matches: Callable[[Any], bool], records: Iterable[RecordVersion]
    ) -> None:
        self.share = share
        self.matches = matches
        self.size = sum(1 for version in records if matches(version.data))
        self.users = 0  # the subscriptions counting through it

    def __len__(self) -> int:
        return self.size

    def apply(self, old: RecordVersion | None, new: RecordVersion | None) -> None:
        was = old is not None and self.matches(old.data)
        now = new is not None and self.matches(new.data)
        self.size += now - was


def gates(subscription: Subscription) -> tuple[Any, ...]:
    """What decides which records a subscription counts: its filter and its user's entitlement."""
    return gate_share(subscription.filters, subscription.entitlement, subscription.ctx)


class Counting:
    """One topic's count subscriptions and what each counts."""

    __slots__ = ("_policy", "_sources", "_views")

    def __init__(self, policy: QueuePolicy) -> None:
        self._policy = policy
        self._views: dict[tuple[Any, ...], CountView] = {}
        self._sources: dict[Subscription, Sized] = {}  # each count subscription: what it counts

    def open(self, subscription: Subscription, records: Mapping[str, RecordVersion]) -> None:
        """Start counting for ``subscription`` (once its window, if any, is open)."""
        if not subscription.options.count or subscription.key_spec is None:
            return
        window = subscription.window
        if window is not None:
            self._sources[subscription] = window.order
            return
        share = gates(subscription)
        view = self._views.get(share)
        if view is None:
            view = self._views[share] = CountView(share, subscription.matches, records.values())
        view.users += 1
        self._sources[subscription] = view

    def close(self, subscription: Subscription) -> None:
        source = self._sources.pop(subscription, None)
        if isinstance(source, CountView):
            source.users -= 1
            if not source.users:
                del self._views[source.share]

    def matches(self, subscription: Subscription) -> int | None:
        """The number ``subscription`` counts now, taken as sent (its ``group_end`` carries it);
        None when it does not count."""
        source = self._sources.get(subscription)
        if source is None:
            return None
        subscription.counted = len(source)
        return subscription.counted

    def changed(self, old: RecordVersion | None, new: RecordVersion | None) -> None:
        """A record changed from ``old`` to ``new``: the shared views take it, and each socket is
        told the numbers that moved (windows' orders took it already)."""
        if not self._sources:
            return
        for view in self._views.values():
            view.apply(old, new)
        self.settle(self._sources, released=False)

    def settle(self, subscriptions: Iterable[Subscription], released: bool = True) -> None:
        """Tell the owners of ``subscriptions`` whose number moved since it was last sent. Not
        ``released``: those that deliver at intervals wait for their interval's end."""
        moved: dict[Subscriber, dict[Any, int]] = {}
        sources = self._sources
        for sub in subscriptions:
            source = sources.get(sub)
            if source is None or sub.dropped or sub.closed or (sub.interval is not None and not released):
                continue
            number = len(source)
            if number != sub.counted and sub.counted is not None:
                sub.counted = number
                moved.setdefault(sub.session, {})[sub] = number
        for session, numbers in moved.items():
            session.count(self._policy, numbers)
