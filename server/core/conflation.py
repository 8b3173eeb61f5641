"""Merging two queued deliveries about one record, by the merge table in ``delivery``."""

from __future__ import annotations

import logging
from typing import Any

from .delivery import FULL, INSERT, MERGE_TABLE, OOF, Delivery
from .records import RecordVersion
from .wire import body

log = logging.getLogger("server.conflation")


def merge(older: Delivery, newer: Delivery) -> Delivery | None:
    """The one delivery that replaces ``older`` followed by ``newer``, or None if they stay two."""
    kind = MERGE_TABLE.get((older.kind, newer.kind))
    if kind is None:
        return None
    if kind == OOF:
        return newer
    topic = newer.topic
    version = newer.version
    assert version is not None and older.version is not None and newer.ckey is not None
    key = newer.ckey[0]
    structural = topic.merge_function
    if structural is not None:
        merged = _structural(structural, older.version, version)
        # A merged record that its readers may not see is never sent: the newer one goes instead.
        if all(sub.entitlement.allows(merged.data) for sub in newer.subs):
            version = merged
    if kind == FULL:
        if version is newer.version:
            return newer
        fields: dict[str, Any] = {"data": version.data} if key is None else {"k": key, "data": version.data}
        return Delivery(topic, newer.ckey, FULL, newer.head, body(fields), version=version)
    sub = newer.subs[0]
    view = newer.view
    if version is not newer.version:
        view = sub.view_of(version)
        for member in newer.subs:  # they hold what they will now receive: the merged record
            if member.held is not None and member.held.get(key) is newer.view:
                member.held[key] = view
    if kind == INSERT:
        rendered = sub.full_body(key, version, view, {})
        return Delivery(topic, newer.ckey, INSERT, newer.head, rendered, newer.subs, None, view, version)
    rendered = sub.composite_body(key, older.base, version, view)
    return Delivery(topic, newer.ckey, kind, newer.head, rendered, newer.subs, older.base, view, version)


def _structural(function: Any, older: RecordVersion, newer: RecordVersion) -> RecordVersion:
    try:
        merged = function(older.data, newer.data)
    except Exception:
        log.exception("conflation_merge of topic record %s failed; keeping the newer record", newer.key)
        return newer
    return RecordVersion(newer.key, merged, newer.seq, newer.timestamp, newer.expires_at)
