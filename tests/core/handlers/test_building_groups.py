"""An aggregation's first pass read in slices before its command runs (aggregate/building.py):
whatever other sockets publish and delete between its slices, its groups are those of an
aggregation made when its turn came, and its live changes afterwards are the same changes."""

from __future__ import annotations

import random
from typing import Any

import pytest

from server.core.aggregate.building import GroupBuild
from server.core.session import held

from .test_preparing import RECORDS, change, seeded, side_by_side

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
    # A window over a group a record: the aggregation goes live when its build ends, and the
    # window's order of its groups is read in slices too.
    {
        "c": "sow_and_delta_subscribe",
        "t": "t",
        "grouping": ["/id"],
        "projection": ["/id", "/s", "MAX(/lvl) AS /top"],
        "orderby": "/top DESC, /s",
        "top_n": 12,
        "o": "oof",
        "cid": "q",
    },
    # And a sorted snapshot of them, of a live view.
    {
        "c": "sow_and_subscribe",
        "t": "t",
        "filter": "/lvl < 4",
        "grouping": ["/id"],
        "projection": ["/id", "/lvl"],
        "orderby": "/lvl, /id DESC",
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
    command = QUERIES[query]
    two = side_by_side(command, rng, 600)
    sliced, sliced_reader, sliced_writer = two.sliced, two.sliced_reader, two.sliced_writer
    whole_reader, whole_writer, between, fed = two.whole_reader, two.whole_writer, two.between, two.fed
    answered, expected = sliced_reader.take(), whole_reader.send(command)
    assert groups_sent(answered) and groups_sent(answered) == groups_sent(expected)
    if "orderby" in command:  # a window of groups, or a sorted snapshot: in its order, as the whole one
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


@pytest.mark.parametrize("command", ["sow_and_subscribe", "sow"])
def test_a_group_of_thousands_whose_records_changed_out_of_order_is_built_as_one_made_whole(
    command: str,
) -> None:
    """One group of every record, after 3,000 changes: its members are put in the order of their
    last change in slices (groups.py, _Reorder), so its plain fields are the last changed
    record's, and stay so as records change and leave."""
    rng = random.Random(command)
    prelude = [[change(rng, by_key=True) for _ in range(500)] for _ in range(6)]
    query = {"c": command, "t": "t", "projection": ["COUNT(*) AS /n", "/s", "/lvl", "MIN(/s) AS /lo"]}
    two = side_by_side({**query, "cid": "q"}, rng, 600, prelude=prelude)
    answered, expected = two.sliced_reader.take(), two.whole_reader.send({**query, "cid": "q"})
    assert groups_sent(answered) and unversioned(answered) == unversioned(expected)
    if command == "sow":
        return
    for frame in [*two.between[two.fed : two.fed + 20], [change(rng) for _ in range(200)]]:
        two.sliced_writer.send(*frame)
        two.whole_writer.send(*frame)
        assert unversioned(two.sliced_reader.take()) == unversioned(two.whole_reader.take())


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
    assert not topic.derived and topic.prepared == []


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
    assert not topic.derived and topic.prepared == []


def test_a_view_whose_socket_leaves_while_its_groups_are_ordered_leaves_no_aggregation() -> None:
    h, reader, writer = seeded()
    command = dict(QUERIES[4])
    prepared = h.engine.prepare(reader.session, command)
    assert prepared is not None
    topic = h.broker.topics["t"]
    while not any(type(derived).__name__ == "GroupIndex" for derived in topic.derived.values()):
        assert not prepared.advance(), "the build ended with no aggregation live"
    writer.send({"c": "publish", "t": "t", "data": {"id": 1, "lvl": 5, "s": "s1"}})  # fed, live
    assert not prepared.advance(), "its groups' order is read in slices too"
    prepared.release()  # its socket gone: the command never runs
    assert not topic.derived and topic.prepared == []


def test_records_deleted_while_it_reads_are_not_counted_against_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Refused early only when it surely would be: the groups it read, less those the changes
    since could take away (4,000 deletes during the pass leave 1,333 of 5,333 groups)."""
    monkeypatch.setattr(held, "SERVER_GROUPS", 5000)
    h, reader, writer = seeded()
    command = dict(QUERIES[1])  # a group a record of /lvl > 2: 5,333
    prepared = h.engine.prepare(reader.session, command)
    assert prepared is not None
    prepared.advance()
    writer.send({"c": "sow_delete", "t": "t", "filter": "/id < 4000"})
    while not prepared.advance():
        pass
    h.engine.execute(reader.session, command, prepared)
    h.broker.settle()
    prepared.release()
    acks = [m for m in reader.take() if m.get("c") == "ack"]
    assert acks and all(m.get("status") != "failure" for m in acks), acks
    assert held.groups(list(h.broker.topics.values())) == sum(1 for n in range(4000, RECORDS) if n % 9 > 2)


def test_builds_at_once_count_what_each_has_found(monkeypatch: pytest.MonkeyPatch) -> None:
    """Four builds at once must not hold four times the server's bound: each counts the groups so
    far of those that began before it (the first goes first)."""
    monkeypatch.setattr(held, "SERVER_GROUPS", 8000)
    h, first, _ = seeded()
    second = h.peer()
    one = dict(QUERIES[1])
    other = {**one, "projection": ["/id", "MIN(/lvl) AS /low"]}  # a table of its own
    a, b = h.engine.prepare(first.session, one), h.engine.prepare(second.session, other)
    assert a is not None and b is not None
    done_a = done_b = False
    while not (done_a and done_b):
        done_a = done_a or a.advance()
        done_b = done_b or b.advance()
    builds = [d for d in h.broker.topics["t"].derived.values() if isinstance(d, GroupBuild)]
    refused = [build for build in builds if build.refusal is not None]
    assert len(builds) == 2 and refused == [builds[1]], "both held their groups, or both were refused"
    assert "the server's aggregations keep" in str(refused[0].refusal.detail)
    a.release()
    b.release()
