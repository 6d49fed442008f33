"""hbase-schema/ and webpage.py describe the same tables and columns."""

from __future__ import annotations

import csv
import re
from pathlib import Path

from sitemapcrawl.model.cells import Column, Family
from sitemapcrawl.model.webpage import (
    BATCH_FAMILIES,
    BATCH_TABLE,
    BATCHROW_FAMILIES,
    BATCHROW_TABLE,
    DUE_FAMILIES,
    DUE_TABLE,
    HISTORY_FAMILIES,
    HISTORY_TABLE,
    HOST_FAMILIES,
    HOST_TABLE,
    WEBPAGE_FAMILIES,
    WEBPAGE_TABLE,
    all_columns,
)

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


def test_shell_scripts_declare_the_model_families() -> None:
    assert families_in_script(WEBPAGE_TABLE) == without_meaning(WEBPAGE_FAMILIES)
    assert families_in_script(HOST_TABLE) == without_meaning(HOST_FAMILIES)
    assert families_in_script(HISTORY_TABLE) == without_meaning(HISTORY_FAMILIES)
    assert families_in_script(BATCH_TABLE) == without_meaning(BATCH_FAMILIES)
    assert families_in_script(BATCHROW_TABLE) == without_meaning(BATCHROW_FAMILIES)
    assert families_in_script(DUE_TABLE) == without_meaning(DUE_FAMILIES)


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


def test_every_column_family_is_declared() -> None:
    declared = {WEBPAGE_TABLE: {f.name for f in WEBPAGE_FAMILIES}, HOST_TABLE: {f.name for f in HOST_FAMILIES},
                BATCH_TABLE: {f.name for f in BATCH_FAMILIES},
                HISTORY_TABLE: {f.name for f in HISTORY_FAMILIES},
                BATCHROW_TABLE: {f.name for f in BATCHROW_FAMILIES},
                DUE_TABLE: {f.name for f in DUE_FAMILIES}}
    for table, column in all_columns():
        assert column.family in declared[table], (table, column)
