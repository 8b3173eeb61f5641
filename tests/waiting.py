"""How the suite waits: on the event it means, never on the clock (tests/README.md).

A test waits for what it means (a message, a log line, a record count, a position on a page).
The clock appears only as a hang guard: ``HANG_S``, long enough that a machine that is merely
slow or busy (both cores taken by other work) never reaches it, so reaching it means the thing
waited for is not coming. Every poll of the suite goes through ``eventually`` (or its async twin)
so that no test carries a guard of its own that a busy machine can outrun: a loop of "100 tries,
0.1 s apart" is a ten-second time limit in disguise.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

# What no wait of the suite may reach on a healthy run, however busy the machine: a hang guard.
HANG_S = 120.0
# How often a poll looks again: often enough that a test never sleeps long past its event.
STEP_S = 0.05


def _said(what: str | Callable[[], str]) -> str:
    return what() if callable(what) else what


def eventually(
    check: Callable[[], T | None],
    what: str | Callable[[], str],
    timeout: float = HANG_S,
    step: float = STEP_S,
    ignoring: tuple[type[BaseException], ...] = (),
) -> T:
    """The first true answer of ``check()``, asked every ``step``; an AssertionError naming
    ``what`` (a text, or a function that describes the state now) once ``timeout`` passes.
    An exception in ``ignoring`` (a connection refused while a server starts) counts as no answer."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            answer = check()
        except ignoring:
            answer = None
        if answer:
            return answer
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:g} s (a hang guard): {_said(what)}")
        time.sleep(step)


async def eventually_async(
    check: Callable[[], Awaitable[T | None]],
    what: str | Callable[[], str],
    timeout: float = HANG_S,
    step: float = STEP_S,
    ignoring: tuple[type[BaseException], ...] = (),
) -> T:
    """``eventually`` for a check that must be awaited (a query over a socket)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        try:
            answer = await check()
        except ignoring:
            answer = None
        if answer:
            return answer
        if loop.time() > deadline:
            raise AssertionError(f"not within {timeout:g} s (a hang guard): {_said(what)}")
        await asyncio.sleep(step)


async def until(
    condition: Callable[[], object],
    what: str | Callable[[], str] = "the condition never held",
    timeout: float = HANG_S,
    step: float = STEP_S / 2,
) -> None:
    """Wait, without holding the event loop, until ``condition()`` (a plain function) is true."""

    async def check() -> bool:
        return bool(condition())

    await eventually_async(check, what, timeout, step)
