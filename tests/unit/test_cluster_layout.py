"""init's cluster options (split points, compression, namespace, the shell script), the packaged
schema files, the Thrift settings and the advice of HBase errors: pure parts, no HBase."""

from __future__ import annotations

import re
import tomllib
from bisect import bisect_right
from pathlib import Path

import pytest
from hbase_fixtures import REPO
from Hbase_thrift import IllegalArgument, IOError

from sitemapcrawl.config import HBASE_HOST, HBASE_THRIFT_PORT, Settings, load_settings
from sitemapcrawl.errors import StoreRejectedError, UsageError
from sitemapcrawl.model.webpage import TABLES
from sitemapcrawl.modes import Compression, ThriftProtocol, ThriftTransport
from sitemapcrawl.storage.failures import HOW_TO_START, create_refusal, first_line, how_to_reach
from sitemapcrawl.storage.hbase_shell import run_script
from sitemapcrawl.storage.schema import (
    Layout,
    packaged_files,
    read_split_keys,
    schema_scripts,
    seed_urls,
    shell_script,
    split_keys_from_urls,
)
from sitemapcrawl.web.rowkeys import host_row_prefix, row_key
from sitemapcrawl.web.urls import canonicalize

SCHEMA = REPO / "hbase-schema"


# --- split points ------------------------------------------------------------------


def test_split_points_share_hosts_evenly_at_known_keys() -> None:
    urls = ["http://a.example/", "http://b.example/", "http://c.example/x", "http://d.example/",
            "http://d.example/y"]
    assert split_keys_from_urls(urls, 3) == ("example.c:", "example.d:")
    heavy = ["http://a.example/"] * 10 + ["http://b.example/", "http://c.example/", "http://d.example/"]
    assert split_keys_from_urls(heavy, 2) == ("example.b:",)


def test_split_points_never_cut_a_host() -> None:
    urls = [f"http://h{h}.example/page{p}" for h in range(37) for p in range(h % 5 + 1)]
    urls += ["http://www.h3.example/", "https://h3.example/", "http://h3.example:8080/"]
    keys = split_keys_from_urls(urls, 8)
    assert len(keys) == 7 and list(keys) == sorted(set(keys))
    region_of_host: dict[str, set[int]] = {}
    for url in urls:
        canonical = canonicalize(url)
        region = bisect_right(keys, row_key(canonical))
        region_of_host.setdefault(host_row_prefix(canonical), set()).add(region)
    assert all(len(regions) == 1 for regions in region_of_host.values())


def test_fewer_hosts_than_regions_gives_one_region_per_host_and_bad_urls_are_skipped() -> None:
    assert split_keys_from_urls(["http://a.example/", "http://b.example/"], 4) == ("example.b:",)
    assert split_keys_from_urls(["not a url", "http://x.example/"], 3) == ()
    assert split_keys_from_urls([], 3) == ()
    with pytest.raises(UsageError):
        split_keys_from_urls(["http://x.example/"], 0)


def test_split_keys_file_sorted_distinct_comments_skipped(tmp_path: Path) -> None:
    path = tmp_path / "keys.txt"
    path.write_text("# regions\ncom.m\n\ncom.b\ncom.m\n", encoding="utf-8")
    assert read_split_keys(path) == ("com.b", "com.m")
    path.write_text("com.b\nhas space\n", encoding="utf-8")
    with pytest.raises(UsageError, match=r"line 2: 'has space'"):
        read_split_keys(path)
    path.write_text("# nothing\n", encoding="utf-8")
    with pytest.raises(UsageError, match="no keys"):
        read_split_keys(path)
    with pytest.raises(UsageError, match="cannot read"):
        read_split_keys(tmp_path / "missing.txt")


def test_seed_urls_are_the_first_word_of_each_line(tmp_path: Path) -> None:
    path = tmp_path / "seeds.txt"
    path.write_text("# seeds\nhttp://a.example/ depth=1\n\n  http://b.example/x\tscore=2\n", encoding="utf-8")
    assert seed_urls(path) == ["http://a.example/", "http://b.example/x"]


# --- the shell script --------------------------------------------------------------


def test_shell_script_applies_prefix_namespace_compression_and_splits() -> None:
    script = shell_script(Layout("crawl:t_", Compression.GZ, ("com.b", "it's")))
    assert "ENV['SITEMAPCRAWL_TABLE_PREFIX'] = 'crawl:t_'" in script
    assert "create_namespace 'crawl' unless @shell.admin.list_namespace.include?('crawl')" in script
    families = len(re.findall(r"\{NAME => '\w+'", script))
    assert families == sum(len(table.families) for table in TABLES)
    assert script.count("COMPRESSION => 'GZ'}") == families
    assert script.count("SPLITS =>") == 1
    assert "SPLITS => ['com.b', 'it\\'s']" in script
    webpage = script.index("# ---- webpage")
    assert webpage < script.index("SPLITS") < script.index("# ---- host")
    assert re.findall(r"^exit$", script, re.MULTILINE) == ["exit"] and script.rstrip().endswith("exit")


def test_shell_script_without_options_is_the_schema_files() -> None:
    script = shell_script(Layout())
    assert "COMPRESSION" not in script and "SPLITS" not in script and "namespace" not in script
    for table, text in schema_scripts().items():
        body = re.sub(r"^exit\s*$", "", text, flags=re.MULTILINE).rstrip()
        assert body in script, table


def test_a_bad_namespace_is_refused() -> None:
    with pytest.raises(UsageError, match="namespace"):
        shell_script(Layout("bad-ns:t_"))
    assert Layout("crawl:").namespace == "crawl" and Layout("t_").namespace is None


# --- the schema files travel with the package ----------------------------------------


def test_packaged_schema_files_are_the_top_level_ones() -> None:
    folder = packaged_files()
    packaged = {entry.name: entry.read_bytes() for entry in folder.iterdir() if not entry.name.startswith(".")}
    top_level = {path.name: path.read_bytes() for path in SCHEMA.iterdir() if not path.name.startswith(".")}
    assert packaged == top_level and "webpage.hbase" in packaged and "columns.tsv" in packaged
    # One source: the package folder is a link to hbase-schema/, not a copy that could drift.
    assert (REPO / "sitemapcrawl" / "hbase_schema").resolve() == SCHEMA.resolve()


def test_the_wheel_declares_the_schema_files_as_package_data() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    data = project["tool"]["setuptools"]["package-data"]["sitemapcrawl"]
    for name in (p.name for p in SCHEMA.iterdir() if not p.name.startswith(".")):
        assert any(Path("hbase_schema", name).match(pattern) for pattern in data), name


# --- Thrift settings and what errors advise ------------------------------------------


def test_thrift_transport_and_protocol_settings_are_checked() -> None:
    settings = load_settings(environ={"SITEMAPCRAWL_HBASE_TRANSPORT": "framed",
                                      "SITEMAPCRAWL_HBASE_PROTOCOL": "compact"})
    assert (settings.hbase_transport, settings.hbase_protocol) == (ThriftTransport.FRAMED, ThriftProtocol.COMPACT)
    assert (Settings().hbase_transport, Settings().hbase_protocol) == (ThriftTransport.BUFFERED, ThriftProtocol.BINARY)
    with pytest.raises(UsageError, match="hbase_transport.*choose one of buffered, framed"):
        load_settings(environ={"SITEMAPCRAWL_HBASE_TRANSPORT": "http"})
    with pytest.raises(UsageError, match="hbase_protocol"):
        load_settings(environ={"SITEMAPCRAWL_HBASE_PROTOCOL": "json"})


def test_start_the_local_one_only_for_the_local_default_address() -> None:
    assert HOW_TO_START in how_to_reach(Settings())
    remote = how_to_reach(Settings(hbase="hbase-thrift.example:9090", hbase_transport=ThriftTransport.FRAMED))
    assert "scripts/hbase-local" not in remote and "framed" in remote and "hbase_transport" in remote
    assert "abort or OutOfMemoryError" in remote


def test_the_local_hbase_is_where_its_script_variables_say(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HBASE_LOCAL_DIR", "HBASE_LOCAL_HOST", "HBASE_LOCAL_THRIFT_PORT"):
        monkeypatch.delenv(name, raising=False)
    assert ".hbase-local/logs/master.log" in how_to_reach(Settings())
    assert "scripts/hbase-local status" in how_to_reach(Settings())
    monkeypatch.setenv("HBASE_LOCAL_DIR", "/work/hb")
    monkeypatch.setenv("HBASE_LOCAL_THRIFT_PORT", "9377")
    assert "/work/hb/logs/master.log" in how_to_reach(Settings(hbase="127.0.0.1:9377"))
    assert "/work/hb/logs" not in how_to_reach(Settings(hbase="127.0.0.1:9378"))


def test_the_default_hbase_address_is_the_local_scripts_default() -> None:
    assert Settings().hbase == f"{HBASE_HOST}:{HBASE_THRIFT_PORT}" == "127.0.0.1:9090"
    script = (Path(__file__).resolve().parents[2] / "scripts" / "hbase-local").read_text(encoding="utf-8")
    assert f"bind_host=${{HBASE_LOCAL_HOST:-{HBASE_HOST}}}" in script
    assert f"thrift_port=${{HBASE_LOCAL_THRIFT_PORT:-{HBASE_THRIFT_PORT}}}" in script


def test_first_line_strips_java_wrapping_and_stack() -> None:
    error = IOError(message=b"org.apache.hadoop.hbase.DoNotRetryIOException: org.apache.hadoop.hbase."
                            b"DoNotRetryIOException: java.lang.UnsatisfiedLinkError: snappy\n\tat a.b(C.java:1)\n")
    assert first_line(error) == "java.lang.UnsatisfiedLinkError: snappy"
    assert first_line(IOError(message=b"\xff\x01bad")) == "\ufffd\\x01bad"


def test_create_refusals_name_the_server_line_and_what_to_do() -> None:
    namespace = create_refusal(IOError(message=b"org.apache.hadoop.hbase.NamespaceNotFoundException: "
                                                b"org.apache.hadoop.hbase.NamespaceNotFoundException: crawl\n\tat x"),
                               "crawl:webpage", "h:9090")
    assert namespace is not None and "namespace 'crawl' does not exist" in str(namespace)
    assert "create_namespace 'crawl'" in str(namespace) and "\n" not in str(namespace)
    compression = create_refusal(IOError(message=b"org.apache.hadoop.hbase.DoNotRetryIOException: Compression "
                                                  b"algorithm 'snappy' previously failed test.\n\tat y"),
                                 "webpage", "h:9090")
    assert compression is not None
    assert "refused it: Compression algorithm 'snappy' previously failed test." in str(compression)
    assert "--compression" in str(compression)
    bad = create_refusal(IllegalArgument(message=b"java.lang.IllegalArgumentException: Unsupported compression "
                                                 b"algorithm name: lzo\n\tat z"), "webpage", "h:9090")
    assert bad is not None and "Unsupported compression algorithm name: lzo" in str(bad)
    name = create_refusal(IllegalArgument(message=b"java.lang.IllegalArgumentException: Illegal character <33> "
                                                  b"at 3\n\tat z"), "t_!webpage", "h:9090")
    assert name is not None and "Illegal character" in str(name) and "table prefix" in str(name)
    assert create_refusal(IOError(message=b"org.apache.hadoop.hbase.ipc.ServerNotRunningYetException: x"),
                          "webpage", "h:9090") is None


# --- running a script through the HBase shell ----------------------------------------


def test_run_script_hands_the_file_to_the_command_and_returns_its_output() -> None:
    assert run_script("sh -c 'cat \"$0\"'", "create 't', 'f'\nexit\n") == "create 't', 'f'\nexit\n"


def test_run_script_turns_the_shell_error_line_into_one_line() -> None:
    with pytest.raises(StoreRejectedError, match=r"failed \(exit 0\): ERROR: NamespaceExistException: crawl$"):
        run_script("sh -c 'echo noise; echo \"ERROR: NamespaceExistException: crawl\"; echo more'", "x")
    with pytest.raises(StoreRejectedError, match=r"failed \(exit 3\): last words"):
        run_script("sh -c 'echo last words; exit 3'", "x")
    with pytest.raises(UsageError, match="not found"):
        run_script("no-such-hbase-shell-here -n", "x")
    with pytest.raises(UsageError, match="empty"):
        run_script("  ", "x")
