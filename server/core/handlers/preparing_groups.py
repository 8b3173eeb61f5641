"""An aggregated query's passes in slices (preparing.py): its aggregation's first pass
(aggregate/building.py), and then, for a live view that orders its groups, the pass over them.

A subscription whose aggregation is new and whose view orders its groups (a window of them, or a
sorted snapshot) made two passes in one step: the build, then an order of every group (grouped
by ``/order`` over 200,000 records: 200,000 groups to sort). Here, once the build is read, the
aggregation goes live in that slice (fed from then on, as if a command had just made it, and
shared by any identical view from then on), and the view's pass over its groups follows in slices
as any view's pass over a topic does. When the command runs it finds the aggregation live and
shares it. If the command never takes it (refused, or its socket gone first) and no other view
has, it is released with the command's pass.

A one-shot ``sow`` has no live aggregation to share: its groups are built in slices, and the
sort of them is done when it runs.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from ..aggregate.building import GroupBuild
from ..aggregate.parse import Spec
from ..aggregate.view import Aggregation, GroupIndex, index_share, share_of, shared_aggregation, usable_index
from ..errors import CommandError
from ..fanout.subscription import Subscription
from ..fanout.windows import WindowSpec
from ..filters import Filter, parse_orderby
from ..filters.entitlement import Entitlement
from ..filters.functions import EvalContext
from ..filters.orderby import OrderBy
from ..limits import RECORD_UNITS, SLICED_PASS_UNITS
from ..protocol.commands import Query
from ..session.held import admit_server_groups
from ..session.quota import admit_aggregation_pass, gates_units, pass_units
from .aggregating import check_kind, make_aggregation, spec_of
from .preparation import Done, Preparation, Work, pass_for
from .querying import own_filters, window_spec

if TYPE_CHECKING:
    from ..broker.broker import Broker
    from ..fanout.topic import Topic
    from ..session.session import Session


def prepare_groups(broker: Broker, session: Session, body: Query, topic: Topic) -> Preparation | None:
    """The first pass of the aggregation an aggregated query would make, in slices: None when one
    exists to share, or a table to use (adding inputs to one that others read runs whole)."""
    check_kind(body, None)
    orderby = parse_orderby(body.orderby) if body.orderby else None
    window = window_spec(body, orderby, True, None)  # (what it would refuse, refused before the pass)
    spec = spec_of(body)
    filters = own_filters(body.filter)
    entitlement = session.entitlement(body.topic, broker.clock)
    ctx = EvalContext(broker.clock, session.user_id, session.client_name)
    share = share_of(spec, filters, entitlement, ctx)
    if shared_aggregation(topic, share) is not None:
        return None
    if usable_index(topic, spec, filters, entitlement, ctx, body.subscribe) is not None:
        return None
    records = len(topic.records)
    admit_aggregation_pass(body.filter, spec, records)  # the charge the command makes (aggregating.py)
    units = RECORD_UNITS + gates_units(filters, entitlement.filter) + spec.cost
    if units * records < SLICED_PASS_UNITS:
        return None
    index_of = index_share(spec, filters, entitlement, ctx)
    index = GroupIndex(topic, index_of, spec.grouping, filters, entitlement, ctx, broker.tx_frames)
    admit = partial(admit_server_groups, broker.topics.values(), topic, spec)
    build = GroupBuild(topic, share, index, spec, units, admit)
    if not body.subscribe or (window is None and orderby is None):
        return Preparation(topic, build)
    live = _Live(broker, session, body, build, spec, (filters, entitlement, ctx), orderby, window)
    return Preparation(topic, build, live.then, live.released)


class _Live:
    """What follows the build of a live view's aggregation: the aggregation made live, then the
    pass over its groups that the view's order makes."""

    def __init__(
        self,
        broker: Broker,
        session: Session,
        body: Query,
        build: GroupBuild,
        spec: Spec,
        gates: tuple[tuple[Filter, ...], Entitlement, EvalContext],
        orderby: OrderBy | None,
        window: WindowSpec | None,
    ) -> None:
        self.broker, self.session, self.body, self.build, self.spec = broker, session, body, build, spec
        self.gates = gates  # the filters, entitlement and caller its aggregation reads through
        self.orderby, self.window = orderby, window
        self.made: Aggregation | None = None

    def then(self) -> tuple[Topic, Work] | None:
        """In the slice that ends the build: the aggregation live, and the pass over its groups
        (None: the command runs, and takes the build, or its refusal)."""
        build, broker, body = self.build, self.broker, self.body
        source = build.source
        filters, entitlement, ctx = self.gates
        build.install()
        if (
            build.built is None
            or usable_index(source, self.spec, filters, entitlement, ctx, True) is not None
        ):
            return None  # refused (the command says so), or a table to use came meanwhile
        made = shared_aggregation(source, build.share)
        if made is None:
            try:
                made = make_aggregation(broker, source, build.share, self.spec, self.gates, True, build.built)
            except CommandError as refusal:
                build.refusal = refusal
                return None
            self.made = made
        groups = made.topic
        unfiltered = Entitlement(body.topic, None, ctx)
        reader = Subscription(self.session, None, groups.name, (), body.options, False, None, ctx, unfiltered)
        units = RECORD_UNITS + pass_units(None, self.orderby, True)
        work = pass_for(broker, body, groups, reader, self.orderby, self.window, units)
        return groups, work if work is not None else Done()

    def released(self) -> None:
        """The aggregation it made live, released when no view took it."""
        made = self.made
        if made is not None and not made.topic.subscribers and made.index.views.get(made.share) is made:
            made.release()
