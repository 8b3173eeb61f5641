"""How one subscription reads a record and lays out the messages about it: the whole record as
its select list shows it, a delta (JSON Patch or merge) from what it holds, or whichever of the
two is smaller. Every message that carries a whole record is rendered here (``full_body``)."""

from __future__ import annotations

from typing import Any

from ..protocol.options import Options
from ..protocol.wire import body, record_body
from ..records.diff import make_merge_delta, make_patch
from ..records.keys import KeySpec
from ..records.paths import set_path
from ..records.version import RecordVersion, format_timestamp

Memo = dict[tuple[Any, ...], Any]


class RecordReader:
    """What ``Subscription`` reads and renders with (its state is the subscription's own)."""

    __slots__ = ()

    options: Options
    held: dict[str, Any] | None
    view_kind: tuple[Any, ...]
    bookmarked: bool
    delta: bool
    key_spec: KeySpec | None

    def record(self, version: RecordVersion) -> Any:
        """``version``'s record as this subscription reads it: one that holds each record's
        whole state for its deltas keeps it (``hold``: every holder then shares one dict); any
        other (or one that holds only its select list's view) reads it on the way, and a stored
        version stays compact (records/version.py)."""
        if self.held is not None and self.options.select is None:
            return version.hold()
        return version.data

    def view_of(self, version: RecordVersion) -> Any:
        select = self.options.select
        record = self.record(version)
        return record if select is None else select.apply(record)

    def full_body(
        self, key: str | None, version: RecordVersion, view: Any, memo: Memo, reason: str = ""
    ) -> bytes:
        # Within one change, (view kind, reason) fixes both the version and the view.
        memo_key = (self.view_kind, reason)
        found: bytes | None = memo.get(memo_key)
        if found is None:
            found = memo[memo_key] = self._record_body(key, version, view, reason)
        return found

    def body_of(self, key: str | None, version: RecordVersion) -> bytes:
        """``full_body`` of ``version`` as this reader sees it (``view_of``). Without a select list
        that is the whole record, and its stored encoding is spliced in: a compact version is
        not decoded to be encoded again."""
        if self.options.select is not None:
            return self._record_body(key, version, self.view_of(version))
        return self._record_body(key, version, None, encoded=version.encoded)

    def _record_body(
        self,
        key: str | None,
        version: RecordVersion,
        view: Any,
        reason: str = "",
        encoded: bytes | None = None,
    ) -> bytes:
        options = self.options
        return record_body(
            None if options.no_sowkey else key,
            view,
            reason or None,
            format_timestamp(version.timestamp) if options.timestamp else None,
            str(version.seq) if self.bookmarked else None,
            encoded,
        )

    def composite_body(self, key: str, base: Any, version: RecordVersion, view: Any) -> bytes:
        """From ``base`` to ``version`` in one message: a delta or the whole record, whichever is smaller."""
        full = self.full_body(key, version, view, {})
        if not self.delta or base is None:
            return full
        delta = self.delta_body(key, version, base, view, {})
        return delta if delta is not None and len(delta) < len(full) else full

    def delta_body(
        self,
        key: str,
        new: RecordVersion,
        previous: Any,
        view: Any,
        memo: Memo,
        carried: frozenset[str] = frozenset(),
    ) -> bytes | None:
        """``carried``: fields a merge delta includes even when unchanged (subscription conflation)."""
        options = self.options
        memo_key = (
            id(previous),
            self.view_kind,
            options.delta_merge,
            options.send_keys,
            options.no_empties,
            carried,
        )
        found = memo.get(memo_key)
        # The entry keeps ``previous`` alive, so no other object can reuse its id in this fan-out.
        if found is not None and found[0] is previous:
            cached: bytes | None = found[1]
            return cached
        fields: dict[str, Any] = {}
        if not options.no_sowkey:
            fields["k"] = key
        if options.delta_merge:
            delta = make_merge_delta(previous, view)
            if delta is None:
                # The new state lost a field: merging can never remove it, so send the record.
                result = self.full_body(key, new, view, memo)
                memo[memo_key] = (previous, result)
                return result
            for name in carried:
                if type(view) is dict and name in view:
                    delta[name] = view[name]
            empty = not delta
            if options.send_keys and self.key_spec is not None:
                for steps, value in self.key_spec.key_values(self.record(new)):
                    set_path(delta, steps, value)
            fields["delta"] = delta
        else:
            patch = make_patch(previous, view)
            empty = not patch
            fields["patch"] = patch
        if empty and options.no_empties:
            memo[memo_key] = (previous, None)
            return None
        if options.timestamp:
            fields["ts"] = format_timestamp(new.timestamp)
        if self.bookmarked:
            fields["bm"] = str(new.seq)
        result = body(fields)
        memo[memo_key] = (previous, result)
        return result
