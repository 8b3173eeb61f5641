"""``logon``: who a socket is (PROTOCOL 4, 6.4, 6.7), and the client names that belong to users.

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
from ..sow.txlog import OWNER, LogEntry

if TYPE_CHECKING:
    from ..engine import Engine
    from ..settings.config import UserConfig

log = logging.getLogger("server.engine")


def logon(engine: Engine, session: Session, header: Header, body: Logon) -> None:
    parse_logon_options(body.options)  # refused before anything else
    if session.logged_on and (body.user_id, body.client_name) != (session.user_id, session.client_name):
        # A socket's identity is fixed: its subscriptions were entitled for it (PROTOCOL 6.2).
        raise CommandError(
            BAD_MESSAGE,
            f"this connection is logged on as user {session.user_id!r}, client name "
            f"{session.client_name!r}; open a new connection to log on as another",
        )
    users = engine.config.users
    try:
        user = None
        if users is not None:
            throttle, now = engine.logon_throttle, engine.clock()
            user = authenticate(users, throttle, body.user_id, body.password, session.peer, now)
        if body.client_name is not None:
            _check_client_name(engine, session, body.client_name, body.user_id)
    except CommandError as error:
        _refuse_logon(engine, session, header, body, error)
        return
    shared = engine.shared
    name = body.client_name
    if shared is not None and name is not None and engine.client_names.get(name) is not session:
        shared.claim(NameClaim(session, header, body, user))  # completed by ``claimed``
        return
    complete(engine, session, header, body, user)


def claimed(engine: Engine, claim: NameClaim, refusal: CommandError | None) -> None:
    """The cluster answered a client name claim: complete the logon, or refuse it. A socket that
    went away meanwhile lets go of a name it was given."""
    session = claim.session
    if session.id not in engine.sessions:
        if refusal is None and engine.shared is not None and claim.body.client_name is not None:
            engine.shared.release(claim.body.client_name, session)
    elif session.close_code is None:
        user = claim.user
        if refusal is None:
            user, refusal = _as_reloaded(engine, claim)
        if refusal is not None:
            _refuse_logon(engine, session, claim.header, claim.body, refusal)
        else:
            complete(engine, session, claim.header, claim.body, user)
    engine.settle()


def _as_reloaded(engine: Engine, claim: NameClaim) -> tuple[UserConfig | None, CommandError | None]:
    """The claim's user as ``[auth]`` is now: it may have been reloaded while the cluster answered
    (PROTOCOL 6.8). A user it no longer has is refused, and the name the cluster gave let go."""
    users = engine.config.users
    if users is None:
        return None, None
    user = users.get(claim.user.user_id) if claim.user is not None else None
    if user is not None:
        return user, None
    if engine.shared is not None and claim.body.client_name is not None:
        engine.shared.release(claim.body.client_name, claim.session)
    return None, CommandError(AUTH_FAILURE, WRONG_CREDENTIALS)


def taken_elsewhere(engine: Engine, name: str, holder: str) -> None:
    """Another socket of the cluster now holds ``name``: the one here, if any, is closed (4002)."""
    shared = engine.shared
    local = engine.client_names.get(name)
    if shared is not None and local is not None and shared.holder(local) != holder:
        local.request_close(CLOSE_NAME_IN_USE, "client name in use")
        engine.close_session(local)
        engine.settle()


def complete(engine: Engine, session: Session, header: Header, body: Logon, user: UserConfig | None) -> None:
    """The identity is checked (and, in a cluster, the name claimed): the socket is logged on."""
    if body.client_name is not None:
        _take_client_name(engine, session, body.client_name, body.user_id)
    elif session.client_name is not None:
        _release_client_name(engine, session)
    session.user = user
    session.client_name = body.client_name
    session.user_id = body.user_id
    session.logged_on = True
    session.outbox.conflation = parse_logon_options(body.options)
    engine.received(session, header)
    fields: dict[str, Any] = {}
    if body.client_name is not None:
        persisted = engine.durability.persisted_sequences  # in a cluster: what Redis holds
        sequences = persisted if engine.shared is None else engine.sequences
        fields["s"] = sequences.get(body.client_name, 0)
    engine.processed(session, header, **fields)


def _refuse_logon(engine: Engine, session: Session, header: Header, body: Logon, error: CommandError) -> None:
    """A refused identity (PROTOCOL 5, 6.7): the failure ack, then the socket closes with 1008."""
    if error.detail != TOO_MANY_ATTEMPTS:  # the block itself was logged once, by session/access.py
        log.warning(
            "logon refused (%s) for user %r, client name %.100r, from %s, session %s; closing it (1008)",
            error.reason,
            body.user_id,
            body.client_name,
            session.peer,
            session.id,
        )
    engine.fail(session, header.cid, error)
    session.request_close(CLOSE_POLICY, error.code)


def _check_client_name(engine: Engine, session: Session, name: str, user_id: str | None) -> None:
    """``name in use`` when ``name`` belongs to another user: with ``[auth]``, the configured user
    that first used it, connected or not; without, only the user id of a connected holder."""
    users = engine.config.users
    owner = engine.name_owners.get(name)
    if users is not None and owner is not None and owner != user_id and owner in users:
        raise CommandError(NAME_IN_USE, f"client name {name!r} belongs to another user")
    holder = engine.client_names.get(name)
    if holder is not None and holder is not session and holder.user_id != user_id:
        raise CommandError(NAME_IN_USE, f"client name {name!r} is in use by another user")


def _take_client_name(engine: Engine, session: Session, name: str, user_id: str | None) -> None:
    """Give ``name`` to ``session`` (checked first): an older socket of the same user holding it is
    closed with 4002; with ``[auth]`` the name is the user's from now on."""
    if engine.config.users is not None and user_id is not None and engine.name_owners.get(name) != user_id:
        _record_owner(engine, name, user_id)
    holder = engine.client_names.get(name)
    if holder is not None and holder is not session:
        holder.request_close(CLOSE_NAME_IN_USE, "client name in use")
        engine.close_session(holder)
    if session.client_name != name:
        _release_client_name(engine, session)
    engine.client_names[name] = session


def _release_client_name(engine: Engine, session: Session) -> None:
    if session.client_name is not None and engine.client_names.get(session.client_name) is session:
        del engine.client_names[session.client_name]


def _record_owner(engine: Engine, name: str, user_id: str) -> None:
    engine.name_owners[name] = user_id
    # A cluster's owners are in Redis (the claim recorded it there); alone, in the log.
    if engine.shared is None and any(topic.durable for topic in engine.config.topics):
        # Logged like a sequence, and before any sequence of the name: whatever a restart
        # remembers of the name's publishes, it remembers whose name it is.
        engine.log(
            LogEntry(engine.next_apply_seq(), OWNER, "", "", user_id, name, None, engine.clock(), None)
        )
