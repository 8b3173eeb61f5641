"""Integers keep their exact value or are refused, never altered (issue 11, item 7).

orjson reads an integer outside -2**63 .. 2**64-1 as a float, so these frames are written by hand.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from .harness import Harness, Peer, publish

BIG = 2**64  # 18446744073709551616: the first integer orjson would read as a float
MAX_INTEGER, MIN_INTEGER = 2**64 - 1, -(2**63)  # what orjson reads and writes as integers


def send_raw(peer: Peer, frame: str) -> list[dict[str, Any]]:
    peer.engine.receive(peer.session, frame.encode())
    return peer.take()


def failures(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in messages if m["c"] == "ack" and m["status"] == "failure"]


def stored(h: Harness) -> list[Any]:
    return sorted(v.data["order"] for v in h.broker.topics["orders"].records.values())


def test_two_orders_past_64_bits_are_refused_not_merged_into_one() -> None:
    h = Harness()
    peer = h.peer()
    for n, cid in ((BIG, 1), (BIG + 1, 2)):
        acks = send_raw(peer, f'{{"c":"publish","t":"orders","cid":{cid},"data":{{"order":{n},"v":1}}}}')
        assert [(a["cid"], a["status"]) for a in acks] == [(cid, "failure")]
        assert acks[0]["reason"].startswith(f"bad message: integer {n} is out of range")
    assert stored(h) == []


@pytest.mark.parametrize("number", [MAX_INTEGER, MIN_INTEGER, 2**63, -(2**53) - 1, 10**19 + 7])
def test_integers_orjson_holds_are_keys_and_values_exactly(number: int) -> None:
    h = Harness()
    peer = h.peer()
    neighbour = number - 1 if number > 0 else number + 1
    send_raw(peer, f'{{"c":"publish","t":"orders","data":{{"order":{number},"n":{number}}}}}')
    send_raw(peer, f'{{"c":"publish","t":"orders","data":{{"order":{neighbour}}}}}')
    assert stored(h) == sorted([number, neighbour])
    snapshot = [m for m in peer.send({"c": "sow", "t": "orders", "cid": 1}) if m["c"] == "sow"]
    assert any(m["data"] == {"order": number, "n": number} for m in snapshot)


def test_a_big_integer_anywhere_in_a_command_refuses_that_command_only() -> None:
    h = Harness()
    peer = h.peer()
    frame = (
        '[{"c":"publish","t":"orders","cid":"a","s":1,"data":{"order":1}},'
        f'{{"c":"publish","t":"orders","cid":"b","data":{{"order":2,"deep":[{{"x":-{BIG}}}]}}}},'
        '{"c":"publish","t":"orders","cid":"c","data":{"order":3,"id":"123456789012345678901234"}}]'
    )
    acks = [(m["cid"], m["status"]) for m in send_raw(peer, frame) if m["c"] == "ack"]
    assert acks == [("a", "success"), ("b", "failure"), ("c", "success")]
    assert stored(h) == [1, 3]


def test_a_refused_command_echoes_only_what_can_be_written() -> None:
    h = Harness()
    peer = h.peer()
    refused = send_raw(peer, f'{{"c":"publish","t":"orders","cid":{BIG},"s":{BIG},"data":{{"order":1}}}}')
    assert refused == [{"c": "ack", "a": "processed", "status": "failure", "reason": refused[0]["reason"]}]
    sequenced = send_raw(peer, f'{{"c":"publish","t":"orders","cid":7,"s":3,"data":{{"order":{BIG}}}}}')
    assert [(m["cid"], m["s"], m["status"]) for m in sequenced] == [(7, 3, "failure")]


def test_the_other_commands_and_the_plain_topics_refuse_them_too() -> None:
    h = Harness()
    peer = h.peer()
    for command in (
        f'{{"c":"publish","t":"plain","cid":1,"data":{BIG}}}',
        f'{{"c":"sow_delete","t":"orders","cid":1,"data":{{"order":{BIG}}}}}',
        f'{{"c":"sow","t":"orders","cid":1,"top_n":{BIG}}}',
    ):
        assert [m["reason"].split(":")[0] for m in failures(send_raw(peer, command))] == ["bad message"]


def test_one_and_one_point_zero_are_still_one_key_at_every_size() -> None:
    h = Harness()
    peer = h.peer()
    for whole in (1, 2**63, 2**64 - 1 - (2**64 - 1) % 2048):  # exactly representable as doubles
        send_raw(peer, f'{{"c":"publish","t":"orders","data":{{"order":{whole},"v":"int"}}}}')
        send_raw(peer, f'{{"c":"publish","t":"orders","data":{{"order":{float(whole)!r},"v":"float"}}}}')
    assert [v.data["v"] for v in h.broker.topics["orders"].records.values()] == ["float"] * 3


def test_long_digit_runs_in_strings_and_fractions_are_read_as_they_are() -> None:
    h = Harness()
    peer = h.peer()
    fraction = "0.12345678901234567890123"
    send_raw(peer, f'{{"c":"publish","t":"orders","data":{{"order":1,"f":{fraction},"s":"-{"9" * 30}"}}}}')
    [version] = h.broker.topics["orders"].records.values()
    assert version.data == {"order": 1, "f": orjson.loads(fraction), "s": "-" + "9" * 30}


def test_nineteen_digit_integers_are_ordinary_integers() -> None:
    h = Harness()
    peer = h.peer()
    peer.send(*[publish(n, ts=1_700_000_000_000_000_000 + n) for n in range(100)])  # nanoseconds
    assert len(stored(h)) == 100
    assert all(type(v.data["ts"]) is int for v in h.broker.topics["orders"].records.values())


@pytest.mark.parametrize("number", ["1e400", "-1e400", "9" * 400])
def test_a_number_past_the_largest_double_refuses_its_command_not_the_frame(number: str) -> None:
    """orjson does not read a number past the largest double at all, so such a number failed the
    whole frame as not JSON; now only the command holding it is refused."""
    h = Harness()
    peer = h.peer()
    frame = (
        f'[{{"c":"publish","t":"orders","cid":1,"data":{{"order":1,"v":{number}}}}},'
        '{"c":"publish","t":"orders","cid":2,"data":{"order":2,"v":1}}]'
    )
    acks = send_raw(peer, frame)
    assert [(a["cid"], a["status"]) for a in acks] == [(1, "failure"), (2, "success")]
    assert acks[0]["reason"].startswith("bad message: ")
    assert stored(h) == [2]


def test_a_frame_past_the_largest_double_that_is_not_json_anyway_is_not_json() -> None:
    h = Harness()
    acks = send_raw(h.peer(), '[{"c":"publish","cid":1,"data":{"v":1e400}}, NaN')
    assert [(a.get("cid"), a["reason"].split(" (")[0]) for a in acks] == [(None, "bad message: not JSON")]


@pytest.mark.parametrize(
    "text",
    [r'"\ud800"', r'"x\udfff"', "NaN", "Infinity", "-Infinity"],
    ids=["lone-high-surrogate", "lone-low-surrogate", "nan", "infinity", "minus-infinity"],
)
@pytest.mark.parametrize("field", ["label", "cid", "t", "sub_id", "name"])
def test_what_orjson_refuses_is_refused_even_beside_a_number_past_the_largest_double(
    text: str, field: str
) -> None:
    """A number past the largest double makes the frame read a second time, by the standard
    library, which admits lone surrogates and NaN: orjson would not have read them, nor could it
    write them back (a label so named made /status.json answer 500 for everyone). The frame is
    not JSON, as orjson says, wherever the text stands, before or after the number."""
    h = Harness()
    peer = h.peer()
    frames = [
        f'[{{"c":"publish","t":"orders","data":{{"order":1,"v":1e400}}}},{{"c":"logon","{field}":{text}}}]',
        f'[{{"c":"logon","{field}":{text}}},{{"c":"publish","t":"orders","data":{{"order":1,"v":1e400}}}}]',
        f'{{"c":"publish","t":"orders","data":{{"order":1,"v":1e400,"w":[{text}]}}}}',
    ]
    if text.startswith('"'):  # as a name
        frames.append(f'{{"c":"publish","t":"orders","data":{{"order":1,"v":1e400,{text}:1}}}}')
    for frame in frames:
        acks = send_raw(peer, frame)
        assert [(a.get("cid"), a["reason"].split(" (")[0]) for a in acks] == [(None, "bad message: not JSON")]
        orjson.dumps(acks)  # what the server says of it can be written
    assert stored(h) == []
