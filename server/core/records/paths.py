"""Field paths (``/a/b``, ``/a[0]/b``) parsed once into tuples of steps, and read from records."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Final

Step = str | int
PathSteps = tuple[Step, ...]


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = _Missing()

_SEGMENT = re.compile(r"([^/\[\]]*)((?:\[\d+\])*)")


@lru_cache(maxsize=4096)
def parse_path(text: str) -> PathSteps:
    """Parse ``/a/b[0]`` into ``("a", "b", 0)``; raises ValueError when it is not a path."""
    if not text.startswith("/"):
        raise ValueError(f"a path starts with '/': {text!r}")
    if text == "/":
        return ()
    steps: list[Step] = []
    for segment in text[1:].split("/"):
        match = _SEGMENT.fullmatch(segment)
        if match is None or not match.group(1):
            raise ValueError(f"empty or malformed path segment in {text!r}")
        steps.append(match.group(1))
        steps.extend(int(index) for index in re.findall(r"\[(\d+)\]", match.group(2)))
    return tuple(steps)


def format_path(steps: PathSteps) -> str:
    out = []
    for step in steps:
        out.append(f"[{step}]" if isinstance(step, int) else f"/{step}")
    return "".join(out) or "/"


def get_path(record: Any, steps: PathSteps) -> Any:
    """The value at ``steps`` in ``record``, or ``MISSING``."""
    value = record
    for step in steps:
        if isinstance(step, str):
            if type(value) is not dict:
                return MISSING
            value = value.get(step, MISSING)
            if value is MISSING:
                return MISSING
        else:
            if type(value) is not list or step >= len(value):
                return MISSING
            value = value[step]
    return value


def set_path(target: dict[str, Any], steps: PathSteps, value: Any) -> None:
    """Write ``value`` at a path of object steps (key fields only).

    Objects on the way are copied, never modified: ``target`` may share them with a stored record.
    """
    node = target
    for step in steps[:-1]:
        child = node.get(step) if isinstance(step, str) else None
        child = dict(child) if type(child) is dict else {}
        node[str(step)] = child
        node = child
    node[str(steps[-1])] = value
