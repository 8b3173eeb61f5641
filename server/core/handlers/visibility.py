"""Hidden views (docs/protocol.md, Hidden views): while a socket's page is not being looked at, each of its
subscriptions delivers at most one message per record per ``hidden_interval``, by the rules of
subscription conflation (final state, OOFs kept, in-then-out-then-in collapsed). Shown again, it
gets what is pending at once, so it goes out in one frame, and normal delivery resumes.

Only subscription messages wait: acks, heartbeats, ``unsubscribed`` and the snapshot of a
subscription made while hidden go out as always.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ..protocol.commands import Header, Visibility
from .acks import processed, received

if TYPE_CHECKING:
    from ..broker.broker import Broker
    from ..fanout.tx_frames import Released
    from ..session.session import Session


def set_visibility(broker: Broker, session: Session, header: Header, body: Visibility) -> None:
    received(session, header)
    interval = broker.config.server.hidden_interval_s if body.hidden else None
    if (interval is None) != (session.hidden_interval is None):
        session.hidden_interval = interval
        owed: list[Released] = []
        for subscription in list(session.subscriptions.values()):
            if subscription.closed or subscription.dropped:
                continue
            if interval is None:  # shown: what each held goes now, a transaction's as one block
                owed.append((subscription, *subscription.release(math.inf)))
            subscription.hide(interval)
            subscription.topic_ref.resort(session)
        broker.tx_frames.release(owed)
    processed(session, header)
