"""A cluster node's writer: its proposals into the shared log, one pipeline per round trip.

Everything the engine proposed since the last round trip goes out as one pipeline of script calls
(``redis_script.py``), then the client name claims and releases; the answers go to
``core/log/replica.py``. A round trip that Redis does not answer leaves its proposals in doubt: the
reader settles them from the streams when Redis is back (``redis_log.py``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from redis.exceptions import RedisError

from ..core.broker.changelog import NameClaim, Proposal, lsn_of
from ..core.log.replica import Replica
from ..core.log.shared import CONFLICT, LOST, OK, SharedLog
from .pump import Pump
from .redis_names import RedisNames
from .redis_script import PROPOSE, propose_call
from .redis_seeding import Seeding

log = logging.getLogger("server.cluster")

BATCH = 500  # proposals per script call: Redis runs one call at a time, so keep each short


class Writer:
    def __init__(
        self,
        redis: Any,
        replica: Replica,
        names: RedisNames,
        seeding: Seeding,
        stream_key: Callable[[str], str],
        caught_up: Callable[[str, int], Awaitable[None]],
        pump: Pump,
    ) -> None:
        self.redis = redis
        self.replica = replica
        self.shared: SharedLog = replica.shared
        self.names = names
        self.seeding = seeding
        self.stream_key = stream_key
        self.caught_up = caught_up
        self._script = redis.register_script(PROPOSE)
        self.pump = pump  # wakes this writer when something waits for Redis; runs after answers
        # Sent when Redis went away, answer unknown: resolved from the streams when it is back.
        self.in_doubt: list[Proposal] = []
        self.retries: set[asyncio.Task[None]] = set()  # conflicted proposals waiting to be decided again

    async def run(self) -> None:
        shared, pump = self.shared, self.pump
        while True:
            await pump.proposals.wait()
            pump.proposals.clear()
            while shared.outgoing or shared.claims or shared.releases:
                await self._send(shared.take())
                pump()  # what Redis answered was fed to the core

    async def _send(self, proposals: list[Proposal]) -> None:
        """One round trip: the proposals, then the client name claims and releases."""
        replica = self.replica
        claims: list[NameClaim] = []
        try:
            async with self.redis.pipeline(transaction=False) as pipe:
                for start in range(0, len(proposals), BATCH):
                    batch = proposals[start : start + BATCH]
                    prefix, origin, marker = self.seeding.prefix, self.shared.origin, self.seeding.marker
                    keys, args = propose_call(prefix, self.stream_key, origin, batch, marker)
                    await self._script(keys=keys, args=args, client=pipe)
                claims = await self.names.queue(pipe)
                results: list[Any] = await pipe.execute(raise_on_error=False)
        except (RedisError, OSError) as error:
            self.shared.available = False
            log.error("lost Redis (%s): %d change(s) wait for it to answer again", error, len(proposals))
            self.in_doubt += proposals  # appended or not: the streams will tell
            self.names.refuse(claims, error)
            return
        batches = -(-len(proposals) // BATCH)
        self.names.answer(claims, results[batches:])
        answers: list[Any] = []
        for start, result in zip(range(0, len(proposals), BATCH), results[:batches], strict=True):
            count = min(BATCH, len(proposals) - start)
            answers += [result] * count if isinstance(result, Exception) else result
        for proposal, answer in zip(proposals, answers, strict=True):
            if isinstance(answer, Exception):
                log.error("the shared log refused a change to %r: %s", proposal.topic, answer)
                replica.refused(proposal, "the shared log refused the change")
                continue
            outcome = answer[0].decode()
            detail = answer[1].decode() if len(answer) > 1 else ""
            if outcome == LOST:  # Redis lost the log: nothing appended (the reader re-seeds it)
                self.shared.available = False
                replica.refused(proposal, "the cluster's shared log is being rebuilt; try again")
                continue
            appended = len(answer) - 1 if outcome == OK else 0
            replica.answered(proposal, outcome, detail, appended)
            if outcome == CONFLICT:
                task = asyncio.create_task(self._retry(proposal, lsn_of(detail)), name="cluster-retry")
                self.retries.add(task)
                task.add_done_callback(self.retries.discard)

    async def _retry(self, proposal: Proposal, lsn: int) -> None:
        await self.caught_up(proposal.topic, lsn)
        self.replica.retry(proposal)
        self.pump()
