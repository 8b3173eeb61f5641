"""runtime/reload.py: what SIGHUP takes from the configuration file, and what it refuses."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from server.core.engine import Engine
from server.core.log.local import LocalLog
from server.core.settings.config import load_config
from server.runtime.reload import Coalesced, reload_auth, with_current_auth

from ..integration.server_process import auth_section, write_config

TOPICS = [{"name": "orders", "key": ["/order"]}]
ALICE = {"user_id": "alice", "password": "a", "read": ["*"], "write": ["*"]}
BOB = {"user_id": "bob", "password": "b", "read": ["*"], "write": ["*"]}


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return write_config(tmp_path / "server.toml", {}, TOPICS, auth_section(ALICE))


def engine_of(path: Path) -> Engine:
    return Engine(load_config(path).with_overrides("127.0.0.1", 0, "/elsewhere"), lambda: 0.0, LocalLog)


def test_only_auth_is_taken_and_other_changes_are_logged(
    path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    engine = engine_of(path)
    before = engine.broker.config
    write_config(
        path, {"heartbeat_s": 3, "port": 9}, [*TOPICS, {"name": "b", "key": ["/b"]}], auth_section(BOB)
    )
    with caplog.at_level(logging.INFO):
        assert reload_auth(engine)
    assert engine.broker.config.users is not None and list(engine.broker.config.users) == ["bob"]
    assert engine.broker.config.server == before.server and engine.broker.config.topics == before.topics
    assert f"SIGHUP: reloaded [auth] from {path} (1 user(s)); 0 socket(s) closed" in caplog.text
    # The port is the command line's: only heartbeat_s is a change of the file's [server].
    assert f"SIGHUP: [server], [[topic]] changed in {path}; only [auth] is reloaded" in caplog.text


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("[auth", "not valid TOML"),
        ('[[topic]]\nname = "orders"\nkey = ["/order"]\n', "it has no [auth] section"),
        (auth_section({**ALICE, "filter": {"orders": "/a = "}}), "auth.user[0].filter.orders: "),
        (auth_section({**ALICE, "pasword": "x"}), "auth.user[0].pasword: unknown key"),
    ],
)
def test_a_file_that_cannot_be_taken_changes_nothing_and_says_why(
    path: Path, text: str, reason: str, caplog: pytest.LogCaptureFixture
) -> None:
    engine = engine_of(path)
    users = engine.broker.config.users
    path.write_text(text)
    assert not reload_auth(engine)
    assert engine.broker.config.users is users
    [record] = caplog.records
    assert record.levelno == logging.ERROR
    assert record.getMessage().startswith(f"SIGHUP: {path} not reloaded, the [auth] settings in use stay: ")
    assert reason in record.getMessage()
    assert with_current_auth(engine.broker.config) is engine.broker.config  # nor does a worker starting again


def test_a_missing_file_changes_nothing(path: Path, caplog: pytest.LogCaptureFixture) -> None:
    engine = engine_of(path)
    path.unlink()
    assert not reload_auth(engine)
    assert "cannot read configuration" in caplog.text


def test_a_worker_starting_again_takes_the_auth_the_file_has_now(path: Path) -> None:
    config = load_config(path)
    write_config(path, {"port": 9}, [], auth_section(BOB))
    fresh = with_current_auth(config)
    assert fresh.users is not None and list(fresh.users) == ["bob"]
    assert fresh.server == config.server and fresh.topics == config.topics


async def test_signals_that_arrive_during_a_reload_run_one_more_reload_not_one_each() -> None:
    """The loop reads each SIGHUP as one callback: fifty of them, queued while a reload ran,
    were fifty reloads back to back."""
    during: list[int] = []
    finished = asyncio.Event()

    def job() -> None:
        during.append(reloads.runs)
        if reloads.runs == 1:
            for _ in range(50):  # as the signals read while this run holds the loop
                asyncio.get_running_loop().call_soon(reloads.ask)
        else:
            finished.set()

    reloads = Coalesced(job, "reload")
    for _ in range(50):  # queued before the first run starts
        reloads.ask()
    await finished.wait()
    for _ in range(3):
        await asyncio.sleep(0)
    assert during == [1, 2], "one run for the fifty before it, one for the fifty during it"
    reloads.ask()  # and a signal after the runs ended is a run of its own
    while reloads.runs < 3:
        await asyncio.sleep(0)


async def test_a_reload_that_fails_is_logged_and_the_next_signal_reloads_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls: list[int] = []

    def job() -> None:
        calls.append(1)
        if len(calls) == 1:
            raise OSError("disk gone")

    reloads = Coalesced(job, "SIGHUP: reloading [auth]")
    reloads.ask()
    while not calls:
        await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert "SIGHUP: reloading [auth] failed" in caplog.text and "disk gone" in caplog.text
    reloads.ask()
    while len(calls) < 2:
        await asyncio.sleep(0)
