"""What a compiled filter costs: the work of one evaluation (the unit a socket's subscription
budget counts, docs/protocol.md, Limits) and the memory it holds (what the compile cache counts).

Work: one unit is about 100-220 ns of evaluation in a fan-out on the reference machine (measured
with 1,000 subscriptions of one shape on one socket). Most nodes are one unit; the ones that
compute are more (``WEIGHTS``: arithmetic goes through number conversion, a function call builds
its argument list). ``/field IN (literals)`` is one set lookup however long its list, and a
regular expression costs ``REGEX_COST`` plus a tenth of its program size, for its search time on
typical text and for the memory it may hold (RE2's ``max_mem``): within the default budget a
socket holds at most about 100 of them.

Memory: ``FILTER_BASE_BYTES`` plus ``FILTER_BYTES_PER_CHAR`` a character of the text (measured:
80 to 130 bytes for the trees and closures of long filters, 400 for the shortest), plus what each
of its regular expressions may hold.
"""

from __future__ import annotations

from collections.abc import Iterator

from . import ast
from .fastpaths import literal_test
from .regex import compile_regex, regex_cost

REGEX_COST = 100
WEIGHTS: dict[type[ast.Node], int] = {ast.Arith: 3, ast.Negate: 2, ast.Call: 4, ast.Affix: 3, ast.Between: 2}
FILTER_BYTES_PER_CHAR = 160
FILTER_BASE_BYTES = 2048


def estimate(tree: ast.Node) -> int:
    """Units of work of one evaluation of ``tree`` (its regular expressions compiled already)."""
    total = 0
    for node in _nodes(tree):
        if isinstance(node, ast.In) and _set_lookup(node):
            total += 2 - len(node.items) - 1  # its operand and items are counted as nodes too
        else:
            total += WEIGHTS.get(type(node), 1)
        if isinstance(node, ast.Call) and node.name == "REGEXP_REPLACE" and literal_pattern(node) is None:
            total += REGEX_COST  # compiled per record: the most a pattern may cost
    for pattern, column, captures in _regexes(tree):
        total += REGEX_COST + compile_regex(pattern, column, captures).program_size // 10  # cached
    return total


def held_bytes(text: str, tree: ast.Node) -> int:
    """About the memory a compiled filter holds, its regular expressions included."""
    own = FILTER_BASE_BYTES + FILTER_BYTES_PER_CHAR * len(text)
    return own + sum(regex_cost(pattern) for pattern, _, _ in _regexes(tree))


def _nodes(tree: ast.Node) -> Iterator[ast.Node]:
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(ast.children(node))


def _regexes(tree: ast.Node) -> Iterator[tuple[str, int, bool]]:
    """(pattern, column, captures) of every regular expression compiled with ``tree``."""
    for node in _nodes(tree):
        if isinstance(node, ast.Like) and literal_test(node.pattern) is None:
            yield node.pattern, node.column, False
        elif isinstance(node, ast.Call) and (literal := literal_pattern(node)) is not None:
            yield literal.value, literal.column, True


def literal_pattern(node: ast.Call) -> ast.Literal | None:
    """The literal pattern of a ``REGEXP_REPLACE``, which is compiled with the filter."""
    if node.name != "REGEXP_REPLACE":
        return None
    pattern = node.args[1]
    if isinstance(pattern, ast.Literal) and type(pattern.value) is str and pattern.value:
        return pattern
    return None


def _set_lookup(node: ast.In) -> bool:
    """``/name IN (literals)``: the compiler's fast path, a set lookup."""
    operand = node.operand
    return (
        isinstance(operand, ast.Field)
        and len(operand.steps) == 1
        and isinstance(operand.steps[0], str)
        and all(isinstance(item, ast.Literal) for item in node.items)
    )
