"""Deferred fan-out for the fast lane: consecutive publishes to one topic share one push per socket.

A frame from a feed often holds hundreds of publishes to the same topic. Sockets in that
topic's fast lane (one stateless subscription) would get one message per publish, each pushed
on its own; instead the topic collects the run of shared bodies and, when the run ends, gives
each such socket all of them in one push. For an unfiltered subscription the interleaved
head/body list is built by slice assignment, in C.

Per-socket order stays exactly what it would be without batching, because a run ends:
- before anything else is pushed to a socket that is in the running topic's fast lane,
- before a publish to another topic (only one topic has a pending run at any time),
- before a subscription on the running topic is added, removed or replaced,
- at the end of every inbound frame.

Derived views (aggregations: aggregate/view.py) are deferred the same way, further: a change of
their source updates them at once but is written to their topics of groups when the unit of work
ends (``derive``: the end of an inbound frame, of a transaction, before a command that reads
them), so a group several changes touch is written, and sent, once, in the same frame as the
changes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..records.version import RecordVersion
    from .ports import Derived, PendingRun


class FanOutRun:
    """The one topic, if any, whose fast-lane deliveries are waiting to be pushed, and the record
    versions stored since the last flush, kept whole until every message about them is made."""

    __slots__ = ("fresh", "topic", "views")

    def __init__(self) -> None:
        self.topic: PendingRun | None = None
        self.fresh: list[RecordVersion] = []
        self.views: dict[Derived, None] = {}  # derived views with changes to write, in order

    def changed(self, view: Derived) -> None:
        """``view`` has changes to write at the end of the unit of work."""
        self.views[view] = None

    def derive(self) -> None:
        """Write every derived view's changes (each tells its subscribers: they join runs)."""
        views = self.views
        while views:
            view = next(iter(views))
            del views[view]
            view.flush()

    def join(self, topic: PendingRun) -> None:
        """``topic`` is about to defer deliveries: end any other topic's run first."""
        if self.topic is not topic:
            self.flush()
            self.topic = topic

    def stored(self, version: RecordVersion) -> None:
        """``version`` is in its SOW and its fan-out is done or in the pending run: compact it at
        the next flush (records/version.py)."""
        self.fresh.append(version)

    def flush(self) -> None:
        topic = self.topic
        if topic is not None:
            self.topic = None
            topic.flush_run()
        fresh = self.fresh
        if fresh:
            self.fresh = []
            for version in fresh:
                version.compact()
