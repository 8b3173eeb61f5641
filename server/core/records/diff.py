"""What changed between two versions of a record, for delta subscriptions (docs/protocol.md, Delta
subscriptions and OOF).

``make_patch`` writes RFC 6902 operations that turn ``old`` into ``new`` when applied by any
JSON Patch library. It is purpose-built for records: objects are compared field by field,
arrays of equal length element by element, and an array whose length changed is replaced
whole (one operation instead of a minimal edit script; arrays in records are short).

``make_merge_delta`` writes the AMPS-style partial record: every changed field (objects
nested, arrays whole). It returns ``None`` when ``new`` lost a field that ``old`` had, because
merging can never remove a field and the caller must then send the full record.
"""

from __future__ import annotations

from typing import Any

from .jsonvalue import json_equal

PatchOp = dict[str, Any]


def _escape(name: str) -> str:
    if "~" in name or "/" in name:
        return name.replace("~", "~0").replace("/", "~1")
    return name


def make_patch(old: Any, new: Any) -> list[PatchOp]:
    ops: list[PatchOp] = []
    if not json_equal(old, new):
        _diff_value(old, new, "", ops)
    return ops


def _diff_value(old: Any, new: Any, path: str, ops: list[PatchOp]) -> None:
    told = type(old)
    if told is type(new):
        if told is dict:
            _diff_object(old, new, path, ops)
            return
        if told is list and len(old) == len(new):
            for index, (a, b) in enumerate(zip(old, new, strict=True)):
                if not json_equal(a, b):
                    _diff_value(a, b, f"{path}/{index}", ops)
            return
    ops.append({"op": "replace", "path": path, "value": new})


def _diff_object(old: dict[str, Any], new: dict[str, Any], path: str, ops: list[PatchOp]) -> None:
    for name in old:
        if name not in new:
            ops.append({"op": "remove", "path": f"{path}/{_escape(name)}"})
    for name, value in new.items():
        if name not in old:
            ops.append({"op": "add", "path": f"{path}/{_escape(name)}", "value": value})
            continue
        before = old[name]
        if before is value:
            continue
        if type(before) is dict and type(value) is dict:
            _diff_object(before, value, f"{path}/{_escape(name)}", ops)
        elif not json_equal(before, value):
            _diff_value(before, value, f"{path}/{_escape(name)}", ops)


def make_merge_delta(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any] | None:
    """The changed fields of ``new`` against ``old``, or ``None`` when a field was lost."""
    delta: dict[str, Any] = {}
    if len(old) > len(new) or any(name not in new for name in old):
        return None
    for name, value in new.items():
        if name not in old:
            delta[name] = value
            continue
        before = old[name]
        if before is value:
            continue
        if type(before) is dict and type(value) is dict:
            nested = make_merge_delta(before, value)
            if nested is None:
                return None
            if nested:
                delta[name] = nested
        elif not json_equal(before, value):
            delta[name] = value
    return delta
