"""What a job checks before it starts Spark, so a mistake costs one clear line, not a JVM start
and a stack trace: the server's URL, that the server answers there, the folder, the trigger."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import NoReturn
from urllib.parse import urlsplit

from websockets.sync.client import connect

CONNECT_TIMEOUT_S = 5.0


def fail(message: str) -> NoReturn:
    """One line on stderr, exit status 2 (what the server does for a bad configuration)."""
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


class OneLineParser(argparse.ArgumentParser):
    """argparse, with a mistake said in one line (``error: argument --path: ...``), no usage block."""

    def error(self, message: str) -> NoReturn:
        fail(message)


def websocket_url(text: str) -> str:
    """An argparse type: ``ws://host:port/path`` or ``wss://...``."""
    parts = urlsplit(text)
    if parts.scheme not in ("ws", "wss") or not parts.hostname:
        raise argparse.ArgumentTypeError(f"{text!r} is not a WebSocket URL (ws://host:port/ws)")
    return text


def trigger(text: str) -> str:
    """An argparse type: ``available-now``, ``once`` or a positive number of seconds."""
    if text in ("available-now", "once"):
        return text
    try:
        seconds = float(text)
    except ValueError:
        seconds = 0.0
    if not seconds > 0:
        raise argparse.ArgumentTypeError(f"takes available-now, once or a number of seconds, not {text!r}")
    return text


def folder(text: str) -> str:
    """An argparse type: an existing directory."""
    if not Path(text).is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is not a directory")
    return text


def server_answers(url: str) -> None:
    """Open and close a WebSocket to ``url``; fail with one line when nothing answers there."""
    try:
        with connect(url, open_timeout=CONNECT_TIMEOUT_S):
            pass
    except Exception as error:  # refused, unknown host, timeout, not a WebSocket endpoint
        fail(f"cannot reach the server at {url}: {error}")
