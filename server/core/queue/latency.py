"""Latency histograms: how long changes take to reach sockets and the disk, per topic.

A ``Histogram`` counts observations in fixed buckets (Prometheus' ``le`` upper bounds, in
seconds), so observing costs one bisect and two additions and nothing grows with traffic. The
metrics endpoint reports them as they are; ``quantile`` estimates a percentile from the buckets
for people (the status page, the log), as Prometheus' ``histogram_quantile`` does.

Labels stay bounded: one histogram per topic and kind, never one per socket or subscription.
"""

from __future__ import annotations

from bisect import bisect_left

# From half a millisecond (a frame written in the same slice as its change) to a minute (a socket
# conflated behind a long hidden interval, or a disk that stalls).
BUCKETS: tuple[float, ...] = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
)


class Histogram:
    __slots__ = ("counts", "sum")

    def __init__(self) -> None:
        self.counts = [0] * (len(BUCKETS) + 1)  # the last: above every bound (+Inf)
        self.sum = 0.0

    def observe(self, seconds: float, count: int = 1) -> None:
        """``count`` observations of ``seconds`` (clamped at 0: clocks of two nodes may differ)."""
        seconds = max(seconds, 0.0)
        self.counts[bisect_left(BUCKETS, seconds)] += count
        self.sum += seconds * count

    @property
    def count(self) -> int:
        return sum(self.counts)

    def cumulative(self) -> list[tuple[float, int]]:
        """(upper bound, observations at or below it), the last bound ``inf``."""
        total = 0
        result: list[tuple[float, int]] = []
        for bound, count in zip((*BUCKETS, float("inf")), self.counts, strict=True):
            total += count
            result.append((bound, total))
        return result

    def since(self, earlier: list[int]) -> Histogram:
        """The observations made after ``earlier`` (a copy of ``counts``) was taken; the sum is
        this histogram's whole sum (quantiles need only the counts)."""
        recent = Histogram()
        recent.counts = [now - then for now, then in zip(self.counts, earlier, strict=True)]
        recent.sum = self.sum
        return recent

    def quantile(self, q: float) -> float | None:
        """The ``q`` quantile (0..1), interpolated within its bucket; None with no observations.
        Past the last finite bound it is that bound: the histogram knows no more."""
        total = self.count
        if total == 0:
            return None
        rank = q * total
        seen = 0
        lower = 0.0
        for bound, count in zip(BUCKETS, self.counts, strict=False):
            if count and seen + count >= rank:
                return lower + (bound - lower) * max(0.0, rank - seen) / count
            seen += count
            lower = bound
        return BUCKETS[-1]


class TopicLatency:
    """What one topic measures: change to frame written, and change to persisted."""

    __slots__ = ("persisted", "written")

    def __init__(self) -> None:
        self.written = Histogram()  # a change's `ts` to its message's frame handed to the socket
        self.persisted = Histogram()  # a durable change's `ts` to its log write being synced
