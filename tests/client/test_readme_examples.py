"""The README's examples run as printed, against the server ``./scripts/run`` starts (the demo
configuration): only the server's address is the test's own. They write into the demo's
``examples`` topic, never into the demo's own topics."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from ..browser.feed import request
from ..integration.server_process import ServerProcess, sow_records

ROOT = Path(__file__).resolve().parents[2]
ADDRESS = "ws://127.0.0.1:8000/ws"


def block_after(heading: str, language: str = "python") -> str:
    """The first ``language`` code block of the README after ``heading``."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index(f"\n{heading}\n") :]
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
            run, check=False, cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=60
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
            timeout=60,
        )
        assert result.returncode == 0, result.stderr
        lines = result.stdout.splitlines()
        assert lines[0] == "3 traders in profit"
        assert lines[1] == "[12, 11, 10, 9, 8, 7, 6, 5, 4, 3] of 12 orders"
        assert lines[2] == "[('FX', 360), ('Rates', 420)]"
        assert sorted(line.split()[1] for line in lines[3:]) == ["ann", "ben", "cho"]
    finally:
        server.stop()
