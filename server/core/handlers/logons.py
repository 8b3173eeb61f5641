"""``logon``: who a socket is (docs/protocol.md, Commands and Who may connect), and the client names
that belong to users.

A socket's identity is fixed by its first logon. A client name has one connection in the server;
with ``[auth]`` it belongs to the user that first used it, across restarts (logged as an entry of
its own, before any of the name's sequences).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ..broker.changelog import NameClaim
from ..errors import AUTH_FAILURE, BAD_MESSAGE, NAME_IN_USE, CommandError
from ..protocol.commands import Header, Logon
from ..protocol.options import parse_logon_options
from ..session.access import TOO_MANY_ATTEMPTS, WRONG_CREDENTIALS, authenticate
from ..session.session import CLOSE_NAME_IN_USE, CLOSE_POLICY, Session
from .acks import fail, processed, received

if TYPE_CHECKING:
    from ..broker.broker import Broker
    from ..settings.config import UserConfig

log = logging.getLogger("server.engine")


def logon(broker: Broker, session: Session, header: Header, body: Logon) -> None:
    parse_logon_options(body.options)  # refused before anything else
    if session.logged_on and (body.user_id, body.client_name) != (session.user_id, session.client_name):
        # A socket's identity is fixed: its subscriptions were entitled for it (docs/protocol.md,
        # Entitlements).
        raise CommandError(
            BAD_MESSAGE,
            f"this connection is logged on as user {session.user_id!r}, client name "
            f"{session.client_name!r}; open a new connection to log on as another",
        )
    users = broker.config.users
    try:
        user = None
        if users is not None:
            throttle, now = broker.logon_throttle, broker.clock()
            user = authenticate(users, throttle, body.user_id, body.password, session.peer, now)
        if body.client_name is not None:
            _check_client_name(broker, session, body.client_name, body.user_id)
    except CommandError as error:
        _refuse_logon(broker, session, header, body, error)
        return
    name = body.client_name
    claiming = name is not None and broker.client_names.get(name) is not session
    if claiming and broker.changes.claim_name(NameClaim(session, header, body, user)):
        return  # completed by ``claimed``, when the cluster answers
    complete(broker, session, header, body, user)


def claimed(broker: Broker, claim: NameClaim, refusal: CommandError | None) -> None:
    """The cluster answered a client name claim: complete the logon, or refuse it. A socket that
    went away meanwhile lets go of a name it was given."""
    session = claim.session
    if session.id not in broker.sessions:
        if refusal is None and claim.body.client_name is not None:
            broker.changes.release_name(claim.body.client_name, session)
    elif session.close_code is None:
        user = claim.user
        if refusal is None:
            user, refusal = _as_reloaded(broker, claim)
        if refusal is not None:
            _refuse_logon(broker, session, claim.header, claim.body, refusal)
        else:
            complete(broker, session, claim.header, claim.body, user)
    broker.settle()


def _as_reloaded(broker: Broker, claim: NameClaim) -> tuple[UserConfig | None, CommandError | None]:
    """The claim's user as ``[auth]`` is now: it may have been reloaded while the cluster answered
    (docs/protocol.md, Reloading entitlements). A user it no longer has is refused, and the name the
    cluster gave let go."""
    users = broker.config.users
    if users is None:
        return None, None
    user = users.get(claim.user.user_id) if claim.user is not None else None
    if user is not None:
        return user, None
    if claim.body.client_name is not None:
        broker.changes.release_name(claim.body.client_name, claim.session)
    return None, CommandError(AUTH_FAILURE, WRONG_CREDENTIALS)


def complete(broker: Broker, session: Session, header: Header, body: Logon, user: UserConfig | None) -> None:
    """The identity is checked (and, in a cluster, the name claimed): the socket is logged on."""
    if body.client_name is not None:
        _take_client_name(broker, session, body.client_name, body.user_id)
    elif session.client_name is not None:
        broker.free_name(session)
    session.user = user
    session.client_name = body.client_name
    session.user_id = body.user_id
    session.label = body.label
    session.logged_on = True
    session.outbox.conflation = parse_logon_options(body.options)
    received(session, header)
    fields: dict[str, Any] = {"bm": str(broker.changes.now_position())}
    if body.client_name is not None:
        # What is in the log (in a cluster: what Redis holds): what the publisher need not resend.
        fields["s"] = broker.durability.persisted_sequences.get(body.client_name, 0)
    processed(session, header, **fields)


def _refuse_logon(broker: Broker, session: Session, header: Header, body: Logon, error: CommandError) -> None:
    """A refused identity (docs/protocol.md, Messages from the server and Who may connect): the
    failure ack, then the socket closes with 1008."""
    if error.detail != TOO_MANY_ATTEMPTS:  # the block itself was logged once, by session/access.py
        log.warning(
            "logon refused (%s) for user %r, client name %.100r, from %s, session %s; closing it (1008)",
            error.reason,
            body.user_id,
            body.client_name,
            session.peer,
            session.id,
        )
    fail(session, header.cid, error)
    session.request_close(CLOSE_POLICY, error.code)


def _check_client_name(broker: Broker, session: Session, name: str, user_id: str | None) -> None:
    """``name in use`` when ``name`` belongs to another user: with ``[auth]``, the configured user
    that first used it, connected or not; without, only the user id of a connected holder."""
    users = broker.config.users
    owner = broker.name_owners.get(name)
    if users is not None and owner is not None and owner != user_id and owner in users:
        raise CommandError(NAME_IN_USE, f"client name {name!r} belongs to another user")
    holder = broker.client_names.get(name)
    if holder is not None and holder is not session and holder.user_id != user_id:
        raise CommandError(NAME_IN_USE, f"client name {name!r} is in use by another user")


def _take_client_name(broker: Broker, session: Session, name: str, user_id: str | None) -> None:
    """Give ``name`` to ``session`` (checked first): an older socket of the same user holding it is
    closed with 4002; with ``[auth]`` the name is the user's from now on."""
    if broker.config.users is not None and user_id is not None and broker.name_owners.get(name) != user_id:
        broker.record_owner(name, user_id)
        # Alone, in the log (before any sequence of the name); a cluster's claim put it in Redis.
        broker.changes.log_owner(name, user_id)
    holder = broker.client_names.get(name)
    if holder is not None and holder is not session:
        holder.request_close(CLOSE_NAME_IN_USE, "client name in use")
        broker.close_session(holder)
    if session.client_name != name:
        broker.free_name(session)
    broker.give_name(name, session)
