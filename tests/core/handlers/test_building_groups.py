"""An aggregation's first pass read in slices before its command runs (aggregate/building.py):
whatever other sockets publish and delete between its slices, its groups are those of an
aggregation made when its turn came, and its live changes afterwards are the same changes."""

from __future__ import annotations

import random
from typing import Any

import pytest

from server.core.aggregate.building import GroupBuild
from server.core.session import held

from .test_preparing import RECORDS, change, run, seeded

# Grouped into a few groups and into one group a record (the stage that writes the groups takes
# slices too), with MIN and MAX (settled a slice at a time), through a filter or none.
QUERIES = [
    {
        "c": "sow_and_subscribe",
        "t": "t",
        "grouping": ["/s"],
        "projection": ["/s", "COUNT(/id) AS /n", "SUM(/lvl) AS /lvl", "MIN(/id) AS /lo", "MAX(/id) AS /hi"],
        "cid": "q",
    },
    {
        "c": "sow_and_delta_subscribe",
        "t": "t",
        "filter": "/lvl > 2",
        "grouping": ["/id"],
        "projection": ["/id", "/s", "MAX(/lvl) AS /top"],
        "o": "oof",
        "cid": "q",
    },
    {"c": "sow", "t": "t", "grouping": ["/lvl"], "projection": ["/lvl", "AVG(/id) AS /mean"], "cid": "q"},
    {
        "c": "sow_and_subscribe",
        "t": "t",
        "grouping": ["/s"],
        "projection": ["/s", "COUNT(/id) AS /n"],
        "orderby": "/n DESC",
        "top_n": 5,
        "cid": "q",
    },
]


def groups_sent(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The group records a snapshot sent, by key."""
    return {m["k"]: m["data"] for m in messages if m.get("c") == "sow"}


def unversioned(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` without their bookmarks: a group's version is the change that last touched it,
    and a record deleted while the pass ran touched its group (the whole pass after it cannot know)."""
    return [{name: value for name, value in m.items() if name not in ("bm", "s")} for m in messages]


@pytest.mark.parametrize("query", range(len(QUERIES)))
def test_an_aggregation_built_in_slices_holds_the_groups_of_one_made_when_its_turn_came(query: int) -> None:
    rng = random.Random(query)
    between = [[change(rng) for _ in range(rng.randrange(1, 4))] for _ in range(600)]
    sliced, sliced_reader, sliced_writer = seeded()
    _, whole_reader, whole_writer = seeded()
    command = QUERIES[query]
    fed = run(sliced.engine, sliced_reader, command, between, sliced_writer)
    assert fed >= 3, f"only {fed} slices"
    assert fed < len(between), "more slices than frames: the last stages saw no writes"
    for frame in between[:fed]:
        whole_writer.send(*frame)
    answered, expected = sliced_reader.take(), whole_reader.send(command)
    assert groups_sent(answered) and groups_sent(answered) == groups_sent(expected)
    if "top_n" in command:  # a window of groups: in its order, as the whole one
        assert unversioned(answered) == unversioned(expected)
    topic = sliced.broker.topics["t"]
    assert all(type(derived).__name__ == "GroupIndex" for derived in topic.derived.values()), "left fed"
    if command["c"] == "sow":
        assert not topic.derived, "a one-shot sow's groups are dropped"
        return
    later = [*between[fed : fed + 20], [change(rng) for _ in range(200)]]
    for frame in later:  # and the live view's changes after it
        sliced_writer.send(*frame)
        whole_writer.send(*frame)
        assert unversioned(sliced_reader.take()) == unversioned(whole_reader.take())


def test_a_view_that_shares_an_aggregation_or_a_small_one_reads_no_pass_in_slices() -> None:
    h, reader, other = seeded()
    view = dict(QUERIES[0])
    assert h.engine.prepare(reader.session, view) is not None
    other.send(view)  # made whole: now there is one to share
    assert h.engine.prepare(reader.session, view) is None
    assert len(h.broker.topics["t"].records) == RECORDS
    small = {**view, "t": "small"}
    assert h.engine.prepare(reader.session, small) is None


def test_a_build_whose_socket_leaves_before_it_ends_is_no_longer_fed() -> None:
    h, reader, writer = seeded()
    prepared = h.engine.prepare(reader.session, dict(QUERIES[1]))
    assert prepared is not None
    topic = h.broker.topics["t"]
    prepared.advance()
    assert len(topic.derived) == 1, "fed while it reads"
    writer.send({"c": "publish", "t": "t", "data": {"id": 1, "lvl": 5, "s": "s1"}})
    prepared.release()
    assert not topic.derived and topic.prepared is None


def test_a_build_past_the_servers_groups_writes_none_and_its_command_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(held, "SERVER_GROUPS", RECORDS // 4)
    h, reader, _ = seeded()
    command = dict(QUERIES[1])  # a group a record
    prepared = h.engine.prepare(reader.session, command)
    assert prepared is not None
    while not prepared.advance():
        pass
    topic = h.broker.topics["t"]
    build = topic.derived and next(iter(topic.derived.values()))
    assert isinstance(build, GroupBuild) and build.refusal is not None and not build.sow.records
    # Refused as soon as its groups were too many: it read no further.
    assert len(build.index.table.groups) < RECORDS // 4 + 1000  # (of 5,333)
    h.engine.execute(reader.session, command, prepared)
    h.broker.settle()
    acks = [m for m in reader.take() if m.get("c") == "ack" and m.get("status") == "failure"]
    assert acks and "the server's aggregations keep 0 groups" in acks[0]["reason"], acks
    assert not topic.derived and topic.prepared is None
