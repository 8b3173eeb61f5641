"""``SIGHUP``: reload ``[auth]`` from the configuration file (docs/protocol.md, Reloading entitlements).

Only ``[auth]`` (users, passwords, read and write lists, entitlement filters) is taken from the
file; the engine then re-decides every live socket and subscription (core/handlers/reentitle.py). A file
that cannot be read, is not valid TOML or is not a valid configuration (any section) changes
nothing: one error line names the file and the reason, and the settings in use stay. So does a
file without ``[auth]`` when the server has one: turning ``[auth]`` off takes a restart, so that
a truncated file never opens the server to anyone (turning it on is a reload: the sockets that
never authenticated are closed). Changes to the other sections are reported as needing a
restart. Each node of a cluster reloads its own file.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import replace

from ..core.engine import Engine
from ..core.errors import ConfigError
from ..core.settings.config import Config, load_config

log = logging.getLogger("server")

# [server] keys the command line may override (--host, --port, --data-dir,
# --recover-damaged-log): the file's value may differ from the one in use without a change.
OVERRIDABLE = ("host", "port", "data_dir", "recover_damaged_log")


class Coalesced:
    """A job asked for by signals: it runs soon after the first ask, and the asks that arrive
    before it starts or while it runs make one more run, not one each. (Fifty SIGHUPs in two
    seconds ran forty-five reloads back to back, each re-deciding every socket in one step.)
    Between runs the loop lets every socket's frames out."""

    def __init__(self, job: Callable[[], object], name: str) -> None:
        self._job = job
        self._name = name
        self._wanted = False
        self._running: asyncio.Task[None] | None = None
        self.runs = 0  # how many times the job ran

    def ask(self) -> None:
        self._wanted = True
        if self._running is None or self._running.done():
            self._running = asyncio.get_running_loop().create_task(self._run(), name=self._name)

    async def _run(self) -> None:
        await asyncio.sleep(0)  # the asks queued behind this one are read first
        while self._wanted:
            self._wanted = False
            self.runs += 1
            try:
                self._job()
            except Exception:
                log.exception("%s failed", self._name)
            await asyncio.sleep(0)  # the asks that arrived during the run are read now


def reload_auth(engine: Engine) -> bool:
    """Reload ``[auth]`` from the file the engine's configuration was read from; whether it was."""
    current = engine.broker.config
    path = current.source
    if path is None:
        log.warning("SIGHUP: no configuration file to reload [auth] from (the built-in demo is in use)")
        return False
    try:
        new = _read(current, path)
    except ConfigError as error:
        _refused(path, error)
        return False
    done = engine.reload_auth(new.users)
    log.info(
        "SIGHUP: reloaded [auth] from %s (%s); %d socket(s) closed, %d subscription(s) ended, %d re-decided",
        path,
        "no [auth]" if new.users is None else f"{len(new.users)} user(s)",
        done.closed,
        done.ended,
        done.regated,
    )
    changed = restart_needed(current, new)
    if changed:
        log.warning(
            "SIGHUP: %s changed in %s; only [auth] is reloaded, the rest takes effect on a restart",
            ", ".join(changed),
            path,
        )
    return True


def with_current_auth(config: Config) -> Config:
    """``config`` with the ``[auth]`` its file holds now: a worker started again (``--workers``)
    after SIGHUP reloaded the others must not serve the ``[auth]`` its parent read at start."""
    path = config.source
    if path is None:
        return config
    try:
        return replace(config, users=_read(config, path).users)
    except ConfigError as error:
        _refused(path, error)
        return config


def _read(current: Config, path: str) -> Config:
    new = load_config(path)
    if new.users is None and current.users is not None:
        # A truncated or half-written file must never open the server to anyone.
        raise ConfigError("it has no [auth] section (turning [auth] off takes a restart)")
    return new


def _refused(path: str, error: ConfigError) -> None:
    reason = str(error).removeprefix(f"{path}: ")
    log.error("SIGHUP: %s not reloaded, the [auth] settings in use stay: %s", path, reason)


def restart_needed(current: Config, new: Config) -> list[str]:
    """The sections other than ``[auth]`` in which ``new`` differs from ``current``."""
    changed = []
    in_use = {name: getattr(current.server, name) for name in OVERRIDABLE}
    if replace(new.server, **in_use) != current.server:
        changed.append("[server]")
    if new.topics != current.topics:
        changed.append("[[topic]]")
    if new.cluster != current.cluster:
        changed.append("[cluster]")
    return changed
