"""Command options (the ``o`` field, docs/protocol.md, Commands), parsed once at the edge.

A comma list; commas inside ``[...]`` do not separate; spaces around items are ignored.
An unknown option or a malformed value is refused with ``invalid options``, and so are values
past the limits of limits.py: more than ``MAX_PATHS`` paths in a select list or a
``conflation_key``, a path longer than ``MAX_PATH_LENGTH``, a conflation interval longer than
``MAX_CONFLATION_S`` (the whole ``o`` is bounded by the command decoder).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import INVALID_OPTIONS, CommandError
from ..filters.cache import COMPILED
from ..limits import MAX_CONFLATION_S, MAX_PATH_LENGTH, MAX_PATHS
from ..records.paths import PathSteps, parse_path
from ..records.select import SelectList, parse_select
from .durations import parse_duration
from .lists import split_items


@dataclass(frozen=True, slots=True)
class Options:
    oof: bool = False
    no_empties: bool = False
    no_sowkey: bool = False
    send_keys: bool = True
    select: SelectList | None = None
    conflation_s: float | None = None
    conflation_key: tuple[PathSteps, ...] | None = None
    delta_merge: bool = False  # delta=merge (AMPS partial records) instead of RFC 6902 patches
    top_n: int | None = None
    skip_n: int | None = None
    grouping: tuple[str, ...] | None = None  # an aggregated view's (docs/protocol.md, Aggregated views)
    projection: tuple[str, ...] | None = None
    timestamp: bool = False
    replace: bool = False
    positions: bool = False  # a live window's messages carry the record's position (pos)
    resume: bool = False  # a bm on every message, and a resume from one (docs/protocol.md, Resuming a view)
    count: bool = False  # group_end and count messages carry the view's size (docs/protocol.md, Viewports)


def split_options(text: str) -> list[str]:
    items: list[str] = []
    depth, current = 0, list[str]()
    for char in text:
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        if char == "," and depth == 0:
            items.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    items.append("".join(current).strip())
    return [item for item in items if item]


def _bracketed(name: str, value: str) -> str:
    if not (value.startswith("[") and value.endswith("]")):
        raise CommandError(INVALID_OPTIONS, f"{name} takes a bracketed list, like {name}=[/id]")
    return value[1:-1]


def _count(name: str, value: str) -> int:
    if not value.isdigit() or len(value) > 18:  # 18 digits: within a signed 64-bit integer
        raise CommandError(INVALID_OPTIONS, f"{name} takes a whole number, got {value!r}")
    return int(value)


# What a parsed select list holds per character of its text (measured: ~100 bytes; the tree has a
# node per path step).
SELECT_BYTES_PER_CHAR = 128


def _select(text: str) -> SelectList:
    """A select list, parsed once and kept in the shared byte-bounded cache (records/select.py's own
    cache counts entries, and 1,024 select lists of 4 KB are some 270 MB)."""
    key = ("select", text)
    found: SelectList | None = COMPILED.get(key)
    if found is None:
        found = parse_select.__wrapped__(text)
        COMPILED.put(key, found, 1024 + SELECT_BYTES_PER_CHAR * len(text))
    return found


def _paths(name: str, inside: str) -> list[str]:
    """The items of a bracketed path list, within the limits on their number and length."""
    items = inside.split(",")
    if len(items) > MAX_PATHS:
        raise CommandError(INVALID_OPTIONS, f"{name}: more than {MAX_PATHS} paths")
    if any(len(item) > MAX_PATH_LENGTH for item in items):
        raise CommandError(INVALID_OPTIONS, f"{name}: a path longer than {MAX_PATH_LENGTH} characters")
    return items


_FLAGS = {"oof", "no_empties", "no_sowkey", "timestamp", "replace", "positions", "resume", "count"}


def parse_logon_options(text: str | None) -> bool:
    """Logon options: ``conflation=off`` turns socket-queue conflation off for this session.

    Returns whether conflation stays on."""
    conflation = True
    for item in split_options(text or ""):
        name, _, value = (part.strip() for part in item.partition("="))
        if name != "conflation" or value not in ("on", "off"):
            raise CommandError(INVALID_OPTIONS, f"logon takes conflation=on or conflation=off, not {item!r}")
        conflation = value == "on"
    return conflation


def parse_options(text: str | None) -> Options:
    if text is None or not text.strip():
        return Options()
    values: dict[str, object] = {}
    for item in split_options(text):
        name, has_value, value = item.partition("=")
        name, value = name.strip(), value.strip()
        if name in _FLAGS:
            if has_value:
                raise CommandError(INVALID_OPTIONS, f"{name} takes no value")
            values[name] = True
        elif name == "send_keys":
            if has_value and value not in ("true", "false"):
                raise CommandError(INVALID_OPTIONS, f"send_keys takes true or false, got {value!r}")
            values["send_keys"] = value != "false"
        elif not has_value:
            raise CommandError(INVALID_OPTIONS, f"unknown option {name!r}")
        elif name == "select":
            inside = _bracketed(name, value)
            _paths(name, inside)
            try:
                values["select"] = _select(inside)
            except ValueError as error:
                raise CommandError(INVALID_OPTIONS, f"select: {error}") from None
        elif name == "conflation":
            try:
                interval = parse_duration(value)
            except ValueError as error:
                raise CommandError(INVALID_OPTIONS, f"conflation: {error}") from None
            if interval > MAX_CONFLATION_S:
                raise CommandError(INVALID_OPTIONS, f"conflation: at most {MAX_CONFLATION_S:g}s")
            values["conflation_s"] = interval
        elif name == "conflation_key":
            try:
                paths = [parse_path(path.strip()) for path in _paths(name, _bracketed(name, value))]
            except ValueError as error:
                raise CommandError(INVALID_OPTIONS, f"conflation_key: {error}") from None
            values["conflation_key"] = tuple(paths)
        elif name == "delta":
            if value not in ("patch", "merge"):
                raise CommandError(INVALID_OPTIONS, f"delta takes patch or merge, got {value!r}")
            values["delta_merge"] = value == "merge"
        elif name in ("top_n", "skip_n"):
            values[name] = _count(name, value)
        elif name in ("grouping", "projection"):  # checked by aggregate/parse.py
            values[name] = tuple(split_items(_bracketed(name, value)))
        else:
            raise CommandError(INVALID_OPTIONS, f"unknown option {name!r}")
    return Options(**values)  # type: ignore[arg-type]
