"""The sink: a ``foreachBatch`` writer that publishes every row of a micro-batch into a topic.

Exactly-once effect: Spark may run a micro-batch again after a failure, so every row is sent with
a publisher sequence number derived from the batch id and its position in the batch, under a
client name that belongs to the query (it is kept in the query's checkpoint directory). A batch
that runs again carries the same sequence numbers, and the server ignores what it already has.
The writer waits for the persisted ack that covers the batch's last row (for a topic that is not
durable it comes with processed) before it returns, so Spark commits a batch only when the server
has it; a refused row fails the batch with the server's reason.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
from websockets.sync.client import connect

SEQ_STRIDE = 1_000_000_000  # sequence numbers per batch: batch b owns ((b+1)*stride, (b+2)*stride)
MODES = ("publish", "delta_publish", "delete")


class FeedError(RuntimeError):
    """The server refused a row, or did not acknowledge a batch in time."""


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
    timeout_s: float = 120.0
    user_id: str | None = field(default_factory=lambda: os.environ.get("SOWPUSH_USER"))
    password: str | None = field(default_factory=lambda: os.environ.get("SOWPUSH_PASSWORD"))

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, not {self.mode!r}")
        if self.mode == "delete" and not self.key_columns:
            raise ValueError("mode 'delete' needs the key columns")
        command = "sow_delete" if self.mode == "delete" else self.mode
        self._head = b'{"c":"' + command.encode() + b'","t":' + orjson.dumps(self.topic) + b',"data":'

    def __call__(self, batch: Any, batch_id: int) -> None:
        """``foreachBatch``: publish the micro-batch's rows. Spark writes each row as JSON on the
        executors, streamed to the driver a partition ahead, so no row is turned into Python objects."""
        from pyspark.sql import functions as F  # noqa: PLC0415 - the sink is usable without Spark

        columns = [F.col(name) for name in self.key_columns] if self.mode == "delete" else [F.col("*")]
        encoded = batch.select(F.to_json(F.struct(*columns)))
        rows = (row[0].encode() for row in encoded.toLocalIterator(prefetchPartitions=True))
        self.publish_json(rows, batch_id)

    def publish_rows(self, rows: Iterable[dict[str, Any]], batch_id: int) -> int:
        """Publish Python records as batch ``batch_id`` (see ``publish_json``)."""
        if self.mode == "delete":
            rows = ({k: row[k] for k in self.key_columns} for row in rows)
        return self.publish_json((orjson.dumps(row, default=_json_default) for row in rows), batch_id)

    def _command(self, data: bytes, seq: int, last: bool) -> bytes:
        # One persisted ack with s covers every earlier sequence: only the last row asks for it.
        # (Failures are acked one by one whatever was asked.)
        tail = b',"a":"persisted"}' if last else b"}"
        return self._head + data + b',"s":' + str(seq).encode() + tail

    def publish_json(self, rows: Iterable[bytes], batch_id: int) -> int:
        """Publish rows given as JSON objects as batch ``batch_id``; returns how many were sent (not
        already on disk)."""
        base = (batch_id + 1) * SEQ_STRIDE
        with connect(self.url, max_size=None, open_timeout=self.timeout_s) as ws:
            on_disk = self._logon(ws)
            sent, last = 0, 0
            for frame, count, highest in self._frames(rows, base, on_disk):
                ws.send(frame.decode())
                sent, last = sent + count, highest
            if sent:
                self._await_persisted(ws, last)
        return sent

    def _logon(self, ws: Any) -> int:
        logon: dict[str, Any] = {"c": "logon", "cid": "logon", "client_name": self.client_name}
        if self.user_id:
            logon["user_id"] = self.user_id
        if self.password:
            logon["pw"] = self.password
        ws.send(orjson.dumps(logon).decode())
        for message in self._messages(ws):
            if message.get("cid") == "logon":
                if message.get("status") != "success":
                    raise FeedError(f"logon refused: {message.get('reason')}")
                return int(message.get("s", 0))
        raise FeedError("no logon ack")

    def _frames(self, rows: Iterable[bytes], base: int, on_disk: int) -> Iterator[tuple[bytes, int, int]]:
        batch: list[bytes] = []
        size, highest = 2, 0
        held: tuple[bytes, int] | None = None  # the newest row, sent once we know if it is the last
        for position, row in enumerate(rows):
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
            held = (row, seq)
        if held is not None:
            batch.append(self._command(*held, last=True))
            highest = held[1]
        if batch:
            yield b"[" + b",".join(batch) + b"]", len(batch), highest

    def _await_persisted(self, ws: Any, last: int) -> None:
        for message in self._messages(ws):
            if message.get("status") == "failure":
                raise FeedError(
                    f"{self.topic}: the server refused row s={message.get('s')}: {message.get('reason')}"
                )
            if message.get("a") == "persisted" and int(message.get("s", 0)) >= last:
                return

    def _messages(self, ws: Any) -> Iterator[dict[str, Any]]:
        while True:
            try:
                frame = ws.recv(timeout=self.timeout_s)
            except TimeoutError:
                raise FeedError(f"{self.topic}: no acknowledgement within {self.timeout_s} s") from None
            decoded = orjson.loads(frame)
            yield from decoded if isinstance(decoded, list) else [decoded]
