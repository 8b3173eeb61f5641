"""What every benchmark reports: named figures, each the values of several rounds, printed as one
table (min / median / max) and written as JSON so that runs can be compared."""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path


@dataclass
class Figure:
    benchmark: str  # the part of the run, "fan-out, frames of 200"
    measure: str  # what is measured, "deliveries per server CPU-s"
    subject: str  # whose figure it is, "sowpush" or a peer
    unit: str
    values: list[float] = field(default_factory=list)
    note: str = ""  # what limits the figure, when something other than the subject does

    @property
    def median(self) -> float:
        return statistics.median(self.values) if self.values else float("nan")


def number(value: float) -> str:
    if math.isnan(value):  # not measured
        return "-"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def spread(values: list[float]) -> str:
    if not values:
        return "-"
    if len(values) == 1:
        return number(values[0])
    ordered = sorted(values)
    return " / ".join(number(v) for v in (ordered[0], statistics.median(ordered), ordered[-1]))


def print_round(round_number: int, name: str, figures: dict[str, float]) -> None:
    """One round's figures of one target, as a run goes (``round 2, six panes: ...``)."""
    said = ", ".join(f"{k} {v:,.1f}" for k, v in figures.items())
    print(f"round {round_number + 1}, {name}: {said}", flush=True)


def print_rounds(title: str, results: dict[str, list[dict[str, float]]]) -> None:
    """Every target's figures over the rounds, min / median / max, under ``title``."""
    print(f"\n{title}:")
    for name, rounds in results.items():
        print(f"  {name}")
        for figure in rounds[0]:
            print(f"    {figure:<20} {spread([r[figure] for r in rounds])}")


def table(figures: Iterable[Figure]) -> str:
    """One table: a block per benchmark, a line per figure, min / median / max of its rounds."""
    rows: list[tuple[str, str, str, str, str]] = []
    last = None
    for figure in figures:
        if figure.benchmark != last:
            rows.append((f"{figure.benchmark}", "", "", "", ""))
            last = figure.benchmark
        rows.append(("  " + figure.measure, figure.subject, spread(figure.values), figure.unit, figure.note))
    widths = [max(len(row[column]) for row in rows) for column in range(4)]
    header = ("figure", "subject", "min / median / max", "unit")
    widths = [max(width, len(title)) for width, title in zip(widths, header, strict=True)]
    lines = ["  ".join(title.ljust(width) for title, width in zip(header, widths, strict=True))]
    for row in rows:
        if not row[1]:
            lines.append(row[0])
            continue
        cells = [row[0].ljust(widths[0]), row[1].ljust(widths[1]), row[2].rjust(widths[2]), row[3]]
        lines.append("  ".join(cells).rstrip() + (f"   ({row[4]})" if row[4] else ""))
    return "\n".join(lines)


def write_json(path: Path, figures: Iterable[Figure], context: dict[str, object]) -> None:
    rows = [{**asdict(figure), "median": figure.median} for figure in figures]
    path.write_text(json.dumps({"context": context, "figures": rows}, indent=1) + "\n")
