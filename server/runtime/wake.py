"""``Wake``: what this server needs of ``asyncio.Event`` (``set``, ``clear``, ``is_set``,
``wait``) without its deque of waiters, which CPython allocates 64 slots at a time (760 bytes)
even while nobody waits. A socket holds a few of these for hours: its writer's wake-up, and
uvicorn's flow-control event and message queue (asgi/uvicorn_websocket.py)."""

from __future__ import annotations

import asyncio


class Wake:
    __slots__ = ("_set", "_waiters")

    def __init__(self) -> None:
        self._set = False
        # Nobody, the one waiter (the usual case: no list for it), or several.
        self._waiters: asyncio.Future[None] | list[asyncio.Future[None]] | None = None

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        """Set it and wake every waiter (safe to call from synchronous code on the loop)."""
        if self._set:
            return
        self._set = True
        waiters, self._waiters = self._waiters, None
        for waiter in waiters if isinstance(waiters, list) else (waiters,) if waiters else ():
            if not waiter.done():
                waiter.set_result(None)

    def clear(self) -> None:
        self._set = False

    async def wait(self) -> bool:
        if self._set:
            return True
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiters = self._waiters
        if waiters is None:
            self._waiters = waiter
        elif isinstance(waiters, list):
            waiters.append(waiter)
        else:
            self._waiters = [waiters, waiter]
        try:
            await waiter
        finally:  # cancelled while waiting: forget it
            waiters = self._waiters
            if waiters is waiter:
                self._waiters = None
            elif isinstance(waiters, list) and waiter in waiters:
                waiters.remove(waiter)
        return True
