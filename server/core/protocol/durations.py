"""Durations as the configuration and options write them: a number then ``ms``, ``s``, ``m`` or ``h``."""

from __future__ import annotations

import re

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
_SCALE = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float:
    """Seconds; raises ValueError for anything else."""
    match = _DURATION.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"not a duration (a number then ms, s, m or h): {text!r}")
    return float(match.group(1)) * _SCALE[match.group(2)]
