"""The README's example of one's own PySpark job, run as written (only the server's address and
the checkpoint's place changed): its rows land in the topic, and the one checkpoint argument holds
both Spark's progress and the sink's client name."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ..integration.server_process import running, sow_records
from .jobs import ROOT, kill, launch, wait_until


def readme_example() -> str:
    section = (ROOT / "README.md").read_text().split("\n## Spark feeds\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    assert len(blocks) == 1, "one example of a job"
    return str(blocks[0])


@pytest.mark.slow
def test_the_readme_example_feeds_a_topic(tmp_path: Path) -> None:
    code = readme_example()
    assert "checkpoint=" in code and code.count("./checkpoints/quotes") == 1, "the checkpoint, once"
    topics = [{"name": "quotes", "key": ["/sym"]}]  # as in the demo configuration
    with running(tmp_path, topics) as server:
        code = code.replace("ws://127.0.0.1:8000/ws", server.url)
        code = code.replace("./checkpoints/quotes", str(tmp_path / "checkpoints" / "quotes"))
        job = launch("-c", code)
        try:
            three = lambda: len(sow_records(server.url, "quotes")) >= 3  # noqa: E731
            wait_until(job, three, "the example published nothing")
        finally:
            kill(job)
            job.communicate()
        records = {r["sym"]: r for r in sow_records(server.url, "quotes")}
    assert set(records) == {"AAPL", "MSFT", "NVDA"} and {"bid", "at"} <= set(records["AAPL"])
    checkpoint = tmp_path / "checkpoints" / "quotes"
    assert (checkpoint / "sowpush-client-name").read_text().startswith("spark:quotes:")
    assert (checkpoint / "offsets").is_dir(), "and Spark's own checkpoint"
