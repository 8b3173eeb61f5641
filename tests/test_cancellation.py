"""Cancellation reaches every task: on CPython 3.11 ``asyncio.wait_for`` returns the inner result
instead of raising when a cancellation lands just as the inner awaitable completes (gh-86296, fixed
in 3.12), and ``suppress(CancelledError)`` around an ``await`` of another task eats the caller's own
cancellation too. Either made a task outlive its cancel: a test's watcher kept running, its
``stop()`` never returned, and the test hung until pytest-timeout killed it. ``asyncio.timeout``
and ``asyncio.wait([task])`` have neither fault."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("server", "tests", "bench", "scripts", "spark_feeds")


def python_files() -> list[Path]:
    return sorted(path for folder in FOLDERS for path in (ROOT / folder).rglob("*.py"))


def dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return f"{dotted(node.value)}.{node.attr}"
    return node.id if isinstance(node, ast.Name) else ""


def offences(source: str, filename: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if not isinstance(node, ast.Call):
            continue
        name = dotted(node.func)
        where = f"{filename}:{node.lineno}"
        if name == "asyncio.wait_for":
            found.append(f"{where} calls asyncio.wait_for: use `async with asyncio.timeout(...)`")
        if name.endswith("suppress") and any(dotted(arg).endswith("CancelledError") for arg in node.args):
            found.append(f"{where} suppresses CancelledError: await the task with asyncio.wait([task])")
    return found


def test_no_call_can_swallow_a_cancellation() -> None:
    found = [
        offence
        for path in python_files()
        for offence in offences(path.read_text(), str(path.relative_to(ROOT)))
    ]
    assert found == []


def test_the_check_finds_both_faults() -> None:
    sample = (
        "import asyncio, contextlib\n"
        "async def f(task):\n"
        "    await asyncio.wait_for(task, 1)\n"
        "    with contextlib.suppress(asyncio.CancelledError):\n"
        "        await task\n"
    )
    assert offences(sample, "sample.py") == [
        "sample.py:3 calls asyncio.wait_for: use `async with asyncio.timeout(...)`",
        "sample.py:4 suppresses CancelledError: await the task with asyncio.wait([task])",
    ]
