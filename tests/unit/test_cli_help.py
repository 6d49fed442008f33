"""Every command documents itself: --help works at 80 columns, honestly.

Generic over the command tree, so a command added later is checked too:
an example that renders as typed, explicit metavars, defaults and settings
visible, choices as choices, nothing cut or wider than 80 columns.
"""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys

import pytest
import typer
from typer.testing import CliRunner

from sitemapcrawl import __version__
from sitemapcrawl.cli.app import app
from sitemapcrawl.cli.core import install_plain_coercion

runner = CliRunner()
WIDTH = 80


def root_command():  # type: ignore[no-untyped-def]
    command = typer.main.get_command(app)
    install_plain_coercion(command)
    return command


def command_paths() -> list[list[str]]:
    """Every leaf command as its argument path, e.g. ['sitemap', 'parse']."""
    paths: list[list[str]] = []

    def walk(command, path: list[str]) -> None:  # type: ignore[no-untyped-def]
        children = getattr(command, "commands", None)
        if children:
            for name, child in children.items():
                walk(child, [*path, name])
        else:
            paths.append(path)

    walk(typer.main.get_command(app), [])
    return paths


def all_paths() -> list[list[str]]:
    """The root, every group and every leaf command."""
    groups = {tuple(path[:i]) for path in command_paths() for i in range(len(path))}
    # By depth, then by name: every xdist worker must collect the same tests in the same order.
    return sorted([list(group) for group in groups], key=lambda path: (len(path), path)) + command_paths()


def command_at(path: list[str]):  # type: ignore[no-untyped-def]
    command = root_command()
    for name in path:
        command = command.commands[name]
    return command


def help_text(path: list[str]) -> str:
    result = runner.invoke(app, [*path, "--help"], terminal_width=WIDTH)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_the_commands_are_all_there() -> None:
    names = {" ".join(path) for path in command_paths()}
    assert {"init", "readdb", "inject", "detect", "sitemap parse", "sitemap tree", "crawl", "fetch",
            "config show"} <= names


@pytest.mark.parametrize("path", command_paths(), ids=lambda p: " ".join(p))
def test_every_command_has_help_with_an_example(path: list[str]) -> None:
    assert "Example:" in help_text(path), f"{' '.join(path)} --help has no example"


@pytest.mark.parametrize("path", all_paths(), ids=lambda p: " ".join(p) or "(root)")
def test_help_fits_80_columns_and_nothing_is_cut(path: list[str]) -> None:
    text = help_text(path)
    for line in text.splitlines():
        assert len(line) <= WIDTH, f"wider than {WIDTH}: {line!r}"
        assert "…" not in line, f"cut: {line!r}"
        assert not line.rstrip().endswith("...") or line.endswith("[ARGS]..."), f"cut: {line!r}"
    for leftover in ("<str>", "<bool>", "<int", "<float", "<list[", "<path>", "<Path", "range>"):
        assert leftover not in text, f"{leftover} in {' '.join(path)} --help"


@pytest.mark.parametrize("path", all_paths(), ids=lambda p: " ".join(p) or "(root)")
def test_the_command_list_shows_whole_first_sentences(path: list[str]) -> None:
    command = command_at(path)
    children = getattr(command, "commands", None)
    if not children:
        return
    flat = " ".join(help_text(path).split())
    for name, child in children.items():
        assert f"{name} {child.get_short_help_str(limit=1_000)}" in flat


@pytest.mark.parametrize("path", all_paths(), ids=lambda p: " ".join(p) or "(root)")
def test_examples_render_as_typed(path: list[str]) -> None:
    command = command_at(path)
    text = help_text(path)
    examples = [line.strip() for line in inspect.cleandoc(command.help or "").splitlines()
                if line.strip().startswith("Example:")]
    if path and not getattr(command, "commands", None):
        assert examples
    rendered = [line.strip() for line in text.splitlines()]
    for example in examples:
        assert example in rendered, f"example not shown as typed: {example!r}"


def test_the_inject_example_keeps_its_printf_escapes() -> None:
    text = help_text(["inject"])
    assert "printf 'http://127.0.0.2:8000/\\tdepth=2\\n' | sitemapcrawl inject -" in text


@pytest.mark.parametrize("path", command_paths() + [[]], ids=lambda p: " ".join(p) or "(root)")
def test_options_have_metavars_defaults_and_choices(path: list[str]) -> None:
    command = command_at(path)
    text = " ".join(help_text(path).split())
    ctx = typer.main.get_command(app).make_context("sitemapcrawl", ["--help"], resilient_parsing=True)
    for param in command.params:
        if param.param_type_name != "option" or param.hidden or param.name in ("install_completion",
                                                                                "show_completion"):
            continue
        record = param.get_help_record(ctx)
        assert record is not None
        names, help_line = record
        if param.is_flag or param.count:
            continue
        choices = param.type_descriptor.choices
        if choices:
            shown = "<" + "|".join(str(getattr(c, "value", c)) for c in choices) + ">"
            assert shown in names, f"{param.name}: choices not shown in {names!r}"
        else:
            assert param.metavar and re.fullmatch(r"[A-Z][A-Z_:/|]*", param.metavar), \
                f"{' '.join(path)} {param.name}: metavar {param.metavar!r}"
        for setting_name in re.findall(r"\[setting (\w+);", help_line):
            assert f"env SITEMAPCRAWL_{setting_name.upper()}; default: " in help_line, help_line
        assert "default" in help_line or param.required, f"{' '.join(path)} {param.name}: no default in {help_line!r}"
    assert text


def test_settings_backed_options_name_their_setting_and_environment() -> None:
    text = " ".join(help_text(["fetch"]).split())
    assert "--max-connections N Requests in flight at once over all hosts" in text
    assert "--threads " not in text  # the old name works, hidden (tests/unit/test_cli_options.py)
    assert "[setting max_connections; env SITEMAPCRAWL_MAX_CONNECTIONS; default: 1000]" in text
    assert "--queue-by <host|ip>" in text and "--split K/N" in text and "--delay SECONDS" in text
    root = " ".join(help_text([]).split())
    assert "--hbase HOST:PORT" in root and "env SITEMAPCRAWL_HBASE; default: 127.0.0.1:9090" in root
    assert "--log-file FILE" in root and "--install-completion" in root
    crawl = " ".join(help_text(["crawl"]).split())
    assert "--mode <sitemap-only|mixed|links-only>" in crawl


def test_version_and_module_entry_point() -> None:
    assert runner.invoke(app, ["--version"]).stdout.strip() == f"sitemapcrawl {__version__}"
    done = subprocess.run([sys.executable, "-m", "sitemapcrawl", "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and "inject" in done.stdout


def test_shell_completion_is_offered_and_completes_commands_and_choices() -> None:
    shown = subprocess.run([sys.executable, "-m", "sitemapcrawl", "--show-completion", "bash"],
                           capture_output=True, text=True)
    assert shown.returncode == 0, shown.stderr
    assert "complete -o default -F _sitemapcrawl_completion sitemapcrawl" in shown.stdout

    def complete(words: str) -> list[str]:
        env = {**os.environ, "_SITEMAPCRAWL_COMPLETE": "complete_bash", "COMP_WORDS": words,
               "COMP_CWORD": str(len(words.split()) - (0 if words.endswith(" ") else 1))}
        done = subprocess.run([sys.executable, "-m", "sitemapcrawl"], capture_output=True, text=True, env=env)
        return done.stdout.split()

    assert complete("sitemapcrawl cr") == ["crawl"]
    assert complete("sitemapcrawl fetch --queue-by ") == ["host", "ip"]
