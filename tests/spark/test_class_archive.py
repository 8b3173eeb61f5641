"""The Spark driver's class archive (spark_feeds/classes.py): set-up makes it, and a feed's JVM maps
it. ``-Xshare:on`` makes a JVM that cannot map its archive (none, or one that no longer matches
Spark's jars) refuse to start, where a feed's own JVM would quietly start without it, slower."""

from __future__ import annotations

import os
import subprocess
import sys

from spark_feeds import classes

from ..waiting import HANG_S

JOB = """
from spark_feeds.session import local_session
spark = local_session("class archive check", "local[1]")
assert spark.range(10).count() == 10
spark.stop()
print("mapped")
"""


def test_set_up_made_the_archive_and_a_feeds_jvm_maps_it() -> None:
    assert classes.ARCHIVE.exists(), "scripts/bootstrap makes it: python -m spark_feeds.classes"
    assert str(classes.ARCHIVE) in classes.java_options()
    options = f"{os.environ.get('SPARK_SUBMIT_OPTS', '')} -Xshare:on"
    result = subprocess.run(
        [sys.executable, "-c", JOB],
        env={**os.environ, "SPARK_SUBMIT_OPTS": options},
        capture_output=True,
        text=True,
        timeout=HANG_S,
        check=False,
    )
    assert result.returncode == 0 and "mapped" in result.stdout, result.stderr[-3000:]
