"""Which topics a server keeps, and what a name it does not keep is close to (settings/unkept.py):
the one rule behind every typo the server names (docs/protocol.md, Topics the server does not keep)."""

from __future__ import annotations

import pytest

from server.core.settings.unkept import (
    MAX_CANDIDATES,
    MAX_COMPARED,
    MAX_LISTED,
    MAX_REMEMBERED,
    KeptTopics,
    Unkept,
    no_sow,
    unkept,
)

KEPT = ["orders", "ledger", "positions"]


def near(name: str, kept: list[str]) -> tuple[str, ...]:
    found = unkept(name, kept)
    assert found is not None
    return found.near


@pytest.mark.parametrize(
    ("name", "near"),
    [
        ("ordrs", ("orders",)),  # a letter dropped
        ("oredrs", ("orders",)),  # two swapped
        ("Orders", ("orders",)),  # case
        ("ORDERS", ("orders",)),
        (" orders ", ("orders",)),  # spaces around it
        ("position", ("positions",)),
        ("weather", ()),  # nothing close
    ],
)
def test_a_name_it_does_not_keep_gets_the_kept_names_close_to_it(name: str, near: tuple[str, ...]) -> None:
    found = unkept(name, KEPT)
    assert found is not None
    assert found.topic == name and found.near == near
    assert found.listed == ("ledger", "orders", "positions") and found.count == 3


def test_a_kept_name_and_a_server_that_keeps_none_are_not_typos() -> None:
    assert unkept("orders", KEPT) is None
    assert unkept("ordrs", []) is None  # a plain pub/sub server: every topic is plain


def test_equal_but_for_case_comes_first_then_the_closest() -> None:
    found = unkept("ORDER", ["order", "orders", "Order_book", "border"])
    assert found is not None
    assert found.near[0] == "order" and len(found.near) == 3


def test_what_one_name_may_cost_is_bounded_whatever_names_are_configured() -> None:
    # Past the bound difflib is not asked (its cost grows with both lengths); equality but for
    # case still is.
    long = [f"{n:03}" + "x" * 250 for n in range(MAX_COMPARED // (253 * 200) + 1)]
    name = "000" + "x" * 249
    assert len(name) * sum(map(len, long)) > MAX_COMPARED
    assert near(name, long) == ()
    assert near(long[0].upper(), long) == (long[0],)
    assert near(name, long[:2])[0] == long[0]  # two of them: under the bound, difflib offers the closest
    many = [f"topic_{n}" for n in range(MAX_CANDIDATES + 1)]
    assert near("topic_1x", many) == ()
    assert near("topic_1x", many[:MAX_CANDIDATES])[0] == "topic_1"


def test_every_kept_name_is_listed_only_when_they_are_few() -> None:
    many = [f"topic_{n:02}" for n in range(MAX_LISTED + 1)]
    found = unkept("topic_1", many)
    assert found is not None and found.listed == () and found.count == MAX_LISTED + 1
    assert found.hint.endswith(f"({MAX_LISTED + 1} topics are configured)")
    assert "configured_topics" not in found.fields()
    few = unkept("topic_1", many[:MAX_LISTED])
    assert few is not None and len(few.listed) == MAX_LISTED


def test_the_servers_words_name_the_topic_the_near_names_and_the_kept_ones() -> None:
    found = unkept("ordrs", KEPT)
    assert found is not None
    assert found.hint == "did you mean 'orders'? (configured: ledger, orders, positions)"
    warning = found.warning("what it meant")
    assert warning == {
        "warning": "unconfigured topic: 'ordrs' is not a configured topic of this server, so it is "
        "plain pub/sub (what it meant); did you mean 'orders'? (configured: ledger, orders, positions)",
        "pubsub": True,
        "t": "ordrs",
        "did_you_mean": ["orders"],
        "configured_topics": ["ledger", "orders", "positions"],
    }
    far = unkept("weather", KEPT)
    assert (
        far is not None
        and far.hint == "no configured topic is close to it (configured: ledger, orders, positions)"
    )
    assert Unkept("a b", ("ab", "ba"), (), 40).hint == "did you mean 'ab' or 'ba'? (40 topics are configured)"


def test_a_command_that_needs_a_sow_says_the_same() -> None:
    error = no_sow("ordrs", unkept("ordrs", KEPT))
    assert error.reason == (
        "invalid topic: 'ordrs' has no SOW: it is not a configured topic; "
        "did you mean 'orders'? (configured: ledger, orders, positions)"
    )
    assert error.fields == {
        "did_you_mean": ["orders"],
        "configured_topics": ["ledger", "orders", "positions"],
    }
    assert no_sow("news", None).reason == "invalid topic: 'news' has no SOW (it is not a configured topic)"


def test_the_servers_kept_topics_answer_the_same_and_remember_a_bounded_number() -> None:
    kept = KeptTopics(KEPT)
    assert "orders" in kept and "ordrs" not in kept
    assert kept.unkept("orders") is None
    assert kept.unkept("ordrs") == unkept("ordrs", KEPT)
    assert kept.unkept("ordrs") is kept.unkept("ordrs")  # remembered: a feed's typo on every publish
    for n in range(3 * MAX_REMEMBERED):
        kept.unkept(f"name{n}")
    assert len(kept._answers) <= MAX_REMEMBERED
    assert KeptTopics([]).unkept("anything") is None
