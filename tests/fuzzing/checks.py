"""The validator and filter language targets: checks that raise ``AssertionError`` on a broken property."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
from hypothesis import strategies as st

from server.core.errors import CommandError, FilterError
from server.core.filters import compile_filter, compiler, parse_orderby
from server.core.filters.functions import EvalContext
from server.core.protocol.commands import decode_body, decode_header
from server.core.protocol.options import parse_logon_options, parse_options
from server.core.records.select import parse_select
from tests.fuzzing.values import json_values, materialise

# -- the validator target --------------------------------------------------------------------------

VALIDATOR_REASONS = ("bad message", "no topic", "invalid options")


def check_command(raw: Any) -> None:
    """``decode_header`` and ``decode_body`` raise nothing but ``CommandError`` (with a protocol reason)."""
    value = materialise_or_none(raw)
    if value is _UNDECODABLE:
        return
    try:
        header = decode_header(value)
        decode_body(header, value)
    except CommandError as error:
        assert error.reason.startswith(VALIDATOR_REASONS), f"unexpected reason {error.reason!r:.200}"
    except Exception as error:
        raise AssertionError(f"the validator raised {type(error).__name__}: {error}") from error


_UNDECODABLE = object()


def materialise_or_none(raw: Any) -> Any:
    try:
        return materialise(raw)
    except orjson.JSONDecodeError:
        return _UNDECODABLE


# -- the filter language targets ----------------------------------------------------------------------


def evaluation_records() -> st.SearchStrategy[list[Any]]:
    return st.lists(
        json_values(10).map(lambda value: orjson.loads(orjson.dumps(value))), min_size=1, max_size=6
    )


def _timed(what: str, slow_s: float, action: Callable[[], Any]) -> Any:
    started = time.thread_time()  # its own work, whatever else runs (tests/work.py)
    result = action()
    elapsed = time.thread_time() - started
    assert elapsed < slow_s, f"{what} took {elapsed:.1f} s"
    return result


def check_filter(text: str, records_in: list[Any], slow_s: float = 5.0) -> None:
    try:
        compiled = _timed("compiling the filter", slow_s, lambda: compile_filter(text))
    except FilterError as error:
        assert error.reason.startswith("bad filter"), f"a filter error with reason {error.reason!r:.200}"
        assert 1 <= error.column <= len(text) + 1, (
            f"error column {error.column} outside a {len(text)}-char filter"
        )
        return
    except Exception as error:
        raise AssertionError(f"compile_filter raised {type(error).__name__}: {str(error)[:300]}") from error
    general = _general(text)
    ctx = EvalContext(lambda: 1_800_000_000.0, "alice", "desk-1")
    for record in records_in:
        try:
            started = time.thread_time()  # its own work, whatever else runs (tests/work.py)
            compiled.evaluate(record, ctx)
            elapsed = time.thread_time() - started
            assert elapsed < slow_s, f"evaluating the filter on one record took {elapsed:.1f} s"
        except AssertionError:
            raise
        except Exception as error:
            raise AssertionError(
                f"evaluating the filter raised {type(error).__name__}: {str(error)[:300]} on {record!r:.200}"
            ) from error
        outcome = compiled.matches(record, ctx)
        assert type(outcome) is bool, f"matches returned {outcome!r}"
        if general is not None:
            expected = general.matches(record, ctx)
            assert outcome == expected, (
                f"the specialised evaluator says {outcome}, the general one {expected}, on {record!r:.200}"
            )


def _general(text: str) -> Any:
    builder = getattr(compiler, "general_filter", None)
    if builder is None:
        return None
    try:
        return builder(text)
    except Exception:
        return None


def check_orderby(text: str, records_in: list[Any]) -> None:
    try:
        order = parse_orderby(text)
    except CommandError as error:
        assert error.reason.startswith("invalid order by"), f"reason {error.reason!r:.200}"
        return
    except Exception as error:
        raise AssertionError(f"parse_orderby raised {type(error).__name__}: {error}") from error
    items = [_Keyed(f"k{index}", record) for index, record in enumerate(records_in)]
    try:
        ordered = order.sort(items)
    except Exception as error:
        raise AssertionError(f"sorting by {text!r} raised {type(error).__name__}: {error}") from error
    assert sorted(item.key for item in ordered) == sorted(item.key for item in items), "sort lost records"


@dataclass(frozen=True)
class _Keyed:
    key: str
    data: Any


def check_options(text: str) -> None:
    for parse, reason in ((parse_options, "invalid options"), (parse_logon_options, "invalid options")):
        try:
            parsed = parse(text)
        except CommandError as error:
            assert error.reason.startswith(reason), f"reason {error.reason!r:.200}"
            continue
        except Exception as error:
            raise AssertionError(f"{parse.__name__} raised {type(error).__name__}: {error}") from error
        conflation = getattr(parsed, "conflation_s", None)
        if conflation is not None:
            assert math.isfinite(conflation) and conflation >= 0, f"conflation interval {conflation}"


def check_select(text: str, records_in: list[Any]) -> None:
    try:
        selected = parse_select(text)
    except ValueError:
        return
    except Exception as error:
        raise AssertionError(f"parse_select raised {type(error).__name__}: {error}") from error
    for record in records_in:
        try:
            view = selected.apply(record)
        except Exception as error:
            raise AssertionError(f"select apply raised {type(error).__name__}: {error}") from error
        orjson.dumps(view)
