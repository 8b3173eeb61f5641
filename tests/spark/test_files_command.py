"""``python -m spark_feeds.files`` says what is wrong in one line, before Spark starts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ..integration.server_process import ServerProcess, sow_records
from ..waiting import HANG_S

ROOT = Path(__file__).resolve().parents[2]


def files_command(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "spark_feeds.files", *args]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=2 * HANG_S, check=False)


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (
            {"--url": "http://127.0.0.1:8000/ws"},
            "argument --url: 'http://127.0.0.1:8000/ws' is not a WebSocket URL",
        ),
        ({"--path": "missing"}, "is not a directory"),
        (
            {"--trigger": "soon"},
            "argument --trigger: takes available-now, once or a number of seconds, not 'soon'",
        ),
        ({"--trigger": "-5"}, "not '-5'"),
        ({"--format": "xml"}, "argument --format: invalid choice: 'xml'"),
        ({"--url": "ws://127.0.0.1:9/ws"}, "cannot reach the server at ws://127.0.0.1:9/ws"),
    ],
)
def test_a_mistake_costs_one_line_and_no_spark(tmp_path: Path, change: dict[str, str], said: str) -> None:
    arguments = {
        "--url": "ws://127.0.0.1:9/ws",
        "--topic": "orders",
        "--path": str(tmp_path),
        "--checkpoint": str(tmp_path / "checkpoint"),
        **change,
    }
    if change.get("--path") == "missing":
        arguments["--path"] = str(tmp_path / "missing")
    result = files_command(*[part for pair in arguments.items() for part in pair])
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and said in lines[0], result.stderr
    assert not (tmp_path / "checkpoint").exists(), "Spark never started"


def test_the_help_describes_every_option() -> None:
    result = files_command("--help")
    assert result.returncode == 0
    for option in ("--url", "--topic", "--path", "--format", "--checkpoint", "--mode", "--trigger"):
        assert option in result.stdout
    for default in ("(default: json)", "(default: publish)", "(default: off)", "the default"):
        assert default in result.stdout


@pytest.mark.slow
def test_a_run_logs_each_batch_and_exits_0_when_done(server: ServerProcess, tmp_path: Path) -> None:
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    (incoming / "a.json").write_text("\n".join(f'{{"order": {n}, "qty": {n}}}' for n in range(5)))
    result = files_command(
        *("--url", server.url, "--topic", "orders", "--path", str(incoming)),
        *("--checkpoint", str(tmp_path / "checkpoint")),
    )
    assert result.returncode == 0, result.stderr
    assert "orders: batch 0: 5 rows sent and acknowledged in" in result.stderr
    for noise in ("Traceback", "[Stage", " ERROR ", "log4j"):
        assert noise not in result.stderr, result.stderr
    assert sorted(r["order"] for r in sow_records(server.url, "orders")) == list(range(5))
