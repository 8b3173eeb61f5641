"""The one exception tree of the server.

``ServerError``
  ``CommandError``  a command is refused: it becomes a failure ack, the socket stays open.
    ``FilterError`` a filter, order-by or select list does not parse (carries the column).
  ``ConfigError``   the configuration is invalid: the process exits with a one-line reason.
  ``StartupError``  the server cannot start safely (a damaged transaction log): the same.

Reasons are the fixed words of the protocol (docs/protocol.md, Errors); detail may follow after a colon.
"""

from __future__ import annotations

from typing import Any

BAD_FILTER = "bad filter"
INVALID_TOPIC = "invalid topic"
INVALID_OPTIONS = "invalid options"
INVALID_ORDER_BY = "invalid order by"
NOT_ENTITLED = "not entitled"
AUTH_FAILURE = "auth failure"
LOGON_REQUIRED = "logon required"
SUBID_IN_USE = "subid in use"
NO_TOPIC = "no topic"
BAD_MESSAGE = "bad message"
NAME_IN_USE = "name in use"
UNAVAILABLE = "unavailable"  # a cluster node cannot reach the shared log (docs/protocol.md, Cluster)


class ServerError(Exception):
    """Root of every error the server raises on purpose."""


class CommandError(ServerError):
    """A command that is refused; ``reason`` is what the failure ack carries, with ``fields``
    besides (a topic the server does not keep: the names close to it)."""

    def __init__(self, code: str, detail: str = "", fields: dict[str, Any] | None = None) -> None:
        self.code = code
        self.detail = detail
        self.fields = fields or {}
        super().__init__(self.reason)

    @property
    def reason(self) -> str:
        return f"{self.code}: {self.detail}" if self.detail else self.code


class FilterError(CommandError):
    """A filter expression that does not compile; ``column`` is 1-based."""

    def __init__(self, message: str, column: int, code: str = BAD_FILTER) -> None:
        self.column = column
        self.message = message
        super().__init__(code, f"{message} at column {column}")


class ConfigError(ServerError):
    """An invalid configuration; the message is the one line the process prints. ``problems`` are
    the problems it says, one string each (the message joins several), so that whoever counts
    them counts the list it says (settings/problems.py)."""

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.problems: list[str] = list(problems) if problems else [message]


class StartupError(ServerError):
    """The server will not start as asked (its data needs an operator); the message is the one line
    the process prints."""
