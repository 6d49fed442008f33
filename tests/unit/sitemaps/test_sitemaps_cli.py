"""`sitemap parse` and `sitemap tree` through typer's CliRunner, sitemaps on loopback."""

from __future__ import annotations

import gzip
import json

from sitemap_testing import CORPUS, Reply, corpus, serve
from typer.testing import CliRunner

from sitemapcrawl.cli.app import app

ENV = {"SITEMAPCRAWL_DELAY": "0", "SITEMAPCRAWL_USER_AGENT": "sitemapcrawl-tests/1.0"}
NS = "http://www.sitemaps.org/schemas/sitemap/0.9"


def run(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(app, list(args), env={**ENV, **(env or {})})


def urlset(base: str, *paths: str) -> bytes:
    rows = "".join(f"<url><loc>{base}{path}</loc></url>" for path in paths)
    return f'<urlset xmlns="{NS}">{rows}</urlset>'.encode()


def index(base: str, *paths: str) -> bytes:
    rows = "".join(f"<sitemap><loc>{base}{path}</loc></sitemap>" for path in paths)
    return f'<sitemapindex xmlns="{NS}">{rows}</sitemapindex>'.encode()


def test_parse_file_jsonl():
    result = run("sitemap", "parse", str(CORPUS / "extensions.xml"), "--jsonl")
    assert result.exit_code == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [row["loc"] for row in rows] == [
        "http://www.example.com/article",
        "http://www.example.com/plain",
    ]
    assert set(rows[0]) == {
        "kind", "loc", "lastmod", "changefreq", "priority",
        "images", "videos", "news", "alternates",
    }
    assert set(rows[1]) == {"kind", "loc", "lastmod", "changefreq", "priority"}


def test_parse_file_table_with_warnings_on_stderr():
    result = run("sitemap", "parse", str(CORPUS / "truncated.xml"))
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0].startswith("KIND")
    assert len(lines) == 3
    assert "not well-formed" in result.stderr


def test_parse_url_reads_the_loopback_sitemap():
    holder: dict[str, Reply] = {}
    with serve(holder) as web:
        holder["/maps/sitemap.xml.gz"] = Reply(
            gzip.compress(urlset(web.base, "/maps/a", "/maps/b", "/maps/c", "/elsewhere"))
        )
        result = run("sitemap", "parse", web.base + "/maps/sitemap.xml.gz", "--jsonl", "--max-urls", "2")
        assert result.exit_code == 0, result.stderr
        assert [json.loads(line)["loc"] for line in result.stdout.splitlines()] == [
            web.base + "/maps/a",
            web.base + "/maps/b",
        ]
        assert "max_urls=2" in result.stderr
        assert "scope" in result.stderr
        loose = run("sitemap", "parse", web.base + "/maps/sitemap.xml.gz", "--jsonl", "--no-strict")
        assert len(loose.stdout.splitlines()) == 4
        assert web.headers[0]["user-agent"] == "sitemapcrawl-tests/1.0"


def test_parse_errors_are_one_line_and_non_zero():
    with serve({"/page": Reply(corpus("page.html")), "/empty": Reply(b"")}) as web:
        for path, reason in (("/page", "HTML"), ("/missing", "HTTP 404"), ("/empty", "empty")):
            result = run("sitemap", "parse", web.base + path)
            assert result.exit_code == 1
            assert reason in result.stderr
            assert len(result.stderr.strip().splitlines()) == 1
            assert result.stdout == ""


def test_parse_url_needs_a_user_agent_but_a_file_does_not():
    result = run("sitemap", "parse", "http://127.0.0.1:9/s.xml", env={"SITEMAPCRAWL_USER_AGENT": ""})
    assert result.exit_code == 2
    assert "--user-agent" in result.stderr
    local = run("sitemap", "parse", str(CORPUS / "urlset_nons.xml"), env={"SITEMAPCRAWL_USER_AGENT": ""})
    assert local.exit_code == 0


def test_tree_from_homepage_follows_robots_and_indexes_and_reports_loops():
    routes: dict[str, Reply] = {}
    with serve(routes) as web:
        routes["/robots.txt"] = Reply(f"User-agent: *\nSitemap: {web.base}/index.xml\n".encode())
        routes["/index.xml"] = Reply(index(web.base, "/a.xml.gz", "/b.txt", "/index.xml", "/gone.xml"))
        routes["/a.xml.gz"] = Reply(gzip.compress(urlset(web.base, "/1", "/2")))
        routes["/b.txt"] = Reply(f"{web.base}/3\n".encode())
        result = run("sitemap", "tree", web.base + "/")
        assert result.exit_code == 0, result.stderr
        lines = result.stdout.splitlines()
        assert lines[0].startswith(f"{web.base}/index.xml  [index, robots.txt] 4 sitemaps")
        assert lines[1] == f"  {web.base}/a.xml.gz  [urlset, index] 2 urls"
        assert lines[2] == f"  {web.base}/b.txt  [text, index] 1 urls"
        assert "loop" in lines[3]
        assert "HTTP 404" in lines[4]
        assert "3 page URLs" in result.stderr
        jsonl = run("sitemap", "tree", web.base + "/", "--jsonl")
        rows = [json.loads(line) for line in jsonl.stdout.splitlines()]
        assert [row["urls"] for row in rows[:3]] == [None, 2, 1]
        assert rows[0]["sitemaps"] == 4


def test_tree_probes_well_known_paths_when_robots_lists_none():
    routes: dict[str, Reply] = {"/robots.txt": Reply(b"User-agent: *\nDisallow:\n")}
    with serve(routes) as web:
        routes["/sitemap_index.xml"] = Reply(index(web.base, "/s.xml"))
        routes["/s.xml"] = Reply(urlset(web.base, "/x"))
        routes["/sitemap"] = Reply(corpus("page.html"))  # soft 404: not reported
        # Probing is off by default, as in detect (setting probe_known_paths).
        assert run("sitemap", "tree", web.base).exit_code == 1
        result = run("sitemap", "tree", web.base, "--probe-known-paths")
        assert result.exit_code == 0, result.stderr
        assert result.stdout.splitlines() == [
            f"{web.base}/sitemap_index.xml  [index, well-known] 1 sitemaps",
            f"  {web.base}/s.xml  [urlset, index] 1 urls",
        ]


def test_tree_depth_limit_is_reported_not_followed():
    routes: dict[str, Reply] = {}
    with serve(routes) as web:
        routes["/i0.xml"] = Reply(index(web.base, "/i1.xml"))
        routes["/i1.xml"] = Reply(index(web.base, "/i2.xml"))
        result = run("sitemap", "tree", web.base + "/i0.xml", env={"SITEMAPCRAWL_MAX_INDEX_DEPTH": "1"})
        assert "/i2.xml" not in web.requests
        assert "depth limit 1" in result.stdout.splitlines()[-1]


def test_tree_with_nothing_found_fails():
    with serve({}) as web:
        result = run("sitemap", "tree", web.base + "/")
    assert result.exit_code == 1
    assert "no sitemap" in result.stderr


def test_commands_have_help_with_an_example():
    for command in ("parse", "tree"):
        result = run("sitemap", command, "--help")
        assert result.exit_code == 0
        assert "Example:" in result.stdout
