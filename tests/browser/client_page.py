"""A page that has the JavaScript client loaded (`push`, from /web/index.js) and a few helpers:
`waitFor(check)`, `sleep(ms)`, and `settle(promise)`, which turns an outcome into plain data
(a rejection: its class name, code, reason, command, closeCode, and its cause's name and code)."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager

from playwright.sync_api import Page

from ..integration.server_process import ServerProcess

HELPERS = """() => {
  window.waitFor = async (check, ms = 10000) => {
    const start = Date.now();
    while (!check()) {
      if (Date.now() - start > ms) throw new Error("timed out waiting");
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  window.sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  window.settle = (promise) => promise.then(
    (value) => ({ ok: true }),
    (error) => ({
      ok: false, name: error.name, code: error.code, reason: error.reason, command: error.command,
      closeCode: error.closeCode, message: error.message, isPushError: error instanceof push.PushError,
      cause: error.cause ? { name: error.cause.name, code: error.cause.code } : null,
    }));
}"""


def open_client_page(page: Page, server: ServerProcess) -> None:
    page.goto(server.http + "/healthz")
    page.evaluate("async () => { window.push = await import('/web/index.js'); }")
    page.evaluate(HELPERS)


@contextmanager
def frozen(server: ServerProcess) -> Iterator[None]:
    """The server process stopped (SIGSTOP): its sockets stay open and nothing is answered."""
    server.process.send_signal(signal.SIGSTOP)
    try:
        yield
    finally:
        server.process.send_signal(signal.SIGCONT)
