"""The work one filter evaluation may do, whatever the record and the filter (docs/protocol.md, Filters: "or
under a limit, past which it is not TRUE").

Most of the language is constant work per node. What is not, is charged here before it is done:
regular expressions (program size x text), string functions (characters), comparisons over arrays
(element pairs) and paths read through arrays (elements). The units are calibrated so that one is
about a nanosecond of the worst case on the reference machine (see docs/protocol.md, Limits), and
an evaluation may spend ``EVALUATION_BUDGET`` of them. Spending past it raises ``OverBudget``,
which ends the evaluation: the filter does not match that record.

Evaluation is single-threaded (the core runs on the event loop), so one meter serves every
filter; ``Filter.matches`` refills it before each evaluation.
"""

from __future__ import annotations

EVALUATION_BUDGET = 4_000_000  # ~4 ms of worst-case work per filter evaluation

# Units per unit of work, measured on the reference machine (docs/protocol.md, Limits).
PAIR_UNITS = 400  # one scalar test of an array comparison (any_pair: 290-500 ns)
ELEMENT_UNITS = 400  # one array element a path reads through (read_field: ~430 ns)
REGEX_UNITS = 2  # one program instruction over one byte (RE2's NFA fallback: 1.5-2.2 ns)
CAPTURE_UNITS = 4  # the same when submatches are tracked (REGEXP_REPLACE: ~3.4 ns)
MATCH_UNITS = 5_000  # Python work per REGEXP_REPLACE match (~3-4.4 us)
GROUP_UNITS = 300  # and per capturing group of its pattern (~0.27 us each, up to 100 groups)
NON_ASCII_FACTOR = 6  # str.upper/lower on non-ASCII text: ~6 ns a character instead of ~1


class OverBudget(Exception):
    """The evaluation has done all the work it may; its filter does not match."""


class Meter:
    __slots__ = ("left",)

    def __init__(self) -> None:
        self.left = EVALUATION_BUDGET


METER = Meter()


def refill() -> None:
    METER.left = EVALUATION_BUDGET


def spend(units: int) -> None:
    """Charge ``units`` of work about to be done; raises ``OverBudget`` when they are not left."""
    left = METER.left - units
    METER.left = left
    if left < 0:
        raise OverBudget


def affordable(units: int) -> bool:
    """Whether ``units`` are left, without spending them."""
    return units <= METER.left


def text_units(text: str) -> int:
    """Units to scan or copy ``text`` once (str.isascii is O(1): CPython knows it already)."""
    return len(text) if text.isascii() else NON_ASCII_FACTOR * len(text)


def utf8_size(text: str) -> int:
    """An upper bound of ``text``'s UTF-8 length, in O(1): what RE2 scans."""
    return len(text) if text.isascii() else 4 * len(text)
