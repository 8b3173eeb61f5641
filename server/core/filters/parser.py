"""A Pratt parser: tokens in, frozen AST out, errors with the column of the first problem.

Binding powers, loosest first: OR 10, AND 20, NOT 30, comparison / BETWEEN / IN / LIKE /
BEGINS WITH / ENDS WITH / IS NULL 40, ``+ -`` 50, ``* / %`` 60, unary minus 70.
"""

from __future__ import annotations

from ..errors import FilterError
from . import ast
from .fastpaths import literal_test
from .functions import FUNCTIONS
from .lexer import Kind, Token, tokenize
from .regex import compile_regex

MAX_DEPTH = 100

_COMPARISONS = {"=": "=", "==": "=", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
_ARITH_POWER = {"+": 50, "-": 50, "*": 60, "/": 60, "%": 60}
_WORD_POWER = {
    "OR": 10,
    "AND": 20,
    "NOT": 40,
    "BETWEEN": 40,
    "IN": 40,
    "LIKE": 40,
    "BEGINS": 40,
    "ENDS": 40,
    "IS": 40,
}
_NEGATABLE = {"BETWEEN", "IN", "LIKE", "BEGINS", "ENDS"}


def parse(text: str) -> ast.Node:
    parser = _Parser(tokenize(text))
    node = parser.expression(0)
    token = parser.peek()
    if token.kind is not Kind.END:
        raise FilterError(f"unexpected {_describe(token)}", token.column)
    _check_depth(node)
    return node


def _describe(token: Token) -> str:
    return "end of filter" if token.kind is Kind.END else repr(token.text)


def _check_depth(root: ast.Node) -> None:
    stack: list[tuple[ast.Node, int]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise FilterError(f"nested deeper than {MAX_DEPTH} levels", node.column)
        stack.extend((child, depth + 1) for child in ast.children(node))


class _Parser:
    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.pos = 0
        self.depth = 0

    def peek(self) -> Token:
        return self.tokens[self.pos]

    def advance(self) -> Token:
        token = self.tokens[self.pos]
        if token.kind is not Kind.END:
            self.pos += 1
        return token

    def word(self, token: Token) -> str:
        return token.text.upper() if token.kind is Kind.WORD else ""

    def expect_word(self, word: str) -> Token:
        token = self.advance()
        if self.word(token) != word:
            raise FilterError(f"expected {word} but found {_describe(token)}", token.column)
        return token

    def expect(self, kind: Kind, what: str) -> Token:
        token = self.advance()
        if token.kind is not kind:
            raise FilterError(f"expected {what} but found {_describe(token)}", token.column)
        return token

    def binding_power(self, token: Token) -> int:
        if token.kind is Kind.OP:
            return 40 if token.text in _COMPARISONS else _ARITH_POWER[token.text]
        if token.kind is Kind.WORD:
            return _WORD_POWER.get(token.text.upper(), 0)
        return 0

    def expression(self, right_power: int) -> ast.Node:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise FilterError(f"nested deeper than {MAX_DEPTH} levels", self.peek().column)
        left = self.prefix(self.advance())
        while right_power < self.binding_power(self.peek()):
            left = self.infix(self.advance(), left)
        self.depth -= 1
        return left

    def prefix(self, token: Token) -> ast.Node:
        column = token.column
        if token.kind in (Kind.NUMBER, Kind.STRING):
            return ast.Literal(column, token.value)
        if token.kind is Kind.PATH:
            assert isinstance(token.value, tuple)
            return ast.Field(column, token.value, token.text)
        if token.kind is Kind.LPAREN:
            inner = self.expression(0)
            self.expect(Kind.RPAREN, "')'")
            return inner
        if token.kind is Kind.OP and token.text in "+-":
            operand = self.expression(70)
            if token.text == "+":
                return operand
            if isinstance(operand, ast.Literal) and type(operand.value) in (int, float):
                return ast.Literal(column, -operand.value)  # -3 is a literal, so it can be indexed
            return ast.Negate(column, operand)
        word = self.word(token)
        if word == "NULL":
            return ast.Literal(column, None)
        if word in ("TRUE", "FALSE"):
            return ast.Literal(column, word == "TRUE")
        if word == "NOT":
            return ast.Not(column, self.expression(30))
        if word and self.peek().kind is Kind.LPAREN:
            return self.call(token)
        if word:
            raise FilterError(f"unknown identifier {token.text!r}", column)
        raise FilterError(f"expected an expression but found {_describe(token)}", column)

    def call(self, token: Token) -> ast.Node:
        name = token.text.upper()
        function = FUNCTIONS.get(name)
        if function is None:
            raise FilterError(f"unknown function {token.text}", token.column)
        self.advance()
        args: list[ast.Node] = []
        if self.peek().kind is not Kind.RPAREN:
            args = self.items()
        self.expect(Kind.RPAREN, "')'")
        if not function.min_args <= len(args) <= function.max_args:
            raise FilterError(f"{name} takes {function.arity_text} arguments, not {len(args)}", token.column)
        return ast.Call(token.column, name, tuple(args))

    def items(self) -> list[ast.Node]:
        items = [self.expression(0)]
        while self.peek().kind is Kind.COMMA:
            self.advance()
            items.append(self.expression(0))
        return items

    def parenthesised_items(self) -> tuple[ast.Node, ...]:
        self.expect(Kind.LPAREN, "'('")
        items = self.items()
        self.expect(Kind.RPAREN, "')'")
        return tuple(items)

    def infix(self, token: Token, left: ast.Node) -> ast.Node:
        column = left.column
        if token.kind is Kind.OP:
            if token.text in _COMPARISONS:
                return ast.Compare(column, _COMPARISONS[token.text], left, self.expression(40))
            power = _ARITH_POWER[token.text]
            return ast.Arith(column, token.text, left, self.expression(power))
        word = self.word(token)
        if word in ("AND", "OR"):
            right = self.expression(_WORD_POWER[word])
            items = (
                (*left.items, right) if isinstance(left, ast.Logical) and left.op == word else (left, right)
            )
            return ast.Logical(column, word, items)
        if word == "NOT":
            following = self.advance()
            if self.word(following) not in _NEGATABLE:
                raise FilterError(
                    f"expected BETWEEN, IN, LIKE, BEGINS or ENDS after NOT but found {_describe(following)}",
                    following.column,
                )
            return ast.Not(column, self.infix(following, left))
        if word == "BETWEEN":
            low = self.expression(40)
            self.expect_word("AND")
            return ast.Between(column, left, low, self.expression(40))
        if word == "IN":
            return ast.In(column, left, self.parenthesised_items())
        if word == "LIKE":
            pattern = self.expect(Kind.STRING, "a quoted regular expression")
            assert isinstance(pattern.value, str)
            if literal_test(pattern.value) is None:  # plain text is matched without a regex
                compile_regex(pattern.value, pattern.column)
            return ast.Like(column, left, pattern.value)
        if word in ("BEGINS", "ENDS"):
            self.expect_word("WITH")
            return ast.Affix(column, left, self.parenthesised_items(), word == "ENDS")
        # IS [NOT] NULL
        negated = self.word(self.peek()) == "NOT"
        if negated:
            self.advance()
        self.expect_word("NULL")
        test: ast.Node = ast.IsNull(column, left)
        return ast.Not(column, test) if negated else test
