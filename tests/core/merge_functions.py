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
