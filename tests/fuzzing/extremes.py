"""The hostile model's catalogue: every command type with its fields at their extremes (at each
documented limit and just past it), drawn from a seed into volleys that one attacking socket sends
(tests/integration/hostile_model.py runs them against a real server).

A volley is one command shape repeated in a frame, and sent in a few frames, by a socket that reads
what it is sent or never does. What a field may be is written once, in ``EXTREMES``; which fields
each command reads is ``frames.RELEVANT_FIELDS``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from server.core.aggregate.parse import MAX_GROUPING_FIELDS, MAX_PROJECTED_FIELDS
from server.core.limits import (
    MAX_ID_LENGTH,
    MAX_INTEGER,
    MAX_NAME_LENGTH,
    MAX_OPTIONS_LENGTH,
    MAX_ORDERBY_TERMS,
    MAX_PATH_LENGTH,
    MAX_PATHS,
    MAX_PROJECTION_BYTES,
    MAX_TX_COMMANDS,
    MAX_WINDOW_ROWS,
)

from .frames import RELEVANT_FIELDS

FRAME_BYTES = 900_000  # what one frame may carry (the server's max_message_bytes is 1 MiB)


def _paths(count: int, length: int = 12) -> str:
    return ",".join("/" + f"f{n}".ljust(length - 1, "x") for n in range(count))


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = {"a": value}
    return value


def _ored_comparisons() -> str:
    """As many ``/qty = N`` ORed as fit in 16 KB (the length limit is 16,384)."""
    return " OR ".join(f"/qty = {n}" for n in range(1200))[:16_000].rsplit(" OR", 1)[0]


def _filters() -> list[tuple[str, str]]:
    return [
        ("match all", "/id >= 0"),
        (
            "16 KB of comparisons",
            " OR ".join(f"/qty = {n}" for n in range(1200))[:16_000].rsplit(" OR", 1)[0],
        ),
        ("400 regular expressions", " OR ".join(["/s LIKE '(a|b)*c'"] * 400)),
        ("98 levels", "(" * 98 + "/qty > 1" + ")" * 98),
        ("pathological regex", "/s LIKE '(.*a){20}'"),
        ("1 KB regex", "/s LIKE '" + "a?" * 500 + "'"),
        ("text growth", "LENGTH(" + "REPLACE(" * 3 + "/s" + ", 'a', 'aaaaaaaa')" * 3 + ") > 0"),
        ("over length", "/qty = 1 OR " * 1500 + "/qty = 2"),
        ("indexed", "/id = 7"),
    ]


def _data(rng: random.Random) -> list[tuple[str, Any]]:
    return [
        ("wide record", {"id": rng.randrange(1000), **{f"f{n}": n for n in range(5000)}}),
        ("deep record", {"id": rng.randrange(1000), "deep": _nested(120)}),
        ("big record", {"id": rng.randrange(1000), "s": "ab" * 200_000}),
        ("small record", {"id": rng.randrange(20_000), "qty": rng.randrange(97), "s": "ab" * 20}),
        ("not an object", [1, 2, 3]),
    ]


def extremes(field: str, rng: random.Random, topics: tuple[str, str]) -> list[tuple[str, Any]]:
    """Labelled extreme values of ``field`` (``topics``: a big SOW topic and a durable one)."""
    big, durable = topics
    if field == "t":
        return [("big", big), ("durable", durable), ("plain", "p" * MAX_NAME_LENGTH), ("long", "p" * 5000)]
    if field == "filter":
        return _filters()
    if field == "orderby":
        long_path = "/" + "o" * (MAX_PATH_LENGTH - 1)
        return [
            ("16 terms", ",".join(f"{long_path[:200]}{n} DESC" for n in range(MAX_ORDERBY_TERMS))),
            ("2,000 terms", _paths(2000, 3)),
            ("by qty", "/qty DESC, /id"),
            # A new order each time: every window of it a whole new sort of the topic (a pass
            # read in slices: core/handlers/preparing.py), and one more for the socket's budget.
            ("an order of its own", f"/qty, /x{rng.randrange(10**9)}"),
        ]
    if field == "o":
        return [
            ("64-path select", f"select=[-/,{_paths(MAX_PATHS - 1)}]"),
            ("long conflation", "conflation=60s,conflation_key=[/id],oof"),
            ("window options", "oof,positions,no_empties,timestamp"),
            ("4 KB options", "oof," + "timestamp," * ((MAX_OPTIONS_LENGTH - 4) // 10)),
            ("resume", "resume,oof"),
        ]
    if field in ("top_n", "skip_n", "bs"):
        return [
            ("one", 1),
            ("limit", MAX_WINDOW_ROWS),
            ("past limit", MAX_WINDOW_ROWS + 1),
            ("huge", MAX_INTEGER),
        ]
    if field == "bm":
        return [
            ("from the start", "0"),
            ("now", "now"),
            ("old time", "2000-01-01T00:00:00Z"),
            ("long", "9" * 64),
        ]
    if field in ("sub_id", "query_id"):
        return [("long id", "i" * MAX_ID_LENGTH), ("big id", MAX_INTEGER), ("random", rng.randrange(50))]
    if field == "data":
        return _data(rng)
    if field == "e":
        return [("a millisecond", 0.001), ("forever", 0), ("a century", 3.2e9)]
    if field == "s":
        return [("huge", MAX_INTEGER), ("counting", rng.randrange(1, 10**6))]
    if field == "sow_keys":
        return [("10,000 keys", [f"{n:020x}" for n in range(10_000)]), ("one", ["0" * 20])]
    if field in ("client_name", "user_id", "pw"):
        return [("at limit", "n" * MAX_NAME_LENGTH), ("past limit", "n" * 100_000)]
    if field == "hidden":
        return [("hide", True), ("show", False)]
    if field == "cmds":
        return _transactions(rng, big)
    if field == "grouping":
        return [
            ("a group a record", ["/id"]),
            ("a few groups", ["/qty"]),
            ("16 fields", [f"/g{n}" for n in range(MAX_GROUPING_FIELDS)]),
            ("past limit", [f"/g{n}" for n in range(MAX_GROUPING_FIELDS + 1)]),
        ]
    if field == "projection":
        # An aggregation of its own each time: a first pass over the topic (read in slices:
        # core/aggregate/building.py), and a table of groups for the server's budget.
        return [
            (
                "an aggregation of its own",
                ["/qty", f"SUM(/qty) AS /s{rng.randrange(10**9)}", "COUNT(*) AS /n"],
            ),
            ("64 maxima", [f"MAX(/qty * {n} + /id) AS /m{n}" for n in range(MAX_PROJECTED_FIELDS)]),
            ("past limit", [f"MIN(/qty) AS /m{n}" for n in range(MAX_PROJECTED_FIELDS + 1)]),
            ("64 KB", ["/qty", "COUNT(*) AS /" + "n" * (MAX_PROJECTION_BYTES - 40)]),
        ]
    raise KeyError(field)


def _transactions(rng: random.Random, big: str) -> list[tuple[str, Any]]:
    row = {"c": "publish", "t": big, "data": {"id": 1, "qty": 1, "s": "ab" * 20}}
    many = [{**row, "data": {**row["data"], "id": rng.randrange(20_000)}} for _ in range(MAX_TX_COMMANDS)]
    deletes = [{"c": "sow_delete", "t": big, "filter": f"/qty = {n % 97}"} for n in range(600)]
    deltas = [{"c": "delta_publish", "t": big, "data": {"id": n % 50, "qty": n}} for n in range(5000)]
    # Admitted, its deletes' records found by a pass in slices before it runs (preparing_tx.py).
    sliced = [
        {"c": "sow_delete", "t": big, "filter": f"/qty = {rng.randrange(97)} AND /s != 'x'"},
        row,
        {"c": "sow_delete", "t": big, "filter": "/id < 0 OR /qty = 1"},
    ]
    return [
        ("10,000 publishes", many),
        ("600 deletes by filter", deletes),
        ("5,000 deltas", deltas),
        ("deletes by filter read in slices", sliced),
    ]


@dataclass(frozen=True)
class Volley:
    """One attack: ``command`` repeated ``per_frame`` times a frame, in ``frames`` frames, by a
    socket that reads what it is sent (``reads``) or never does."""

    label: str
    command: dict[str, Any]
    per_frame: int
    frames: int
    reads: bool


def volleys(seed: int, rounds: int, topics: tuple[str, str]) -> list[Volley]:
    """``rounds`` rounds of volleys drawn from ``seed``. In each round every command type takes
    every value of every field it reads at least once: its volleys turn through each field's
    values (from a random place), each volley setting a random subset of its fields."""
    rng = random.Random(seed)
    out: list[Volley] = []
    for _ in range(rounds):
        for name in sorted(RELEVANT_FIELDS):
            fields = [field for field in RELEVANT_FIELDS[name] if field != "t"]
            values = {field: extremes(field, rng, topics) for field in RELEVANT_FIELDS[name]}
            start = {field: rng.randrange(len(values[field])) for field in values}
            for turn in range(max((len(v) for v in values.values()), default=1)):
                chosen = set(rng.sample(fields, k=rng.randint(min(1, len(fields)), len(fields))))
                out.append(_volley(rng, name, values, start, turn, chosen))
    return out


def _volley(
    rng: random.Random,
    name: str,
    values: dict[str, list[tuple[str, Any]]],
    start: dict[str, int],
    turn: int,
    chosen: set[str],
) -> Volley:
    command: dict[str, Any] = {"c": name}
    labels = [name]
    for field, options in values.items():
        if field != "t" and field not in chosen:
            continue
        label, value = options[(start[field] + turn) % len(options)]
        command[field] = value
        labels.append(f"{field}: {label}")
    if name in ("publish", "delta_publish") and "data" not in command:
        command["data"] = {"id": rng.randrange(20_000), "qty": 1}
    per_frame = max(1, min(2000, FRAME_BYTES // max(1, len(repr(command)))))
    if name in ("sow", "sow_and_subscribe", "sow_and_delta_subscribe", "sow_delete", "tx"):
        per_frame = min(per_frame, rng.choice([1, 5, 50]))  # costly each: a few
    return Volley(", ".join(labels), command, per_frame, rng.randint(1, 3), rng.random() < 0.5)
