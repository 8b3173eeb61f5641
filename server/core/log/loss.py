"""How a cluster node tells that Redis lost the shared log (docs/protocol.md, Cluster), and what it says then.

A Redis without ``appendonly`` comes back empty after a restart, one restored from an old dump
comes back with streams that end before what the nodes applied, and ``FLUSHALL`` empties a live
one. The nodes that were running still hold the newer state; a node started afterwards would load
the older one, and the cluster would split without a word. So the cluster keeps one marker key,
its incarnation, and every node checks what it knows against Redis:

- the marker is ``live <token>`` while Redis holds the cluster's log. A node remembers the token
  it loaded under; the marker gone, or naming another token, means Redis is not the one it
  applied (the reader looks at it every quarter second, between reads of the streams).
- the entry a node applied last must still be in its topic's stream, unless a trim removed it
  (the trim's cut, recorded with it, is above it). Checked after every outage: a Redis restored
  from an old dump still has the marker.
- the marker is ``seeding <token>`` while the nodes that are up re-seed Redis from the newest
  state any of them holds (``runtime/redis_seeding.py``); nobody appends meanwhile.

Plain data and text only; the runtime does the asking.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..broker.changelog import stream_id

LIVE, SEEDING = "live", "seeding"


@dataclass(frozen=True, slots=True)
class Marker:
    """The cluster's incarnation, as the marker key holds it."""

    state: str  # LIVE or SEEDING
    token: str

    def encode(self) -> str:
        return f"{self.state} {self.token}"

    def live(self) -> Marker:
        """The incarnation a re-seed under this marker ends in (the same for every node)."""
        return Marker(LIVE, self.token)


def parse_marker(raw: bytes | str | None) -> Marker | None:
    """The marker Redis holds (None: no marker, or not one this code wrote)."""
    if raw is None:
        return None
    text = raw.decode() if isinstance(raw, bytes) else raw
    state, _, token = text.partition(" ")
    return Marker(state, token) if state in (LIVE, SEEDING) and token else None


@dataclass(frozen=True, slots=True)
class Loss:
    """What Redis no longer holds, as a person reads it."""

    what: str


def marker_loss(mine: Marker | None, found: Marker | None, key: str) -> Loss | None:
    """Whether the marker Redis holds says it is not the Redis this node loaded from."""
    if mine is None or found == mine:
        return None
    if found is None:
        return Loss(f"the cluster's marker key {key} is gone (Redis came back empty, or was flushed)")
    if found.state == SEEDING:
        return Loss(f"another node found it lost and is re-seeding it ({key} is {found.encode()!r})")
    return Loss(f"{key} names incarnation {found.token}, not {mine.token} that this node loaded")


def stream_loss(topic: str, position: int, present: bool, cut: int | None, tail: int | None) -> Loss | None:
    """Whether ``topic``'s stream lost the entry at ``position``, the last this node applied:
    it is ``present``, or a trim removed it (the recorded ``cut`` is above it), or it is lost.
    ``tail`` is the stream's last entry (None: the stream is empty or gone)."""
    if position == 0 or present or (cut is not None and cut > position):
        return None
    ends = "is empty or gone" if tail is None else f"ends at {stream_id(tail)}"
    return Loss(f"the stream of topic {topic!r} {ends} but this node applied it up to {stream_id(position)}")


def error_line(node: str, loss: Loss) -> str:
    """The one ERROR line a node logs when it finds Redis lost data: what, why, what happens now,
    and what prevents it."""
    return (
        f"Redis lost the cluster's shared log: {loss.what}. Redis restarted without appendonly, "
        f"was flushed, or was restored from an old dump. Node {node} refuses changes (/healthz 503) "
        "while the nodes that are up re-seed Redis from the newest state they hold, then reloads "
        "from it. Run Redis with appendonly yes and appendfsync always to keep the log"
    )
