"""A short run of the fuzzer (bench/fuzz.py runs the same targets for minutes): the frame decoder,
the command validator and the filter language keep their properties on hostile input.

The strategies and the properties are in tests/fuzzing/; each target has its own test so a
failure names it, and Hypothesis prints the minimal falsifying example.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from tests.fuzzing import EngineRig, RawFrame, Target, check_filter, targets

EXAMPLES = {
    "frames": 60,
    "frames-auth": 40,
    "commands": 150,
    "filters": 150,
    "orderby": 100,
    "options": 150,
    "select": 100,
}
TARGETS = targets(max_flood=300, max_steps=4, slow_s=10.0)


def run(target: Target, examples: int) -> None:
    chosen = settings(
        max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck), print_blob=True
    )
    test: Any = chosen(given(target.strategy)(target.check))
    test()


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_fuzz_target(name: str) -> None:
    run(TARGETS[name], EXAMPLES[name])


def test_the_frame_checks_can_fail() -> None:
    # A rig that checks nothing would pass every frame: the properties must catch a broken SOW.
    rig = EngineRig()
    rig.engine.broker.topics["orders"].sow.load((), 0)  # the SOW changes behind the observers' backs
    with pytest.raises(AssertionError, match="observer's view differs"):
        rig.step(RawFrame(b'{"c":"heartbeat","cid":1}'))


def test_the_filter_checks_can_fail() -> None:
    with pytest.raises(AssertionError, match="raised"):
        check_filter("/a = 1", [{"a": _Explosive()}])


class _Explosive:
    """A value no JSON decoder makes, whose comparison raises: evaluation must be seen to fail."""

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("boom")

    __hash__ = object.__hash__

    def __lt__(self, other: object) -> bool:
        raise RuntimeError("boom")

    __gt__ = __lt__
    __le__ = __lt__
    __ge__ = __lt__
