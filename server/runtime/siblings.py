"""A ``--workers`` worker's place among its siblings, and how one asks the others.

Each worker is a node of its own; a scrape of ``/metrics`` or a look at ``/status`` lands on
whichever of them the kernel gives the connection. So that either answers for the whole port,
every worker also listens on a Unix socket of its own, ``worker-<index>.sock`` in a directory
that the parent made for this run, readable by the server's user alone (mode 0700), and answers
one request there: a line naming what it is asked for (``metrics`` or ``status``), answered with
a line holding the answer's length, then the answer. The worker that takes the request asks every
sibling at once, each within ``ASK_TIMEOUT_S``, and merges what they say (asgi/whole_port.py,
runtime/status_merge.py): a sibling that is restarting, too busy to answer in time, or cut off
before its whole answer (killed while it wrote) is reported as not answering, never waited for
and never half read.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

log = logging.getLogger("server")

ASK_TIMEOUT_S = 2.0
MAX_REQUEST_BYTES = 64  # a request is one short line
QUESTIONS = ("metrics", "status")

Answer = Callable[[str], Awaitable[bytes]]


class Siblings:
    """Worker ``index`` of ``count``, answering its siblings in ``directory``; ``capacity`` tells
    how many of them accept connections (for ``/healthz``)."""

    def __init__(
        self, directory: str, index: int, count: int, capacity: Callable[[], tuple[int, int]]
    ) -> None:
        self.directory = Path(directory)
        self.index = index
        self.count = count
        self.capacity = capacity
        self._server: asyncio.AbstractServer | None = None

    def path(self, index: int) -> Path:
        return self.directory / f"worker-{index}.sock"

    async def serve(self, answer: Answer) -> None:
        """Listen on this worker's socket, answering each question with ``answer(question)``."""
        path = self.path(self.index)
        with contextlib.suppress(FileNotFoundError):
            path.unlink()  # the socket of the worker this one replaces

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                # The whole answer within the asker's patience: a worker that stops waits for
                # no handler longer than that.
                async with asyncio.timeout(ASK_TIMEOUT_S):
                    line = await reader.readline()
                    question = line[:MAX_REQUEST_BYTES].decode("ascii", "replace").strip()
                    if question in QUESTIONS:
                        said = await answer(question)
                        writer.write(b"%d\n" % len(said) + said)
                        await writer.drain()
            except (OSError, TimeoutError):
                pass  # the asking sibling gave up or went away: it reports this one as not answering
            except Exception:
                log.exception("worker %d: answering a sibling failed", self.index)
            finally:
                writer.close()

        self._server = await asyncio.start_unix_server(handle, path=str(path))
        os.chmod(path, 0o600)

    async def close(self) -> None:
        """Stop answering; remove this worker's socket, and the directory once it is empty (the
        parent removes it when the port closes, but a parent killed with SIGKILL cannot: then
        the last of its workers to stop does)."""
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
            with contextlib.suppress(OSError):
                self.path(self.index).unlink()
            with contextlib.suppress(OSError):
                self.directory.rmdir()  # (not empty while a sibling still answers)

    async def ask(self, question: str) -> dict[int, bytes | None]:
        """Every other worker's answer to ``question`` by its index (None: it did not answer)."""
        others = [index for index in range(self.count) if index != self.index]
        answers = await asyncio.gather(*(self._ask_one(index, question) for index in others))
        return dict(zip(others, answers, strict=True))

    async def _ask_one(self, index: int, question: str) -> bytes | None:
        writer: asyncio.StreamWriter | None = None
        try:
            async with asyncio.timeout(ASK_TIMEOUT_S):
                reader, writer = await asyncio.open_unix_connection(str(self.path(index)))
                writer.write(question.encode("ascii") + b"\n")
                await writer.drain()
                length = int(await reader.readline())
                return await reader.readexactly(length)
        except (OSError, TimeoutError, ValueError, asyncio.IncompleteReadError):
            return None  # gone, too slow, or cut off mid-answer: not answering
        finally:
            if writer is not None:
                writer.close()
