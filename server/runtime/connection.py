"""One WebSocket: a reader that feeds the engine and a writer task that drains the outbox.

The fan-out never awaits a socket: the engine pushes into the session's outbox and wakes this
connection's writer (the connection is the session's ``SessionPort``). After every call into the
engine, before it awaits anything, the reader runs the pump (pump.py), which wakes whichever
other task the commands left work for. The writer wakes, takes everything queued as array frames no larger
than ``max_message_bytes`` (unless one message is), and sends them. While the peer is slow the
outbox grows, never the work of other sockets; when it overflows the engine asks for a close.

A frame's commands run in slices (``receive``): at most ``SLICE_COMMANDS`` commands or
``SLICE_S`` of work, then the engine settles and the loop runs every other socket's reader,
writer and timers before the next slice. One frame of 100,000 commands used to hold everyone for
12 s. The socket's own order is kept: its next frame is not read until this one is done. A
command whose pass over a topic would be a long step of its own (a snapshot of a big topic through
a filter, a new window's order) has the pass read in slices first, the same way, and then runs
(core/handlers/preparing.py).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from ..core.engine import Engine
from ..core.handlers.preparation import Preparation
from ..core.session.session import Session
from .ports import SocketPort
from .pump import Pump
from .wake import Wake

if TYPE_CHECKING:
    from .redis_log import RedisLog

log = logging.getLogger("server.runtime")

SendFrame = Callable[[bytes], Awaitable[None]]

# How long a socket closed for being slow may take to read up to the close frame before it is cut.
SLOW_CLOSE_GRACE_S = 30.0

# One slice of a frame's commands: whichever comes first. A publish takes 5-20 us, so a slice is a
# few hundred commands; a command that takes longer (a big snapshot query) is a slice of its own.
SLICE_COMMANDS = 500
SLICE_S = 0.002

CLOSE_INTERNAL_ERROR = 1011  # the writer failed for a reason of the server's own
MAX_CAUSES = 8  # how far back a failed send's chain of causes is searched for the peer going away


class Connection:
    def __init__(
        self,
        engine: Engine,
        pump: Pump,
        send: SendFrame,
        handle: SocketPort,
        max_frame_bytes: int,
        binary: bool,
        cluster: RedisLog | None = None,
        peer: str | None = None,
    ) -> None:
        """``peer``: the socket's remote address (failed logons are counted by it)."""
        self.engine = engine
        self.broker = engine.broker
        self.pump = pump
        self.cluster = cluster
        self.send = send
        self.handle = handle
        self.max_frame_bytes = max_frame_bytes
        self.binary = binary
        self._woken = Wake()  # the writer's: something is queued
        self.writer: asyncio.Task[None] | None = None
        self.sending = False  # the writer has taken a frame and waits for the peer to take it
        self.woken_lately = True  # woken since the last look of park_idle_writer
        self.finished = False  # the socket is gone (finish): no writer starts again
        self.session: Session = self.broker.open_session(self, peer)

    def start(self) -> None:
        """Start the writer, unless one runs (or ran: a writer ends only with its socket)."""
        if self.writer is None:
            self.writer = asyncio.create_task(self._write_loop(), name=f"writer-{self.session.id}")

    def wake(self) -> None:
        """Something is queued: the writer runs (the session's port, called as it queues). A
        writer let go of while the socket was idle (``park_idle_writer``) starts again."""
        self._woken.set()
        self.woken_lately = True
        if self.writer is None and not self.finished:
            self.start()

    def park_idle_writer(self) -> bool:
        """Let go of the writer task of a socket that was not woken since the last call (the
        hub calls every WRITER_IDLE_S): an idle socket then holds no task, coroutine and future
        of its own (0.9 KB of RSS; bench/memory.py --idle-s 25), and ``wake`` starts a writer
        again. Only a writer
        that waits to be woken is let go of: not one sending, or closing, or with work queued."""
        if self.woken_lately:
            self.woken_lately = False
            return False
        writer, session = self.writer, self.session
        if (
            writer is None
            or writer.done()
            or self.sending
            or self._woken.is_set()
            or session.outbox
            or session.close_code is not None
        ):
            return False
        writer.cancel()  # at its wait for a wake-up: it ends there, having nothing in hand
        self.writer = None
        return True

    def try_write(self) -> None:
        """The outbox is full: write what it holds now, as far as the transport takes it, so that a
        burst to a healthy socket is written rather than conflated (docs/protocol.md, Conflation,
        first step)."""
        outbox, handle = self.session.outbox, self.handle
        # Not while the writer waits to send a frame it has taken: the next frames would pass it.
        while not self.sending and handle.can_write_now():
            frame = outbox.take_frame(self.max_frame_bytes, self.broker.clock())
            if frame is None:
                return
            handle.write_now(frame, self.binary)

    async def receive(self, frame: bytes | str) -> None:
        """Execute one frame's commands in order, yielding to the other sockets between slices."""
        engine, broker, pump = self.engine, self.broker, self.pump
        session, cluster = self.session, self.cluster
        commands = engine.decode(session, frame)
        if cluster is not None:
            pump()  # (a frame that is not JSON was answered)
            await cluster.before(commands)
        count, done = len(commands), 0
        try:
            while done < count and session.close_code is None:
                deadline = time.perf_counter() + SLICE_S
                end = min(count, done + SLICE_COMMANDS)
                while done < end and session.close_code is None:
                    if cluster is not None and cluster.waits(session, commands[done]):
                        broker.settle()
                        pump()  # what it waits for goes to Redis now
                        await cluster.settled(session)
                        continue
                    prepared = engine.prepare(session, commands[done])
                    if prepared is not None:
                        if not await self._read_in_slices(prepared):
                            prepared = None  # (a defect, logged: the command runs whole)
                        elif session.close_code is not None:
                            prepared.release()
                            break
                    engine.execute(session, commands[done], prepared)
                    done += 1
                    if time.perf_counter() > deadline:
                        break
                if done < count:
                    broker.settle()  # the slice's fan-out goes out before others run
                    pump()
                    await asyncio.sleep(0)
        finally:
            broker.settle()
            pump()
        if cluster is not None:
            await cluster.paced(session)

    async def _read_in_slices(self, prepared: Preparation) -> bool:
        """Read a command's pass over a topic a slice at a time (core/handlers/preparing.py), once
        it is one of the ``SERVER_PASSES`` read at once (``Pump.passes``). Those take turns
        (``Pump.pass_turn``): one slice of one pass, then the loop runs every other socket's
        frames, then the next pass's slice. Ten sockets' passes at once would otherwise each take
        a slice in every round of the loop, and every other socket would wait ten slices a round.
        False when the pass failed (a defect, logged): then its command runs whole."""
        pump = self.pump
        self.broker.settle()  # what this frame did so far goes out before the pass waits its turn
        pump()
        try:
            async with pump.passes:  # (its copy of the records is taken at its first slice)
                await self._take_turns(prepared)
        except Exception:
            prepared.release()
            log.exception("a pass in slices failed on session %s; its command runs whole", self.session.id)
            return False
        except BaseException:
            prepared.release()
            raise
        return True

    async def _take_turns(self, prepared: Preparation) -> None:
        broker, pump = self.broker, self.pump
        done = False
        while not done:
            async with pump.pass_turn:
                end = time.perf_counter() + SLICE_S
                while not (done := prepared.advance()) and time.perf_counter() < end:
                    pass
                if not done:
                    broker.settle()  # what this frame did so far goes out before others run
                    pump()
                    await asyncio.sleep(0)  # the others run; other passes wait for the turn

    async def _write_loop(self) -> None:
        session, outbox, clock = self.session, self.session.outbox, self.broker.clock
        handle, binary = self.handle, self.binary
        try:
            while True:
                await self._woken.wait()
                self._woken.clear()
                while session.close_code != 4001:
                    frame = outbox.take_frame(self.max_frame_bytes, clock())
                    if frame is None:
                        break
                    if handle.can_write_now():
                        handle.write_now(frame, binary)  # the peer keeps up: no await, no copy
                    else:
                        self.sending = True
                        try:
                            await self.send(frame)  # waits for the peer's flow control
                        finally:
                            self.sending = False
                if session.close_code is not None:
                    await self._close(session.close_code, session.close_reason)
                    return
        except asyncio.CancelledError:
            raise
        except Exception as error:
            await self._writer_failed(error)

    async def _writer_failed(self, error: Exception) -> None:
        """The writer cannot go on. A peer that went away mid-send is ordinary; anything else is a
        defect, and a socket without its writer would look alive while nothing reaches its client
        (not even acks or heartbeats): it is closed with 1011 and the defect logged as an error."""
        session = self.session
        if self._peer_gone(error):
            log.debug("writer of session %s stopped, the peer went away: %r", session.id, error)
            return
        log.error(
            "writer of session %s (client %r) failed; closing the socket with %d",
            session.id,
            session.client_name,
            CLOSE_INTERNAL_ERROR,
            exc_info=error,
        )
        session.request_close(CLOSE_INTERNAL_ERROR, "internal error")  # its commands stop too
        await self.handle.close(CLOSE_INTERNAL_ERROR, "internal error")

    def _peer_gone(self, error: BaseException) -> bool:
        """Whether a failed send means the peer went away: its transport is closing, or the error
        is (or was raised for) an ``OSError``, as uvicorn's ``ClientDisconnected`` is and
        Starlette's ``WebSocketDisconnect`` is raised for. The runtime cannot name their types."""
        if self.handle.closing():
            return True
        cause: BaseException | None = error
        for _ in range(MAX_CAUSES):
            if cause is None:
                break
            if isinstance(cause, OSError):
                return True
            cause = cause.__cause__ or cause.__context__
        return False

    async def _close(self, code: int, reason: str) -> None:
        if code == 4001:
            log.warning(
                "closing session %s (client %r) with 4001, %s",
                self.session.id,
                self.session.client_name,
                reason,
            )
            # The peer is not reading: give it time to reach the close frame behind what is in flight.
            await self.handle.close(code, reason, grace_s=SLOW_CLOSE_GRACE_S)
            return
        await self.handle.close(code, reason)

    async def shutdown(self, code: int, reason: str) -> None:
        """Close from the server side (process shutdown)."""
        if self.writer is not None and not self.writer.done():
            self.writer.cancel()
        await self.handle.close(code, reason, grace_s=2.0)

    def finish(self) -> None:
        """The socket is gone: forget the session, free everything queued for it, stop the writer."""
        self.finished = True
        self.broker.close_session(self.session)
        self.pump()  # its client name, in a cluster, is let go of
        self.session.outbox.close()
        if self.writer is not None and not self.writer.done():
            self.writer.cancel()
