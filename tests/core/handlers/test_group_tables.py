"""Group tables shared by aggregated views (docs/protocol.md, Aggregated views): views of one
grouping keep their own fields over one table; a member a clock gate changed its mind about; the
latest record after a first pass; how deep a group record may be."""

from __future__ import annotations

from server.core.aggregate.view import aggregations_of

from ..harness import Harness, acks
from .test_aggregating import GROUPS, _data, _feed, _pub


def test_projections_of_one_grouping_share_one_table_and_each_keeps_its_fields() -> None:
    h = Harness()
    publisher, one, two = h.peer(), h.peer(), h.peer()
    _feed(publisher)
    one.send({"c": "sow_and_subscribe", "t": "orders", "sub_id": "g", "o": GROUPS})
    totals = "grouping=[/desk],projection=[/desk,MAX(/qty) AS /top,SUM(/qty) AS /qty]"
    two.send({"c": "sow_and_subscribe", "t": "orders", "sub_id": "g", "o": totals})
    topic = h.broker.topics["orders"]
    assert len(aggregations_of(topic)) == 2 and len(topic.derived) == 1  # one table
    publisher.send(_pub(1, desk="a", qty=50))
    assert _data(one.take()) == {"a": {"desk": "a", "qty": 52, "n": 2}}
    assert _data(two.take()) == {"a": {"desk": "a", "top": 50, "qty": 52}}
    one.send({"c": "unsubscribe", "sub_id": "g"})
    assert len(aggregations_of(topic)) == 1 and len(topic.derived) == 1
    publisher.send(_pub(2, desk="a", qty=1))
    assert _data(two.take()) == {"a": {"desk": "a", "top": 50, "qty": 51}}
    two.send({"c": "unsubscribe", "sub_id": "g"})
    assert topic.derived == {}


def test_a_projection_joins_a_table_whose_clock_gate_changed_its_mind_about_a_member() -> None:
    # The table holds the records that passed the gate when they changed; a later projection
    # reads its new inputs from those records, not from the ones that pass the gate now.
    h = Harness()
    publisher, one, two = h.peer(), h.peer(), h.peer()
    deadline = h.clock.now + 60
    publisher.send(_pub(1, desk="a", qty=1, until=deadline), _pub(2, desk="a", qty=2, until=deadline + 120))
    view = {"c": "sow_and_subscribe", "t": "orders", "sub_id": "g", "filter": "/until > UNIX_TIMESTAMP()"}
    one.send({**view, "grouping": ["/desk"], "projection": ["/desk", "SUM(/qty) AS /qty"]})
    h.clock.now += 90  # the first record no longer passes the gate, though nothing changed
    got = two.send({**view, "grouping": ["/desk"], "projection": ["/desk", "MIN(/qty) AS /low"]})
    assert _data(got) == {"a": {"desk": "a", "low": 1}}  # the group the table holds
    assert len(aggregations_of(h.broker.topics["orders"])) == 2
    publisher.send(_pub(1, desk="a", qty=5, until=deadline))  # changed: now out of both
    assert _data(one.take()) == {"a": {"desk": "a", "qty": 2}}
    assert _data(two.take()) == {"a": {"desk": "a", "low": 2}}


def test_a_plain_field_is_the_latest_changed_records_in_a_new_view_as_in_a_live_one() -> None:
    # docs/protocol.md: a plain field takes its value from the group's most recently changed
    # record. A live view follows the changes; a view made later (its table filled by one pass
    # over the SOW, which keeps records in the order they were first stored) must agree with it.
    h = Harness()
    publisher, live, later = h.peer(), h.peer(), h.peer()
    view = {"c": "sow_and_subscribe", "t": "orders", "grouping": ["/desk"], "projection": ["/desk", "/sym"]}
    publisher.send(_pub(1, desk="a", sym="x"), _pub(2, desk="a", sym="y"))
    live.send({**view, "sub_id": "g"})
    publisher.send(_pub(1, desk="a", sym="x", qty=2))  # order 1 is now the latest changed
    assert _data(live.take()) == {"a": {"desk": "a", "sym": "x"}}
    one_shot = later.send({"c": "sow", "t": "orders", "grouping": ["/desk"], "projection": ["/desk", "/sym"]})
    assert _data(one_shot) == {"a": {"desk": "a", "sym": "x"}}
    other = later.send({**view, "sub_id": "h", "filter": "/order > 0"})  # another table, filled by a pass
    assert _data(other) == {"a": {"desk": "a", "sym": "x"}}


def _deep_publish(order: int, levels: int) -> str:
    """A publish of a record whose /deep is ``levels`` deep (within the record limit)."""
    deep = '{"n":' * (levels - 1) + '{"n":1' + "}" * levels
    return f'{{"c":"publish","t":"orders","data":{{"order":{order},"desk":"a","qty":1,"deep":{deep}}}}}'


DEEP_OUTPUT = "/" + "/".join(f"x{i}" for i in range(63))  # a group record deeper than can be written


def test_a_view_whose_groups_cannot_be_written_leaves_no_group_table_fed() -> None:
    # Its groups are written into its topic of groups after it joined its table: a failure
    # there must not leave the table it made registered with the source and fed every change.
    h = Harness()
    publisher, viewer = h.peer(), h.peer()
    h.engine.receive(publisher.session, _deep_publish(1, 195))
    view = {"c": "sow_and_subscribe", "t": "orders", "sub_id": "g", "cid": 1, "grouping": ["/desk"]}
    got = viewer.send({**view, "projection": ["/desk", f"/deep AS {DEEP_OUTPUT}"]})
    assert acks(got) == [("processed", "failure")]
    (ack,) = [m for m in got if m["c"] == "ack"]
    assert "AS names a path more than 16 levels deep" in ack["reason"], ack
    assert h.broker.topics["orders"].derived == {}


def test_the_deepest_group_record_a_projection_can_make_is_written() -> None:
    # The deepest record there may be, its deepest field put as deep as a projection may put it.
    h = Harness()
    publisher, viewer = h.peer(), h.peer()
    view = {"c": "sow_and_delta_subscribe", "t": "orders", "sub_id": "g", "grouping": ["/desk"]}
    output = "/" + "/".join(f"x{i}" for i in range(16))
    viewer.send({**view, "projection": ["/desk", f"/deep AS {output}", "COUNT(*) AS /n"]})
    h.engine.receive(publisher.session, _deep_publish(1, 199))
    publisher.take()
    (message,) = [m for m in viewer.take() if m["c"] == "p"]
    assert message["data"]["n"] == 1
    publisher.send(_pub(2, desk="a", qty=1))
    (patch,) = [m for m in viewer.take() if m["c"] == "p"]
    # Order 2, the latest, has no /deep: the group's copy of it goes.
    assert patch["patch"] == [{"op": "remove", "path": "/x0"}, {"op": "replace", "path": "/n", "value": 2}]


def test_a_group_record_too_deep_to_write_does_not_fail_the_publish_nor_starve_other_views() -> None:
    # A projection that could make one is refused (it used to be written, and raise out of the
    # engine on the publish, losing the changes of the other views of its table).
    h = Harness()
    publisher, deep, counter = h.peer(), h.peer(), h.peer()
    view = {"c": "sow_and_subscribe", "t": "orders", "sub_id": "g", "cid": 1, "grouping": ["/desk"]}
    refused = deep.send({**view, "projection": ["/desk", f"/deep AS {DEEP_OUTPUT}"]})
    assert acks(refused) == [("processed", "failure")]
    counter.send({**view, "projection": ["/desk", "COUNT(*) AS /n"]})
    h.engine.receive(publisher.session, _deep_publish(1, 195))
    publisher.take()
    assert _data(counter.take()) == {"a": {"desk": "a", "n": 1}}
    publisher.send(_pub(2, desk="a", qty=1))
    assert _data(counter.take()) == {"a": {"desk": "a", "n": 2}}
