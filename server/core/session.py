"""One client connection as the core sees it: who it is, its subscriptions, its outbox."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .outbox import Outbox

if TYPE_CHECKING:
    from .config import UserConfig
    from .subscription import Subscription

CLOSE_SLOW_CONSUMER = 4001
CLOSE_NAME_IN_USE = 4002
CLOSE_POLICY = 1008


class Session:
    def __init__(self, session_id: int, outbox: Outbox, wake: Callable[[], None]) -> None:
        self.id = session_id
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

    def send(self, message: bytes) -> None:
        if self.close_code is not None:
            return
        if not self.outbox.push(message):
            outbox = self.outbox
            self.request_close(
                CLOSE_SLOW_CONSUMER,
                f"slow consumer: outbound queue full ({outbox.queued_messages} messages, "
                f"{outbox.queued_bytes} bytes)",
            )
            return
        self._wake()

    def send_stream(self, stream: Any) -> None:
        if self.close_code is None:
            self.outbox.push_stream(stream)
            self._wake()

    def request_close(self, code: int, reason: str) -> None:
        """Ask the runtime to close this socket; nothing more is queued for it."""
        if self.close_code is None:
            self.close_code = code
            self.close_reason = reason
            if code == CLOSE_SLOW_CONSUMER:
                self.outbox.clear()
        self._wake()
