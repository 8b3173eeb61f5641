"""Client commands (docs/protocol.md, Commands), decoded and validated once at the edge into typed values.

The command types are plain slotted dataclasses, not frozen ones: a frozen dataclass costs a
microsecond more to build, and one is built for every publish.

Anything of the wrong type is ``bad message``; a missing topic is ``no topic``; bad options are
``invalid options``. Filters and order-by texts are compiled later, by the handler, so that
their errors carry their own reason. Names, ids and options are bounded here (limits.py): past
their limits a command is ``bad message: ... too long`` (``invalid options`` for ``o``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..errors import BAD_MESSAGE, NO_TOPIC, CommandError
from ..limits import (
    MAX_ACKS_LENGTH,
    MAX_BOOKMARK_LENGTH,
    MAX_INTEGER,
    MAX_NAME_LENGTH,
    MAX_PASSWORD_LENGTH,
    MAX_TX_COMMANDS,
    check_identifier,
    check_options_length,
    text_field,
)
from .options import Options, parse_options

NO_ACKS: frozenset[str] = frozenset()
ACK_KINDS = frozenset({"received", "processed", "persisted", "completed", "stats"})
QUERY_COMMANDS = {
    # command: (snapshot, subscribe, delta)
    "sow": (True, False, False),
    "subscribe": (False, True, False),
    "delta_subscribe": (False, True, True),
    "sow_and_subscribe": (True, True, False),
    "sow_and_delta_subscribe": (True, True, True),
}
PUBLISH_COMMANDS = ("publish", "delta_publish")
# The commands a transaction may hold (a set built once, not a tuple unpacked per command).
TRANSACTION_COMMANDS = frozenset((*PUBLISH_COMMANDS, "sow_delete"))
MAX_COMMAND_LENGTH = 32  # ``c``: the longest command is 23 characters


@dataclass(slots=True)
class Header:
    """What every command has: its type, its id and the acks it asked for."""

    c: str
    cid: Any
    acks: frozenset[str]

    def wants(self, kind: str) -> bool:
        return kind in self.acks

    @property
    def wants_processed(self) -> bool:
        return self.cid is not None or "processed" in self.acks


@dataclass(slots=True)
class Logon:
    client_name: str | None
    user_id: str | None
    password: str | None
    options: str | None
    label: str | None = None  # what the socket is, for people (a dashboard's user and tab, say)


@dataclass(slots=True)
class Publish:
    topic: str
    data: Any
    seq: int | None
    expiration_s: float | None
    delta: bool


@dataclass(slots=True)
class SowDelete:
    topic: str
    filter: str | None
    sow_keys: tuple[str, ...] | None
    data: Any
    seq: int | None


@dataclass(slots=True)
class Query:
    """``sow`` and the four subscribe commands."""

    topic: str
    filter: str | None
    options: Options
    sub_id: Any
    query_id: Any
    bookmark: str | None
    batch_size: int | None
    top_n: int | None
    skip_n: int | None
    orderby: str | None
    snapshot: bool
    subscribe: bool
    delta: bool
    # An aggregated view's (docs/protocol.md, Aggregated views): the command's fields, else the options'.
    grouping: tuple[str, ...] | None = None
    projection: tuple[str, ...] | None = None

    @property
    def aggregated(self) -> bool:
        return self.grouping is not None or self.projection is not None


@dataclass(slots=True)
class Unsubscribe:
    sub_ids: tuple[Any, ...] | None  # None: all


@dataclass(slots=True)
class Transaction:
    """``tx``: changes applied as one step (docs/protocol.md, Transactions)."""

    commands: list[Publish | SowDelete]
    seq: int | None


@dataclass(slots=True)
class Visibility:
    """Whether the socket's page is hidden (docs/protocol.md, Hidden views)."""

    hidden: bool


@dataclass(slots=True)
class Simple:
    """``heartbeat`` and ``flush``: nothing beyond the header."""


Body = Logon | Publish | SowDelete | Query | Unsubscribe | Transaction | Visibility | Simple


def _bad(detail: str) -> CommandError:
    return CommandError(BAD_MESSAGE, detail)


def _optional(raw: dict[str, Any], name: str, kind: type | tuple[type, ...]) -> Any:
    value = raw.get(name)
    if value is None:
        return None
    if isinstance(value, bool) and kind is not bool and (not isinstance(kind, tuple) or bool not in kind):
        raise _bad(f"{name} must be {_type_name(kind)}")
    if not isinstance(value, kind):
        raise _bad(f"{name} must be {_type_name(kind)}")
    return value


def _type_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {str: "a string", int: "an integer", float: "a number", bool: "a boolean", dict: "an object"}
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def _identifier(raw: dict[str, Any], name: str) -> Any:
    value = raw.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise _bad(f"{name} must be a string or an integer")
    check_identifier(name, value)
    return value


def valid_cid(raw: Any) -> Any:
    """The ``cid`` of a raw command when it may be echoed on a failure ack (None otherwise): a
    refused command must not be able to make the server send back megabytes."""
    cid = raw.get("cid") if isinstance(raw, dict) else None
    try:
        return _identifier(raw, "cid") if cid is not None else None
    except CommandError:
        return None


def _count(raw: dict[str, Any], name: str) -> int | None:
    value = _optional(raw, name, int)
    if value is not None and value < 0:
        raise _bad(f"{name} must not be negative")
    if value is not None and value > MAX_INTEGER:
        raise _bad(f"{name} too large (a signed 64-bit integer at most)")
    return value  # type: ignore[no-any-return]


def _topic(raw: dict[str, Any]) -> str:
    topic = raw.get("t")
    if topic is None or topic == "":
        raise CommandError(NO_TOPIC, "the command names no topic (t)")
    if not isinstance(topic, str):
        raise _bad("t must be a string")
    text_field(raw, "t", MAX_NAME_LENGTH)
    return topic


def decode_header(raw: Any) -> Header:
    if not isinstance(raw, dict):
        raise _bad("a command is a JSON object")
    c = raw.get("c")
    if not isinstance(c, str) or not c:
        raise _bad("a command needs c, a string")
    text_field(raw, "c", MAX_COMMAND_LENGTH)
    cid = raw.get("cid")
    if cid is not None:
        cid = _identifier(raw, "cid")
    if raw.get("a") is None:
        return Header(c, cid, NO_ACKS)
    text_field(raw, "a", MAX_ACKS_LENGTH)
    return Header(c, cid, _ack_set(_optional(raw, "a", str)))


@lru_cache(maxsize=256)
def _ack_set(text: str) -> frozenset[str]:
    acks = frozenset(part.strip() for part in text.split(",") if part.strip())
    unknown = acks - ACK_KINDS
    if unknown:
        raise _bad(f"unknown ack type {sorted(unknown)[0]!r}")
    return acks


def plain_publish(raw: Any) -> Publish | None:
    """``raw`` decoded when it is a plain publish, the shape of a feed's frames: ``c``, ``t``
    and ``data`` and nothing else (no cid, acks, sequence number or expiration); None otherwise.
    Decoded as ``decode_header`` and ``decode_body`` decode it, which a plain publish passes but
    for its topic, checked by the same ``_topic``."""
    if type(raw) is not dict or len(raw) != 3 or "t" not in raw or "data" not in raw:
        return None
    if raw.get("c") != "publish":
        return None
    return Publish(_topic(raw), raw["data"], None, None, False)


def decode_body(header: Header, raw: dict[str, Any]) -> Body:
    c = header.c
    if c in PUBLISH_COMMANDS:
        if "data" not in raw:
            raise _bad("publish needs data")
        expiration = _optional(raw, "e", (int, float))
        if expiration is not None and expiration < 0:
            raise _bad("e must not be negative")
        return Publish(_topic(raw), raw["data"], _count(raw, "s"), expiration, c == "delta_publish")
    if c in QUERY_COMMANDS:
        return _decode_query(header, raw)
    if c == "sow_delete":
        keys = raw.get("sow_keys")
        if isinstance(keys, str):
            keys = [part.strip() for part in keys.split(",") if part.strip()]
        if keys is not None and (not isinstance(keys, list) or not all(isinstance(k, str) for k in keys)):
            raise _bad("sow_keys must be a comma list of SowKeys")
        chosen = [name for name in ("filter", "sow_keys", "data") if raw.get(name) is not None]
        if len(chosen) != 1:
            raise _bad("sow_delete takes exactly one of filter, sow_keys and data")
        return SowDelete(
            _topic(raw),
            _optional(raw, "filter", str),
            tuple(keys) if keys is not None else None,
            raw.get("data"),
            _count(raw, "s"),
        )
    if c == "logon":
        text_field(raw, "client_name", MAX_NAME_LENGTH)
        text_field(raw, "user_id", MAX_NAME_LENGTH)
        text_field(raw, "pw", MAX_PASSWORD_LENGTH)
        text_field(raw, "label", MAX_NAME_LENGTH)
        _options_text(raw)
        return Logon(
            _optional(raw, "client_name", str),
            _optional(raw, "user_id", str),
            _optional(raw, "pw", str),
            _optional(raw, "o", str),
            _optional(raw, "label", str),
        )
    if c == "unsubscribe":
        sub_id = raw.get("sub_id")
        if sub_id is None or sub_id == "all":
            return Unsubscribe(None)
        if isinstance(sub_id, str):
            parts = tuple(part.strip() for part in sub_id.split(",") if part.strip())
            for part in parts:
                check_identifier("sub_id", part)
            return Unsubscribe(parts)
        if isinstance(sub_id, int) and not isinstance(sub_id, bool):
            check_identifier("sub_id", sub_id)
            return Unsubscribe((sub_id,))
        if isinstance(sub_id, list) and all(isinstance(s, (str, int)) for s in sub_id):
            for part in sub_id:
                check_identifier("sub_id", part)
            return Unsubscribe(tuple(sub_id))
        raise _bad("sub_id must be a string")
    if c in ("heartbeat", "flush"):
        return Simple()
    if c == "tx":
        return _decode_transaction(raw)
    if c == "visibility":
        hidden = raw.get("hidden")
        if type(hidden) is not bool:
            raise _bad("visibility needs hidden, a boolean")
        return Visibility(hidden)
    raise _bad(f"unknown command {c!r}")


def _decode_transaction(raw: dict[str, Any]) -> Transaction:
    """Every command of a transaction is decoded before any runs: the first that is not a
    publish, delta publish or sow_delete, or is malformed, refuses the whole transaction. The
    transaction's ``s`` numbers it; its commands' own ``cid``, ``a`` and ``s`` are not used."""
    commands = raw.get("cmds")
    if not isinstance(commands, list) or not commands:
        raise _bad("tx needs cmds, a non-empty array of commands")
    if len(commands) > MAX_TX_COMMANDS:
        raise _bad(f"a transaction holds at most {MAX_TX_COMMANDS} commands")
    seq = _count(raw, "s")
    decoded: list[Publish | SowDelete] = []
    for index, command in enumerate(commands):
        try:
            header = decode_header(command)
            if header.c not in TRANSACTION_COMMANDS:
                raise _bad(f"a transaction holds publish, delta_publish and sow_delete, not {header.c!r}")
            body = decode_body(header, {**command, "s": None})
        except CommandError as error:
            raise CommandError(error.code, f"cmds[{index}]: {error.detail}", error.fields) from None
        assert isinstance(body, (Publish, SowDelete))
        decoded.append(body)
    return Transaction(decoded, seq)


def _options_text(raw: dict[str, Any]) -> str | None:
    text: str | None = _optional(raw, "o", str)
    if text is not None:
        check_options_length(text)
    return text


def _decode_query(header: Header, raw: dict[str, Any]) -> Query:
    snapshot, subscribe, delta = QUERY_COMMANDS[header.c]
    options = parse_options(_options_text(raw))
    sub_id = _identifier(raw, "sub_id")
    if sub_id is None:
        sub_id = header.cid
    if subscribe and sub_id is None:
        raise _bad("a subscription needs a sub_id or a cid")
    query_id = _identifier(raw, "query_id")
    if query_id is None:
        query_id = sub_id if sub_id is not None else header.cid
    batch_size = _count(raw, "bs")
    if batch_size == 0:
        raise _bad("bs must be positive")
    top_n = _count(raw, "top_n")
    skip_n = _count(raw, "skip_n")
    bookmark = raw.get("bm")
    if bookmark is not None and not isinstance(bookmark, str):
        raise _bad("bm must be a string")
    text_field(raw, "bm", MAX_BOOKMARK_LENGTH)
    return Query(
        topic=_topic(raw),
        filter=_optional(raw, "filter", str),
        options=options,
        sub_id=sub_id,
        query_id=query_id,
        bookmark=bookmark,
        batch_size=batch_size,
        top_n=top_n if top_n is not None else options.top_n,
        skip_n=skip_n if skip_n is not None else options.skip_n,
        orderby=_optional(raw, "orderby", str),
        snapshot=snapshot,
        subscribe=subscribe,
        delta=delta,
        grouping=_strings(raw, "grouping", options.grouping),
        projection=_strings(raw, "projection", options.projection),
    )


def _strings(raw: dict[str, Any], name: str, given: tuple[str, ...] | None) -> tuple[str, ...] | None:
    """A command field that is an array of strings (``grouping``, ``projection``), or ``given``
    (what the options said) when the command has none."""
    value = raw.get(name)
    if value is None:
        return given
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise _bad(f"{name} must be an array of strings")
    return tuple(value)
