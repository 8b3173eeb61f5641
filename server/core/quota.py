"""What one socket may subscribe to: ``max_subscriptions`` (PROTOCOL 2) and a budget for the filter
work its subscriptions put on every publish.

A subscription whose filter has an index term (``/id = 5``, ``/sym IN (...)``) is evaluated only
for the records that can match it; one without is evaluated for every publish to its topic. 5,000
of those on one socket made 1,000 publishes take 14.5 s instead of 13 ms, for every other client
too. So the estimated cost of the unindexed filters of a socket (filters/cost.py: about one unit
a node) may not pass ``SOCKET_FILTER_BUDGET``; a subscription beyond it, or beyond
``max_subscriptions``, is refused with ``invalid options``. Replacing a subscription (``replace``
with its ``sub_id``) is not a new one: its old filter stops counting.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .commands import Query
from .errors import INVALID_OPTIONS, CommandError, FilterError
from .filters import compile_filter
from .limits import SOCKET_FILTER_BUDGET

if TYPE_CHECKING:
    from .session import Session
    from .subscription import Subscription


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
    if not cost:
        return
    used = sum(subscription_cost(sub) for sub in session.subscriptions.values() if sub is not existing)
    if used + cost > SOCKET_FILTER_BUDGET:
        raise CommandError(
            INVALID_OPTIONS,
            f"filter budget: this subscription's filter costs {cost} and this connection's "
            f"unindexed filters {used}, at most {SOCKET_FILTER_BUDGET} in all",
        )


def subscription_cost(subscription: Subscription) -> int:
    """What a live subscription counts against its socket's budget (0 when an index skips it)."""
    if subscription.index_term is not None:
        return 0
    filters: tuple[Any, ...] = subscription.filters
    return sum(f.cost for f in filters)


def _filter_cost(text: str | None) -> int:
    if text is None or not text.strip():
        return 0
    try:
        compiled = compile_filter(text)  # cached: the query compiles it again for nothing
    except FilterError:
        return 0  # the query refuses it with its column, as it always has
    return 0 if compiled.index_term is not None else compiled.cost
