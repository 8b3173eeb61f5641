"""The Starlette application: dashboard, JavaScript client, health, metrics, status, WebSocket."""

from __future__ import annotations

from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocket

from ..core.session.access import topic_listing
from ..core.settings.server_names import ServerNames
from ..runtime.hub import Hub
from ..runtime.siblings import Siblings
from ..runtime.status import Status
from .guards import check_metrics, topics_reader
from .hosts import HttpHostRefusal
from .metrics import render_metrics
from .uvicorn_protocol import TransportMiddleware
from .websocket import websocket_endpoint
from .whole_port import port_metrics, port_status

ROOT = Path(__file__).resolve().parents[2]
WEB_DIR = ROOT / "web"
STATIC_DIR = ROOT / "static"


async def dashboard(request: Request) -> Response:
    index = STATIC_DIR / "index.html"
    if not index.is_file():
        return PlainTextResponse("dashboard not installed", status_code=404)
    return FileResponse(index)


async def favicon(request: Request) -> Response:
    return FileResponse(STATIC_DIR / "favicon.svg", media_type="image/svg+xml")


async def healthz(request: Request) -> Response:
    hub: Hub = request.app.state.hub
    if not hub.ready:  # a cluster node loading its state, or cut off from Redis (docs/protocol.md, Cluster)
        return PlainTextResponse("unavailable", status_code=503)
    siblings: Siblings | None = request.app.state.siblings
    if siblings is None:
        return PlainTextResponse("ok")
    # A port that lost a worker still serves: 200 keeps it in a load balancer's rotation, and the
    # count tells whoever watches that it runs short.
    serving, workers = siblings.capacity()
    return PlainTextResponse(f"ok: {serving} of {workers} workers")


async def metrics(request: Request) -> Response:
    hub = request.app.state.hub
    check_metrics(request, hub)
    siblings: Siblings | None = request.app.state.siblings
    body = render_metrics(hub) if siblings is None else await port_metrics(hub, siblings)
    return Response(body, media_type="text/plain; version=0.0.4; charset=utf-8")


async def status_page(request: Request) -> Response:
    return FileResponse(STATIC_DIR / "status.html")


async def status_report(request: Request) -> Response:
    """What the status page shows (guarded like ``/metrics``: it names clients and addresses)."""
    check_metrics(request, request.app.state.hub)
    status: Status = request.app.state.status
    siblings: Siblings | None = request.app.state.siblings
    report = await status.report() if siblings is None else await port_status(status, siblings)
    return JSONResponse(report, headers={"Cache-Control": "no-store"})


async def topics(request: Request) -> Response:
    """The configured topics, for the dashboard's topic list (with ``[auth]``: those the user of
    the request's Basic credentials may read)."""
    hub = request.app.state.hub
    user = topics_reader(request, hub)
    return JSONResponse(topic_listing(hub.engine.broker.topics, user))


class WebSocketFirst:
    """``/ws`` straight to its endpoint (which checks ``Host`` and ``Origin`` itself), HTTP
    requests with a ``Host`` that is not one of the server's names refused with 403 (hosts.py), the
    rest to Starlette. A socket lives for hours: through Starlette's router and middleware it held
    their eight coroutines (about 4 KB) all that time, and each connect ran through them.
    Starlette's ``WebSocket`` is built here as its ``WebSocketRoute`` would build it (with the app
    in the scope, for ``websocket.app.state``), and the path is matched as Starlette's router
    matches it (under ``root_path`` or not). The endpoint raises none of Starlette's exceptions;
    one it lets out by a defect reaches uvicorn, which logs it and drops the connection (the client
    sees 1006), as it did through Starlette's middleware, which re-raises it."""

    def __init__(self, app: Starlette, path: str, names: ServerNames) -> None:
        self.app = app
        self.path = path
        self.refusal = HttpHostRefusal(names)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket" and _route_path(scope) == self.path:
            scope["app"] = self.app
            await websocket_endpoint(WebSocket(scope, receive, send))
            return
        if scope["type"] == "http" and self.refusal.refuses(scope, _route_path(scope)):
            await self.refusal.answer(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _route_path(scope: Scope) -> str:
    """The path the router matches: without ``root_path`` when it starts with it."""
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    return path[len(root) :] if root and path.startswith(root) else path


def create_app(hub: Hub, status: Status, siblings: Siblings | None = None) -> ASGIApp:
    """The application of ``hub``'s node; ``siblings`` when it is one of ``--workers``."""
    app = Starlette(
        routes=[
            Route("/", dashboard),
            Route("/healthz", healthz),
            Route("/favicon.ico", favicon),
            Route("/metrics", metrics),
            Route("/status", status_page),
            Route("/status.json", status_report),
            Route("/topics", topics),
            Mount("/web", StaticFiles(directory=WEB_DIR, check_dir=False), name="web"),
            Mount("/static", StaticFiles(directory=STATIC_DIR, check_dir=False), name="static"),
        ],
    )
    settings = hub.config.server
    names = ServerNames(settings.server_names, settings.host, settings.allowed_origins)
    app.state.hub = hub
    app.state.siblings = siblings
    app.state.status = status
    app.state.names = names
    return TransportMiddleware(WebSocketFirst(app, "/ws", names))
