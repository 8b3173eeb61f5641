"""The suite's rule (tests/README.md), the part about what a wait gives up after: the hang guard,
``HANG_S`` (tests/waiting.py), or a multiple of it for work known to take longer (an install, a
Spark job). A timeout written as a number of its own (``recv(timeout=10)``, ``until(done, 30)``,
``def request(..., timeout=10.0)``, ``ready.wait(15)``) is a time limit a busy machine outruns: the
busy run was red on such numbers, a ten-second read that took eleven, a two-minute read of an ack
for 100,000 publishes that took longer beside other work.

An ``ast`` walk over every test module finds a timeout given as a number, directly or through a
module-level name bound to one: as the keyword ``timeout`` or ``open_timeout`` of any call, as a
positional timeout of the suite's own functions (those with a ``timeout`` parameter) and of the
standard library's ``Event.wait``, ``Thread.join``, ``Popen.wait``, ``asyncio.wait_for`` and
``asyncio.timeout``, and as
the default of a ``timeout`` parameter. A timeout inside a ``try`` that catches ``TimeoutError`` is
a step of a loop (look at a stop flag again), not a verdict, and is not one; nor is one a
``contextlib.suppress`` of it lets pass (a best-effort close in a fixture's teardown).

A library's own default is such a number too: websockets' ``connect`` gives up on a handshake
after 10 s (``open_timeout``) and closes a socket whose pong is 20 s late (``ping_interval``,
``ping_timeout``). The busy run lost a handshake there; every ``connect`` of websockets names
both (``open_timeout=HANG_S, ping_interval=None``; the server's heartbeat tells a dead socket).

A read of "whatever arrives within 0.5 s" (``Client.silence``) is the same limit the other way: a
message a busy server sends after the quiet period is missed, so a test that expects it fails
and one that expects nothing passes whatever the server did. Reads go to an event instead
(``Client.settled``: to the ack of a flush of the reader's own socket). ``QUIET_READS`` names the
modules that keep a quiet period, where the wait is timed by the protocol itself.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence

from .test_waiting_rule import FUNCTIONS, modules

TIMEOUT_KEYWORDS = {"timeout", "open_timeout"}
# The standard library's waits whose timeout is positional: name -> its index.
LIBRARY_WAITS = {"wait": 0, "join": 0, "wait_for": 1, "timeout": 0}
# The module that defines the hang guard.
WAITING = "tests/waiting.py"
# path -> why a quiet period is what it waits for there.
QUIET_READS = {
    "tests/integration/test_aggregation.py": "a conflation interval: nothing more within it",
    "tests/cluster/test_cluster.py": "an expiry on three nodes: no second OOF after it, and a "
    "flush on one node's socket says nothing of the others' expiry timers",
}


def _numbers(tree: ast.AST) -> set[str]:
    """Module-level names bound to a number: ``READ_S = 10``."""
    return {
        target.id
        for node in getattr(tree, "body", [])
        if isinstance(node, ast.Assign) and _is_number(node.value, set())
        for target in node.targets
        if isinstance(target, ast.Name)
    }


def _is_number(node: ast.AST | None, numbers: set[str]) -> bool:
    if isinstance(node, ast.UnaryOp):
        node = node.operand
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    return isinstance(node, ast.Name) and node.id in numbers


def timeout_positions(trees: Sequence[ast.AST]) -> dict[str, set[int]]:
    """For each name of a function of the suite with a ``timeout`` parameter, its positions
    (``self`` not counted), with the standard library's positional waits."""
    positions: dict[str, set[int]] = {name: {index} for name, index in LIBRARY_WAITS.items()}
    for tree in trees:
        for function in ast.walk(tree):
            if isinstance(function, FUNCTIONS):
                names = [argument.arg for argument in (*function.args.posonlyargs, *function.args.args)]
                if names[:1] in (["self"], ["cls"]):
                    names = names[1:]
                for index, name in enumerate(names):
                    if name in TIMEOUT_KEYWORDS:
                        positions.setdefault(function.name, set()).add(index)
    return positions


def _caught_timeouts(tree: ast.AST) -> set[int]:
    """The ids of the calls inside a ``try`` that catches ``TimeoutError``, or a ``with
    contextlib.suppress`` of it (or of every ``Exception``)."""
    caught: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try):
            kinds = [ast.unparse(handler.type) for handler in node.handlers if handler.type]
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            managers = [item.context_expr for item in node.items if isinstance(item.context_expr, ast.Call)]
            kinds = [
                ast.unparse(argument)
                for manager in managers
                if ast.unparse(manager.func).endswith("suppress")
                for argument in manager.args
            ]
        else:
            continue
        if any("TimeoutError" in kind or kind.endswith("Exception") for kind in kinds):
            caught |= {id(inner) for statement in node.body for inner in ast.walk(statement)}
    return caught


def numbered_timeouts(tree: ast.AST, positions: dict[str, set[int]]) -> Iterator[int]:
    """Lines of a timeout given as a number of its own (the module docstring says where)."""
    numbers, caught = _numbers(tree), _caught_timeouts(tree)
    for node in ast.walk(tree):
        if isinstance(node, FUNCTIONS):
            arguments = node.args
            plain = [*arguments.posonlyargs, *arguments.args]
            defaults = list(
                zip(plain[len(plain) - len(arguments.defaults) :], arguments.defaults, strict=True)
            )
            defaults += [
                (a, d) for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True) if d
            ]
            if any(a.arg in TIMEOUT_KEYWORDS and _is_number(d, numbers) for a, d in defaults):
                yield node.lineno
        if not isinstance(node, ast.Call) or id(node) in caught:
            continue
        called = node.func
        name = called.id if isinstance(called, ast.Name) else getattr(called, "attr", "")
        given = [keyword.value for keyword in node.keywords if keyword.arg in TIMEOUT_KEYWORDS]
        given += [node.args[index] for index in positions.get(name, ()) if index < len(node.args)]
        if any(_is_number(value, numbers) for value in given):
            yield node.lineno


# What a websockets connect must name: its defaults are limits of their own.
CONNECT_LIMITS = ("open_timeout", "ping_interval")


def library_defaults(tree: ast.AST) -> Iterator[int]:
    """Lines of a websockets ``connect`` that leaves one of ``CONNECT_LIMITS`` at its default
    (``**options`` passes: the caller names them)."""
    local = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("websockets")
        for alias in node.names
        if alias.name == "connect"
    }
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        called = node.func
        if (isinstance(called, ast.Name) and called.id in local) or (
            isinstance(called, ast.Attribute)
            and called.attr == "connect"
            and ast.unparse(called.value) == "websockets"
        ):
            named = {keyword.arg for keyword in node.keywords}
            if None not in named and not named.issuperset(CONNECT_LIMITS):
                yield node.lineno


def test_every_wait_gives_up_after_the_hang_guard() -> None:
    every = [(name, tree) for name, tree in modules() if name != WAITING]
    positions = timeout_positions([tree for _, tree in every])
    found = [f"{name}:{line}" for name, tree in every for line in numbered_timeouts(tree, positions)]
    assert not found, "timeouts of their own (HANG_S, or a multiple of it): " + ", ".join(found)
    defaults = [f"{name}:{line}" for name, tree in every for line in library_defaults(tree)]
    assert not defaults, (
        "websockets connects with its own limits (name "
        + ", ".join(CONNECT_LIMITS)
        + "): "
        + ", ".join(defaults)
    )


def quiet_reads(tree: ast.AST) -> Iterator[int]:
    """Lines of a read for a quiet period: ``client.silence(...)``."""
    for node in ast.walk(tree):
        called = node.func if isinstance(node, ast.Call) else None
        if isinstance(called, ast.Attribute) and called.attr == "silence":
            yield node.lineno


def test_reads_go_to_an_event_not_to_a_quiet_period() -> None:
    found = [
        f"{name}:{line}" for name, tree in modules() if name not in QUIET_READS for line in quiet_reads(tree)
    ]
    assert not found, "reads for a quiet period (Client.settled): " + ", ".join(found)


# The rule's own cases: source, and the lines it must flag there (none: the source is allowed).
CASES: list[tuple[str, list[int]]] = [
    ("ws.recv(timeout=10)\n", [1]),
    ("connect(url, open_timeout=-1)\n", [1]),
    ("READ_S = 5\nws.recv(timeout=READ_S)\n", [2]),
    ("def until(done, timeout=HANG_S):\n    pass\nuntil(ok, 30)\n", [3]),
    ("def request(ws, timeout: float = 10.0):\n    pass\n", [1]),
    ("def logged(*, timeout=10.0):\n    pass\n", [1]),
    ("ready.wait(15)\nthread.join(10)\nawait asyncio.wait_for(task, 1)\n", [1, 2, 3]),
    ("async with asyncio.timeout(10):\n    pass\n", [1]),
    # The guard, a multiple of it, a name of another kind, a step caught and taken again.
    ("ws.recv(timeout=HANG_S)\n", []),
    ("subprocess.run(command, timeout=5 * HANG_S)\n", []),
    ("def until(done, timeout=HANG_S):\n    pass\nuntil(ok, deadline)\n", []),
    ("try:\n    ws.recv(timeout=0.2)\nexcept TimeoutError:\n    pass\n", []),
    ("with contextlib.suppress(Exception):\n    async with asyncio.timeout(1):\n        await close()\n", []),
    ("ws.send(frame, 10)\n", []),
]
DEFAULT_CASES = [
    ("from websockets.sync.client import connect\nconnect(url, ping_interval=None)\n", [2]),
    ("import websockets\nawait websockets.connect(url)\n", [2]),
    ("import websockets\nawait websockets.connect(url, open_timeout=HANG_S, ping_interval=None)\n", []),
    ("from websockets.asyncio.client import connect as ws\nws(url, **options)\n", []),
    ("client.connect(url)\n", []),
]
QUIET_CASES = [("got = await reader.silence(1.5)\n", [1]), ("got = await reader.settled()\n", [])]


def test_the_rule_finds_what_it_forbids() -> None:
    for source, flagged in CASES:
        tree = ast.parse(source)
        assert sorted(set(numbered_timeouts(tree, timeout_positions([tree])))) == flagged, source
    for source, flagged in DEFAULT_CASES:
        assert list(library_defaults(ast.parse(source))) == flagged, source
    for source, flagged in QUIET_CASES:
        assert list(quiet_reads(ast.parse(source))) == flagged, source
