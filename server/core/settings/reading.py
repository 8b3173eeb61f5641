"""Reading the values of a parsed TOML table: each problem a ``ConfigError`` naming its key."""

from __future__ import annotations

from difflib import get_close_matches
from typing import Any

from ..errors import ConfigError
from ..protocol.durations import parse_duration


def table_of(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: expected a table")
    return value


def no_unknown(table: dict[str, Any], known: set[str], where: str) -> None:
    """Every key of ``table`` that is not ``known``, in one error, each with the known key it
    is most likely a typo of (``server.prot: unknown key (did you mean port?)``)."""
    prefix = f"{where}." if where else ""
    unknown = []
    for name in table:
        if name not in known:
            close = get_close_matches(str(name), sorted(known), n=1, cutoff=0.6)
            unknown.append(f"{prefix}{name}: unknown key" + (f" (did you mean {close[0]}?)" if close else ""))
    if unknown:
        raise ConfigError("; ".join(unknown), unknown)


def typed(table: dict[str, Any], name: str, kind: type | tuple[type, ...], where: str, default: Any) -> Any:
    if name not in table:
        return default
    value = table[name]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, bool) and bool not in kinds:
        value = None  # TOML true is not a number here
    if not isinstance(value, kinds):
        names = " or ".join(k.__name__ for k in kinds)
        raise ConfigError(f"{where}.{name}: expected {names}, got {table[name]!r}")
    return value


def duration(table: dict[str, Any], name: str, default: float, where: str = "server") -> float:
    text = typed(table, name, str, where, None)
    if text is None:
        return default
    try:
        return parse_duration(text)
    except ValueError as error:
        raise ConfigError(f"{where}.{name}: {error}") from None
