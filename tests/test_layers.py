"""What the import contracts in pyproject.toml (lint-imports) do not say: the core imports no I/O
framework, the server imports no extra, and only two adapter modules reach into uvicorn."""

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
