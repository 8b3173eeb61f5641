"""The demo feed under a real CPython 3.10, the Python of the apache/spark image that docker-compose
runs it on: laid out as the image lays it out (only what docker/feed.Dockerfile copies, with the
packages its pip line installs), every module imported, the sink publishing to a real server, and
the file spark-submit runs (docker/demo_feed.py) feeding a real server through local Spark.

Skipped, saying why, when no CPython 3.10 can be had (see tests/spark/python310.py)."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..integration.server_process import ServerProcess, sow_records
from ..waiting import HANG_S, eventually
from .python310 import Unavailable, feed_environment, image_layout


@pytest.fixture(scope="module")
def python310() -> Path:
    try:
        return feed_environment()
    except Unavailable as error:
        pytest.skip(f"the feed's Python 3.10 (the apache/spark image's) cannot be had here: {error}")


@pytest.fixture
def app(tmp_path: Path) -> Path:
    return image_layout(tmp_path / "app")


def environment(app: Path, python: Path) -> dict[str, str]:
    """As in the image: PYTHONPATH=/app and nothing of this checkout or its venv."""
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "PYSPARK"))}
    return {**keep, "PYTHONPATH": str(app), "PYSPARK_PYTHON": str(python), "PYTHONUNBUFFERED": "1"}


def run(python: Path, app: Path, code: str) -> str:
    done = subprocess.run(
        [str(python), "-c", code],
        check=False,
        cwd=app,
        env=environment(app, python),
        capture_output=True,
        text=True,
        timeout=HANG_S,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


IMPORT_ALL = """
import pkgutil, sys, importlib
assert sys.version_info[:2] == (3, 10), sys.version
import spark_feeds
names = [m.name for m in pkgutil.walk_packages(spark_feeds.__path__, "spark_feeds.")]
for name in names:
    importlib.import_module(name)
compile(open("docker/demo_feed.py").read(), "docker/demo_feed.py", "exec")
outside = sorted(m for m in sys.modules if m.split(".")[0] in ("server", "tests"))
print(sys.version_info[:2], names, outside, spark_feeds.__file__)
"""


def test_every_feed_module_imports_on_python_3_10(python310: Path, app: Path) -> None:
    out = run(python310, app, IMPORT_ALL)
    assert out.startswith("(3, 10) ")
    for module in ("spark_feeds.sink", "spark_feeds.transforms", "spark_feeds.session", "spark_feeds.demo"):
        assert f"'{module}'" in out
    assert "[] " in out, "the feed imports nothing that the image does not hold"
    assert str(app) in out, "imported from the image's layout, not from this checkout"


PUBLISH = """
from datetime import datetime
from decimal import Decimal
from spark_feeds.sink import ProtocolSink
sink = ProtocolSink({url!r}, "orders", "py310-check")
rows = [{{"order": 1, "at": datetime(2026, 1, 2, 3, 4, 5), "px": Decimal("1.5"), "raw": b"ab"}},
        {{"order": 2, "at": datetime(2026, 1, 2, 3, 4, 5).astimezone(), "px": 2}}]
print(sink.publish_rows(rows, batch_id=0), sink.publish_rows(rows, batch_id=0))
"""


def test_the_sink_publishes_from_python_3_10(python310: Path, app: Path, server: ServerProcess) -> None:
    assert run(python310, app, PUBLISH.format(url=server.url)).split() == ["2", "0"]
    records = sorted(sow_records(server.url, "orders"), key=lambda r: r["order"])
    assert records[0]["at"].startswith("2026-01-02T03:04:05")
    assert (records[0]["px"], records[0]["raw"], records[1]["px"]) == (1.5, "ab", 2)


@pytest.fixture
def feed_process(
    python310: Path, app: Path, server: ServerProcess, tmp_path: Path
) -> Iterator[subprocess.Popen[str]]:
    command = [
        str(python310),
        "docker/demo_feed.py",
        "--url",
        server.url,
        "--checkpoint",
        str(tmp_path / "ck"),
    ]
    env = {**environment(app, python310), "SPARK_MASTER": "local[2]"}
    process = subprocess.Popen(
        command,
        cwd=app,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    yield process
    os.killpg(process.pid, signal.SIGKILL)
    process.communicate(timeout=HANG_S)


@pytest.mark.slow
def test_the_demo_feed_runs_on_python_3_10(
    feed_process: subprocess.Popen[str], server: ServerProcess
) -> None:
    def published() -> bool:
        if feed_process.poll() is not None:
            pytest.fail(
                "the demo feed stopped:\n" + (feed_process.stdout.read() if feed_process.stdout else "")
            )
        return bool(sow_records(server.url, "orders") and sow_records(server.url, "positions"))

    eventually(published, "the demo feed published nothing", step=1)
    orders = sow_records(server.url, "orders")
    assert {"order", "sym", "trader", "qty", "filled", "status"} <= set(orders[0])
