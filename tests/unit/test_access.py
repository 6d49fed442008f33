"""Access to sites that need it, offline: `--header` lines, netrc credentials per host, and where their
values never show (`config show`, `repr`, the WARC request record)."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sitemapcrawl.cli.app import app
from sitemapcrawl.config import Settings, effective, load_settings, with_flags
from sitemapcrawl.errors import UsageError
from sitemapcrawl.web.access import RequestAccess, parse_headers
from sitemapcrawl.web.warc import REDACTED, redacted

NETRC = """\
machine staging.example.org
  login alice
  password p4ss:word
machine 127.0.0.2 login bob password hunter2
default login anon password anon-pass
"""


def basic(login: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{login}:{password}".encode()).decode()


def test_headers_are_name_value_lines_in_a_file_a_flag_or_the_environment_one_a_line(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('headers = ["Accept-Language: de, en;q=0.5", "X-Token:abc"]\n')
    assert load_settings(path, environ={}).headers == ("Accept-Language: de, en;q=0.5", "X-Token:abc")
    from_env = load_settings(environ={"SITEMAPCRAWL_HEADERS": "Accept-Language: de, en\nX-Token: abc\n"})
    assert from_env.headers == ("Accept-Language: de, en", "X-Token: abc")  # the comma stays in its value
    assert parse_headers(from_env.headers) == {"Accept-Language": "de, en", "X-Token": "abc"}


@pytest.mark.parametrize("line", ["no colon", "Bad Name: x", ": empty name", "User-Agent: Other/1",
                                  "X-A: line\r\nInjected: yes", "X-A: \x1b[31m"])
def test_a_bad_header_line_is_refused_in_one_line_naming_the_setting(line: str) -> None:
    with pytest.raises(UsageError, match=r"^setting headers from flag --headers: .*expected Name: value"):
        with_flags(Settings(), {"headers": [line]})


def test_netrc_credentials_go_to_the_host_they_name_and_the_default_to_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "netrc"
    path.write_text(NETRC)
    access = RequestAccess.from_settings(Settings(netrc=path, headers=("X-Token: abc",)))
    assert access is not None
    assert access.headers_for("https://staging.example.org/a") == {
        "X-Token": "abc", "Authorization": basic("alice", "p4ss:word")}
    assert access.headers_for("http://127.0.0.2:8700/x")["Authorization"] == basic("bob", "hunter2")
    assert access.headers_for("http://other.example/")["Authorization"] == basic("anon", "anon-pass")
    mine = access.headers_for("http://127.0.0.2:8700/x")
    mine["Authorization"] = "changed"  # a copy: the next request is not touched
    assert access.headers_for("http://127.0.0.2:8700/y")["Authorization"] == basic("bob", "hunter2")
    assert "hunter2" not in repr(access) and "X-Token" in repr(access)
    without = tmp_path / "no-default"
    without.write_text(NETRC.split("default")[0])
    assert (bare := RequestAccess.from_settings(Settings(netrc=without))) is not None
    assert bare.headers_for("http://other.example/") == {}


def test_no_headers_and_no_netrc_is_no_access_and_headers_alone_need_no_host(tmp_path: Path) -> None:
    assert RequestAccess.from_settings(Settings()) is None
    access = RequestAccess.from_settings(Settings(headers=("X-Token: abc",)))
    assert access is not None
    assert access.headers_for("http://127.0.0.2:8700/x") == access.headers_for("not a url") == {"X-Token": "abc"}
    access.headers_for("http://127.0.0.2:8700/x")["X-Token"] = "changed"  # a copy: the next request is not touched
    assert access.headers_for("http://127.0.0.2:8700/x") == {"X-Token": "abc"}


def test_an_unreadable_netrc_file_is_one_line_that_never_quotes_it(tmp_path: Path) -> None:
    bad = tmp_path / "netrc"
    bad.write_text("machine h login u password p misplaced-secret\n")
    with pytest.raises(UsageError) as caught:
        RequestAccess.from_settings(Settings(netrc=bad))
    expected = rf"netrc file {re.escape(str(bad))}: not readable as a netrc file \(line \d\)"
    assert re.fullmatch(expected, str(caught.value))
    with pytest.raises(UsageError, match="^netrc file not found: "):
        RequestAccess.from_settings(Settings(netrc=tmp_path / "missing"))


def test_config_show_hides_header_values_and_proxy_passwords(tmp_path: Path) -> None:
    settings = with_flags(Settings(), {"headers": ["Authorization: Bearer xyz", "Accept-Language: de"],
                                       "https_proxy": "http://me:pw@proxy.example:3128"})
    shown = {name: value for name, value, _ in effective(settings)}
    assert shown["headers"] == ["Authorization: (hidden)", "Accept-Language: (hidden)"]
    assert shown["https_proxy"] == "http://me:(hidden)@proxy.example:3128"
    path = tmp_path / "c.toml"
    path.write_text('headers = ["Authorization: Bearer xyz"]\n')
    done = CliRunner().invoke(app, ["--config", str(path), "config", "show", "--json"])
    assert done.exit_code == 0 and "xyz" not in done.stdout
    assert json.loads(done.stdout)["headers"]["value"] == ["Authorization: (hidden)"]


def test_the_warc_request_record_keeps_header_names_and_redacts_credentials() -> None:
    sent = (("Host", "h"), ("Authorization", "Basic abc"), ("cookie", "a=1"), ("X-Token", "t"))
    assert redacted(sent) == [("Host", "h"), ("Authorization", REDACTED), ("cookie", REDACTED), ("X-Token", "t")]
    assert redacted(sent, frozenset({"x-token"}))[3] == ("X-Token", REDACTED)
