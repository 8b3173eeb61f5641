"""The suite's rule (tests/README.md): a verdict never depends on how fast the machine is. An
``ast`` walk over every test module finds the two shapes that broke it before:

- a poll of a bounded number of tries with a sleep between them (``for _ in range(100): ...
  sleep(0.1)``): a time limit in disguise, which a busy machine outruns. Polls go through
  tests/waiting.py, whose timeout is a hang guard.
- a wait with a deadline of its own (``deadline = time.monotonic() + 10``): the same limit, by
  hand. Waits go through tests/waiting.py too.
- a WebSocket client with the library's keepalive pings: a pong a busy server answers late
  closes it (1011), the same limit inside a library.
- an upper bound asserted on a wall-clock difference (``assert time.monotonic() - started < 2``),
  made directly, through names and lists, or in a helper of the module or one it imports (a test
  timed 1,000 connections in a nested function, gathered them, and bounded their ``max``): a
  bound on work is asserted on time the machine's other work cannot stretch (tests/work.py),
  against a reference measured in the same run, or it is a figure of speed and belongs in bench/.
  A lower bound (``took >= grace``) is no limit on speed: a busy machine only makes it longer.

A module may keep a wall-clock assertion only where the time itself is what the protocol states
(an expiry, a heartbeat, a timer): ``CLOCK_IS_THE_SUBJECT`` names each, with why.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Iterator, Sequence
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


def _is_clock_difference(node: ast.AST, readings: frozenset[str] = frozenset()) -> bool:
    """``time.monotonic() - started``, or ``now - started`` where ``now`` is a clock reading."""
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub)):
        return False
    return _is_clock_call(node.left) or (isinstance(node.left, ast.Name) and node.left.id in readings)


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


FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _own_nodes(function: ast.AST) -> Iterator[ast.AST]:
    """The nodes of ``function``'s own body: not those of the functions defined inside it (their
    ``return`` is not its own)."""
    pending = list(ast.iter_child_nodes(function))
    while pending:
        node = pending.pop()
        yield node
        if not isinstance(node, (*FUNCTIONS, ast.Lambda)):
            pending.extend(ast.iter_child_nodes(node))


def _names_in(target: ast.AST) -> set[str]:
    return {node.id for node in ast.walk(target) if isinstance(node, ast.Name)}


class _Timing:
    """What in a function holds a wall-clock difference: names bound to one (directly, through
    another such name, a list it was appended to, a loop over one, or a call of a function that
    returns one: ``timed_functions``), so that a difference made in a helper is still seen."""

    def __init__(self, function: ast.AST, functions: frozenset[str]) -> None:
        self.functions = functions
        self.readings = frozenset(
            name
            for node in ast.walk(function)
            if isinstance(node, ast.Assign) and _is_clock_call(node.value)
            for target in node.targets
            for name in _names_in(target)
        )
        self.names: set[str] = set()
        while True:
            found = self._bound(function) - self.names
            if not found:
                return
            self.names |= found

    def holds(self, expression: ast.AST) -> bool:
        """Whether ``expression``'s value comes of a wall-clock difference."""
        for node in ast.walk(expression):
            if _is_clock_difference(node, self.readings):
                return True
            if isinstance(node, ast.Name) and node.id in self.names:
                return True
            if isinstance(node, ast.Call):
                called = node.func
                name = called.id if isinstance(called, ast.Name) else getattr(called, "attr", None)
                if name in self.functions:
                    return True
        return False

    def _bound(self, function: ast.AST) -> set[str]:
        bound: set[str] = set()
        for node in ast.walk(function):
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if self.holds(node.value):
                    bound |= {name for target in targets for name in _names_in(target)}
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)) and self.holds(node.iter):
                bound |= _names_in(node.target)
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in {"append", "extend", "add", "insert"}
                and isinstance(node.func.value, ast.Name)
                and any(self.holds(argument) for argument in node.args)
            ):
                bound.add(node.func.value.id)
        return bound


# What the suite bounds work with (tests/work.py): wall time less what other work took, not a
# wall-clock difference.
MEASURES = "tests/work.py"


def _imported(name: str, tree: ast.AST) -> Iterator[tuple[str, str, str]]:
    """(module, name there, name here) of each ``from ... import`` of module ``name``."""
    package = Path(name).parent
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        base = package
        for _ in range(node.level - 1):
            base = base.parent
        dotted = (node.module or "").split(".") if node.module else []
        source = (base.joinpath(*dotted) if node.level else Path(*dotted)).as_posix() + ".py"
        for alias in node.names:
            yield source, alias.name, alias.asname or alias.name


def timed_functions(modules: Sequence[tuple[str, ast.AST]]) -> dict[str, frozenset[str]]:
    """For each module, the names it calls that return a wall-clock difference: its own
    functions (and methods) that do, and such functions of other test modules that it imports."""
    timed: set[tuple[str, str]] = set()
    while True:
        callable_in = {
            name: frozenset(
                {function for module, function in timed if module == name}
                | {here for source, there, here in _imported(name, tree) if (source, there) in timed}
            )
            for name, tree in modules
        }
        more = {
            (name, function.name)
            for name, tree in modules
            if name != MEASURES
            for function in ast.walk(tree)
            if isinstance(function, FUNCTIONS)
            and (name, function.name) not in timed
            and any(
                isinstance(node, ast.Return)
                and node.value is not None
                and _Timing(function, callable_in[name]).holds(node.value)
                for node in _own_nodes(function)
            )
        }
        if not more:
            return callable_in
        timed |= more


def clock_assertions(tree: ast.AST, functions: frozenset[str] = frozenset()) -> Iterator[int]:
    """Lines of assertions that put an upper bound on a wall-clock difference: ``took < 2``, made
    directly, through names or in helpers (``functions``: ``timed_functions``). A lower bound
    (``took >= grace``: a busy machine only makes it longer) and a bound that is itself measured
    in the same run (``took < reference * 3``, ``took < limit + lost``) are not limits on speed."""
    for function in ast.walk(tree):
        if not isinstance(function, FUNCTIONS):
            continue
        timing = _Timing(function, functions)
        for node in _own_nodes(function):
            if not isinstance(node, ast.Assert):
                continue
            for compare in ast.walk(node.test):
                if isinstance(compare, ast.Compare) and _bounds_from_above(compare, timing):
                    yield node.lineno
                    break


def _bounds_from_above(compare: ast.Compare, timing: _Timing) -> bool:
    sides = [compare.left, *compare.comparators]
    for left, op, right in zip(sides, compare.ops, sides[1:], strict=False):
        if isinstance(op, (ast.Lt, ast.LtE)):
            bounded, bound = left, right
        elif isinstance(op, (ast.Gt, ast.GtE)):
            bounded, bound = right, left  # ``2 > took`` bounds ``took`` from above too
        else:
            continue
        if timing.holds(bounded) and not timing.holds(bound):
            return True
    return False


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
    every = list(modules())
    helpers = timed_functions(every)
    found = [
        f"{name}:{line}"
        for name, tree in every
        if name not in CLOCK_IS_THE_SUBJECT
        for line in clock_assertions(tree, helpers[name])
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
    # Made in a helper, gathered, then bounded (how a test of 1,000 connections timed them all
    # from the first one's opening): seen through the helper, in its module or imported.
    helper = "async def cut(reader, opened):\n    await reader.read()\n    return loop.time() - opened\n"
    gathered = (
        "async def g():\n    cuts = await gather(*(cut(r, t) for r, t in rs))\n    assert max(cuts) < 8\n"
    )
    own = [("tests/a/test_x.py", ast.parse(helper + gathered))]
    assert list(clock_assertions(own[0][1], timed_functions(own)["tests/a/test_x.py"])) == [6]
    shared = [
        ("tests/a/cuts.py", ast.parse(helper)),
        ("tests/a/test_y.py", ast.parse("from .cuts import cut\n" + gathered)),
    ]
    assert list(clock_assertions(shared[1][1], timed_functions(shared)["tests/a/test_y.py"])) == [4]
    # A helper of the same name elsewhere, not imported, is not this one.
    elsewhere = [shared[0], ("tests/b/test_z.py", ast.parse(gathered))]
    assert list(clock_assertions(elsewhere[1][1], timed_functions(elsewhere)["tests/b/test_z.py"])) == []
    # Through a reading and a list: ``now - started``, appended.
    listed = textwrap.dedent("""\
        def f():
            took = []
            for n in range(3):
                started = time.monotonic()
                now = time.monotonic()
                took.append(now - started)
            assert sum(took) <= LIMIT
        """)
    assert list(clock_assertions(ast.parse(listed))) == [7]
    # Not limits on speed: a lower bound, a bound measured in the same run, the suite's measures.
    lower = textwrap.dedent("""\
        def f():
            took = time.monotonic() - started
            assert took >= GRACE and done
        """)
    relative = (
        "def f():\n    took = time.monotonic() - started\n"
        "    lost = time.monotonic() - t0 - whole.elapsed()\n    assert took < 3 + lost\n"
    )
    reference = relative.replace("3 + lost", "(time.monotonic() - t0) * 3")
    measured = "def f():\n    assert waited.elapsed() < 2\n"
    for text in (lower, relative, reference, measured):
        assert list(clock_assertions(ast.parse(text))) == [], text
    assert list(clock_assertions(ast.parse("def f():\n    assert 2 > time.monotonic() - started\n"))) == [2]
    assert list(hand_made_deadlines(ast.parse("deadline = time.monotonic() + 10\n"))) == [1]
    assert list(keepalive_timers(ast.parse("with connect(url, open_timeout=5) as ws:\n    pass\n"))) == [1]
    assert list(keepalive_timers(ast.parse("connect(url, ping_interval=None)\n"))) == []
    pacing = "for n in range(10):\n    send(n)\n    time.sleep(0.05)\n"  # paces a feed: stops on nothing
    assert list(bounded_polls(ast.parse(pacing))) == []
