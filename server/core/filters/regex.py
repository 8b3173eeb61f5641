"""``LIKE`` and ``REGEXP_REPLACE`` patterns on RE2, bounded so that no pattern and no text can
stall the event loop (docs/protocol.md, Filters).

RE2 is linear in the text, but its constant is the compiled program: in the worst case (the lazy
DFA out of memory, so the NFA runs) a search costs about program size x text bytes. So:
- at compile time a pattern is refused (``bad filter``) past ``MAX_PATTERN_LENGTH`` characters,
  a repetition count past ``MAX_REPEAT``, or a program past ``MAX_PROGRAM_SIZE`` instructions;
- each compiled regex may use ``REGEX_MAX_MEM`` bytes (RE2's ``max_mem``: program and DFA caches
  together), so a thousand cached patterns cannot hold gigabytes;
- each search is charged program size x text bytes to the evaluation's budget *before* it runs
  (``budget.spend``), so a search that could take too long is not run: the filter is not TRUE;
- ``REGEXP_REPLACE`` keeps at most ``MAX_GROUPS`` capturing groups: RE2 copies every group at
  every step, so 500 groups made each match take 2.3 ms;
- ``LIKE`` compiles without capturing groups (``never_capture``): it asks only whether the
  pattern occurs, and tracking submatches made ``(.*a){20}`` over 50 KB take 38 ms instead of 0.4.

Compiled patterns live in the shared byte-bounded cache (``..cache``), each counted at
``REGEX_MAX_MEM``, the most it can grow to.
"""

from __future__ import annotations

import re
from typing import Any

import re2

from ..errors import FilterError
from .budget import CAPTURE_UNITS, GROUP_UNITS, MATCH_UNITS, REGEX_UNITS, spend, utf8_size
from .cache import COMPILED

MAX_PATTERN_LENGTH = 1024  # characters
MAX_REPEAT = 256  # the largest count in {n}, {n,} or {n,m}
MAX_PROGRAM_SIZE = 2000  # RE2 instructions; (.*a){100} is 905, a typical LIKE 5 to 50
MAX_GROUPS = 20  # capturing groups of a REGEXP_REPLACE pattern: each match copies them all
REGEX_MAX_MEM = 256 * 1024  # RE2's max_mem per compiled pattern (its default is 8 MiB)

_REPEAT = re.compile(r"(?<!\\)\{(\d+)(?:,(\d*))?\}")


def _options(captures: bool) -> Any:
    options = re2.Options()
    options.log_errors = False
    options.max_mem = REGEX_MAX_MEM
    options.never_capture = not captures
    return options


_LIKE_OPTIONS = _options(captures=False)
_REPLACE_OPTIONS = _options(captures=True)


class Regex:
    """A compiled pattern whose every use is charged to the evaluation budget."""

    __slots__ = ("_compiled", "groups", "pattern", "program_size")

    def __init__(self, pattern: str, compiled: Any) -> None:
        self.pattern = pattern
        self._compiled = compiled
        self.program_size: int = compiled.programsize
        self.groups: int = compiled.groups

    def search(self, text: str) -> bool:
        """Whether the pattern occurs in ``text``; ``OverBudget`` when it may cost too much to tell."""
        spend(REGEX_UNITS * self.program_size * utf8_size(text))
        return self._compiled.search(text) is not None

    def replace(self, text: str, replacement: str, max_chars: int) -> str | None:
        """Every match in ``text`` replaced by ``replacement`` (``\\1``-``\\99``, ``\\g<name>``),
        or None when the result would pass ``max_chars``.

        Each search for the next match is charged as if it scanned to the end of the text (a
        pattern like ``.*z|a`` really does, which makes replacing quadratic), so the whole
        replacement stays within the evaluation budget."""
        size = utf8_size(text)
        per_char = CAPTURE_UNITS * self.program_size * (size // len(text) if text else 1)
        per_match = MATCH_UNITS + GROUP_UNITS * self.groups
        pieces: list[str] = []
        length = end = 0
        spend(per_char * len(text))
        last = (-1, -1)
        for match in self._compiled.finditer(text):
            spend(per_match + per_char * (len(text) - match.end()))
            if match.span() == last:
                continue  # re2 finds an empty match at the end twice; replace it once, as re does
            last = match.span()
            start = match.start()
            piece = _expand(match, replacement)
            length += start - end + len(piece)
            if length > max_chars:
                return None
            pieces.append(text[end:start])
            pieces.append(piece)
            end = match.end()
        if not pieces:
            return text
        length += len(text) - end
        if length > max_chars:
            return None
        pieces.append(text[end:])
        return "".join(pieces)


_GROUP = re.compile(r"\\(?:([0-9]{1,2})|g<(\w+)>|(\\))")


def _expand(match: Any, replacement: str) -> str:
    """``replacement`` with its group references filled in (a group that did not take part, or
    does not exist, is empty). Done here rather than by re2's ``expand``, whose template cache
    would keep every distinct replacement text a record ever carried."""
    if "\\" not in replacement:
        return replacement

    def group(found: re.Match[str]) -> str:
        number, name, backslash = found.groups()
        if backslash:
            return "\\"
        group = number if number is not None else name
        try:
            value = match.group(int(group) if group.isdigit() else group)
        except (IndexError, ValueError):
            return ""
        return value or ""

    return _GROUP.sub(group, replacement)


def compile_regex(pattern: str, column: int, captures: bool = False) -> Regex:
    """The pattern compiled (cached), or ``FilterError`` at ``column`` when it is invalid or
    past the limits. ``captures``: keep capturing groups (REGEXP_REPLACE's ``\\1``)."""
    key = ("regex", pattern, captures)
    found: Regex | None = COMPILED.get(key)
    if found is not None:
        return found
    _check_shape(pattern, column)
    try:
        compiled = re2.compile(pattern, _REPLACE_OPTIONS if captures else _LIKE_OPTIONS)
    except Exception as error:  # re2 raises its own error type for every bad pattern
        detail = error.args[0] if error.args else error
        if isinstance(detail, bytes):
            detail = detail.decode(errors="replace")
        raise FilterError(f"invalid regular expression ({detail})", column) from None
    finally:
        # re2.compile keeps its own cache of 128 patterns, outside any byte bound: empty it, so
        # the cache here is the only one.
        re2.purge()
    regex = Regex(pattern, compiled)
    if regex.groups > MAX_GROUPS:
        raise FilterError(f"regular expression with more than {MAX_GROUPS} capturing groups", column)
    if regex.program_size > MAX_PROGRAM_SIZE:
        raise FilterError(
            f"regular expression too complex ({regex.program_size} instructions, at most {MAX_PROGRAM_SIZE})",
            column,
        )
    COMPILED.put(key, regex, regex_cost(pattern))
    return regex


def regex_cost(pattern: str) -> int:
    """The bytes a compiled pattern may come to hold: RE2's own bound, and the pattern."""
    return REGEX_MAX_MEM + 2 * len(pattern)


def _check_shape(pattern: str, column: int) -> None:
    """The limits that need no compiling: a pattern over them is refused before RE2 sees it."""
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise FilterError(f"regular expression longer than {MAX_PATTERN_LENGTH} characters", column)
    for found in _REPEAT.finditer(pattern):
        counts = [int(count) for count in found.groups() if count]
        if max(counts) > MAX_REPEAT:
            raise FilterError(f"repetition count over {MAX_REPEAT} in regular expression", column)
