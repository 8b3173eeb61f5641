"""The demo's simulated market, as Spark column expressions: who trades what, a price that moves,
and seeded draws that make every simulated choice a pure function of the rate source's rows (so a
replayed micro-batch computes the same records, and tests can predict them)."""

from __future__ import annotations

import math
from typing import Any

from pyspark.sql import functions as F

# Each trader makes a market in one symbol, on one desk: a trader's position is a position in
# that symbol, keyed by the trader alone (the demo's ``positions`` topic is keyed by /trader).
TRADERS = ["ann", "ben", "cho", "dev", "eli", "fay", "gus", "hal"]
DESKS = ["Delta One", "Flow", "Delta One", "Program", "Flow", "Program", "Volatility", "Volatility"]
BOOKS = ["EQ-US-D1-01", "EQ-US-FL-02", "EQ-US-D1-03", "EQ-US-PT-04", "EQ-US-FL-05", "EQ-US-PT-06",
         "EQ-US-VO-07", "EQ-US-VO-08"]  # fmt: skip
SYMBOLS = ["AAPL", "MSFT", "NVDA", "AMZN", "TSLA", "META", "GOOG", "IBM"]
NAMES = ["Apple Inc.", "Microsoft Corp.", "NVIDIA Corp.", "Amazon.com Inc.", "Tesla Inc.",
         "Meta Platforms Inc. Class A", "Alphabet Inc. Class C",
         "International Business Machines Corp."]  # fmt: skip
ISINS = ["US0378331005", "US5949181045", "US67066G1040", "US0231351067", "US88160R1014",
         "US30303M1027", "US02079K1079", "US4592001014"]  # fmt: skip
BASE_PRICES = [190.0, 410.0, 120.0, 180.0, 250.0, 500.0, 165.0, 210.0]
# How far inside the mid each trader trades (a fraction of the price): market makers earn the
# spread on what they turn over, and one trader crosses it and pays.
EDGES = [0.0006, 0.0004, 0.0005, 0.0002, 0.0003, 0.0004, 0.0001, -0.0002]

CLIENTS = ["Northwind Capital Partners", "Contoso Asset Management", "Fabrikam Pension Trust",
           "Tailspin Global Macro", "Wide World Insurance", "Proseware Sovereign Fund"]  # fmt: skip
ACCOUNTS = ["ACC-1001 Pension Fund A", "ACC-2040 Global Macro Hedge", "ACC-3300 Mutual Growth",
            "ACC-4711 Proprietary", "ACC-5120 Sovereign Wealth", "ACC-6008 Insurance GA"]  # fmt: skip
STRATEGIES = ["VWAP", "TWAP", "POV 10%", "Implementation Shortfall", "Iceberg", "Market On Close"]
VENUES = ["XNAS", "XNYS", "ARCX", "BATS", "IEXG", "EDGX"]
TIME_IN_FORCE = ["DAY", "DAY", "GTC", "IOC"]


def pick(names: list[Any], index: Any) -> Any:
    """``names[index % len(names)]`` as a column."""
    position = (F.pmod(index, len(names)) + 1).cast("int")
    return F.element_at(F.array(*[F.lit(name) for name in names]), position)


def draw(salt: str, *columns: Any) -> Any:
    """A seeded draw: a non-negative long, a pure function of ``salt`` and ``columns``, with no
    visible pattern between neighbouring inputs."""
    return F.pmod(F.xxhash64(F.lit(salt), *columns), F.lit(2**62))


def fraction(salt: str, *columns: Any) -> Any:
    """A seeded draw in [0, 1)."""
    return (draw(salt, *columns) % 1_000_000) / 1_000_000.0


def mid_price(symbol: Any, seconds: Any) -> Any:
    """The mid price of symbol number ``symbol`` at ``seconds`` (since the epoch): its base price,
    drifting a few percent over minutes and wobbling within seconds, differently per symbol."""
    base = pick(BASE_PRICES, symbol)
    wave = (
        0.02 * F.sin(seconds / 240.0 + symbol * 1.3)
        + 0.004 * F.sin(seconds / 17.0 + symbol * 2.1)
        + 0.001 * F.sin(seconds * (2 * math.pi / 3.0) + symbol)
    )
    return base * (1 + wave)
