"""Grouping and projection: what is accepted, and every limit refused with ``invalid options``."""

from __future__ import annotations

import pytest

from server.core.aggregate.parse import parse_aggregation
from server.core.errors import CommandError
from server.core.protocol.lists import split_items


def test_split_items_keeps_calls_and_strings_whole() -> None:
    text = "/desk, SUM(COALESCE(/a, 0)) AS /s, CONCAT(/x, ',') AS /c"
    assert split_items(text) == ["/desk", "SUM(COALESCE(/a, 0)) AS /s", "CONCAT(/x, ',') AS /c"]


def test_grouping_alone_projects_its_fields_and_a_count() -> None:
    spec = parse_aggregation(["/desk", "/sym"], None)
    assert [f.output for f in spec.fields] == [("desk",), ("sym",), ("count",)]
    assert spec.fields[2].function == "COUNT"


def test_aggregates_and_plain_fields() -> None:
    spec = parse_aggregation(["/desk"], ["/desk", "sum(/qty * /px) as /n", "/sym", "/px * 2 AS /d"])
    assert [f.function for f in spec.fields] == [None, "SUM", None, None]
    assert spec.fields[0].group_index == 0
    assert spec.fields[2].path == ("sym",)
    assert spec.fields[3].path is None


@pytest.mark.parametrize(
    ("grouping", "projection", "says"),
    [
        (["/g"], ["SUM(MAX(/a)) AS /x"], "aggregate of an aggregate"),
        (["/g"], ["SUM(/a)"], "needs AS"),
        (["/g"], ["/a * 2"], "needs AS"),
        (["/g"], ["AVG(*) AS /x"], "only COUNT"),
        (["/g"], ["SUM(/a) + 1 AS /x"], "whole expression"),
        (["/g"], ["SUM(/a AS /x"], "projection"),
        (["/g"], ["/g", "/g"], "twice"),
        ([f"/g{i}" for i in range(17)], None, "16 grouping"),
        (["/g"], [f"SUM(/a) AS /x{i}" for i in range(65)], "64 projected"),
        (["/g"], ["SUM(/" + "a" * 70_000 + ") AS /x"], "64"),
        (["g"], None, "grouping"),
    ],
)
def test_refused(grouping: list[str], projection: list[str] | None, says: str) -> None:
    with pytest.raises(CommandError) as refused:
        parse_aggregation(grouping, projection)
    assert refused.value.reason.startswith("invalid options")
    assert says in refused.value.reason


def test_equal_aggregations_have_equal_texts() -> None:
    assert (
        parse_aggregation(["/a"], None).text == parse_aggregation(["/a"], ["/a", "COUNT(*) AS /count"]).text
    )
