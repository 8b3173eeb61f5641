"""Fuzz the frame decoder, the command validator and the filter language for minutes (issue 10).

    .venv/bin/python bench/fuzz.py                      # 5 minutes over every target
    .venv/bin/python bench/fuzz.py --minutes 20 --target frames --target filters
    .venv/bin/python bench/fuzz.py --examples 500       # a fixed number of examples per target
    .venv/bin/python bench/fuzz.py --atheris 0.25       # a quarter of the time: atheris on raw bytes
    .venv/bin/python bench/fuzz.py --minutes 10 --target hostile   # the hostile model, for longer

Targets (strategies and properties live in tests/fuzzing/, shared with tests/core/test_fuzz.py):
frames (Engine.receive with hostile frames, floods, raw bytes and clock ticks), commands
(decode_header / decode_body), filters (compile_filter and evaluation), orderby, options, select.
With ``--atheris`` (when the ``atheris`` package is installed) part of the time goes to a
coverage-guided byte-level run of the frame decoder in a child process. The target ``hostile`` is
the hostile model against a real server (tests/integration/hostile_model.py: every command with
its fields at their extremes, a victim socket's round trip and the server's memory watched),
round after round with a new seed each, where the suite runs one round of one seed.

Hypothesis shrinks every failure to a minimal example; the script prints each distinct failure
once (its property, the falsifying example) and keeps fuzzing for others: a failure already
reported is treated as a pass afterwards. Exit status 1 when anything failed.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as fix_seed
from hypothesis.internal.conjecture import engine as hypothesis_engine

try:
    import atheris  # type: ignore[import-untyped]
except ImportError:  # optional: only for --atheris
    atheris = None

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # run as a script: the repository root holds tests/fuzzing/

from tests.fuzzing import SEED_FRAMES, EngineRig, RawFrame, targets  # noqa: E402

SHRINK_SECONDS = 60


@dataclass
class Failure:
    target: str
    signature: str
    message: str
    example: str


@dataclass
class Tally:
    examples: int = 0
    seconds: float = 0.0
    failures: list[Failure] = field(default_factory=list)


def signature(error: BaseException) -> str:
    """What makes two failures the same bug: where it was raised, or the property's first words."""
    text = str(error)
    located = re.search(r"(\w+(?:Error|Exception))\b[^\n]*\n\s*raised at ([^\n]+)", text)
    if located:
        return f"{located.group(1)} at {located.group(2)}"
    if error.__cause__ is not None:
        cause = error.__cause__
        tb = cause.__traceback__
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        if tb is not None:
            where = f"{Path(tb.tb_frame.f_code.co_filename).name}:{tb.tb_lineno}"
            return f"{type(cause).__name__} at {where}"
    first = text.splitlines()[0] if text else type(error).__name__
    first = re.sub(r"\d+(\.\d+)?", "N", first)
    return re.sub(r"(:|,| on | got | -> ).*", "", first)[:90]


def _leaves(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        found: list[BaseException] = []
        for inner in error.exceptions:
            found.extend(_leaves(inner))
        return found
    return [error]


def run_target(
    name: str, budget_s: float | None, examples: int | None, tally: Tally, known: set[str], seed: int | None
) -> None:
    # A flood replayed thousands of times is slow to shrink: cap it (Hypothesis allows 300 s).
    hypothesis_engine.MAX_SHRINKING_SECONDS = SHRINK_SECONDS
    target = targets(max_flood=5_000, max_steps=8, slow_s=2.0)[name]
    counted = [0]
    seen: set[str] = set()

    def guarded(value: Any) -> None:
        counted[0] += 1
        try:
            target.check(value)
        except AssertionError as error:
            key = signature(error)
            if key in known:
                return  # reported already: look for something else
            if key not in seen:
                seen.add(key)
                print(f"  found after {counted[0]} examples: {key} (shrinking it)", flush=True)
            raise

    started = time.monotonic()
    chunk = 25
    remaining = examples
    rounds = 0
    while True:
        if budget_s is not None and time.monotonic() - started >= budget_s:
            break
        if remaining is not None and remaining <= 0:
            break
        size = chunk if remaining is None else min(chunk, remaining)
        chosen = settings(
            max_examples=size,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
            phases=[Phase.generate, Phase.shrink],
            report_multiple_bugs=True,
            print_blob=False,
        )
        test: Callable[[], None] = chosen(given(target.strategy)(guarded))
        if seed is not None:
            test = fix_seed(seed + rounds)(test)
        rounds += 1
        before, chunk_started = counted[0], time.monotonic()
        try:
            test()
        except Exception as error:
            for leaf in _leaves(error):
                key = signature(leaf)
                if key in known:
                    continue
                known.add(key)
                notes = "\n".join(getattr(leaf, "__notes__", []))
                failure = Failure(name, key, f"{type(leaf).__name__}: {leaf}", notes)
                tally.failures.append(failure)
                print_failure(failure)
        ran = counted[0] - before
        if remaining is not None:
            remaining -= size
        # Aim for chunks of about 5 s so the time budget is kept.
        per_example = (time.monotonic() - chunk_started) / max(1, ran)
        chunk = max(5, min(2_000, int(5 / max(per_example, 1e-4))))
    tally.examples += counted[0]
    tally.seconds += time.monotonic() - started


def print_failure(failure: Failure) -> None:
    print(f"\n*** FAILURE in {failure.target}: {failure.signature}", flush=True)
    print("    " + failure.message[:1500].replace("\n", "\n    "))
    if failure.example:
        print("    " + failure.example[:3000].replace("\n", "\n    "), flush=True)


# -- atheris: coverage-guided bytes into Engine.receive -----------------------------------------------


def run_atheris(seconds: float, tally: Tally) -> None:
    if atheris is None:
        print("atheris is not installed (pip install atheris): skipping the byte-level run")
        return
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="fuzz-corpus-") as corpus:
        _write_seeds(Path(corpus))
        command = [sys.executable, __file__, "--atheris-child", str(int(seconds)), corpus]
        result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    output = result.stdout + result.stderr
    runs = re.findall(r"#(\d+)\s+(?:DONE|pulse|NEW|REDUCE|INITED)", output)
    tally.examples += int(runs[-1]) if runs else 0
    tally.seconds += time.monotonic() - started
    if "Uncaught Python exception" in output or result.returncode not in (0,):
        crash = output[output.find("=== Uncaught") :] if "=== Uncaught" in output else output[-3000:]
        failure = Failure("atheris", "atheris crash", crash[:3000], "")
        tally.failures.append(failure)
        print_failure(failure)


def _write_seeds(corpus: Path) -> None:
    seeds: list[Any] = [
        *SEED_FRAMES,
        {"c": "sow", "t": "orders", "cid": 1, "filter": "/qty > 10", "orderby": "/qty DESC", "top_n": 2},
        {"c": "sow_and_delta_subscribe", "t": "orders", "cid": "s", "o": "oof,select=[-/a]"},
        {"c": "delta_publish", "t": "orders", "cid": "d", "data": {"order": 1, "a": {"b": 2}}, "a": "stats"},
        {"c": "sow_delete", "t": "orders", "cid": "x", "filter": "/order = 2"},
        {"c": "logon", "client_name": "feed", "cid": "l"},
        [{"c": "heartbeat", "cid": 1}, {"c": "flush", "a": "processed,persisted"}],
    ]
    for index, seed in enumerate(seeds):
        (corpus / f"seed{index}").write_bytes(orjson.dumps(seed))


def atheris_child(seconds: int, corpus: str) -> None:
    assert atheris is not None
    atheris.instrument_all()  # coverage feedback from every module loaded, the server's included

    def one_input(data: bytes) -> None:
        EngineRig(slow_s=2.0).step(RawFrame(data))

    atheris.Setup(
        [sys.argv[0], f"-max_total_time={seconds}", "-max_len=8192", "-print_final_stats=1", corpus],
        one_input,
    )
    atheris.Fuzz()


# -- the hostile model: a real server, rounds of extreme commands ---------------------------------


def run_hostile(budget_s: float, tally: Tally, seed: int | None) -> None:
    from tests.integration.hostile_arena import GROWTH_MB, LATENCY_S  # noqa: PLC0415
    from tests.integration.hostile_model import run_model, seeded_server  # noqa: PLC0415

    started = time.monotonic()
    first = seed if seed is not None else int(time.time())
    rounds = 0
    while time.monotonic() - started < budget_s:
        with tempfile.TemporaryDirectory(prefix="hostile-") as directory:
            server = seeded_server(Path(directory))  # a new server a round: findings stay apart
            try:
                report = run_model(server, first + rounds, 1, LATENCY_S, GROWTH_MB)
            finally:
                server.stop()
        print(f"  seed {first + rounds}: {report.summary()}", flush=True)
        tally.examples += report.volleys
        for finding in report.findings:
            failure = Failure("hostile", finding.what, finding.volley.label, f"seed {first + rounds}")
            tally.failures.append(failure)
            print_failure(failure)
        rounds += 1
    tally.seconds += time.monotonic() - started


# -- main ----------------------------------------------------------------------------------------

WEIGHTS = {
    "frames": 4,
    "frames-auth": 3,
    "filters": 3,
    "commands": 1,
    "orderby": 1,
    "options": 1,
    "select": 1,
    "hostile": 4,
}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--minutes", type=float, default=5.0, help="total time over every target (default 5)")
    parser.add_argument("--examples", type=int, help="run this many examples per target instead of minutes")
    parser.add_argument("--target", action="append", choices=sorted(WEIGHTS), help="only these targets")
    parser.add_argument("--seed", type=int, help="a fixed Hypothesis seed, for a repeatable run")
    parser.add_argument(
        "--atheris", type=float, default=0.0, metavar="SHARE", help="share of the time for atheris (0..1)"
    )
    parser.add_argument("--atheris-child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.atheris_child:
        atheris_child(int(args.atheris_child[0]), args.atheris_child[1])
        return 0
    os.environ.setdefault("PYTHONHASHSEED", "0")
    chosen = args.target or list(WEIGHTS)
    total_s = args.minutes * 60
    atheris_s = total_s * args.atheris if args.examples is None else 0.0
    hypothesis_s = total_s - atheris_s
    weight = sum(WEIGHTS[name] for name in chosen)
    tallies: dict[str, Tally] = {}
    known: set[str] = set()
    started = time.monotonic()
    for name in chosen if hypothesis_s > 0 or args.examples is not None else []:
        budget = None if args.examples is not None else hypothesis_s * WEIGHTS[name] / weight
        label = f"{args.examples} examples" if budget is None else f"{budget:.0f} s"
        print(f"fuzzing {name} for {label} ...", flush=True)
        tallies[name] = Tally()
        if name == "hostile":
            run_hostile(budget if budget is not None else 60.0, tallies[name], args.seed)
            continue
        run_target(name, budget, args.examples, tallies[name], known, args.seed)
    if atheris_s > 0:
        print(f"atheris on raw frames for {atheris_s:.0f} s ...", flush=True)
        tallies["atheris"] = Tally()
        run_atheris(atheris_s, tallies["atheris"])
    print(f"\n{'target':<10} {'examples':>9} {'seconds':>8} {'failures':>9}")
    for name, tally in tallies.items():
        print(f"{name:<10} {tally.examples:>9} {tally.seconds:>8.1f} {len(tally.failures):>9}")
    failures = [failure for tally in tallies.values() for failure in tally.failures]
    print(f"total {time.monotonic() - started:.0f} s, {len(failures)} distinct failure(s)")
    for failure in failures:
        print(f"  - {failure.target}: {failure.signature}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
