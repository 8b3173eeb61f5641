"""Key extraction and the SowKey: one opaque, restart-stable string per distinct key value."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from .errors import BAD_MESSAGE, CommandError
from .paths import MISSING, PathSteps, format_path, get_path, parse_path


def _canonical(value: Any, path: str) -> str:
    # Tagged so that 1 and 1.0 are one key while "1" and true are others.
    if isinstance(value, bool):
        return "b:1" if value else "b:0"
    if isinstance(value, int):
        return f"n:{value}"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 2**63:
            return f"n:{int(value)}"
        return f"n:{value!r}"
    if isinstance(value, str):
        return "s:" + value
    kind = "missing" if value is MISSING else type(value).__name__
    raise CommandError(BAD_MESSAGE, f"key field {path} must be a string, number or boolean, not {kind}")


@dataclass(frozen=True, slots=True)
class KeySpec:
    """The key paths of one topic."""

    paths: tuple[PathSteps, ...]

    @classmethod
    def parse(cls, texts: list[str]) -> KeySpec:
        return cls(tuple(parse_path(text) for text in texts))

    def sow_key(self, record: Any) -> str:
        """The SowKey of ``record``; raises ``bad message`` when a key field is absent or not a scalar."""
        if type(record) is not dict:
            raise CommandError(BAD_MESSAGE, "data must be a JSON object")
        parts = [_canonical(get_path(record, steps), format_path(steps)) for steps in self.paths]
        digest = hashlib.blake2b("\x00".join(parts).encode(), digest_size=10).hexdigest()
        return digest

    def key_values(self, record: Any) -> list[tuple[PathSteps, Any]]:
        return [(steps, get_path(record, steps)) for steps in self.paths]
