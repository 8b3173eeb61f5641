"""Following views from Python (docs/protocol.md; the JavaScript client's views, for a risk engine or
a notebook):

    subscriber = Subscriber("ws://127.0.0.1:8000/ws")
    await subscriber.connect()
    view = subscriber.subscribe("orders", filter="/qty > 10")
    await view.ready()                        # the snapshot is in view.records (SowKey -> record)
    async for change in view:                 # then every change: snapshot, insert, update, oof
        print(change.kind, change.key, change.record)

``subscriber.viewport(topic, rows=(0, 99), orderby=...)`` follows a window of a sorted view (its
rows in ``view.rows``, the view's size in ``view.count``); ``subscriber.aggregate(topic,
grouping=[...], projection=[...])`` follows an aggregated view's groups. ``view.frame()`` is the
view as a pandas DataFrame, when pandas is installed.

A reader slower than the stream gets, per record, the net change since it last looked (as the
JavaScript client's ``for await``), never a backlog. After the connection is lost the subscriber
connects again with jittered backoff and subscribes every open view again. A ``subscribe`` view
resumes from the newest bookmark it received (docs/protocol.md, Resuming a view): the server sends
only what changed meanwhile, and ``view.resumed`` is true. Otherwise (a viewport, an aggregated
view, or a server that cannot resume) the fresh snapshot is the view, and records it no longer
holds leave with an ``oof`` of reason ``stale``. A refused view raises ``SubscriptionError`` from
``ready()`` and from its iteration.

A view of a topic the server does not keep (a typo: ``subscribe("ordrs")``) is plain pub/sub: the
server says so, and ``ready()`` (or the first step of its iteration) warns once with the server's
words, an ``UnconfiguredTopicWarning`` (``view.warning`` holds them too)::

    UnconfiguredTopicWarning: unconfigured topic: 'ordrs' is not a configured topic of this
    server, so it is plain pub/sub (...); did you mean 'orders'? (configured: orders)
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import itertools
import warnings
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import orjson
import websockets

from .connection import Logon, connect_again, logged_on, named, read_until_closed


class SubscriptionError(Exception):
    """The server refused a view, or it ended: ``reason`` in the server's words."""

    def __init__(self, topic: str, reason: str) -> None:
        self.topic = topic
        self.reason = reason
        super().__init__(f"{topic}: {reason}")


class UnconfiguredTopicWarning(UserWarning):
    """A view of a topic the server does not keep: plain pub/sub, no records (docs/protocol.md,
    Topics the server does not keep). ``warnings.simplefilter("error", UnconfiguredTopicWarning)``
    makes ``ready()`` raise it instead."""


@dataclass(frozen=True, slots=True)
class Change:
    key: str
    record: Any
    kind: str  # "snapshot", "insert", "update" or "oof"
    reason: str | None = None  # an oof's: "match", "deleted", "expired", "entitlement", "stale"


class View:
    """One view the subscriber follows: its records, and (a viewport) their order and the view's size."""

    def __init__(self, subscriber: Subscriber, topic: str, command: dict[str, Any]) -> None:
        self.subscriber = subscriber
        self.topic = topic
        self.sub_id: str = command["sub_id"]
        self.command = command
        self.records: dict[str, Any] = {}
        # A viewport's rows in order, by key (messages carry their place: the option positions).
        self.ordered = "positions" in str(command.get("o", "")).split(",")
        self.keys: list[str] = []
        self.count: int | None = None  # a viewport's whole view's size, when the server counts
        self.error: SubscriptionError | None = None
        # The server's words when the topic is not one it keeps (a typo), and whether the reader
        # was warned: once per view, where the reader's code waits (ready(), or its iteration).
        self.warning: str | None = None
        self.did_you_mean: list[str] = []
        self._warned = False
        # Resuming (the resume option): the newest bookmark received, and whether the last
        # snapshot was the net change since the one before (None until a reconnect).
        self.resumable = "resume" in str(command.get("o", "")).split(",")
        self.bookmark: str | None = None
        self.resumed: bool | None = None
        self._ready = asyncio.Event()
        self._collecting: dict[str, Any] | None = None
        self._window: list[tuple[int, str]] = []
        self._waiting: dict[str, Change] = {}  # per key, the net change the reader has not taken
        self._wake = asyncio.Event()
        self._closed = False

    @property
    def rows(self) -> list[Any]:
        """A viewport's records in the view's order (first to last row of its window); another
        view's records as they came."""
        if not self.ordered:
            return list(self.records.values())
        return [self.records[key] for key in self.keys if key in self.records]

    async def ready(self) -> None:
        """Until the first snapshot is in; ``SubscriptionError`` when the server refused the view."""
        await self._ready.wait()
        if self.error is not None:
            raise self.error
        self._warn()

    def _warn(self) -> None:
        if self.warning is not None and not self._warned:
            self._warned = True
            # stacklevel: the line of the reader's code that awaited (ready(), or the async for).
            warnings.warn(self.warning, UnconfiguredTopicWarning, stacklevel=3)

    def _noted_warning(self, message: dict[str, Any]) -> None:
        """A processed ack or ``group_end`` that says the topic is not one the server keeps."""
        warning = message.get("warning")
        if isinstance(warning, str) and self.warning is None:
            self.warning = warning
            self.did_you_mean = [str(name) for name in message.get("did_you_mean", [])]

    def frame(self) -> Any:
        """The records as a pandas DataFrame (one row each, in the view's order), indexed by key."""
        try:
            pandas: Any = importlib.import_module("pandas")  # optional: only this method needs it
        except ImportError as error:
            raise ImportError("view.frame() needs pandas: pip install pandas") from error
        keys = [key for key in self.keys if key in self.records] if self.ordered else list(self.records)
        return pandas.DataFrame([self.records[key] for key in keys], index=pandas.Index(keys, name="key"))

    async def close(self) -> None:
        """Stop following it (the server unsubscribes it); its iteration ends."""
        self._closed = True
        self._wake.set()
        await self.subscriber._unsubscribe(self)

    def __aiter__(self) -> AsyncIterator[Change]:
        """A reader of the view's changes, from the records held now (as "snapshot" changes): one
        reader at a time per view (a new one starts again from the records)."""
        self._waiting = {key: Change(key, record, "snapshot") for key, record in self.records.items()}
        return self._changes()

    async def _changes(self) -> AsyncIterator[Change]:
        while True:
            while not self._waiting:
                if self.error is not None:
                    raise self.error
                if self._closed:
                    return
                self._wake.clear()
                await self._wake.wait()
            self._warn()  # (the server's ack, which says it, came before any change)
            key = next(iter(self._waiting))
            yield self._waiting.pop(key)

    # -- the server's messages --------------------------------------------------------------

    def _note(self, change: Change) -> None:
        """Queue a change for the reader, folded into the one waiting for its key (changes.js's rules)."""
        waiting = self._waiting.get(change.key)
        if waiting is None:
            self._waiting[change.key] = change
        elif waiting.kind in ("snapshot", "insert"):
            if change.kind == "oof":
                del self._waiting[change.key]  # the reader never saw it
            else:
                self._waiting[change.key] = Change(change.key, change.record, waiting.kind)
        else:
            kind = "oof" if change.kind == "oof" else "update"
            self._waiting[change.key] = Change(change.key, change.record, kind, change.reason)
        self._wake.set()

    def resubscription(self) -> dict[str, Any]:
        """The command that follows this view on a new connection: from its bookmark, when it
        resumes and has one."""
        if self.resumable and self.bookmark is not None:
            return {**self.command, "bm": self.bookmark}
        return self.command

    def _handle(self, message: dict[str, Any]) -> None:
        c = message.get("c")
        if self.resumable and c in ("group_end", "p", "oof") and "bm" in message:
            # (A snapshot record's is its version's LSN: not a point to resume from.)
            self.bookmark = str(message["bm"])
        if c == "group_end":
            self._noted_warning(message)
        if c == "group_begin":
            self._collecting, self._window = {}, []
        elif c == "sow" and self._collecting is not None:
            key = str(message.get("k"))
            self._collecting[key] = message.get("data")
            self._window.append((int(message.get("pos", len(self._window) + 1)), key))
        elif c == "group_end" and self._collecting is not None:
            fresh, self._collecting = self._collecting, None
            net = bool(message.get("resumed"))  # only what changed since the bookmark was sent
            if "resumed" in message:
                self.resumed = net
            for key, record in list(self.records.items()):
                if key not in fresh and not net:  # gone while the connection was down
                    del self.records[key]
                    self._note(Change(key, record, "oof", "stale"))
            for key, record in fresh.items():
                held = key in self.records
                kind = "snapshot" if not self._ready.is_set() else "update" if held else "insert"
                if self.records.get(key) != record or kind == "snapshot":
                    self.records[key] = record
                    self._note(Change(key, record, kind))
            if self.ordered:
                self.keys = [key for _, key in sorted(self._window)]
            if "matches" in message:
                self.count = int(message["matches"])
            self._ready.set()
        elif c == "p":
            key = str(message.get("k"))
            kind = "update" if key in self.records else "insert"
            self.records[key] = message.get("data")
            if self.ordered and "pos" in message:
                with contextlib.suppress(ValueError):
                    self.keys.remove(key)
                self.keys.insert(int(message["pos"]) - 1, key)
            self._note(Change(key, self.records[key], kind))
        elif c == "oof":
            key = str(message.get("k"))
            self.records.pop(key, None)
            with contextlib.suppress(ValueError):
                self.keys.remove(key)
            self._note(Change(key, message.get("data"), "oof", message.get("reason")))
        elif c == "count":
            self.count = int(message["matches"])
        elif c == "unsubscribed":
            self._fail(str(message.get("reason")))

    def _fail(self, reason: str) -> None:
        self.error = SubscriptionError(self.topic, reason)
        self._ready.set()
        self._wake.set()


class Subscriber:
    def __init__(
        self,
        url: str,
        *,
        client_name: str | None = None,
        user_id: str | None = None,
        password: str | None = None,
        label: str | None = None,
        reconnect: bool = True,
    ) -> None:
        self.url = url
        self.identity = Logon(client_name, user_id, password, label)
        self.reconnect = reconnect
        self.views: dict[str, View] = {}
        self._ids = itertools.count(1)
        self._sending: set[asyncio.Task[None]] = set()  # commands on their way (kept from collection)
        self._ws: websockets.ClientConnection | None = None
        self._reader: asyncio.Task[None] | None = None
        self._closing = False

    async def connect(self) -> None:
        await self._open()
        self._reader = asyncio.create_task(self._read(), name="subscriber")

    def subscribe(self, topic: str, *, filter: str | None = None, options: str = "") -> View:
        """A view of ``topic``'s records that match ``filter``: its snapshot, then every change
        (resumed after a lost connection from the newest bookmark it received)."""
        return self._view(topic, {"filter": filter}, ",".join(_present(["resume", options])))

    def viewport(
        self,
        topic: str,
        *,
        rows: tuple[int, int] = (0, 99),
        orderby: str | None = None,
        filter: str | None = None,
        options: str = "",
    ) -> View:
        """Rows ``first..last`` (0-based, inclusive) of ``topic``'s view sorted by ``orderby``."""
        first, last = rows
        fields = {"filter": filter, "orderby": orderby, "skip_n": first, "top_n": last - first + 1}
        return self._view(topic, fields, ",".join(_present(["positions", "count", options])))

    def aggregate(
        self,
        topic: str,
        *,
        grouping: list[str],
        projection: list[str],
        filter: str | None = None,
        orderby: str | None = None,
        options: str = "",
    ) -> View:
        """The groups of an aggregated view (docs/protocol.md, Aggregated views), keyed by the server."""
        fields = {"grouping": grouping, "projection": projection, "filter": filter, "orderby": orderby}
        return self._view(topic, fields, options)

    async def close(self) -> None:
        self._closing = True
        if self._ws is not None:
            await self._ws.close()
        if self._reader is not None:
            await asyncio.wait([self._reader])  # (its end; a cancellation of close() itself goes on)
        for view in self.views.values():
            view._closed = True
            view._wake.set()

    # -- the connection -----------------------------------------------------------------------

    def _view(self, topic: str, fields: dict[str, Any], options: str) -> View:
        sub_id = f"py{next(self._ids)}"
        command: dict[str, Any] = {"c": "sow_and_subscribe", "t": topic, "sub_id": sub_id, "cid": sub_id}
        command.update({name: value for name, value in fields.items() if value is not None})
        command["o"] = ",".join(_present(["oof", options]))
        view = self.views[sub_id] = View(self, topic, command)
        task = asyncio.get_running_loop().create_task(self._send(command))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)
        return view

    async def _send(self, command: dict[str, Any]) -> None:
        ws = self._ws
        if ws is not None:
            with contextlib.suppress(websockets.ConnectionClosed):
                await ws.send(orjson.dumps(command).decode())  # a lost one is sent again on reconnect

    async def _unsubscribe(self, view: View) -> None:
        self.views.pop(view.sub_id, None)
        await self._send({"c": "unsubscribe", "sub_id": view.sub_id})

    async def _open(self) -> None:
        self._ws, _ = await logged_on(self.url, self.identity, lambda why: SubscriptionError("logon", why))
        for view in list(self.views.values()):  # every open view, again
            await self._send(view.resubscription())

    async def _read(self) -> None:
        while not self._closing:
            assert self._ws is not None
            why = await read_until_closed(self._ws, self._handle)
            if self._closing:
                return  # (close() ends every view's reading cleanly)
            if not self.reconnect:
                for view in self.views.values():
                    view._fail("the connection closed")
                return
            await connect_again(
                self._open, lambda: self._closing, named("subscriber", self.identity, self.url), why
            )

    async def _handle(self, message: dict[str, Any]) -> None:
        if message.get("c") == "ack":
            view = self.views.get(str(message.get("cid")))
            if view is not None and message.get("status") == "failure":
                self.views.pop(view.sub_id, None)
                view._fail(str(message.get("reason")))
            elif view is not None:
                view._noted_warning(message)
            return
        sid = message.get("query_id") or message.get("sub_id")
        targets = [sid] if sid is not None else message.get("sids", [])
        for target in targets:
            view = self.views.get(str(target))
            if view is not None:
                view._handle(message)


def _present(items: list[str]) -> list[str]:
    """The options given (an empty one left out)."""
    return [item for item in items if item]
