"""The sink's connection: one WebSocket for the life of a query, logged on under the query's
client name, opened when the first micro-batch needs it and reused by every later one.

When the server goes away (a restart, a deploy, a node of a cluster leaving), the link connects
again with a growing pause and runs the interrupted work again from the start. That is safe because
every command carries a publisher sequence number: the logon's ``s`` says what the server already
has, what was sent but not acknowledged is sent again, and the server ignores what it has twice.
A piece of work fails only when the server stays out of reach for ``retry_s`` from its first
failure, or when the server refuses something (a refusal is an answer, not an outage).
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import orjson
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus
from websockets.sync.client import ClientConnection, connect

log = logging.getLogger("spark_feeds.sink")


class LibraryLines(logging.Filter):
    """What the websockets library logs of the link's connections, as one line and no stack trace.

    The synchronous client reads in a thread of its own. When the server goes away while the
    link's thread is sending (its send fails, and it closes the socket), that thread can end the
    protocol's stream just before the reading thread hands it the last bytes it read; the library
    then logs "unexpected internal error" with an ``EOFError: stream ended`` traceback. The
    connection is over either way, and the link says what happened in its own words (it
    reconnects, or fails the batch in one line): the library's record of the connection ending
    (an ``EOFError`` or ``OSError``) goes to DEBUG, anything else it logs loses its traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.exc_info:
            return True
        error = record.exc_info[1]
        said = f"{record.getMessage()}: {describe(error) if error is not None else 'no exception'}"
        record.exc_info, record.exc_text, record.stack_info = None, None, None
        if isinstance(error, EOFError | OSError):
            log.debug("websockets, at the end of a connection: %s", said)
            return False
        record.msg, record.args = said, None
        return True


# The library's logger for the link's connections (``connect(logger=...)``), filtered once.
LIBRARY_LOG = logging.getLogger("spark_feeds.websockets")
LIBRARY_LOG.addFilter(LibraryLines())

T = TypeVar("T")
FIRST_PAUSE_S = 0.25  # the pause before the first reconnect; it doubles up to MAX_PAUSE_S
MAX_PAUSE_S = 5.0
CLOSED = "the sink was closed (its query is stopping)"
# Close codes that say "come back later": going away (a restart), abnormal closure (no close
# frame: the process died), internal error, service restart, try again later, bad gateway.
TRANSIENT_CLOSE_CODES = frozenset({1001, 1006, 1011, 1012, 1013, 1014})


class FeedError(RuntimeError):
    """The server refused a row, or could not be reached for the link's retry time."""


class AckTimeout(Exception):
    """No acknowledgement within the link's ``timeout_s``: the server is taken for gone."""


Attempt = Callable[[ClientConnection, int], tuple[T, int]]


@dataclass
class Link:
    url: str
    client_name: str
    topic: str  # for the log lines
    user_id: str | None = None
    password: str | None = None
    timeout_s: float = 120.0
    retry_s: float = 300.0
    _ws: ClientConnection | None = field(default=None, init=False, repr=False)
    _known: int = field(default=0, init=False)  # the highest sequence the server is known to have
    _lost: tuple[float, str] | None = field(default=None, init=False)  # since when, and why
    _at_exit: bool = field(default=False, init=False)
    _closed: threading.Event = field(default_factory=threading.Event, init=False, repr=False)

    def run(self, attempt: Attempt[T]) -> T:
        """``attempt(ws, known)`` on the open connection, where ``known`` is the highest sequence
        the server has; it returns its result and the highest sequence it had acknowledged. When
        the connection is lost or cannot be opened, it runs again on a new one, for up to
        ``retry_s`` from the first failure; any other error closes the connection and is raised."""
        first_failure: float | None = None
        pause = FIRST_PAUSE_S
        while True:
            try:
                result, acknowledged = attempt(self._open(), self._known)
            except (OSError, ConnectionClosed, InvalidHandshake, AckTimeout) as error:
                self.discard()
                if self._closed.is_set():
                    raise FeedError(f"{self.topic}: {CLOSED}") from error
                permanent = refusal(error)
                if permanent is not None:
                    raise FeedError(f"{self.topic}: {permanent}") from error
                now = time.monotonic()
                first_failure = now if first_failure is None else first_failure
                if self._lost is None:
                    self._lost = (now, describe(error))
                if now - first_failure >= self.retry_s:
                    raise FeedError(
                        f"{self.topic}: gave up after {self.retry_s:g} s without the server at "
                        f"{self.url}: {describe(error)}"
                    ) from error
                self._closed.wait(min(pause, first_failure + self.retry_s - now))  # close() wakes it
                pause = min(pause * 2, MAX_PAUSE_S)
            except BaseException:
                self.discard()  # what the server has of the work is unknown: ask it on a new logon
                raise
            else:
                self._known = max(self._known, acknowledged)
                return result

    def _open(self) -> ClientConnection:
        if self._ws is not None:
            return self._ws
        if self._closed.is_set():
            raise FeedError(f"{self.topic}: {CLOSED}")
        # Entered as a context manager would be (websockets 17 warns on a bare connect()), and
        # closed by ``discard``: the connection outlives any one block.
        opening = connect(self.url, max_size=None, open_timeout=min(self.timeout_s, 10.0), logger=LIBRARY_LOG)
        ws = opening.__enter__()
        try:
            self._known = self._logon(ws)
        except BaseException:
            ws.close()
            raise
        self._ws = ws
        if self._closed.is_set():  # closed while this connection was being opened
            self.discard()
            raise FeedError(f"{self.topic}: {CLOSED}")
        if not self._at_exit:
            self._at_exit = True
            atexit.register(self.close)
        if self._lost is not None:
            since, why = self._lost
            self._lost = None
            log.warning(
                "%s: reconnected to %s after %.1f s (%s); the server has up to s=%d, the rest is sent again",
                self.topic,
                self.url,
                time.monotonic() - since,
                why,
                self._known,
            )
        return ws

    def _logon(self, ws: ClientConnection) -> int:
        logon: dict[str, Any] = {"c": "logon", "cid": "logon", "client_name": self.client_name}
        if self.user_id:
            logon["user_id"] = self.user_id
        if self.password:
            logon["pw"] = self.password
        ws.send(orjson.dumps(logon).decode())
        for message in self.messages(ws):
            if message.get("cid") == "logon":
                if message.get("status") != "success":
                    raise FeedError(f"{self.topic}: logon refused: {message.get('reason')}")
                return int(message.get("s", 0))
        raise AssertionError("unreachable: messages() never ends")

    def messages(self, ws: ClientConnection) -> Iterator[dict[str, Any]]:
        """The messages the server sends, one at a time; ``AckTimeout`` after ``timeout_s`` of
        silence."""
        while True:
            try:
                frame = ws.recv(timeout=self.timeout_s)
            except TimeoutError:
                raise AckTimeout(f"no acknowledgement within {self.timeout_s:g} s") from None
            decoded = orjson.loads(frame)
            yield from decoded if isinstance(decoded, list) else [decoded]

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    def discard(self) -> None:
        """Drop the connection (after a failure): the next ``run`` logs on again."""
        ws, self._ws = self._ws, None
        if ws is not None:
            ws.close()

    def close(self) -> None:
        """Close the connection for good, when the query is over or stopping (and at exit): work
        under way, even waiting for the server to come back, fails at once."""
        self._closed.set()
        self.discard()


def refusal(error: BaseException) -> str | None:
    """What makes ``error`` final (the server said no), or None for an outage worth retrying."""
    if isinstance(error, ConnectionClosed):
        close = error.rcvd
        if close is not None and close.code not in TRANSIENT_CLOSE_CODES:
            return f"the server closed the connection: {close.code} {close.reason}".rstrip()
    if isinstance(error, InvalidStatus) and error.response.status_code < 500:
        return f"the server refused the WebSocket: HTTP {error.response.status_code}"
    return None


def describe(error: BaseException) -> str:
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
