"""``LIKE`` patterns run on RE2, whose matching time is linear in the input: no pattern can stall
the event loop the way a backtracking engine can with ``^(a+)+$``."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import re2

from ..errors import FilterError

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False


@lru_cache(maxsize=2048)
def _compile(pattern: str) -> Any:
    return re2.compile(pattern, _OPTIONS)


def compile_regex(pattern: str, column: int) -> Any:
    try:
        return _compile(pattern)
    except Exception as error:  # re2 raises its own error type for every bad pattern
        detail = error.args[0] if error.args else error
        if isinstance(detail, bytes):
            detail = detail.decode(errors="replace")
        raise FilterError(f"invalid regular expression ({detail})", column) from None
