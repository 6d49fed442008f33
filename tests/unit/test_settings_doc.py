"""The docs' settings table is the one `Settings` renders, and every setting has a meaning."""

from __future__ import annotations

from hbase_fixtures import REPO

from sitemapcrawl.cli.reference_doc import SETTINGS
from sitemapcrawl.cli.settings_doc import field_docs, settings_table
from sitemapcrawl.config import ENV_PREFIX, field_types


def test_the_configuration_page_holds_the_table_rendered_from_settings() -> None:
    page = (REPO / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert page.count(SETTINGS.start) == 1, "docs/configuration.md lost its settings table's marker"
    assert settings_table() in page.split(SETTINGS.start)[1].split(SETTINGS.end)[0]


def test_every_setting_has_a_row_with_its_meaning() -> None:
    docs = field_docs()
    table = settings_table().splitlines()
    assert len(table) == 2 + len(field_types())
    for name in field_types():
        assert docs.get(name), f"setting {name} has no docstring under its field in config.py"
        row = next(line for line in table if line.startswith(f"| `{name}` |"))
        assert f"`{ENV_PREFIX}{name.upper()}`" in row and docs[name].replace("|", "\\|") in row


def test_known_rows() -> None:
    table = settings_table()
    assert "| `max_connections` | 1000 | 1..100_000, whole | `SITEMAPCRAWL_MAX_CONNECTIONS` |" in table
    assert "| `queue_by` | \"host\" | host, ip | `SITEMAPCRAWL_QUEUE_BY` |" in table
    assert "| `http_read_timeout` | 30.0 | > 0, <= 86_400 | `SITEMAPCRAWL_HTTP_READ_TIMEOUT` |" in table
    assert "| `hbase` | \"127.0.0.1:9090\" | HOST:PORT[,HOST:PORT...] |" in table
