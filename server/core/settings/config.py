"""The configuration (docs/protocol.md, Configuration), validated from the parsed TOML document.

Every problem is a ``ConfigError`` whose message names the key, for example
``topic[1].conflation: expected one of off, conflate, always, unsubscribe, got 'sometimes'``.
"""

from __future__ import annotations

import hashlib
import hmac
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import CommandError, ConfigError, FilterError
from ..filters import compile_filter, parse_orderby
from ..limits import MAX_KEPT_ORDERS
from ..protocol.durations import parse_duration
from ..records.keys import KeySpec
from .functions import check_function
from .server_names import server_names_setting

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


@dataclass(frozen=True, slots=True)
class UserConfig:
    user_id: str
    password: str | None
    password_sha256: str | None
    read: tuple[str, ...]
    write: tuple[str, ...]
    filters: dict[str, str]

    def check_password(self, given: str | None) -> bool:
        """Compared in constant time (docs/protocol.md, Who may connect): how long it takes tells
        nothing about how much of a guess was right."""
        if given is None:
            return False
        given_bytes = given.encode("utf-8", "surrogatepass")
        if self.password is not None:
            return hmac.compare_digest(given_bytes, self.password.encode("utf-8", "surrogatepass"))
        digest = hashlib.sha256(given_bytes).hexdigest()
        return hmac.compare_digest(digest.encode(), (self.password_sha256 or "").lower().encode())

    def may_read(self, topic: str) -> bool:
        return "*" in self.read or topic in self.read

    def may_write(self, topic: str) -> bool:
        return "*" in self.write or topic in self.write


@dataclass(frozen=True, slots=True)
class ServerSettings:
    host: str = "127.0.0.1"
    port: int = 8000
    data_dir: str = "./data"
    queue_max_bytes: int = 4 * 1024 * 1024
    queue_max_messages: int = 50000
    max_message_bytes: int = 1024 * 1024
    heartbeat_s: float = 15.0
    binary_frames: bool = False
    websocket_deflate: bool = False
    log_retention_s: float = 24 * 3600.0  # keep transaction log segments this long (after a snapshot)
    log_retention_bytes: int = 1024**3  # and no more than this in all
    recover_damaged_log: bool = False  # start even when log frames are damaged (their changes lost)
    # browser origins allowed besides the server's own (docs/protocol.md, Who may connect)
    allowed_origins: tuple[str, ...] = ()
    server_names: tuple[str, ...] = ()  # Host names answered besides localhost and the listen address
    max_subscriptions: int = 1000  # live subscriptions per socket
    # delivery interval for a socket whose page is hidden (docs/protocol.md, Hidden views)
    hidden_interval_s: float = 1.0
    # each SOW topic keeps its changes this long to resume views (docs/protocol.md, Resuming a view)
    resume_history_s: float = 600.0
    resume_history_changes: int = 100_000  # and at most this many
    resume_history_bytes: int = 16 * 1024 * 1024  # and the versions they replaced in this many bytes
    metrics_token: str | None = None  # with [auth]: the bearer token /metrics asks for
    background_conflation: bool = True  # conflate queues past a quarter of their limit while idle


@dataclass(frozen=True, slots=True)
class ClusterSettings:
    """``[cluster]`` (docs/protocol.md, Cluster): the Redis every node of the cluster shares."""

    redis_url: str
    name: str = "sowpush"  # prefix of every Redis key the cluster writes
    retention_s: float = 3600.0  # stream entries kept this long (bookmarks, nodes that were away)
    snapshot_interval_s: float = 60.0  # how often a node writes the SOW snapshots new nodes start from


@dataclass(frozen=True, slots=True)
class Config:
    server: ServerSettings = field(default_factory=ServerSettings)
    topics: tuple[TopicConfig, ...] = ()
    users: dict[str, UserConfig] | None = None  # None: no [auth] section
    cluster: ClusterSettings | None = None  # None: a single server, no Redis
    source: str | None = field(default=None, compare=False)  # the file read (SIGHUP reloads its [auth])

    def with_overrides(self, host: str | None, port: int | None, data_dir: str | None) -> Config:
        changes: dict[str, Any] = {}
        if host is not None:
            changes["host"] = host
        if port is not None:
            changes["port"] = port
        if data_dir is not None:
            changes["data_dir"] = data_dir
        return replace(self, server=replace(self.server, **changes))


def load_config(path: str | Path) -> Config:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"cannot read configuration {path}: {error.strerror}") from None
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: not valid TOML: {error}") from None
    return replace(parse_config(document), source=str(path))


def parse_config(document: dict[str, Any]) -> Config:
    _no_unknown(document, {"server", "topic", "auth", "cluster"}, "")
    server = _parse_server(_table(document.get("server", {}), "server"))
    topics_raw = document.get("topic", [])
    if not isinstance(topics_raw, list):
        raise ConfigError("topic: expected an array of tables ([[topic]])")
    topics = tuple(
        _parse_topic(_table(raw, f"topic[{i}]"), f"topic[{i}]") for i, raw in enumerate(topics_raw)
    )
    seen: set[str] = set()
    for topic in topics:
        if topic.name in seen:
            raise ConfigError(f"topic: two topics are named {topic.name!r}")
        seen.add(topic.name)
    users = None
    if "auth" in document:
        users = _parse_auth(_table(document["auth"], "auth"))
    cluster = None
    if "cluster" in document:
        cluster = _parse_cluster(_table(document["cluster"], "cluster"))
    return Config(server, topics, users, cluster)


def _parse_cluster(table: dict[str, Any]) -> ClusterSettings:
    _no_unknown(table, {"redis_url", "name", "retention", "snapshot_interval"}, "cluster")
    url = _typed(table, "redis_url", str, "cluster", None)
    if not url or not url.startswith(("redis://", "rediss://", "unix://")):
        raise ConfigError(f"cluster.redis_url: expected a URL like redis://127.0.0.1:6379/0, got {url!r}")
    name = _typed(table, "name", str, "cluster", "sowpush")
    if not name or any(c in name for c in "{}: "):
        raise ConfigError(f"cluster.name: expected a word without braces, colons or spaces, got {name!r}")
    defaults = ClusterSettings(url)
    return ClusterSettings(
        url,
        name,
        _duration(table, "retention", defaults.retention_s, "cluster"),
        _duration(table, "snapshot_interval", defaults.snapshot_interval_s, "cluster"),
    )


def _table(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: expected a table")
    return value


def _no_unknown(table: dict[str, Any], known: set[str], where: str) -> None:
    for name in table:
        if name not in known:
            prefix = f"{where}." if where else ""
            raise ConfigError(f"{prefix}{name}: unknown key")


def _typed(table: dict[str, Any], name: str, kind: type | tuple[type, ...], where: str, default: Any) -> Any:
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


def _positive(value: int, name: str) -> int:
    if value <= 0:
        raise ConfigError(f"server.{name}: must be positive, got {value}")
    return value


def _parse_server(table: dict[str, Any]) -> ServerSettings:
    defaults = ServerSettings()
    renamed = {
        "log_retention_s": "log_retention",
        "hidden_interval_s": "hidden_interval",
        "resume_history_s": "resume_history",
    }
    known = (set(ServerSettings.__dataclass_fields__) - set(renamed)) | set(renamed.values())
    _no_unknown(table, known, "server")
    retention_s = _duration(table, "log_retention", defaults.log_retention_s)
    hidden_interval_s = _duration(table, "hidden_interval", defaults.hidden_interval_s)
    origins = table.get("allowed_origins", [])
    if not isinstance(origins, list) or not all(isinstance(o, str) for o in origins):
        raise ConfigError(
            'server.allowed_origins: expected a list of origins like ["https://desk.example.com"]'
        )
    port = _typed(table, "port", int, "server", defaults.port)
    if not 0 <= port <= 65535:
        raise ConfigError(f"server.port: must be 0 to 65535, got {port}")
    heartbeat = _typed(table, "heartbeat_s", (int, float), "server", defaults.heartbeat_s)
    if heartbeat <= 0:
        raise ConfigError(f"server.heartbeat_s: must be positive, got {heartbeat}")
    return ServerSettings(
        host=_typed(table, "host", str, "server", defaults.host),
        port=port,
        data_dir=_typed(table, "data_dir", str, "server", defaults.data_dir),
        queue_max_bytes=_positive(
            _typed(table, "queue_max_bytes", int, "server", defaults.queue_max_bytes), "queue_max_bytes"
        ),
        queue_max_messages=_positive(
            _typed(table, "queue_max_messages", int, "server", defaults.queue_max_messages),
            "queue_max_messages",
        ),
        max_message_bytes=_positive(
            _typed(table, "max_message_bytes", int, "server", defaults.max_message_bytes), "max_message_bytes"
        ),
        heartbeat_s=float(heartbeat),
        binary_frames=_typed(table, "binary_frames", bool, "server", defaults.binary_frames),
        websocket_deflate=_typed(table, "websocket_deflate", bool, "server", defaults.websocket_deflate),
        log_retention_s=retention_s,
        log_retention_bytes=_positive(
            _typed(table, "log_retention_bytes", int, "server", defaults.log_retention_bytes),
            "log_retention_bytes",
        ),
        recover_damaged_log=_typed(
            table, "recover_damaged_log", bool, "server", defaults.recover_damaged_log
        ),
        allowed_origins=tuple(origin.rstrip("/") for origin in origins),
        server_names=server_names_setting(table.get("server_names", [])),
        max_subscriptions=_positive(
            _typed(table, "max_subscriptions", int, "server", defaults.max_subscriptions), "max_subscriptions"
        ),
        hidden_interval_s=hidden_interval_s,
        resume_history_s=_duration(table, "resume_history", defaults.resume_history_s),
        resume_history_changes=_positive(
            _typed(table, "resume_history_changes", int, "server", defaults.resume_history_changes),
            "resume_history_changes",
        ),
        resume_history_bytes=_positive(
            _typed(table, "resume_history_bytes", int, "server", defaults.resume_history_bytes),
            "resume_history_bytes",
        ),
        metrics_token=_typed(table, "metrics_token", str, "server", None) or None,
        background_conflation=_typed(
            table, "background_conflation", bool, "server", defaults.background_conflation
        ),
    )


def _duration(table: dict[str, Any], name: str, default: float, where: str = "server") -> float:
    text = _typed(table, name, str, where, None)
    if text is None:
        return default
    try:
        return parse_duration(text)
    except ValueError as error:
        raise ConfigError(f"{where}.{name}: {error}") from None


def _parse_topic(table: dict[str, Any], where: str) -> TopicConfig:
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
    _no_unknown(table, known, where)
    name = _typed(table, "name", str, where, None)
    if not name:
        raise ConfigError(f"{where}.name: a topic needs a name")
    where = f"topic {name!r}"
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
    expiration = _typed(table, "expiration", str, where, None)
    expiration_s = None
    if expiration is not None:
        try:
            expiration_s = parse_duration(expiration)
        except ValueError as error:
            raise ConfigError(f"{where}.expiration: {error}") from None
    conflation = _typed(table, "conflation", str, where, "conflate")
    if conflation not in CONFLATION_POLICIES:
        raise ConfigError(
            f"{where}.conflation: expected one of {', '.join(CONFLATION_POLICIES)}, got {conflation!r}"
        )
    mode = _typed(table, "conflation_mode", str, where, "replace")
    if mode not in CONFLATION_MODES:
        raise ConfigError(f"{where}.conflation_mode: expected replace or append, got {mode!r}")
    merge = _typed(table, "conflation_merge", str, where, None)
    if merge is not None:
        check_function(merge, f"{where}.conflation_merge")
    matcher = _typed(table, "conflation_match", str, where, None)
    if matcher is not None:
        check_function(matcher, f"{where}.conflation_match")
    return TopicConfig(
        name=name,
        key=tuple(key),
        orders=_orders(table, where),
        durable=_typed(table, "durable", bool, where, False),
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


def _string_list(table: dict[str, Any], name: str, where: str) -> tuple[str, ...]:
    value = table.get(name, [])
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{where}.{name}: expected a list of topic names")
    return tuple(value)


def _parse_auth(table: dict[str, Any]) -> dict[str, UserConfig]:
    _no_unknown(table, {"user"}, "auth")
    raw_users = table.get("user", [])
    if not isinstance(raw_users, list):
        raise ConfigError("auth.user: expected an array of tables ([[auth.user]])")
    users: dict[str, UserConfig] = {}
    for index, raw in enumerate(raw_users):
        where = f"auth.user[{index}]"
        entry = _table(raw, where)
        _no_unknown(entry, {"user_id", "password", "password_sha256", "read", "write", "filter"}, where)
        user_id = _typed(entry, "user_id", str, where, None)
        if not user_id:
            raise ConfigError(f"{where}.user_id: every user needs a user_id")
        password = _typed(entry, "password", str, where, None)
        digest = _typed(entry, "password_sha256", str, where, None)
        if (password is None) == (digest is None):
            raise ConfigError(f"{where}: give exactly one of password and password_sha256")
        filters = _table(entry.get("filter", {}), f"{where}.filter")
        for topic, text in filters.items():
            if not isinstance(text, str):
                raise ConfigError(f"{where}.filter.{topic}: expected a filter string")
            try:
                compile_filter(text)
            except FilterError as error:
                raise ConfigError(f"{where}.filter.{topic}: {error.reason}") from None
        if user_id in users:
            raise ConfigError(f"{where}.user_id: user {user_id!r} is listed twice")
        users[user_id] = UserConfig(
            user_id,
            password,
            digest,
            _string_list(entry, "read", where),
            _string_list(entry, "write", where),
            dict(filters),
        )
    return users
