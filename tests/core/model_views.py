"""The client side of the model-based engine test: views rebuilt only from the messages a
client receives, and the checks that need no model (per-record order, live sids, snapshots,
acks, ``k``); a failed check raises a ``Violation`` of its kind."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

import jsonpatch

from .engine_model import Record, Sub, merge_delta


class Violation(AssertionError):
    """A client was sent something the protocol forbids. The subclasses name the kind, so that
    Hypothesis reports (and shrinks) each kind as a failure of its own."""


class OrderViolation(Violation):
    """A message about a record older than one received before it."""


class SidViolation(Violation):
    """A message for a sid that is not live on this socket (not yet acked, unsubscribed, dropped)."""


class KeyViolation(Violation):
    """``k`` where ``no_sowkey`` was asked for, none where it was not, or a record not identified."""


class DeltaViolation(Violation):
    """A patch or merge delta for a record the subscription does not hold, or that does not apply."""


class SnapshotViolation(Violation):
    """A snapshot record outside group_begin/group_end, or a wrong count."""


class AckViolation(Violation):
    """An ack nobody asked for, a failed command, or not exactly one processed ack per cid."""


class MessageViolation(Violation):
    """Any other message that should not have been sent."""


class ViewMismatch(AssertionError):
    """After a drain, a subscription's view is not the model's."""


class UnexpectedClose(AssertionError):
    """A socket was closed although its policies allow no close."""


class ClientViews:
    """What one client holds, rebuilt only from the messages it received, with the checks that
    need no model: per-record order, sids that are live, snapshots, acks, no_sowkey."""

    def __init__(self, name: str, subs: Callable[[str], Sub | None]) -> None:
        self.name = name
        self._subs = subs  # sid -> the model's subscription (for its options), None when gone
        self.views: dict[str, dict[int, Record]] = {}
        self.keys: dict[tuple[str, str], int] = {}  # (topic, SowKey) -> record id
        self.socket_v: dict[tuple[str, int], int] = {}  # newest v received per record, any sid
        self.sid_v: dict[tuple[str, int], int] = {}  # newest v received per (sid, record), OOFs too
        self.live: set[str] = set()  # sids whose subscribe was acked and that have not ended
        self.ended: set[str] = set()
        self.acks: dict[str, list[dict[str, Any]]] = {}  # cid -> processed acks received
        self.cids: dict[str, tuple[str, str | None]] = {}  # cid -> (command, sid)
        self.snapshot: dict[str, int] = {}  # query_id -> records received so far
        self.dropped: list[str] = []  # sids dropped for back pressure, in the order told
        self.kinds: set[str] = set()  # the kinds of message received (for test statistics)

    def fail(self, kind: type[Violation], what: str, message: dict[str, Any]) -> NoReturn:
        raise kind(f"client {self.name}: {what}: {message}")

    def sent(self, cid: str, command: str, sid: str | None) -> None:
        self.cids[cid] = (command, sid)

    def receive(self, messages: list[dict[str, Any]]) -> None:
        """One frame's messages: a transaction's are all in it, between tx_begin and tx_end."""
        open_tx = None
        for message in messages:
            c = message.get("c")
            if c == "tx_begin":
                if open_tx is not None:
                    self.fail(MessageViolation, "tx_begin inside a transaction", message)
                open_tx = message["tx"]
            elif c == "tx_end":
                if message["tx"] != open_tx:
                    self.fail(MessageViolation, f"tx_end of another transaction than {open_tx}", message)
                open_tx = None
            elif open_tx is not None and c not in ("p", "oof"):
                self.fail(MessageViolation, "a message other than p or oof inside a transaction", message)
            self._receive(message)
        if open_tx is not None:
            self.fail(MessageViolation, f"transaction {open_tx} split across frames", messages[-1])

    def _receive(self, message: dict[str, Any]) -> None:
        c = message.get("c")
        if c == "p":
            self.kinds.add("p " + next((f for f in ("data", "patch", "delta") if f in message), "?"))
        elif c == "oof":
            self.kinds.add(f"oof {message.get('reason')}")
        elif c != "ack":
            self.kinds.add(str(c))
        if c == "ack":
            self._ack(message)
        elif c == "group_begin":
            qid = message["query_id"]
            if qid in self.snapshot:
                self.fail(SnapshotViolation, "group_begin inside a snapshot of the same query", message)
            if qid in self.ended:
                self.fail(SidViolation, f"a snapshot for sid {qid!r}, which is ended", message)
            self.snapshot[qid] = 0
            self.views[qid] = {}  # a snapshot is the whole view (also after replace)
        elif c == "group_end":
            qid = message["query_id"]
            count = self.snapshot.pop(qid, None)
            if count is None:
                self.fail(SnapshotViolation, "group_end without group_begin", message)
            if message.get("records") != count:
                self.fail(
                    SnapshotViolation,
                    f"group_end counts {message.get('records')} records, {count} were sent",
                    message,
                )
        elif c == "sow":
            qid = message["query_id"]
            if qid not in self.snapshot:
                self.fail(SnapshotViolation, "a sow record outside group_begin/group_end", message)
            self.snapshot[qid] += 1
            record = self._record(message, qid)
            self._order(message, qid, record, socket=True)
            self.views[qid][record["id"]] = record
        elif c == "p":
            for sid in self._sids(message):
                record = self._apply(message, sid)
                self._order(message, sid, record, socket=True)
                self.views.setdefault(sid, {})[record["id"]] = record
        elif c == "oof":
            if message.get("reason") not in ("deleted", "expired", "match", "entitlement"):
                self.fail(MessageViolation, "an OOF with an unknown reason", message)
            for sid in self._sids(message):
                record = self._record(message, sid)
                self._order(message, sid, record, socket=False)
                self.views.setdefault(sid, {}).pop(record["id"], None)
        elif c == "unsubscribed":
            sid = message["sub_id"]
            if message.get("reason") != "back_pressure":
                self.fail(MessageViolation, "unsubscribed for an unexpected reason", message)
            sub = self._subs(sid)
            if sub is not None and sub.topic != "unsubscribe":
                self.fail(MessageViolation, f"unsubscribed on a {sub.topic!r} topic", message)
            self.live.discard(sid)
            self.ended.add(sid)
            self.dropped.append(sid)
        elif c not in ("tx_begin", "tx_end"):  # checked per frame (receive)
            self.fail(MessageViolation, "an unexpected message", message)

    def _ack(self, message: dict[str, Any]) -> None:
        if message.get("a") != "processed":
            self.fail(AckViolation, "an ack that was not asked for", message)
        cid = message.get("cid")
        if cid not in self.cids:
            self.fail(AckViolation, "an ack for no command of this client", message)
        self.acks.setdefault(cid, []).append(message)
        if message.get("status") != "success":
            self.fail(AckViolation, "a command failed", message)
        command, sid = self.cids[cid]
        if sid is None:
            return
        if command == "unsubscribe":
            self.live.discard(sid)
            self.ended.add(sid)
        else:
            self.live.add(sid)

    def _sids(self, message: dict[str, Any]) -> list[str]:
        sids = message.get("sids")
        if not isinstance(sids, list) or not sids or len(set(sids)) != len(sids):
            self.fail(SidViolation, "a message with bad sids", message)
        for sid in sids:
            if sid not in self.live:
                state = "ended" if sid in self.ended else "not subscribed (yet)"
                self.fail(SidViolation, f"a message for sid {sid!r}, which is {state}", message)
            sub = self._subs(sid)
            if sub is not None and sub.topic != message.get("t"):
                self.fail(SidViolation, f"a message for sid {sid!r} about another topic", message)
        return sids

    def _key(self, message: dict[str, Any], sid: str, record_id: Any) -> int:
        """The record id of a message, and the SowKey check (``k`` present unless no_sowkey)."""
        sub = self._subs(sid)
        k = message.get("k")
        if sub is not None and sub.no_sowkey and k is not None:
            self.fail(KeyViolation, f"k sent to sid {sid!r}, which asked for no_sowkey", message)
        if sub is not None and not sub.no_sowkey and k is None:
            self.fail(KeyViolation, f"no k sent to sid {sid!r}", message)
        if k is not None:
            topic = message["t"]
            known = self.keys.get((topic, k))
            if record_id is None:
                if known is None:
                    self.fail(DeltaViolation, "a delta about a record this client was never sent", message)
                record_id = known
            elif known is None:
                self.keys[topic, k] = record_id
            elif known != record_id:
                self.fail(KeyViolation, f"SowKey {k} names record {known} and record {record_id}", message)
        if type(record_id) is not int:
            self.fail(KeyViolation, "a message whose record cannot be identified", message)
        return record_id

    def _record(self, message: dict[str, Any], sid: str) -> Record:
        data = message.get("data")
        if type(data) is not dict:
            self.fail(MessageViolation, "a message without a record", message)
        self._key(message, sid, data.get("id"))
        return data

    def _apply(self, message: dict[str, Any], sid: str) -> Record:
        """The record ``sid`` holds after a ``p`` message (data, patch or merge delta)."""
        if "data" in message:
            return self._record(message, sid)
        held_view = self.views.get(sid, {})
        if "patch" in message:
            key = self._key(message, sid, None)
            if key not in held_view:
                self.fail(
                    DeltaViolation, f"a patch for record {key}, which sid {sid!r} does not hold", message
                )
            try:
                patched: Record = jsonpatch.apply_patch(held_view[key], message["patch"])
            except jsonpatch.JsonPatchException as error:
                self.fail(
                    DeltaViolation, f"a patch that does not apply to the held record ({error})", message
                )
            return patched
        if "delta" in message:
            delta = message["delta"]
            key = self._key(message, sid, delta.get("id") if type(delta) is dict else None)
            if key not in held_view:
                self.fail(
                    DeltaViolation,
                    f"a merge delta for record {key}, which sid {sid!r} does not hold",
                    message,
                )
            merged: Record = merge_delta(held_view[key], delta)
            return merged
        self.fail(MessageViolation, "a p message without data, patch or delta", message)

    def _order(self, message: dict[str, Any], sid: str, record: Record, socket: bool) -> None:
        """No message about a record is older than one received before it: per subscription
        (OOFs included: their body is the new state or the last one it was sent), and per socket
        for records' states (OOF bodies may be the last state this subscription was sent)."""
        v = record.get("v")
        if type(v) is not int:
            self.fail(MessageViolation, "a record without its version v", message)
        record_id = record["id"]
        last = self.sid_v.get((sid, record_id))
        if last is not None and v < last:
            self.fail(
                OrderViolation, f"sid {sid!r} was sent v={v} of record {record_id} after v={last}", message
            )
        self.sid_v[sid, record_id] = v
        if socket:
            topic_key = (message["t"], record_id)
            last = self.socket_v.get(topic_key)
            if last is not None and v < last:
                self.fail(
                    OrderViolation, f"the socket was sent v={v} of record {record_id} after v={last}", message
                )
            self.socket_v[topic_key] = v

    def check_acks(self) -> None:
        """Every command with a cid got exactly one processed ack."""
        for cid in self.cids:
            got = self.acks.get(cid, [])
            if len(got) != 1:
                raise AckViolation(f"client {self.name}: command {cid} got {len(got)} processed acks: {got}")
