"""docker-compose.yml and the Dockerfiles, checked as data (no Docker engine runs here): services,
images, ports, commands, volumes and who owns them; and the feed code's syntax and standard-library
names against Python 3.10, the Spark image's (tests/spark/test_python310.py runs it under 3.10)."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
SPARK_IMAGE = re.compile(r"apache/spark:\d+\.\d+\.\d+-scala2\.13-java17-python3-ubuntu")
SPARK_USER = "spark"  # the apache/spark image's user, uid 185, which its containers run as
# Standard-library names that Python 3.10 lacks (3.11 added them).
NEW_IN_3_11 = {
    "datetime": {"UTC"},
    "typing": {
        "Self",
        "LiteralString",
        "Never",
        "assert_never",
        "reveal_type",
        "Required",
        "NotRequired",
        "TypeVarTuple",
        "Unpack",
        "dataclass_transform",
        "assert_type",
        "get_overloads",
        "clear_overloads",
    },
    "enum": {
        "StrEnum",
        "ReprEnum",
        "verify",
        "member",
        "nonmember",
        "global_enum",
        "EnumCheck",
        "FlagBoundary",
    },
    "asyncio": {"TaskGroup", "timeout", "timeout_at", "Runner", "Timeout", "Barrier"},
    "contextlib": {"chdir"},
    "hashlib": {"file_digest"},
    "operator": {"call"},
    "logging": {"getLevelNamesMapping"},
}
NEW_MODULES_IN_3_11 = {"tomllib", "wsgiref.types"}
NEW_BUILTINS_IN_3_11 = {"ExceptionGroup", "BaseExceptionGroup"}


def base_image(dockerfile: str) -> str:
    lines = (ROOT / dockerfile).read_text().splitlines()
    return next(line.split()[1] for line in lines if line.startswith("FROM "))


def compose() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_services_images_and_ports() -> None:
    services = compose()["services"]
    assert set(services) == {"server", "spark-master", "spark-worker", "demo-feed", "checkpoints-owner"}
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
    assert services["checkpoints-owner"]["image"] == services["spark-worker"]["image"]
    entry = feed[feed.index("--master") + 2].replace("/app/", "")
    assert (ROOT / entry).is_file()
    assert services["demo-feed"]["depends_on"]["server"]["condition"] == "service_healthy"


def dockerfile_lines(dockerfile: str) -> list[str]:
    return [
        line.strip() for line in (ROOT / dockerfile).read_text().splitlines() if line.strip()[:1].isalpha()
    ]


def test_the_checkpoints_volume_belongs_to_the_spark_user() -> None:
    """Every container that writes the checkpoints volume runs as spark, and the volume is spark's
    before any of them starts: made so in the feed image (an empty named volume takes the owner of
    the directory it is mounted on) and by a one-shot chown that the others wait for (the worker's
    plain image has no /checkpoints, so a volume it mounts first would be root's)."""
    services = compose()["services"]
    mounts = {
        name: s
        for name, s in services.items()
        if any(v.startswith("checkpoints:") for v in s.get("volumes", []))
    }
    assert set(mounts) == {"checkpoints-owner", "spark-worker", "demo-feed"}
    owner = mounts.pop("checkpoints-owner")
    path = next(v for v in owner["volumes"] if v.startswith("checkpoints:")).split(":")[1]
    assert owner["user"] == "root" and SPARK_IMAGE.fullmatch(owner["image"])
    assert owner["command"] in (
        ["chown", "-R", f"{SPARK_USER}:{SPARK_USER}", path],
        ["chown", "-R", "185:185", path],
    )
    for name, service in mounts.items():
        assert service.get("user", SPARK_USER) in (SPARK_USER, "185", "185:185"), f"{name} runs as spark"
        assert f"checkpoints:{path}" in service["volumes"]
        condition = service["depends_on"]["checkpoints-owner"]["condition"]
        assert condition == "service_completed_successfully", f"{name} starts after the chown"

    lines = dockerfile_lines(services["demo-feed"]["build"]["dockerfile"])
    users = [line.split()[1] for line in lines if line.startswith("USER ")]
    assert users[-1] == SPARK_USER, "the feed runs as the image's user"
    volume = next(i for i, line in enumerate(lines) if line.startswith("VOLUME"))
    assert path in lines[volume]
    made = [
        i
        for i, line in enumerate(lines[:volume])
        if line.startswith("RUN")
        and f"mkdir -p {path}" in line
        and f"chown {SPARK_USER}:{SPARK_USER} {path}" in line
    ]
    assert made, f"the feed image makes {path} owned by {SPARK_USER} before declaring the volume"


def feed_sources() -> list[Path]:
    return [*sorted((ROOT / "spark_feeds").glob("*.py")), ROOT / "docker" / "demo_feed.py"]


def test_the_feed_code_parses_as_python_3_10_and_uses_no_3_11_names() -> None:
    """The check that needs no Python 3.10 (test_python310.py imports the feed under a real one)."""
    for path in feed_sources():
        tree = ast.parse(path.read_text(), filename=str(path), feature_version=(3, 10))
        aliases: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                assert node.module not in NEW_MODULES_IN_3_11, f"{path.name}: {node.module}"
                bad = NEW_IN_3_11.get(node.module, set()) & {alias.name for alias in node.names}
                assert not bad, f"{path.name}:{node.lineno}: {node.module}.{bad} is new in 3.11"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    assert alias.name not in NEW_MODULES_IN_3_11, f"{path.name}: {alias.name}"
                    aliases[alias.asname or alias.name] = alias.name
            elif isinstance(node, ast.Name):
                assert node.id not in NEW_BUILTINS_IN_3_11, f"{path.name}:{node.lineno}: {node.id}"
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                module = aliases.get(node.value.id)
                assert node.attr not in NEW_IN_3_11.get(module or "", set()), f"{path.name}:{node.lineno}"


def test_ruff_holds_the_feed_to_python_3_10() -> None:
    ruff = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ruff"]
    assert ruff["per-file-target-version"]["spark_feeds/**"] == "py310"
    assert ruff["per-file-target-version"]["docker/*.py"] == "py310"
