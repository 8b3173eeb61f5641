"""What a filter requires of a record, for indexing subscriptions.

``index_term`` finds the most selective conjunct of the form ``/path = literal`` or
``/path IN (literals)`` at the top level of a filter. A record can only match when the value at
that path has one of the term's index keys, so a topic can skip the subscription for every other
record without evaluating it.

Index keys follow the filter's own equality: numbers, booleans and strings that parse as
numbers key as the number (``'1'``, ``1``, ``1.0`` and ``true`` are one key); other strings key
as themselves; NULL (missing, null, empty string) and objects have no key. The index may let
through a record that then fails the filter, never the other way round.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from dataclasses import dataclass
from typing import Any

from ..records.paths import MISSING
from . import ast
from .fields import read_field
from .values import parse_number


@dataclass(frozen=True, slots=True)
class IndexTerm:
    steps: tuple[str | int, ...]
    keys: frozenset[Hashable]

    def record_keys(self, record: Any) -> Iterator[Hashable]:
        value = read_field(record, self.steps)
        if value is MISSING:
            return
        if type(value) is list:
            for item in value:
                key = index_key(item)
                if key is not None:
                    yield key
        else:
            key = index_key(value)
            if key is not None:
                yield key


def index_key(value: Any) -> Hashable | None:
    kind = type(value)
    if kind is int or kind is float or kind is bool:
        return value  # type: ignore[no-any-return]  # 1 == 1.0 == True share a hash and a key
    if kind is str:
        if not value:
            return None
        number = parse_number(value)
        return value if number is None else number
    return None


def index_term(tree: ast.Node) -> IndexTerm | None:
    conjuncts = tree.items if isinstance(tree, ast.Logical) and tree.op == "AND" else (tree,)
    terms = [term for node in conjuncts if (term := _term(node)) is not None]
    return min(terms, key=lambda term: len(term.keys)) if terms else None


def _term(node: ast.Node) -> IndexTerm | None:
    if isinstance(node, ast.Compare) and node.op == "=":
        for field, literal in ((node.left, node.right), (node.right, node.left)):
            if isinstance(field, ast.Field) and isinstance(literal, ast.Literal):
                key = index_key(literal.value)
                return IndexTerm(field.steps, frozenset(() if key is None else (key,)))
        return None
    if (
        isinstance(node, ast.In)
        and isinstance(node.operand, ast.Field)
        and all(isinstance(item, ast.Literal) for item in node.items)
    ):
        keys = (index_key(item.value) for item in node.items if isinstance(item, ast.Literal))
        return IndexTerm(node.operand.steps, frozenset(key for key in keys if key is not None))
    return None
