"""Select lists, SowKeys and the option parser."""

from __future__ import annotations

import pytest

from server.core.errors import BAD_MESSAGE, INVALID_OPTIONS, CommandError
from server.core.protocol.options import parse_options, split_options
from server.core.records.keys import KeySpec
from server.core.records.select import parse_select

RECORD = {"id": 7, "qty": 5, "px": 1.5, "buyer": {"id": "B1", "name": "Ann", "city": "Oslo"}}


@pytest.mark.parametrize(
    ("directives", "expected"),
    [
        ("-/,+/id,+/qty", {"id": 7, "qty": 5}),
        ("-/px", {"id": 7, "qty": 5, "buyer": {"id": "B1", "name": "Ann", "city": "Oslo"}}),
        ("-/buyer,+/buyer/name", {"id": 7, "qty": 5, "px": 1.5, "buyer": {"name": "Ann"}}),
        ("-/,+/buyer,-/buyer/city", {"buyer": {"id": "B1", "name": "Ann"}}),
        ("+/id", RECORD),
        ("-/,+/missing", {}),
    ],
)
def test_select_most_specific_directive_wins(directives: str, expected: dict[str, object]) -> None:
    assert parse_select(directives).apply(RECORD) == expected


def test_select_never_modifies_the_record() -> None:
    before = repr(RECORD)
    parse_select("-/buyer/name").apply(RECORD)
    assert repr(RECORD) == before


@pytest.mark.parametrize("bad", ["", "id", "+id", "+/a[0]", "+/a,,-/b"])
def test_bad_select_lists_are_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        parse_select(bad)


def test_sow_key_is_stable_and_type_aware() -> None:
    spec = KeySpec.parse(["/id"])
    assert spec.sow_key({"id": 1}) == spec.sow_key({"id": 1.0, "other": "x"})
    assert spec.sow_key({"id": 1}) != spec.sow_key({"id": "1"})
    assert spec.sow_key({"id": True}) != spec.sow_key({"id": 1})
    # The same value gives the same key in every process: it is a hash of the value, not of memory.
    assert spec.sow_key({"id": "abc"}) == KeySpec.parse(["/id"]).sow_key({"id": "abc"})


def test_composite_and_nested_keys() -> None:
    spec = KeySpec.parse(["/buyer/id", "/id"])
    assert spec.sow_key(RECORD) == spec.sow_key({**RECORD, "qty": 99})
    assert spec.sow_key(RECORD) != spec.sow_key({**RECORD, "id": 8})


@pytest.mark.parametrize("record", [{}, {"id": None}, {"id": [1]}, {"id": {"a": 1}}, [1], "x"])
def test_missing_or_non_scalar_key_is_a_bad_message(record: object) -> None:
    with pytest.raises(CommandError) as error:
        KeySpec.parse(["/id"]).sow_key(record)
    assert error.value.code == BAD_MESSAGE


def test_options_split_ignores_commas_inside_brackets() -> None:
    assert split_options("oof, select=[-/,+/id] ,conflation_key=[/a,/b]") == [
        "oof",
        "select=[-/,+/id]",
        "conflation_key=[/a,/b]",
    ]


def test_options_parse_every_documented_option() -> None:
    options = parse_options(
        "oof,no_empties,no_sowkey,send_keys,select=[-/,+/id],conflation=250ms,conflation_key=[/id],"
        "delta=merge,top_n=5,skip_n=2,timestamp,replace"
    )
    assert options.oof and options.no_empties and options.no_sowkey and options.send_keys
    assert options.select is not None and options.select.apply({"id": 1, "x": 2}) == {"id": 1}
    assert options.conflation_s == 0.25
    assert options.conflation_key == (("id",),)
    assert options.delta_merge and options.top_n == 5 and options.skip_n == 2
    assert options.timestamp and options.replace


@pytest.mark.parametrize(
    "bad", ["bogus", "oof=1", "delta=json", "top_n=x", "select=/id", "conflation=fast", "send_keys=maybe"]
)
def test_bad_options_are_invalid_options(bad: str) -> None:
    with pytest.raises(CommandError) as error:
        parse_options(bad)
    assert error.value.code == INVALID_OPTIONS
