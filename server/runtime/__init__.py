"""asyncio orchestration: the hub, one writer task per socket, timers, start-up and shutdown."""
