"""The order in which xdist hands out the suite's modules, the JVM options of the tests' Spark,
and Hypothesis without its per-example deadline.

scripts/test runs ``--dist loadscope --no-loadscope-reorder``: a worker runs a module whole (its
browser or Spark session is started once), or a class whole for the tests that are classes (the
engine model's parts), and workers take them in collection order. The modules measured longest go
first, so that the last minutes are not one worker finishing a long module while the others idle.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

# Property tests assert behaviour, never time: on two loaded cores one example of a fast test can
# take longer than Hypothesis's default 200 ms deadline, which fails the test for no fault.
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")

# The longest, longest first (a scripts/test run on two cores). A module not named here starts
# after these: first the ones with a slow test, then the rest, in collection order.
LONG = (
    "tests/spark/test_demo_console.py",
    "tests/browser/test_demo_dashboard.py",
    "tests/spark/test_demo_transforms.py",
    "tests/core/test_engine_model.py",  # its four parts
    "tests/spark/test_feeds.py",
    "tests/spark/test_python310.py",
    "tests/spark/test_main_command.py",
    "tests/spark/test_feed_restart.py",
    "tests/browser/test_desk_model.py",
    "tests/cluster/test_lost_redis.py",
    "tests/cluster/test_cluster.py",
    "tests/cluster/test_workers.py",
    "tests/spark/test_files_command.py",
    "tests/spark/test_readme_example.py",
    "tests/browser/test_reconnect.py",
    "tests/cluster/test_edges.py",
    "tests/cluster/test_failures.py",
    "tests/cluster/test_client_names.py",
)

# Spark's JVMs (the tests' SparkSession and every feed a test starts as a process of its own) run
# with the client compiler only and the serial collector: 40% less CPU for the short jobs the
# tests run, on two cores shared by four workers. Neither changes what Spark computes.
os.environ.setdefault("SPARK_SUBMIT_OPTS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")


def rank(module: str, slow: set[str]) -> int:
    if module in LONG:
        return LONG.index(module)
    return len(LONG) + (0 if module in slow else 1)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return  # the order only matters to xdist's scheduler
    slow = {item.nodeid.split("::", 1)[0] for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: rank(item.nodeid.split("::", 1)[0], slow))
