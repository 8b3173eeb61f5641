"""Splitting a list of expressions (a projection: ``/desk, SUM(COALESCE(/a, 0)) AS /s``) at its
commas: the ones outside parentheses, brackets and quotes."""

from __future__ import annotations


def split_items(text: str) -> list[str]:
    """``text`` split at the commas outside parentheses, brackets and quotes (``COALESCE(/a, 0)``
    and ``'x,y'`` are one item each); items stripped, empty ones dropped."""
    items: list[str] = []
    depth, quote, start, escaped = 0, "", 0, False
    for index, char in enumerate(text):
        if quote:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        elif char == "," and depth == 0:
            items.append(text[start:index].strip())
            start = index + 1
    items.append(text[start:].strip())
    return [item for item in items if item]
