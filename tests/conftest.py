"""The order in which xdist hands out the suite's modules, the JVM options of the tests' Spark,
and Hypothesis without its per-example deadline.

scripts/test runs ``--dist loadscope --no-loadscope-reorder``: a worker runs a module whole (its
browser or Spark session is started once), or a class whole for the tests that are classes (the
engine model's parts), and workers take them in collection order. The modules measured longest go
first, so that the last minutes are not one worker finishing a long module while the others idle.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import settings
from xdist.remote import Producer
from xdist.scheduler import LoadScopeScheduling

from server.core import native

from .integration.server_process import ServerProcess

# Property tests assert behaviour, never time: on two loaded cores one example of a fast test can
# take longer than Hypothesis's default 200 ms deadline, which fails the test for no fault.
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")

# The longest, longest first (a full run of the main pass on two cores, each module's total). A module
# not named here starts after these: first the ones with a slow test, then the rest, in collection
# order. A module added to the suite that takes more than ten seconds or so belongs here.
LONG = (
    "tests/core/test_engine_model.py",  # its four parts
    "tests/spark/test_demo_console.py",
    "tests/browser/test_demo_dashboard.py",
    "tests/browser/test_dashboard_viewport.py",
    "tests/spark/test_feeds.py",
    "tests/spark/test_compose_topology.py",
    "tests/spark/test_demo_transforms.py",
    "tests/spark/test_python310.py",
    "tests/browser/test_adapters.py",
    "tests/cluster/test_lost_redis.py",
    "tests/cluster/test_cluster.py",
    "tests/browser/test_viewport_client.py",
    "tests/cluster/test_workers.py",
    "tests/integration/test_process.py",
    "tests/integration/test_durability.py",
    "tests/spark/test_feed_restart.py",
    "tests/spark/test_files_command.py",
    "tests/client/test_declarations.py",
    "tests/browser/test_reconnect.py",
    "tests/client/test_reconnects.py",
    "tests/integration/test_clients_when_the_server_vanishes.py",
    "tests/client/test_store.py",
    "tests/browser/test_panes.py",
    "tests/browser/test_aggrid_viewport.py",
    "tests/cluster/test_failures.py",
    "tests/integration/test_aggregation.py",
    "tests/browser/test_viewport_recovery.py",
    "tests/core/filters/test_filters.py",
    "tests/integration/test_protocol.py",
    "tests/browser/test_client_errors.py",
    "tests/cluster/test_edges.py",
    "tests/browser/test_desk_table.py",
    "tests/browser/test_client.py",
    "tests/browser/test_desk_states.py",
    "tests/browser/test_beyond.py",
    "tests/spark/test_readme_example.py",
    "tests/integration/test_front_door.py",
    "tests/browser/test_dashboard.py",
    "tests/cluster/test_client_names.py",
    "tests/integration/test_slow_consumer.py",
    "tests/core/fanout/test_windows_model.py",
    "tests/integration/test_crash_damage.py",
    "tests/integration/test_server_names.py",
    "tests/browser/test_client_iteration.py",
    "tests/core/records/test_diff.py",
    "tests/integration/test_viewports.py",
    "tests/integration/test_protocol_forms.py",
    "tests/spark/test_feed_transactions.py",
    "tests/browser/test_desk_model.py",
    "tests/cluster/test_cluster_model.py",
    "tests/browser/test_client_deadlines.py",
    "tests/integration/test_reload_auth.py",
    "tests/integration/test_viewport_model.py",
    "tests/cluster/test_transactions.py",
    "tests/browser/test_connection.py",
    "tests/core/fanout/test_index.py",
    "tests/core/queue/test_tx_conflation_property.py",
    "tests/integration/test_snapshot_race.py",
    "tests/cluster/test_aggregation.py",
    "tests/integration/test_group_viewports.py",
    "tests/integration/test_aggregation_model.py",
)

# Spark's JVMs (the tests' SparkSession and every feed a test starts as a process of its own) run
# with the client compiler only and the serial collector: 40% less CPU for the short jobs the
# tests run, on two cores shared by four workers. Neither changes what Spark computes.
os.environ.setdefault("SPARK_SUBMIT_OPTS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")


def rank(module: str, slow: set[str]) -> int:
    if module in LONG:
        return LONG.index(module)
    return len(LONG) + (0 if module in slow else 1)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A failing test's report ends with the last lines of each server it could have talked to:
    those still running (a fixture's may serve a whole module) and those it started and stopped. A
    handshake refused or a message never sent is read with what the server said of it."""
    report: pytest.TestReport = yield
    if call.when == "call":
        if report.failed:
            for process in ServerProcess.started:
                tail = "".join(process.lines[-SERVER_LINES:])
                report.sections.append((f"server on port {process.port}, its last lines", tail))
        ServerProcess.started[:] = [p for p in ServerProcess.started if p.process.poll() is None]
    return report


SERVER_LINES = 200


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--pure-pass",
        action="store_true",
        help="run only what the pure-Python core is tested with too: the core's own tests, and "
        "the protocol over real sockets (PURE_PASS), of those selected",
    )


# scripts/test's second pass, with SOWPUSH_PURE=1: the core's own tests, and servers with the pure
# core (they inherit the variable) driven over real sockets through every command of the protocol.
PURE_PASS = ("tests/core/", "tests/integration/test_protocol.py", "tests/integration/test_protocol_forms.py")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--pure-pass"):
        others = [item for item in items if not item.nodeid.startswith(PURE_PASS)]
        items[:] = [item for item in items if item.nodeid.startswith(PURE_PASS)]
        config.hook.pytest_deselected(items=others)
    # A test marked pure replaces a function or method of the core to watch it: the compiled core
    # binds its calls when it is built, so such a test runs against the pure-Python core only
    # (scripts/test runs the core's tests against both).
    if native.COMPILED:
        skip = pytest.mark.skip(reason="replaces the core's own functions: pure-Python core only")
        for item in items:
            if item.get_closest_marker("pure"):
                item.add_marker(skip)
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return  # the order only matters to xdist's scheduler
    slow = {item.nodeid.split("::", 1)[0] for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: rank(item.nodeid.split("::", 1)[0], slow))


# The modules that use the tests' SparkSession (tests/spark/conftest.py, one per worker) are one
# unit of work: its JVM starts once, not once per module on as many workers (15 to 20 s each on
# two loaded cores).
SPARK_SESSION = (
    "tests/spark/test_feeds.py",
    "tests/spark/test_demo_transforms.py",
    "tests/spark/test_feed_restart.py",
    "tests/spark/test_feed_transactions.py",
)


# The browser modules are this many units of work, each one worker's run of its modules one after
# another with one Playwright driver and one Chromium (tests/browser/conftest.py, package scope):
# started once a unit rather than once a module (about 0.85 CPU-s each, 28 modules).
BROWSER_UNITS = 4
BROWSER = "tests/browser/"


def browser_units(collection: list[str], units: int = BROWSER_UNITS) -> dict[str, str]:
    """The unit of each browser module of ``collection`` (in the order the suite runs them, the
    longest first): dealt out like cards, back and forth, so that each unit has long modules and
    short ones."""
    modules = list(dict.fromkeys(n.split("::", 1)[0] for n in collection if n.startswith(BROWSER)))
    unit_of = {}
    for index, module in enumerate(modules):
        turn, seat = divmod(index, units)
        unit_of[module] = f"browser unit {seat if turn % 2 == 0 else units - 1 - seat}"
    return unit_of


class SharedSparkScheduling(LoadScopeScheduling):
    _browser_units: dict[str, str] | None = None

    def _split_scope(self, nodeid: str) -> str:
        module = nodeid.split("::", 1)[0]
        if module in SPARK_SESSION:
            return "the tests' SparkSession"
        if module.startswith(BROWSER):
            if self._browser_units is None:
                self._browser_units = browser_units(self.collection or [])
            return self._browser_units[module]
        return super()._split_scope(nodeid)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Producer) -> LoadScopeScheduling | None:
    return SharedSparkScheduling(config, log) if config.getvalue("dist") == "loadscope" else None
