"""Keys that cannot collide (records/canonical.py): two tuples of key values are one SowKey, or one
group, exactly when their values are one (1 and 1.0 are one number), whatever the values hold:
NUL, the encoding's own escape, text that looks like a tag, any unicode."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given
from hypothesis import strategies as st

from server.core.aggregate.group_keys import group_key
from server.core.records.canonical import joined
from server.core.records.keys import KeySpec

from ..harness import Harness

# Text drawn to meet the encoding where it could break: its separator and escape, tags, unicode.
TRICKY = st.sampled_from(["\x00", "\x01", "\x02", "s:", "e:", "n:1", "z:", "group", "é", "\U0001f600"])
TEXTS = st.lists(st.one_of(TRICKY, st.text(max_size=3)), max_size=4).map("".join)
NUMBERS = st.one_of(
    st.integers(-(2**63), 2**64 - 1),
    st.sampled_from([0, 1, -1, 2**63]).flatmap(lambda n: st.sampled_from([n, float(n)])),
    st.floats(allow_nan=False, allow_infinity=False),
)
SCALARS = st.one_of(TEXTS, NUMBERS, st.booleans())
GROUP_VALUES = st.one_of(
    SCALARS, st.none(), st.lists(SCALARS, max_size=2), st.dictionaries(TEXTS, SCALARS, max_size=2)
)

TWO_FIELDS = KeySpec.parse(["/desk", "/sym"])
THREE_FIELDS = KeySpec.parse(["/a", "/b/c", "/d"])


def same(value: Any) -> Any:
    """What a key value is, for equality: numbers by their value (1 == 1.0), the rest by type too
    ("1" and 1 and true are three)."""
    if type(value) in (int, float):
        return ("n", value)
    if value is None:
        return ("z",)
    if type(value) in (dict, list):
        return ("j", orjson.dumps(value, option=orjson.OPT_SORT_KEYS))
    return (type(value).__name__, value)


@given(st.tuples(SCALARS, SCALARS), st.tuples(SCALARS, SCALARS))
def test_two_field_keys_are_one_sow_key_only_when_their_values_are_one(
    first: tuple[Any, Any], second: tuple[Any, Any]
) -> None:
    def key(values: tuple[Any, Any]) -> str:
        return TWO_FIELDS.sow_key({"desk": values[0], "sym": values[1]})

    assert (key(first) == key(second)) == ([same(v) for v in first] == [same(v) for v in second])


# What a join is made of: the separator, the escape, and the tags that follow a separator.
GLUE = st.lists(st.sampled_from(["\x00", "\x01", "s:", "e:"]), min_size=1, max_size=3).map("".join)


@given(TEXTS, GLUE, TEXTS, TEXTS)
def test_text_moved_across_the_join_makes_another_key(head: str, glue: str, middle: str, tail: str) -> None:
    """How a join is broken: the same characters, cut between the fields at another place."""
    one, other = (head + glue + middle, tail), (head, middle + glue + tail)
    keys = [TWO_FIELDS.sow_key({"desk": desk, "sym": sym}) for desk, sym in (one, other)]
    assert (keys[0] == keys[1]) == (one == other)
    assert (group_key(one) == group_key(other)) == (one == other)


@given(st.tuples(SCALARS, SCALARS, SCALARS), st.tuples(SCALARS, SCALARS, SCALARS))
def test_keys_of_nested_fields_are_one_sow_key_only_when_their_values_are_one(
    first: tuple[Any, Any, Any], second: tuple[Any, Any, Any]
) -> None:
    def key(values: tuple[Any, Any, Any]) -> str:
        return THREE_FIELDS.sow_key({"a": values[0], "b": {"c": values[1]}, "d": values[2]})

    assert (key(first) == key(second)) == ([same(v) for v in first] == [same(v) for v in second])


@given(
    st.lists(GROUP_VALUES, min_size=1, max_size=3).flatmap(
        lambda first: st.tuples(
            st.just(first), st.lists(GROUP_VALUES, min_size=len(first), max_size=len(first))
        )
    )
)
def test_groups_are_one_only_when_their_grouping_values_are_one(pair: tuple[list[Any], list[Any]]) -> None:
    first, second = pair
    assert (group_key(tuple(first)) == group_key(tuple(second))) == (
        [same(v) for v in first] == [same(v) for v in second]
    )


@given(st.lists(TEXTS.map(lambda text: "s:" + text), min_size=2, max_size=4))
def test_values_without_a_nul_keep_the_text_they_always_had(texts: list[str]) -> None:
    """A durable topic's stored keys stay the keys its publishers compute: the encoding changed
    only for values that hold the separator (which were the ones that collided)."""
    if not any("\x00" in text for text in texts):
        assert joined(texts) == "\x00".join(texts)


def test_the_two_records_that_were_one_are_two() -> None:
    h = Harness(topics=[{"name": "books", "key": ["/desk", "/sym"]}])
    peer = h.peer()
    first, second = {"desk": "x\u0000s:y", "sym": "z"}, {"desk": "x", "sym": "y\u0000s:z"}
    acks = peer.send(
        {"c": "publish", "t": "books", "cid": 1, "data": first},
        {"c": "publish", "t": "books", "cid": 2, "data": second},
    )
    assert [(m["cid"], m["status"]) for m in acks if m["c"] == "ack"] == [(1, "success"), (2, "success")]
    records = [m["data"] for m in peer.send({"c": "sow", "t": "books", "cid": 3}) if m["c"] == "sow"]
    assert sorted(records, key=orjson.dumps) == sorted([first, second], key=orjson.dumps)
    # A key without a NUL is the one it was before the encoding changed (a stored key still reads).
    assert TWO_FIELDS.sow_key({"desk": "desk-1", "sym": "MSFT"}) == "e2ea26d7e8e172571c47"
