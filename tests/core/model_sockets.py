"""The plumbing of the engine model test (test_engine_model.py): its sockets, each with the view it
rebuilds from what it receives, and how the machine drives the engine and judges a 4001 close."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis.stateful import RuleBasedStateMachine

from server.core.session.session import CLOSE_SLOW_CONSUMER

from .engine_model import KEYS, TOPICS, Model, Sub
from .harness import Harness, Peer
from .model_views import ClientViews, UnexpectedClose

CONFLATED = ("conflate", "always")


class Client:
    """One socket: its peer, what it rebuilt, and whether it reads. It is its session's port:
    the runtime's side of the socket, as the core sees it."""

    def __init__(self, name: str, user: str, h: Harness, conflation: bool) -> None:
        self.name = name
        self.user = user
        self.peer: Peer = h.peer(port=self)
        self.conflation = conflation  # logon option conflation=on/off
        self.subs: dict[str, Sub] = {}  # every subscription it ever had, by sid (the newest)
        self.views = ClientViews(name, self.subs.get)
        self.stalled = False
        self.closed = False
        self.commands_since_empty = 0
        self.transactions_since_empty = 0  # with conflation=off, a block is never conflated
        self.written: list[dict[str, Any]] = []  # taken by try_write, not yet read

    def wake(self) -> None:
        """The writer would run: this model reads when its rules say (``read``)."""

    def try_write(self) -> None:
        """The runtime writes what is queued when a push does not fit, if the socket takes it."""
        if not self.stalled:
            self.written.extend(self.peer.take())

    def read(self) -> None:
        messages, self.written = [*self.written, *self.peer.take()], []
        self.commands_since_empty = self.transactions_since_empty = 0
        self.views.receive(messages)


class EngineSockets(RuleBasedStateMachine):
    h: Harness
    publisher: Client

    def __init__(self) -> None:
        super().__init__()
        self.model = Model()
        self.clients: list[Client] = []  # the subscribers
        self.sockets: list[Client] = []  # and the publisher
        self.topics: list[str] = []
        self.counter = 0  # versions (v), command ids and sub ids
        self.max_messages = 0

    def next(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def _logon(self, name: str, user: str, conflation: bool) -> Client:
        client = Client(name, user, self.h, conflation)
        self.sockets.append(client)
        command: dict[str, Any] = {"c": "logon", "cid": self.next("l"), "user_id": user, "pw": "pw"}
        if not conflation:
            command["o"] = "conflation=off"
        self._send(client, [command])
        return client

    # -- driving the engine --------------------------------------------------------------

    def _send(self, client: Client, commands: list[dict[str, Any]], sid: str | None = None) -> None:
        for command in commands:
            client.views.sent(command["cid"], command["c"], sid)
        client.commands_since_empty += 1
        frame = commands[0] if len(commands) == 1 else commands
        self.h.engine.receive(client.peer.session, orjson.dumps(frame))
        self._settle()

    def _settle(self, everyone: bool = False) -> None:
        """After each step: clients that read (``everyone``: all) take everything; closes are judged."""
        for client in list(self.sockets):
            if client.closed:
                continue
            code = client.peer.session.close_code
            if code is not None:
                self._closed(client, code)
                continue
            if everyone or not client.stalled:
                client.read()
            self._note_dropped(client)

    def _note_dropped(self, client: Client) -> None:
        for sid in client.views.dropped:
            sub = client.subs[sid]
            sub.dropped = True
            if sub in self.model.subs:
                self.model.unsubscribe(sub)
        client.views.dropped.clear()

    def _closed(self, client: Client, code: int) -> None:
        client.views.receive(client.written)  # what was written before the close
        client.written = []
        subs = self._subs_of(client)
        if code != CLOSE_SLOW_CONSUMER:
            raise UnexpectedClose(f"{client.name} closed with {code}")
        if self._may_close(client) is None:
            what = (
                f"{client.name} (conflation={'on' if client.conflation else 'off'}) closed with 4001 "
                f"although its queue of {self.max_messages} messages holds what its subscriptions "
                f"are owed after conflation: {[(s.sid, s.topic, s.options()) for s in subs]}"
            )
            if all(TOPICS[sub.topic]["conflation"] == "unsubscribe" for sub in subs):
                raise UnexpectedClose(f"{what}; the unsubscribe policy drops subscriptions instead")
            raise UnexpectedClose(what)
        client.closed = True
        self.h.broker.close_session(client.peer.session)
        for sub in subs:
            self.model.unsubscribe(sub)
        # The user connects again (a new socket, nothing subscribed), so the run goes on.
        index = self.clients.index(client)
        name = f"{client.name.partition('/')[0]}/{self.next('g')}"
        self.clients[index] = self._logon(name, client.user, client.conflation)

    def _may_close(self, client: Client) -> str | None:
        """Why a 4001 close is allowed (None: it is not). The queue was empty when the client last
        read; since then, with no command of its own, it queued only deliveries. After conflation a
        correct queue holds, on ``conflate``/``always`` topics, at most one message per record and
        subscription (docs/protocol.md, Conflation: net effect; we allow two: an OOF and the state
        after it), and one ``unsubscribed`` per subscription of an ``unsubscribe`` topic."""
        if client.commands_since_empty:
            return "its own commands' acks and snapshots are queued"
        subs = [sub for sub in self._subs_of(client) if not sub.dropped]
        policies = {TOPICS[sub.topic]["conflation"] for sub in subs}
        if client.transactions_since_empty and not client.conflation and policies != {"unsubscribe"}:
            # (An unsubscribe topic's messages in a block are dropped with their subscription.)
            return "conflation=off: a transaction's messages are queued whole"
        if "off" in policies:
            return "an off topic"
        if not client.conflation and policies & set(CONFLATED):
            return "conflation=off on a conflated topic"
        bound = 0
        # Transactions queued since merge into one block (queue/tx_merge.py), but an ``unsubscribed``
        # queued after it starts another: each has its two marks, and its message per record.
        blocks = 1
        if client.transactions_since_empty:
            blocks += sum(
                1 for sub in client.subs.values() if TOPICS[sub.topic]["conflation"] == "unsubscribe"
            )
            bound += 2 * blocks
        for topic in {sub.topic for sub in subs}:
            count = sum(1 for sub in subs if sub.topic == topic)
            if TOPICS[topic]["conflation"] == "unsubscribe":
                bound += count
            else:
                bound += 2 * len(KEYS) * count * blocks
        return f"up to {bound} messages after conflation" if bound > self.max_messages else None

    def _subs_of(self, client: Client) -> list[Sub]:
        return [sub for sub in self.model.subs if sub.client == client.name]

    def _client(self, index: int) -> Client | None:
        client = self.clients[index]
        return None if client.closed else client
