"""A cluster node's side of the shared log: apply what the log holds, ack what this node proposed.

The runtime reads every stream in order and hands each entry to ``apply``; it sends this node's
proposals and reports what Redis answered to ``answered``. A proposal is acked once Redis took it
and this node applied all of it (docs/protocol.md, Cluster: ``processed`` means in the log and applied here).
The runtime (runtime/redis_*.py) builds one ``Replica`` for the broker and the shared log it
built, and reports here what Redis says, after which it drains the core as after any call.
A proposal decided against a record version that another node has replaced since is decided
again, on the newer version, once this node has applied it (``retry``): a delta publish always
merges into the record it will replace, whichever node it came from.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ..broker.applying import apply_change, apply_transaction
from ..broker.changelog import PLAIN_STREAM, Proposal
from ..errors import UNAVAILABLE, CommandError
from ..handlers import publishing, transactions
from ..handlers.acks import ack_applied, ack_duplicate, fail
from ..protocol.commands import Publish, SowDelete
from ..session.session import CLOSE_NAME_IN_USE
from ..sow.txlog import TX, LogEntry, changed_topics
from .shared import CONFLICT, DUPLICATE, GONE, SharedLog

if TYPE_CHECKING:
    from ..broker.broker import Broker

log = logging.getLogger("server.cluster")

MAX_RETRIES = 20  # a record changed by other nodes this many times while one delta was decided


class Replica:
    """What the shared log brings back, applied to the broker; what Redis answers, acked."""

    def __init__(self, broker: Broker, shared: SharedLog) -> None:
        self.broker = broker
        self.shared = shared

    def apply(self, stream: str, entry: LogEntry, origin: str) -> None:
        """Apply one stream entry (numbered by its ID) and fan it out; ack its proposal when it is ours."""
        broker, shared = self.broker, self.shared
        name, seq = entry.client_name, entry.seq
        if name is not None and seq is not None:
            broker.accept_sequence(name, seq, logged=True)  # Redis holds it: persisted
        if entry.op == TX:
            apply_transaction(broker.topics.get, entry, broker.timers, broker.tx_frames)
        else:
            topic = broker.topics.get(entry.topic if stream == PLAIN_STREAM else stream)
            if topic is not None and (stream != PLAIN_STREAM or topic.config is None):
                apply_change(topic, entry, broker.timers)
        shared.positions[stream] = entry.lsn
        shared.applied += 1
        token = shared.own_token(origin)
        proposal = shared.pending.get(token) if token is not None else None
        if proposal is not None:
            # In a cluster a change is persisted once Redis holds it and this node applied it.
            now = broker.clock()
            for changed_name in changed_topics(entry):
                if (changed := broker.topics.get(changed_name)) is not None:
                    changed.latency.persisted.observe(now - entry.timestamp)
            proposal.waiting -= 1
            if proposal.waiting == 0:
                self.done(proposal)

    def answered(self, proposal: Proposal, outcome: str, detail: str, appended: int) -> None:
        """What the Redis script said of ``proposal``: ``appended`` entries are in the stream (OK),
        or it was a duplicate, decided against a replaced version (CONFLICT), or an expiry of a
        version that is gone already (GONE)."""
        shared = self.shared
        if outcome == DUPLICATE:
            assert proposal.session is not None and proposal.header is not None and proposal.seq is not None
            ack_duplicate(self.broker, proposal.session, proposal.header, proposal.seq)
            shared.settle(proposal)
        elif outcome in (CONFLICT, GONE):
            shared.pending.pop(proposal.token, None)  # decided again (retry), or nothing to do
            shared.conflicts += outcome == CONFLICT
            if outcome == GONE:
                shared.settle(proposal)
        else:
            # The entries may have come back through the stream before Redis's answer did.
            proposal.waiting += appended
            if proposal.waiting == 0:
                self.done(proposal)
        self.broker.settle()

    def refused(self, proposal: Proposal, why: str) -> None:
        """Redis could not be reached: the command fails with ``unavailable`` and nothing of it is
        applied (an expiry is tried again in a second)."""
        broker = self.broker
        self.shared.settle(proposal)
        if proposal.session is None:
            for entry in proposal.entries:
                broker.timers.expire_at(entry.topic, entry.key, broker.clock() + 1.0)
            return
        if proposal.header is not None:
            fail(proposal.session, proposal.header.cid, CommandError(UNAVAILABLE, why), proposal.seq)
            broker.settle()

    def retry(self, proposal: Proposal) -> None:
        """Decide a conflicted proposal again, on the record version this node has now applied."""
        broker = self.broker
        session, header, body = proposal.session, proposal.header, proposal.body
        self.shared.settle(proposal)
        if session is None or header is None or session.close_code is not None:
            return
        retries = proposal.retries + 1
        if proposal.retries >= MAX_RETRIES or body is None:
            log.warning("a change to %r conflicted %d times; refusing it", proposal.topic, proposal.retries)
            fail(session, header.cid, CommandError(UNAVAILABLE, "the record kept changing"), proposal.seq)
        else:
            try:
                if isinstance(body, Publish):
                    publishing.publish(broker, session, header, body, retries=retries)
                elif isinstance(body, SowDelete):
                    publishing.sow_delete(broker, session, header, body, retries=retries)
                else:
                    transactions.transact(broker, session, header, body, retries=retries)
            except CommandError as error:  # the record changed so that it is refused now
                fail(session, header.cid, error, proposal.seq)
        broker.settle()

    def done(self, proposal: Proposal) -> None:
        """The proposal is in the log and applied here: its acks."""
        self.shared.settle(proposal)
        session, header = proposal.session, proposal.header
        if session is None or header is None:
            return
        if header.acks or header.cid is not None:
            ack_applied(self.broker, session, header, proposal.seq, None, proposal.notice, **proposal.fields)

    def taken_elsewhere(self, name: str, holder: str) -> None:
        """Another socket of the cluster now holds client name ``name``: the one here, if any, is
        closed (4002), as one server closes the older of two sockets with one name."""
        broker = self.broker
        local = broker.client_names.get(name)
        if local is not None and self.shared.holder(local) != holder:
            local.request_close(CLOSE_NAME_IN_USE, "client name in use")
            broker.close_session(local)
            broker.settle()
