"""A ``replace``'s re-decision of what its client holds, read in slices before it runs
(preparing.py). The replace (replacing.py) asks, of every record the client holds, whether the new
filter keeps it; a subscription that remembers nothing holds what the old filter matches, so that
is asked of every record first. Over 200,000 records that was one step every other socket waited
for. Here a pass in slices (fanout/passes.py) reads it: for a subscription that remembers
nothing, the records the old filter matches, each with the view of it the old one sent and the
new filter's verdict; for one that remembers what it sent, the records the new filter matches.
The replace then takes what the pass found, as the records are when it runs, and does the rest
(OOFs, records sent again) in its own step, which costs what it sends. A ``sow_and_*`` replace's
snapshot is read in slices too, after the re-decision (preparation.py's ``snapshot_pass``, as any
snapshot's), and each part takes its own pass.

Only a replace of a plain subscription by a plain one is read this way: a window's re-decision is
its order's (moving.py), an aggregation's a switch of tables (``switch``). Anything that would be
refused or read otherwise (a resume, a bookmark, a filter that reads the clock) runs whole.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..fanout.passes import Selection
from ..fanout.subscription import Subscription
from ..filters.functions import EvalContext
from ..limits import RECORD_UNITS, SLICED_PASS_UNITS
from ..protocol.commands import Query
from ..session.quota import admit_replace_pass, gates_units
from .preparation import Preparation, Several, reads_clock, snapshot_pass
from .querying import own_filters
from .replacing import redecides, replace_share

if TYPE_CHECKING:
    from ..broker.broker import Broker
    from ..fanout.topic import Topic
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
    # Its two passes, each when it makes one worth slicing: the re-decision, then (a sow_and_*
    # replace) its snapshot, read one after the other and each taken by its own part.
    passes: list[tuple[Topic, Selection]] = []
    redecision = _redecision(topic, old, new, body.snapshot)
    if redecision is not None:
        passes.append((topic, redecision))
    snapshot = snapshot_pass(broker, session, body, topic) if body.snapshot else None
    if isinstance(snapshot, Selection):  # (no window here: a replace of one is a move)
        passes.append((topic, snapshot))
    if not passes:
        return None
    return Preparation(topic, passes[0][1] if len(passes) == 1 else Several(passes))


def _redecision(topic: Topic, old: Subscription, new: Subscription, snapshot: bool) -> Selection | None:
    """The pass of the re-decision of what the client holds, or None when the replace makes
    none (it reads no record) or none worth slicing."""
    if not redecides(topic, old, new, snapshot):
        return None
    new_cost = gates_units(new.filters, new.entitlement.filter)
    if old.held is None:
        units = RECORD_UNITS + new_cost + gates_units(old.filters, old.entitlement.filter)
        if units * len(topic.records) < SLICED_PASS_UNITS:
            return None
        verdict = new.matches

        def seen(version: RecordVersion) -> tuple[Any, bool]:
            return old.view_of(version), verdict(version.data)

        return Selection(replace_share(old, new), topic.sow, old.matches, None, units, seen)
    units = RECORD_UNITS + new_cost
    if units * len(old.held) < SLICED_PASS_UNITS:
        return None
    return Selection(replace_share(old, new), topic.sow, new.matches, None, units)
