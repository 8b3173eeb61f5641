"""The ``Host`` and ``Origin`` rules (core/settings/server_names.py) read from an ASGI scope, and the HTTP
routes' refusal (docs/protocol.md, "Who may connect").

Every HTTP route but ``/healthz`` is held to the ``Host`` rule: a page that DNS rebinding points
at the server could otherwise read ``/topics``, ``/metrics`` or ``/status.json`` as its own.
``/healthz`` is left open because load balancers probe it with whatever ``Host`` they like (or
none), and it tells nothing.
"""

from __future__ import annotations

import logging
import time

from starlette.responses import PlainTextResponse
from starlette.types import Receive, Scope, Send

from ..core.settings.server_names import ServerNames

log = logging.getLogger("server.asgi")

OPEN_PATHS = frozenset({"/healthz"})
_WARN_EVERY_S = 60.0


def host_headers(scope: Scope) -> list[str]:
    """The values of the request's ``Host`` headers (normally one)."""
    return [value.decode("latin-1") for name, value in scope["headers"] if name == b"host"]


def origin_header(scope: Scope) -> str | None:
    for name, value in scope["headers"]:
        if name == b"origin":
            return str(value.decode("latin-1"))
    return None


def local_address(scope: Scope) -> tuple[str, int] | None:
    """The address the connection arrived on (uvicorn: the socket's own name)."""
    server = scope.get("server")
    if not server or server[1] is None:
        return None
    return str(server[0]), int(server[1])


def secure(scope: Scope) -> bool:
    return scope.get("scheme") in ("https", "wss")


class HttpHostRefusal:
    """Answers HTTP requests whose ``Host`` is not one of the server's names with 403, and logs
    a warning at most once a minute (a misconfigured proxy sends every request so)."""

    def __init__(self, names: ServerNames) -> None:
        self.names = names
        self.refused = 0
        self._warned_at = float("-inf")

    def refuses(self, scope: Scope, path: str) -> bool:
        if path in OPEN_PATHS:
            return False
        return not self.names.host_allowed(host_headers(scope), local_address(scope), secure(scope))

    async def answer(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.refused += 1
        now = time.monotonic()
        if now - self._warned_at >= _WARN_EVERY_S:
            self._warned_at = now
            client = scope.get("client")
            log.warning(
                "refused an HTTP request from %s for Host %.200r: not one of the server's names; "
                "add it to [server] server_names (%d refused so far)",
                client[0] if client else "an unknown address",
                ", ".join(host_headers(scope)),
                self.refused,
            )
        response = PlainTextResponse(
            "unknown host name: add it to [server] server_names to serve it\n", status_code=403
        )
        await response(scope, receive, send)
