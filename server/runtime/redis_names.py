"""Client names across a cluster (docs/protocol.md, Cluster): one name, one connection, whichever
node it is on.

A logon with a client name claims it in Redis (``redis_script.CLAIM``) before the logon
completes; the claim announces the new holder on a channel, and the node holding the name before
closes that socket (4002), as one server would. Each node keeps a liveness key with a short
lifetime, refreshed while it runs: a holder on a node whose key has expired (the node died)
counts for nothing, so no name stays locked by a node that is gone.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from redis.exceptions import RedisError

from ..core.broker.changelog import NameClaim
from ..core.errors import NAME_IN_USE, UNAVAILABLE, CommandError
from ..core.handlers import logons
from ..core.log.replica import Replica
from .pump import Pump
from .redis_script import CLAIM, RELEASE

log = logging.getLogger("server.cluster")

LIVENESS_S = 10.0  # a node whose key is this old is gone
REFRESH_S = 3.0
RETRY_S = 0.5


class RedisNames:
    def __init__(self, redis: Any, replica: Replica, prefix: str, pump: Pump) -> None:
        self.redis = redis
        self.replica = replica
        self.pump = pump
        self.broker = replica.broker
        self.shared = replica.shared
        self.prefix = prefix
        self.channel = f"{prefix}:names:taken"
        self._claim = redis.register_script(CLAIM)
        self._release = redis.register_script(RELEASE)
        self._sending: list[tuple[str, str]] = []  # releases in the round trip under way

    def _keys(self) -> list[str]:
        return [f"{self.prefix}:names", f"{self.prefix}:owners", f"{self.prefix}:seqs"]

    async def queue(self, pipe: Any) -> list[NameClaim]:
        """Put every waiting claim and release into ``pipe``; the claims, in order."""
        shared = self.shared
        claims = list(shared.claims)
        shared.claims.clear()
        releases, shared.releases = shared.releases, []
        self._sending = releases
        auth = "1" if self.broker.config.users is not None else "0"
        for claim in claims:
            name = claim.body.client_name
            args = [name, claim.holder, claim.body.user_id or "", auth, f"{self.prefix}:node:", self.channel]
            await self._claim(keys=self._keys(), args=args, client=pipe)
        for name, holder in releases:
            await self._release(keys=self._keys()[:1], args=[name, holder], client=pipe)
        return claims

    def answer(self, claims: list[NameClaim], answers: list[Any]) -> None:
        """Redis's answers to ``claims`` (an exception: it could not be reached)."""
        broker = self.broker
        for claim, answer in zip(claims, answers, strict=False):
            refusal = None
            if isinstance(answer, Exception):
                refusal = CommandError(UNAVAILABLE, "the cluster could not be asked whose name it is")
            elif answer[0] == b"ok":
                name = claim.body.client_name
                assert name is not None
                broker.accept_sequence(name, int(answer[1]))
            else:
                who = "another user" if answer[0] == b"in use" else "its owner"
                refusal = CommandError(NAME_IN_USE, f"client name is held by {who} elsewhere in the cluster")
            self.shared.claimed(claim)
            logons.claimed(broker, claim, refusal)

    def refuse(self, claims: list[NameClaim], error: Exception) -> None:
        """The round trip failed: the claims are refused, and released in case Redis ran them;
        the releases go again."""
        self.shared.releases[:0] = self._sending
        for claim in claims:
            name = claim.body.client_name
            if name is not None:
                self.shared.releases.append((name, claim.holder))
        self.answer(claims, [error] * len(claims))

    async def listen(self) -> None:
        """Close the local socket of every name another socket of the cluster has claimed."""
        while True:
            pubsub = self.redis.pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(self.channel)
                while True:
                    message = await pubsub.get_message(timeout=1.0)
                    if message is not None and message.get("type") == "message":
                        name, _, holder = message["data"].decode().partition("\n")
                        self.replica.taken_elsewhere(name, holder)
                        self.pump()  # the socket closed here lets go of its name
            except (RedisError, OSError):
                await asyncio.sleep(RETRY_S)
            finally:
                await pubsub.aclose()

    async def live_nodes(self) -> list[str]:
        """The nodes whose liveness key has not expired (this one among them, while it can write);
        an empty list when Redis cannot be asked."""
        pattern = f"{self.prefix}:node:*"
        cut = len(pattern) - 1
        try:
            return sorted(
                [key.decode()[cut:] async for key in self.redis.scan_iter(match=pattern, count=100)]
            )
        except (RedisError, OSError) as error:
            log.debug("could not list the cluster's nodes: %s", error)
            return []

    async def keep_alive(self) -> None:
        key = f"{self.prefix}:node:{self.shared.node}"
        while True:
            try:
                await self.redis.set(key, "1", px=int(LIVENESS_S * 1000))
            except (RedisError, OSError) as error:
                log.debug("could not refresh this node's liveness key: %s", error)
            await asyncio.sleep(REFRESH_S)
