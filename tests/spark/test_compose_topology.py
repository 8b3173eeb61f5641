"""docker-compose.yml's topology, every process of it started natively on loopback, from the files
the compose file runs: Redis; three nodes serving docker/cluster.toml; Debian's HAProxy with
docker/haproxy.cfg; a Spark standalone master and worker from the PySpark package (the version
the images run: tests/test_deployment.py); the demo feed started as the compose file starts it,
its driver a Python process pointed at the master. Data the feed publishes through the load
balancer reaches every node, a subscriber through the load balancer follows it live, and the feed
stops on SIGTERM (``docker compose stop``) with exit status 0 and a quiet console."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tomllib
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import orjson
import pyspark
import pytest
from websockets.sync.client import connect

from .. import waiting
from ..cluster.conftest import wait_ready
from ..cluster.redis_process import RedisProcess, free_port
from ..integration.server_process import ServerProcess, sow_records, toml_value, write_config
from ..waiting import HANG_S
from .jobs import ROOT, group_alive, kill, launch, wait_until
from .test_demo_console import assert_quiet_exit, stop

pytestmark = pytest.mark.slow

HAPROXY = shutil.which("haproxy") or shutil.which("haproxy", path="/usr/sbin")  # (not on a user's PATH)
SPARK_HOME = Path(pyspark.__file__).parent
NODES = 3


def compose_feed() -> list[str]:
    """The demo feed's command and environment as docker-compose.yml gives them."""
    import yaml  # noqa: PLC0415 (the test extra's; only this module reads the compose file)

    service = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]["demo-feed"]
    command: list[str] = service["command"]
    assert command[0] == "python3" and service["environment"]["SPARK_MASTER"].startswith("spark://")
    return command[1:]


def node_config(directory: Path, redis_url: str, balancer: str) -> Path:
    """docker/cluster.toml with this machine's Redis and the load balancer's address as its name."""
    cluster = tomllib.loads((ROOT / "docker" / "cluster.toml").read_text())
    settings = {**cluster["cluster"], "redis_url": redis_url}
    section = "\n[cluster]\n" + "\n".join(f"{k} = {toml_value(v)}" for k, v in settings.items()) + "\n"
    return write_config(directory / "cluster.toml", {"server_names": [balancer]}, cluster["topic"], section)


def haproxy_config(directory: Path, port: int, nodes: list[ServerProcess]) -> Path:
    """docker/haproxy.cfg with loopback addresses for the compose network's names."""
    text = (ROOT / "docker" / "haproxy.cfg").read_text()
    text = text.replace("bind :8000", f"bind 127.0.0.1:{port}")
    for index, node in enumerate(nodes, 1):
        text, count = re.subn(rf"node{index}:8000 ", f"127.0.0.1:{node.port} ", text)
        assert count == 1, f"node{index} is not in docker/haproxy.cfg"
    path = directory / "haproxy.cfg"
    path.write_text(text)
    return path


# The JVMs' options of the tests' Spark (tests/conftest.py) for the master and the worker, and
# through a spark-defaults.conf for the executors they start: a quarter of the CPU for the small
# jobs a test runs, which compute the same.
JVM_OPTIONS = os.environ.get("SPARK_SUBMIT_OPTS", "")


def spark_class(*args: str, log: Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """``spark-class`` of the PySpark package, its own process group, its output in ``log``."""
    environment = {
        **os.environ,
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_DAEMON_JAVA_OPTS": JVM_OPTIONS,
        "SPARK_DAEMON_MEMORY": "256m",
        **(env or {}),
    }
    with log.open("wb") as output:
        return subprocess.Popen(
            [str(SPARK_HOME / "bin" / "spark-class"), *args],
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=environment,
        )


def master_state(ui: int) -> dict[str, Any]:
    with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json/", timeout=HANG_S) as answer:
        return dict(orjson.loads(answer.read()))


def eventually(check: Any, what: str, timeout: float = HANG_S) -> None:
    waiting.eventually(check, what, timeout, step=0.5, ignoring=(OSError,))


@pytest.fixture
def stack() -> Iterator[ExitStack]:
    with ExitStack() as processes:
        yield processes


def test_the_compose_topology_on_loopback_carries_the_feed_to_every_node(
    tmp_path: Path, stack: ExitStack
) -> None:
    if HAPROXY is None:
        pytest.fail("haproxy is not installed (./scripts/test installs it)")
    redis = RedisProcess(tmp_path / "redis")
    stack.callback(redis.kill)
    balancer = free_port()
    config = node_config(tmp_path, redis.url, f"127.0.0.1:{balancer}")
    nodes: list[ServerProcess] = []
    for index in range(NODES):
        node = ServerProcess(config, tmp_path / f"data{index}")
        stack.callback(node.stop)
        nodes.append(node)
    for node in nodes:
        wait_ready(node)
    lb = subprocess.Popen(
        [HAPROXY, "-db", "-f", str(haproxy_config(tmp_path, balancer, nodes))],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    stack.callback(lambda: (lb.terminate(), lb.wait(HANG_S)))
    front = f"127.0.0.1:{balancer}"
    eventually(
        lambda: urllib.request.urlopen(f"http://{front}/healthz", timeout=HANG_S).status == 200, "no LB"
    )

    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "spark-defaults.conf").write_text(f"spark.executor.extraJavaOptions {JVM_OPTIONS}\n")
    master_port, master_ui, worker_ui = free_port(), free_port(), free_port()
    master = spark_class(
        "org.apache.spark.deploy.master.Master",
        *("--host", "127.0.0.1", "--port", str(master_port), "--webui-port", str(master_ui)),
        log=tmp_path / "master.log",
    )
    stack.callback(lambda: (os.killpg(master.pid, signal.SIGKILL), master.wait()))
    eventually(lambda: master_state(master_ui)["status"] == "ALIVE", "the master did not start")
    worker = spark_class(
        "org.apache.spark.deploy.worker.Worker",
        f"spark://127.0.0.1:{master_port}",
        *("--host", "127.0.0.1", "--webui-port", str(worker_ui), "--cores", "2", "--memory", "1g"),
        log=tmp_path / "worker.log",
        env={"SPARK_WORKER_DIR": str(tmp_path / "work"), "PYSPARK_PYTHON": sys.executable},
    )
    stack.callback(lambda: (os.killpg(worker.pid, signal.SIGKILL), worker.wait()))
    eventually(lambda: master_state(master_ui)["aliveworkers"] == 1, "the worker did not register")

    # The compose file's command, with this machine's paths and addresses for the compose network's.
    args = compose_feed()
    args[0] = str(ROOT / "docker" / "demo_feed.py")
    for option, value in (
        ("--url", f"ws://{front}/ws"),
        ("--checkpoint", str(tmp_path / "checkpoints")),
        ("--heartbeat", str(tmp_path / "alive")),
    ):
        args[args.index(option) + 1] = value
    args += ["--orders-per-second", "200", "--trades-per-second", "50", "--summary-seconds", "5"]
    feed = launch(
        *args,
        env={
            "SPARK_MASTER": f"spark://127.0.0.1:{master_port}",
            "SPARK_CONF_DIR": str(conf),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "PYSPARK_PYTHON": sys.executable,
            "PYTHONPATH": str(ROOT),
        },
    )
    stack.callback(lambda: kill(feed))

    def on_every_node() -> bool:
        return all(sow_records(node.url, topic) for node in nodes for topic in ("orders", "positions"))

    wait_until(feed, on_every_node, "the feed's records did not reach every node", timeout=2 * HANG_S)
    touched = (tmp_path / "alive").stat().st_mtime
    eventually(lambda: (tmp_path / "alive").stat().st_mtime > touched, "the health check's heartbeat")
    assert master_state(master_ui)["activeapps"][0]["name"] == "sowpush demo"
    with connect(f"ws://{front}/ws", open_timeout=HANG_S, ping_interval=None) as subscriber:
        subscriber.send(orjson.dumps({"c": "subscribe", "t": "orders", "sub_id": "live"}).decode())
        eventually(
            lambda: [m for m in orjson.loads(subscriber.recv(timeout=HANG_S)) if m.get("c") == "p"],
            "no live change through the load balancer",
        )
    # Logons are throttled per client address, which the nodes take from the balancer's
    # X-Forwarded-For: a client cannot name another address itself.
    spoofed = {"X-Forwarded-For": "6.6.6.6"}
    with connect(
        f"ws://{front}/ws", open_timeout=HANG_S, additional_headers=spoofed, ping_interval=None
    ) as spoofer:
        spoofer.send(orjson.dumps({"c": "logon", "cid": "l", "label": "spoofer"}).decode())
        spoofer.recv(timeout=HANG_S)
        peers = [
            row["peer"]
            for node in nodes
            for row in orjson.loads(
                urllib.request.urlopen(node.http + "/status.json", timeout=HANG_S).read()
            )["slowest"]
            if row["label"] == "spoofer"
        ]
        assert peers == ["127.0.0.1"]
    # docker compose stop: SIGTERM to the feed's main process (under init: true, to Python).
    err = stop(feed, signal.SIGTERM)
    assert_quiet_exit(feed, err)
    assert not group_alive(feed.pid)
    assert lb.poll() is None and all(node.process.poll() is None for node in nodes)
