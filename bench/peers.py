"""The servers a benchmark compares, each started as its own process on a loopback port, and how
the load client speaks to each (its dialect).

- ``sowpush``: this server, one topic keyed on ``/id``; subscribers send ``subscribe``.
- ``relay``: the ten-line Starlette broadcast (broadcast_baseline.py), the Python floor.
- ``socketio`` / ``socketio-batched``: python-socketio on the same uvicorn stack, one event per
  update (what its documentation shows) or one event per frame of updates.
- ``node-ws``: a Node.js relay on the ``ws`` package; ``node-socketio`` / ``node-socketio-batched``:
  Socket.IO on Node.js. Installed from npm into ``.venv/bench-node`` on first use.

Every Python peer runs uvicorn with uvloop, httptools, the sans-I/O WebSocket implementation and
permessage-deflate off, as this server does by default.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from harness import ROOT, free_port, serve, start

NODE_DIR = ROOT / ".venv" / "bench-node"
NODE_PACKAGES = ("ws@8.18.3", "socket.io@4.8.1")
TOPIC_CONFIG = '[[topic]]\nname = "bench"\nkey = ["/id"]\n'


@dataclass(frozen=True)
class Peer:
    name: str
    dialect: str  # "sowpush", "relay" (frames forwarded as they are) or "socketio"
    batched: bool = True  # socketio: one event per frame of updates, else one per update
    launcher: str = "uvicorn"  # "sowpush", "uvicorn" (an ASGI app) or "node" (a script)
    target: str = ""  # the ASGI app or the Node script
    root: Path = ROOT  # sowpush: the checkout whose server runs
    pure: bool = False  # sowpush: its pure-Python core, whatever is compiled

    def start(self, work: Path) -> tuple[subprocess.Popen[bytes], str]:
        """Start the server; its process and the WebSocket URL the load client opens."""
        port = free_port()
        work.mkdir(parents=True, exist_ok=True)
        if self.launcher == "sowpush":
            return serve(TOPIC_CONFIG, work, port, self.root, self.pure), f"ws://127.0.0.1:{port}/ws"
        if self.launcher == "node":
            install_node_packages()
            # Node resolves an ES module's imports beside the script: run a copy there.
            script = NODE_DIR / self.target
            shutil.copyfile(ROOT / "bench" / "node" / self.target, script)
            process = start([node(), str(script), str(port)], port, cwd=NODE_DIR)
        else:
            process = start(uvicorn_command(self.target, port), port)
        path = "/socket.io/?EIO=4&transport=websocket" if self.dialect == "socketio" else "/ws"
        return process, f"ws://127.0.0.1:{port}{path}"


def uvicorn_command(app: str, port: int) -> list[str]:
    return [
        *(sys.executable, "-m", "uvicorn", app, "--port", str(port)),
        *("--ws", "websockets-sansio", "--loop", "uvloop", "--http", "httptools"),
        *("--log-level", "warning", "--no-access-log", "--ws-per-message-deflate", "false"),
    ]


PEERS = {
    peer.name: peer
    for peer in (
        Peer("sowpush", "sowpush", launcher="sowpush"),
        Peer("sowpush-pure", "sowpush", launcher="sowpush", pure=True),
        Peer("relay", "relay", target="bench.broadcast_baseline:app"),
        Peer("socketio", "socketio", batched=False, target="bench.peer_socketio:app"),
        Peer("socketio-batched", "socketio", target="bench.peer_socketio:app"),
        Peer("node-ws", "relay", launcher="node", target="ws_relay.mjs"),
        Peer("node-socketio", "socketio", batched=False, launcher="node", target="socketio.mjs"),
        Peer("node-socketio-batched", "socketio", launcher="node", target="socketio.mjs"),
    )
}
# SOWPUSH_BASELINE=/path/to/another/checkout adds the peer "baseline": that checkout's server, run
# by this interpreter, so a change is measured against an earlier commit in the same interleaved
# rounds (git worktree add /tmp/base <commit>; --peers sowpush,baseline).
BASELINE = os.environ.get("SOWPUSH_BASELINE")
if BASELINE:
    PEERS["baseline"] = Peer("baseline", "sowpush", launcher="sowpush", root=Path(BASELINE))


def node() -> str:
    found = shutil.which("node")
    if found is None:
        raise SystemExit("the Node.js peers need node and npm: apt-get install nodejs npm")
    return found


def install_node_packages() -> None:
    """``ws`` and ``socket.io`` from npm, pinned, into .venv/bench-node (once)."""
    if all((NODE_DIR / "node_modules" / package.split("@")[0]).is_dir() for package in NODE_PACKAGES):
        return
    NODE_DIR.mkdir(parents=True, exist_ok=True)
    (NODE_DIR / "package.json").write_text('{"private": true, "type": "module"}\n')
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("the Node.js peers need npm: apt-get install nodejs npm")
    subprocess.run(
        [npm, "install", "--no-audit", "--no-fund", "--silent", "--prefix", str(NODE_DIR), *NODE_PACKAGES],
        check=True,
        stdout=subprocess.DEVNULL,
    )
