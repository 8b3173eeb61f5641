"""A ``replace``'s re-decision of what its client holds, read in slices before it runs
(preparing.py). The replace (replacing.py) asks, of every record the client holds, whether the new
filter keeps it; a subscription that remembers nothing holds what the old filter matches, so that
is asked of every record first. Over 200,000 records that was one step every other socket waited
for. Here a pass in slices (fanout/passes.py) reads it: for a subscription that remembers
nothing, the records the old filter matches, each with the view of it the old one sent and the
new filter's verdict; for one that remembers what it sent, the records the new filter matches.
The replace then takes what the pass found, as the records are when it runs, and does the rest
(OOFs, records sent again) in its own step, which costs what it sends.

Only a replace of a plain subscription by a plain one is read this way: a window's re-decision is
its order's (moving.py), an aggregation's a switch of tables (``switch``). Anything that would be
refused or read otherwise (a resume, a bookmark, a filter that reads the clock) runs whole.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..fanout.passes import Selection
from ..fanout.subscription import Subscription
from ..filters import Filter
from ..filters.functions import EvalContext
from ..limits import RECORD_UNITS, SLICED_PASS_UNITS
from ..protocol.commands import Query
from ..session.quota import admit_replace_pass
from .preparation import Preparation, reads_clock
from .querying import own_filters
from .replacing import redecides, replace_share

if TYPE_CHECKING:
    from ..broker.broker import Broker
    from ..records.version import RecordVersion
    from ..session.session import Session


def prepare_replace(broker: Broker, session: Session, body: Query) -> Preparation | None:
    """The re-decision ``body`` (a ``replace``) would make in one step, as a pass in slices; None
    when it makes none worth slicing or is not a plain replace (it runs whole)."""
    old = session.subscriptions.get(body.sub_id) if body.subscribe else None
    topic = broker.topics.get(body.topic)
    if (
        old is None
        or topic is None
        or not topic.is_sow
        or old.topic_ref is not topic
        or old.window is not None
        or body.top_n is not None
        or body.aggregated
        or body.options.resume
        or body.bookmark is not None
    ):
        return None
    session.check_read(body.topic)
    filters = own_filters(body.filter)
    entitlement = session.entitlement(body.topic, broker.clock)
    if reads_clock(*filters, entitlement.filter, *old.filters, old.entitlement.filter):
        return None  # which records pass is a matter of when: decided whole, when it runs
    ctx = EvalContext(broker.clock, session.user_id, session.client_name)
    new = Subscription(
        session, body.sub_id, body.topic, filters, body.options, body.delta, topic.key_spec, ctx, entitlement
    )
    admit_replace_pass(old, new, len(topic.records))  # the charge the command makes (querying.py)
    if not redecides(topic, old, new, body.snapshot):
        return None  # it reads no record
    new_cost = sum(f.cost for f in filters) + _gate_cost(entitlement.filter)
    if old.held is None:
        units = (
            RECORD_UNITS + new_cost + sum(f.cost for f in old.filters) + _gate_cost(old.entitlement.filter)
        )
        if units * len(topic.records) < SLICED_PASS_UNITS:
            return None
        verdict = new.matches

        def seen(version: RecordVersion) -> tuple[Any, bool]:
            return old.view_of(version), verdict(version.data)

        selection = Selection(replace_share(old, new), topic.sow, old.matches, None, units, seen)
    else:
        units = RECORD_UNITS + new_cost
        if units * len(old.held) < SLICED_PASS_UNITS:
            return None
        selection = Selection(replace_share(old, new), topic.sow, new.matches, None, units)
    return Preparation(topic, selection)


def _gate_cost(gate: Filter | None) -> int:
    return gate.cost if gate is not None else 0
