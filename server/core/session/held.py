"""What the whole server holds for views, across every socket: the records its window orders keep
and the groups its aggregations keep, weighed before one more is made.

A socket's own budget (quota.py) bounds what one socket may make, whatever the others do; many
sockets within theirs could still fill the machine (8 sockets of one 200,000-record order each
held 223 MB, 4 projections grouped by ``/order`` over 200,000 records 350 MB). So an order or an
aggregation that would take the server past ``SERVER_ORDER_RECORDS`` or ``SERVER_GROUPS`` is
refused with ``invalid options`` (a topic's configured ``orders`` are not counted: the
operator chose them), after the orders no window uses (kept for the next window over
them: fanout/orders.py) are dropped to make room. Each figure is counted from the topics when it
is needed (a few orders and aggregations each): nothing to keep in step.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ..aggregate.view import Aggregation, GroupIndex
from ..errors import INVALID_OPTIONS, CommandError
from ..fanout.topic import Topic
from ..limits import SERVER_GROUPS, SERVER_ORDER_RECORDS


def aggregations(topics: Iterable[Topic]) -> Iterator[Aggregation]:
    """Every live aggregation over ``topics``."""
    for topic in topics:
        for derived in topic.derived.values():
            if isinstance(derived, GroupIndex):
                yield from derived.views.values()


def _with_groups(topics: Iterable[Topic]) -> Iterator[Topic]:
    """``topics`` and their aggregations' topics of groups (which keep orders of their own)."""
    listed = list(topics)
    yield from listed
    yield from (view.topic for view in aggregations(listed))


def order_records(topics: Iterable[Topic]) -> int:
    """The records the window orders of the server's windows keep, idle ones included; the orders
    a configuration keeps (``orders``) are the operator's choice, not counted."""
    return sum(topic.orders.made_records() for topic in _with_groups(topics))


def groups(topics: Iterable[Topic]) -> int:
    """The groups every live aggregation of the server keeps."""
    return sum(len(view.topic.records) for view in aggregations(topics))


def fits_server_order(topics: Iterable[Topic], size: int) -> bool:
    """Whether a new order of ``size`` records fits the server as it is."""
    return order_records(topics) + size <= SERVER_ORDER_RECORDS


def admit_server_order(topics: Iterable[Topic], size: int) -> None:
    """Refuse a new order of ``size`` records that would take the server past
    ``SERVER_ORDER_RECORDS``, once the idle orders are dropped."""
    listed = list(_with_groups(topics))
    if order_records(listed) + size <= SERVER_ORDER_RECORDS:
        return
    for topic in listed:
        topic.orders.drop_idle()
    held = order_records(listed)
    if held + size > SERVER_ORDER_RECORDS:
        raise CommandError(
            INVALID_OPTIONS,
            f"window orders: the server's windows keep {held} records in their orders, and this "
            f"one would keep {size} more, at most {SERVER_ORDER_RECORDS} in all",
        )


def admit_server_groups(topics: Iterable[Topic], made: Aggregation) -> None:
    """Refuse the aggregation just ``made`` (its caller releases it) when the server's
    aggregations, it included, keep more than ``SERVER_GROUPS`` groups."""
    own = len(made.topic.records)
    held = groups(topics)
    if made.index.views.get(made.share) is made:
        held -= own  # a live one counts itself already; a one-shot ``sow``'s does not
    if held + own > SERVER_GROUPS:
        raise CommandError(
            INVALID_OPTIONS,
            f"aggregations: the server's aggregations keep {held} groups, and this one would "
            f"keep {own} more, at most {SERVER_GROUPS} in all",
        )
