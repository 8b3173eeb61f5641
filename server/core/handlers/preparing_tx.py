"""A transaction's deletes by filter, read in slices before it runs (preparing.py).

A ``tx`` is decided and applied in one step (transactions.py): each of its deletes by filter
evaluated its filter on every record of its topic there, so one transaction of a few deletes by
filter over 200,000 records held every other socket for as long as those passes took (up to the
transaction's budget, about half a second to a second). Now one pass per topic reads, in slices,
the records that any of the transaction's filters on that topic passes (the candidates), as a
``sow_delete``'s pass does; in its step the transaction takes them as the records are then, and
each delete by filter evaluates its own filter on those candidates only, as the transaction's
earlier commands left them (a record an earlier command wrote is read from what it wrote, as
before). A record no filter passes is no candidate and no delete deletes it, so the transaction
decides what it would have decided whole. Its budget (session/tx_work.py, ``TransactionWork``) still
counts every record of the topic for each delete by filter: what it accepts or refuses does not
depend on whether a pass found its records first (a cluster's transaction decided again is decided
whole).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..fanout.passes import Selection
from ..filters import Filter, compile_filter
from ..filters.functions import EvalContext
from ..limits import RECORD_UNITS, SLICED_PASS_UNITS
from ..protocol.commands import SowDelete, Transaction
from ..session.quota import pass_units
from ..session.tx_work import TransactionWork
from .preparation import Preparation, Several
from .publishing import is_duplicate

if TYPE_CHECKING:
    from ..broker.broker import Broker
    from ..fanout.topic import Topic
    from ..session.session import Session


def filters_by_topic(body: Transaction) -> dict[str, tuple[str, ...]]:
    """The filters of the transaction's deletes by filter, per topic, in the order they come."""
    found: dict[str, list[str]] = {}
    for command in body.commands:
        if isinstance(command, SowDelete) and command.filter is not None:
            found.setdefault(command.topic, []).append(command.filter)
    return {topic: tuple(texts) for topic, texts in found.items()}


def candidates_share(texts: tuple[str, ...], ctx: EvalContext) -> tuple[Any, ...]:
    """Which transaction's pass found a topic's candidates: its filters there, and the caller its
    filters may name (USER(), CLIENT_NAME())."""
    return ("tx", texts, ctx.user, ctx.client_name)


def prepare_transaction(broker: Broker, session: Session, body: Transaction) -> Preparation | None:
    """The passes in slices over the topics the transaction deletes from by filter, or None when
    it makes none worth slicing or would be refused whatever they found."""
    by_topic = filters_by_topic(body)
    if not by_topic or is_duplicate(broker, session, body.seq):
        return None
    for command in body.commands:
        session.check_write(command.topic)  # (refused when it runs, in its own words)
    # Refused whatever its deletes find: no pass (a refusal costs nothing to make). Admitted, its
    # deletes' passes together cost no more than its budget, each its filter's charge.
    if TransactionWork.doomed_at(body.commands, broker.topics) is not None:
        return None
    passes: list[tuple[Topic, Selection]] = []
    work = 0
    for name, texts in by_topic.items():
        topic = broker.topics.get(name)
        if topic is None or topic.key_spec is None:
            return None  # refused when it runs
        records = len(topic.records)
        costs = sum(pass_units(text, None, False) for text in texts)
        compiled = [compile_filter(text) for text in texts]
        if any(match.reads_clock for match in compiled):
            return None  # which records pass is a matter of when: decided whole, when it runs
        ctx = session.entitlement(name, broker.clock).ctx  # (USER() is the deleting session's)
        units = RECORD_UNITS + costs
        work += units * records
        share = candidates_share(texts, ctx)
        passes.append((topic, Selection(share, topic.sow, _any_of(compiled, ctx), None, units)))
    if work < SLICED_PASS_UNITS:
        for _, selection in passes:
            selection.close()
        return None
    if len(passes) == 1:
        return Preparation(*passes[0])
    return Preparation(passes[0][0], Several(passes))


def _any_of(compiled: list[Filter], ctx: EvalContext) -> Callable[[Any], bool]:
    if len(compiled) == 1:
        only = compiled[0].matches
        return lambda data: only(data, ctx)
    return lambda data: any(match.matches(data, ctx) for match in compiled)


def take_candidates(broker: Broker, session: Session, body: Transaction) -> dict[str, dict[str, Any]]:
    """Per topic, the candidates its pass in slices found, as the records are now (key -> data,
    in the records' order): for the topics whose pass is this transaction's; the others are read
    whole."""
    taken: dict[str, dict[str, Any]] = {}
    for name, texts in filters_by_topic(body).items():
        topic = broker.topics.get(name)
        share = candidates_share(texts, session.entitlement(name, broker.clock).ctx)
        prepared = topic.take_prepared(share) if topic is not None else None
        if not isinstance(prepared, Selection):
            continue
        _, versions, _ = prepared.finish(0, None)
        taken[name] = {version.key: version.data for version in versions}
    return taken
