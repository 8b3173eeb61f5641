"""The names the real server answers to (docs/protocol.md, Who may connect): a WebSocket handshake
or HTTP request whose ``Host`` is not one of them is refused with 403, with or without ``Origin``,
so a page that DNS rebinding points at the server gets nothing; the server's own origins come from
those names; a malformed ``server_names`` entry stops the server with a one-line reason."""

from __future__ import annotations

import asyncio
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import websockets

from ..waiting import HANG_S
from .client import Client
from .conftest import StartServer
from .raw_socket import handshake
from .server_process import ServerProcess, outside_address, run_with_config, write_config

NAMES = {
    "server_names": ["push.example.com", "alt.example.com:8443", "Node_1.internal."],
    "allowed_origins": ["https://desk.example.com"],
}


@pytest.fixture
def server(start_server: StartServer) -> ServerProcess:
    return start_server(NAMES)


def get(port: int, path: str, host: str | None, address: str = "127.0.0.1") -> int:
    request = urllib.request.Request(f"http://{address}:{port}{path}")
    if host is not None:
        request.add_header("Host", host)
    try:
        with urllib.request.urlopen(request, timeout=HANG_S) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return error.code


def own_hosts(port: int) -> list[str]:
    return [
        f"127.0.0.1:{port}",
        f"localhost:{port}",
        f"LocalHost.:{port}",
        "push.example.com",
        "push.example.com:80",
        "PUSH.Example.com.",
        "alt.example.com:8443",
        "node_1.internal",
        # The Host rule asks for the name whatever the port (a port forward or a proxy in front
        # changes the port; DNS rebinding changes the name); the Origin rule checks ports.
        f"localhost:{port + 1}",
        "localhost",
        "127.0.0.1",
        f"push.example.com:{port}",
        "alt.example.com",
    ]


def foreign_hosts(port: int) -> list[str]:
    return [
        "evil.example.com",
        f"evil.example.com:{port}",  # a rebound name
        f"127.0.0.1.evil.example.com:{port}",
        f"[::1]:{port}",  # the server listens on 127.0.0.1 only
        "www.push.example.com",
        f"user@127.0.0.1:{port}",
        f"127.0.0.1:{port}/ws",
        f"127.0.0.1:{port}:{port}",
        "",
    ]


async def test_a_handshake_naming_the_server_is_accepted(server: ServerProcess) -> None:
    for host in [*own_hosts(server.port), "desk.example.com"]:
        assert await handshake(server.port, [("Host", host)]) == "ok", host


async def test_a_library_client_that_adds_a_host_header_is_held_to_every_one(server: ServerProcess) -> None:
    """websockets' ``additional_headers`` adds a ``Host`` after the one it takes from the URL."""
    client = await Client.connect(server.url, additional_headers={"Host": "push.example.com"})
    assert (await client.request({"c": "heartbeat", "cid": "h"}))[-1]["status"] == "success"
    await client.close()
    with pytest.raises(websockets.InvalidStatus) as refused:
        await Client.connect(server.url, additional_headers={"Host": "evil.example.com"})
    assert refused.value.response.status_code == 403


async def test_a_handshake_naming_another_host_is_refused_with_or_without_an_origin(
    server: ServerProcess,
) -> None:
    for host in foreign_hosts(server.port):
        for origin in (None, f"http://{host}", f"http://127.0.0.1:{server.port}", "https://desk.example.com"):
            headers = [("Host", host)] + ([("Origin", origin)] if origin is not None else [])
            assert await handshake(server.port, headers) == "403", (host, origin)
    assert await handshake(server.port, []) == "403", "no Host at all"
    twice = [("Host", f"127.0.0.1:{server.port}"), ("Host", "evil.example.com")]
    assert await handshake(server.port, twice) == "403", "two Host headers, one another host's"
    assert await server.logged("evil.example.com", "server_names")


async def test_the_servers_own_origins_come_from_its_names(server: ServerProcess) -> None:
    port = server.port
    own = f"127.0.0.1:{port}"
    cases = [
        (own, f"http://127.0.0.1:{port}", "ok"),
        (own, f"http://localhost:{port}", "ok"),  # another of its names
        (own, "http://push.example.com", "ok"),
        (own, "http://push.example.com:80", "ok"),
        (own, "http://alt.example.com:8443", "ok"),
        (own, "https://desk.example.com", "ok"),  # allowed_origins
        ("push.example.com", "http://push.example.com", "ok"),
        (own, f"https://127.0.0.1:{port}", "403"),  # ws is for http pages
        (own, f"http://127.0.0.1:{port + 1}", "403"),
        (own, "http://127.0.0.1", "403"),
        (own, "http://evil.example.com", "403"),
        (own, f"http://evil.example.com:{port}", "403"),
        (own, "http://desk.example.com", "403"),
        (own, "https://push.example.com:8443", "403"),
        (own, "null", "403"),
    ]
    for host, origin, expected in cases:
        assert await handshake(port, [("Host", host), ("Origin", origin)]) == expected, (host, origin)


async def test_over_tls_names_default_to_443_and_the_origin_is_https(server: ServerProcess) -> None:
    """TLS as a reverse proxy on the same host reports it (``X-Forwarded-Proto``): the request is
    ``wss``, so a name without a port is port 443 and the server's own origin is ``https://``."""
    port = server.port
    tls = [("X-Forwarded-Proto", "https")]
    cases = [
        ("push.example.com", None, "ok"),
        ("push.example.com:443", None, "ok"),
        ("push.example.com:80", None, "ok"),  # the Host rule asks for the name, not the port
        ("alt.example.com:8443", "https://alt.example.com:8443", "ok"),
        ("push.example.com", "https://push.example.com", "ok"),
        ("push.example.com", "https://push.example.com:443", "ok"),
        ("push.example.com", "http://push.example.com", "403"),
        (f"127.0.0.1:{port}", f"https://127.0.0.1:{port}", "ok"),
        (f"127.0.0.1:{port}", f"http://127.0.0.1:{port}", "403"),
        ("desk.example.com", "https://desk.example.com", "ok"),
        ("evil.example.com", "https://evil.example.com", "403"),
    ]
    for host, origin, expected in cases:
        headers = [("Host", host), *tls] + ([("Origin", origin)] if origin else [])
        assert await handshake(port, headers) == expected, (host, origin)


def test_http_routes_answer_only_the_servers_names_but_healthz_answers_anyone(server: ServerProcess) -> None:
    for path in ("/", "/topics", "/metrics", "/status.json", "/web/sowpush.js"):
        for host in own_hosts(server.port):
            assert get(server.port, path, host) not in (403, 421), (path, host)
        for host in ("evil.example.com", f"evil.example.com:{server.port}", "desk.example.com"):
            assert get(server.port, path, host) == 403, (path, host)
    for host in ("evil.example.com", "", "anything:1"):
        assert get(server.port, "/healthz", host) == 200, host


def test_a_wildcard_listener_answers_the_address_a_connection_arrived_on(tmp_path: Path) -> None:
    config = write_config(tmp_path / "server.toml", {}, [{"name": "orders", "key": ["/order"]}])
    server = ServerProcess(config, tmp_path / "data", args=["--host", "0.0.0.0"])
    try:
        port = server.port
        assert asyncio.run(handshake(port, [("Host", f"127.0.0.1:{port}")])) == "ok"
        assert asyncio.run(handshake(port, [("Host", f"localhost:{port}")])) == "ok"
        assert asyncio.run(handshake(port, [("Host", f"0.0.0.0:{port}")])) == "ok", "the address as written"
        assert asyncio.run(handshake(port, [("Host", f"10.255.255.1:{port}")])) == "403"
        outside = outside_address()
        if outside is not None:  # the address of the interface the connection arrived on
            assert asyncio.run(handshake(port, [("Host", f"{outside}:{port}")], host=outside)) == "ok"
            assert get(port, "/topics", f"{outside}:{port}", address=outside) == 200
        assert asyncio.run(handshake(port, [("Host", f"evil.example.com:{port}")])) == "403"
    finally:
        server.stop()


@pytest.mark.parametrize(
    ("names", "reason"),
    [
        (
            '["http://push.example.com"]',
            "server.server_names[0]: expected a host name with an optional :port",
        ),
        ('["ok.example.com", "user@push.example.com"]', "server.server_names[1]: expected a host name"),
        ('["push.example.com:0"]', "server.server_names[0]: expected a host name"),
        ('"push.example.com"', "server.server_names: expected a list of host names"),
    ],
)
def test_a_malformed_server_name_stops_the_server_with_one_line(
    tmp_path: Path, names: str, reason: str
) -> None:
    done = run_with_config(tmp_path, f"[server]\nserver_names = {names}\n")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(f"error: {reason}"), done.stderr
