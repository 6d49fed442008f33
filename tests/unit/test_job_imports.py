"""No job imports another job (only `crawl` runs others): read from the imports of `sitemapcrawl/jobs/*.py`."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from sitemapcrawl.jobs import JOBS, PARTS

PACKAGE = Path(__file__).resolve().parents[2] / "sitemapcrawl"
JOBS_DIR = PACKAGE / "jobs"


def jobs_imported(source: str, in_jobs: bool = True) -> set[str]:
    """The modules of `sitemapcrawl.jobs` a module's source imports (at any depth: lazy imports count).

    `in_jobs`: the source is a module of `sitemapcrawl/jobs/`, where `from . import x` names a job or part.
    """
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "sitemapcrawl.jobs":
                found.update(alias.name for alias in node.names)
            elif node.module.startswith("sitemapcrawl.jobs."):
                found.add(node.module.split(".")[2])
        elif isinstance(node, ast.ImportFrom) and node.level == 1 and in_jobs:
            found.update([node.module.split(".")[0]] if node.module else [a.name for a in node.names])
        elif isinstance(node, ast.Import):
            found.update(alias.name.split(".")[2] for alias in node.names
                         if alias.name.startswith("sitemapcrawl.jobs."))
    return found


def modules() -> list[str]:
    return sorted(path.stem for path in JOBS_DIR.glob("*.py") if path.stem != "__init__")


def test_every_module_under_jobs_is_a_job_or_a_part() -> None:
    assert JOBS.isdisjoint(PARTS)
    assert set(modules()) == JOBS | PARTS


@pytest.mark.parametrize("name", modules())
def test_no_job_imports_a_job_except_crawl(name: str) -> None:
    if name == "crawl":
        return
    imported = jobs_imported((JOBS_DIR / f"{name}.py").read_text(encoding="utf-8"))
    assert not imported & JOBS, f"jobs/{name}.py imports job(s) {sorted(imported & JOBS)}: move it to a part"


def test_outside_jobs_only_the_cli_imports_a_job() -> None:
    offenders = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.parent == JOBS_DIR or path.name == "cli.py":
            continue
        imported = jobs_imported(path.read_text(encoding="utf-8"), in_jobs=False) & JOBS
        if imported:
            offenders[str(path.relative_to(PACKAGE))] = sorted(imported)
    assert offenders == {}


def test_the_reader_sees_every_form_of_import() -> None:
    source = """
from sitemapcrawl.jobs.detect import check_origin
from sitemapcrawl.jobs import generate, batches
import sitemapcrawl.jobs.parse
from .updatedb import merge_row
from . import export
def later():
    from sitemapcrawl.jobs.fetch import fetch
from sitemapcrawl.modes import CrawlMode
"""
    assert jobs_imported(source) == {"detect", "generate", "batches", "parse", "updatedb", "export", "fetch"}
    assert jobs_imported("from sitemapcrawl.jobs.rules import UrlRules\n") & JOBS == set()
