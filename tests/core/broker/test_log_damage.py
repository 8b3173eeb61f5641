"""Reading a damaged log segment (txlog.scan_segment) and LSNs that never repeat (broker/bookmarks.py)."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from server.core.broker.bookmarks import (
    EPOCH_SHIFT,
    EpochHistory,
    Lsns,
    add_lost,
    check_bookmark,
    parse_bookmark,
)
from server.core.errors import CommandError
from server.core.sow.txlog import Damage, entries_in, frame, scan_segment

from ..harness import Harness, entries_of

TOPICS = [{"name": "orders", "key": ["/id"], "durable": True}]


def group_commit(lsn: int) -> bytes:
    """One log frame holding one entry, like the log writer's smallest group commit."""
    return frame(
        [[lsn, "p", "orders", f"k{lsn}", {"id": lsn, "pad": "x" * (lsn % 7)}, None, None, 0.0, None]]
    )


def segment(count: int) -> tuple[bytes, list[int]]:
    """``count`` frames (LSNs 1..count) and where each one starts (plus the end)."""
    frames = [group_commit(lsn) for lsn in range(1, count + 1)]
    starts = [0]
    for one in frames:
        starts.append(starts[-1] + len(one))
    return b"".join(frames), starts


def lsns_in(buffer: bytes, last: bool = True) -> list[int]:
    return [entry[0] for entry in entries_in(scan_segment(buffer, last).payloads)]


def flip(buffer: bytes, *positions: int) -> bytes:
    damaged = bytearray(buffer)
    for position in positions:
        damaged[position] ^= 0x5A
    return bytes(damaged)


# -- the scanner ----------------------------------------------------------------------------


def test_an_intact_segment_reads_whole() -> None:
    data, _ = segment(20)
    found = scan_segment(data)
    assert lsns_in(data) == list(range(1, 21))
    assert (found.damaged, found.torn_at) == ([], None)


def test_damage_in_the_middle_loses_that_frame_only() -> None:
    data, starts = segment(20)
    damaged = flip(data, starts[7] + 12, starts[7] + 13)  # two flipped bytes in frame 8's payload
    found = scan_segment(damaged)
    assert lsns_in(damaged) == [n for n in range(1, 21) if n != 8]
    assert found.damaged == [Damage(starts[7], starts[8])]
    assert found.torn_at is None


@pytest.mark.parametrize(
    "length",
    [0, 3, 1 << 31, (1 << 24) + 17],
    ids=["zero", "shorter", "far-past-the-end", "longer-within-the-file"],
)
def test_a_damaged_length_field_is_not_trusted(length: int) -> None:
    data, starts = segment(30)
    damaged = bytearray(data)
    damaged[starts[9] : starts[9] + 4] = struct.pack(">I", length)
    found = scan_segment(bytes(damaged))
    assert lsns_in(bytes(damaged)) == [n for n in range(1, 31) if n != 10]
    assert found.damaged == [Damage(starts[9], starts[10])]


def test_a_length_field_that_swallows_the_frames_after_it_loses_only_its_frame() -> None:
    data, starts = segment(30)
    damaged = bytearray(data)
    # The length now reaches into frame 20: the frames in between must not be skipped with it.
    damaged[starts[9] : starts[9] + 4] = struct.pack(">I", starts[20] - starts[9])
    assert lsns_in(bytes(damaged)) == [n for n in range(1, 31) if n != 10]


def test_several_damaged_frames_adjacent_or_apart() -> None:
    data, starts = segment(40)
    damaged = flip(data, starts[2] + 9, starts[10] + 2, starts[11] + 10, starts[30] + 1)
    found = scan_segment(damaged)
    assert lsns_in(damaged) == [n for n in range(1, 41) if n not in (3, 11, 12, 31)]
    assert found.damaged == [
        Damage(starts[2], starts[3]),
        Damage(starts[10], starts[12]),
        Damage(starts[30], starts[31]),
    ]


def test_damage_at_the_very_start() -> None:
    data, starts = segment(5)
    damaged = flip(data, 0, 1, 2, 3)
    assert lsns_in(damaged) == [2, 3, 4, 5]
    assert scan_segment(damaged).damaged == [Damage(0, starts[1])]


@pytest.mark.parametrize("cut", [3, 8, 20], ids=["in-the-header", "after-the-header", "in-the-payload"])
def test_a_torn_last_frame_is_torn_not_damage(cut: int) -> None:
    data, starts = segment(10)
    torn = data[: starts[9] + cut]
    found = scan_segment(torn)
    assert lsns_in(torn) == list(range(1, 10))
    assert (found.damaged, found.torn_at) == ([], starts[9])


def test_zeros_after_the_last_frame_are_a_torn_write() -> None:
    data, starts = segment(4)
    found = scan_segment(data + bytes(4096))
    assert (found.damaged, found.torn_at) == ([], starts[4])


def test_a_torn_tail_in_a_segment_that_is_not_the_last_is_damage() -> None:
    data, starts = segment(10)
    found = scan_segment(data[: starts[9] + 20], last=False)
    assert (found.damaged, found.torn_at) == ([Damage(starts[9], starts[9] + 20)], None)


def test_a_complete_last_frame_with_a_bad_checksum_is_damage_not_a_torn_write() -> None:
    data, starts = segment(10)
    damaged = flip(data, len(data) - 3)
    found = scan_segment(damaged)
    assert (found.damaged, found.torn_at) == ([Damage(starts[9], len(data))], None)


def test_a_complete_last_frame_whose_length_grew_is_damage_not_a_torn_write() -> None:
    data, starts = segment(10)
    damaged = bytearray(data)
    damaged[starts[9] : starts[9] + 4] = struct.pack(">I", len(data))  # announces more than follows
    found = scan_segment(bytes(damaged))
    assert (found.damaged, found.torn_at) == ([Damage(starts[9], len(data))], None)


def test_a_grown_length_before_a_torn_write_is_still_damage() -> None:
    data, starts = segment(10)
    torn = group_commit(11)[:15]  # the write a crash cut short, after the damaged frame
    damaged = bytearray(data + torn)
    damaged[starts[9] : starts[9] + 4] = struct.pack(">I", 4096)  # runs past the end of the file
    found = scan_segment(bytes(damaged))
    assert (found.damaged, found.torn_at) == ([Damage(starts[9], len(damaged))], None)
    assert lsns_in(bytes(damaged)) == list(range(1, 10))


@settings(max_examples=150, deadline=None)
@given(
    count=st.integers(1, 40),
    hits=st.dictionaries(st.floats(0, 1, exclude_max=True), st.integers(1, 255), min_size=1, max_size=6),
)
def test_every_frame_without_damaged_bytes_is_recovered(count: int, hits: dict[float, int]) -> None:
    data, starts = segment(count)
    damaged = bytearray(data)
    masks = {int(where * len(data)): mask for where, mask in hits.items()}
    for position, mask in masks.items():
        damaged[position] ^= mask
    hit = {n for n in range(1, count + 1) if any(starts[n - 1] <= p < starts[n] for p in masks)}
    found = scan_segment(bytes(damaged), last=False)
    assert lsns_in(bytes(damaged), last=False) == [n for n in range(1, count + 1) if n not in hit]
    assert sum(d.end - d.start for d in found.damaged) == sum(starts[n] - starts[n - 1] for n in hit)


# -- LSN epochs and lost ranges -------------------------------------------------------------


def base(epoch: int) -> int:
    return epoch << EPOCH_SHIFT


def test_lost_ranges_merge_when_they_touch() -> None:
    assert add_lost([], 10, 20) == [(10, 20)]
    assert add_lost([(10, 20)], 30, 40) == [(10, 20), (30, 40)]
    assert add_lost([(10, 20)], 19, 40) == [(10, 40)]  # 11..19 and 20..39 leave no LSN between
    assert add_lost([(10, 20)], 20, 40) == [(10, 20), (20, 40)]  # LSN 20 is in the log
    assert add_lost([(30, 40)], 5, 8) == [(5, 8), (30, 40)]


def test_every_start_claims_an_epoch_above_everything_before_it() -> None:
    fresh = EpochHistory().restart(0, [])
    assert fresh == EpochHistory(0 + 1, [(0, base(1))])
    old_log = EpochHistory().restart(10_000, [])  # a log written before epochs: epoch 0
    assert old_log.epoch == 1 and old_log.lost == [(10_000, base(1))]
    crashed = old_log.restart(10_000, [])  # nothing reached the disk in epoch 1
    assert crashed.epoch == 2 and crashed.lost == [(10_000, base(2))]
    wrote = crashed.restart(base(2) + 50, [(base(2) + 10, base(2) + 20)])
    assert wrote.epoch == 3
    assert wrote.lost == [(10_000, base(2)), (base(2) + 10, base(2) + 20), (base(2) + 50, base(3))]
    assert EpochHistory.decode(wrote.encode()) == wrote


def test_a_damaged_epoch_history_is_refused() -> None:
    for data in (b"", b"{", b'{"format": 1}', b'{"format": 2, "epoch": 1, "lost": []}'):
        with pytest.raises(ValueError):
            EpochHistory.decode(data)


def test_bookmarks_from_the_future_or_lost_are_not_in_the_log() -> None:
    lsns = Lsns()
    history = EpochHistory().restart(10_000, [(500, 600)])
    lsns.begin_epoch(history.epoch, history.lost, lambda: 99)
    issued = [lsns.next() for _ in range(3)]
    assert issued == [base(1) + 1, base(1) + 2, base(1) + 3]
    for fine in (1, 500, 600, 10_000, base(1), base(1) + 3):
        assert lsns.not_in_log(fine) is None, fine
    assert "not issued" in str(lsns.not_in_log(base(1) + 4))
    assert "not issued" in str(lsns.not_in_log(base(7)))
    for lost in (501, 599, 10_001, 15_400, base(1) - 1):
        assert "lost" in str(lsns.not_in_log(lost)), lost


def test_an_epoch_used_up_claims_the_next_before_handing_out_its_first_lsn() -> None:
    claimed: list[int] = []

    def claim() -> int:
        claimed.append(5)
        return 5

    lsns = Lsns()
    lsns.begin_epoch(4, [], claim)
    lsns.last = base(5) - 2
    assert [lsns.next(), lsns.next()] == [base(5) - 1, base(5) + 1]
    assert claimed == [5]


def test_check_bookmark_refuses_with_bad_message_and_lets_the_other_forms_pass() -> None:
    lsns = Lsns()
    lsns.begin_epoch(1, [(10_000, base(1))], lambda: 2)
    for form in ("0", "now", "2026-11-21T01:00:00Z", "9999", str(base(1))):
        check_bookmark(parse_bookmark(form), lsns.not_in_log)
    for form in ("15400", str(base(1) + 1), str(1 << 70)):
        with pytest.raises(CommandError, match=r"^bad message: bookmark \d+ is not in the log"):
            check_bookmark(parse_bookmark(form), lsns.not_in_log)


def test_non_ascii_digits_are_not_a_bookmark() -> None:
    with pytest.raises(CommandError, match=r"^bad message"):
        parse_bookmark("١٢")


def test_a_subscription_from_a_bookmark_the_server_never_issued_is_refused() -> None:
    h = Harness(topics=TOPICS)
    publisher, watcher = h.peer(), h.peer()
    publisher.send({"c": "publish", "t": "orders", "data": {"id": 1}})
    last = entries_of(h)[-1].lsn
    future: list[Any] = watcher.send({"c": "subscribe", "t": "orders", "cid": 1, "bm": str(last + 1)})
    assert [m["status"] for m in future] == ["failure"]
    assert future[0]["reason"].startswith(f"bad message: bookmark {last + 1} is not in the log")
    assert "1" not in watcher.session.subscriptions
    fine = watcher.send({"c": "subscribe", "t": "orders", "cid": 2, "bm": str(last)})
    assert [m["status"] for m in fine] == ["success"]
