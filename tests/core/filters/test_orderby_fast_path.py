"""The fast path of a one-field ``orderby`` (filters/orderby.py) makes the same sort key as the
general definition, whatever the field holds."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from server.core.filters import parse_orderby
from server.core.filters.orderby import _key

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=4),
)
values = st.one_of(
    scalars, st.lists(scalars, max_size=3), st.dictionaries(st.text(max_size=2), scalars, max_size=2)
)
records = st.one_of(st.dictionaries(st.sampled_from(["f", "g"]), values, max_size=2), values)


@dataclass
class Item:
    key: str
    data: Any


EDGES = [{"f": ""}, {"f": "a"}, {"f": -1.5}, {"f": 2**63 - 1}, {"f": True}, {"f": [2]}, {"f": None}, {}, [1]]


@given(st.lists(records, max_size=8), st.sampled_from(["/f", "/f DESC", "/f ASC", "/f desc"]))
@example(EDGES, "/f")
@example(EDGES, "/f DESC")
def test_one_field_orders_make_the_general_key(datas: list[Any], text: str) -> None:
    order = parse_orderby(text)
    items = [Item(f"k{n}", data) for n, data in enumerate(datas)]
    assert [order.sort_key(item) for item in items] == [
        _key(order.terms, item.data, item.key) for item in items
    ]


def kind_of(sort_key: Any) -> str:
    """Which key function an order took: its name (compiled, a closure is an object whose class
    is named after the function)."""
    return getattr(sort_key, "__name__", None) or type(sort_key).__name__.split("__")[0]


def test_the_fast_path_is_taken_for_one_top_level_field_only() -> None:
    assert kind_of(parse_orderby("/f").sort_key) == "one_field"
    for text in ["/f/g", "/f[0]", "/f, /g"]:
        assert kind_of(parse_orderby(text).sort_key) == "general"
