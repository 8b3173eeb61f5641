"""Who may connect, and what the HTTP side shows to whom (docs/protocol.md, Who may connect).

Pure decisions: remote addresses, header values and the time come in as arguments.
- ``LogonThrottle`` and ``authenticate``: five failed logons from one address within a minute
  refuse every logon from it for a minute, right password or not.
- (Which ``Host`` and ``Origin`` a request may carry is decided in settings/server_names.py.)
- ``metrics_access`` and ``topic_listing``: ``/metrics`` and ``/topics`` under ``[auth]``.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

from ..errors import AUTH_FAILURE, CommandError
from ..settings.config import UserConfig

if TYPE_CHECKING:
    from ..fanout.topic import Topic

log = logging.getLogger("server.access")

MAX_FAILURES = 5
FAILURE_WINDOW_S = 60.0
BLOCK_S = 60.0
MAX_TRACKED_ADDRESSES = 10_000

TOO_MANY_ATTEMPTS = "too many attempts"
WRONG_CREDENTIALS = "unknown user or wrong password"


@dataclass(slots=True)
class _Failures:
    times: list[float] = field(default_factory=list)  # recent failures, oldest first
    blocked_until: float = 0.0


class LogonThrottle:
    """Failed logons per remote address (``None``: an address the runtime did not know).

    The table is ordered by last failure. Every record goes stale a fixed time after its last
    failure (the window, or the block it started), so the stale ones are always at the front and
    are dropped as new failures come in; beyond ``max_addresses`` the oldest go regardless, so an
    attacker with many addresses costs bounded memory."""

    def __init__(
        self,
        max_failures: int = MAX_FAILURES,
        window_s: float = FAILURE_WINDOW_S,
        block_s: float = BLOCK_S,
        max_addresses: int = MAX_TRACKED_ADDRESSES,
    ) -> None:
        self.max_failures = max_failures
        self.window_s = window_s
        self.block_s = block_s
        self.max_addresses = max_addresses
        self._table: dict[str | None, _Failures] = {}

    def __len__(self) -> int:
        return len(self._table)

    def blocked(self, address: str | None, now: float) -> bool:
        found = self._table.get(address)
        return found is not None and now < found.blocked_until

    def failed(self, address: str | None, now: float) -> bool:
        """Count a failed logon; True when it is the one that blocks the address."""
        self._prune(now)
        found = self._table.pop(address, None) or _Failures()
        found.times = [t for t in found.times if t > now - self.window_s]
        found.times.append(now)
        self._table[address] = found  # to the back: the most recent
        if len(found.times) < self.max_failures:
            return False
        # Attempts refused during the block are not counted: it ends a fixed time after it began.
        found.times.clear()
        found.blocked_until = now + self.block_s
        return True

    def _prune(self, now: float) -> None:
        table = self._table
        while table:
            address, oldest = next(iter(table.items()))
            last = oldest.times[-1] if oldest.times else float("-inf")
            stale = last <= now - self.window_s and oldest.blocked_until <= now
            if not stale and len(table) < self.max_addresses:
                return
            del table[address]


# Checked when the user is unknown, so that a wrong user id costs what a wrong password costs.
_NOBODY = UserConfig("", "\0", None, (), (), {})


def authenticate(
    users: Mapping[str, UserConfig],
    throttle: LogonThrottle,
    user_id: str | None,
    password: str | None,
    address: str | None,
    now: float,
) -> UserConfig:
    """The user these credentials name, or ``CommandError(auth failure)``; every failure counts
    against ``address``."""
    if throttle.blocked(address, now):
        raise CommandError(AUTH_FAILURE, TOO_MANY_ATTEMPTS)
    user = users.get(user_id or "")
    matches = (user or _NOBODY).check_password(password)
    if user is None or not matches:
        count_failure(throttle, address, now)
        raise CommandError(AUTH_FAILURE, WRONG_CREDENTIALS)
    return user


def count_failure(throttle: LogonThrottle, address: str | None, now: float) -> None:
    """Count wrong credentials from ``address``; the block they may start is logged, once."""
    if throttle.failed(address, now):
        log.warning(
            "%d failed logons from %s within %.0f s: refusing its logons for %.0f s",
            throttle.max_failures,
            address or "an unknown address",
            throttle.window_s,
            throttle.block_s,
        )


def secrets_equal(given: str, expected: str) -> bool:
    """Constant-time comparison of two strings (any characters)."""
    return hmac.compare_digest(_utf8(given), _utf8(expected))


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


# -- the HTTP side ------------------------------------------------------------------------


def is_loopback(address: str | None) -> bool:
    if address is None:
        return False
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


class MetricsAccess(Enum):
    ALLOW = "allow"
    TOKEN_REQUIRED = "token required"  # 401: no token or a wrong one
    FORBIDDEN = "forbidden"  # 403: not from this host


def metrics_access(
    auth_configured: bool, token: str | None, given_token: str | None, address: str | None
) -> MetricsAccess:
    """``/metrics``: a configured ``metrics_token`` is always required; without one, under
    ``[auth]`` only a scraper on this host (a loopback address) is answered."""
    if token is not None:
        if given_token is not None and secrets_equal(given_token, token):
            return MetricsAccess.ALLOW
        return MetricsAccess.TOKEN_REQUIRED
    if not auth_configured or is_loopback(address):
        return MetricsAccess.ALLOW
    return MetricsAccess.FORBIDDEN


def topic_listing(topics: Mapping[str, Topic], user: UserConfig | None) -> list[dict[str, Any]]:
    """The configured topics ``user`` may read (``None``: no ``[auth]``, every topic). A topic the
    user reads through an entitlement filter has no ``records`` count: it would count other
    users' rows."""
    listing: list[dict[str, Any]] = []
    for name, topic in topics.items():
        config = topic.config
        if config is None or (user is not None and not user.may_read(name)):
            continue
        entry: dict[str, Any] = {"name": name, "key": list(config.key), "durable": config.durable}
        if config.orders:
            entry["orders"] = list(config.orders)  # a view opened from the form starts in the first
        if user is None or not user.filters.get(name):
            entry["records"] = len(topic.records)
        listing.append(entry)
    return listing
