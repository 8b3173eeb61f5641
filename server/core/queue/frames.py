"""The frame a socket's writer sends: the messages it takes from the outbox, as one JSON array
(docs/protocol.md, Framing). A message may arrive in parts (a delivery's head and body, a piece of
snapshot rows): parts are joined with commas, whatever message they belong to."""

from __future__ import annotations

SMALL_ENDS = 4096  # end parts short enough to copy once more


def array_frame(parts: list[bytes]) -> bytes:
    """``parts`` comma-joined in a JSON array, the frame copied once (a frame may be a megabyte of
    snapshot: ``b"[" + b",".join(parts) + b"]"`` copies it three times). A frame of many small
    messages takes its brackets on its first and last part; one whose end parts are big (a
    snapshot's rows) is joined with separators of its own, so they are not copied twice."""
    first, last = parts[0], parts[-1]
    if len(parts) > 1 and len(first) + len(last) <= SMALL_ENDS:
        parts[0] = b"[" + first
        parts[-1] = last + b"]"
        return b",".join(parts)
    framed = [b"["]
    for part in parts:
        framed.append(part)
        framed.append(b",")
    framed[-1] = b"]"
    return b"".join(framed)
