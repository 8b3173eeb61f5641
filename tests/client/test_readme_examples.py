"""The README's examples run as printed, against the server ``./scripts/run`` starts (the demo
configuration): only the server's address is the test's own. They write into the demo's
``examples`` topic, never into the demo's own topics."""

from __future__ import annotations

import ast
import asyncio
import contextlib
import inspect
import io
import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

from ..browser.feed import request
from ..integration.server_process import ServerProcess, sow_records
from ..waiting import HANG_S

ROOT = Path(__file__).resolve().parents[2]
ADDRESS = "ws://127.0.0.1:8000/ws"


def block_after(heading: str, language: str = "python") -> str:
    """The first ``language`` code block of the README after ``heading``."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index(f"\n{heading}") :]
    start = section.index(f"```{language}\n") + len(f"```{language}\n")
    return section[start : section.index("```", start)]


def test_the_python_publisher_runs_as_printed(tmp_path: Path) -> None:
    code = block_after("### The Python publisher")
    assert ADDRESS in code, "the example names the server ./scripts/run starts"
    server = ServerProcess(None, tmp_path / "data")  # the demo configuration, as ./scripts/run serves it
    try:
        script = tmp_path / "example.py"
        script.write_text(code.replace(ADDRESS, server.url))
        environment = {**os.environ, "PYTHONPATH": str(ROOT)}
        run = [sys.executable, str(script)]
        result = subprocess.run(
            run, check=False, cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=HANG_S
        )
        assert result.returncode == 0, result.stderr
        records = {record["id"]: record["qty"] for record in sow_records(server.url, "examples")}
        assert len(records) == 1000 and records[7] == 70  # the rows after the single publish
        assert sow_records(server.url, "orders") == [], "the demo's topics are left alone"
        assert (tmp_path / "prices-feed.store").exists()
    finally:
        server.stop()


def test_the_python_subscriber_runs_as_printed(tmp_path: Path) -> None:
    code = block_after("### The Python subscriber")
    assert ADDRESS in code
    server = ServerProcess(None, tmp_path / "data")
    try:
        traders = [{"trader": name, "pnl": 100.0 * (n + 1)} for n, name in enumerate(["ann", "ben", "cho"])]
        orders = [{"order": n, "qty": 10 * n, "desk": "FX" if n % 2 else "Rates"} for n in range(1, 13)]
        request(server.url, [{"c": "publish", "t": "positions", "data": record} for record in traders])
        request(server.url, [{"c": "publish", "t": "orders", "data": record} for record in orders])
        script = tmp_path / "example.py"
        script.write_text(code.replace(ADDRESS, server.url))
        environment = {**os.environ, "PYTHONPATH": str(ROOT)}
        result = subprocess.run(
            [sys.executable, str(script)],
            check=False,
            cwd=tmp_path,
            env=environment,
            capture_output=True,
            text=True,
            timeout=HANG_S,
        )
        assert result.returncode == 0, result.stderr
        lines = result.stdout.splitlines()
        assert lines[0] == "3 traders in profit"
        assert lines[1] == "[12, 11, 10, 9, 8, 7, 6, 5, 4, 3] of 12 orders"
        assert lines[2] == "[('FX', 360), ('Rates', 420)]"
        assert sorted(line.split()[1] for line in lines[3:]) == ["ann", "ben", "cho"]
    finally:
        server.stop()


async def run_cell(source: str, namespace: dict[str, Any]) -> Any:
    """One notebook cell as IPython runs it: top-level await allowed, the value of its last line
    when that is an expression."""
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    *body, last = ast.parse(source).body
    if not isinstance(last, ast.Expr):
        body, last = [*body, last], None
    done = eval(compile(ast.Module(body=body, type_ignores=[]), "<cell>", "exec", flags=flags), namespace)
    if inspect.iscoroutine(done):
        await done
    if last is None:
        return None
    value = eval(compile(ast.Expression(body=last.value), "<cell>", "eval", flags=flags), namespace)
    return await value if inspect.iscoroutine(value) else value


def test_the_notebook_cells_run_in_order_as_a_kernel_runs_them(tmp_path: Path) -> None:
    """Each ``# %%`` cell run in one namespace on one event loop that keeps running between cells."""
    code = block_after("**In a notebook.**")
    assert ADDRESS in code
    cells = ["# %%" + cell for cell in code.split("# %%")[1:]]  # each from its marker line
    assert len(cells) == 4
    server = ServerProcess(None, tmp_path / "data")
    try:
        names = ["ann", "ben", "cho", "dee"]
        traders = [{"trader": name, "pnl": 10.5 * (n + 1)} for n, name in enumerate(names)]
        request(server.url, [{"c": "publish", "t": "positions", "data": record} for record in traders])
        namespace: dict[str, Any] = {}
        output = io.StringIO()
        labels: list[str | None] = []

        async def kernel() -> list[Any]:
            values = []
            for cell in cells:
                with contextlib.redirect_stdout(output):
                    values.append(await run_cell(cell.replace(ADDRESS, server.url), namespace))
                await asyncio.sleep(0.05)  # the kernel's loop runs between cells
                if len(values) == 1:  # the connection names itself on the status page
                    with urllib.request.urlopen(server.http + "/status.json", timeout=HANG_S) as answer:
                        labels.extend(row["label"] for row in json.loads(answer.read())["slowest"])
            return values

        values = asyncio.run(kernel())
        assert list(values[1]["trader"]) == ["dee", "cho", "ben", "ann"]  # the sorted DataFrame
        lines = output.getvalue().splitlines()
        assert len(lines) == 3 and all(line.startswith("snapshot ") for line in lines), lines
        assert labels == ["ann, risk notebook"]
    finally:
        server.stop()
