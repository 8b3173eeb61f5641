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

from ..errors import ConfigError, FilterError
from ..filters import compile_filter
from .problems import Problems
from .reading import duration, no_unknown, table_of, typed
from .server_names import server_names_setting
from .topics import TopicConfig, parse_topic

# The configuration's types, the topic's from topics.py among them: importers take them all from here.
__all__ = [
    "ClusterSettings",
    "Config",
    "ServerSettings",
    "TopicConfig",
    "UserConfig",
    "load_config",
    "parse_config",
]


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


UNCONFIGURED_TOPICS = ("pubsub", "refuse")


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
    # "pubsub": a topic not configured is a plain pub/sub topic; "refuse": commands on it fail
    # with ``invalid topic`` (docs/protocol.md, Configuration)
    unconfigured_topics: str = "pubsub"


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
    """The configuration a parsed file says, or a ``ConfigError`` naming every problem in it."""
    problems = Problems()
    with problems.collect():
        no_unknown(document, {"server", "topic", "auth", "cluster"}, "")
    server = ServerSettings()
    with problems.collect():
        server = _parse_server(table_of(document.get("server", {}), "server"), problems)
    topics: list[TopicConfig] = []
    with problems.collect():
        topics_raw = document.get("topic", [])
        if not isinstance(topics_raw, list):
            raise ConfigError("topic: expected an array of tables ([[topic]])")
        for index, raw in enumerate(topics_raw):
            with problems.collect():
                topics.append(parse_topic(table_of(raw, f"topic[{index}]"), index, problems))
    seen: set[str] = set()
    for topic in topics:
        if topic.name in seen:
            problems.found.append(f"topic: two topics are named {topic.name!r}")
        seen.add(topic.name)
    users = None
    if "auth" in document:
        with problems.collect():
            users = _parse_auth(table_of(document["auth"], "auth"), problems)
    cluster = None
    if "cluster" in document:
        with problems.collect():
            cluster = _parse_cluster(table_of(document["cluster"], "cluster"))
    problems.check()
    return Config(server, tuple(topics), users, cluster)


def _parse_cluster(table: dict[str, Any]) -> ClusterSettings:
    no_unknown(table, {"redis_url", "name", "retention", "snapshot_interval"}, "cluster")
    url = typed(table, "redis_url", str, "cluster", None)
    if not url or not url.startswith(("redis://", "rediss://", "unix://")):
        raise ConfigError(f"cluster.redis_url: expected a URL like redis://127.0.0.1:6379/0, got {url!r}")
    name = typed(table, "name", str, "cluster", "sowpush")
    if not name or any(c in name for c in "{}: "):
        raise ConfigError(f"cluster.name: expected a word without braces, colons or spaces, got {name!r}")
    defaults = ClusterSettings(url)
    return ClusterSettings(
        url,
        name,
        duration(table, "retention", defaults.retention_s, "cluster"),
        duration(table, "snapshot_interval", defaults.snapshot_interval_s, "cluster"),
    )


def _positive(value: int, name: str) -> int:
    if value <= 0:
        raise ConfigError(f"server.{name}: must be positive, got {value}")
    return value


def _parse_server(table: dict[str, Any], problems: Problems) -> ServerSettings:
    defaults = ServerSettings()
    renamed = {
        "log_retention_s": "log_retention",
        "hidden_interval_s": "hidden_interval",
        "resume_history_s": "resume_history",
    }
    known = (set(ServerSettings.__dataclass_fields__) - set(renamed)) | set(renamed.values())
    with problems.collect():
        no_unknown(table, known, "server")
    retention_s = duration(table, "log_retention", defaults.log_retention_s)
    hidden_interval_s = duration(table, "hidden_interval", defaults.hidden_interval_s)
    origins = table.get("allowed_origins", [])
    if not isinstance(origins, list) or not all(isinstance(o, str) for o in origins):
        raise ConfigError(
            'server.allowed_origins: expected a list of origins like ["https://desk.example.com"]'
        )
    port = typed(table, "port", int, "server", defaults.port)
    if not 0 <= port <= 65535:
        raise ConfigError(f"server.port: must be 0 to 65535, got {port}")
    heartbeat = typed(table, "heartbeat_s", (int, float), "server", defaults.heartbeat_s)
    if heartbeat <= 0:
        raise ConfigError(f"server.heartbeat_s: must be positive, got {heartbeat}")
    unconfigured = typed(table, "unconfigured_topics", str, "server", defaults.unconfigured_topics)
    if unconfigured not in UNCONFIGURED_TOPICS:
        raise ConfigError(f'server.unconfigured_topics: expected "pubsub" or "refuse", got {unconfigured!r}')
    return ServerSettings(
        host=typed(table, "host", str, "server", defaults.host),
        port=port,
        data_dir=typed(table, "data_dir", str, "server", defaults.data_dir),
        queue_max_bytes=_positive(
            typed(table, "queue_max_bytes", int, "server", defaults.queue_max_bytes), "queue_max_bytes"
        ),
        queue_max_messages=_positive(
            typed(table, "queue_max_messages", int, "server", defaults.queue_max_messages),
            "queue_max_messages",
        ),
        max_message_bytes=_positive(
            typed(table, "max_message_bytes", int, "server", defaults.max_message_bytes), "max_message_bytes"
        ),
        heartbeat_s=float(heartbeat),
        binary_frames=typed(table, "binary_frames", bool, "server", defaults.binary_frames),
        websocket_deflate=typed(table, "websocket_deflate", bool, "server", defaults.websocket_deflate),
        log_retention_s=retention_s,
        log_retention_bytes=_positive(
            typed(table, "log_retention_bytes", int, "server", defaults.log_retention_bytes),
            "log_retention_bytes",
        ),
        recover_damaged_log=typed(table, "recover_damaged_log", bool, "server", defaults.recover_damaged_log),
        allowed_origins=tuple(origin.rstrip("/") for origin in origins),
        server_names=server_names_setting(table.get("server_names", [])),
        max_subscriptions=_positive(
            typed(table, "max_subscriptions", int, "server", defaults.max_subscriptions), "max_subscriptions"
        ),
        hidden_interval_s=hidden_interval_s,
        resume_history_s=duration(table, "resume_history", defaults.resume_history_s),
        resume_history_changes=_positive(
            typed(table, "resume_history_changes", int, "server", defaults.resume_history_changes),
            "resume_history_changes",
        ),
        resume_history_bytes=_positive(
            typed(table, "resume_history_bytes", int, "server", defaults.resume_history_bytes),
            "resume_history_bytes",
        ),
        metrics_token=typed(table, "metrics_token", str, "server", None) or None,
        background_conflation=typed(
            table, "background_conflation", bool, "server", defaults.background_conflation
        ),
        unconfigured_topics=unconfigured,
    )


def _string_list(table: dict[str, Any], name: str, where: str) -> tuple[str, ...]:
    value = table.get(name, [])
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{where}.{name}: expected a list of topic names")
    return tuple(value)


def _parse_auth(table: dict[str, Any], problems: Problems) -> dict[str, UserConfig]:
    with problems.collect():
        no_unknown(table, {"user"}, "auth")
    raw_users = table.get("user", [])
    if not isinstance(raw_users, list):
        raise ConfigError("auth.user: expected an array of tables ([[auth.user]])")
    users: dict[str, UserConfig] = {}
    for index, raw in enumerate(raw_users):
        with problems.collect():
            _parse_user(table_of(raw, f"auth.user[{index}]"), f"auth.user[{index}]", users, problems)
    return users


USER_KEYS = {"user_id", "password", "password_sha256", "read", "write", "filter"}


def _parse_user(entry: dict[str, Any], where: str, users: dict[str, UserConfig], problems: Problems) -> None:
    """One ``[[auth.user]]``, added to ``users``."""
    with problems.collect():
        no_unknown(entry, USER_KEYS, where)
    user_id = typed(entry, "user_id", str, where, None)
    if not user_id:
        raise ConfigError(f"{where}.user_id: every user needs a user_id")
    password = typed(entry, "password", str, where, None)
    digest = typed(entry, "password_sha256", str, where, None)
    if (password is None) == (digest is None):
        raise ConfigError(f"{where}: give exactly one of password and password_sha256")
    filters = table_of(entry.get("filter", {}), f"{where}.filter")
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
