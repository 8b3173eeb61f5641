"""The frozen syntax tree of a filter. Every node carries the column it starts at."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, fields
from typing import Any


@dataclass(frozen=True, slots=True)
class Node:
    column: int


@dataclass(frozen=True, slots=True)
class Literal(Node):
    value: Any


@dataclass(frozen=True, slots=True)
class Field(Node):
    steps: tuple[str | int, ...]
    text: str


@dataclass(frozen=True, slots=True)
class Not(Node):
    operand: Node


@dataclass(frozen=True, slots=True)
class Logical(Node):
    """``AND`` or ``OR`` over two or more operands (chains are flattened, so they never nest deeply)."""

    op: str
    items: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Compare(Node):
    op: str  # "=", "!=", "<", "<=", ">", ">="
    left: Node
    right: Node


@dataclass(frozen=True, slots=True)
class Between(Node):
    operand: Node
    low: Node
    high: Node


@dataclass(frozen=True, slots=True)
class In(Node):
    operand: Node
    items: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Like(Node):
    operand: Node
    pattern: str


@dataclass(frozen=True, slots=True)
class Affix(Node):
    """``BEGINS WITH (...)`` (``ends=False``) or ``ENDS WITH (...)``."""

    operand: Node
    items: tuple[Node, ...]
    ends: bool


@dataclass(frozen=True, slots=True)
class IsNull(Node):
    operand: Node


@dataclass(frozen=True, slots=True)
class Arith(Node):
    op: str  # "+", "-", "*", "/", "%"
    left: Node
    right: Node


@dataclass(frozen=True, slots=True)
class Negate(Node):
    operand: Node


@dataclass(frozen=True, slots=True)
class Call(Node):
    name: str
    args: tuple[Node, ...]


def children(node: Node) -> Iterator[Node]:
    """The nodes directly under ``node``: its fields that are nodes, or tuples of nodes."""
    for field in fields(node):
        value = getattr(node, field.name)
        for child in value if isinstance(value, tuple) else (value,):
            if isinstance(child, Node):
                yield child
