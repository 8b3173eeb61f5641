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
from functools import partial
from typing import TYPE_CHECKING, Any

from ..filters.entitlement import gate_share
from ..filters.orderby import OrderBy, parse_orderby, sowkey_order
from ..limits import IDLE_ORDER_RECORDS, IDLE_ORDERS
from .frozen import Writes
from .passes import GatePass
from .ranges import PAYS, KeptOrder, indexed_order, plan
from .runs import CHUNK, Run
from .sorted_pass import SortedPass
from .windows import OrderAssembly, SortKey, Window, WindowOrder, WindowSpec, match_all

if TYPE_CHECKING:
    from ..records.version import RecordVersion
    from ..settings.config import TopicConfig
    from ..sow.store import Sow
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

    __slots__ = ("_idle", "_kept", "_orders", "made")

    def __init__(self, kept: Iterable[OrderBy | None] = ()) -> None:
        self._orders: dict[tuple[Any, ...], WindowOrder] = {}
        # Those without windows, least recently used first: still in _orders, so kept up to date.
        self._idle: OrderedDict[tuple[Any, ...], WindowOrder] = OrderedDict()
        # The configured orders, by their sort: in _orders too, never idle, never dropped.
        self._kept: dict[OrderBy | None, WindowOrder] = {}
        # The order a build in slices made for the command now running (handlers/preparing.py):
        # its window takes it when it opens; not kept, nor counted, before (gone after the command).
        self.made: WindowOrder | None = None
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
            made = self.made_for(share)
            order = made if made is not None else self._build(subscription, spec, records)
            self.made = None
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

    def build_in_slices(self, subscription: Subscription, sow: Sow, units: int) -> OrderBuild | None:
        """The build of window ``subscription``'s new order as a pass in slices (``units``: its
        cost a record), or None when the order exists, or a kept order finds its few candidates
        (then ``open`` builds it at once: that is not a pass over the topic)."""
        share = order_share(subscription)
        spec = subscription.window_spec
        if share is None or spec is None or share in self._orders:
            return None
        matches = subscription.matches
        if not subscription.unfiltered and self._kept:
            gate = subscription.entitlement.filter
            filters = (*subscription.filters, gate) if gate is not None else subscription.filters
            found = plan(self._kept.values(), filters)
            if found is not None and found.size <= PAYS * len(sow):
                return None
        base = self._kept.get(spec.order)
        if base is not None:
            return OrderBuild(share, spec, matches, GatePass(sow, matches, units), base, {})
        sliced = SortedPass(sow, spec.sort_key, matches, units)
        return OrderBuild(share, spec, matches, sliced, None, sliced.found)

    def made_for(self, share: tuple[Any, ...] | None) -> WindowOrder | None:
        """The order a build in slices made for the command now running, when it is ``share``'s."""
        made = self.made
        return made if made is not None and share is not None and made.share == share else None

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


class OrderBuild:
    """A window order made by a pass in slices (fanout/passes.py): ``advance`` until it says it
    is done, then ``finish`` (in the step that opens the window) makes the order as it is then.

    Every stage is sliced: the pass (the sort keys sorted and merged, or, over a kept order of the
    same sort, which records pass), then the walk of the kept order, then the order put together
    (OrderAssembly); the records written meanwhile are taken again, each as a change of the order
    (``WindowOrder.apply``), a slice at a time until a slice or less is left for the end, so the
    end costs a slice, not the topic nor what was written."""

    __slots__ = (
        "_assembly", "_base", "_keys", "_matches", "_pass", "_passing", "_walk", "_walked", "share", "spec",
    )  # fmt: skip

    def __init__(
        self,
        share: tuple[Any, ...],
        spec: WindowSpec,
        matches: Any,
        sliced: GatePass | SortedPass,
        base: WindowOrder | None,
        keys: dict[str, SortKey],
    ) -> None:
        """``keys``: the order's index of keys, filled as its entries are found."""
        self.share = share
        self.spec = spec
        self._matches = matches
        self._pass = sliced
        self._base = base  # the kept order of its sort: a walk of it, filtered, is the order
        self._passing: set[str] | None = None  # the keys that pass (over a kept order)
        self._walk: list[SortKey] = []  # the kept order's sort keys, as they were then
        self._walked: Run = []  # those of them that pass, in chunks
        self._assembly: OrderAssembly | None = None
        self._keys = keys

    def advance(self) -> bool:
        assembly = self._assembly
        if assembly is not None:
            return assembly.advance() and self._pass.catch_up(partial(self._take, assembly.order))
        sliced, base = self._pass, self._base
        if not sliced.advance():
            return False
        if isinstance(sliced, SortedPass):
            self._assembly = OrderAssembly(self.spec.sort_key, self._matches, sliced.merged(), self._keys)
            return False
        assert base is not None
        passing = self._passing
        if passing is None:  # the kept order as it is when the keys that pass are known
            if not sliced.caught_up():
                return False
            self._passing = sliced.passing()
            self._walk = list(base.sorted)
            self._walk.reverse()  # (taken from the end)
            return False
        walk = self._walk
        part = walk[-CHUNK:]
        del walk[-CHUNK:]
        part.reverse()
        walked = [entry for entry in part if entry[-1] in passing]
        if walked:
            self._walked.append(walked)
            self._keys.update({entry[-1]: entry for entry in walked})
        if not walk:
            self._assembly = OrderAssembly(base.sort_key, self._matches, self._walked, self._keys)
        return False

    def _take(self, order: WindowOrder, writes: Writes) -> None:
        """Each write noted, as a change of the order."""
        records = self._pass.records
        for key, _ in writes:
            order.apply(key, records.get(key))

    def close(self) -> None:
        self._pass.close()

    def finish(self) -> WindowOrder:
        while not self.advance():
            pass
        assert self._assembly is not None
        order = self._assembly.order
        sliced = self._pass
        sliced.close()
        self._take(order, sliced.take_noted())  # the writes left
        order.share = self.share
        return order
