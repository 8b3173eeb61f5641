"""Key extraction and the SowKey: one opaque, restart-stable string per distinct key value."""

from __future__ import annotations

import hashlib
from typing import Any

from ..errors import BAD_MESSAGE, CommandError
from .canonical import joined, scalar
from .paths import MISSING, PathSteps, format_path, get_path, parse_path

# SowKeys already computed, by canonical key text: hashing (~0.4 us) is the most expensive step of
# keying a publish, and a feed keeps updating the same hot keys. The cache is dropped when it grows
# past this: sized for hot keys, not for every key, since at 65,536 it cost a SOW of 100,000
# records 60 to 100 bytes a record (bench/memory.py).
_CACHE_LIMIT = 4_096


def _canonical(value: Any, path: str) -> str:
    text = scalar(value)
    if text is not None:
        return text
    description = "missing" if value is MISSING else type(value).__name__
    raise CommandError(
        BAD_MESSAGE, f"key field {path} must be a string, number or boolean, not {description}"
    )


class KeySpec:
    """The key paths of one topic."""

    __slots__ = ("_cache", "_single", "_texts", "paths")

    def __init__(self, paths: tuple[PathSteps, ...]) -> None:
        self.paths = paths
        self._texts = tuple(format_path(steps) for steps in paths)
        only = paths[0] if len(paths) == 1 else ()
        self._single = only[0] if len(only) == 1 and isinstance(only[0], str) else None
        self._cache: dict[str, str] = {}

    @classmethod
    def parse(cls, texts: list[str]) -> KeySpec:
        return cls(tuple(parse_path(text) for text in texts))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, KeySpec) and other.paths == self.paths

    def __hash__(self) -> int:
        return hash(self.paths)

    def sow_key(self, record: Any) -> str:
        """The SowKey of ``record``; raises ``bad message`` when a key field is absent or not a scalar."""
        if type(record) is not dict:
            raise CommandError(BAD_MESSAGE, "data must be a JSON object")
        if self._single is not None:
            canonical = _canonical(record.get(self._single, MISSING), self._texts[0])
        else:
            canonical = joined(
                [
                    _canonical(get_path(record, steps), text)
                    for steps, text in zip(self.paths, self._texts, strict=True)
                ]
            )
        cache = self._cache
        found = cache.get(canonical)
        if found is None:
            if len(cache) >= _CACHE_LIMIT:
                cache.clear()
            found = cache[canonical] = hashlib.blake2b(canonical.encode(), digest_size=10).hexdigest()
        return found

    def key_values(self, record: Any) -> list[tuple[PathSteps, Any]]:
        return [(steps, get_path(record, steps)) for steps in self.paths]
