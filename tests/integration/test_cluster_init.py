"""init's cluster options and the Thrift settings against the real local HBase.

Pre-split tables (regions counted through Thrift), namespaces, compression
checked by the cluster, the `--print-schema` script run in the HBase shell,
and a second Thrift gateway (framed transport, compact protocol) started and
stopped by PID next to the shared one.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_helpers import cli, one_error_line
from hbase_fixtures import HBASE_LOCAL, hbase_shell, run_shell_file, side_gateway

from sitemapcrawl.config import Settings
from sitemapcrawl.model.webpage import HOST_TABLE, TABLE_NAMES, WEBPAGE_TABLE
from sitemapcrawl.modes import ThriftProtocol, ThriftTransport
from sitemapcrawl.storage.store import Store


@pytest.fixture(scope="module")
def namespaces(hbase_address: str) -> Iterator[list[str]]:
    """The namespaces this file's tests named; at its end their tables are dropped, and the
    namespaces in one shell run (a JRuby start costs ~20 s of CPU)."""
    names: list[str] = []
    yield names
    for name in names:
        for prefix in (f"{name}:a_", f"{name}:b_"):
            with Store(Settings(hbase=hbase_address, table_prefix=prefix)) as store:
                store.drop_tables()
    if names:
        hbase_shell("\n".join(f"drop_namespace '{name}' if @shell.admin.list_namespace.include?('{name}')"
                              for name in names))


@pytest.fixture
def namespace(namespaces: list[str]) -> str:
    """A fresh namespace name for this test alone; dropped (if made) at the end of the file."""
    name = f"t_ns_{uuid.uuid4().hex[:8]}"
    namespaces.append(name)
    return name


def test_print_schema_runs_in_the_shell_and_makes_the_tables_init_makes(
        hbase_address: str, table_prefix: str, namespace: str, tmp_path: Path) -> None:
    by_init = cli(Settings(hbase=hbase_address, table_prefix=table_prefix), "init", "--compression", "gz")
    assert by_init.exit_code == 0, by_init.output

    keys = tmp_path / "keys.txt"
    keys.write_text("org.example.m:\ncom.example.b:\n# comment\n", encoding="utf-8")
    prefix = f"{namespace}:a_"
    printed = cli(Settings(hbase=hbase_address, table_prefix=prefix), "init", "--print-schema",
                  "--split-keys", str(keys), "--compression", "gz")
    assert printed.exit_code == 0, printed.output
    # The script, then the same statements again in the same shell (one JRuby start, ~10 s of CPU, not two):
    # the second run finds every table and changes nothing.
    body = printed.stdout.rstrip()
    assert body.endswith("\nexit"), body[-200:]
    script = tmp_path / "schema-twice.hbase"
    script.write_text(body.removesuffix("exit") + printed.stdout, encoding="utf-8")
    shown = run_shell_file(script)
    assert all(f"{prefix}{base} exists; nothing to do" in shown for base in TABLE_NAMES), shown

    with Store(Settings(hbase=hbase_address, table_prefix=table_prefix)) as thrift_made, \
            Store(Settings(hbase=hbase_address, table_prefix=prefix)) as shell_made:
        assert set(shell_made.existing_tables()) == set(thrift_made.existing_tables())
        for table in thrift_made.existing_tables():
            assert shell_made.families(table) == thrift_made.families(table), table
            assert all(f["compression"] == b"GZ" for f in shell_made.families(table).values())
        starts = [start for start, _end, _server in shell_made.regions(WEBPAGE_TABLE)]
        assert starts == [b"", b"com.example.b:", b"org.example.m:"]
        assert len(thrift_made.regions(WEBPAGE_TABLE)) == 1


def test_init_through_the_shell_makes_the_namespace_and_the_regions(
        hbase_address: str, namespace: str, tmp_path: Path) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("".join(f"http://h{n}.example/ depth=1\n" for n in range(12)), encoding="utf-8")
    prefix = f"{namespace}:b_"
    without_shell = cli(Settings(hbase=hbase_address, table_prefix=prefix), "init")
    assert without_shell.exit_code == 2
    line = one_error_line(without_shell.stderr)
    assert f"namespace '{namespace}' does not exist" in line and f"create_namespace '{namespace}'" in line
    assert "scripts/hbase-local start" not in line

    made = cli(Settings(hbase=hbase_address, table_prefix=prefix), "init", "--split-from-seeds", str(seeds),
               "--regions", "4",
               "--hbase-shell", f"{HBASE_LOCAL} shell")
    assert made.exit_code == 0, made.output
    assert f"created table {prefix}webpage (4 regions)" in made.stderr
    with Store(Settings(hbase=hbase_address, table_prefix=prefix)) as store:
        assert set(store.existing_tables()) >= {WEBPAGE_TABLE, HOST_TABLE}
        starts = [start for start, _end, _server in store.regions(WEBPAGE_TABLE)]
        # Sorted hosts: h0, h10, h11, h1, h2, ... h9 (":" sorts after digits); three a region.
        assert starts == [b"", b"example.h1:", b"example.h4:", b"example.h7:"]
    again = cli(Settings(hbase=hbase_address, table_prefix=prefix), "init", "--split-from-seeds", str(seeds),
                "--regions", "4")
    assert again.exit_code == 0 and "regions are left as they are" in again.stderr


def test_pre_split_without_a_shell_says_how(hbase_address: str, table_prefix: str, tmp_path: Path) -> None:
    keys = tmp_path / "keys.txt"
    keys.write_text("com.example.m:\n", encoding="utf-8")
    result = cli(Settings(hbase=hbase_address, table_prefix=table_prefix), "init", "--split-keys", str(keys))
    assert result.exit_code == 2
    assert "set hbase_shell" in one_error_line(result.stderr) and "--print-schema" in result.stderr
    with Store(Settings(hbase=hbase_address, table_prefix=table_prefix)) as store:
        assert store.existing_tables() == []


def test_compression_the_cluster_cannot_use_is_refused_in_one_line(hbase_address: str, table_prefix: str) -> None:
    # This HBase has no native Hadoop library: its table sanity check refuses snappy.
    result = cli(Settings(hbase=hbase_address, table_prefix=table_prefix), "init", "--compression", "snappy")
    assert result.exit_code == 2
    line = one_error_line(result.stderr)
    assert f"create table {table_prefix}webpage: HBase at {hbase_address} refused it:" in line
    assert "snappy" in line.lower() and "--compression" in line and "\tat " not in line
    gz = cli(Settings(hbase=hbase_address, table_prefix=table_prefix), "init", "--compression", "gz")
    assert gz.exit_code == 0, gz.output
    with Store(Settings(hbase=hbase_address, table_prefix=table_prefix)) as store:
        assert {f["compression"] for f in store.families(WEBPAGE_TABLE).values()} == {b"GZ"}


# --- a framed/compact Thrift gateway -----------------------------------------------------


@pytest.fixture(scope="module")
def framed_compact_gateway(hbase_address: str) -> Iterator[str]:
    """A second Thrift1 gateway (-framed -compact) on the same HBase; stopped by its PID afterwards."""
    with side_gateway(hbase_address, "--framed", "--compact") as port:
        yield f"127.0.0.1:{port}"


def test_framed_compact_settings_talk_to_a_framed_compact_gateway(
        framed_compact_gateway: str, table_prefix: str, hbase_address: str) -> None:
    env = {"SITEMAPCRAWL_HBASE_TRANSPORT": "framed", "SITEMAPCRAWL_HBASE_PROTOCOL": "compact"}
    made = cli(Settings(hbase=framed_compact_gateway, table_prefix=table_prefix), "init", env=env)
    assert made.exit_code == 0, made.output
    framed = Settings(hbase=framed_compact_gateway, table_prefix=table_prefix, hbase_transport=ThriftTransport.FRAMED,
                      hbase_protocol=ThriftProtocol.COMPACT)
    with Store(framed) as store:
        store.write(WEBPAGE_TABLE, [(f"example.f:http/{n}".encode(), {b"f:st": b"1"}) for n in range(2500)])
        assert sum(1 for _ in store.scan(WEBPAGE_TABLE, prefix=b"example.f:")) == 2500
    # The same rows through the shared buffered/binary gateway: one HBase behind both.
    with Store(Settings(hbase=hbase_address, table_prefix=table_prefix)) as plain:
        assert plain.row(WEBPAGE_TABLE, b"example.f:http/7") == {b"f:st": b"1"}

    mismatched = cli(Settings(hbase=framed_compact_gateway, table_prefix=table_prefix), "readdb", "--stats",
                     env={"SITEMAPCRAWL_HBASE_RETRIES": "2", "SITEMAPCRAWL_HBASE_TIMEOUT_MS": "5000"})
    assert mismatched.exit_code == 2
    line = one_error_line(mismatched.stderr)
    assert "transport buffered and protocol binary" in line and "scripts/hbase-local start" not in line
