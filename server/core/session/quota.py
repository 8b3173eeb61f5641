"""What one socket's commands may cost the server: the one place where work and memory that a
command asks for are weighed against that socket's budget, before any of it is done.

- Subscriptions: ``max_subscriptions`` (docs/protocol.md, Configuration) and a budget for the filter
  work they put on every publish (below).
- Window orders (``admit_window``): the sorted copies of a topic its live windows keep.
- One pass of a filter over a topic (``admit_filter_pass``): a snapshot (a resume's too: it reads
  the whole topic when its history does not reach back), a delete by filter, a ``replace``'s
  re-decision of what the client holds (``admit_replace_pass``); and
  the first pass of an aggregation, its projection counted too (``admit_aggregation_pass``), and
  a pass that sorts, its sort keys and sort counted too (``admit_sorted_pass``). A query's pass
  is charged by ``admit_pass``, whether it is read whole or in slices (handlers/preparing.py).
- Transactions (``TransactionWork``): the work of a ``tx``'s one step, counted before it is done.

A subscription whose filter has an index term (``/id = 5``, ``/sym IN (...)``) is evaluated only
for the records that can match it; one without is evaluated for every publish to its topic. 5,000
of those on one socket made 1,000 publishes take 14.5 s instead of 13 ms, for every other client
too. So the estimated cost of a socket's filters (filters/cost.py: about one unit a node; an index
term free, what it is ANDed with not: ``publish_cost``) and of its aggregated views' projections
may not pass ``SOCKET_FILTER_BUDGET``; a subscription beyond it, or beyond
``max_subscriptions``, is refused with ``invalid options``. Replacing a subscription (``replace``
with its ``sub_id``) is not a new one: its old filter stops counting.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from ..errors import BAD_FILTER, INVALID_OPTIONS, INVALID_ORDER_BY, CommandError, FilterError
from ..filters import Filter, compile_filter
from ..limits import (
    COMMAND_FILTER_WORK,
    INDEX_TERM_UNITS,
    ORDER_TERM_UNITS,
    SOCKET_FILTER_BUDGET,
    SOCKET_ORDER_RECORDS,
    SOCKET_ORDERS,
    SORT_UNITS,
)
from ..protocol.commands import Query
from .held import admit_server_order, fits_server_order

if TYPE_CHECKING:
    from ..aggregate.parse import Spec
    from ..fanout.subscription import Subscription
    from ..fanout.topic import Topic
    from ..filters.orderby import OrderBy
    from ..records.version import RecordVersion
    from .session import Session


def admit_subscription(session: Session, body: Query, max_subscriptions: int) -> None:
    """Refuse (``invalid options``) a subscription that would take ``session`` past its limits."""
    if not body.subscribe:
        return
    existing = session.subscriptions.get(body.sub_id)
    if existing is None and len(session.subscriptions) >= max_subscriptions:
        raise CommandError(
            INVALID_OPTIONS,
            f"max_subscriptions: this connection has {len(session.subscriptions)} subscriptions, "
            f"at most {max_subscriptions}",
        )
    cost = _filter_cost(body.filter)
    if cost:
        _charge_socket(session, cost, existing, "this subscription's filter costs")


def subscription_cost(subscription: Subscription) -> int:
    """What a live subscription counts against its socket's budget: its filter (``publish_cost``),
    and what each change of its topic costs it (an aggregated view's projection)."""
    topic: Topic | None = subscription.topic_ref
    view = topic.change_cost if topic is not None else 0
    filters: tuple[Any, ...] = subscription.filters
    own: int = sum(f.cost for f in filters)
    # (An index term of the user's entitlement spares records too, but it is not the
    # subscription's own filter: only its own term is free.)
    return view + publish_cost(own, any(f.index_term is not None for f in filters))


def admit_aggregated_view(session: Session, groups: Topic, replacing: Subscription | None) -> None:
    """Refuse (``invalid options``) an aggregated view whose per-change work (``groups``: its
    topic of groups, whose ``change_cost`` is its aggregation's filters and projection) would take
    its socket past ``SOCKET_FILTER_BUDGET``: every change of the source costs it that."""
    what = "this aggregated view's filter and projection cost"
    _charge_socket(session, groups.change_cost, replacing, what)


def _charge_socket(session: Session, cost: int, replacing: Subscription | None, what: str) -> None:
    """Refuse (``invalid options``) a view costing ``cost`` a publish that would take ``session``'s
    subscriptions (but ``replacing``) past ``SOCKET_FILTER_BUDGET``."""
    used = sum(subscription_cost(sub) for sub in session.subscriptions.values() if sub is not replacing)
    if used + cost > SOCKET_FILTER_BUDGET:
        raise CommandError(
            INVALID_OPTIONS,
            f"filter budget: {what} {cost} and this connection's other views {used}, at most "
            f"{SOCKET_FILTER_BUDGET} in all",
        )


def admit_filter_pass(text: str | None, records: int) -> None:
    """Refuse (``bad filter``) a filter that one command would evaluate over ``records`` records
    (a snapshot, read in slices when it is big: handlers/preparing.py; a delete by filter, in one
    step) when that is more work than ``COMMAND_FILTER_WORK``: its estimated cost per record times
    the records."""
    compiled = _compiled(text)
    if compiled is None:
        return
    cost = compiled.cost
    if cost * records > COMMAND_FILTER_WORK:
        raise CommandError(
            BAD_FILTER,
            f"too costly over {records} records: {cost} units a record, at most "
            f"{COMMAND_FILTER_WORK} units in one pass; make it cheaper (fewer regular expressions "
            "or functions)",
        )


def admit_pass(text: str | None, orderby: OrderBy | None, sorting: bool, records: int) -> None:
    """The charge of a query's pass over ``records`` records: its filter, and when it is
    ``sorting`` (a window's new order, a snapshot with ``orderby``), its sort too. The query
    makes it before its pass, and so does the preparation of a pass in slices before reading its
    first slice (handlers/preparing.py): one charge, wherever the pass is read."""
    admit_filter_pass(text, records)
    if sorting:
        admit_sorted_pass(text, orderby, records)


def admit_replace_pass(old: Subscription, new: Subscription, records: int) -> None:
    """Refuse (``bad filter``) a ``replace`` whose re-decision of what the client holds is more
    work than ``COMMAND_FILTER_WORK``: the new filter over the records the old subscription
    remembers sending; when it remembers nothing, the old filter and the new one over every record
    of the topic (``records``: to learn what it held, then what stays). 6.5 to 10.4 s a replace
    of a plain ``subscribe`` over 30,000 records was uncharged before."""
    new_cost = sum(f.cost for f in new.filters)
    if old.held is not None:
        read, per_record, which = len(old.held), new_cost, "the new filter"
    else:
        read, per_record = records, new_cost + sum(f.cost for f in old.filters)
        which = "the old and the new filter"
    if per_record * read > COMMAND_FILTER_WORK:
        raise CommandError(
            BAD_FILTER,
            f"too costly to replace over {read} records: {per_record} units a record for {which}, "
            f"at most {COMMAND_FILTER_WORK} units in one pass; make them cheaper (fewer regular "
            "expressions or functions)",
        )


def admit_sorted_pass(text: str | None, orderby: OrderBy | None, records: int) -> None:
    """Refuse (``invalid order by``) a pass that also sorts what it selects (a window's new order,
    a snapshot with ``orderby``) when the filter and the sort are more work than
    ``COMMAND_FILTER_WORK``: each record's sort key reads every term, then the sort compares the
    keys (``SORT_UNITS`` and ``ORDER_TERM_UNITS`` a term). Without this, an order of 16 terms over
    a million records was one step of tens of seconds whose filter cost nothing."""
    per_record = pass_units(text, orderby, True)
    if per_record * records > COMMAND_FILTER_WORK:
        raise CommandError(
            INVALID_ORDER_BY,
            f"too costly to sort over {records} records: {per_record} units a record with the "
            f"filter, at most {COMMAND_FILTER_WORK} units in one pass; sort by fewer fields or "
            "filter cheaper",
        )


def gates_units(filters: Iterable[Filter], entitlement_filter: Filter | None) -> int:
    """What a view's gates cost a pass on each record it reads: its own filters and its user's
    entitlement filter (a pass in slices is sliced by it: handlers/preparing.py)."""
    gate = entitlement_filter.cost if entitlement_filter is not None else 0
    return gate + sum(f.cost for f in filters)


def pass_units(text: str | None, orderby: OrderBy | None, sorting: bool) -> int:
    """What one record costs a pass of filter ``text`` over a topic (an index does not help a
    pass), and when ``sorting``, its sort key of ``orderby``'s terms and its share of the sort."""
    compiled = _compiled(text)
    units = compiled.cost if compiled is not None else 0
    if sorting:
        units += SORT_UNITS + ORDER_TERM_UNITS * (len(orderby.terms) if orderby is not None else 0)
    return units


def admit_aggregation_pass(text: str | None, spec: Spec, records: int) -> None:
    """Refuse an aggregation whose first pass (every input record read, grouped and accumulated,
    whole or in slices: aggregate/building.py) is more work than ``COMMAND_FILTER_WORK``: ``bad
    filter`` when its filter alone is; ``invalid options`` when the filter and the projection are,
    each projected field costing its argument's estimated cost and ``AGGREGATE_UNITS``. 63 maxima
    of arithmetic over 50,000 records held every socket for 15 s before this was counted."""
    admit_filter_pass(text, records)
    compiled = _compiled(text)
    per_record = compiled.cost if compiled is not None else 0
    per_record += spec.cost
    if per_record * records > COMMAND_FILTER_WORK:
        raise CommandError(
            INVALID_OPTIONS,
            f"projection too costly over {records} records: {per_record} units a record, at most "
            f"{COMMAND_FILTER_WORK} units in one pass; project fewer or cheaper fields",
        )


def _filter_cost(text: str | None) -> int:
    """What a subscription's filter costs every publish (``publish_cost``)."""
    compiled = _compiled(text)
    return 0 if compiled is None else publish_cost(compiled.cost, compiled.index_term is not None)


def publish_cost(cost: int, indexed: bool) -> int:
    """What filters of estimated ``cost`` cost every publish to their topic. An index term
    (``indexed``) spares the records that cannot match it, not the ones it lets through: the rest
    of the filter runs on each of those, and they may be every record (``/qty IN (0..99) AND`` forty
    regular expressions counted nothing, and made each publish 0.3 to 1.7 s). So the term itself is
    free, what it is ANDed with is not."""
    return max(0, cost - INDEX_TERM_UNITS) if indexed else cost


def _compiled(text: str | None) -> Filter | None:
    """``text`` compiled (cached: the command compiles it again for nothing); None when there is
    no filter, or it does not compile (the command refuses it with its column, as it always has)."""
    if text is None or not text.strip():
        return None
    try:
        return compile_filter(text)
    except FilterError:
        return None


def admit_window(
    topics: Iterable[Topic], topic: Topic, subscription: Subscription, replacing: Subscription | None
) -> None:
    """Refuse (``invalid options``) a window whose order would take its socket past its budget,
    or, when it is a new order, the server past its own (held.py; ``topics``: the server's).

    Each window with its own ``orderby`` or filter keeps a sorted copy of its topic's matching
    records: one socket with 1,000 one-row windows on 50,000 records grew the server from 64 MB to
    5.35 GB. A socket is charged every distinct order its windows use, shared or not (so what it
    may do does not depend on other sockets): at most ``SOCKET_ORDERS`` of them (checked before a
    new one is made), holding at most ``SOCKET_ORDER_RECORDS`` records besides the largest (checked
    before it is made, and made only when it fits), so that one view of a topic of any size is always
    possible but copies of it are not. ``replacing``: the subscription a ``replace`` swaps out (its
    order no longer counts)."""
    share = topic.order_share(subscription)
    if share is None:
        return
    wanted, held = _held_orders(topic, share, subscription, replacing)
    if wanted not in held and len(held) >= SOCKET_ORDERS:
        raise CommandError(
            INVALID_OPTIONS,
            f"window orders: this connection's windows keep {len(held)} distinct orders "
            f"(orderby, filter), at most {SOCKET_ORDERS}",
        )
    sizes = [len(kept) for kept in held.values()]
    size: int | None = None  # the new order's size, when it had to be worked out
    if wanted not in held and not _fits(sizes, len(topic.records)):
        # It may not fit: its size is worked out before it is made, which costs a third of
        # making it (filtering without sort keys), so that a refusal costs no sorted copy.
        size = _order_size(topic, subscription)
        _check_fits(sizes, size)
    if not topic.orders.holds(share):
        # A new order for the server: its topic's size bounds it, worked out when that is too many.
        if size is None and not fits_server_order(topics, len(topic.records)):
            size = _order_size(topic, subscription)
        admit_server_order(topics, len(topic.records) if size is None else size)


def admits_window_at_once(
    topics: Iterable[Topic], topic: Topic, subscription: Subscription, replacing: Subscription | None
) -> bool:
    """Whether ``admit_window`` admits window ``subscription`` on its quick bounds alone (its
    socket's count of orders, and its topic's size against what its socket and the server hold),
    so that a build in slices may make the order first (handlers/preparing.py). False when it
    refuses the window, or must first work out how many records the new order would keep (a pass
    of its own, made when the command runs, so that a refusal costs no sorted copy)."""
    share = topic.order_share(subscription)
    if share is None:
        return True
    wanted, held = _held_orders(topic, share, subscription, replacing)
    if wanted in held:
        return True
    if len(held) >= SOCKET_ORDERS or not _fits([len(kept) for kept in held.values()], len(topic.records)):
        return False
    return topic.orders.holds(share) or fits_server_order(topics, len(topic.records))


def _held_orders(
    topic: Topic, share: tuple[Any, ...], subscription: Subscription, replacing: Subscription | None
) -> tuple[tuple[int, tuple[Any, ...]], dict[tuple[int, tuple[Any, ...]], Any]]:
    """Which order the window wants, and the distinct orders its socket's windows (but
    ``replacing``) keep. By the topic object, not its name: each aggregation's topic of groups,
    under its source's name, keeps orders of its own, distinct from the records' orders with the
    same share."""
    held = {
        (id(sub.topic_ref), sub.window.order.share): sub.window.order
        for sub in subscription.session.subscriptions.values()
        if sub.window is not None and sub is not replacing
    }
    return (id(topic), share), held


def _order_size(topic: Topic, subscription: Subscription) -> int:
    """How many records window ``subscription``'s new order would keep (the order a build in
    slices made for it says so: handlers/preparing.py)."""
    made = topic.orders.made_for(topic.order_share(subscription))
    if made is not None:
        return len(made)
    records = topic.records.values()
    return len(records) if subscription.unfiltered else sum(map(subscription.matches, _data(records)))


def _fits(sizes: list[int], new: int) -> bool:
    every = [*sizes, new]
    return sum(every) - max(every) <= SOCKET_ORDER_RECORDS


def _check_fits(sizes: list[int], new: int) -> None:
    if not _fits(sizes, new):
        raise CommandError(
            INVALID_OPTIONS,
            f"window orders: this connection's windows would keep {sum(sizes) + new} records in "
            f"{len(sizes) + 1} orders, at most {SOCKET_ORDER_RECORDS} besides the largest",
        )


def _data(records: Iterable[RecordVersion]) -> Iterator[Any]:
    return (version.data for version in records)
