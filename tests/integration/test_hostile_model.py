"""The hostile model's short form (issue 27): every command type with its fields at their extremes,
sent by one attacking socket at a time against a real server; no volley may hold an innocent
socket's round trip past ``LATENCY_S`` or grow the server past ``GROWTH_MB``
(tests/integration/hostile_model.py; ``bench/fuzz.py --target hostile`` runs it longer)."""

from __future__ import annotations

import os

import pytest

from tests.fuzzing.extremes import volleys

from .conftest import StartServer
from .hostile_arena import GROWTH_MB, LATENCY_S, arena, publish_all
from .hostile_model import BIG_RECORDS, BIG_TOPIC, DURABLE_TOPIC, big_rows, run_model

# It measures a big server's time or memory: it runs in the quiet pass, apart from the first (scripts/test).
pytestmark = pytest.mark.quiet

SEED = int(os.environ.get("HOSTILE_SEED", "27"))


@pytest.mark.slow
def test_no_extreme_command_hurts_another_socket(start_server: StartServer) -> None:
    with arena(start_server) as server:
        publish_all(server, BIG_TOPIC, big_rows(BIG_RECORDS))
        report = run_model(server, SEED, 1, LATENCY_S, GROWTH_MB, progress=print)
    print(report.summary())
    assert report.volleys == len(volleys(SEED, 1, (BIG_TOPIC, DURABLE_TOPIC)))
    assert not report.findings, report.summary()
