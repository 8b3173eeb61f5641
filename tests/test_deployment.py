"""docker-compose.yml, checked as data (no Docker engine runs here): services, images, ports,
commands, volumes; and the feed code that runs on the Spark image's Python 3.10."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
SPARK_IMAGE = re.compile(r"apache/spark:\d+\.\d+\.\d+-scala2\.13-java17-python3-ubuntu")


def base_image(dockerfile: str) -> str:
    lines = (ROOT / dockerfile).read_text().splitlines()
    return next(line.split()[1] for line in lines if line.startswith("FROM "))


def compose() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_services_images_and_ports() -> None:
    services = compose()["services"]
    assert set(services) == {"server", "spark-master", "spark-worker", "demo-feed"}
    assert services["server"]["ports"] == ["8000:8000"]
    for name in ("spark-master", "spark-worker"):
        assert SPARK_IMAGE.fullmatch(services[name]["image"]), services[name]["image"]
    assert "7077:7077" in services["spark-master"]["ports"]
    feed_base = base_image(services["demo-feed"]["build"]["dockerfile"])
    assert feed_base == services["spark-master"]["image"], "the feed's driver matches the cluster's Spark"
    assert base_image(services["server"]["build"]["dockerfile"]).startswith("python:3.11")


def test_commands_and_volumes() -> None:
    spec = compose()
    services = spec["services"]
    server = services["server"]["command"]
    assert server[:3] == ["python", "-m", "server"]
    assert server[server.index("--host") + 1] == "0.0.0.0"
    data_dir = server[server.index("--data-dir") + 1]
    assert f"server-data:{data_dir}" in services["server"]["volumes"]
    assert "org.apache.spark.deploy.master.Master" in services["spark-master"]["command"]
    assert "spark://spark-master:7077" in services["spark-worker"]["command"]
    feed = services["demo-feed"]["command"]
    assert (
        feed[0].endswith("spark-submit") and feed[feed.index("--master") + 1] == "spark://spark-master:7077"
    )
    assert feed[feed.index("--url") + 1] == "ws://server:8000/ws"
    checkpoint = feed[feed.index("--checkpoint") + 1]
    assert any(v == f"checkpoints:{Path(checkpoint).parent}" for v in services["demo-feed"]["volumes"])
    assert "checkpoints:/checkpoints" in services["spark-worker"]["volumes"]
    assert set(spec["volumes"]) == {"server-data", "checkpoints"}
    entry = feed[feed.index("--master") + 2].replace("/app/", "")
    assert (ROOT / entry).is_file()
    assert services["demo-feed"]["depends_on"]["server"]["condition"] == "service_healthy"


def test_the_feed_code_runs_on_python_3_10() -> None:
    for path in [*(ROOT / "spark_feeds").glob("*.py"), ROOT / "docker" / "demo_feed.py"]:
        ast.parse(path.read_text(), filename=str(path), feature_version=(3, 10))
