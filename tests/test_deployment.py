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

from server.__main__ import load_demo_config
from server.core.settings.config import parse_config

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


NODES = ("node1", "node2", "node3")


def test_services_images_and_ports() -> None:
    services = compose()["services"]
    assert set(services) == {
        "redis",
        *NODES,
        "lb",
        "spark-master",
        "spark-worker",
        "demo-feed",
        "checkpoints-owner",
    }
    # One address for clients: the load balancer, from an official image.
    assert [name for name, s in services.items() if "8000:8000" in s.get("ports", [])] == ["lb"]
    assert re.fullmatch(r"haproxy:\d+\.\d+-alpine", services["lb"]["image"])
    assert re.fullmatch(r"redis:7\.\d+-alpine", services["redis"]["image"])
    for name in ("spark-master", "spark-worker"):
        assert SPARK_IMAGE.fullmatch(services[name]["image"]), services[name]["image"]
    # Spark standalone has no authentication: nothing of it is published beyond the host's loopback.
    for name, service in services.items():
        for port in service.get("ports", []):
            assert name == "lb" or str(port).startswith("127.0.0.1:"), (name, port)
    feed_base = base_image(services["demo-feed"]["build"]["dockerfile"])
    assert feed_base == services["spark-master"]["image"], "the feed's driver matches the cluster's Spark"
    for name in NODES:
        assert base_image(services[name]["build"]["dockerfile"]).startswith("python:3.11")


def test_the_nodes_form_one_cluster_on_the_compose_redis() -> None:
    services = compose()["services"]
    redis = services["redis"]
    assert redis["command"][:1] == ["redis-server"]
    command = redis["command"]
    assert command[command.index("--appendonly") + 1] == "yes"
    assert command[command.index("--appendfsync") + 1] == "always", "persisted means on disk"
    assert any(v.endswith(":/data") for v in redis["volumes"])
    assert "redis-cli" in redis["healthcheck"]["test"]
    configs = set()
    for name in NODES:
        node = services[name]
        command = node["command"]
        assert command[:3] == ["python", "-m", "server"]
        assert command[command.index("--host") + 1] == "0.0.0.0"
        path = command[command.index("--config") + 1]
        mount = next(v for v in node["volumes"] if v.split(":")[1] == path)
        configs.add(mount.split(":")[0])
        assert "/healthz" in " ".join(node["healthcheck"]["test"])
        assert node["depends_on"]["redis"]["condition"] == "service_healthy"
    assert len(configs) == 1, "every node serves the same configuration"
    config = parse_config(tomllib.loads((ROOT / configs.pop()).read_text()))
    assert config.cluster is not None and config.cluster.redis_url.startswith("redis://redis:6379")
    assert [t.name for t in config.topics] == [t.name for t in load_demo_config().topics]


def test_the_load_balancer_sends_sockets_to_healthy_nodes() -> None:
    services = compose()["services"]
    lb = services["lb"]
    mount = next(v for v in lb["volumes"] if v.endswith("haproxy.cfg:ro"))
    cfg = (ROOT / mount.split(":")[0]).read_text()
    assert re.search(r"^\s*bind :8000$", cfg, re.M)
    servers = re.findall(r"^\s*server (\S+) (\S+):8000 check resolvers docker init-addr (\S+)$", cfg, re.M)
    assert servers == [(name, name, "last,libc,none") for name in NODES], "resolved at run time"
    assert re.search(r"^resolvers docker\n\s+nameserver \S+ 127\.0\.0\.11:53$", cfg, re.M)
    assert re.search(r"^\s*option forwardfor$", cfg, re.M), "the nodes see the client's address"
    frontend = cfg[cfg.index("frontend sowpush") : cfg.index("backend nodes")]
    assert re.search(r"^\s*http-request del-header X-Forwarded-For$", frontend, re.M), (
        "and none a client made up"
    )
    for name in NODES:
        assert services[name]["environment"]["FORWARDED_ALLOW_IPS"] == "*"
    assert re.search(r"option httpchk GET /healthz", cfg) and re.search(r"expect status 200", cfg)
    assert re.search(r"^\s*timeout tunnel \S+", cfg, re.M), "WebSockets outlive the client timeout"
    assert {lb["depends_on"][name]["condition"] for name in NODES} == {"service_healthy"}
    assert "/healthz" in " ".join(lb["healthcheck"]["test"])


def test_commands_and_volumes() -> None:
    spec = compose()
    services = spec["services"]
    assert "org.apache.spark.deploy.master.Master" in services["spark-master"]["command"]
    assert "spark://spark-master:7077" in services["spark-worker"]["command"]
    feed = services["demo-feed"]["command"]
    # The driver is the Python process, so that SIGTERM reaches it (not spark-submit's JVM first);
    # init: true reaps the JVM it starts.
    assert feed[0] == "python3" and services["demo-feed"]["init"] is True
    assert services["demo-feed"]["environment"]["SPARK_MASTER"] == "spark://spark-master:7077"
    assert feed[feed.index("--url") + 1] == "ws://lb:8000/ws", "the feed publishes into the cluster"
    checkpoint = feed[feed.index("--checkpoint") + 1]
    assert any(v == f"checkpoints:{Path(checkpoint).parent}" for v in services["demo-feed"]["volumes"])
    assert "checkpoints:/checkpoints" in services["spark-worker"]["volumes"]
    assert set(spec["volumes"]) == {"redis-data", "checkpoints"}
    assert services["checkpoints-owner"]["image"] == services["spark-worker"]["image"]
    entry = feed[1].replace("/app/", "")
    assert (ROOT / entry).is_file()
    heartbeat = feed[feed.index("--heartbeat") + 1]
    assert heartbeat in " ".join(services["demo-feed"]["healthcheck"]["test"])
    assert services["demo-feed"]["depends_on"]["lb"]["condition"] == "service_healthy"


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


def test_every_service_that_keeps_running_has_a_health_check_and_waits_for_healthy_ones() -> None:
    services = compose()["services"]
    one_shot = {"checkpoints-owner"}
    for name, service in services.items():
        if name in one_shot:
            continue
        test = service["healthcheck"]["test"]
        assert test[0] == "CMD" and len(test) > 1, name
        for needed, condition in service.get("depends_on", {}).items():
            expected = "service_completed_successfully" if needed in one_shot else "service_healthy"
            assert condition["condition"] == expected, (name, needed)


def test_the_feed_image_runs_the_spark_the_tests_run() -> None:
    """pyproject.toml pins PySpark to the Spark of the images: the tests' local Spark, the feed's
    driver and the cluster's master and worker are one version."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    [pin] = [r for r in project["project"]["optional-dependencies"]["spark"] if r.startswith("pyspark")]
    version = re.fullmatch(r"pyspark==(\d+\.\d+\.\d+)", pin)
    assert version is not None, f"{pin}: pinned to one version"
    images = {base_image("docker/feed.Dockerfile")} | {
        service["image"] for service in compose()["services"].values() if "spark" in service.get("image", "")
    }
    assert images == {f"apache/spark:{version.group(1)}-scala2.13-java17-python3-ubuntu"}
    # Its driver imports the image's own PySpark (not pip's): the build proves that it can.
    dockerfile = (ROOT / "docker" / "feed.Dockerfile").read_text()
    assert re.search(r'^RUN python3 -c "import py4j, pyspark, spark_feeds\.demo"$', dockerfile, re.M)


def test_the_server_image_runs_the_compiled_core_and_takes_nothing_of_the_host() -> None:
    dockerfile = (ROOT / "docker" / "server.Dockerfile").read_text()
    _, build, run = re.split(r"^FROM ", dockerfile, flags=re.M)
    assert "scripts/compile_core.py" in build and "native.running_compiled()" in build, "built, and checked"
    assert "gcc" in build and "gcc" not in run, "a compiler to build with, none to run with"
    assert "COPY --from=build /app/sowpush_core__mypyc*.so ./" in run
    assert "COPY --from=build /app/server/core ./server/core" in run, "with the stamp of its sources"
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {".git", ".venv", "build", "data", "**/*.so", "server/core/native.stamp"} <= set(ignored)
