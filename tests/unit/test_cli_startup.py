"""Start-up cost: a command imports only what it uses; options parse without pydantic.

Measured as which modules a run leaves in `sys.modules` (a wall-clock
threshold does not belong in a unit test; benchmarks/bench_cli.py times it).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sitemapcrawl.cli.app import app

runner = CliRunner()
HEAVY = ("happybase", "requests", "rich", "pydantic", "protego", "usp", "distributed", "sitemapcrawl.storage.store",
         "sitemapcrawl.web.http", "sitemapcrawl.jobs", "sitemapcrawl.sitemaps.tree", "logging")
SMALL = ('<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
         "<url><loc>http://127.0.0.1/a</loc><priority>0.3</priority></url></urlset>")
PROBE = """
import json, sys
sys.argv = ["sitemapcrawl", *json.loads(sys.argv[1])]
from sitemapcrawl.cli.app import main
try:
    main()
except SystemExit:
    pass
sys.stdout.flush()
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def modules_after(*args: str) -> tuple[str, set[str]]:
    """Run the CLI with `args` in a fresh interpreter; its stdout and the modules it imported."""
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(list(args))], capture_output=True, text=True)
    loaded = set(json.loads(done.stderr.strip().splitlines()[-1]))
    return done.stdout, loaded


def heavy_in(modules: set[str], allowed: tuple[str, ...] = ()) -> set[str]:
    return {m for m in modules for heavy in HEAVY
            if (m == heavy or m.startswith(heavy + ".")) and not m.startswith(allowed or ("\0",))}


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["sitemap", "--help"], ["crawl", "--help"]],
                         ids=" ".join)
def test_version_and_help_import_no_job_store_http_rich_or_pydantic(args: list[str]) -> None:
    out, modules = modules_after(*args)
    assert out
    # a sub-command's --help runs the global options first, which set up logging
    assert not heavy_in(modules, allowed=("logging",) if len(args) > 1 else ())
    assert "lxml.etree" not in modules


def test_sitemap_parse_of_a_local_file_imports_the_engine_only(tmp_path: Path) -> None:
    small = tmp_path / "small.xml"
    small.write_text(SMALL)
    out, modules = modules_after("sitemap", "parse", str(small), "--jsonl", "--max-urls", "10")
    assert json.loads(out)["loc"] == "http://127.0.0.1/a"
    assert "lxml.etree" in modules and "sitemapcrawl.sitemaps.document" in modules
    assert not heavy_in(modules, allowed=("logging",))


def test_options_are_converted_and_checked_without_pydantic() -> None:
    bad = [
        (["fetch", "--batch", "b", "--threads", "0"],
         "Invalid value for '--threads': 0 is not in the range 1<=x<=100000."),
        (["fetch", "--batch", "b", "--max-connections", "many"],
         "Invalid value for '--max-connections': 'many' is not a valid"),
        (["fetch", "--batch", "b", "--delay", "inf"], "Invalid value for '--delay': 'inf' is not a finite number."),
        (["fetch", "--batch", "b", "--delay", "nan"], "Invalid value for '--delay': 'nan' is not a finite number."),
        (["fetch", "--batch", "b", "--queue-by", "banana"], "Invalid value for '--queue-by': 'banana' is not one"),
        (["crawl", "--mode", "fast"], "Invalid value for '--mode': 'fast' is not one of 'sitemap-only', 'mixed'"),
        (["generate", "--count-mode", "x"], "Invalid value for '--count-mode'"),
    ]
    for args, message in bad:
        result = runner.invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        assert message in " ".join(result.stderr.split()), (args, result.stderr)
        assert "Traceback" not in result.output


def test_typed_options_reach_the_command(tmp_path: Path) -> None:
    small = tmp_path / "small.xml"
    small.write_text(SMALL.replace("</urlset>", "<url><loc>http://127.0.0.1/b</loc></url></urlset>"))
    result = runner.invoke(app, ["sitemap", "parse", str(small), "--jsonl", "--max-urls", "1", "--no-strict"])
    assert result.exit_code == 0, result.output
    assert [json.loads(line)["loc"] for line in result.stdout.splitlines()] == ["http://127.0.0.1/a"]


@pytest.mark.parametrize(("args", "option"), [
    (["crawl", "--user-agent", "X"], "--user-agent"),
    (["sitemap", "parse", "x.xml", "--hbase", "h:1"], "--hbase"),
    (["fetch", "--batch", "b", "--table-prefix=p_"], "--table-prefix"),
    (["report", "-q"], "-q"),
])
def test_a_global_option_after_the_command_gets_a_hint(args: list[str], option: str) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    assert f": error: No such option: {option}. {option} is a global option: give it before the command " \
           f"(sitemapcrawl {option} ... COMMAND)" in line


def test_an_unknown_option_gets_no_global_hint() -> None:
    result = runner.invoke(app, ["crawl", "--bogus"])
    assert result.exit_code == 2 and "No such option: --bogus" in result.stderr
    assert "global option" not in result.stderr
