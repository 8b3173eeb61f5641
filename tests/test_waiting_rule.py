"""The suite's rule (tests/README.md): a verdict never depends on how fast the machine is. An
``ast`` walk over every test module finds the two shapes that broke it before:

- a poll of a bounded number of tries with a sleep between them (``for _ in range(100): ...
  sleep(0.1)``): a time limit in disguise, which a busy machine outruns. Polls go through
  tests/waiting.py, whose timeout is a hang guard.
- a wait with a deadline of its own (``deadline = time.monotonic() + 10``): the same limit, by
  hand. Waits go through tests/waiting.py too.
- a WebSocket client with the library's keepalive pings: a pong a busy server answers late
  closes it (1011), the same limit inside a library.
- an assertion on a wall-clock difference (``assert time.monotonic() - started < 2``): a bound on
  work is asserted on time the machine's other work cannot stretch (tests/work.py), or it is a
  figure of speed and belongs in bench/.

A module may keep a wall-clock assertion only where the time itself is what the protocol states
(an expiry, a heartbeat, a timer): ``CLOCK_IS_THE_SUBJECT`` names each, with why.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

TESTS = Path(__file__).resolve().parent
CLOCKS = {"monotonic", "perf_counter", "time"}
# path -> why its wall-clock assertions are about the clock itself, not about speed.
CLOCK_IS_THE_SUBJECT: dict[str, str] = {}


def _is_clock_call(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in CLOCKS
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id in {"time", "loop"}
    )


def _is_clock_difference(node: ast.AST) -> bool:
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub) and _is_clock_call(node.left)


def _calls_sleep(nodes: list[ast.stmt]) -> bool:
    return any(
        isinstance(node, ast.Call)
        and (getattr(node.func, "attr", None) == "sleep" or getattr(node.func, "id", None) == "sleep")
        for statement in nodes
        for node in ast.walk(statement)
    )


def bounded_polls(tree: ast.AST) -> Iterator[int]:
    """Lines of ``for ... in range(<number>)`` loops that sleep and stop on a condition."""
    for node in ast.walk(tree):
        if not isinstance(node, (ast.For, ast.AsyncFor)):
            continue
        iterator = node.iter
        if not (
            isinstance(iterator, ast.Call)
            and getattr(iterator.func, "id", None) == "range"
            and all(isinstance(arg, ast.Constant) for arg in iterator.args)
        ):
            continue
        stops = any(  # ``if done: break``: a poll (a send loop that stops on an error is not one)
            isinstance(inner, ast.If) and any(isinstance(s, (ast.Break, ast.Return)) for s in inner.body)
            for inner in ast.walk(node)
        )
        if stops and _calls_sleep(node.body):
            yield node.lineno


def clock_assertions(tree: ast.AST) -> Iterator[int]:
    """Lines of assertions that compare a wall-clock difference, directly or through a name."""
    for function in ast.walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        timed = {
            target.id
            for node in ast.walk(function)
            if isinstance(node, ast.Assign) and _is_clock_difference(node.value)
            for target in node.targets
            if isinstance(target, ast.Name)
        }
        for node in ast.walk(function):
            if not isinstance(node, ast.Assert) or not isinstance(node.test, ast.Compare):
                continue
            sides = [node.test.left, *node.test.comparators]
            if any(
                _is_clock_difference(side) or (isinstance(side, ast.Name) and side.id in timed)
                for side in sides
            ):
                yield node.lineno


def hand_made_deadlines(tree: ast.AST) -> Iterator[int]:
    """Lines of ``time.monotonic() + 10``: a wait with a limit of its own, not the hang guard."""
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Add)
            and _is_clock_call(node.left)
            and isinstance(node.right, ast.Constant)
        ):
            yield node.lineno


def keepalive_timers(tree: ast.AST) -> Iterator[int]:
    """Lines of a WebSocket client opened with the library's keepalive pings (``connect(url)``
    without ``ping_interval=None``): a pong answered late by a busy server closes it with 1011."""
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in {"connect", "sync_connect"}
            and node.args
            and not any(keyword.arg in {"ping_interval", None} for keyword in node.keywords)
        ):
            yield node.lineno


def modules() -> Iterator[tuple[str, ast.AST]]:
    for path in sorted(TESTS.rglob("*.py")):
        if "node_modules" in path.parts:
            continue
        yield path.relative_to(TESTS.parent).as_posix(), ast.parse(path.read_text(), str(path))


def test_no_poll_is_a_time_limit_in_disguise() -> None:
    found = [f"{name}:{line}" for name, tree in modules() for line in bounded_polls(tree)]
    assert not found, "bounded polls (use tests/waiting.py's eventually): " + ", ".join(found)


def test_no_assertion_is_on_the_wall_clock() -> None:
    found = [
        f"{name}:{line}"
        for name, tree in modules()
        if name not in CLOCK_IS_THE_SUBJECT
        for line in clock_assertions(tree)
    ]
    assert not found, "wall-clock assertions (tests/work.py, or bench/): " + ", ".join(found)


def test_no_wait_has_a_limit_of_its_own() -> None:
    found = [
        f"{name}:{line}"
        for name, tree in modules()
        if name != "tests/waiting.py"
        for line in hand_made_deadlines(tree)
    ]
    assert not found, "hand-made deadlines (use tests/waiting.py's eventually): " + ", ".join(found)


def test_no_client_keeps_a_keepalive_timer() -> None:
    found = [f"{name}:{line}" for name, tree in modules() for line in keepalive_timers(tree)]
    assert not found, "clients with keepalive pings (ping_interval=None): " + ", ".join(found)


def test_the_rule_finds_what_it_forbids() -> None:
    poll = "for _ in range(100):\n    if done():\n        break\n    time.sleep(0.1)\n"
    timed = (
        "def f():\n    started = time.monotonic()\n    work()\n"
        "    took = time.monotonic() - started\n    assert took < 2\n"
    )
    direct = "async def g():\n    assert time.perf_counter() - started < 1.0\n"
    assert list(bounded_polls(ast.parse(poll))) == [1]
    assert list(clock_assertions(ast.parse(timed))) == [5]
    assert list(clock_assertions(ast.parse(direct))) == [2]
    assert list(hand_made_deadlines(ast.parse("deadline = time.monotonic() + 10\n"))) == [1]
    assert list(keepalive_timers(ast.parse("with connect(url, open_timeout=5) as ws:\n    pass\n"))) == [1]
    assert list(keepalive_timers(ast.parse("connect(url, ping_interval=None)\n"))) == []
    pacing = "for n in range(10):\n    send(n)\n    time.sleep(0.05)\n"  # paces a feed: stops on nothing
    assert list(bounded_polls(ast.parse(pacing))) == []
