"""The structure of a projection's text (protocol/lists.py): one reading of quotes, escapes and
parentheses for splitting at commas, finding ``AS`` and matching a call's parentheses."""

from __future__ import annotations

from server.core.protocol.lists import at_top_level, closing, split_items

# A string holding a comma, a parenthesis, " AS " and an escaped quote: none of them structure.
TRICKY = "COUNT_DISTINCT(CONCAT(/a, 'x\\', ) AS /y')) AS /n"


def test_commas_in_calls_and_strings_do_not_split() -> None:
    assert split_items(f"/desk, {TRICKY}, SUM(/qty) AS /qty") == ["/desk", TRICKY, "SUM(/qty) AS /qty"]


def test_as_inside_a_string_is_not_at_the_top_level() -> None:
    inner = TRICKY.index(" AS /y")
    outer = TRICKY.rindex(" AS /n")
    assert not at_top_level(TRICKY, inner)
    assert at_top_level(TRICKY, outer)


def test_the_closing_parenthesis_skips_those_in_strings() -> None:
    assert closing(TRICKY, TRICKY.index("(")) == TRICKY.rindex(")")
    assert closing("SUM(/a", 3) == -1
