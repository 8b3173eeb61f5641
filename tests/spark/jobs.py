"""Feeds run as a user runs them: a process of their own, in its own session and process group
(as a terminal's foreground job: Ctrl-C is a SIGINT to the whole group, Spark's JVM included)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from ..waiting import HANG_S

ROOT = Path(__file__).resolve().parents[2]


def launch(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """``python *args`` in the repository; its stderr is kept (``communicate``), stdout dropped."""
    return subprocess.Popen(
        [sys.executable, *args],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={**os.environ, **(env or {})},
    )


def wait_until(
    job: subprocess.Popen[str], done: Callable[[], bool], what: str, timeout: float = HANG_S
) -> None:
    """Wait for ``done()``; when ``job`` stops or ``timeout`` passes first, kill it and fail
    saying ``what`` did not happen, with its stderr."""
    deadline = time.monotonic() + timeout
    while not done():
        if job.poll() is not None or time.monotonic() > deadline:
            kill(job)
            raise AssertionError(f"{what}:\n{job.communicate()[1]}")
        time.sleep(0.5)


def kill(job: subprocess.Popen[str]) -> None:
    """SIGKILL to the job's whole group, if it still runs."""
    if job.poll() is None:
        os.killpg(job.pid, signal.SIGKILL)


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True
