"""Who may read ``/topics`` and ``/metrics`` (docs/protocol.md, "Who may connect").

Header decoding and HTTP answers only; the decisions are in core/session/access.py. A refusal is raised
as Starlette's ``HTTPException`` and answered as plain text with its status and headers.
"""

from __future__ import annotations

import base64
import binascii

from starlette.exceptions import HTTPException
from starlette.requests import Request

from ..core.errors import CommandError
from ..core.session.access import (
    BLOCK_S,
    TOO_MANY_ATTEMPTS,
    MetricsAccess,
    authenticate,
    count_failure,
    metrics_access,
)
from ..core.settings.config import UserConfig
from ..runtime.hub import Hub

BASIC_CHALLENGE = {"WWW-Authenticate": 'Basic realm="sowpush", charset="UTF-8"'}
BEARER_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="sowpush metrics"'}


def basic_credentials(header: str | None) -> tuple[str, str] | None:
    """``(user_id, password)`` from ``Authorization: Basic ...``; None when absent or malformed."""
    scheme, _, value = (header or "").partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(value.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    user_id, colon, password = decoded.partition(":")
    return (user_id, password) if colon else None


def bearer_token(header: str | None) -> str | None:
    scheme, _, value = (header or "").partition(" ")
    token = value.strip()
    return token if scheme.lower() == "bearer" and token else None


def _address(request: Request) -> str | None:
    return request.client.host if request.client is not None else None


def _too_many_attempts() -> HTTPException:
    return HTTPException(429, f"auth failure: {TOO_MANY_ATTEMPTS}", {"Retry-After": str(int(BLOCK_S))})


def topics_reader(request: Request, hub: Hub) -> UserConfig | None:
    """The user ``/topics`` answers to: None without ``[auth]``; with it, the configured user whose
    HTTP Basic credentials came with the request (checked and throttled like a logon)."""
    users = hub.config.users
    if users is None:
        return None
    broker = hub.engine.broker
    address, now = _address(request), broker.clock()
    credentials = basic_credentials(request.headers.get("authorization"))
    if credentials is None:
        if broker.logon_throttle.blocked(address, now):
            raise _too_many_attempts()
        raise HTTPException(401, "auth failure: credentials required", BASIC_CHALLENGE)
    try:
        return authenticate(users, broker.logon_throttle, *credentials, address, now)
    except CommandError as error:
        if error.detail == TOO_MANY_ATTEMPTS:
            raise _too_many_attempts() from None
        raise HTTPException(401, error.reason, BASIC_CHALLENGE) from None


def check_metrics(request: Request, hub: Hub) -> None:
    """``/metrics``: the ``metrics_token`` when one is set (wrong tokens are throttled like wrong
    passwords); otherwise, under ``[auth]``, a loopback client."""
    settings, broker = hub.config.server, hub.engine.broker
    address, now = _address(request), broker.clock()
    if settings.metrics_token is not None and broker.logon_throttle.blocked(address, now):
        raise _too_many_attempts()
    given = bearer_token(request.headers.get("authorization"))
    verdict = metrics_access(hub.config.users is not None, settings.metrics_token, given, address)
    if verdict is MetricsAccess.TOKEN_REQUIRED:
        if given is not None:
            count_failure(broker.logon_throttle, address, now)
        raise HTTPException(401, "auth failure: metrics token required", BEARER_CHALLENGE)
    if verdict is MetricsAccess.FORBIDDEN:
        raise HTTPException(403, "metrics are served to this host only unless metrics_token is set")
