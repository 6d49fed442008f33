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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        relative = item.path.resolve().relative_to(_TESTS)
        marker = _MARKER_OF_FOLDER.get(relative.parts[0])
        if marker is not None:
            item.add_marker(marker)
