"""One client connection as the core sees it: who it is, its subscriptions, its outbox."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .outbox import Outbox
from .run import FanOutRun

if TYPE_CHECKING:
    from .config import UserConfig
    from .subscription import Subscription

CLOSE_SLOW_CONSUMER = 4001
CLOSE_NAME_IN_USE = 4002
CLOSE_POLICY = 1008


class Session:
    def __init__(self, session_id: int, outbox: Outbox, wake: Callable[[], None], run: FanOutRun) -> None:
        self.id = session_id
        self.run = run
        self.outbox = outbox
        self._wake = wake
        self.client_name: str | None = None
        self.user_id: str | None = None
        self.user: UserConfig | None = None
        self.logged_on = False
        self.subscriptions: dict[Any, Subscription] = {}
        self.close_code: int | None = None
        self.close_reason = ""

    def __repr__(self) -> str:
        return f"Session({self.id}, client_name={self.client_name!r})"

    def _end_run(self) -> None:
        topic = self.run.topic
        if topic is not None and topic.defers_to(self):
            self.run.flush()

    def send(self, message: bytes) -> None:
        self._end_run()
        queued = self.outbox.push(message)
        if queued > 1:
            return
        self.after_push(queued)

    def send_pair(self, head: bytes, body: bytes) -> None:
        """Send the message ``head`` + ``,`` + ``body`` (see ``wire.head``)."""
        self._end_run()
        queued = self.outbox.push_pair(head, body)
        if queued > 1:
            return
        self.after_push(queued)

    def after_push(self, queued: int) -> None:
        """Act on what ``Outbox.push`` returned when it was not the common case (more than one queued)."""
        if queued == 1:
            self._wake()  # the writer sleeps only when the outbox is empty
            return
        outbox = self.outbox
        if self.close_code is None:
            self.request_close(
                CLOSE_SLOW_CONSUMER,
                f"slow consumer: outbound queue full ({outbox.queued_messages} messages, "
                f"{outbox.queued_bytes} bytes)",
            )

    def send_stream(self, stream: Any) -> None:
        if self.close_code is None:
            self._end_run()
            self.outbox.push_stream(stream)
            self._wake()

    def request_close(self, code: int, reason: str) -> None:
        """Ask the runtime to close this socket; nothing more is queued for it."""
        if self.close_code is None:
            self.close_code = code
            self.close_reason = reason
            if code == CLOSE_SLOW_CONSUMER:
                self.outbox.close()
        self._wake()
