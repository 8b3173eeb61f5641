"""What the import contracts in pyproject.toml (lint-imports) do not say: the core imports no I/O
framework, the server imports no extra, only two adapter modules reach into uvicorn; and two rules
that keep the core compilable and fast compiled (scripts/compile_core.py)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SERVER = Path(__file__).resolve().parents[1] / "server"
FORBIDDEN_IN_CORE = {"asyncio", "starlette", "uvicorn", "websockets", "server.runtime", "server.asgi"}
FORBIDDEN_IN_RUNTIME = {"starlette", "uvicorn", "server.asgi"}


def imported_modules(path: Path) -> set[str]:
    package = "server." + ".".join(path.relative_to(SERVER).with_suffix("").parts[:-1])
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rstrip(".").split(".")
                base = base[: len(base) - (node.level - 1)]
                names.add(".".join([*base, node.module] if node.module else base))
            elif node.module:
                names.add(node.module)
    return names


def violations(folder: str, forbidden: set[str]) -> list[str]:
    found = []
    for path in sorted((SERVER / folder).rglob("*.py")):
        for name in imported_modules(path):
            if any(name == bad or name.startswith(bad + ".") for bad in forbidden):
                found.append(f"{path.relative_to(SERVER)} imports {name}")
    return found


@pytest.mark.parametrize(
    ("folder", "forbidden"), [("core", FORBIDDEN_IN_CORE), ("runtime", FORBIDDEN_IN_RUNTIME)]
)
def test_imports_point_inwards(folder: str, forbidden: set[str]) -> None:
    assert violations(folder, forbidden) == []


# The server's runtime dependencies are what pyproject.toml lists; these are extras (spark, test).
NOT_RUNTIME = {"pyspark", "playwright", "jsonpatch", "hypothesis", "pytest", "yaml"}


def test_the_server_imports_no_extra() -> None:
    found = []
    for path in sorted(SERVER.rglob("*.py")):
        found += [
            f"{path.relative_to(SERVER)} imports {name}"
            for name in imported_modules(path)
            if name.split(".")[0] in NOT_RUNTIME
        ]
    assert found == []


# uvicorn's internals live in two adapter modules (its HTTP protocol and the socket handle; its
# WebSocket protocol); the composition root (the node it builds) only starts uvicorn.
UVICORN_ALLOWED = {"asgi/uvicorn_protocol.py", "asgi/uvicorn_websocket.py", "node.py"}


def test_only_the_adapter_reaches_into_uvicorn() -> None:
    found = []
    for path in sorted(SERVER.rglob("*.py")):
        where = str(path.relative_to(SERVER))
        if where not in UVICORN_ALLOWED and any(n.split(".")[0] == "uvicorn" for n in imported_modules(path)):
            found.append(where)
    assert found == []


def test_the_check_sees_relative_imports() -> None:
    # The check itself must be able to fail: runtime really does import core relatively.
    assert any("server.core" in name for name in imported_modules(SERVER / "runtime" / "hub.py"))


def fields_typed_for_type_checking_only(path: Path) -> list[str]:
    """The class attributes of ``path`` annotated with a name imported only under
    ``TYPE_CHECKING``. The compiled core makes a dataclass with its field types, so such a name
    must exist when the module runs (importing the module segfaulted when it did not)."""
    tree = ast.parse(path.read_text())
    checking_only: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for imported in ast.walk(node):
                if isinstance(imported, ast.Import | ast.ImportFrom):
                    checking_only.update(alias.asname or alias.name.split(".")[0] for alias in imported.names)
    found = []
    for cls in (node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)):
        for statement in cls.body:
            if isinstance(statement, ast.AnnAssign):
                named = {name.id for name in ast.walk(statement.annotation) if isinstance(name, ast.Name)}
                for text in ast.walk(statement.annotation):
                    if isinstance(text, ast.Constant) and isinstance(text.value, str):
                        parsed = ast.parse(text.value, mode="eval")
                        named |= {name.id for name in ast.walk(parsed) if isinstance(name, ast.Name)}
                found += [
                    f"{path.relative_to(SERVER)}: {cls.name} names {name}" for name in named & checking_only
                ]
    return found


def test_class_attributes_of_the_core_name_types_that_exist_at_run_time() -> None:
    found = [
        line
        for path in sorted((SERVER / "core").rglob("*.py"))
        for line in fields_typed_for_type_checking_only(path)
    ]
    assert found == []


def unions_checked_against(text: str) -> list[int]:
    """The lines of ``isinstance`` calls in ``text`` whose classes are written ``A | B``."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("isinstance", "issubclass")
        and len(node.args) == 2
        and isinstance(node.args[1], ast.BinOp)
        and isinstance(node.args[1].op, ast.BitOr)
    ]


def test_the_core_checks_classes_against_tuples() -> None:
    """Compiled, ``isinstance(x, A | B)`` builds the union anew on every call (a few percent of
    a socket writer's time, when the outbox did it per queued entry): the core writes tuples."""
    found = [
        f"{path.relative_to(SERVER)}:{line}"
        for path in sorted((SERVER / "core").rglob("*.py"))
        for line in unions_checked_against(path.read_text())
    ]
    assert found == []


def test_the_union_check_sees_a_union() -> None:
    sample = (
        "ok = isinstance(1, (int, str))\nbad = isinstance(1, int | str)\nworse = issubclass(int, int | str)\n"
    )
    assert unions_checked_against(sample) == [2, 3]
