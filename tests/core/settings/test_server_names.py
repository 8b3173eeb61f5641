"""The names the server answers to and the origins that are its own (docs/protocol.md, Who may
connect): the Host rule against DNS rebinding, the Origin rule, and server_names in the
configuration, as tables of cases."""

from __future__ import annotations

import pytest

from server.core.errors import ConfigError
from server.core.settings.config import parse_config
from server.core.settings.server_names import HostPort, ServerNames, local_host, parse_host

LOCAL = ("127.0.0.1", 8000)
ALLOWED = ("https://desk.example.com", "http://localhost:3000")
NAMES = ServerNames(["push.example.com", "alt.example.com:8443", "[2001:db8::1]:9000"], "127.0.0.1", ALLOWED)

PARSED = [
    ("localhost", HostPort("localhost", None)),
    ("LocalHost:8000", HostPort("localhost", 8000)),
    ("localhost.:8000", HostPort("localhost", 8000)),
    ("127.0.0.1:8000", HostPort("127.0.0.1", 8000)),
    ("[::1]:8000", HostPort("::1", 8000)),
    ("[0:0::1]", HostPort("::1", None)),
    ("push_node-1.internal", HostPort("push_node-1.internal", None)),
    ("xn--bcher-kva.example:443", HostPort("xn--bcher-kva.example", 443)),
]
MALFORMED = [
    "",
    ":8000",
    "localhost:",
    "localhost:0",
    "localhost:65536",
    "localhost:123456",
    "localhost:+80",
    "localhost:8000:1",
    "user@localhost:8000",
    "http://localhost",
    "localhost/ws",
    "local host",
    "localhost..",
    ".localhost",
    "a..b",
    "*.example.com",
    "::1",
    "[::1",
    "[not-v6]:80",
    "[::1]8000",
    "bücher.example",
    "a" * 64 + ".example",
    ".".join(["a" * 60] * 5),
]


@pytest.mark.parametrize(("text", "expected"), PARSED)
def test_host_values_are_parsed_and_evened_out(text: str, expected: HostPort) -> None:
    assert parse_host(text) == expected


@pytest.mark.parametrize("text", MALFORMED)
def test_a_malformed_host_value_is_none(text: str) -> None:
    assert parse_host(text) is None


HOSTS = [
    # (Host header, the connection's local address, secure, allowed as a plain HTTP request?)
    ("127.0.0.1:8000", LOCAL, False, True),
    ("localhost:8000", LOCAL, False, True),
    ("LOCALHOST:8000", LOCAL, False, True),
    ("localhost.:8000", LOCAL, False, True),
    # The Host rule asks for the server's name, whatever the port: DNS rebinding changes the name,
    # while a port forward or a proxy in front changes the port (the Origin rule checks ports).
    ("localhost:8001", LOCAL, False, True),
    ("127.0.0.1:8001", LOCAL, False, True),
    ("localhost", LOCAL, False, True),
    ("localhost", ("127.0.0.1", 80), False, True),
    ("localhost:80", ("127.0.0.1", 80), False, True),
    ("localhost", ("127.0.0.1", 443), True, True),
    ("localhost", ("127.0.0.1", 443), False, True),
    ("10.1.2.3:8000", ("10.1.2.3", 8000), False, True),  # a wildcard listener: the address used
    ("10.1.2.3:8000", LOCAL, False, False),
    ("127.0.0.1:8000", ("::ffff:127.0.0.1", 8000), False, True),  # dual-stack ::
    ("[::1]:8000", ("::1", 8000), False, True),
    ("[::1]:8000", LOCAL, False, False),
    ("push.example.com", LOCAL, False, True),
    ("push.example.com:80", LOCAL, False, True),
    ("push.example.com", LOCAL, True, True),
    ("push.example.com:443", LOCAL, True, True),
    ("push.example.com:443", LOCAL, False, True),
    ("push.example.com:8000", LOCAL, False, True),
    ("PUSH.Example.COM.", LOCAL, False, True),
    ("alt.example.com:8443", LOCAL, False, True),
    ("alt.example.com:8443", LOCAL, True, True),
    ("alt.example.com", LOCAL, True, True),
    ("[2001:db8::1]:9000", LOCAL, False, True),
    ("[2001:db8:0::1]:9000", LOCAL, False, True),
    ("evil.example.com:8000", LOCAL, False, False),  # DNS rebinding
    ("evil.example.com", LOCAL, False, False),
    ("127.0.0.1.evil.example.com:8000", LOCAL, False, False),
    ("desk.example.com", LOCAL, True, False),  # an allowed origin's host: handshakes only
    ("user@127.0.0.1:8000", LOCAL, False, False),
    ("127.0.0.1:8000, evil.example.com", LOCAL, False, False),
    ("", LOCAL, False, False),
    (None, LOCAL, False, False),  # no Host header at all
    ("localhost:8000", None, False, True),  # localhost is a name of every server
    ("evil.example.com:8000", None, False, False),
]


@pytest.mark.parametrize(("host", "local", "secure", "expected"), HOSTS)
def test_the_host_rule(host: str | None, local: tuple[str, int] | None, secure: bool, expected: bool) -> None:
    assert NAMES.host_allowed([] if host is None else [host], local, secure) is expected


@pytest.mark.parametrize(
    ("host", "secure", "expected"),
    [
        ("desk.example.com", False, True),
        ("desk.example.com", True, True),
        ("desk.example.com:443", False, True),
        ("desk.example.com:80", False, True),  # the name, at any port
        ("desk.example.com.evil", False, False),
        ("evil.example.com", False, False),
    ],
)
def test_a_handshake_may_also_name_an_allowed_origins_host(host: str, secure: bool, expected: bool) -> None:
    assert NAMES.handshake_host_allowed([host], LOCAL, secure) is expected
    assert NAMES.handshake_host_allowed(["127.0.0.1:8000"], LOCAL, secure)
    assert not NAMES.host_allowed([host], LOCAL, secure), "plain HTTP: the server's own names only"


def test_with_several_host_headers_every_one_must_name_the_server() -> None:
    assert NAMES.host_allowed(["127.0.0.1:8000", "push.example.com"], LOCAL, False)
    assert not NAMES.host_allowed(["127.0.0.1:8000", "evil.example.com"], LOCAL, False)
    assert not NAMES.handshake_host_allowed(["evil.example.com", "127.0.0.1:8000"], LOCAL, False)
    assert not NAMES.handshake_host_allowed([], LOCAL, False)


def test_the_configured_host_is_a_name_of_the_server() -> None:
    named = ServerNames([], "push.internal", [])
    assert named.host_allowed(["push.internal:8000"], LOCAL, False)
    assert named.host_allowed(["push.internal:8001"], LOCAL, False)
    assert not named.host_allowed(["elsewhere.internal:8000"], LOCAL, False)
    for wildcard, host in (("0.0.0.0", "0.0.0.0:8000"), ("::", "[::]:8000"), ("::", "[0::0]:8000")):
        assert ServerNames([], wildcard, []).host_allowed([host], LOCAL, False), "what a client of it names"
    assert not ServerNames([], "", []).host_allowed(["0.0.0.0:8000"], LOCAL, False)


ORIGINS = [
    # (Origin, the connection's local address, secure, allowed?)
    (None, LOCAL, False, True),
    ("http://127.0.0.1:8000", LOCAL, False, True),
    ("HTTP://127.0.0.1:8000", LOCAL, False, True),
    ("http://LocalHost:8000", LOCAL, False, True),
    ("http://localhost.:8000", LOCAL, False, True),
    ("http://localhost:8000/", LOCAL, False, True),
    ("http://push.example.com", LOCAL, False, True),
    ("http://push.example.com:80", LOCAL, False, True),
    ("http://push.example.com:8000", LOCAL, False, True),  # listed without a port: also its own
    ("http://push.example.com:8001", LOCAL, False, False),
    ("https://push.example.com:443", LOCAL, True, True),
    ("https://alt.example.com:8443", LOCAL, True, True),
    ("http://[::1]:8000", ("::1", 8000), False, True),
    ("http://[0::1]:8000", ("::1", 8000), False, True),
    ("https://127.0.0.1:8000", LOCAL, False, False),  # ws is served to http pages
    ("http://127.0.0.1:8000", LOCAL, True, False),  # wss to https pages
    ("http://127.0.0.1:8001", LOCAL, False, False),
    ("http://127.0.0.1", LOCAL, False, False),
    ("http://evil.example.com", LOCAL, False, False),
    ("http://evil.example.com:8000", LOCAL, False, False),
    ("http://127.0.0.1.evil.example.com:8000", LOCAL, False, False),
    ("null", LOCAL, False, False),
    ("", LOCAL, False, False),
    ("http://127.0.0.1:99999", LOCAL, False, False),
    ("http://user@127.0.0.1:8000", LOCAL, False, False),
    ("http://127.0.0.1:8000/page", LOCAL, False, False),
    ("https://desk.example.com", LOCAL, False, True),
    ("https://DESK.example.com:443", LOCAL, False, True),
    ("https://desk.example.com/", LOCAL, False, True),
    ("http://desk.example.com", LOCAL, False, False),
    ("https://desk.example.com:8443", LOCAL, False, False),
    ("http://localhost:3000", LOCAL, False, True),
    ("http://localhost", LOCAL, False, False),
]


@pytest.mark.parametrize(("origin", "local", "secure", "expected"), ORIGINS)
def test_the_origin_rule(
    origin: str | None, local: tuple[str, int] | None, secure: bool, expected: bool
) -> None:
    assert NAMES.origin_allowed(origin, local, secure) is expected


def test_a_listed_origin_that_is_not_a_url_matches_only_itself() -> None:
    assert ServerNames([], "127.0.0.1", ["null"]).origin_allowed("null", LOCAL, False)
    assert not ServerNames([], "127.0.0.1", []).origin_allowed("null", LOCAL, False)


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("127.0.0.1", "127.0.0.1"),
        ("::ffff:10.0.0.1", "10.0.0.1"),
        ("0:0::1", "::1"),
        ("fe80::1%eth0", "fe80::1"),
    ],
)
def test_the_local_address_as_a_host_names_it(address: str, expected: str) -> None:
    assert local_host(address) == expected


def test_server_names_in_the_configuration() -> None:
    config = parse_config({"server": {"server_names": ["push.example.com", " Push.example.com:8443 "]}})
    assert config.server.server_names == ("push.example.com", "Push.example.com:8443")
    assert parse_config({}).server.server_names == ()


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("push.example.com", "server.server_names: expected a list of host names"),
        (["ok.example.com", "http://push.example.com"], "server.server_names[1]: expected a host name"),
        (["push.example.com:0"], "server.server_names[0]: expected a host name"),
        (["*.example.com"], "server.server_names[0]: expected a host name"),
        ([8000], "server.server_names[0]: expected a host name"),
    ],
)
def test_a_malformed_server_name_is_a_configuration_error(value: object, message: str) -> None:
    with pytest.raises(ConfigError) as error:
        parse_config({"server": {"server_names": value}})
    assert str(error.value).startswith(message)
    assert "\n" not in str(error.value)
