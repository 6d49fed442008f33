"""Shared by every test: the fixture plugins (loopback test web, local HBase) and markers by directory.

Every test under tests/integration is marked `integration` and every test under
tests/unit `unit`, so a file never repeats (or forgets) its marker:
`-m "not integration"` runs the offline tests alone.
"""

import resource
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest_plugins = ["testweb_fixtures", "hbase_fixtures"]

_MARKER_OF_FOLDER = {"integration": pytest.mark.integration, "unit": pytest.mark.unit}
_TESTS = Path(__file__).resolve().parent


#: The files that take longest (HBase instances and shells of their own, worker processes, Thrift restarts),
#: longest first, as the 2026-12-01 full run measured them: xdist hands out whole files in this order
#: (`--no-loadscope-reorder`), so a long file started last would be the run's tail.
_LONGEST_FIRST = (
    "integration/test_hbase_local_stall.py", "integration/test_hbase_local_cluster.py",
    "integration/test_workers.py", "integration/test_cluster_init.py", "integration/test_dask.py",
    "integration/test_leases_and_outages.py", "integration/test_gateways.py", "integration/test_resume.py",
    "integration/test_schema_and_cli.py", "integration/test_store.py", "integration/test_inject.py",
    "integration/test_history.py", "integration/test_detect.py", "integration/test_split_auto.py",
    "integration/test_warc.py", "integration/test_updatedb.py", "integration/test_batch_records.py",
    "integration/test_bounds.py", "integration/test_reliability.py", "integration/test_politeness.py",
    "integration/test_serve.py",
)


def _run_order(item: pytest.Item) -> tuple[int, int]:
    """Known long files first, then the other integration files, then the unit tests (short filler)."""
    relative = item.path.resolve().relative_to(_TESTS).as_posix()
    if relative in _LONGEST_FIRST:
        return (0, _LONGEST_FIRST.index(relative))
    return (1 if relative.startswith("integration/") else 2, 0)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        relative = item.path.resolve().relative_to(_TESTS)
        marker = _MARKER_OF_FOLDER.get(relative.parts[0])
        if marker is not None:
            item.add_marker(marker)
    items.sort(key=_run_order)  # stable: the order within a file and among equals stays as collected


# The suite is CPU-bound (two cores busy through a run), so besides the 20 slowest tests
# (--durations) a run ends with the 20 that cost the most CPU: each test's own, in its xdist
# worker, plus that of the child processes it waited for (CLI runs, shells, worker processes).
# Servers started in the background (scripts/hbase-local's JVMs) are not anyone's children.
_CPU_AT_SETUP = pytest.StashKey[float]()
_CPU_REPORTED = "cpu_seconds"
_cpu_of_test: dict[str, float] = {}


def _cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    item.stash[_CPU_AT_SETUP] = _cpu_seconds()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    if call.when == "teardown" and _CPU_AT_SETUP in item.stash:
        report = outcome.get_result()  # type: ignore[attr-defined]
        report.user_properties.append((_CPU_REPORTED, _cpu_seconds() - item.stash[_CPU_AT_SETUP]))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Collects the figures, in the process that prints the summary (xdist's controller too)."""
    for name, value in report.user_properties:
        if name == _CPU_REPORTED:
            _cpu_of_test[report.nodeid] = float(value)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _cpu_of_test:
        return
    terminalreporter.write_sep("=", "20 most CPU-expensive tests (own CPU + children waited for)")
    for nodeid, seconds in sorted(_cpu_of_test.items(), key=lambda kv: -kv[1])[:20]:
        terminalreporter.write_line(f"{seconds:8.2f}s {nodeid}")
