"""Hostile inputs for the frame decoder, the command validator and the filter language, and the
properties each must keep whatever it is fed (issue 10, "Prove it").

Shared by ``bench/fuzz.py`` (minutes of fuzzing) and ``tests/core/test_fuzz.py`` (seconds, in the
suite). Every target is a Hypothesis strategy plus a check that raises ``AssertionError`` (with
what went wrong) when a property breaks:

- ``frames``: ``Engine.receive`` never raises, no command fails unexpectedly inside the engine
  (``log.exception``), every command with a ``cid`` gets exactly one ``processed`` ack (and a
  failed one nothing else), failure reasons are protocol words, refused and read-only commands
  leave the SOW and the publisher sequences as they were, every queued message is JSON, and two
  observers (a full and a patch delta subscription) always hold exactly the SOW;
- ``commands``: ``decode_header`` / ``decode_body`` raise nothing but ``CommandError``;
- ``filters``: ``compile_filter`` raises nothing but ``FilterError`` (``bad filter`` with a column
  inside the text), a compiled filter's evaluation over JSON records never raises and ``matches``
  returns a bool that agrees with the unspecialised evaluator;
- ``orderby``, ``options``, ``select``: only ``CommandError`` / ``ValueError`` as documented, and
  the compiled result never raises on records.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from tests.fuzzing.checks import (
    check_command,
    check_filter,
    check_options,
    check_orderby,
    check_select,
    evaluation_records,
)
from tests.fuzzing.engine_rig import EngineRig, check_frames
from tests.fuzzing.frames import SEED_FRAMES, RawFrame, commands, frames
from tests.fuzzing.languages import filter_texts, option_texts, orderby_texts, select_texts

__all__ = ["SEED_FRAMES", "EngineRig", "RawFrame", "Target", "check_filter", "targets"]


@dataclass(frozen=True)
class Target:
    name: str
    strategy: st.SearchStrategy[Any]
    check: Callable[..., None]
    what: str


def targets(max_flood: int = 2_000, max_steps: int = 6, slow_s: float = 5.0) -> dict[str, Target]:
    """Every fuzz target. ``check`` takes the strategy's value as its one argument."""
    return {
        target.name: target
        for target in (
            Target(
                "frames",
                st.lists(frames(max_flood), min_size=1, max_size=max_steps),
                lambda steps: check_frames(steps, slow_s),
                "Engine.receive on hostile frames (acks, SOW unchanged by refusals, observers)",
            ),
            Target(
                "frames-auth",
                st.lists(frames(max_flood), min_size=1, max_size=max_steps),
                lambda steps: check_frames(steps, slow_s, auth=True),
                "the same with [auth]: the attacker is alice, entitled to /customer = 'Alice' orders",
            ),
            Target("commands", commands(), check_command, "decode_header / decode_body"),
            Target(
                "filters",
                st.tuples(filter_texts, evaluation_records()),
                lambda case: check_filter(case[0], case[1], slow_s),
                "compile_filter and evaluation",
            ),
            Target(
                "orderby",
                st.tuples(orderby_texts, evaluation_records()),
                lambda case: check_orderby(*case),
                "parse_orderby and sorting",
            ),
            Target("options", option_texts, check_options, "parse_options / parse_logon_options"),
            Target(
                "select",
                st.tuples(select_texts, evaluation_records()),
                lambda case: check_select(*case),
                "parse_select and apply",
            ),
        )
    }
