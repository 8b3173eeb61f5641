"""The runtime's light event (server/runtime/wake.py): what asyncio.Event does for this server."""

from __future__ import annotations

import asyncio

from server.runtime.wake import Wake


async def test_the_wake_event_wakes_every_waiter_and_forgets_a_cancelled_one() -> None:
    event = Wake()
    waiters = [asyncio.create_task(event.wait()) for _ in range(3)]
    await asyncio.sleep(0)
    waiters[0].cancel()
    await asyncio.sleep(0)
    event.set()
    assert await asyncio.gather(*waiters[1:]) == [True, True]
    assert event.is_set()
    event.clear()
    assert not event.is_set()
    late = asyncio.create_task(event.wait())
    await asyncio.sleep(0)
    assert not late.done()
    event.set()
    assert await late is True
