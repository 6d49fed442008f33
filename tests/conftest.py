"""Shared by every test: the fixture plugins (loopback test web, local HBase) and markers by directory.

Every test under tests/integration is marked `integration` and every test under
tests/unit `unit`, so a file never repeats (or forgets) its marker:
`-m "not integration"` runs the offline tests alone.
"""

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
