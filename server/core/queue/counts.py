"""``count`` messages in one socket's queue (docs/protocol.md, Viewports).

A subscription with the option ``count`` is told the size of its view whenever it changes. A
burst of changes must not become a burst of counts: at most one count per subscription is queued
at any time. A new number takes its subscription out of the message queued before (which then
speaks for the others it named, or renders nothing) and goes in a new one at the end of the
queue, behind the change that made it. So a frame carries at most one count per subscription,
the latest, and never one older than the records before it; conflation and relief leave the
entry where it is (it holds no record) and it renders what is latest when the writer takes it,
again if a frame was cut right before it (snapshots.Rerendered).

Subscriptions of one socket whose numbers are equal share one message through ``sids``, as they
share ``p`` messages.
"""

from __future__ import annotations

from typing import Any

import orjson

from .reader import Reader
from .snapshots import Rerendered


class CountMessage(Rerendered):
    """One queued count message: the subscriptions it still speaks for, and their numbers. The
    outbox drains it as a stream of one message, rendered when the writer takes it."""

    __slots__ = ("_given", "numbers", "topic_json")

    def __init__(self, topic_json: bytes, numbers: dict[Reader, int]) -> None:
        self.topic_json = topic_json
        self.numbers = numbers
        self._given = False

    def __next__(self) -> bytes:
        rendered = None if self._given else self.render()
        self._given = True
        if rendered is None:
            raise StopIteration
        return rendered

    def again(self) -> bytes | None:
        return self.render()

    def render(self) -> bytes | None:
        """The messages, comma-joined (they are written into an array frame as they are); None
        when every subscription it named has a newer one queued, or was dropped."""
        groups: dict[int, list[Reader]] = {}
        for sub, number in self.numbers.items():
            if not sub.dropped:
                groups.setdefault(number, []).append(sub)
        if not groups:
            return None
        return b",".join(
            count_message(self.topic_json, [sub.sub_id for sub in sorted(subs, key=_order)], number)
            for number, subs in groups.items()
        )


def _order(sub: Reader) -> int:
    return sub.order


def count_message(topic_json: bytes, sids: list[Any], matches: int) -> bytes:
    return b'{"c":"count","t":' + topic_json + b',"sids":' + orjson.dumps(sids) + b',"matches":%d}' % matches


# Each subscription notes the count message it is queued in (``Reader.count_queued``): the note
# ends with the subscription, and no table of the socket's has to be told that it ended.


def withdraw(sub: Reader) -> None:
    """Take ``sub`` out of the message it is queued in: a newer number is on its way."""
    queued: CountMessage | None = sub.count_queued
    if queued is not None:
        queued.numbers.pop(sub, None)
        sub.count_queued = None


def queue_counts(topic_json: bytes, numbers: dict[Reader, int]) -> CountMessage:
    """A new message for ``numbers``, each subscription withdrawn from its older one."""
    for sub in numbers:
        withdraw(sub)
    queued = CountMessage(topic_json, dict(numbers))
    for sub in numbers:
        sub.count_queued = queued
    return queued
