"""Every command documents itself: --help works and shows an example."""

from __future__ import annotations

import subprocess
import sys

import pytest
import typer
from typer.testing import CliRunner

from sitemapcrawl import __version__
from sitemapcrawl.cli import app

runner = CliRunner()


def command_paths() -> list[list[str]]:
    """Every leaf command as its argument path, e.g. ['sitemap', 'parse']."""
    paths: list[list[str]] = []

    def walk(command, path: list[str]) -> None:
        children = getattr(command, "commands", None)
        if children:
            for name, child in children.items():
                walk(child, [*path, name])
        else:
            paths.append(path)

    walk(typer.main.get_command(app), [])
    return paths


def test_the_commands_are_all_there() -> None:
    names = {" ".join(path) for path in command_paths()}
    assert {"init", "readdb", "inject", "detect", "sitemap parse", "sitemap tree"} <= names


@pytest.mark.parametrize("path", command_paths(), ids=lambda p: " ".join(p))
def test_every_command_has_help_with_an_example(path: list[str]) -> None:
    result = runner.invoke(app, [*path, "--help"])
    assert result.exit_code == 0, result.output
    assert "Example:" in result.output, f"{' '.join(path)} --help has no example"


def test_version_and_module_entry_point() -> None:
    assert runner.invoke(app, ["--version"]).stdout.strip() == f"sitemapcrawl {__version__}"
    done = subprocess.run([sys.executable, "-m", "sitemapcrawl", "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and "inject" in done.stdout
