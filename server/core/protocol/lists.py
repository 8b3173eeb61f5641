"""The structure of a list of expressions (a projection: ``/desk, SUM(COALESCE(/a, 0)) AS /s``):
which characters are outside quotes and how deep inside parentheses and brackets each is. The one
reading of quotes (and of a backslash inside them) that splitting at commas, finding ``AS`` and
matching a call's parentheses all share."""

from __future__ import annotations

from collections.abc import Iterator


def structure(text: str) -> Iterator[tuple[int, str, int]]:
    """Each character of ``text`` outside quotes: its index, itself, and how many parentheses and
    brackets are open before it (a quoted string's characters, its quotes included, are skipped)."""
    depth, quote, escaped = 0, "", False
    for index, char in enumerate(text):
        if quote:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = ""
            continue
        if char in "'\"":
            quote = char
            continue
        yield index, char, depth
        if char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1


def split_items(text: str) -> list[str]:
    """``text`` split at the commas outside parentheses, brackets and quotes (``COALESCE(/a, 0)``
    and ``'x,y'`` are one item each); items stripped, empty ones dropped."""
    items: list[str] = []
    start = 0
    for index, char, depth in structure(text):
        if char == "," and depth == 0:
            items.append(text[start:index].strip())
            start = index + 1
    items.append(text[start:].strip())
    return [item for item in items if item]


def at_top_level(text: str, index: int) -> bool:
    """Whether ``text[index]`` is outside parentheses, brackets and quotes."""
    return any(at == index and depth == 0 for at, _, depth in structure(text[: index + 1]))


def closing(text: str, opening: int) -> int:
    """The index of the parenthesis that closes the one at ``opening`` (-1: none)."""
    inside = -1
    for index, char, depth in structure(text):
        if index == opening:
            inside = depth + 1
        elif index > opening and inside >= 0 and char in ")]" and depth == inside:
            return index
    return -1
