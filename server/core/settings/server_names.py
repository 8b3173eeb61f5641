"""The names the server answers to, and the browser origins that are its own (docs/protocol.md, Who
may connect).

Why the ``Host`` header is checked at all: DNS rebinding. A page of ``evil.example`` whose name
its owner then re-points at 127.0.0.1 is, to the browser, same-origin with whatever listens there,
so taking the server's own origin from ``Host`` lets that page open a socket (and read the HTTP
routes) with its visitor's network position. The browser cannot hide the name it resolved: it
sends ``Host: evil.example``. So a request is served only when its ``Host`` is one of the names
the server knows it answers to:

- each ``[server] server_names`` entry (``name`` or ``name:port``; without a port, the default
  port of the request's scheme: 80 for ``http``/``ws``, 443 for ``https``/``wss``);
- ``localhost``, the configured ``host`` and the local address the connection arrived on (the
  socket's own address, which is the listening address, or with a wildcard listen address such
  as ``0.0.0.0`` the interface's), each with the port the connection arrived on (the bound
  port, also after ``--port 0``);
- for WebSocket handshakes, also the host of an ``allowed_origins`` entry (with that origin's
  port, or none): a desk site that proxies ``/ws`` to the server on its own name.

A request with no ``Host`` is refused; one with several (no browser sends that, but a library
client's added header follows the one it takes from the URL) is served when every one qualifies.

A browser ``Origin`` is the server's own when it is ``http://`` (``https://`` for ``wss``) and one
of the names above other than an ``allowed_origins`` host; otherwise it must be listed in
``allowed_origins``. Pure: headers and addresses come in as arguments.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ..errors import ConfigError

DEFAULT_PORTS = {"http": 80, "ws": 80, "https": 443, "wss": 443}

_LABEL = re.compile(r"[a-z0-9_-]{1,63}")  # underscores: container and service names carry them
_PORT = re.compile(r"[0-9]{1,5}")
MAX_NAME = 253


@dataclass(frozen=True, slots=True)
class HostPort:
    host: str  # lower case, no trailing dot; an IPv6 address without brackets, compressed
    port: int | None  # None: not given, the scheme's default


def parse_host(text: str) -> HostPort | None:
    """A ``Host`` header value or a ``server_names`` entry: ``name``, ``name:port``, an IPv4
    address, ``[IPv6]`` with an optional port. None for anything else (user info, a scheme, a path,
    spaces, a wildcard, an empty or out-of-range port, non-ASCII: write an international name in
    its ``xn--`` form, as browsers send it)."""
    if not text.isascii():
        return None
    text = text.lower()
    if text.startswith("["):
        address, bracket, rest = text[1:].partition("]")
        if not bracket:
            return None
        try:
            host = ipaddress.IPv6Address(address).compressed
        except ValueError:
            return None
    else:
        host, colon, port_text = text.partition(":")
        rest = colon + port_text
        if host.endswith("."):
            host = host[:-1]  # the absolute form of the same name
        if len(host) > MAX_NAME or not all(_LABEL.fullmatch(label) for label in host.split(".")):
            return None
    if not rest:
        return HostPort(host, None)
    if not rest.startswith(":") or not _PORT.fullmatch(rest[1:]):
        return None
    port = int(rest[1:])
    return HostPort(host, port) if 0 < port <= 65535 else None


def server_names_setting(value: Any) -> tuple[str, ...]:
    """``[server] server_names`` checked: a list of ``name`` or ``name:port`` strings."""
    if not isinstance(value, list):
        raise ConfigError('server.server_names: expected a list of host names like ["push.example.com"]')
    for index, name in enumerate(value):
        if not isinstance(name, str) or parse_host(name.strip()) is None:
            raise ConfigError(
                f"server.server_names[{index}]: expected a host name with an optional :port, like "
                f'"push.example.com" or "push.example.com:8443", got {name!r}'
            )
    return tuple(name.strip() for name in value)


def local_host(address: str) -> str:
    """The local address a connection arrived on, as a ``Host`` names it: an IPv4 client of a
    dual-stack ``::`` listener arrives on ``::ffff:a.b.c.d`` but asks for ``a.b.c.d``."""
    try:
        ip = ipaddress.ip_address(address.partition("%")[0])
    except ValueError:
        return address.lower()
    if isinstance(ip, ipaddress.IPv6Address):
        return str(ip.ipv4_mapped) if ip.ipv4_mapped is not None else ip.compressed
    return str(ip)


# -- origins ------------------------------------------------------------------------------

OriginKey = tuple[str, str, int | None] | str


def origin_key(origin: str) -> OriginKey:
    """Scheme, host and port with case, default ports and a trailing dot evened out; the lowered
    text itself for what is not a plain ``scheme://host[:port]`` (``null``, an origin with a
    path or user info)."""
    text = origin.strip()
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        return text.lower()
    if not parts.scheme or not parts.hostname or parts.path not in ("", "/") or parts.query or parts.username:
        return text.lower()
    scheme = parts.scheme.lower()
    host = parts.hostname.rstrip(".")  # urlsplit lowers the host already
    if ":" in host:
        try:
            host = ipaddress.IPv6Address(host).compressed  # [0::1] is [::1]
        except ValueError:
            return text.lower()
    return scheme, host, port if port is not None else DEFAULT_PORTS.get(scheme)


class ServerNames:
    """The ``Host`` and ``Origin`` rules of one server, built once from ``[server]``.

    ``local`` in the methods below is the connection's own socket address (ASGI's ``server``),
    ``secure`` whether the request came over TLS (``https``/``wss``, also as a trusted proxy's
    ``X-Forwarded-Proto`` says)."""

    def __init__(self, names: Iterable[str], listen_host: str, allowed_origins: Iterable[str]) -> None:
        self.names = tuple(name for name in map(parse_host, names) if name is not None)
        at_local_port = {"localhost"}
        # The configured host as written, a wildcard too: a client that connects to 0.0.0.0
        # names it, and an address is no rebound name (the Origin rule still holds).
        listening = parse_host(listen_host.strip()) or parse_host(f"[{listen_host.strip()}]")
        if listening is not None:
            at_local_port.add(listening.host)
        self.at_local_port = frozenset(at_local_port)
        self.allowed = frozenset(origin_key(origin) for origin in allowed_origins)
        self.allowed_hosts = frozenset((key[1], key[2]) for key in self.allowed if isinstance(key, tuple))

    def is_own(self, given: HostPort, local: tuple[str, int] | None, secure: bool) -> bool:
        """Whether ``given``, host and port, is one of the server's own origins' (not counting
        allowed origins). A name listed without a port is the server's at the scheme's default
        port and at the port the connection arrived on."""
        default = 443 if secure else 80
        port = given.port if given.port is not None else default
        if self._local_name(given.host, port, local):
            return True
        arrived = local[1] if local is not None else None
        return any(
            name.host == given.host
            and (port == name.port if name.port is not None else port in (default, arrived))
            for name in self.names
        )

    def is_own_name(self, host: str, local: tuple[str, int] | None) -> bool:
        """Whether ``host`` names the server, whatever the port: what DNS rebinding changes is the
        name (a port forward or a proxy in front may change the port, and an address or
        ``localhost`` is no rebound name)."""
        if host in self.at_local_port or (local is not None and host == local_host(local[0])):
            return True
        return any(name.host == host for name in self.names)

    def _local_name(self, host: str, port: int, local: tuple[str, int] | None) -> bool:
        """``localhost``, the configured host or the connection's own address, at its own port."""
        if local is None or port != local[1]:
            return False
        return host in self.at_local_port or host == local_host(local[0])

    def host_allowed(self, hosts: Sequence[str], local: tuple[str, int] | None, secure: bool) -> bool:
        """May a plain HTTP request with these ``Host`` headers be served? ``hosts``: the values of
        every ``Host`` header it has, normally one; none is refused, and with more than one
        (which no browser sends) every one must name the server."""
        return bool(hosts) and all(self._names_server(host, local, secure, False) for host in hosts)

    def handshake_host_allowed(
        self, hosts: Sequence[str], local: tuple[str, int] | None, secure: bool
    ) -> bool:
        """May a WebSocket handshake with these ``Host`` headers go on? As ``host_allowed``, and a
        handshake may also name the host of an ``allowed_origins`` entry (with that origin's port
        or none)."""
        return bool(hosts) and all(self._names_server(host, local, secure, True) for host in hosts)

    def _names_server(self, host: str, local: tuple[str, int] | None, secure: bool, handshake: bool) -> bool:
        given = parse_host(host)
        if given is None:
            return False
        if self.is_own_name(given.host, local):
            return True
        return handshake and any(allowed_host == given.host for allowed_host, _ in self.allowed_hosts)

    def origin_allowed(self, origin: str | None, local: tuple[str, int] | None, secure: bool) -> bool:
        """May a WebSocket handshake with this ``Origin`` header go on? None: no ``Origin``, not a
        browser, so not a cross-site request (the ``Host`` rule still holds for it)."""
        if origin is None:
            return True
        key = origin_key(origin)
        if isinstance(key, tuple):
            scheme, host, port = key
            if scheme == ("https" if secure else "http") and self.is_own(HostPort(host, port), local, secure):
                return True
        return key in self.allowed
