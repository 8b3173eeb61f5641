"""A topic's live windows and the orders they share (docs/protocol.md, Live windows).

Windows with the same gates (the subscription's filter and the user's entitlement) and the same
``orderby`` share one ``WindowOrder`` (windows.py), whatever their ranges: the topic keeps them
here by that share, gives each window subscription its window over its order when it is added,
and keeps an order whose last window closed, up to date, for the next window over it (a few, the
least recently used dropped first: limits.py). A change is applied to every order first, and the
windows it touched are asked what it means for them (fanout/topic.py).

A topic's configured ``orders`` (docs/protocol.md, Kept orders) are kept from the start, with no
gates, whether any window uses them or not: a window by one of those sorts opens as a move, and
one with a filter or an entitlement is built by walking the kept order (nothing to sort), or,
when its filter bounds the field a kept order sorts by first, from the few records in that range
of it (ranges.py).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from ..filters.entitlement import gate_share
from ..filters.orderby import OrderBy, parse_orderby, sowkey_order
from ..limits import IDLE_ORDER_RECORDS, IDLE_ORDERS
from .ranges import KeptOrder, indexed_order
from .windows import Window, WindowOrder, WindowSpec, match_all

if TYPE_CHECKING:
    from ..records.version import RecordVersion
    from ..settings.config import TopicConfig
    from .subscription import Subscription


def order_share(subscription: Subscription) -> tuple[Any, ...] | None:
    """What a window subscription's window shares its order by (its gates and its order), None
    when it is not a window."""
    spec = subscription.window_spec
    if spec is None:
        return None
    return (spec.order, *gate_share(subscription.filters, subscription.entitlement, subscription.ctx))


def kept_orders(config: TopicConfig | None) -> list[OrderBy | None]:
    """A topic's configured orders, parsed (checked when the configuration was read)."""
    texts = config.orders if config is not None else ()
    return [parse_orderby(text) if text.strip() else None for text in texts]


UNGATED = ((), None, None)  # gate_share of a view with no filter and no entitlement filter


class WindowOrders:
    """One topic's window orders, by what shares them."""

    __slots__ = ("_idle", "_kept", "_orders")

    def __init__(self, kept: Iterable[OrderBy | None] = ()) -> None:
        self._orders: dict[tuple[Any, ...], WindowOrder] = {}
        # Those without windows, least recently used first: still in _orders, so kept up to date.
        self._idle: OrderedDict[tuple[Any, ...], WindowOrder] = OrderedDict()
        # The configured orders, by their sort: in _orders too, never idle, never dropped.
        self._kept: dict[OrderBy | None, WindowOrder] = {}
        for order in kept:
            self._keep(order, {})

    def _keep(self, order: OrderBy | None, records: Mapping[str, RecordVersion]) -> None:
        share = (order, *UNGATED)
        kept = self._kept[order] = self._orders[share] = (
            KeptOrder(order, records.values())
            if order is not None
            else WindowOrder.sorting(sowkey_order, match_all, records.values())
        )
        kept.share = share

    def rebuild(self, records: Mapping[str, RecordVersion]) -> None:
        """After the records were written wholesale without telling anyone (a snapshot loaded,
        recovery): the kept orders made again from them, the idle ones dropped (the next window
        builds its own). Orders with windows cannot exist then: nobody was listening."""
        self.drop_idle()
        for order in list(self._kept):
            self._keep(order, records)

    def __len__(self) -> int:
        return len(self._orders)

    def __iter__(self) -> Iterator[WindowOrder]:
        return iter(self._orders.values())

    def values(self) -> Iterable[WindowOrder]:
        return self._orders.values()

    def holds(self, share: tuple[Any, ...] | None) -> bool:
        return share is not None and share in self._orders

    def open(self, subscription: Subscription, records: Mapping[str, RecordVersion]) -> None:
        """Give window ``subscription`` its window, over its gates' shared order (made from
        ``records`` by one pass when it is the first)."""
        share = order_share(subscription)
        spec = subscription.window_spec
        if share is None or spec is None:
            return
        order = self._orders.get(share)
        if order is None:
            order = self._build(subscription, spec, records)
            self._orders[share] = order
            order.share = share
        self._idle.pop(share, None)
        subscription.window = window = Window(order, spec.skip, spec.top, subscription)
        order.windows.add(window)

    def _build(
        self, subscription: Subscription, spec: WindowSpec, records: Mapping[str, RecordVersion]
    ) -> WindowOrder:
        """A new order for window ``subscription``: from the candidates a kept order finds for
        its filter when they are few (ranges.py), else by a pass of its gates over ``records``
        and a walk of the kept order of its sort, or a sort when there is none."""
        matches = subscription.matches
        if not subscription.unfiltered and self._kept:
            gate = subscription.entitlement.filter
            filters = (*subscription.filters, gate) if gate is not None else subscription.filters
            order = indexed_order(self._kept, spec, filters, matches, records)
            if order is not None:
                return order
        base = self._kept.get(spec.order)
        if base is not None:
            return WindowOrder.within(base, matches, records)
        return WindowOrder.sorting(spec.sort_key, matches, records.values())

    def close(self, subscription: Subscription) -> None:
        window = subscription.window
        if window is None:
            return
        order = window.order
        order.windows.discard(window)
        if not order.windows and order.share in self._orders and self._kept.get(order.share[0]) is not order:
            self._idle[order.share] = order
            self._drop_idle()

    def made_records(self) -> int:
        """The records the orders windows made keep (idle ones included; not the configured ones,
        which the operator chose: session/held.py)."""
        kept = set(map(id, self._kept.values()))
        return sum(len(order) for order in self._orders.values() if id(order) not in kept)

    @property
    def idle(self) -> int:
        """How many orders are kept without a window."""
        return len(self._idle)

    def drop_idle(self) -> None:
        """Drop every order no window uses (the server needs the room: session/held.py)."""
        for share in self._idle:
            del self._orders[share]
        self._idle.clear()

    def _drop_idle(self) -> None:
        """Keep at most ``IDLE_ORDERS`` idle orders, of at most ``IDLE_ORDER_RECORDS`` records in
        all, dropping the least recently used first."""
        idle = self._idle
        held = sum(len(order) for order in idle.values())
        while idle and (len(idle) > IDLE_ORDERS or held > IDLE_ORDER_RECORDS):
            share, order = idle.popitem(last=False)
            del self._orders[share]
            held -= len(order)

    def apply(self, key: str, new: RecordVersion | None) -> list[Window]:
        """Take the change of record ``key`` into every order first; the windows it touched."""
        touched: list[Window] = []
        for order in self._orders.values():
            touched += order.apply(key, new)
        return touched
