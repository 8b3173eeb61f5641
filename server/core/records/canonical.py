"""The canonical text of key values: one text per distinct value and one per distinct tuple of
values, so that two keys are one only when their values are (1 and 1.0 are one number).

A SowKey (records/keys.py) and a group's key (aggregate/group_keys.py) are the hash of this text:
they can collide only as an 80-bit hash does, never because two tuples wrote the same text. (The
values were once joined with a bare NUL, so ``("x\\0s:y", "z")`` and ``("x", "y\\0s:z")`` were one
key, and the second publish replaced the first.)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

SEPARATOR = "\x00"
# The tag of a value's text that holds the separator (written escaped); no value's own tag (s, n,
# b, z, j) is this one.
_ESCAPED = "e:"
_ESCAPES = str.maketrans({"\x01": "\x01\x01", "\x00": "\x01\x02"})


def scalar(value: Any) -> str | None:
    """The tagged text of a string, number or boolean (None for any other value): equal numbers
    (1 and 1.0) are one text, while "1" and true are others."""
    kind = type(value)
    if kind is str:
        return "s:" + value  # type: ignore[no-any-return]
    if kind is int:
        return f"n:{value}"
    if kind is bool:
        return "b:1" if value else "b:0"
    if kind is float:
        # A whole float is the int of exactly its value, at any size: 2.0**63 is the key of
        # 9223372036854775808. (JSON has no infinity or NaN: protocol/inbound.py.)
        return f"n:{int(value)}" if value.is_integer() else f"n:{value!r}"
    return None


def joined(texts: Sequence[str]) -> str:
    """The values' texts as one, injectively for tuples of one length: a text holding the
    separator is written escaped under a tag of its own, so each separator left is a join. A text
    without one is itself, so every key written before this rule whose values hold no NUL keeps its
    text, and its hash (a durable topic's stored keys stay the keys its publishers compute). One
    text is itself: there is no join to confuse."""
    if len(texts) == 1:
        return texts[0]
    return SEPARATOR.join(
        _ESCAPED + text.translate(_ESCAPES) if SEPARATOR in text else text for text in texts
    )
