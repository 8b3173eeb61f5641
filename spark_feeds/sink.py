"""The sink: a ``foreachBatch`` writer that publishes every row of a micro-batch into a topic.

Exactly-once effect: Spark may run a micro-batch again after a failure, so every row is sent with
a publisher sequence number derived from the batch id and its position in the batch, under a
client name that belongs to the query (it is kept in the query's checkpoint directory). A batch
that runs again carries the same sequence numbers, and the server ignores what it already has.
The writer waits for the persisted ack that covers the batch's last row (for a topic that is not
durable it comes with processed) before it returns, so Spark commits a batch only when the server
has it; a refused row fails the batch with the server's reason.

One connection serves the query for its life (``link.Link``): opened by the first micro-batch,
reused by the next, closed by ``close()`` (``stream.publish_stream`` calls it when the query
ends) or at exit. When the server goes away, the batch is sent again on a new connection, with
the rows the server has skipped, until the server is back or ``retry_s`` has passed.

With ``transactions`` set to ``batch`` (or ``partition``), the rows of a micro-batch (of each of
its partitions) go as transactions (docs/protocol.md, Transactions): every subscriber sees all of them in one
frame, so a dashboard never shows half a batch. A transaction holds at most ``MAX_TX_COMMANDS``
rows and ``frame_bytes``; a bigger batch goes as several, in order (logged once). Each takes
one sequence number, derived the same way, so a replayed batch is still a duplicate.
"""

from __future__ import annotations

import argparse
import itertools
import logging
import os
import time
import uuid
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
from websockets.sync.client import ClientConnection

from .link import CLOSED, FeedError, Link

__all__ = ["FeedError", "ProtocolSink", "add_feed_options", "client_name_for"]

SEQ_STRIDE = 1_000_000_000  # sequence numbers per batch: batch b owns ((b+1)*stride, (b+2)*stride)
MODES = ("publish", "delta_publish", "delete")
TRANSACTIONS = ("off", "batch", "partition")
MAX_TX_COMMANDS = 10_000  # what the server takes in one transaction
TX_ENVELOPE = 64  # bytes around a transaction's commands: {"c":"tx","cmds":[...],"s":N,"a":"persisted"}

log = logging.getLogger("spark_feeds.sink")


def client_name_for(checkpoint: str | Path, topic: str) -> str:
    """The client name of the query that keeps its checkpoint in ``checkpoint``: the same for
    every run from that checkpoint (so a replayed batch is a duplicate), new for a new one."""
    path = Path(checkpoint) / "sowpush-client-name"
    if path.exists():
        return path.read_text().strip()
    path.parent.mkdir(parents=True, exist_ok=True)
    name = f"spark:{topic}:{uuid.uuid4().hex[:12]}"
    path.write_text(name)
    return name


def add_feed_options(parser: argparse.ArgumentParser) -> None:
    """The sink's options that every job offers."""
    parser.add_argument(
        "--transactions",
        choices=TRANSACTIONS,
        default="off",
        help="send each micro-batch (or each partition of one) as a transaction, never seen half "
        "applied (default: off)",
    )
    parser.add_argument(
        "--stamp",
        metavar="COLUMN",
        help="add COLUMN to every row: its micro-batch's trigger time (default: none)",
    )


def _json_default(value: Any) -> Any:
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=timezone.utc)
        return moment.isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, bytes | bytearray):
        return value.decode("utf-8", "replace")
    raise TypeError(f"cannot publish a {type(value).__name__}")


@dataclass
class ProtocolSink:
    url: str
    topic: str
    client_name: str
    mode: str = "publish"
    key_columns: tuple[str, ...] = ()  # the record's key fields, for mode "delete"
    frame_bytes: int = 512 * 1024
    timeout_s: float = 120.0  # silence on an open connection that counts as the server gone
    retry_s: float = 300.0  # how long a batch waits for an unreachable server before it fails
    user_id: str | None = field(default_factory=lambda: os.environ.get("SOWPUSH_USER"))
    password: str | None = field(default_factory=lambda: os.environ.get("SOWPUSH_PASSWORD"))
    transactions: str = "off"  # "batch" or "partition": each is sent as one transaction
    max_tx_commands: int = MAX_TX_COMMANDS

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, not {self.mode!r}")
        if self.transactions not in TRANSACTIONS:
            raise ValueError(
                f"transactions must be one of {', '.join(TRANSACTIONS)}, not {self.transactions!r}"
            )
        self._split_logged = False
        if self.mode == "delete" and not self.key_columns:
            raise ValueError("mode 'delete' needs the key columns")
        command = "sow_delete" if self.mode == "delete" else self.mode
        self._head = b'{"c":"' + command.encode() + b'","t":' + orjson.dumps(self.topic) + b',"data":'
        self._link = Link(
            self.url,
            self.client_name,
            self.topic,
            self.user_id,
            self.password,
            timeout_s=self.timeout_s,
            retry_s=self.retry_s,
        )

    def close(self) -> None:
        """Close the connection for good (the query is over, or stopping: a batch under way fails)."""
        self._link.close()

    def __call__(self, batch: Any, batch_id: int) -> None:
        """``foreachBatch``: publish the micro-batch's rows. Spark writes each row as JSON on the
        executors, streamed to the driver a partition ahead, so no row is turned into Python objects."""
        from pyspark.sql import functions as F  # noqa: PLC0415 - the sink is usable without Spark

        columns = [F.col(name) for name in self.key_columns] if self.mode == "delete" else [F.col("*")]
        encoded = batch.select(F.to_json(F.struct(*columns)), F.spark_partition_id())

        def rows() -> Iterator[tuple[bytes, int]]:
            # The RDD's toLocalIterator, not the DataFrame's. The DataFrame's opens a SQL execution
            # of its own that ends when the iterator is handed back, before the jobs that compute
            # the partitions (one each, as they are read) start under its id. Spark 4's scheduler
            # files every job under its SQL execution (DAGScheduler.activeQueryToJobs) and lets go
            # of them when that execution ends, so those jobs were never let go of: each kept its
            # plan, its RDDs, their broadcasts and the rows it returned on the driver's heap, two
            # jobs a second in the demo, until an OutOfMemoryError. The RDD's runs its jobs under
            # the micro-batch's execution, which ends after this call has read every partition.
            # It yields the partitions in order, each whole: a partition is a run of rows. Called
            # again when the batch is sent again (Spark computes it again: the same rows, as a
            # replayed batch would be).
            partitions = encoded.rdd.toLocalIterator(prefetchPartitions=True)
            return ((row[0].encode(), row[1]) for row in partitions)

        def groups() -> Iterator[Iterator[bytes]]:
            if self.transactions == "batch":
                return iter([(data for data, _ in rows())])
            partitions = itertools.groupby(rows(), key=lambda row: row[1])
            return ((data for data, _ in part) for _, part in partitions)

        started = time.perf_counter()
        try:
            if self.transactions == "off":
                sent = self._send(lambda: (self._head + data for data, _ in rows()), batch_id)
            else:
                sent = self._send(lambda: self._transactions(groups()), batch_id)
        except Exception:
            if not self._link.closed:
                raise
            # Stopping: the batch was cut short (its job cancelled, or its connection closed),
            # and runs again on the next start. Said in one line: the error of a cancelled job
            # carries Java's stack trace, which Spark's stream thread chokes on (a regex over it
            # overflows the stack) before the stop completes.
            raise FeedError(f"{self.topic}: batch {batch_id} cut short: {CLOSED}") from None
        unit = "rows" if self.transactions == "off" else "transactions"
        elapsed_ms = (time.perf_counter() - started) * 1000
        log.info(
            "%s: batch %d: %d %s sent and acknowledged in %.0f ms",
            self.topic,
            batch_id,
            sent,
            unit,
            elapsed_ms,
        )

    def publish_rows(self, rows: Iterable[dict[str, Any]], batch_id: int) -> int:
        """Publish Python records as batch ``batch_id`` (see ``publish_json``)."""
        if self.mode == "delete":
            rows = ({k: row[k] for k in self.key_columns} for row in rows)
        return self.publish_json((orjson.dumps(row, default=_json_default) for row in rows), batch_id)

    @staticmethod
    def _command(body: bytes, seq: int, last: bool) -> bytes:
        # One persisted ack with s covers every earlier sequence: only the last command asks for
        # it. (Failures are acked one by one whatever was asked.)
        tail = b',"a":"persisted"}' if last else b"}"
        return body + b',"s":' + str(seq).encode() + tail

    def publish_json(self, rows: Iterable[bytes], batch_id: int) -> int:
        """Publish rows given as JSON objects as batch ``batch_id``; returns how many were sent (not
        already on disk). An iterator is held in memory, to be sent again after a reconnect."""
        held = rows if isinstance(rows, Collection) else list(rows)
        return self._send(lambda: (self._head + row for row in held), batch_id)

    def publish_transactions(self, groups: Iterable[Iterable[bytes]], batch_id: int) -> int:
        """Publish each group of rows (JSON objects) as one transaction (several when it holds more
        than ``max_tx_commands``), as batch ``batch_id``; returns how many transactions were sent."""
        held = [group if isinstance(group, Collection) else list(group) for group in groups]
        return self._send(lambda: self._transactions(held), batch_id)

    def _transactions(self, groups: Iterable[Iterable[bytes]]) -> Iterator[bytes]:
        """Each group as transaction bodies: one, unless it holds more than ``max_tx_commands``
        rows or more than ``frame_bytes`` (a transaction is one inbound message, which the server
        takes up to its ``max_message_bytes``)."""
        head = self._head
        room = self.frame_bytes - TX_ENVELOPE
        for group in groups:
            chunk: list[bytes] = []
            size = 0
            chunks = 0
            for row in group:
                command = head + row + b"}"
                if chunk and (len(chunk) == self.max_tx_commands or size + len(command) > room):
                    chunks += 1
                    yield self._transaction(chunk)
                    chunk, size = [], 0
                chunk.append(command)
                size += len(command) + 1
            if chunk:
                chunks += 1
                yield self._transaction(chunk)
            if chunks > 1 and not self._split_logged:
                self._split_logged = True
                log.warning(
                    "%s: a group of rows over %d rows or %d bytes went as %d transactions; a subscriber "
                    "may see it between them (use transactions='partition' with smaller partitions, "
                    "or a larger frame_bytes if the server's max_message_bytes allows)",
                    self.topic,
                    self.max_tx_commands,
                    self.frame_bytes,
                    chunks,
                )

    @staticmethod
    def _transaction(commands: list[bytes]) -> bytes:
        return b'{"c":"tx","cmds":[' + b",".join(commands) + b"]"

    def _send(self, bodies: Callable[[], Iterable[bytes]], batch_id: int) -> int:
        """Send each command body (without its ``s``) numbered within batch ``batch_id``, skipping
        those the server has already; wait for the persisted ack of the last. ``bodies`` gives
        them from the start again when the connection is lost and the batch is sent again."""
        base = (batch_id + 1) * SEQ_STRIDE

        def attempt(ws: ClientConnection, known: int) -> tuple[int, int]:
            sent, last = 0, 0
            for frame, count, highest in self._frames(bodies(), base, known):
                ws.send(frame.decode())
                sent, last = sent + count, highest
            if sent:
                self._await_persisted(ws, last)
            return sent, last

        return self._link.run(attempt)

    def _frames(self, bodies: Iterable[bytes], base: int, on_disk: int) -> Iterator[tuple[bytes, int, int]]:
        batch: list[bytes] = []
        size, highest = 2, 0
        held: tuple[bytes, int] | None = None  # the newest command, sent once we know if it is the last
        for position, body in enumerate(bodies):
            seq = base + position + 1
            if seq <= on_disk:
                continue  # the server has it already (this batch ran before)
            if held is not None:
                command = self._command(*held, last=False)
                if batch and size + len(command) + 1 > self.frame_bytes:
                    yield b"[" + b",".join(batch) + b"]", len(batch), highest
                    batch, size = [], 2
                batch.append(command)
                size += len(command) + 1
                highest = held[1]
            held = (body, seq)
        if held is not None:
            batch.append(self._command(*held, last=True))
            highest = held[1]
        if batch:
            yield b"[" + b",".join(batch) + b"]", len(batch), highest

    def _await_persisted(self, ws: ClientConnection, last: int) -> None:
        for message in self._link.messages(ws):
            if message.get("status") == "failure":
                raise FeedError(
                    f"{self.topic}: the server refused row s={message.get('s')}: {message.get('reason')}"
                )
            if message.get("a") == "persisted" and int(message.get("s", 0)) >= last:
                return
