"""Filter functions keep AMPS's argument rules at every size, and numbers that no double holds
are refused at compile time or are NULL when evaluated, never an exception (issue 11, item 8)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from server.core.filters import compile_filter
from server.core.filters.compiler import general_filter
from server.core.filters.functions import EvalContext

from ..harness import Harness, publish

HUGE = "1" + "0" * 400  # an integer literal past the largest double
INFINITE = "'1e400'"  # a string that reads as a number only as infinity

# (expression, value): counts past the length clamp, negative counts are NULL, positions out of
# range are NULL, fractions truncate toward zero, non-finite arguments are NULL.
FUNCTION_CASES: list[tuple[str, Any]] = [
    ("RIGHT('abc', 5)", "abc"),
    ("RIGHT('abc', 3)", "abc"),
    ("RIGHT('abc', 2)", "bc"),
    ("RIGHT('abc', 0)", None),
    ("RIGHT('abc', -1)", None),
    ("RIGHT('abc', 2.9)", "bc"),
    (f"RIGHT('abc', {HUGE})", "abc"),
    ("LEFT('abc', 5)", "abc"),
    ("LEFT('abc', -1)", None),
    (f"LEFT('abc', {HUGE})", "abc"),
    (f"LEFT('abc', {INFINITE})", None),
    ("SUBSTR('abcdef', 2, 100)", "bcdef"),
    ("SUBSTR('abcdef', -2, 100)", "ef"),
    ("SUBSTR('abcdef', -6)", "abcdef"),
    ("SUBSTR('abcdef', -7)", "abcdef"),
    ("SUBSTR('abcdef', -9, 2)", "ab"),
    ("SUBSTR('abcdef', 0)", None),
    ("SUBSTR('abcdef', 7)", None),
    ("SUBSTR('abcdef', 2, -1)", None),
    ("SUBSTR('abcdef', 2.9, 2.9)", "bc"),
    (f"SUBSTR('abcdef', {HUGE})", None),
    (f"SUBSTR('abcdef', -{HUGE})", "abcdef"),
    (f"SUBSTR('abcdef', 3, {HUGE})", "cdef"),
    (f"SUBSTR('abcdef', {INFINITE})", None),
    (f"SUBSTR('abcdef', 1, {INFINITE})", None),
    (f"FLOOR({INFINITE})", None),
    (f"CEILING({INFINITE})", None),
    (f"ABS({INFINITE})", None),
    (f"ROUND({INFINITE})", None),
    (f"ROUND(2.5, {INFINITE})", None),
    (f"ROUND({HUGE}5, -1)", int(HUGE + "5") + 5),  # half away from zero, exactly
    (f"ROUND({HUGE}, -2)", int(HUGE)),
    ("ROUND(-15, -1)", -20),
    ("ROUND(14, -1)", 10),
    ("ROUND(1.7976931348623157e308, -308)", None),
    (f"{HUGE} + 0.5", None),
    (f"{HUGE} * 1.5", None),
    (f"{HUGE} % 0.5", None),
    ("1e308 * 10", None),
    (f"{INFINITE} - 1", None),
    (f"{HUGE} + 1", int(HUGE) + 1),
    (f"LENGTH({'9' * 3000} * {'9' * 3000})", None),
]


@pytest.mark.parametrize(("expression", "value"), FUNCTION_CASES)
def test_functions_and_arithmetic_at_every_size(expression: str, value: Any) -> None:
    for compiled in (compile_filter(expression), general_filter(expression)):
        # ``run`` raises what ``matches`` would swallow: an exception is a defect here.
        assert compiled.run({}, EvalContext()) == value


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("/order = " + "1" * 5000, "bad filter: number longer than 4000 digits at column 10"),
        ("/order = 1e400", "bad filter: number out of range (a double holds at most 1.8e308) at column 10"),
        ("/order > 1" + "0" * 400 + ".5", "bad filter: number out of range"),
        (
            "/order IN (1, 2e999)",
            "bad filter: number out of range (a double holds at most 1.8e308) at column 15",
        ),
        ("/a[" + "1" * 5000 + "] = 1", "bad filter: array index longer than 18 digits at column 3"),
        ("[/a b][" + "1" * 30 + "] = 1", "bad filter: array index longer than 18 digits at column 7"),
    ],
)
def test_numbers_no_double_holds_are_a_bad_filter_with_its_column(
    text: str, reason: str, caplog: pytest.LogCaptureFixture
) -> None:
    h = Harness()
    peer = h.peer()
    peer.send(publish(1))
    for command in (
        {"c": "sow", "t": "orders", "cid": 1, "filter": text},
        {"c": "subscribe", "t": "orders", "cid": 2, "filter": text},
        {"c": "sow_delete", "t": "orders", "cid": 3, "filter": text},
    ):
        [ack] = peer.send(command)
        assert ack["status"] == "failure" and ack["reason"].startswith(reason)
    assert len(h.broker.topics["orders"].records) == 1
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], "no traceback is logged"


def test_an_over_long_index_in_an_order_by_is_refused_as_such(caplog: pytest.LogCaptureFixture) -> None:
    peer = Harness().peer()
    [ack] = peer.send({"c": "sow", "t": "orders", "cid": 1, "orderby": "/a[" + "1" * 100 + "]"})
    assert ack["reason"] == "invalid order by: array index longer than 18 digits at column 3"
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_right_over_the_wire_keeps_the_whole_text() -> None:
    peer = Harness().peer()
    peer.send(publish(1, sym="abc"))
    got = peer.send({"c": "sow", "t": "orders", "cid": 1, "filter": "RIGHT(/sym, 5) = 'abc'"})
    assert [m["data"]["sym"] for m in got if m["c"] == "sow"] == ["abc"]


def test_a_text_the_number_pattern_takes_but_int_refuses_is_text() -> None:
    """The number pattern's \\s takes U+001C to U+001F, which int() and float() do not strip:
    such a text (``'\\x1c7'``) is not a number. It raised ValueError out of compile (the command
    refused as 'the server could not process this command') and out of evaluation."""
    for text in ["/f = '\x1c7'", "/f IN ('\x1d7')"]:
        compile_filter(text)
    # A text that is not a number sorts after every number (docs/protocol.md, Filters).
    assert general_filter("/f < '\x1f7'").evaluate({"f": 5}) is True
    assert general_filter("/f = '\x1c7'").evaluate({"f": 7}) is not True
    assert general_filter("/f = '\x1c7'").evaluate({"f": "\x1c7"}) is True
