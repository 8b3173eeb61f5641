"""One subscription's view of a topic: does a record match, what does the subscriber hold,
and what message (if any) a change to a record means for it (PROTOCOL 6.2).

A subscription that needs to know what it holds (delta subscriptions, and ``oof``) keeps
``held``: SowKey -> the (selected) view it last received. Views are shared, immutable objects,
so holding one costs a reference.

``Memo`` caches views and encoded bodies for the duration of one change's fan-out: subscribers
with the same view of the same change share the same bytes, whichever socket they are on.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import orjson

from .diff import make_merge_delta, make_patch
from .filters import Filter
from .filters.functions import EvalContext
from .keys import KeySpec
from .options import Options
from .paths import set_path
from .records import RecordVersion, format_timestamp
from .wire import body, head

P = b"p"
OOF = b"oof"

Outcome = tuple[bytes, bytes]  # (message type, encoded body)
Memo = dict[tuple[Any, ...], Any]


_ORDER = itertools.count()


def _matcher(filters: tuple[Filter, ...], ctx: EvalContext) -> Callable[[Any], bool]:
    """One predicate for all of a subscription's filters (its own and its user's entitlement)."""
    if not filters:
        return lambda data: True
    if len(filters) == 1:
        only = filters[0]
        return lambda data: only.matches(data, ctx)
    return lambda data: all(f.matches(data, ctx) for f in filters)


class Subscription:
    def __init__(
        self,
        session: Any,
        sub_id: Any,
        topic: str,
        filters: tuple[Filter, ...],
        options: Options,
        delta: bool,
        key_spec: KeySpec | None,
        ctx: EvalContext,
    ) -> None:
        self.session = session
        self.sub_id = sub_id
        self.topic = topic
        self.filters = filters
        self.options = options
        self.delta = delta and key_spec is not None  # plain topics have no records to diff against
        self.key_spec = key_spec
        self.ctx = ctx
        tracks = key_spec is not None and (self.delta or options.oof)
        self.held: dict[str, Any] | None = {} if tracks else None
        select = options.select
        self._select_id = select.text if select is not None else None
        # Subscriptions with equal view kinds get byte-identical bodies for the same change.
        self._view_kind = (self._select_id, options.no_sowkey, options.timestamp)
        self.matches = _matcher(filters, ctx)
        self.unfiltered = not filters
        terms = [f.index_term for f in filters if f.index_term is not None]
        self.index_term = min(terms, key=lambda term: len(term.keys)) if terms else None
        self.order = next(_ORDER)  # subscription order, for listing sids the same way every time
        # Sent the shared full body of every matching change, with nothing to remember: the
        # topic can deliver to it without asking on_change.
        self.stateless = (
            self.held is None and select is None and not options.no_sowkey and not options.timestamp
        )
        topic_json = orjson.dumps(topic)
        self.heads = {P: head(P, topic_json, [sub_id]), OOF: head(OOF, topic_json, [sub_id])}

    def view(self, version: RecordVersion, memo: Memo) -> Any:
        select = self.options.select
        if select is None:
            return version.data
        memo_key = ("view", id(version), self._select_id)
        found = memo.get(memo_key)
        if found is None:
            found = memo[memo_key] = select.apply(version.data)
        return found

    def remember(self, key: str, view: Any) -> None:
        if self.held is not None:
            self.held[key] = view

    def full_body(
        self, key: str | None, version: RecordVersion, view: Any, memo: Memo, reason: str = ""
    ) -> bytes:
        # Within one change, (view kind, reason) fixes both the version and the view.
        memo_key = (self._view_kind, reason)
        found: bytes | None = memo.get(memo_key)
        if found is None:
            fields: dict[str, Any] = {}
            if key is not None and not self.options.no_sowkey:
                fields["k"] = key
            if reason:
                fields["reason"] = reason
            fields["data"] = view
            if self.options.timestamp:
                fields["ts"] = format_timestamp(version.timestamp)
            found = memo[memo_key] = body(fields)
        return found

    def on_change(
        self, key: str | None, old: RecordVersion | None, new: RecordVersion | None, memo: Memo
    ) -> Outcome | None:
        """What this subscription is sent about a change of record ``key`` from ``old`` to ``new``."""
        if new is not None and self.matches(new.data):
            view = self.view(new, memo)
            held = self.held
            if held is None or key is None:
                return P, self.full_body(key, new, view, memo)
            previous = held.get(key)
            held[key] = view
            if previous is None or not self.delta:
                return P, self.full_body(key, new, view, memo)
            delta = self.delta_body(key, new, previous, view, memo)
            return None if delta is None else (P, delta)
        if self.held is None or key is None:
            return None
        previous = self.held.pop(key, None)
        if previous is None or not self.options.oof:
            return None
        if new is None:
            assert old is not None
            return OOF, self.full_body(key, old, self.view(old, memo), memo, "deleted")
        return OOF, self.full_body(key, new, self.view(new, memo), memo, "match")

    def oof(self, key: str, version: RecordVersion, reason: str, memo: Memo) -> Outcome | None:
        """Forget ``key``; the OOF message to send when the subscriber asked for them."""
        if self.held is None or self.held.pop(key, None) is None or not self.options.oof:
            return None
        return OOF, self.full_body(key, version, self.view(version, memo), memo, reason)

    def delta_body(self, key: str, new: RecordVersion, previous: Any, view: Any, memo: Memo) -> bytes | None:
        options = self.options
        memo_key = (id(previous), self._view_kind, options.delta_merge, options.send_keys, options.no_empties)
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
            empty = not delta
            if options.send_keys and self.key_spec is not None:
                for steps, value in self.key_spec.key_values(new.data):
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
        result = body(fields)
        memo[memo_key] = (previous, result)
        return result
