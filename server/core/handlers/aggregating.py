"""Which topic an aggregated query reads (docs/protocol.md, Aggregated views): ``sow``,
``sow_and_subscribe`` or ``sow_and_delta_subscribe`` with ``grouping`` or ``projection``.

An aggregated query reads the topic of groups of its aggregation (aggregate/view.py), through no
filter and no entitlement of its own: those selected the groups' input records already. Everything
after that (its window, admission, snapshot, resume, move, ``count``, acks) is the query path of
every view (querying.py). A subscription shares the aggregation of identical views, or makes one
by one pass over the topic; a one-shot ``sow`` reads a shared aggregation's groups when there is
one, and otherwise groups computed over the filtered records for it alone and dropped.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from ..aggregate.building import GroupBuild
from ..aggregate.parse import Spec, parse_aggregation
from ..aggregate.view import (
    Aggregation,
    BuiltGroups,
    GroupTopic,
    Share,
    share_of,
    shared_aggregation,
    usable_index,
)
from ..errors import INVALID_OPTIONS, CommandError
from ..filters import Filter
from ..filters.entitlement import Entitlement
from ..filters.functions import EvalContext
from ..protocol.commands import Query
from ..session.held import admit_server_groups
from ..session.quota import admit_aggregation_pass
from ..settings.unkept import no_sow
from ..sow.history import History

if TYPE_CHECKING:
    from ..broker.broker import Broker
    from ..fanout.subscription import Subscription
    from ..fanout.topic import Topic


def is_aggregated(subscription: Subscription | None) -> bool:
    """Whether ``subscription`` is an aggregated view's."""
    return subscription is not None and isinstance(subscription.topic_ref, GroupTopic)


def check_kind(body: Query, existing: Subscription | None) -> None:
    """Refuse (``invalid options``) grouping where there is no snapshot, and a ``replace``
    between an aggregated and a plain view of one ``sub_id``."""
    if body.aggregated and not body.snapshot:
        given = (("grouping", body.grouping), ("projection", body.projection))
        sent = [name for name, value in given if value is not None]
        raise CommandError(
            INVALID_OPTIONS,
            f"{' and '.join(sent)} {'are' if len(sent) > 1 else 'is'} for sow, sow_and_subscribe and "
            "sow_and_delta_subscribe",
        )
    if existing is not None and is_aggregated(existing) != body.aggregated:
        raise CommandError(
            INVALID_OPTIONS,
            f"replace keeps the kind of view: sub_id {existing.sub_id!r} is "
            + ("not aggregated" if body.aggregated else "aggregated"),
        )


def groups_for(
    broker: Broker,
    body: Query,
    source: Topic | None,
    filters: tuple[Filter, ...],
    entitlement: Entitlement,
    ctx: EvalContext,
) -> tuple[GroupTopic, Aggregation | None]:
    """The topic of groups ``body`` reads, and the aggregation when it was made for this command
    (None: a shared one): a failed command releases it. Making one that reads the records (a
    table of its own, or inputs a shared table lacks) is one pass over ``source``, charged here."""
    if source is None or not source.is_sow:
        raise no_sow(body.topic, broker.kept.unkept(body.topic))
    spec = spec_of(body)
    share = share_of(spec, filters, entitlement, ctx)
    shared = shared_aggregation(source, share)
    if shared is not None:
        return shared.topic, None
    live = body.subscribe
    index = usable_index(source, spec, filters, entitlement, ctx, live)
    if index is None or index.table.missing(spec):  # a new table, or inputs to add: a pass
        admit_aggregation_pass(body.filter, spec, len(source.records))
    # Its groups made by a pass in slices before the command ran (preparing.py), unless a table
    # to use came meanwhile (then that one is used, as it would have been).
    built = prepared_groups(source, share) if index is None else None
    made = make_aggregation(broker, source, share, spec, (filters, entitlement, ctx), live, built)
    return made.topic, made


def spec_of(body: Query) -> Spec:
    """The aggregation an aggregated query asks for: its ``grouping`` and ``projection``."""
    return parse_aggregation(
        list(body.grouping) if body.grouping is not None else None,
        list(body.projection) if body.projection is not None else None,
    )


def make_aggregation(
    broker: Broker,
    source: Topic,
    share: Share,
    spec: Spec,
    gates: tuple[tuple[Filter, ...], Entitlement, EvalContext],
    live: bool,
    built: BuiltGroups | None,
) -> Aggregation:
    """A new aggregation of ``spec`` over ``source`` through ``gates`` (its filters, its user's
    entitlement, the caller), its groups weighed before they are written (``built``: made by a
    pass in slices; else made now); a live one keeps a history when its source does."""
    filters, entitlement, ctx = gates
    history = group_history(broker, source) if live else None
    admit = partial(admit_server_groups, broker.topics.values(), source, spec)
    return Aggregation(
        source, share, spec, filters, entitlement, ctx, broker.tx_frames, live, history, built, admit
    )


def prepared_groups(source: Topic, share: Share) -> BuiltGroups | None:
    """The groups of aggregation ``share`` that a pass in slices made for this command, if any;
    refused as that pass was when it counted them (then it wrote none)."""
    prepared = source.take_prepared(share)
    if not isinstance(prepared, GroupBuild):
        return None
    if prepared.refusal is not None:
        raise prepared.refusal
    return prepared.built


def group_history(broker: Broker, source: Topic) -> History | None:
    """The history a new aggregation's topic of groups keeps (when its source keeps one): every
    change from now on, so a view resumes from any bookmark it was sent while the aggregation
    lived; a bookmark from before gets the groups in full (``resumed: false``)."""
    if source.sow.history is None:
        return None
    settings = broker.config.server
    return History(
        settings.resume_history_changes,
        settings.resume_history_s,
        settings.resume_history_bytes,
        broker.changes.applied_position(source.name),
    )
