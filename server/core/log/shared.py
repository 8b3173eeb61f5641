"""The shared log of a cluster (docs/protocol.md, Cluster): what a node proposes, and what comes back.

With ``[cluster]`` a node does not apply the changes its commands make. It proposes them: the
runtime appends each proposal to its topic's stream in Redis with one atomic script that also
decides what only the cluster as a whole can decide (is this publisher sequence new, is the
record still the version this delta was merged into, has another node expired it already). Every
node, the proposer included, applies every stream entry in stream order (``replica.py``), so the
same log gives the same SOW on every node. A proposal's acks go out when its own node has
applied it.

What a proposal holds, and how stream IDs become LSNs: broker/changelog.py. Everything here is
plain data; the runtime (``runtime/redis_log.py``) does the I/O. It never calls out: after every
call into the core the runtime looks at what waits here (``outgoing``, ``claims``,
``releases``: for Redis; ``settled``: sockets whose changes in flight are all answered) and wakes
the task that deals with it (runtime/pump.py).
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

from ..broker.changelog import NameClaim, Proposal
from ..errors import BAD_MESSAGE, UNAVAILABLE, CommandError

if TYPE_CHECKING:
    from ..session.session import Session

# What the Redis script answers besides the appended IDs.
# LOST: Redis does not hold the marker the node loaded under (loss.py); nothing appended.
OK, DUPLICATE, CONFLICT, GONE, LOST = "ok", "dup", "conflict", "gone", "lost"


class SharedLog:
    """A node's proposals in flight, and how far it has applied each stream. Built by the
    composition root before the engine, which it is given to (server/runtime/hub.py)."""

    plain_lane = None  # every change goes through Redis, a plain publish too

    def __init__(self, node: str) -> None:
        self.node = node  # tells this node's entries from the others' (for acks; never for state)
        self.outgoing: deque[Proposal] = deque()
        self.pending: dict[int, Proposal] = {}
        self.positions: dict[str, int] = {}  # stream -> the LSN applied up to
        self.available = False  # Redis reachable and the state loaded: changes are accepted
        self.in_flight: dict[Session, int] = {}  # proposals per socket not yet acked or refused
        # Of those, the ones decided against a record version: what follows them waits for them.
        self.guarded: dict[Session, int] = {}
        self.settled: list[Session] = []  # sockets with nothing in flight now, for the runtime
        self.conflicts = 0  # proposals decided again (another node changed the record first)
        self.applied = 0  # stream entries applied
        self.claims: deque[NameClaim] = deque()
        self.releases: list[tuple[str, str]] = []  # (client name, holder) of sockets gone
        self._tokens = 0

    def origin(self, token: int) -> str:
        return f"{self.node}:{token}"

    def own_token(self, origin: str) -> int | None:
        node, _, token = origin.rpartition(":")
        return int(token) if node == self.node and token.isdigit() else None

    def check_available(self) -> None:
        if not self.available:  # docs/protocol.md, Cluster: refused, nothing half-applied
            raise CommandError(UNAVAILABLE, "this node cannot reach the cluster's shared log; try again")

    def propose(self, proposal: Proposal) -> None:
        if proposal.token == 0:
            self._tokens += 1
            proposal.token = self._tokens
            session = proposal.session
            if session is not None:
                _count(self.in_flight, session, 1)
                if proposal.guarded:
                    _count(self.guarded, session, 1)
        self.outgoing.append(proposal)

    def transaction_stream(self, streams: list[str]) -> str:
        """A cluster's transaction is one entry of one topic's stream: its commands share a topic
        (or are all on plain topics)."""
        for index, stream in enumerate(streams):
            if stream != streams[0]:
                raise CommandError(
                    BAD_MESSAGE, f"cmds[{index}]: a transaction in a cluster changes the records of one topic"
                )
        return streams[0]

    def holder(self, session: Session) -> str:
        return f"{self.node} {session.id}"

    def claim_name(self, claim: NameClaim) -> bool:
        """The name becomes the socket's once Redis says it is (one name, one connection in the
        whole cluster: docs/protocol.md, Cluster)."""
        claim.holder = self.holder(claim.session)
        _count(self.in_flight, claim.session, 1)
        _count(self.guarded, claim.session, 1)  # what follows waits for the name
        self.claims.append(claim)
        return True

    def claimed(self, claim: NameClaim) -> None:
        """Redis answered the claim (either way)."""
        _count(self.guarded, claim.session, -1)
        self._one_less(claim.session)

    def release_name(self, name: str, session: Session) -> None:
        """The socket holding ``name`` is gone: the name is free in the cluster (if still its)."""
        self.releases.append((name, self.holder(session)))

    def log_owner(self, name: str, user_id: str) -> None:
        """Nothing to do: the claim recorded the owner in Redis."""

    def begin_run(self) -> None:
        """Nothing to do: a cluster's bookmarks are its streams' IDs, and each topic's history
        starts at its load."""

    def take(self) -> list[Proposal]:
        """Everything waiting to be sent, now registered as sent."""
        taken = list(self.outgoing)
        self.outgoing.clear()
        for proposal in taken:
            self.pending[proposal.token] = proposal
        return taken

    def settle(self, proposal: Proposal) -> None:
        """The proposal is acked or refused: its socket may have one command fewer in flight."""
        self.pending.pop(proposal.token, None)
        session = proposal.session
        if session is None:
            return
        if proposal.guarded:
            _count(self.guarded, session, -1)
        self._one_less(session)

    def _one_less(self, session: Session) -> None:
        if _count(self.in_flight, session, -1) == 0:
            self.settled.append(session)

    def position(self, stream: str) -> int:
        return self.positions.get(stream, 0)

    def log_position(self, topic: str) -> int:
        return self.position(topic)

    def applied_position(self, topic: str) -> int:
        return self.position(topic)  # a node applies its streams as it reads them

    def now_position(self) -> int:
        # Stream entries are numbered by time across every stream (stream_id), so the highest
        # position of any stream is after every change this node has applied.
        return max(self.positions.values(), default=0)

    def not_in_log(self, topic: str, lsn: int) -> str | None:
        """Why a bookmark naming ``lsn`` cannot be read on from (the runtime has brought this node
        up to the topic's stream's end first, so a bookmark of any node's is at or below it)."""
        if lsn > self.position(topic):
            return "no node of this cluster has issued it"
        return None


def _count(counts: dict[Session, int], session: Session, change: int) -> int:
    """Add ``change`` to the socket's count; the count now (a socket at 0 is left out)."""
    count = counts.get(session, 0) + change
    if count > 0:
        counts[session] = count
    else:
        counts.pop(session, None)
    return count
