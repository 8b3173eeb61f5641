"""Select lists (``select=[-/,+/id,+/qty]``) with AMPS's rules.

Each directive includes (``+``) or excludes (``-``) a path and everything below it. For any
field the most specific directive (the longest path that covers it) wins; a field no directive
covers is included. An object that is excluded but has an included descendant keeps just that
descendant.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from .paths import parse_path


@dataclass(slots=True)
class _Node:
    include: bool | None = None
    children: dict[str, _Node] = field(default_factory=dict)


class SelectList:
    """A compiled select list; ``apply`` returns a new (possibly shared) view of a record."""

    def __init__(self, text: str, root: _Node) -> None:
        self.text = text
        self._root = root

    def apply(self, record: Any) -> Any:
        if type(record) is not dict:
            return record
        root_include = True if self._root.include is None else self._root.include
        return _apply(record, self._root, root_include)


def _apply(obj: dict[str, Any], node: _Node, include: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    children = node.children
    for name, value in obj.items():
        child = children.get(name)
        if child is None:
            if include:
                out[name] = value
            continue
        child_include = include if child.include is None else child.include
        if child.children and type(value) is dict:
            sub = _apply(value, child, child_include)
            if sub or child_include:
                out[name] = sub
        elif child_include:
            out[name] = value
    return out


@lru_cache(maxsize=1024)
def parse_select(text: str) -> SelectList:
    """Parse the inside of ``[...]``: comma separated ``+/path`` or ``-/path`` items. Raises ValueError."""
    root = _Node()
    items = [item.strip() for item in text.split(",")]
    if not items or any(not item for item in items):
        raise ValueError("empty select directive")
    for item in items:
        sign, path = item[0], item[1:].strip()
        if sign not in "+-":
            raise ValueError(f"select directive must start with + or -: {item!r}")
        steps = parse_path(path)
        if any(isinstance(step, int) for step in steps):
            raise ValueError(f"select paths name fields, not array elements: {item!r}")
        node = root
        for step in steps:
            node = node.children.setdefault(str(step), _Node())
        node.include = sign == "+"
    return SelectList(text, root)
