"""Pure logic of the push server: no asyncio, no Starlette, no clock of its own.

Everything here is driven by feeding it values and reading what it returns, so it is
tested without an event loop or a socket.
"""

# First of all: whether the core's modules load compiled or from source (native.py says why).
from . import native as native
