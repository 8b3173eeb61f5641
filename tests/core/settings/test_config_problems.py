"""A configuration file's problems are said all at once, in one line, each naming its key the one
way it is named everywhere (``topic 'orders'``), with the known key a typo is most likely of."""

from __future__ import annotations

import pytest

from server.core.errors import ConfigError
from server.core.settings.config import parse_config


def problems_of(document: dict[str, object]) -> str:
    with pytest.raises(ConfigError) as raised:
        parse_config(document)
    return str(raised.value)


def test_every_problem_in_one_line_with_did_you_mean() -> None:
    said = problems_of(
        {
            "sever": {"port": 1},
            "server": {"prot": 8000, "heartbeat_s": -1},
            "topic": [
                {"name": "orders", "key": ["/order"], "expiraton": "30s"},
                {"name": "quotes", "conflation": "sometimes", "key": ["/sym"]},
                {"key": ["/id"]},
            ],
            "auth": {"user": [{"user_id": "ann", "pasword": "x"}]},
        }
    )
    assert "\n" not in said
    assert said.startswith("8 problems: ")
    for problem in (
        "sever: unknown key (did you mean server?)",
        "server.prot: unknown key (did you mean port?)",
        "server.heartbeat_s: must be positive, got -1",
        "topic 'orders'.expiraton: unknown key (did you mean expiration?)",
        "topic 'quotes'.conflation: expected one of",
        "topic[2].name: a topic needs a name",
        "auth.user[0].pasword: unknown key (did you mean password?)",
        "auth.user[0]: give exactly one of password and password_sha256",
    ):
        assert problem in said, (problem, said)


def test_one_problem_is_said_alone_and_a_far_typo_gets_no_guess() -> None:
    assert problems_of({"server": {"zzz": 1}}) == "server.zzz: unknown key"


def test_a_topic_is_named_by_its_name_in_every_problem() -> None:
    said = problems_of({"topic": [{"name": "orders", "key": ["/order"], "bogus": 1, "durable": "yes"}]})
    assert (
        said
        == "2 problems: topic 'orders'.bogus: unknown key; topic 'orders'.durable: expected bool, got 'yes'"
    )


def test_two_topics_of_one_name_and_a_bad_one_are_both_said() -> None:
    said = problems_of(
        {"topic": [{"name": "a", "key": ["/id"]}, {"name": "a", "key": ["/id"]}, {"name": "b", "key": 5}]}
    )
    assert "topic: two topics are named 'a'" in said and "topic 'b'.key" in said


def test_the_count_is_of_the_problems_said_when_one_table_has_several_unknown_keys() -> None:
    # Two typos in [server] are two problems, not one: the count and the list are the one list.
    said = problems_of(
        {"server": {"prot": 8000, "hots": "0.0.0.0"}, "topic": [{"name": "a", "key": ["/id"], "bogus": 1}]}
    )
    count, listed = said.split(": ", 1)
    assert count == "3 problems"
    assert listed.split("; ") == [
        "server.prot: unknown key (did you mean port?)",
        "server.hots: unknown key (did you mean host?)",
        "topic 'a'.bogus: unknown key",
    ]
    # Alone, two unknown keys of one table are still counted as two.
    assert problems_of({"server": {"prot": 1, "hots": 2}}).startswith("2 problems: server.prot")
