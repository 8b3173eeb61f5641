"""A cluster snapshot is encoded in slices (runtime/redis_snapshots.py ``encode``): the document is
the one a single ``orjson.dumps`` would write, whatever the number of slices."""

from __future__ import annotations

import orjson

from server.core.records.version import RecordVersion
from server.runtime.redis_snapshots import ENCODE_SLICE, SNAPSHOT_FORMAT, encode


async def test_the_sliced_document_is_the_whole_document() -> None:
    for count in (0, 1, ENCODE_SLICE, 2 * ENCODE_SLICE + 3):
        versions = [
            RecordVersion(f"k{i}", {"id": i, "name": f"n{i}"}, i + 1, 1.5 + i, None if i % 2 else 99.0)
            for i in range(count)
        ]
        document = await encode(7, versions)
        rows = [[v.key, v.data, v.seq, v.timestamp, v.expires_at] for v in versions]
        assert orjson.loads(document) == {"format": SNAPSHOT_FORMAT, "lsn": 7, "records": rows}
