"""Strategies for filter texts, order-by lists, options and select lists, grammatical and mutated."""

from __future__ import annotations

import re

from hypothesis import strategies as st

from server.core.filters.functions import FUNCTIONS
from tests.fuzzing.values import text_values

_TEMPLATE = re.compile(r"«(.+?)\*(\d+)»")


def expand(text: str) -> str:
    """``«x*5000»`` written out: big literals stay small in the strategies' reprs."""
    return _TEMPLATE.sub(lambda match: match.group(1) * int(match.group(2)), text)


PATH_TEXTS = (
    "/a",
    "/b",
    "/order",
    "/qty",
    "/px",
    "/s",
    "/customer",
    "/a/b",
    "/a[0]",
    "/legs/qty",
    "/legs[1]/qty",
    "[/name with spaces]",
    "/buyer/id",
    "/x9$@",
)
NUMBER_TEXTS = st.sampled_from(
    [
        "0",
        "1",
        "-1",
        "2.5",
        ".5",
        "6.022E23",
        "1e999",
        "1e-999",
        "9223372036854775808",
        "«1*400»",
        "«9*4301»",  # past CPython's int() digit limit
        "0.000001",
        "1E308",
    ]
).map(expand)
REGEX_TEXTS = st.one_of(
    st.sampled_from(
        [
            "^a",
            "a$",
            "(?i)ab",
            "(.*a){20}",
            "(a+)+$",
            "«(*300»a«)*300»",
            "«(*5000»a«)*5000»",
            "a{1000}{1000}",
            "a{1001}",
            "(x{1000}){1000}",
            "\\p{L}+",
            "[[:alpha:]]",
            "(?P<n>a)(?P=n)",
            "\\1",
            "[",
            "(?<!a)b",
            "\\",
            "\x00",
            "é+",
        ]
    ).map(expand),
    st.text(alphabet="ab.*+?()[]{}|^$\\d0123456789,-:iP<>=!", max_size=20),
)


def _quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


string_literals = st.one_of(
    st.builds(_quote, text_values),
    st.sampled_from(["''", '""', "'\\'", "'it''s'", "'a\\n'", "'«z*70000»'", "'unclosed"]).map(expand),
)
atoms = st.one_of(
    st.sampled_from(PATH_TEXTS),
    NUMBER_TEXTS,
    string_literals,
    st.sampled_from(["NULL", "TRUE", "FALSE", "null", "True"]),
)
function_names = st.sampled_from([*sorted(FUNCTIONS), "NOPE", "upper", "SUM"])


def _call(name: str, args: list[str]) -> str:
    return f"{name}({', '.join(args)})"


def _extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    comparison = st.sampled_from(["=", "==", "!=", "<>", "<", "<=", ">", ">="])
    arithmetic = st.sampled_from(["+", "-", "*", "/", "%"])
    logical = st.sampled_from(["AND", "OR", "and", "or"])
    negated = st.sampled_from(["", "NOT "])
    items = st.lists(inner, min_size=1, max_size=4).map(", ".join)
    return st.one_of(
        st.builds(lambda a, op, b: f"{a} {op} {b}", inner, comparison, inner),
        st.builds(lambda a, op, b: f"{a} {op} {b}", inner, arithmetic, inner),
        st.builds(lambda a, op, b: f"{a} {op} {b}", inner, logical, inner),
        st.builds(lambda a: f"NOT {a}", inner),
        st.builds(lambda a: f"-{a}", inner),
        st.builds(lambda a: f"({a})", inner),
        st.builds(lambda a, n, lo, hi: f"{a} {n}BETWEEN {lo} AND {hi}", inner, negated, inner, inner),
        st.builds(lambda a, n, xs: f"{a} {n}IN ({xs})", inner, negated, items),
        st.builds(lambda a, n, p: f"{a} {n}LIKE {_quote(p)}", inner, negated, REGEX_TEXTS),
        st.builds(lambda a, n, xs: f"{a} {n}BEGINS WITH ({xs})", inner, negated, items),
        st.builds(lambda a, n, xs: f"{a} {n}ENDS WITH ({xs})", inner, negated, items),
        st.builds(lambda a, n: f"{a} IS {n}NULL", inner, negated),
        st.builds(_call, function_names, st.lists(inner, max_size=4)),
        st.builds(
            lambda p, a, b: f"REGEXP_REPLACE({p}, {_quote(a)}, {_quote(b)})",
            inner,
            REGEX_TEXTS,
            st.sampled_from(["", "x", "\\1", "\\9", "\\0", "$1", "\\\\", "xxxxxxxx"]),
        ),
        st.builds(
            lambda n, a: "REPLACE(" * n + a + ", 'x', 'xxxxxxxx')" * n,
            st.integers(1, 8),
            inner,
        ),
        st.builds(lambda n, a: "(" * n + a + ")" * n, st.sampled_from([50, 99, 101, 1000, 20_000]), inner),
        st.builds(lambda a, n: f"ROUND({a}, {n})", inner, NUMBER_TEXTS),
    )


grammar_filters = st.recursive(atoms, _extend, max_leaves=8)


@st.composite
def mutated(draw: st.DrawFn, base: st.SearchStrategy[str]) -> str:
    """``base`` with a few characters inserted, deleted or replaced: the parser's error paths."""
    text = draw(base)
    for _ in range(draw(st.integers(0, 3))):
        position = draw(st.integers(0, len(text)))
        action = draw(st.sampled_from(["insert", "delete", "replace"]))
        char = draw(st.sampled_from([*"()[]'\"/,\\ =<>!-+*%.0eE", "AND", "NOT", "IN", "é", "\x00"]))
        if action == "insert":
            text = text[:position] + char + text[position:]
        elif action == "delete":
            text = text[:position] + text[position + 1 :]
        else:
            text = text[:position] + char + text[position + 1 :]
    return text


filter_texts = st.one_of(
    grammar_filters,
    mutated(grammar_filters),
    st.text(alphabet="/ab()[]'\",=<>!-+*%.0123456789eE ANDORNTILKE", max_size=40),
    st.text(max_size=20),
)
orderby_texts = st.one_of(
    st.lists(
        st.builds(
            lambda path, direction: f"{path}{direction}",
            st.sampled_from([*PATH_TEXTS, "", "qty", "/", "//a", "/a[", "/a[99999999999999999999]"]),
            st.sampled_from(["", " ASC", " DESC", " desc", " UP", ","]),
        ),
        min_size=1,
        max_size=4,
    ).map(", ".join),
    mutated(st.sampled_from(["/qty DESC, /px", "/order", "[/name with spaces] ASC"])),
    st.text(max_size=20),
)
select_texts = st.one_of(
    st.lists(
        st.builds(
            lambda sign, path: sign + path,
            st.sampled_from(["+", "-", "", "*", "+ "]),
            st.sampled_from([*PATH_TEXTS, "/", "", "/a/", "/a[0]", "/a//b"]),
        ),
        min_size=0,
        max_size=5,
    ).map(",".join),
    st.text(max_size=15),
)
DURATIONS = [
    "250ms",
    "1s",
    "0s",
    "0ms",
    "100000h",
    "1e3s",
    "1.5m",
    "-1s",
    "99999999999999999999999h",
    "s",
    "",
]
option_items = st.one_of(
    st.sampled_from(
        [
            "oof",
            "no_empties",
            "no_sowkey",
            "send_keys",
            "send_keys=false",
            "send_keys=maybe",
            "timestamp",
            "replace",
            "resume",
            "positions",
            "delta=patch",
            "delta=merge",
            "delta=",
            "oof=1",
            "unknown",
            "=",
            "top_n=",
            "top_n=-1",
            "top_n=99999999999999999999999",
            "skip_n=0",
            "conflation_key=[/id]",
            "conflation_key=[/a,/b[0]]",
            "conflation_key=[]",
            "conflation_key=/id",
            "select=[",
            "select=]",
            "select=[[]]",
            "select=[-/,+/id]",
        ]
    ),
    st.builds(lambda d: f"conflation={d}", st.sampled_from(DURATIONS)),
    st.builds(lambda n: f"top_n={n}", st.integers(0, 10**6)),
    st.builds(lambda s: f"select=[{s}]", select_texts),
    st.builds(lambda s: f"conflation_key=[{s}]", select_texts),
)
option_texts = st.one_of(
    st.lists(option_items, max_size=5).map(", ".join),
    mutated(st.sampled_from(["oof,select=[-/,+/id],conflation=250ms", "top_n=5, skip_n=2"])),
    st.text(max_size=20),
    st.builds(lambda n: ",".join(["oof"] * n), st.sampled_from([1000, 100_000])),
)
