"""The history of a topic's changes (sow/history.py), against the plain list of every change: after
any changes, under any bounds, ``since`` any LSN it still holds answers as the whole list would,
whether a change was kept as a ``Past`` or, for a new record, as its version."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from server.core.records.version import RecordVersion
from server.core.sow.history import History, Past, Then, past

# (key, what happens to it: "publish" or a removal, seconds since the last change)
CHANGES = st.lists(
    st.tuples(st.sampled_from("abc"), st.sampled_from(["publish", "deleted", "expired"]), st.integers(0, 3)),
    max_size=40,
)


def noted(changes: list[tuple[str, str, int]], history: History) -> list[Past]:
    """Apply ``changes`` to a SOW of versions, noting each in ``history``; every change as a Past."""
    records: dict[str, RecordVersion] = {}
    every: list[Past] = []
    now = 0.0
    for lsn, (key, what, elapsed) in enumerate(changes, start=1):
        now += elapsed
        old = records.get(key)
        if what == "publish":
            new = records[key] = RecordVersion(key, {"k": key, "lsn": lsn}, lsn, now)
            change: Past | RecordVersion = new if old is None else Past(lsn, key, old, None, now)
        elif old is None:
            continue  # nothing to remove
        else:
            del records[key]
            change = Past(lsn, key, old, what, now)
        history.note(change)
        every.append(past(change))
    return every


def since(every: list[Past], lsn: int) -> dict[str, Then]:
    changed: dict[str, Then] = {}
    for change in every:
        if change.lsn > lsn:
            then = changed.setdefault(change.key, Then(change.old, None, None))
            then.gone = change.gone
            then.removed = change.old if change.gone is not None else None
    return changed


@settings(max_examples=300, deadline=None)
@given(
    changes=CHANGES,
    max_changes=st.integers(1, 50),
    max_age=st.integers(1, 60),
    max_bytes=st.integers(100, 5000),
)
def test_since_any_lsn_it_holds_is_what_the_whole_list_says(
    changes: list[tuple[str, str, int]], max_changes: int, max_age: int, max_bytes: int
) -> None:
    history = History(max_changes, float(max_age), max_bytes)
    every = noted(changes, history)
    assert len(history) <= max_changes
    assert [past(change) for change in history.held()] == [
        change for change in every if change.lsn > history.floor
    ]
    for lsn in range(history.floor, len(changes) + 1):
        assert history.holds(lsn)
        assert history.since(lsn) == since(every, lsn)


def test_a_new_record_costs_the_history_no_tuple_of_its_own() -> None:
    history = History(100, 60.0, 1 << 20)
    version = RecordVersion("a", {"k": "a"}, 7, 1.5)
    history.note(version)
    assert [past(change) for change in history.held()] == [Past(7, "a", None, None, 1.5)]
    assert history.since(6) == {"a": Then(None, None, None)}
    assert history.since(7) == {}
