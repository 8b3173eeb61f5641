"""Tokens with 1-based columns. ``/`` right after an operand is division, anywhere else a path."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from enum import Enum, auto

from ..errors import FilterError

# Compiling costs ~3 us a character (a 16 KiB filter: 35-55 ms on the reference machine), all of
# it in one command that cannot yield: past this a filter is refused rather than stall the loop.
MAX_FILTER_LENGTH = 16 * 1024
MAX_NUMBER_DIGITS = 4000  # int() refuses more than 4,300 digits, and a longer literal is no id
MAX_INDEX_DIGITS = 18  # an array index fits a signed 64-bit integer; no array comes near it


class Kind(Enum):
    PATH = auto()
    NUMBER = auto()
    STRING = auto()
    WORD = auto()
    OP = auto()
    LPAREN = auto()
    RPAREN = auto()
    COMMA = auto()
    END = auto()


@dataclass(frozen=True, slots=True)
class Token:
    kind: Kind
    text: str
    column: int
    # A number's value, a string's unescaped text or a path's steps. (A dataclass field typed
    # ``object`` with a default does not compile with mypyc, hence the union.)
    value: int | float | str | tuple[str | int, ...] | None = None


_NUMBER = re.compile(r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_DIGITS = "0123456789"
_WORD = re.compile(r"[^\W\d]\w*")
_NAME = re.compile(r"[\w$@]+")
_INDEX = re.compile(r"\[(\d+)\]")
_OPERATORS = ("==", "!=", "<>", "<=", ">=", "=", "<", ">", "+", "-", "*", "/", "%")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0"}
_OPERAND_ENDS = {Kind.PATH, Kind.NUMBER, Kind.STRING, Kind.RPAREN}
_OPERAND_WORDS = {"NULL", "TRUE", "FALSE"}


def tokenize(text: str) -> list[Token]:
    if len(text) > MAX_FILTER_LENGTH:
        raise FilterError(f"filter longer than {MAX_FILTER_LENGTH} characters", 1)
    tokens: list[Token] = []
    pos, size = 0, len(text)
    while pos < size:
        char = text[pos]
        column = pos + 1
        if char.isspace():
            pos += 1
            continue
        previous = tokens[-1] if tokens else None
        after_operand = previous is not None and (
            previous.kind in _OPERAND_ENDS
            or (previous.kind is Kind.WORD and previous.text.upper() in _OPERAND_WORDS)
        )
        if char == "/" and not after_operand:
            pos = _lex_path(text, pos, tokens)
        elif char == "[" and text.startswith("[/", pos):
            end = text.find("]", pos)
            if end < 0:
                raise FilterError("expected ']' to close the bracketed field name", column)
            inner = text[pos + 2 : end]
            steps = tuple(part for part in inner.split("/"))
            if not all(steps):
                raise FilterError("empty field name in brackets", column)
            pos = end + 1
            pos, indexed = _lex_indexes(text, pos, steps)
            tokens.append(Token(Kind.PATH, text[column - 1 : pos], column, indexed))
        elif char in "'\"":
            pos = _lex_string(text, pos, tokens)
        elif char in _DIGITS or (char == "." and pos + 1 < size and text[pos + 1] in _DIGITS):
            match = _NUMBER.match(text, pos)
            assert match is not None
            tokens.append(_number(match.group(0), column))
            pos = match.end()
        elif (match := _WORD.match(text, pos)) is not None:
            tokens.append(Token(Kind.WORD, match.group(0), column))
            pos = match.end()
        elif char == "(":
            tokens.append(Token(Kind.LPAREN, char, column))
            pos += 1
        elif char == ")":
            tokens.append(Token(Kind.RPAREN, char, column))
            pos += 1
        elif char == ",":
            tokens.append(Token(Kind.COMMA, char, column))
            pos += 1
        else:
            for op in _OPERATORS:
                if text.startswith(op, pos):
                    tokens.append(Token(Kind.OP, op, column))
                    pos += len(op)
                    break
            else:
                raise FilterError(f"unexpected character {char!r}", column)
    tokens.append(Token(Kind.END, "", size + 1))
    return tokens


def _lex_path(text: str, pos: int, tokens: list[Token]) -> int:
    start = pos
    steps: tuple[str | int, ...] = ()
    while pos < len(text) and text[pos] == "/":
        match = _NAME.match(text, pos + 1)
        if match is None:
            raise FilterError("expected a field name after '/'", pos + 2)
        pos, steps = _lex_indexes(text, match.end(), (*steps, match.group(0)))
    tokens.append(Token(Kind.PATH, text[start:pos], start + 1, steps))
    return pos


def _number(literal: str, column: int) -> Token:
    """A number literal: an integer exactly, anything with a point or an exponent as a double.
    One too long, or past what a double holds (``1e400`` would be infinity), is refused here
    rather than fail as it is converted or compare as infinity."""
    if len(literal) > MAX_NUMBER_DIGITS:
        raise FilterError(f"number longer than {MAX_NUMBER_DIGITS} digits", column)
    if not any(c in literal for c in ".eE"):
        return Token(Kind.NUMBER, literal, column, int(literal))
    value = float(literal)
    if math.isinf(value):
        raise FilterError("number out of range (a double holds at most 1.8e308)", column)
    return Token(Kind.NUMBER, literal, column, value)


def _lex_indexes(text: str, pos: int, steps: tuple[str | int, ...]) -> tuple[int, tuple[str | int, ...]]:
    while True:
        match = _INDEX.match(text, pos)
        if match is None:
            return pos, steps
        digits = match.group(1)
        if len(digits) > MAX_INDEX_DIGITS:  # int() refuses 4,300 digits: no such array exists
            raise FilterError(f"array index longer than {MAX_INDEX_DIGITS} digits", pos + 1)
        steps = (*steps, int(digits))
        pos = match.end()


def _lex_string(text: str, pos: int, tokens: list[Token]) -> int:
    quote, start = text[pos], pos
    pos += 1
    out: list[str] = []
    while pos < len(text):
        char = text[pos]
        if char == "\\" and pos + 1 < len(text):
            nxt = text[pos + 1]
            out.append(_ESCAPES.get(nxt, nxt))
            pos += 2
        elif char == quote:
            tokens.append(Token(Kind.STRING, text[start : pos + 1], start + 1, "".join(out)))
            return pos + 1
        else:
            out.append(char)
            pos += 1
    raise FilterError("unclosed string", start + 1)
