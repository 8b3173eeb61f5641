"""A ``[[topic]]`` table of the configuration (docs/protocol.md, Configuration)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import CommandError, ConfigError
from ..filters import parse_orderby
from ..limits import MAX_KEPT_ORDERS
from ..protocol.durations import parse_duration
from ..records.keys import KeySpec
from .functions import check_function
from .problems import Problems
from .reading import no_unknown, typed

CONFLATION_POLICIES = ("off", "conflate", "always", "unsubscribe")
CONFLATION_MODES = ("replace", "append")


@dataclass(frozen=True, slots=True)
class TopicConfig:
    name: str
    key: tuple[str, ...]
    durable: bool = False
    expiration_s: float | None = None
    conflation: str = "conflate"
    conflation_mode: str = "replace"
    conflation_merge: str | None = None
    conflation_match: str | None = None
    orders: tuple[str, ...] = ()  # orderby texts kept from the start ("": the key order)

    @property
    def key_spec(self) -> KeySpec:
        return KeySpec.parse(list(self.key))


def parse_topic(table: dict[str, Any], index: int, problems: Problems) -> TopicConfig:
    """The ``index``-th ``[[topic]]``. It is named by its name in every problem said of it
    (``topic 'orders'.expiraton``), by its place only when it has none (``topic[0].name``)."""
    known = {
        "name",
        "key",
        "durable",
        "expiration",
        "conflation",
        "conflation_mode",
        "conflation_merge",
        "conflation_match",
        "orders",
    }
    named = table.get("name")
    where = f"topic {named!r}" if isinstance(named, str) and named else f"topic[{index}]"
    with problems.collect():
        no_unknown(table, known, where)
    name = typed(table, "name", str, where, None)
    if not name:
        raise ConfigError(f"{where}.name: a topic needs a name")
    if "key" not in table:
        raise ConfigError(f'{where}.key: a topic needs key paths, for example key = ["/id"]')
    key = table["key"]
    if isinstance(key, str):
        key = [key]
    if not isinstance(key, list) or not key or not all(isinstance(k, str) for k in key):
        raise ConfigError(f'{where}.key: expected a list of paths like ["/id"]')
    try:
        KeySpec.parse(key)
    except ValueError as error:
        raise ConfigError(f"{where}.key: {error}") from None
    expiration = typed(table, "expiration", str, where, None)
    expiration_s = None
    if expiration is not None:
        try:
            expiration_s = parse_duration(expiration)
        except ValueError as error:
            raise ConfigError(f"{where}.expiration: {error}") from None
    conflation = typed(table, "conflation", str, where, "conflate")
    if conflation not in CONFLATION_POLICIES:
        raise ConfigError(
            f"{where}.conflation: expected one of {', '.join(CONFLATION_POLICIES)}, got {conflation!r}"
        )
    mode = typed(table, "conflation_mode", str, where, "replace")
    if mode not in CONFLATION_MODES:
        raise ConfigError(f"{where}.conflation_mode: expected replace or append, got {mode!r}")
    merge = typed(table, "conflation_merge", str, where, None)
    if merge is not None:
        check_function(merge, f"{where}.conflation_merge")
    matcher = typed(table, "conflation_match", str, where, None)
    if matcher is not None:
        check_function(matcher, f"{where}.conflation_match")
    return TopicConfig(
        name=name,
        key=tuple(key),
        orders=_orders(table, where),
        durable=typed(table, "durable", bool, where, False),
        expiration_s=expiration_s,
        conflation=conflation,
        conflation_mode=mode,
        conflation_merge=merge,
        conflation_match=matcher,
    )


def _orders(table: dict[str, Any], where: str) -> tuple[str, ...]:
    """A topic's kept orders: ``orderby`` texts, each parsed now so a typo stops the start."""
    orders = table.get("orders", [])
    if not isinstance(orders, list) or not all(isinstance(text, str) for text in orders):
        raise ConfigError(f'{where}.orders: expected a list of orderby texts like ["/qty DESC"]')
    parsed = set()
    for text in orders:
        try:
            order = parse_orderby(text) if text.strip() else None
        except CommandError as error:
            raise ConfigError(f"{where}.orders: {text!r}: {error.detail}") from None
        if order in parsed:
            raise ConfigError(f"{where}.orders: {text!r} names an order named before")
        parsed.add(order)
    if len(orders) > MAX_KEPT_ORDERS:
        raise ConfigError(f"{where}.orders: at most {MAX_KEPT_ORDERS} (each costs the changes of its fields)")
    return tuple(orders)
