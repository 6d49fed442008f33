"""hbase-schema/ and the row model's registry of tables (`model.webpage.TABLES`) describe the same tables
and columns: the shell scripts are written by hand (they carry comments for operators), so this test is
what keeps them in step with the registry."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from sitemapcrawl.model.cells import Column, Family, Table, columns_of, map_families_of
from sitemapcrawl.model.webpage import TABLE_NAMES, TABLES, all_columns

SCHEMA = Path(__file__).resolve().parents[2] / "hbase-schema"
FAMILY_LINE = re.compile(
    r"\{NAME => '(\w+)',\s*VERSIONS => (\d+),\s*BLOOMFILTER => '(\w+)',\s*BLOCKCACHE => (true|false)\}"
)


def families_in_script(name: str) -> list[Family]:
    text = (SCHEMA / f"{name}.hbase").read_text(encoding="utf-8")
    return [
        Family(fam, "", int(versions), cache == "true", bloom)
        for fam, versions, bloom, cache in FAMILY_LINE.findall(text)
    ]


def without_meaning(families: tuple[Family, ...]) -> list[Family]:
    return [Family(f.name, "", f.max_versions, f.block_cache_enabled, f.bloom_filter_type) for f in families]


def test_there_is_one_shell_script_per_registered_table() -> None:
    assert sorted(path.stem for path in SCHEMA.glob("*.hbase")) == sorted(TABLE_NAMES)
    assert len(set(TABLE_NAMES)) == len(TABLES) == len({table.row_type for table in TABLES})


@pytest.mark.parametrize("table", TABLES, ids=TABLE_NAMES)
def test_shell_scripts_declare_the_model_families(table: Table) -> None:
    assert families_in_script(table.name) == without_meaning(table.families)
    assert f'table = "#{{prefix}}{table.name}"' in (SCHEMA / f"{table.name}.hbase").read_text(encoding="utf-8")


def test_column_map_lists_every_column_of_the_model() -> None:
    with (SCHEMA / "columns.tsv").open(encoding="utf-8") as handle:
        listed = {(row["table"], row["column"]): row for row in csv.DictReader(handle, delimiter="\t")}
    expected = {}
    for table, column in all_columns():
        name = column.name
        expected[(table, name)] = column
    assert set(listed) == set(expected)
    for key, column in expected.items():
        row = listed[key]
        assert row["meaning"] == column.meaning and row["written by"] == column.writer, key
        if isinstance(column, Column):
            assert row["format"] == column.codec.name, key


def test_the_column_map_names_each_columns_field() -> None:
    with (SCHEMA / "columns.tsv").open(encoding="utf-8") as handle:
        listed = {(row["table"], row["column"]): row["field"] for row in csv.DictReader(handle, delimiter="\t")}
    for table in TABLES:
        for field, column in [*columns_of(table.row_type).items(), *map_families_of(table.row_type).items()]:
            assert listed[(table.name, column.name)] == field, (table.name, column.name)


def test_every_column_family_is_declared() -> None:
    declared = {table.name: {f.name for f in table.families} for table in TABLES}
    for table, column in all_columns():
        assert column.family in declared[table], (table, column)
