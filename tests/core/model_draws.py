"""What the engine model's rules may draw (test_engine_model.py): the sizes of its sockets and
the changes a publisher makes, as Hypothesis strategies over the model's keys and filters."""

from __future__ import annotations

from hypothesis import strategies as st

from .engine_model import DELETE_FILTERS, KEYS

QUEUE_SIZES = (4, 6, 10, 20)
MAX_SUBS = 4  # live subscriptions per client
INTERVAL = 1.0  # conflation=1s, and hidden_interval
COMMANDS = ("subscribe", "sow_and_subscribe", "delta_subscribe", "sow_and_delta_subscribe")


topic_slot = st.integers(0, 1)
key = st.sampled_from(KEYS)
digit = st.integers(0, 9)
small = st.integers(0, 2)
publish_op = st.tuples(
    st.just("publish"),
    topic_slot,
    st.fixed_dictionaries(
        {"id": key, "x": digit, "lvl": digit, "n": st.fixed_dictionaries({"a": small, "b": small})},
        optional={"s": st.sampled_from(["s1", "s2"])},
    ),
    st.sampled_from([None, None, 0, 1, 2, 5]),  # e: absent, never, seconds
)
delta_op = st.tuples(
    st.just("delta_publish"),
    topic_slot,
    st.fixed_dictionaries(
        {"id": key},
        optional={
            "x": digit,
            "lvl": digit,
            "n": st.fixed_dictionaries({}, optional={"a": small, "b": small}),
            "s": st.sampled_from(["s1", "s2"]),
            "v": st.just(True),  # most deltas carry a new version; some change no v
        },
    ),
    st.sampled_from([0, 0, 1, 2, 5]),
)
delete_key_op = st.tuples(st.just("delete_key"), topic_slot, key)
delete_filter_op = st.tuples(st.just("delete_filter"), topic_slot, st.sampled_from(DELETE_FILTERS))
write_op = st.one_of(publish_op, publish_op, delta_op, delta_op, delete_key_op, delete_filter_op)
