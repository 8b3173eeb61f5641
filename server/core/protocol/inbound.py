"""Reading an inbound frame: orjson, and never a number silently altered.

orjson reads an integer outside -2**63 .. 2**64-1 as a float: the orders 18446744073709551616 and
18446744073709551617 both became 1.8446744073709552e+19, one SowKey, and the second publish
replaced the first. Nor can orjson write such an integer back, so the server could not deliver,
log or snapshot it exactly anyway. A command that holds one is therefore refused whole (``bad
message``), and the other commands of its frame run as usual (docs/protocol.md, Framing).

Finding them costs a scan of the raw bytes (~2.5 ms a MB, against ~14 ms for orjson itself): such
an integer has 20 digits or more, or 19 after a minus sign. Only a frame with such a run (in a
string or a number) is read a second time, by the standard library, which keeps integers exact.

A number past the largest double (``1e400``, or an integer of more than 309 digits) is not JSON
to orjson at all, which would make the whole frame ``not JSON``. Such a frame is read by the
standard library too, and only the command holding the number is refused.

The standard library reads more than orjson does: a lone surrogate (``"\\ud800"``, which no
UTF-8 text holds and orjson can never write back: ``/status.json`` answered 500 while a socket so
named lived) and ``NaN`` or ``Infinity``. orjson is the one decoder: what the second reading admits
beyond it is refused as orjson refuses it, the whole frame ``not JSON``.
"""

from __future__ import annotations

import json
import math
from typing import Any

import orjson

from ..errors import BAD_MESSAGE, CommandError

MIN_INTEGER = -(2**63)  # what orjson reads as an int and writes back: int64 and uint64
MAX_INTEGER = 2**64 - 1

_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_RUN = b"0" * 20
_LONG_NEGATIVE_RUN = b"-" + b"0" * 19
_SHOWN_DIGITS = 40  # an integer quoted in a reason is cut to this many characters
_PAST_DOUBLE = "infinity when parsed as double"  # orjson's words for a number past the largest double


class RefusedCommand(dict[str, Any]):
    """Stands in for a command that cannot be read exactly: it holds only the ``cid`` and ``s``
    that its failure ack may echo (when they are in range themselves), and the error to refuse
    it with."""

    def __init__(self, fields: dict[str, Any], error: CommandError) -> None:
        super().__init__(fields)
        self.error = error


def loads(frame: bytes | str) -> Any:
    """The frame's JSON value; a command in it holding an integer orjson would alter is replaced by
    a ``RefusedCommand``. Raises ``orjson.JSONDecodeError`` when the frame is not JSON."""
    past_double: orjson.JSONDecodeError | None = None
    try:
        decoded: Any = orjson.loads(frame)
    except orjson.JSONDecodeError as error:
        if _PAST_DOUBLE not in str(error):
            raise
        decoded, past_double = None, error  # read below; commands holding such a number are refused
    if decoded is not None and not _may_hold_long_integers(frame):
        return decoded
    try:
        exact = json.loads(frame, parse_constant=_not_json)
        if decoded is None:
            _refuse_what_orjson_refuses(exact)
    except RecursionError:  # deeper than the standard library reads: no record may be so deep
        return RefusedCommand({}, CommandError(BAD_MESSAGE, "nested too deeply"))
    except orjson.JSONDecodeError:
        raise
    except ValueError as error:
        if past_double is not None:
            raise past_double from None  # not JSON anyway: the whole frame, as orjson said
        return RefusedCommand({}, CommandError(BAD_MESSAGE, f"not JSON ({error})"))  # never seen
    if decoded is None:
        decoded = exact  # the same values, but for what _checked refuses
    if isinstance(exact, list) and isinstance(decoded, list):
        return [_checked(command, value) for command, value in zip(exact, decoded, strict=True)]
    return _checked(exact, decoded)


def _not_json(constant: str) -> Any:
    raise orjson.JSONDecodeError(f"{constant} is not a JSON number", "", 0)


def _refuse_what_orjson_refuses(value: Any) -> None:
    """Raises orjson's error when ``value`` (read by the standard library) holds a text orjson
    would not have read: a lone surrogate, in a name or a value."""
    pending = [value]
    while pending:
        item = pending.pop()
        kind = type(item)
        if kind is str:
            _whole_text(item)
        elif kind is dict:
            for name, field in item.items():
                _whole_text(name)
                pending.append(field)
        elif kind is list:
            pending.extend(item)


def _whole_text(text: str) -> None:
    if text.isascii():
        return
    try:
        text.encode()
    except UnicodeEncodeError:
        raise orjson.JSONDecodeError("a string holds a lone surrogate", "", 0) from None


def _may_hold_long_integers(frame: bytes | str) -> bool:
    raw = frame.encode() if isinstance(frame, str) else frame
    digits = raw.translate(_DIGITS_AS_ZERO)
    return _LONG_RUN in digits or _LONG_NEGATIVE_RUN in digits


def _checked(exact: Any, decoded: Any) -> Any:
    """``decoded``, or a ``RefusedCommand`` when ``exact`` (the same command, integers kept
    exact) holds an integer out of range."""
    found = _out_of_range(exact)
    if found is None:
        return decoded
    if type(found) is float:
        error = CommandError(
            BAD_MESSAGE, "a number is past the largest double (about 1.8e308); send it as a string"
        )
    else:
        text = str(found)
        if len(text) > _SHOWN_DIGITS:
            text = f"{text[:_SHOWN_DIGITS]}... ({len(text.lstrip('-'))} digits)"
        error = CommandError(
            BAD_MESSAGE,
            f"integer {text} is out of range (integers must be within {MIN_INTEGER} to {MAX_INTEGER}; "
            "send larger ones as strings)",
        )
    echoed: dict[str, Any] = {}
    if isinstance(exact, dict):
        echoed = {
            name: exact[name] for name in ("cid", "s") if name in exact and _out_of_range(exact[name]) is None
        }
    return RefusedCommand(echoed, error)


def _out_of_range(value: Any) -> int | float | None:
    """The first number in ``value`` that orjson cannot hold (an integer out of range, or a
    double that is not finite), or None."""
    pending = [value]
    while pending:
        item = pending.pop()
        kind = type(item)
        if kind is int:
            if not MIN_INTEGER <= item <= MAX_INTEGER:
                return item  # type: ignore[no-any-return]
        elif kind is float:
            if not math.isfinite(item):
                return item  # type: ignore[no-any-return]
        elif kind is dict:
            pending.extend(item.values())
        elif kind is list:
            pending.extend(item)
    return None
