"""Kept orders as range indexes (fanout/ranges.py): the order a window's filter finds through the
candidates of a kept order is the one a pass over the whole topic makes, whatever the indexed
field holds (numbers, numeric and other strings, booleans, NULL, arrays, objects) and whatever
the filter compares it with."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from server.core.fanout.ranges import KeptOrder, indexed_order, plan
from server.core.fanout.windows import WindowOrder, WindowSpec, match_all
from server.core.filters import compile_filter, parse_orderby
from server.core.filters.orderby import OrderBy, sowkey_order
from server.core.records.version import RecordVersion


def literal(value: Any) -> str:
    if type(value) is bool:
        return "TRUE" if value else "FALSE"
    if type(value) is str:
        return f"'{value}'"
    return repr(value)


TEXTS = ["7", " 7", "7 ", "1e3", "+3", ".5", "-2.5", "1e999", "abc", "B", "a", "", "true", "٣"]
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=9),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.sampled_from([-0.0, 0.0, 0.5, -2.5, 1e20, 1e308, 1000.0]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(TEXTS),
    st.text(alphabet="ab7 .e-", max_size=3),
)
values = st.one_of(
    scalars,
    st.lists(scalars, max_size=3),
    st.dictionaries(st.sampled_from(["f", "x"]), scalars, max_size=2),
)
records = st.dictionaries(st.sampled_from(["f", "g"]), values, max_size=2)
literals = st.one_of(
    st.integers(min_value=-3, max_value=9),
    st.sampled_from([-0.0, 0.5, -2.5, 1e20, 1000, 2**63 - 1, True, False]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(TEXTS),
    st.text(alphabet="ab7 .e-", max_size=3),
).map(literal)
OPS = ["=", "<", "<=", ">", ">="]
conjuncts = st.one_of(
    st.tuples(st.sampled_from(OPS), literals).map(lambda pair: f"/f {pair[0]} {pair[1]}"),
    st.tuples(st.sampled_from(OPS), literals).map(lambda pair: f"{pair[1]} {pair[0]} /f"),
    st.tuples(literals, literals).map(lambda pair: f"/f BETWEEN {pair[0]} AND {pair[1]}"),
    st.lists(literals, min_size=1, max_size=3).map(lambda items: f"/f IN ({', '.join(items)})"),
)
OTHERS = ["/g > 2", "/g IS NOT NULL", "/f != 3", "NOT /g = 1", "/g <= 'b'", "/g = 1 OR /f < 2"]
FIRST = ["/f", "/f DESC", "/f, /g", "/f DESC, /g DESC"]
KEPT = ["/g", "/g DESC", ""]
WINDOW = [*FIRST, *KEPT, "/f ASC, /g DESC", "/g, /f DESC"]


def sort_key(order: OrderBy | None) -> Any:
    return order.sort_key if order is not None else sowkey_order


def check(
    datas: list[Any],
    updates: list[tuple[int, Any]],
    kept_texts: list[str],
    conjunct: str,
    others: list[str],
    by: str,
) -> None:
    versions = {f"k{n}": RecordVersion(f"k{n}", data, n, 0.0) for n, data in enumerate(datas)}
    kept: dict[OrderBy | None, WindowOrder] = {}
    for text in kept_texts:
        order = parse_orderby(text) if text else None
        kept[order] = (
            KeptOrder(order, versions.values())
            if order
            else WindowOrder.sorting(sowkey_order, match_all, versions.values())
        )
    seq = len(datas)
    for n, data in updates:  # the kept orders follow changes: arrays come and go
        key = f"k{n}"
        new = None if data is None else RecordVersion(key, data, seq, 0.0)
        seq += 1
        if new is None:
            versions.pop(key, None)
        else:
            versions[key] = new
        for order in kept.values():
            order.apply(key, new)
    gate = compile_filter(" AND ".join([conjunct, *(f"({other})" for other in others)]))
    window = parse_orderby(by) if by else None
    spec = WindowSpec(window, sort_key(window), 0, 10)
    assert plan(kept.values(), [gate]) is not None, "a conjunct on the first field of a kept order"
    indexed = indexed_order(kept, spec, [gate], gate.matches, versions, pays=math.inf)
    assert indexed is not None
    full = WindowOrder.sorting(spec.sort_key, gate.matches, versions.values())
    assert list(indexed.sorted) == list(full.sorted)
    assert indexed.keys == full.keys


EDGE_RECORDS: list[Any] = [
    {"f": 7},
    {"f": "7"},
    {"f": " 7"},
    {"f": "1e3"},
    {"f": 1000},
    {"f": "abc"},
    {"f": ""},
    {"f": True},
    {"f": None},
    {},
    {"f": [0, 8]},
    {"f": ["z", 7]},
    {"f": {"x": 7}},
    {"f": -0.0},
    {"f": 2**63 - 1},
    {"f": [[7]]},
    {"f": [7]},
    {"f": "٣"},
]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(records, max_size=12),
    st.lists(st.tuples(st.integers(0, 14), st.one_of(st.none(), records)), max_size=6),
    st.sampled_from(FIRST),
    st.lists(st.sampled_from([*FIRST, *KEPT]), max_size=3, unique=True),
    conjuncts,
    st.lists(st.sampled_from([*OTHERS, "/g < 5"]), max_size=2),
    st.sampled_from(WINDOW),
)
@example(EDGE_RECORDS, [], "/f", [], "/f = 7", [], "/f")
@example(EDGE_RECORDS, [], "/f DESC", [], "/f <= 7", [], "/g")
@example(EDGE_RECORDS, [], "/f", [], "/f > 'a'", [], "/f DESC")
@example(EDGE_RECORDS, [], "/f DESC", [], "/f < 'a'", [], "/f DESC")
@example(EDGE_RECORDS, [], "/f", [], "/f = '7'", [], "/f")
@example(EDGE_RECORDS, [], "/f", [], "/f >= 1e3", [], "/f")
@example(EDGE_RECORDS, [], "/f, /g", [], "/f BETWEEN 0 AND 'b'", ["/g IS NULL"], "/f, /g")
@example(EDGE_RECORDS, [], "/f", [], "/f IN (TRUE, '1e3', 'abc', '')", [], "/f")
@example(EDGE_RECORDS, [], "/f", [], "/f = 0", [], "/f")
@example(EDGE_RECORDS, [(11, {"f": [1, 7]}), (10, None), (0, {"f": [7, 9]})], "/f", [], "/f = 7", [], "/f")
@example(EDGE_RECORDS, [], "/f DESC", [], "8 > /f", [], "")
@example(EDGE_RECORDS, [], "/f", [], "/f = ''", [], "/f")
@example(EDGE_RECORDS, [], "/f", [], "/f < 3", [], "/f")
def test_an_order_found_through_a_kept_order_is_the_order_of_a_pass(
    datas: list[Any],
    updates: list[tuple[int, Any]],
    first: str,
    more: list[str],
    conjunct: str,
    others: list[str],
    by: str,
) -> None:
    check(datas, updates, list(dict.fromkeys([first, *more])), conjunct, others, by)


def topic(size: int) -> dict[str, RecordVersion]:
    return {f"k{n}": RecordVersion(f"k{n}", {"f": n, "g": n % 7}, n, 0.0) for n in range(size)}


def test_the_fewest_candidates_are_read_and_only_when_they_are_few() -> None:
    versions = topic(1000)
    kept: dict[OrderBy | None, WindowOrder] = {
        parse_orderby(text): KeptOrder(parse_orderby(text), versions.values()) for text in ["/f DESC", "/g"]
    }
    gate = compile_filter("/g = 3 AND /f >= 990 AND /f != 995")
    found = plan(kept.values(), [gate])
    assert found is not None and found.kept is kept[parse_orderby("/f DESC")] and found.size == 10
    window = parse_orderby("/g")
    spec = WindowSpec(window, sort_key(window), 0, 5)
    order = indexed_order(kept, spec, [gate], gate.matches, versions)
    assert order is not None and [entry[-1] for entry in order.sorted] == ["k990", "k997"]
    wide = compile_filter("/f >= 100")
    assert indexed_order(kept, spec, [wide], wide.matches, versions) is None, "most of the topic: a pass"


def test_strings_are_candidates_of_a_numeric_bound_and_arrays_of_any() -> None:
    versions = topic(100)
    versions["s"] = RecordVersion("s", {"f": " 5"}, 200, 0.0)
    versions["a"] = RecordVersion("a", {"f": [90, 5]}, 201, 0.0)
    order = parse_orderby("/f")
    kept: dict[OrderBy | None, WindowOrder] = {order: KeptOrder(order, versions.values())}
    gate = compile_filter("/f = 5")
    found = plan(kept.values(), [gate])
    assert found is not None and found.size == 3  # 5, ' 5' and [90, 5]
    built = indexed_order(kept, WindowSpec(order, order.sort_key, 0, 5), [gate], gate.matches, versions)
    assert built is not None and sorted(built.keys) == ["a", "k5", "s"]


def test_a_text_bound_that_parse_number_refuses_leaves_the_window_to_a_pass() -> None:
    """parse_number raises ValueError for a text the number pattern accepts but int() and float()
    do not ('\\x1c7': \\s matches U+001C, int() does not strip it). The filter compiles (a
    comparison with a text is not parsed until a record is a number, and then the evaluation
    fails and does not match), and a window over a topic without kept orders opens with no rows;
    with a kept order by the field, ``compared`` raised out of the window's build: the
    sow_and_subscribe was refused with 'the server could not process this command'."""
    versions = topic(40)
    order = parse_orderby("/f")
    kept: dict[OrderBy | None, WindowOrder] = {order: KeptOrder(order, versions.values())}
    spec = WindowSpec(order, order.sort_key, 0, 5)
    for text in ["/f < '\x1c7'", "'\x1c7' > /f", "/f BETWEEN 0 AND '\x1f9'"]:
        gate = compile_filter(text)
        built = indexed_order(kept, spec, [gate], gate.matches, versions)
        full = WindowOrder.sorting(spec.sort_key, gate.matches, versions.values())
        assert built is None or list(built.sorted) == list(full.sorted), text
