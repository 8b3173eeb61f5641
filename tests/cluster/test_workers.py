"""``--workers N``: N cluster nodes of one machine behind one port, and what the port does when
workers die: each is replaced, one that cannot start is reported once and tried ever less often,
and ``/healthz`` says how many serve."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from server.workers import STEADY_S, Slot, SocketDirectoryError, socket_directory

from .. import waiting
from ..integration.client import Client
from ..integration.server_process import ROOT, ServerProcess, sow_records, write_config
from ..waiting import HANG_S
from .conftest import TOPICS, StartNode

pytestmark = pytest.mark.slow

T = TypeVar("T")
NODE = re.compile(r'push_cluster_node\{node="([^"]+)",worker="(\d+)"\} 1\.0')
BACK = re.compile(r"worker \d \(pid (\d+)\) accepts connections \((\d) of 2 workers serve\)")


def metrics(http: str) -> str:
    with urllib.request.urlopen(http + "/metrics", timeout=HANG_S) as answer:
        return str(answer.read().decode())


def node_names(http: str) -> dict[str, str]:
    """Each worker's node name, by its index, from one scrape of ``/metrics`` (whichever worker
    takes it answers for all)."""
    return {worker: name for name, worker in NODE.findall(metrics(http))}


def connections_on(http: str, pid: int) -> int:
    """``push_connections`` of the worker with process id ``pid`` (its node name holds it)."""
    text = metrics(http)
    [worker] = [worker for name, worker in NODE.findall(text) if f"-{pid}-" in name]
    found = re.search(rf'^push_connections\{{worker="{worker}"\}} (\S+)$', text, re.MULTILINE)
    assert found is not None
    return int(float(found.group(1)))


def healthz(http: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(http + "/healthz", timeout=HANG_S) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def worker_pids(node: ServerProcess) -> set[int]:
    """The parent's live workers (its other child is multiprocessing's resource tracker)."""
    pid = node.process.pid
    workers = set()
    for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
        try:
            if b"spawn_main" in Path(f"/proc/{child}/cmdline").read_bytes():
                workers.add(int(child))
        except OSError:  # gone meanwhile
            pass
    return workers


def eventually(check: Callable[[], T | None], timeout: float = HANG_S) -> T:
    """The first true answer of ``check``, asked every 50 ms (a refused connection is no answer;
    tests/waiting.py: the timeout is a hang guard)."""
    return waiting.eventually(check, "the workers never got there", timeout, ignoring=(OSError,))


def when(check: Callable[[], object]) -> float:
    """The moment ``check`` first answers true (within the time ``eventually`` allows)."""
    eventually(check)
    return time.monotonic()


def workers_ready(node: ServerProcess, count: int = 2) -> ServerProcess:
    """``node`` once ``count`` workers have loaded the cluster's state (``start_node`` waits for
    one ``/healthz`` 200, and a worker still loading answers 503)."""
    eventually(lambda: node.output().count(" records from Redis in ") >= count)
    return node


def new_workers(node: ServerProcess, known: set[int], count: int, timeout: float = HANG_S) -> list[float]:
    """When each of the next ``count`` workers the parent starts appears (``known``: the workers
    before them, to which they are added)."""
    seen: list[float] = []
    deadline = time.monotonic() + timeout
    while len(seen) < count:
        assert time.monotonic() < deadline, f"{len(seen)} of {count} new workers in {timeout} s"
        for pid in worker_pids(node) - known:
            known.add(pid)
            seen.append(time.monotonic())
        time.sleep(0.02)
    return seen


def errors(node: ServerProcess) -> list[str]:
    return [line for line in node.lines if " ERROR " in line]


async def test_two_workers_share_one_port_and_serve_one_state(start_node: StartNode) -> None:
    node = workers_ready(start_node(args=["--workers", "2"]))
    assert node.output().count("listening on") == 1
    eventually(lambda: len(node_names(node.http)) == 2)
    assert healthz(node.http) == (200, "ok: 2 of 2 workers")
    subscribers = [await Client.connect(node.url) for _ in range(8)]
    for client in subscribers:
        await client.request({"c": "subscribe", "t": "orders", "sub_id": "s", "cid": "q"})
    publisher = await Client.connect(node.url)
    for i in range(5):
        await publisher.request({"c": "publish", "t": "orders", "data": {"id": i}, "cid": i})
    for client in subscribers:
        got = await client.until(lambda m: m.get("data") == {"id": 4})
        assert [m["data"]["id"] for m in got if m.get("c") == "p"] == list(range(5))
    assert node.stop() == 0
    assert " ERROR " not in node.output() and "Traceback" not in node.output()


async def test_any_worker_answers_metrics_and_status_for_every_worker(start_node: StartNode) -> None:
    node = workers_ready(start_node(args=["--workers", "2"]))
    clients = [await Client.connect(node.url) for _ in range(12)]
    for n, client in enumerate(clients):
        await client.request({"c": "logon", "cid": "l", "label": f"desk {n}"})
        await client.request({"c": "subscribe", "t": "orders", "sub_id": "s", "cid": "q"})
    for _ in range(6):  # on new connections: the kernel picks the worker that answers
        text = metrics(node.http)
        up = dict(re.findall(r'^push_worker_up\{worker="(\d)"\} (\S+)$', text, re.MULTILINE))
        assert up == {"0": "1.0", "1": "1.0"}
        connections = re.findall(r'^push_connections\{worker="(\d)"\} (\S+)$', text, re.MULTILINE)
        assert sorted(worker for worker, _ in connections) == ["0", "1"]
        assert sum(float(count) for _, count in connections) == 12
        # Every sample names its worker: the process's own figures too.
        assert len(re.findall(r'^process_cpu_seconds_total\{worker="\d"\} ', text, re.MULTILINE)) == 2
        samples = [line for line in text.splitlines() if line and not line.startswith("#")]
        assert all('worker="' in line for line in samples)
        with urllib.request.urlopen(node.http + "/status.json", timeout=HANG_S) as answer:
            report = json.loads(answer.read())
        assert report["connections"] == 12
        assert [(w["worker"], w["answered"]) for w in report["workers"]] == [(0, True), (1, True)]
        assert sum(w["connections"] for w in report["workers"]) == 12
        assert {row["label"] for row in report["slowest"]} <= {f"desk {n}" for n in range(12)}
        # Each row names the worker holding its socket: which sockets the kernel gave each worker,
        # and so which workers the ten rows of twelve idle sockets show, is its choice.
        held = {w["worker"]: w["connections"] for w in report["workers"]}
        shown = [row["worker"] for row in report["slowest"]]
        assert len(shown) == 10 and all(shown.count(w) <= held[w] for w in held), (shown, held)
        [orders] = [row for row in report["topics"] if row["topic"] == "orders"]
        assert orders["subscriptions"] == 12
    # A worker that is gone is said to be, by whichever worker answers.
    victim = min(worker_pids(node))
    [index] = [w for w, name in node_names(node.http).items() if f"-{victim}-" in name]
    os.kill(victim, signal.SIGKILL)
    eventually(lambda: f'push_worker_up{{worker="{index}"}} 0.0' in metrics(node.http))
    for client in clients:
        await client.close()
    assert node.stop() == 0


async def test_a_killed_worker_is_replaced_by_one_that_serves(start_node: StartNode) -> None:
    node = workers_ready(start_node(args=["--workers", "2"]))
    first = worker_pids(node)
    assert len(first) == 2
    os.kill(min(first), signal.SIGKILL)
    back = eventually(lambda: BACK.search(node.output()))
    assert back.group(2) == "2"
    replacement = int(back.group(1))
    workers_ready(node, 3)
    assert worker_pids(node) == first - {min(first)} | {replacement}
    assert healthz(node.http) == (200, "ok: 2 of 2 workers")
    # Sixteen sockets spread over both workers' listening sockets: some reach the replacement.
    clients = [await Client.connect(node.url) for _ in range(16)]
    for client in clients:
        await client.request({"c": "subscribe", "t": "orders", "sub_id": "s", "cid": "q"})
    publisher = await Client.connect(node.url)
    await publisher.request({"c": "publish", "t": "orders", "data": {"id": 7}, "cid": 1})
    for client in clients:
        await client.until(lambda m: m.get("c") == "p" and m["data"] == {"id": 7})
    assert connections_on(node.http, replacement) >= 1
    [error] = errors(node)
    assert f"(pid {min(first)}) was killed by SIGKILL after running for" in error
    assert "starting another in 1 s (1 of 2 workers serve meanwhile)" in error
    assert "Traceback" not in node.output()


async def test_a_stopped_worker_stops_counting_and_is_replaced(start_node: StartNode) -> None:
    """A SIGSTOPped worker kept its SO_REUSEPORT socket: most requests to the port waited on it
    while /healthz said 2 of 2. Its loop no longer says it runs: it stops counting, and the
    parent kills it and starts another."""
    node = workers_ready(start_node(args=["--workers", "2"]))
    first = worker_pids(node)
    victim = min(first)
    os.kill(victim, signal.SIGSTOP)
    try:
        # (A request the kernel hands the stopped worker times out: no answer, asked again.)
        eventually(lambda: healthz(node.http) == (200, "ok: 1 of 2 workers"))
        eventually(lambda: f"(pid {victim}) has not answered for " in node.output())
        back = eventually(lambda: BACK.search(node.output()))
    finally:
        if victim in worker_pids(node):
            os.kill(victim, signal.SIGCONT)
    assert victim not in worker_pids(node)
    workers_ready(node, 3)
    eventually(lambda: healthz(node.http) == (200, "ok: 2 of 2 workers"))
    assert worker_pids(node) == first - {victim} | {int(back.group(1))}
    [stuck, killed] = errors(node)
    assert "(stopped, or stuck in one step): killing it" in stuck
    assert f"(pid {victim}) was killed by SIGKILL after running for" in killed
    assert "Traceback" not in node.output()


async def test_the_port_comes_back_when_every_worker_is_killed(start_node: StartNode) -> None:
    node = workers_ready(start_node(args=["--workers", "2"]))
    publisher = await Client.connect(node.url)
    await publisher.request({"c": "publish", "t": "orders", "data": {"id": 1}, "cid": 1})
    first = worker_pids(node)
    for pid in first:
        os.kill(pid, signal.SIGKILL)
    eventually(lambda: len(BACK.findall(node.output())) == 2)
    assert BACK.findall(node.output())[-1][1] == "2"
    workers_ready(node, 4)
    assert len(worker_pids(node) - first) == 2
    assert healthz(node.http) == (200, "ok: 2 of 2 workers")
    assert sow_records(node.url, "orders") == [{"id": 1}]
    assert len(errors(node)) == 2 and "Traceback" not in node.output()


MISSING = "No module named 'module_the_release_forgot'"


async def test_a_worker_that_cannot_start_is_reported_once_and_tried_less_often(
    start_node: StartNode, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The server runs from a deployed copy of its code, which a broken release then replaces
    # under it: the running workers go on, a new one cannot import the code.
    deploy = tmp_path / "deploy"
    shutil.copytree(ROOT / "server", deploy / "server", ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setenv("PYTHONSAFEPATH", "1")  # python -m: not the current directory's code first
    monkeypatch.setenv("PYTHONPATH", str(deploy))
    node = workers_ready(start_node(args=["--workers", "2"]))
    module = deploy / "server" / "node.py"
    release = module.read_text()
    module.write_text(release + "import module_the_release_forgot  # noqa: E402, F401\n")
    known = worker_pids(node)
    victim = min(known)
    survivor = known - {victim}
    killed_at = time.monotonic()
    os.kill(victim, signal.SIGKILL)

    started = new_workers(node, known, 2)
    eventually(lambda: worker_pids(node) == survivor)  # the second try failed too
    assert healthz(node.http) == (200, "ok: 1 of 2 workers")
    killed, cannot_start = errors(node)
    assert "was killed by SIGKILL" in killed
    assert re.search(
        r"worker \d \(pid \d+\) exited with status 1 before it accepted connections, [\d.]+ s after "
        r"it was started: it cannot start \(see its output above\); trying again in 2 s, then less often "
        r"\(up to every 30 s\) until one starts \(1 of 2 workers serve meanwhile\)$",
        cannot_start,
    )
    assert node.output().count(MISSING) == 1  # the traceback of the first try; the second is quiet

    module.write_text(release)  # the release is mended: the next try starts
    started += new_workers(node, known, 1)
    back = eventually(lambda: BACK.search(node.output()))
    assert back.group(2) == "2"
    assert healthz(workers_ready(node, 3).http) == (200, "ok: 2 of 2 workers")
    # Each try began at least 1, 2 and 4 s after the death before it (the kill, then each try).
    pauses = [b - a for a, b in zip([killed_at, *started], started, strict=False)]
    assert pauses[0] >= 1.0 and pauses[1] >= 2.0 and pauses[2] >= 4.0, pauses
    assert len(errors(node)) == 2 and node.output().count(MISSING) == 1


def test_the_pause_before_a_restart_doubles_while_a_worker_keeps_dying_and_resets_once_it_ran() -> None:
    slot = Slot(0)
    assert [slot.pause(lived=0.5) for _ in range(7)] == [1, 2, 4, 8, 16, 30, 30]
    assert slot.pause(lived=STEADY_S) == 0  # it ran steadily: started again at once
    assert slot.pause(lived=0.5) == 1


def test_workers_without_a_cluster_is_a_configuration_error(tmp_path: Path) -> None:
    config = write_config(tmp_path / "alone.toml", {}, TOPICS)
    command = [sys.executable, "-m", "server", "--config", str(config), "--workers", "2"]
    done = subprocess.run(command, check=False, cwd=ROOT, capture_output=True, text=True, timeout=HANG_S)
    assert done.returncode == 2
    assert (
        done.stderr.strip()
        == "error: --workers needs a [cluster] section: nodes share their state through Redis"
    )


def test_workers_whose_sockets_would_not_fit_say_why_and_leave_nothing(tmp_path: Path) -> None:
    """The workers' sockets live under TMPDIR: one so deep that a Unix socket's path would not fit
    stops the port at once, with the reason and what to do."""
    cluster = '\n[cluster]\nredis_url = "redis://127.0.0.1:1/0"\nname = "test"\n'
    config = write_config(tmp_path / "node.toml", {}, TOPICS, cluster)
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    command = [sys.executable, "-m", "server", "--config", str(config), "--workers", "2", "--port", "0"]
    environment = {**os.environ, "TMPDIR": str(deep)}
    done = subprocess.run(
        command, check=False, cwd=ROOT, capture_output=True, text=True, timeout=HANG_S, env=environment
    )
    assert done.returncode == 1
    said = done.stdout + done.stderr
    assert "longer than a Unix socket's path may be" in said and "set TMPDIR to a shorter directory" in said
    assert "Traceback" not in said and list(deep.iterdir()) == []


def test_no_socket_directory_is_an_error_that_says_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "nowhere"))
    with pytest.raises(SocketDirectoryError, match="set TMPDIR to a writable directory"):
        socket_directory(2)
    monkeypatch.undo()
    made = Path(socket_directory(2))
    try:
        assert made.parent == Path(tempfile.gettempdir()) and made.stat().st_mode & 0o777 == 0o700
    finally:
        made.rmdir()


async def test_workers_stop_when_their_parent_is_killed(
    start_node: StartNode, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A parent killed with SIGKILL stops nothing itself: its workers notice they are orphans and
    stop cleanly, so the port is free for the next start, never shared with old workers, and the
    last of them removes their sockets' directory."""
    temp = Path(tempfile.mkdtemp(prefix="sp"))  # short: a Unix socket's path must fit
    monkeypatch.setenv("TMPDIR", str(temp))
    node = workers_ready(start_node(args=["--workers", "2"]))
    [directory] = temp.iterdir()
    assert directory.name.startswith("sowpush-workers-")
    workers = worker_pids(node)
    assert len(workers) == 2
    node.process.kill()
    node.process.wait()

    def gone() -> bool:
        return not any(
            Path(f"/proc/{pid}").exists() and b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()
            for pid in workers
        )

    eventually(gone)
    with pytest.raises(OSError):
        urllib.request.urlopen(node.http + "/healthz", timeout=HANG_S)
    assert "its parent (pid" in node.output() and "is gone; stopping" in node.output()
    eventually(lambda: list(temp.iterdir()) == [])
    temp.rmdir()
