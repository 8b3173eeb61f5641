"""A command's pass in slices (preparing.py), as the runtime drives it: ``advance`` it, then
``install`` it and run the command in one step, then ``release`` it; and the pass a view makes over
a topic (``pass_for``): a new window's order, or a snapshot's records, filtered or sorted."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..aggregate.building import GroupBuild
from ..fanout.orders import OrderBuild
from ..fanout.passes import Selection
from ..fanout.subscription import Subscription
from ..fanout.windows import WindowSpec
from ..filters import Filter, parse_orderby
from ..filters.functions import EvalContext
from ..filters.orderby import OrderBy
from ..limits import RECORD_UNITS, SLICED_PASS_UNITS
from ..protocol.commands import Query
from ..session.quota import admit_pass, admits_window_at_once, gates_units, pass_units
from .querying import own_filters, window_spec
from .resuming import resume_point
from .snapshotting import selection_share

if TYPE_CHECKING:
    from ..broker.broker import Broker
    from ..fanout.topic import Topic
    from ..session.session import Session


class Done:
    """A pass with nothing left to read (what follows an aggregation's build when its view needs
    no pass over its groups)."""

    def advance(self) -> bool:
        return True

    def close(self) -> None:
        pass


class Several:
    """Several passes of one command, read one after another and installed together: a
    transaction's deletes by filter over more than one topic (preparing_tx.py), a ``sow_and_*``
    replace's re-decision and its snapshot (preparing_replace.py). Each goes on taking the writes
    to its topic once read, until the last is; each part of the command takes its own."""

    __slots__ = ("passes",)

    def __init__(self, passes: list[tuple[Topic, Selection]]) -> None:
        self.passes = passes

    def advance(self) -> bool:
        return all(selection.advance() for _, selection in self.passes)

    def install(self) -> None:
        for topic, selection in self.passes:
            topic.prepared.append(selection)

    def close(self) -> None:
        for topic, selection in self.passes:
            selection.close()
            topic.drop_prepared(selection)


Work = OrderBuild | Selection | GroupBuild | Done | Several
# What follows a pass once it is read (an aggregation's build: the pass over its groups), made in
# the slice that ends it: the topic and the pass to read next, or None (the command runs).
Then = Callable[[], tuple["Topic", Work] | None]


class Preparation:
    """One command's pass in slices: ``advance`` until it answers True, then ``install`` and run
    the command in the same step, then ``release`` (whatever happened: also when the command never
    runs, its socket gone). ``then``: what follows the first pass; ``released``: called last by
    ``release`` (what a stage made that the command may not have taken)."""

    __slots__ = ("_released", "_then", "_work", "topic")

    def __init__(
        self,
        topic: Topic,
        work: Work,
        then: Then | None = None,
        released: Callable[[], None] | None = None,
    ) -> None:
        self.topic = topic
        self._work = work
        self._then = then
        self._released = released

    def advance(self) -> bool:
        """Read one slice of the records; True when the pass waits only for its end."""
        if not self._work.advance():
            return False
        then = self._then
        if then is None:
            return True
        self._then = None
        following = then()
        if following is None:
            return True
        self._work.close()
        self.topic, self._work = following
        return False

    def install(self) -> None:
        """Where the command finds what the pass found: a window's order and an aggregation's
        groups are finished now (a snapshot's records by the snapshot that takes them)."""
        work, topic = self._work, self.topic
        if isinstance(work, OrderBuild):
            topic.orders.made = work.finish()
            return
        if isinstance(work, Done):
            return
        if isinstance(work, Several):
            work.install()
            return
        if isinstance(work, GroupBuild):
            work.install()
        topic.prepared.append(work)

    def release(self) -> None:
        """After the command: what it did not take is let go of."""
        work, topic = self._work, self.topic
        work.close()
        if isinstance(work, (Selection, GroupBuild)):
            topic.drop_prepared(work)
        topic.orders.made = None
        if self._released is not None:
            self._released()


def reads_clock(*gates: Filter | None) -> bool:
    """Whether a gate's verdict depends on when it is asked (``UNIX_TIMESTAMP()``): a pass in
    slices would ask it at other times than the command runs at."""
    return any(gate is not None and gate.reads_clock for gate in gates)


def snapshot_pass(
    broker: Broker, session: Session, body: Query, topic: Topic
) -> OrderBuild | Selection | None:
    """The pass in slices that query ``body`` (a snapshot, or a live window) makes over ``topic``,
    charged as the command charges it; None when it makes none worth slicing, or decides its
    records otherwise (a resume's net change, a filter that reads the clock)."""
    filters = own_filters(body.filter)
    entitlement = session.entitlement(body.topic, broker.clock)
    orderby = parse_orderby(body.orderby) if body.orderby else None
    window = window_spec(body, orderby, True, None)
    if body.options.resume and resume_point(broker, topic, body.bookmark, window is not None) is not None:
        return None  # the net change since its bookmark: no pass over the topic
    if reads_clock(*filters, entitlement.filter):
        return None  # which records pass is a matter of when: decided whole, when it runs
    ctx = EvalContext(broker.clock, session.user_id, session.client_name)
    reader = Subscription(session, None, topic.name, filters, body.options, False, None, ctx, entitlement)
    records = len(topic.records)
    sorting = window is not None or orderby is not None
    # The charge the command itself makes of its pass (querying.py), before any of it is done.
    admit_pass(body.filter, orderby, sorting, records)
    # What reading one record costs the pass: decoding it (a stored record keeps only its
    # encoding), its filter and its user's, and its share of a sort.
    units = RECORD_UNITS + pass_units(None, orderby, sorting) + gates_units(filters, entitlement.filter)
    return pass_for(broker, body, topic, reader, orderby, window, units)


def pass_for(
    broker: Broker,
    body: Query,
    topic: Topic,
    reader: Subscription,
    orderby: OrderBy | None,
    window: WindowSpec | None,
    units: int,
) -> OrderBuild | Selection | None:
    """The pass in slices that ``reader``'s view of ``topic`` makes (a live window's new order, or
    its snapshot's records), ``units`` a record; None when it makes none worth slicing."""
    if units * len(topic.records) < SLICED_PASS_UNITS:
        return None
    if window is not None:
        reader.hold_window(window)
        if not admits_window_at_once(broker.topics.values(), topic, reader, None):
            return None  # weighed when it runs: refused, or its size worked out first
        return topic.orders.build_in_slices(reader, topic.sow, units)
    # A subscription that remembers what it was sent (delta, oof) remembers a view of each record
    # of its snapshot: made in slices too (the same view, of the same options), and taken whole.
    # (Of the first few, ``top_n``, the snapshot makes them: a step of as many.)
    remembers = body.subscribe and (body.delta or body.options.oof) and body.top_n is None
    if orderby is None and reader.unfiltered and not remembers:
        return None  # every record, in the records' order: no pass (Sow.every_version)
    sort_key = orderby.sort_key if orderby is not None else None
    view_of: Callable[[Any], Any] | None = reader.view_of if remembers else None
    share = selection_share(reader, orderby)
    matches = None if reader.unfiltered else reader.matches  # (None: every record, none read)
    return Selection(share, topic.sow, matches, sort_key, units, view_of, body.top_n is None)
