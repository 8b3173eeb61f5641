"""How a cluster node tells that Redis lost the shared log (core/log/loss.py)."""

from __future__ import annotations

from server.core.broker.changelog import lsn_of
from server.core.log.loss import LIVE, SEEDING, Marker, error_line, marker_loss, parse_marker, stream_loss

KEY = "{c}:incarnation"
MINE = Marker(LIVE, "abc")


def test_a_marker_reads_back_as_written_and_anything_else_is_none() -> None:
    assert parse_marker(MINE.encode().encode()) == MINE
    assert parse_marker("seeding x") == Marker(SEEDING, "x")
    assert Marker(SEEDING, "x").live() == Marker(LIVE, "x")
    for raw in (None, b"", b"live", b"live ", b"other x"):
        assert parse_marker(raw) is None


def test_the_marker_redis_holds_is_checked_against_the_one_the_node_loaded_under() -> None:
    assert marker_loss(MINE, MINE, KEY) is None
    assert marker_loss(None, None, KEY) is None  # not loaded yet: nothing to compare
    gone = marker_loss(MINE, None, KEY)
    assert gone is not None and "is gone" in gone.what and KEY in gone.what
    other = marker_loss(MINE, Marker(LIVE, "def"), KEY)
    assert other is not None and "def" in other.what and "abc" in other.what
    seeding = marker_loss(MINE, Marker(SEEDING, "def"), KEY)
    assert seeding is not None and "re-seeding" in seeding.what


def test_the_entry_applied_last_must_be_in_the_stream_or_trimmed_away() -> None:
    at = lsn_of("1000-5")
    assert stream_loss("orders", 0, False, None, None) is None  # nothing applied
    assert stream_loss("orders", at, True, None, at) is None
    assert stream_loss("orders", at, False, at + 1, None) is None  # a trim removed it
    behind = stream_loss("orders", at, False, None, lsn_of("900-0"))
    assert behind is not None and behind.what == (
        "the stream of topic 'orders' ends at 900-0 but this node applied it up to 1000-5"
    )
    gone = stream_loss("orders", at, False, at, None)  # a cut at the entry keeps it: not trimmed
    assert gone is not None and "is empty or gone" in gone.what


def test_the_error_line_says_what_why_what_next_and_how_to_avoid_it() -> None:
    loss = stream_loss("orders", lsn_of("1000-5"), False, None, None)
    assert loss is not None
    line = error_line("node-1", loss)
    assert line.startswith("Redis lost the cluster's shared log: the stream of topic 'orders'")
    for words in ("without appendonly", "old dump", "node-1 refuses changes", "re-seed", "appendonly yes"):
        assert words in line
