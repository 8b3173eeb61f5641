"""A transaction's budget: the work its one step does, counted before each command is decided
(handlers/transactions.py; docs/protocol.md, Transactions)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ..errors import BAD_MESSAGE, CommandError
from ..limits import PUBLISH_UNITS, RECORD_UNITS, TX_WORK_BUDGET
from ..protocol.commands import Publish, SowDelete
from .quota import pass_units, subscription_cost

if TYPE_CHECKING:
    from ..fanout.topic import Topic


class TransactionWork:
    """The work a transaction does in its one step, counted before it is done.

    A ``tx`` is decided and applied in one step that other sockets cannot interleave with (each
    command sees the records as the earlier ones left them, and no subscriber may see part of it),
    so its cost, not its count, is bounded: 600 deletes by filter over a topic of 20,000 records
    held every other socket for 6 s, and 10,000 publishes to a topic whose subscriptions carry
    costly filters held them 12 s, while the same commands outside a transaction ran in slices.
    Units are the filter budget's (filters/cost.py, about 100-220 ns each): deciding a command
    reads the records it names (``RECORD_UNITS`` each; a delete by filter reads every record of
    its topic and evaluates its filter on each), and each change it makes then goes to every
    subscription of its topic (a unit each, plus the cost of its filter where no index skips it)
    and to every aggregation it feeds (its gates and projections: 200 aggregations of 64 fields
    made a transaction of 300 publishes 14 to 27 s)."""

    __slots__ = ("_fan_out", "spent")

    def __init__(self) -> None:
        self.spent = 0
        self._fan_out: dict[str, int] = {}  # per topic: the units one change costs its subscriptions

    def charge(self, command: Publish | SowDelete, topic: Topic | None, pending: int) -> None:
        """Count the work of deciding ``command`` (``pending``: the changes the transaction holds
        so far), or refuse (``bad message``) the transaction when it passes ``TX_WORK_BUDGET``."""
        if isinstance(command, SowDelete) and command.filter is not None:
            examined = (len(topic.records) if topic is not None else 0) + pending
            self._spend(examined * (RECORD_UNITS + pass_units(command.filter, None, False)))
        elif isinstance(command, SowDelete) and command.sow_keys is not None:
            self._spend(len(command.sow_keys) * RECORD_UNITS)
        else:
            self._spend(PUBLISH_UNITS)

    @classmethod
    def doomed_at(cls, commands: Sequence[Publish | SowDelete], topics: Mapping[str, Topic]) -> int | None:
        """The command at which the transaction passes the budget even at its least (no change of
        its own pending, no delivery counted), or None. A transaction that is doomed from the
        start is still checked command by command (the first bad one is named), but without the
        passes its deletes by filter would make: a refusal must not cost the work it refuses (five
        refused transactions of 600 deletes by filter each spent the whole budget, a second of
        everyone's time, before being refused)."""
        least = cls()
        for index, command in enumerate(commands):
            try:
                least.charge(command, topics.get(command.topic), 0)
            except CommandError:
                return index
        return None

    def changed(self, topic: Topic | None, changes: int) -> None:
        """Count the delivery of ``changes`` changes to ``topic``'s subscriptions."""
        if topic is None or not changes:
            return
        per_change = self._fan_out.get(topic.name)
        if per_change is None:
            per_change = self._fan_out[topic.name] = sum(
                1 + subscription_cost(sub) for subs in topic.subscribers.values() for sub in subs
            ) + sum(derived.change_cost() for derived in topic.derived.values())
        self._spend(changes * per_change)

    def _spend(self, units: int) -> None:
        self.spent += units
        if self.spent > TX_WORK_BUDGET:
            raise over_budget()


def over_budget() -> CommandError:
    return CommandError(
        BAD_MESSAGE,
        f"this transaction would do more than {TX_WORK_BUDGET} units of work in one step "
        "(records read, filters evaluated, deliveries to its topics' subscriptions): "
        "split it into smaller transactions",
    )
