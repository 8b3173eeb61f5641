"""Pure DataFrame transforms of the demo pipelines (no sources, no sinks: testable on static data).

``ticks_from_rate`` turns the ``rate`` source (timestamp, value) into simulated trades, one per
row. ``positions_from_ticks`` accumulates them per trader over every trade since the query began
(a streaming aggregation without a window, in update mode: each micro-batch brings the traders
that traded, with their totals so far): position, average price, realised and unrealised P&L
marked to the moving mid price. ``orders_from_rate`` moves a book of orders through their
lifecycle (new, partially filled, then filled or cancelled, then a new order in the slot), each
order at its own random moments. ``stamped`` adds a micro-batch's trigger time.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .market import (
    ACCOUNTS,
    BASE_PRICES,
    BOOKS,
    CLIENTS,
    DESKS,
    EDGES,
    ISINS,
    NAMES,
    STRATEGIES,
    SYMBOLS,
    TIME_IN_FORCE,
    TRADERS,
    VENUES,
    draw,
    fraction,
    mid_price,
    pick,
)

BOOK = 8000  # orders in the book: at 2,000 updates a second, each changes about every 4 s
CYCLE = 8  # steps in an order's life: new, CYCLE - 2 partial fills, then filled or cancelled
CANCELLED_ONE_IN = 5  # one order in five is cancelled at its last step instead of filled
# Multipliers of the permutation that orders a round's visits: primes above any book size, so
# each is coprime with it and ``(p * i + b) % book`` visits every slot once per round.
PERMUTATION_PRIMES = [1_000_003, 1_000_033, 1_000_037, 1_000_039, 1_000_081, 1_000_099, 1_000_117]
MAX_BOOK = 1_000_000


def ticks_from_rate(rate: DataFrame) -> DataFrame:
    """One simulated trade per row: a trader buys or sells their symbol a little inside the mid."""
    value = F.col("value")
    trader = draw("trader", value) % len(TRADERS)  # also the trader's symbol (market.py)
    buy = draw("side", value) % 2 == 0
    sign = F.when(buy, F.lit(1)).otherwise(F.lit(-1))
    mid = mid_price(trader, F.col("timestamp").cast("double"))
    noise = (fraction("noise", value) - 0.5) * 0.0004
    return rate.select(
        F.col("timestamp"),
        value.alias("trade"),
        pick(TRADERS, trader).alias("trader"),
        pick(DESKS, trader).alias("desk"),
        pick(BOOKS, trader).alias("book"),
        pick(SYMBOLS, trader).alias("sym"),
        F.when(buy, F.lit("B")).otherwise(F.lit("S")).alias("side"),
        ((draw("qty", value) % 20 + 1) * 25).alias("qty"),
        F.round(mid * (1 - sign * pick(EDGES, trader) + noise), 4).alias("px"),
        F.round(mid, 4).alias("mid"),
    )


def positions_from_ticks(ticks: DataFrame) -> DataFrame:
    """Per trader, over all their trades: what they bought and sold, and at what average prices
    (sums, so Spark keeps four numbers per trader as state, however long the query runs).

    Realised P&L is what the matched quantity made: ``min(bought, sold) * (avg sell - avg buy)``.
    Unrealised P&L is the open position marked to the mid at the trader's latest trade, against
    the average price of the side it is open on. Their sum is the cash plus the position's value.
    """
    buy = F.col("side") == "B"
    qty, px = F.col("qty"), F.col("px")
    totals = ticks.groupBy("trader", "desk", "book", "sym").agg(
        F.sum(F.when(buy, qty).otherwise(F.lit(0))).alias("bought"),
        F.sum(F.when(buy, F.lit(0)).otherwise(qty)).alias("sold"),
        F.sum(F.when(buy, qty * px).otherwise(F.lit(0.0))).alias("cost"),
        F.sum(F.when(buy, F.lit(0.0)).otherwise(qty * px)).alias("proceeds"),
        F.count(F.lit(1)).alias("trades"),
        F.max_by("mid", "trade").alias("mark"),
        F.max("timestamp").alias("updated"),
    )
    bought, sold, mark = F.col("bought"), F.col("sold"), F.col("mark")
    avg_buy = F.when(bought > 0, F.col("cost") / bought).otherwise(F.lit(0.0))
    avg_sell = F.when(sold > 0, F.col("proceeds") / sold).otherwise(F.lit(0.0))
    position = bought - sold
    # Flat: 0, not null. A null field is left out of the published JSON, and a delta publish
    # would then keep the stale average of the last open position.
    avg_open = F.when(position > 0, avg_buy).when(position < 0, avg_sell).otherwise(F.lit(0.0))
    realised = F.least(bought, sold) * (avg_sell - avg_buy)
    unrealised = position * (mark - avg_open)
    symbol = F.array_position(F.array(*[F.lit(s) for s in SYMBOLS]), F.col("sym")) - 1
    return totals.select(
        "trader",
        "desk",
        "book",
        "sym",
        pick(NAMES, symbol).alias("name"),
        pick(ISINS, symbol).alias("isin"),
        F.lit("USD").alias("currency"),
        position.alias("position"),
        F.round(avg_open, 4).alias("avg_px"),
        F.round(mark, 4).alias("mark"),
        F.round(realised, 2).alias("realised_pnl"),
        F.round(unrealised, 2).alias("unrealised_pnl"),
        F.round(realised + unrealised, 2).alias("pnl"),
        F.round(position * mark, 2).alias("exposure"),
        "trades",
        "bought",
        "sold",
        F.round(F.col("cost") + F.col("proceeds"), 2).alias("turnover"),
        "updated",
    )


def orders_from_rate(rate: DataFrame, book: int = BOOK) -> DataFrame:
    """Each row moves one order of a book of ``book`` one step along its life.

    The rows come in rounds of ``book``; a round visits every order once, in an order of its own
    (a permutation drawn per round), so each order changes at its own random moments, about once
    a round, and a micro-batch changes only the orders its rows visit. The visit count is then
    the round number, which makes an order's state a pure function of its slot and the round:
    no state in Spark, and the same record whenever a batch is computed again. Orders start at
    different steps (a phase per slot). A slot holds a new order (a generation) after each filled
    or cancelled one: who and what are drawn per slot, side, size, limit and outcome per order.
    """
    if not 0 < book <= MAX_BOOK:
        raise ValueError(f"the book holds 1 to {MAX_BOOK:,} orders, not {book}")
    value = F.col("value")
    visit = F.floor(value / book)
    slot = F.pmod(pick(PERMUTATION_PRIMES, visit) * (value % book) + draw("round", visit) % book, F.lit(book))
    steps = visit + draw("phase", slot) % CYCLE
    step, generation = steps % CYCLE, F.floor(steps / CYCLE)
    # A slot is one client's line of business with one trader, in the trader's symbol; each
    # generation a new order on it (a new order changes only what differs between two orders).
    trader = symbol = draw("trader", slot) % len(TRADERS)
    buy = draw("side", slot, generation) % 2 == 0
    sign = F.when(buy, F.lit(1.0)).otherwise(F.lit(-1.0))
    qty = (draw("qty", slot, generation) % 40 + 1) * 100
    limit = F.round(pick(BASE_PRICES, symbol) * (1 + sign * 0.01 * fraction("limit", slot, generation)), 2)
    last = CYCLE - 1
    cancelled = draw("outcome", slot, generation) % CANCELLED_ONE_IN == 0
    fills = F.when(cancelled & (step == last), F.lit(last - 1)).otherwise(step)
    filled = F.floor(qty * fills / last)
    # Each fill a little better than the limit: the average moves with every fill.
    average = limit * (1 - sign * 0.003 * fills / last)
    return rate.select(
        slot.cast("long").alias("order"),
        F.format_string("%s-%06d-%d", pick(TRADERS, trader), slot, generation).alias("client_order_id"),
        pick(CLIENTS, draw("client", slot)).alias("client"),
        pick(ACCOUNTS, draw("account", slot)).alias("account"),
        pick(TRADERS, trader).alias("trader"),
        pick(DESKS, trader).alias("desk"),
        pick(STRATEGIES, draw("strategy", slot)).alias("strategy"),
        pick(VENUES, draw("venue", slot)).alias("venue"),
        pick(SYMBOLS, symbol).alias("sym"),
        pick(NAMES, symbol).alias("name"),
        pick(ISINS, symbol).alias("isin"),
        F.when(buy, F.lit("B")).otherwise(F.lit("S")).alias("side"),
        F.lit("LIMIT").alias("type"),
        pick(TIME_IN_FORCE, draw("tif", slot)).alias("tif"),
        F.lit("USD").alias("currency"),
        qty.cast("long").alias("qty"),
        limit.alias("limit_px"),
        F.round(qty * limit, 2).alias("notional"),
        F.when(step == 0, F.lit("new"))
        .when(step < last, F.lit("partial"))
        .when(cancelled, F.lit("cancelled"))
        .otherwise(F.lit("filled"))
        .alias("status"),
        filled.cast("long").alias("filled"),
        F.when(fills == 0, F.lit(0.0)).otherwise(F.round(average, 4)).alias("avg_px"),
        F.col("timestamp").alias("updated"),
    )


def stamped(frame: DataFrame, column: str = "trigger_ts") -> DataFrame:
    """``frame`` with ``column`` holding its micro-batch's trigger time. In a streaming query
    ``current_timestamp()`` is the batch's timestamp, fixed when the trigger fires, the same for
    every row of the batch; so, with the server's ``ts`` on each message and the browser's clock,
    a dashboard can tell how long a batch took from Spark to the screen. Apply it to the
    streaming DataFrame (inside ``foreachBatch`` it would be the time the batch is written)."""
    return frame.withColumn(column, F.current_timestamp())
