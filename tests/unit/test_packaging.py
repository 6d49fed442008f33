"""Packaging metadata: bounded dependencies, SPDX license, typed, classified, with URLs.

Building the wheel itself needs setuptools>=77 from the package index (build
isolation), so it is checked by hand, not here (tests stay offline):
`pip wheel --no-deps -w /tmp/w .` builds with no deprecation warning.
"""

from __future__ import annotations

import re
import tomllib

from hbase_fixtures import REPO

PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())


def test_every_dependency_has_a_lower_and_an_upper_bound() -> None:
    pinned = PROJECT["project"]["dependencies"] + [
        d for d in PROJECT["project"]["optional-dependencies"]["test"] if not d.startswith("types-")]
    for requirement in pinned:
        assert re.search(r">=[\d.]+", requirement) and re.search(r"<[\d.]+", requirement), requirement
    names = {re.split(r"[<>=]", r)[0] for r in PROJECT["project"]["dependencies"]}
    # The design card's packages, but requests: the HTTP client is aiohttp since issue 45 (requests still comes
    # with ultimate-sitemap-parser, whose web clients the usp drop-in takes).
    assert {"typer", "rich", "happybase", "aiohttp", "lxml", "ultimate-sitemap-parser"} <= names
    assert "requests" not in names


def test_license_is_an_spdx_expression_with_a_new_enough_setuptools() -> None:
    assert PROJECT["project"]["license"] == "GPL-3.0-or-later"
    assert PROJECT["build-system"]["requires"] == ["setuptools>=77"]
    assert not any(c.startswith("License ::") for c in PROJECT["project"]["classifiers"])  # SPDX replaces them


def test_typed_classified_and_linked() -> None:
    assert (REPO / "sitemapcrawl" / "py.typed").exists()
    assert "py.typed" in PROJECT["tool"]["setuptools"]["package-data"]["sitemapcrawl"]
    classifiers = PROJECT["project"]["classifiers"]
    assert "Typing :: Typed" in classifiers and "Environment :: Console" in classifiers
    assert all(url.startswith("https://") for url in PROJECT["project"]["urls"].values())
    assert PROJECT["project"]["scripts"] == {"sitemapcrawl": "sitemapcrawl.cli.app:main"}
