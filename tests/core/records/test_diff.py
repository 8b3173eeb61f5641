"""Deltas: RFC 6902 patches checked against the jsonpatch library as oracle, and AMPS merge deltas."""

from __future__ import annotations

from typing import Any

import jsonpatch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from server.core.records.diff import make_merge_delta, make_patch
from server.core.records.merge import merge_record

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(max_size=3),
)
keys = st.sampled_from(["a", "b", "c", "x/y", "t~n", ""])
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(keys, children, max_size=4),
    max_leaves=12,
)
records = st.dictionaries(keys, json_values, max_size=6)


@st.composite
def edited(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    """A record and a version of it with a few fields added, removed or changed (nested too)."""
    old = draw(records)
    new = _edit(draw, old)
    return old, new


def _edit(draw: st.DrawFn, value: Any) -> Any:
    if isinstance(value, dict):
        out = {}
        for name, child in value.items():
            action = draw(st.sampled_from(["keep", "keep", "edit", "drop"]))
            if action == "keep":
                out[name] = child
            elif action == "edit":
                out[name] = _edit(draw, child)
        for name in draw(st.lists(keys, max_size=2)):
            out[name] = draw(json_values)
        return out
    if isinstance(value, list) and value and draw(st.booleans()):
        index = draw(st.integers(0, len(value) - 1))
        return [*value[:index], _edit(draw, value[index]), *value[index + 1 :]]
    return draw(json_values)


pairs = st.one_of(st.tuples(records, records), edited())
hypothesis_settings = settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])


@hypothesis_settings
@given(pairs)
def test_patch_applied_by_jsonpatch_gives_the_new_record(pair: tuple[dict[str, Any], dict[str, Any]]) -> None:
    old, new = pair
    patch = make_patch(old, new)
    result = jsonpatch.apply_patch(old, patch)
    assert result == new
    assert [type(v) for v in _leaves(result)] == [type(v) for v in _leaves(new)]


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [leaf for k in sorted(value) for leaf in _leaves(value[k])]
    if isinstance(value, list):
        return [leaf for item in value for leaf in _leaves(item)]
    return [value]


@hypothesis_settings
@given(records)
def test_an_unchanged_record_gives_an_empty_patch(record: dict[str, Any]) -> None:
    assert make_patch(record, dict(record)) == []


def test_patch_names_only_what_changed() -> None:
    old = {"id": 1, "qty": 5, "px": 10.0, "tags": ["a"], "nested": {"x": 1, "y": 2}}
    new = {"id": 1, "qty": 6, "px": 10.0, "tags": ["a"], "nested": {"x": 1, "y": 3}, "note": "n"}
    assert make_patch(old, new) == [
        {"op": "replace", "path": "/qty", "value": 6},
        {"op": "replace", "path": "/nested/y", "value": 3},
        {"op": "add", "path": "/note", "value": "n"},
    ]


def test_patch_treats_one_and_true_and_one_point_zero_as_different() -> None:
    assert make_patch({"a": 1}, {"a": True}) == [{"op": "replace", "path": "/a", "value": True}]
    assert make_patch({"a": 1}, {"a": 1.0}) == [{"op": "replace", "path": "/a", "value": 1.0}]


def test_patch_escapes_pointer_characters() -> None:
    assert make_patch({}, {"a/b~c": 1}) == [{"op": "add", "path": "/a~1b~0c", "value": 1}]


@hypothesis_settings
@given(pairs)
def test_merge_delta_merged_into_the_old_record_gives_the_new_one(
    pair: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    old, new = pair
    delta = make_merge_delta(old, new)
    if delta is None:
        assert _lost_a_field(old, new)
    else:
        assert merge_record(old, delta) == new


def _lost_a_field(old: Any, new: Any) -> bool:
    if not (isinstance(old, dict) and isinstance(new, dict)):
        return False
    return any(name not in new or _lost_a_field(old[name], new[name]) for name in old)


def test_merge_delta_nests_objects_and_sends_arrays_whole() -> None:
    old = {"id": 1, "buyer": {"name": "A", "city": "X"}, "fills": [1, 2]}
    new = {"id": 1, "buyer": {"name": "A", "city": "Y"}, "fills": [1, 2, 3]}
    assert make_merge_delta(old, new) == {"buyer": {"city": "Y"}, "fills": [1, 2, 3]}


def test_merge_delta_is_none_when_a_field_is_lost() -> None:
    assert make_merge_delta({"id": 1, "note": "x"}, {"id": 1}) is None
    assert make_merge_delta({"n": {"a": 1, "b": 2}}, {"n": {"a": 1}}) is None


def test_delta_publish_merge_rules() -> None:
    held = {"id": 1, "a": {"x": 1, "y": 2}, "list": [1, 2], "keep": True}
    merged = merge_record(held, {"id": 1, "a": {"y": 3}, "list": [9]})
    assert merged == {"id": 1, "a": {"x": 1, "y": 3}, "list": [9], "keep": True}
    assert held == {"id": 1, "a": {"x": 1, "y": 2}, "list": [1, 2], "keep": True}, (
        "the stored version is not modified"
    )
