"""A query whose pass over a topic would hold the loop: its pass read in slices before it runs.

A snapshot of a big topic through a filter, or sorted, a live window's new order, a new
aggregation's groups, a ``replace``'s re-decision of what its client holds (preparing_replace.py)
and a transaction's deletes by filter (preparing_tx.py) each read every record of the topic in one
step that every other socket waited for (a sort of 200,000 records: 0.8 to 1.5 s; an aggregation
grouped by ``/order`` over as many, 2 to 5 s). The runtime asks ``prepare`` about each command
before it runs it; when the command would make such a pass, the answer is a ``Preparation``, a pass
in slices over the records as they were when it began (fanout/passes.py; an aggregation's,
aggregate/building.py), which the runtime advances a slice at a time, letting the other sockets run
between slices. Then, in one step, the pass is finished (the records written meanwhile taken again:
its answer is the records as they are then) and the command runs, its snapshot, its window or its
aggregation taking what the pass found instead of a pass of its own. So the command runs whole, as
it always has, at the moment its turn comes: nothing of what it answers or guarantees changes, only
when the other sockets get to run. The socket's next commands wait for it, so its own order is
kept.

A pass is charged before it begins (session/quota.py: what it may cost, the same charge the
command itself makes): a command the charge refuses is not prepared, and is refused when it runs.
Anything the command would refuse on its own (its topic, its options, its rights) leaves it
unprepared too: it runs, and says why. A pass smaller than ``SLICED_PASS_UNITS`` runs whole.
"""

from __future__ import annotations

import logging
from functools import partial
from typing import TYPE_CHECKING, Any

from ..errors import CommandError, FilterError
from ..fanout.passes import Selection
from ..filters import compile_filter
from ..limits import RECORD_UNITS, SLICED_PASS_UNITS
from ..protocol import inbound
from ..protocol.commands import Query, SowDelete, Transaction, decode_body, decode_header
from ..session.quota import (
    admit_filter_pass,
    admit_subscription,
    pass_units,
)
from .acks import check_logged_on
from .preparation import Preparation, snapshot_pass
from .preparing_groups import prepare_groups
from .preparing_replace import prepare_replace
from .preparing_tx import prepare_transaction
from .publishing import delete_share

if TYPE_CHECKING:
    from ..broker.broker import Broker
    from ..session.session import Session


log = logging.getLogger("server.core")


def prepare(broker: Broker, session: Session, raw: Any) -> Preparation | None:
    """The pass in slices that command ``raw`` of ``session`` would make in one step, or None
    when it makes none worth slicing, or would be refused before making it."""
    if type(raw) is inbound.RefusedCommand or not isinstance(raw, dict) or raw.get("c") not in _PASSES:
        return None
    try:
        check_logged_on(broker, session)
        header = decode_header(raw)
        body = decode_body(header, raw)
        if isinstance(body, SowDelete):
            return _prepare_delete(broker, session, body)
        if isinstance(body, Transaction):
            return prepare_transaction(broker, session, body)
        if isinstance(body, Query) and body.options.replace:
            return prepare_replace(broker, session, body)
        if not isinstance(body, Query) or not body.snapshot:
            return None
        topic = broker.topics.get(body.topic)
        if topic is None or not topic.is_sow or (body.subscribe and body.sub_id in session.subscriptions):
            return None  # (a sub_id in use is refused when it runs)
        session.check_read(body.topic)
        admit_subscription(session, body, broker.config.server.max_subscriptions)
        if body.aggregated:
            return prepare_groups(broker, session, body, topic)
        work = snapshot_pass(broker, session, body, topic)
        return Preparation(topic, work) if work is not None else None
    except (CommandError, FilterError):
        return None  # refused when it runs, in its own words
    except Exception:  # a defect: the command runs whole, and fails or not on its own
        log.exception("preparing a pass in slices failed on session %s: %.200r", session.id, raw)
        return None


# (A subscribe or delta_subscribe reads a topic when it replaces: preparing_replace.py.)
_PASSES = frozenset(
    {
        "sow",
        "subscribe",
        "delta_subscribe",
        "sow_and_subscribe",
        "sow_and_delta_subscribe",
        "sow_delete",
        "tx",
    }
)


def _prepare_delete(broker: Broker, session: Session, body: SowDelete) -> Preparation | None:
    """The records a ``sow_delete`` by filter deletes, found in slices (as a snapshot's are: the
    records that pass, as they are when it runs); it then deletes them in one step, which costs
    what it deletes. A delete by keys reads no topic."""
    if body.filter is None:
        return None
    session.check_write(body.topic)
    topic = broker.topics.get(body.topic)
    if topic is None or topic.key_spec is None:
        return None
    records = len(topic.records)
    admit_filter_pass(body.filter, records)  # the charge the command makes (publishing.py)
    units = RECORD_UNITS + pass_units(body.filter, None, False)
    if units * records < SLICED_PASS_UNITS:
        return None
    match = compile_filter(body.filter)
    if match.reads_clock:
        return None  # which records it deletes is a matter of when: decided whole, when it runs
    ctx = session.entitlement(body.topic, broker.clock).ctx  # (USER() is the deleting session's)
    selection = Selection(
        delete_share(body.filter, ctx), topic.sow, partial(match.matches, ctx=ctx), None, units
    )
    return Preparation(topic, selection)
