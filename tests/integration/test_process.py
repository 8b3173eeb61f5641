"""The server process: command line, configuration errors, HTTP endpoints, frame limits, shutdown."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
import websockets

from ..waiting import HANG_S
from .client import Client
from .conftest import StartServer
from .server_process import ROOT, ServerProcess, run_with_config


def get(url: str) -> tuple[int, str, str]:
    with urllib.request.urlopen(url, timeout=HANG_S) as response:
        return response.status, response.headers.get("content-type", ""), response.read().decode()


def test_http_endpoints(server: ServerProcess) -> None:
    assert get(server.http + "/healthz")[::2] == (200, "ok")
    status, content_type, body = get(server.http + "/metrics")
    assert status == 200 and content_type.startswith("text/plain")
    assert 'push_sow_records{topic="orders"} 0.0' in body
    status, content_type, body = get(server.http + "/")
    assert status == 200 and "text/html" in content_type
    assert '"name":"orders"' in get(server.http + "/topics")[2]


def test_default_demo_configuration_serves_demo_topics(tmp_path: Path) -> None:
    process = ServerProcess(None, tmp_path / "data")
    try:
        names = get(process.http + "/topics")[2]
        assert '"orders"' in names and '"positions"' in names
    finally:
        process.stop()


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("[server]\nprot = 1\n", "server.prot: unknown key"),
        ('[[topic]]\nname = "a"\n', "topic 'a'.key"),
        ('[[topic]]\nname = "a"\nkey = ["/id"]\nbogus = 1\n', "topic 'a'.bogus: unknown key"),
        (
            '[[topic]]\nname = "a"\nkey = ["/id"]\n[[topic]]\nname = "a"\nkey = ["/id"]\n',
            "two topics are named 'a'",
        ),
        ('[[topic]]\nname = "a"\nkey = ["/id"]\nconflation_merge = "no.such.module:f"\n', "conflation_merge"),
        ('[[topic]]\nname = "a"\nkey = ["/id"]\nconflation = "sometimes"\n', "topic 'a'.conflation"),
        ('[[topic]]\nname = "a"\nkey = ["/id"]\nexpiration = "soon"\n', "topic 'a'.expiration"),
        ('[server]\nport = "x"\n', "server.port"),
        ("[server\n", "not valid TOML"),
        (
            '[auth]\n[[auth.user]]\nuser_id = "u"\npassword = "p"\n[auth.user.filter]\norders = "/a >"\n',
            "bad filter",
        ),
    ],
)
def test_bad_configuration_exits_non_zero_with_one_line_naming_the_key(
    tmp_path: Path, text: str, names: str
) -> None:
    result = run_with_config(tmp_path, text)
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert names in lines[0]


def test_missing_config_file_is_a_clear_error(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "server", "--config", str(tmp_path / "nope.toml")],
        cwd=ROOT,
        check=False,
        capture_output=True,
        text=True,
        timeout=HANG_S,
    )
    assert result.returncode != 0 and "cannot read configuration" in result.stderr


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
async def test_shutdown_closes_sockets_with_1001_and_exits_zero(server: ServerProcess, sig: int) -> None:
    client = await Client.connect(server.url)
    await client.request({"c": "subscribe", "t": "orders", "cid": "s"})
    server.process.send_signal(sig)
    with pytest.raises(websockets.ConnectionClosed):
        await client.recv(HANG_S)
    assert client.ws.close_code == 1001
    assert await asyncio.to_thread(server.process.wait, 15) == 0


async def test_frame_larger_than_max_message_bytes_is_closed_1009(start_server: StartServer) -> None:
    server = start_server({"max_message_bytes": 10_000})
    big, bystander = await Client.connect(server.url), await Client.connect(server.url)
    await big.send({"c": "publish", "t": "orders", "data": {"order": 1, "blob": "x" * 20_000}})
    with pytest.raises(websockets.ConnectionClosed):
        await big.recv(HANG_S)
    assert big.ws.close_code == 1009
    assert (await bystander.request({"c": "heartbeat", "cid": 1}))[-1]["status"] == "success"


async def test_outbound_frames_respect_max_message_bytes(start_server: StartServer) -> None:
    server = start_server({"max_message_bytes": 4096})
    client = await Client.connect(server.url)
    for n in range(30):
        await client.send({"c": "publish", "t": "orders", "data": {"order": n, "pad": "y" * 100}})
    messages = await client.request({"c": "sow", "t": "orders", "cid": "q"}, "processed")
    messages += await client.until(lambda m: m["c"] == "group_end")
    assert len([m for m in messages if m["c"] == "sow"]) == 30
    assert client.frames >= 2, "30 records of ~150 bytes cannot fit one 4 KB frame"


async def test_binary_frames_and_arrays_are_accepted(server: ServerProcess) -> None:
    client = await Client.connect(server.url)
    await client.ws.send(
        b'[{"c":"publish","t":"orders","data":{"order":1},"cid":1},{"c":"heartbeat","cid":2}]'
    )
    got = await client.ack(2)
    assert [m["c"] for m in got] == ["ack", "heartbeat", "ack"]


async def test_cli_flags_override_the_file(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text('[server]\nport = 1\nhost = "0.0.0.0"\n[[topic]]\nname = "x"\nkey = ["/id"]\n')
    process = ServerProcess(config, tmp_path / "data")
    try:
        assert process.port not in (0, 1)
        assert get(process.http + "/healthz")[2] == "ok"
    finally:
        process.stop()
