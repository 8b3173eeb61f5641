"""Whether the server keeps a topic, and which kept topics a name it does not keep is close to
(docs/protocol.md, Topics the server does not keep): the one rule behind every warning and
every ``invalid topic`` that names a topic, so a typo (``ordrs``) is named the same way by the
server's acks, its failure reasons, both clients and the dashboard.

A server that keeps no topic at all is a plain pub/sub server: no name is a typo there. Topic
names are matched literally (the protocol has no wildcard or regex topics), so no pattern can be
mistaken for a typo.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from difflib import get_close_matches
from typing import Any

from ..errors import INVALID_TOPIC, CommandError

MAX_NEAR = 3  # kept names offered as "did you mean"
MAX_LISTED = 10  # up to this many kept topics, all of them are named too
CUTOFF = 0.6  # difflib's similarity below which a kept name is not offered
MAX_REMEMBERED = 256  # names a KeptTopics remembers its answer for (a typo is sent again and again)
# What difflib may compare one name with: at most this many configured names, and characters
# (its length times theirs), so that what one command can make it cost stays bounded (2.5 ms at
# most, measured), whatever names a client sends. Past either (a server with thousands of topics,
# or long names) only equality but for case and spaces is offered.
MAX_CANDIDATES = 1000
MAX_COMPARED = 200_000


@dataclass(frozen=True, slots=True)
class Unkept:
    """A topic name the server does not keep: the kept names close to it, closest first, and
    every kept name when there are at most ``MAX_LISTED`` (else none, and ``count`` says how many)."""

    topic: str
    near: tuple[str, ...]
    listed: tuple[str, ...]
    count: int

    @property
    def hint(self) -> str:
        """``did you mean 'orders'? (configured: ledger, orders)``: what the server's words end with."""
        listed = ", ".join(self.listed)
        kept = f"configured: {listed}" if self.listed else f"{self.count} topics are configured"
        if not self.near:
            return f"no configured topic is close to it ({kept})"
        names = " or ".join(repr(name) for name in self.near)
        return f"did you mean {names}? ({kept})"

    def fields(self) -> dict[str, Any]:
        """What an ack or ``group_end`` carries besides the server's words: the configured names
        close to the topic, and every configured name when they are few."""
        fields: dict[str, Any] = {"did_you_mean": list(self.near)}
        if self.listed:
            fields["configured_topics"] = list(self.listed)
        return fields

    def warning(self, what: str) -> dict[str, Any]:
        """The fields of a command that succeeded on this topic: ``warning`` (the server's words,
        ``what`` saying what plain pub/sub meant for this command), ``pubsub``, the topic ``t``
        (a persisted ack names no command: its publisher tells the topic by it) and ``fields()``."""
        sentence = (
            f"unconfigured topic: {self.topic!r} is not a configured topic of this server, so it is "
            f"plain pub/sub ({what}); {self.hint}"
        )
        return {"warning": sentence, "pubsub": True, "t": self.topic, **self.fields()}


def unkept(topic: str, kept: Iterable[str]) -> Unkept | None:
    """None when the server keeps ``topic`` or keeps no topic at all; otherwise what is near it:
    first the kept names equal to it but for case and surrounding spaces, then difflib's close
    matches (compared without case, within ``MAX_COMPARED``), at most ``MAX_NEAR``."""
    names = sorted(set(kept))
    if not names or topic in names:
        return None
    folded = topic.strip().casefold()
    near = [name for name in names if name.casefold() == folded]
    by_folded: dict[str, list[str]] = {}
    for name in names:
        by_folded.setdefault(name.casefold(), []).append(name)
    if len(by_folded) <= MAX_CANDIDATES and len(folded) * sum(map(len, by_folded)) <= MAX_COMPARED:
        for match in get_close_matches(folded, list(by_folded), n=MAX_NEAR, cutoff=CUTOFF):
            near += [name for name in by_folded[match] if name not in near]
    listed = tuple(names) if len(names) <= MAX_LISTED else ()
    return Unkept(topic, tuple(near[:MAX_NEAR]), listed, len(names))


def no_sow(topic: str, unkept: Unkept | None) -> CommandError:
    """``invalid topic`` for a command that needs a SOW (``sow``, ``sow_delete``, an aggregated
    view) on a topic that has none, with the configured names close to it."""
    if unkept is None:
        return CommandError(INVALID_TOPIC, f"{topic!r} has no SOW (it is not a configured topic)")
    return CommandError(
        INVALID_TOPIC, f"{topic!r} has no SOW: it is not a configured topic; {unkept.hint}", unkept.fields()
    )


class KeptTopics:
    """The topics one server keeps (its configured ones), answering ``unkept`` for a name; a
    name it keeps costs one set lookup, and the answers for names it does not keep are
    remembered (a feed publishing to a typo asks for the same name on every publish)."""

    def __init__(self, names: Iterable[str]) -> None:
        self.names = frozenset(names)
        self._answers: dict[str, Unkept | None] = {}

    def __contains__(self, topic: object) -> bool:
        return topic in self.names

    def unkept(self, topic: str) -> Unkept | None:
        if topic in self.names or not self.names:
            return None
        answers = self._answers
        if topic in answers:
            return answers[topic]
        if len(answers) >= MAX_REMEMBERED:
            answers.clear()  # bounded: a client sending ever new names cannot grow it
        answer = answers[topic] = unkept(topic, self.names)
        return answer
