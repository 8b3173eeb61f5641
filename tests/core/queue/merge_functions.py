"""Structural merge functions for the conflation tests (named by `conflation_merge`)."""

from __future__ import annotations

from typing import Any


def sum_count(older: dict[str, Any], newer: dict[str, Any]) -> dict[str, Any]:
    return {**newer, "count": older.get("count", 0) + newer.get("count", 0)}


def broken(older: dict[str, Any], newer: dict[str, Any]) -> dict[str, Any]:
    raise ValueError("this merge always fails")


def reassign(older: dict[str, Any], newer: dict[str, Any]) -> dict[str, Any]:
    """A merge whose result belongs to another customer (an entitlement must stop it)."""
    return {**newer, "customer": "Nobody", "qty": older.get("qty", 0) + newer.get("qty", 0)}


def by_kind(older: dict[str, Any], newer: dict[str, Any]) -> dict[str, Any] | None:
    """Every outcome a merger may choose: ``keep`` names it in the newer record."""
    keep = newer.get("keep")
    if keep == "older":
        return older
    if keep == "newer":
        return newer
    if keep == "both":
        return None
    return {**newer, "count": older.get("count", 0) + newer.get("count", 0)}


def same_kind(queued: list[dict[str, Any] | None], new: dict[str, Any] | None) -> int | None:
    """A matcher: the new message conflates with the newest queued one of its ``kind``."""
    kind = new.get("kind") if new is not None else None
    for index in range(len(queued) - 1, -1, -1):
        old = queued[index]
        if old is not None and old.get("kind") == kind:
            return index
    return None


def bad_matcher(queued: list[dict[str, Any] | None], new: dict[str, Any] | None) -> int | None:
    return 99
