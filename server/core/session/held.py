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

A group weighs more for long field names and text literals (``Spec.group_weight``), and one
aggregation may weigh no more than ``AGGREGATION_WEIGHT_PER_RECORD`` groups a record of its topic
(or ``AGGREGATION_GROUPS_FLOOR``): groups are never more than the records they group, but 64 KB
of names over 20,000 groups was 1.3 GB. The first passes in slices count what they have found so
far, so four at once cannot hold four times the bound (each counts those that began before it).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ..aggregate.building import GroupBuild
from ..aggregate.parse import GROUP_BYTES, Spec
from ..aggregate.view import Aggregation, GroupIndex
from ..errors import INVALID_OPTIONS, CommandError
from ..fanout.topic import Topic
from ..limits import (
    AGGREGATION_GROUPS_FLOOR,
    AGGREGATION_WEIGHT_PER_RECORD,
    SERVER_GROUPS,
    SERVER_ORDER_RECORDS,
)


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


def groups(topics: Iterable[Topic], before: GroupBuild | None = None) -> int:
    """The groups every live aggregation of the server keeps, and every first pass in slices has
    found so far (with ``before``: those that began before it, which go first), each counted as
    its projection weighs it (``Spec.group_weight``: its record's field names and literals)."""
    listed = list(topics)
    held = sum(len(view.topic.records) * view.spec.group_weight for view in aggregations(listed))
    last = before.began if before is not None else None
    for topic in listed:
        for derived in topic.derived.values():
            if isinstance(derived, GroupBuild) and (last is None or derived.began < last):
                held += derived.groups_weight
    return held


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


def admit_server_groups(
    topics: Iterable[Topic], source: Topic, spec: Spec, count: int, building: GroupBuild | None = None
) -> None:
    """Refuse a new aggregation of ``spec`` over ``source`` whose ``count`` groups weigh more than
    ``AGGREGATION_WEIGHT_PER_RECORD`` groups a record of ``source`` (or
    ``AGGREGATION_GROUPS_FLOOR``), or would take the server's
    aggregations past ``SERVER_GROUPS`` groups: asked once its groups are counted and before they
    are written (aggregate/view.py, aggregate/building.py, which is ``building``), so a refusal
    costs no group record."""
    own = count * spec.group_weight
    allowed = max(len(source.records) * AGGREGATION_WEIGHT_PER_RECORD, AGGREGATION_GROUPS_FLOOR)
    if own > allowed:
        raise CommandError(
            INVALID_OPTIONS,
            f"aggregations: this one's {count} groups would weigh as {own} (a group counts once more "
            f"for each {GROUP_BYTES} bytes of its field names and text literals), more than the {allowed} "
            "its topic allows",
        )
    held = groups(topics, building)
    if held + own > SERVER_GROUPS:
        raise CommandError(
            INVALID_OPTIONS,
            f"aggregations: the server's aggregations keep {held} groups, and this one would "
            f"keep {own} more, at most {SERVER_GROUPS} in all",
        )
