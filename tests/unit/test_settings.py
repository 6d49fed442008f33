"""Settings: every value checked at load, named with its source; `config show`.

The generic tests run over every field of `Settings`, so a setting added
later is covered by them without a new line here.
"""

from __future__ import annotations

import enum
import json
import math
import pickle
import typing
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sitemapcrawl.cli.app import app
from sitemapcrawl.config import (
    LINE_LISTS,
    MAX_NUMBER,
    ORDERED,
    RULES,
    Settings,
    effective,
    field_types,
    load_settings,
    with_flags,
)
from sitemapcrawl.errors import UsageError

runner = CliRunner()
ENV = "SITEMAPCRAWL_"


def number_fields() -> list[tuple[str, type]]:
    return [(name, kind) for name, kind in field_types().items() if kind in (int, float)]


def refused(tmp_path: Path, text: str | bytes, environ: dict[str, str] | None = None) -> str:
    """The one-line error for a config file holding `text` (and `environ`)."""
    path = tmp_path / "bad.toml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(UsageError) as caught:
        load_settings(path, environ=environ or {})
    message = str(caught.value)
    assert "\n" not in message and len(message) < 300
    return message


@pytest.mark.parametrize(("toml", "expected"), [
    ("max_connections = 0", "setting max_connections from file {path}: 0: out of range (allowed: 1..100_000)"),
    ("max_connections = 1e999", "setting max_connections from file {path}: inf: expected a whole number"),
    ("max_connections = 2.5", "setting max_connections from file {path}: 2.5: expected a whole number"),
    ("max_connections = true", "setting max_connections from file {path}: True: expected a whole number"),
    ("max_connections = \"8x\"", "setting max_connections from file {path}: '8x': expected a whole number"),
    ("delay = -5", "setting delay from file {path}: -5: out of range (allowed: 0..86_400)"),
    ("delay = inf", "setting delay from file {path}: inf: expected a finite number"),
    ("delay = nan", "setting delay from file {path}: nan: expected a finite number"),
    ("max_redirects = -1", "setting max_redirects from file {path}: -1: out of range (allowed: 0..100)"),
    ("http_read_timeout = -3.0", "setting http_read_timeout from file {path}: -3.0: out of range"),
    ("http_read_timeout = 0", "setting http_read_timeout from file {path}: 0: out of range (allowed: > 0"),
    ("max_content_bytes = -1", "setting max_content_bytes from file {path}: -1: out of range"),
    ('queue_by = "banana"', "setting queue_by from file {path}: 'banana': choose one of host, ip"),
    ('crawl_mode = "fast"', "setting crawl_mode from file {path}: 'fast': choose one of sitemap-only, mixed, "
                            "links-only"),
    ("strict_scope = 3", "setting strict_scope from file {path}: 3: expected true or false"),
    ("sitemap_trusted = [1, 2]", "setting sitemap_trusted from file {path}: [1, 2]: expected a list of text"),
    ('hbase = "nowhere"', "setting hbase from file {path}: 'nowhere': expected HOST:PORT"),
    ('hbase = "h:0"', "setting hbase from file {path}: 'h:0': port out of range (1..65535)"),
    ('hbase = "a:9090,,b:9090"', "setting hbase from file {path}: 'a:9090,,b:9090': expected HOST:PORT[,HOST:PORT"
                                 "...], not ''"),
    ('hbase = "a:9090,b:70000"', "setting hbase from file {path}: 'a:9090,b:70000': port out of range (1..65535) "
                                 "in 'b:70000'"),
    ('user_agent = "Bot\\u001b]0;x\\u0007"', "setting user_agent from file {path}: 'Bot\\x1b]0;x\\x07': control "
                                            "characters are not allowed"),
    ("url_filter = 3", "setting url_filter from file {path}: 3: expected a file path"),
    ("max_fetch_interval = 100", "setting min_fetch_interval (3600, from default) must not exceed "
                                 "max_fetch_interval (100, from file {path})"),
    ("threads = [", "config file {path}: "),
])
def test_bad_values_in_a_file_are_refused_with_name_value_and_source(tmp_path: Path, toml: str, expected: str) -> None:
    assert refused(tmp_path, toml).startswith(expected.format(path=tmp_path / "bad.toml"))


def test_a_binary_config_file_is_refused_in_one_line(tmp_path: Path) -> None:
    assert refused(tmp_path, bytes(range(256)) * 4) == f"config file {tmp_path / 'bad.toml'}: not UTF-8 text (byte 128)"
    assert refused(tmp_path, b"\x00\x01threads = 3").startswith(f"config file {tmp_path / 'bad.toml'}: ")


def test_an_endless_or_huge_config_file_is_refused_after_a_bounded_read(tmp_path: Path) -> None:
    assert refused(tmp_path, b"# " + b"x" * (1 << 20)) == (
        f"config file {tmp_path / 'bad.toml'}: larger than 1_048_576 bytes; is it the right file?")
    with pytest.raises(UsageError, match="larger than 1_048_576 bytes"):
        load_settings(Path("/dev/zero"), environ={})


def test_missing_and_directory_config_files(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="config file not found"):
        load_settings(tmp_path / "nope.toml", environ={})
    with pytest.raises(UsageError, match="is a directory"):
        load_settings(tmp_path, environ={})


def test_a_huge_bad_value_is_shown_shortened(tmp_path: Path) -> None:
    message = refused(tmp_path, f'queue_by = "{"x" * 10_000}"')
    assert "..." in message and len(message) < 300 and message.count("x") < 100


def test_environment_values_are_converted_and_checked() -> None:
    settings = load_settings(environ={f"{ENV}MAX_CONNECTIONS": " 4 ", f"{ENV}DELAY": "0.5", f"{ENV}STRICT_SCOPE": "off",
                                      f"{ENV}SITEMAP_TRUSTED": "http://a/s.xml, http://b/s.xml",
                                      f"{ENV}USER_AGENT": "Bot/1", f"{ENV}URL_FILTER": ""})
    assert settings.max_connections == 4 and settings.delay == 0.5 and settings.strict_scope is False
    assert settings.sitemap_trusted == ("http://a/s.xml", "http://b/s.xml") and settings.url_filter is None
    assert settings.sources == {"max_connections": f"environment ${ENV}MAX_CONNECTIONS",
                                "delay": f"environment ${ENV}DELAY",
                                "strict_scope": f"environment ${ENV}STRICT_SCOPE",
                                "sitemap_trusted": f"environment ${ENV}SITEMAP_TRUSTED",
                                "user_agent": f"environment ${ENV}USER_AGENT",
                                "url_filter": f"environment ${ENV}URL_FILTER"}
    with pytest.raises(UsageError,
                       match=rf"^setting max_connections from environment \${ENV}THREADS: '1e999': expected"):
        load_settings(environ={f"{ENV}THREADS": "1e999"})  # the old name of the setting
    with pytest.raises(UsageError, match=rf"^setting delay from environment \${ENV}DELAY: 'inf': expected a finite"):
        load_settings(environ={f"{ENV}DELAY": "inf"})


def test_flags_override_and_are_checked_with_their_name(tmp_path: Path) -> None:
    path = tmp_path / "ok.toml"
    path.write_text('max_connections = 2\nuser-agent = "File/1"\n')
    settings = load_settings(path, environ={f"{ENV}MAX_CONNECTIONS": "3"},
                             flags={"user_agent": "Flag/1", "hbase": None})
    assert settings.max_connections == 3 and settings.user_agent == "Flag/1"
    assert settings.sources["max_connections"] == f"environment ${ENV}MAX_CONNECTIONS"
    assert settings.sources["user_agent"] == "flag --user-agent"
    tuned = with_flags(settings, {"delay": 0.0, "max_connections": None})
    assert tuned.delay == 0.0 and tuned.max_connections == 3 and tuned.sources["delay"] == "flag --delay"
    for flags, message in [({"delay": math.inf}, "setting delay from flag --delay: inf: expected a finite number"),
                           ({"delay": 1e300}, "setting delay from flag --delay: 1e+300: out of range"),
                           ({"max_connections": 500_000},
                            "setting max_connections from flag --max-connections: 500000: out of range")]:
        with pytest.raises(UsageError) as caught:
            with_flags(settings, flags)
        assert str(caught.value).startswith(message)


# --- generic over every setting -------------------------------------------------------


def test_every_rule_names_a_setting_and_every_pair_is_ordered_by_default() -> None:
    names = set(field_types())
    assert set(RULES) <= names
    defaults = Settings()
    for small, large in ORDERED:
        assert {small, large} <= names and getattr(defaults, small) <= getattr(defaults, large)


@pytest.mark.parametrize("name", list(field_types()))
def test_every_default_passes_its_own_checks(name: str) -> None:
    value = getattr(Settings(), name)
    if value is None:
        return
    shown = list(value) if isinstance(value, tuple) else str(value) if isinstance(value, Path) else value
    settings = with_flags(Settings(), {name: shown})
    assert getattr(settings, name) == value


@pytest.mark.parametrize(("name", "kind"), number_fields())
def test_every_number_setting_refuses_non_finite_negative_and_huge_values(name: str, kind: type) -> None:
    bad = [math.inf, -math.inf, math.nan, MAX_NUMBER * 4, "1e999", "x"]
    rule = RULES.get(name)
    if rule is None or (rule.low is not None and rule.low >= 0):
        bad.append(-1)
    else:
        bad.append(-MAX_NUMBER * 4)
    for value in bad:
        with pytest.raises(UsageError, match=rf"^setting {name} from flag --{name.replace('_', '-')}: "):
            with_flags(Settings(), {name: value})


@pytest.mark.parametrize("name", [n for n, k in field_types().items() if k in (str, str | None)])
def test_every_text_setting_refuses_control_characters(name: str) -> None:
    with pytest.raises(UsageError, match=rf"^setting {name} from flag"):
        with_flags(Settings(), {name: "a\x1b[31mb"})


@pytest.mark.parametrize("name", [n for n, k in field_types().items() if k is bool])
def test_every_boolean_setting_refuses_other_words(name: str) -> None:
    with pytest.raises(UsageError, match=rf"^setting {name} from environment .*: 'maybe': expected true or false"):
        load_settings(environ={ENV + name.upper(): "maybe"})


def choice_fields() -> list[tuple[str, type[enum.Enum]]]:
    return [(name, kind) for name, kind in field_types().items()
            if isinstance(kind, type) and issubclass(kind, enum.Enum)]


def test_the_named_choices_are_settings_of_their_enum_type() -> None:
    assert {name for name, _ in choice_fields()} >= {"crawl_mode", "queue_by", "log_format", "hbase_transport",
                                                     "hbase_protocol"}


@pytest.mark.parametrize(("name", "kind"), choice_fields())
def test_every_choice_setting_holds_its_enum_from_every_source(name: str, kind: type[enum.Enum],
                                                               tmp_path: Path) -> None:
    last = list(kind)[-1]
    path = tmp_path / "choice.toml"
    path.write_text(f'{name.replace("_", "-")} = "{last.value}"\n')
    from_file = getattr(load_settings(path, environ={}), name)
    from_env = getattr(load_settings(environ={ENV + name.upper(): str(last.value)}), name)
    from_flag = getattr(with_flags(Settings(), {name: str(last.value)}), name)
    assert from_file is from_env is from_flag is last
    assert isinstance(getattr(Settings(), name), kind)
    settings = with_flags(Settings(), {name: last})  # the CLI may hand in the Enum itself
    assert getattr(pickle.loads(pickle.dumps(settings)), name) is last  # settings travel to workers pickled
    shown = {setting: value for setting, value, _ in effective(settings)}[name]
    assert type(shown) is str and shown == last.value  # `config show` prints the plain value
    choices = ", ".join(str(member.value) for member in kind)
    with pytest.raises(UsageError, match=rf"^setting {name} from environment .*: 'x': choose one of {choices}$"):
        load_settings(environ={ENV + name.upper(): "x"})


@pytest.mark.parametrize("name", [n for n, k in field_types().items()
                                  if typing.get_origin(k) is tuple and n not in LINE_LISTS])
def test_every_list_setting_takes_a_toml_array_or_commas(name: str, tmp_path: Path) -> None:
    path = tmp_path / "list.toml"
    path.write_text(f'{name} = ["a", "b"]\n')
    assert getattr(load_settings(path, environ={}), name) == ("a", "b")
    assert getattr(load_settings(environ={ENV + name.upper(): "a,b"}), name) == ("a", "b")


# --- config show --------------------------------------------------------------------


def test_config_show_prints_every_setting_and_its_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "crawl.toml"
    path.write_text('delay = 2.0\nmax_connections = 2\nsomething_else = 1\n')
    monkeypatch.setenv(f"{ENV}MAX_CONNECTIONS", "4")
    result = runner.invoke(app, ["--config", str(path), "--user-agent", "Bot/1", "config", "show", "--json"])
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    assert list(shown) == list(field_types())
    assert shown["delay"] == {"value": 2.0, "source": f"file {path}"}
    assert shown["max_connections"] == {"value": 4, "source": f"environment ${ENV}MAX_CONNECTIONS"}
    assert shown["user_agent"] == {"value": "Bot/1", "source": "flag --user-agent"}
    assert shown["hbase"] == {"value": "127.0.0.1:9090", "source": "default"}
    assert shown["session_id_names"]["value"][0] == "jsessionid"
    assert "unknown setting 'something_else' ignored" in result.stderr

    text = runner.invoke(app, ["--config", str(path), "config", "show"])
    assert text.exit_code == 0
    lines = {line.removeprefix("# ").split(" ", 1)[0]: line for line in text.stdout.splitlines()}
    assert lines["delay"].startswith("delay = 2.0") and lines["delay"].endswith(f"# file {path}")
    assert lines["user_agent"].startswith("# user_agent = (not set)")
    import tomllib

    reread = tomllib.loads(text.stdout)  # the text form is TOML a config file can start from
    assert reread["delay"] == 2.0 and "user_agent" not in reread


@pytest.mark.parametrize(("args", "env", "message"), [
    (["fetch", "--batch", "b", "--delay", "1e300"], {},  # the flag refuses what the setting would
     "sitemapcrawl fetch: error: Invalid value for '--delay': 1e300 is not in the range 0<=x<=86400"),
    (["config", "show"], {f"{ENV}MAX_CONNECTIONS": "0"},
     f"sitemapcrawl: error: setting max_connections from environment ${ENV}MAX_CONNECTIONS: '0': out of"),
    (["config", "show"], {f"{ENV}MAX_REDIRECTS": "-2"}, "sitemapcrawl: error: setting max_redirects from environment"),
])
def test_the_command_line_exits_2_with_one_line(args: list[str], env: dict[str, str], message: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(message)
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.output


def test_hbase_names_one_gateway_or_several() -> None:
    assert Settings().hbase_gateways == (("127.0.0.1", 9090),)
    several = load_settings(environ={f"{ENV}HBASE": "rs1:9090, [::1]:9091,rs3:19090"})
    assert several.hbase == "rs1:9090, [::1]:9091,rs3:19090"  # shown as given (config show, error lines)
    assert several.hbase_gateways == (("rs1", 9090), ("::1", 9091), ("rs3", 19090))


def test_the_old_name_of_a_renamed_setting_still_sets_it(tmp_path: Path) -> None:
    path = tmp_path / "old.toml"
    path.write_text("threads = 16\n")
    settings = load_settings(path, environ={})
    assert settings.max_connections == 16 and settings.sources["max_connections"] == f"file {path}"
    assert load_settings(environ={f"{ENV}THREADS": "7"}).max_connections == 7
    # the new name wins where both are given
    both = load_settings(environ={f"{ENV}THREADS": "7", f"{ENV}MAX_CONNECTIONS": "9"})
    assert both.max_connections == 9
