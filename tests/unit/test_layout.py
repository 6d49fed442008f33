"""The house rules of the package, read from the imports of every module.

Packages sit on floors and imports point down (DESIGN.md, docs/layout.md):
a module imports its own package or a floor below, never a package beside or
above it; no job imports another job except `crawl`; no module outside a
package imports a name of it that starts with `_`; no package's code uses a
name of another package that its `FACE` does not offer; no two modules import
each other; only `clock.py` reads the wall clock; no module is over 600 lines
nor its docstring over 20. Each rule's reader or verdict has a test of its
own on a made-up violation, so a rule that could no longer fail is seen.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import sitemapcrawl.jobs

PACKAGE = Path(sitemapcrawl.jobs.__file__).resolve().parents[1]
TESTS = PACKAGE.parent / "tests"
BENCHMARKS = PACKAGE.parent / "benchmarks"

#: Top to bottom. A package on one floor imports only packages on floors below (and itself).
FLOORS: list[set[str]] = [
    {"__main__"},
    {"cli"},
    {"testweb"},
    {"jobs"},
    {"report"},
    {"fetcher", "scoring", "batch"},
    {"storage"},
    {"web"},
    {"model"},
    {"sitemaps"},
    {"config"},
    {"urlparts"},
    {"modes"},
    {"safetext"},
    {"errors"},
    {"logfields"},
    {"processes"},
    {"clock"},
]
FLOOR_OF = {room: number for number, rooms in enumerate(FLOORS) for room in rooms}
MAX_LINES = 600


def room_of(module: str) -> str:
    """`sitemapcrawl.web.urls` -> `web`; `sitemapcrawl` (the package itself) -> `` ."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> list[tuple[str, list[str]]]:
    """Every `sitemapcrawl` import of a file, at any depth (lazy imports count): (module, names)."""
    found: list[tuple[str, list[str]]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("sitemapcrawl"):
            found.append((node.module or "", [alias.name for alias in node.names]))
        elif isinstance(node, ast.ImportFrom) and node.level:
            raise AssertionError(f"{path}: relative import; write the absolute module")
        elif isinstance(node, ast.Import):
            found.extend((alias.name, []) for alias in node.names if alias.name.startswith("sitemapcrawl"))
    return found


def targets(module: str, names: list[str]) -> list[str]:
    """The modules an import reaches: `from sitemapcrawl.web import urls` reaches `sitemapcrawl.web.urls`."""
    def exists(dotted: str) -> bool:
        place = PACKAGE.parent / dotted.replace(".", "/")
        return place.with_suffix(".py").exists() or place.is_dir()

    reached = [f"{module}.{name}" for name in names if exists(f"{module}.{name}")]
    return reached or [module]


def package_modules() -> list[Path]:
    return sorted(path for path in PACKAGE.rglob("*.py"))


def test_every_room_has_a_floor() -> None:
    rooms = {room_of(module_name(path)) for path in package_modules()} - {""}
    assert rooms <= set(FLOOR_OF), f"rooms without a floor: {sorted(rooms - set(FLOOR_OF))}"


def upward(here: str, imports: list[tuple[str, list[str]]]) -> list[str]:
    """The modules of `imports` (as `imports_of` gives them) on room `here`'s floor or above it."""
    found = []
    for module, names in imports:
        for target in targets(module, names):
            there = room_of(target)
            if there and there != here and FLOOR_OF[there] <= FLOOR_OF[here]:
                found.append(target)
    return found


@pytest.mark.parametrize("path", package_modules(), ids=lambda path: str(path.relative_to(PACKAGE)))
def test_imports_point_down(path: Path) -> None:
    here = room_of(module_name(path))
    if not here:
        return
    upward_imports = upward(here, imports_of(path))
    assert upward_imports == [], f"{module_name(path)} imports {upward_imports}: same floor or above"


def test_the_floor_rule_refuses_an_import_beside_or_above() -> None:
    assert upward("model", [("sitemapcrawl.storage.store", ["Store"])]) == ["sitemapcrawl.storage.store"]
    assert upward("fetcher", [("sitemapcrawl.scoring", ["evidence"])]) == ["sitemapcrawl.scoring.evidence"]
    assert upward("storage", [("sitemapcrawl.model.cells", ["encode"]), ("sitemapcrawl.storage.store", []),
                              ("sitemapcrawl.clock", ["utc_now"])]) == []


def jobs_imported(path: Path) -> list[str]:
    """The jobs that the module at `path` imports."""
    jobs = {f"sitemapcrawl.jobs.{name}" for name in sitemapcrawl.jobs.FACE}
    return sorted({target for module, names in imports_of(path) for target in targets(module, names)} & jobs)


def test_no_job_imports_a_job_but_crawl() -> None:
    offenders = {}
    for path in (PACKAGE / "jobs").glob("*.py"):
        if path.stem in ("crawl", "__init__"):
            continue
        imported = jobs_imported(path)
        if imported:
            offenders[path.stem] = sorted(imported)
    assert offenders == {}


def test_the_job_rule_sees_a_job_imported(tmp_path: Path) -> None:
    source = tmp_path / "parse.py"
    source.write_text("from sitemapcrawl.jobs import fetch\nfrom sitemapcrawl.jobs.generate import GenerateOptions\n"
                      "from sitemapcrawl.storage.store import Store\n", encoding="utf-8")
    assert jobs_imported(source) == ["sitemapcrawl.jobs.fetch", "sitemapcrawl.jobs.generate"]


def test_the_jobs_package_holds_only_jobs() -> None:
    assert {path.stem for path in (PACKAGE / "jobs").glob("*.py")} - {"__init__"} == set(sitemapcrawl.jobs.FACE)


def private_imports(here: str, imports: list[tuple[str, list[str]]]) -> list[str]:
    """The imports of module `here` (`""`: a test or a benchmark) that take a private name of another package."""
    found = []
    for module, names in imports:
        private = [name for name in names if name.startswith("_") and name != "__version__"]
        private += [part for part in module.split(".") if part.startswith("_") and part != "__main__"]
        if private and (not here or room_of(module) != room_of(here)):
            found.append(f"{module} {private}")
    return found


@pytest.mark.parametrize("root", [PACKAGE, TESTS, BENCHMARKS], ids=lambda root: root.name)
def test_no_private_name_is_imported_from_another_package(root: Path) -> None:
    offenders = []
    for path in sorted(root.rglob("*.py")):
        here = module_name(path) if root == PACKAGE else ""
        offenders += [f"{path.relative_to(root.parent)}: {found}" for found in private_imports(here, imports_of(path))]
    assert offenders == []


def test_the_private_rule_refuses_a_private_name_from_elsewhere() -> None:
    assert private_imports("sitemapcrawl.jobs.fetch", [("sitemapcrawl.storage.store", ["_retry"]),
                                                       ("sitemapcrawl.storage._happybase", ["Pool"])]) == [
        "sitemapcrawl.storage.store ['_retry']", "sitemapcrawl.storage._happybase ['_happybase']"]
    assert private_imports("", [("sitemapcrawl.web.urls", ["_strip"])]) == ["sitemapcrawl.web.urls ['_strip']"]
    assert private_imports("sitemapcrawl.storage.store", [("sitemapcrawl.storage._happybase", ["Pool"]),
                                                          ("sitemapcrawl", ["__version__"])]) == []


def test_every_package_shows_a_public_face() -> None:
    for init in PACKAGE.glob("*/__init__.py"):
        source = init.read_text(encoding="utf-8")
        assert "\nFACE: dict" in source, f"{init.relative_to(PACKAGE)} has no FACE"
        assert ast.get_docstring(ast.parse(source)), f"{init.relative_to(PACKAGE)} has no docstring"


def unnamed_modules(init: Path) -> list[str]:
    """The modules of the package of `init` that its docstring does not name in backquotes."""
    docstring = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
    return sorted(path.stem for path in init.parent.glob("*.py")
                  if path.stem != "__init__" and f"`{path.stem}`" not in docstring)


def test_every_package_docstring_names_its_modules() -> None:
    """docs/layout.md leaves the list of a package's modules to its docstring: a module it omits is unseen."""
    unnamed = {init.parent.name: found for init in sorted(PACKAGE.glob("*/__init__.py"))
               if (found := unnamed_modules(init))}
    assert unnamed == {}


def test_the_docstring_reader_sees_a_module_not_named(tmp_path: Path) -> None:
    (tmp_path / "__init__.py").write_text('"""`feed` reads; work writes."""\n', encoding="utf-8")
    for name in ("feed", "work", "engine"):
        (tmp_path / f"{name}.py").write_text("", encoding="utf-8")
    assert unnamed_modules(tmp_path / "__init__.py") == ["engine", "work"]


def faces() -> dict[str, dict[str, tuple[str, ...]]]:
    """Each package's `FACE`: module -> the names other packages may use (read from the source, not imported)."""
    found = {}
    for init in sorted(PACKAGE.glob("*/__init__.py")):
        for node in ast.parse(init.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == "FACE":
                found[init.parent.name] = ast.literal_eval(node.value) if node.value else {}
    return found


def package_names(init: Path) -> set[str]:
    """What a package's `__init__` itself offers: its `__all__`, if it has one (read from the source)."""
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return set(ast.literal_eval(node.value))
    return set()


def reaches_across(path: Path) -> list[tuple[str, str]]:
    """Every (module, name) a file takes from another package: imported names and attributes of imported modules."""
    here = room_of(module_name(path)) if path.is_relative_to(PACKAGE) else None
    tree = ast.parse(path.read_text(encoding="utf-8"))
    aliases: dict[str, str] = {}
    reached: list[tuple[str, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sitemapcrawl."):
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                if targets(node.module or "", [alias.name]) == [full]:  # a module: its attributes are reached too
                    aliases[alias.asname or alias.name] = full
                reached.append((node.module or "", alias.name))
        elif isinstance(node, ast.Import):
            assert not any(alias.name.startswith("sitemapcrawl.") for alias in node.names), \
                f"{path}: write `from sitemapcrawl.package import module`"
        elif isinstance(node, ast.ImportFrom) and node.module == "sitemapcrawl":  # a package's attributes go unseen
            assert not any((PACKAGE / alias.name).is_dir() for alias in node.names), \
                f"{path}: write `from sitemapcrawl.package import module`"
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            reached.append((aliases[node.value.id], node.attr))
    return [(module, name) for module, name in reached if room_of(module) and room_of(module) != here]


def offered(module: str, name: str, face_of: dict[str, dict[str, tuple[str, ...]]]) -> bool:
    """Does the package of `module` offer `name` to other packages (its `FACE`, or its `__all__`)?"""
    package, _, rest = module.removeprefix("sitemapcrawl.").partition(".")
    if package not in face_of:
        return True  # a module of the package's root (config, modes...): all of it is public
    if not rest:  # from sitemapcrawl.web import urls / from sitemapcrawl.sitemaps import parse_sitemap
        return name in face_of[package] or name in package_names(PACKAGE / package / "__init__.py")
    return name in face_of[package].get(rest, ())


def test_no_package_is_reached_past_its_face() -> None:
    face_of = faces()
    assert set(face_of) == {init.parent.name for init in PACKAGE.glob("*/__init__.py")}, "a package without a FACE"
    offenders = []
    for path in package_modules():
        for module, name in reaches_across(path):
            if not offered(module, name, face_of):
                rest = module.removeprefix("sitemapcrawl.").partition(".")[2]
                offenders.append(f"{module_name(path)} -> {module}{'.' if rest else ': '}{name}")
    assert offenders == [], "names another package does not offer (add them to its FACE if they are meant to be public)"


def test_the_face_rule_refuses_a_name_not_offered() -> None:
    face_of = {"web": {"urls": ("canonicalize",)}, "sitemaps": {}}
    assert offered("sitemapcrawl.web.urls", "canonicalize", face_of)
    assert offered("sitemapcrawl.web", "urls", face_of)
    assert offered("sitemapcrawl.sitemaps", "parse_sitemap", face_of)  # the package's __all__
    assert offered("sitemapcrawl.config", "Settings", face_of)
    assert not offered("sitemapcrawl.web.urls", "host_key", face_of)
    assert not offered("sitemapcrawl.web", "rules", face_of)
    assert not offered("sitemapcrawl.sitemaps.xml", "iterparse", face_of)


def stale_names(face_of: dict[str, dict[str, tuple[str, ...]]]) -> list[str]:
    """The modules and names the faces offer that do not exist."""
    stale = []
    for package, face in face_of.items():
        for module, names in face.items():
            try:
                loaded = importlib.import_module(f"sitemapcrawl.{package}.{module}")
            except ImportError:
                stale.append(f"{package}.{module}")
                continue
            stale += [f"{package}.{module}.{name}" for name in names if not hasattr(loaded, name)]
    return stale


def test_every_name_a_face_offers_exists() -> None:
    assert stale_names(faces()) == []


def test_a_stale_face_name_is_seen() -> None:
    assert stale_names({"web": {"urls": ("canonicalize", "gone")}, "model": {"gone": ("x",)}}) == [
        "web.urls.gone", "model.gone"]


def test_the_face_reader_sees_names_and_attributes(tmp_path: Path) -> None:
    source = tmp_path / "example.py"
    source.write_text("""
from sitemapcrawl.storage.store import Store
from sitemapcrawl.web import urls
def later():
    return urls.canonicalize, Store
""", encoding="utf-8")
    assert sorted(reaches_across(source)) == [("sitemapcrawl.storage.store", "Store"), ("sitemapcrawl.web", "urls"),
                                              ("sitemapcrawl.web.urls", "canonicalize")]
    for unseen in ("import sitemapcrawl.web.urls\n", "from sitemapcrawl import web\n"):
        source.write_text(unseen, encoding="utf-8")
        with pytest.raises(AssertionError, match="from sitemapcrawl.package import module"):
            reaches_across(source)
    source.write_text("from sitemapcrawl import config, logfields\n", encoding="utf-8")
    assert reaches_across(source) == []


def test_no_module_is_too_long() -> None:
    long = {str(path.relative_to(PACKAGE)): lines for path in package_modules()
            if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}


#: A module's docstring says what it is for, why, and what it costs: more than this belongs in docs/.
MAX_DOCSTRING_LINES = 20


def docstring_lines(source: str) -> int:
    """The lines of a module's docstring (0: none)."""
    return len((ast.get_docstring(ast.parse(source), clean=False) or "").strip("\n").splitlines())


def test_no_module_docstring_is_too_long() -> None:
    long = {str(path.relative_to(PACKAGE)): lines for path in package_modules()
            if (lines := docstring_lines(path.read_text(encoding="utf-8"))) > MAX_DOCSTRING_LINES}
    assert long == {}


def test_the_docstring_count_sees_every_line() -> None:
    assert docstring_lines('"""One.\n\nTwo\nthree.\n"""\nx = 1\n') == 4
    assert docstring_lines("x = 1\n") == 0


def test_the_reader_sees_every_form_of_import(tmp_path: Path) -> None:
    source = tmp_path / "example.py"
    source.write_text("""
from sitemapcrawl.jobs.detect import check_origin
from sitemapcrawl.web import urls, rules
import sitemapcrawl.jobs.parse
def later():
    from sitemapcrawl.jobs.fetch import fetch
""", encoding="utf-8")
    assert imports_of(source) == [("sitemapcrawl.jobs.detect", ["check_origin"]),
                                  ("sitemapcrawl.web", ["urls", "rules"]),
                                  ("sitemapcrawl.jobs.parse", []), ("sitemapcrawl.jobs.fetch", ["fetch"])]
    assert targets("sitemapcrawl.web", ["urls", "rules"]) == ["sitemapcrawl.web.urls", "sitemapcrawl.web.rules"]
    assert room_of("sitemapcrawl.web.urls") == "web"


def mutual(reached: dict[str, set[str]]) -> list[tuple[str, ...]]:
    """The pairs of modules that import each other, from each module's imported modules."""
    return sorted({tuple(sorted((here, there))) for here, theirs in reached.items() for there in theirs
                   if there != here and here in reached.get(there, set())})


def test_no_two_modules_import_each_other() -> None:
    reached = {module_name(path): {target for module, names in imports_of(path) for target in targets(module, names)}
               for path in package_modules()}
    pairs = mutual(reached)
    assert pairs == []


def test_the_cycle_rule_sees_two_modules_importing_each_other() -> None:
    assert mutual({"a": {"b", "c"}, "b": {"a"}, "c": {"d"}, "d": set()}) == [("a", "b")]


#: Calls that read the wall clock. Only `sitemapcrawl/clock.py` makes them: everything else takes a `Clock`
#: or a `now` (a datetime), so a test can stop time and two modules cannot stamp from two clocks.
CLOCK_READS = {("datetime", "now"), ("datetime", "utcnow"), ("datetime", "today"), ("date", "today"),
               ("time", "time"), ("time", "time_ns")}


def clock_reads(path: Path) -> list[int]:
    """Line numbers of the wall-clock reads in a file (`datetime.now(...)`, `datetime.datetime.now()`,
    `time.time()`, and `time()` after `from time import time`)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bare = {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
            and node.module == "time" for alias in node.names if ("time", alias.name) in CLOCK_READS}

    def is_read(func: ast.expr) -> bool:
        if isinstance(func, ast.Name):
            return func.id in bare
        owner = func.value if isinstance(func, ast.Attribute) else None
        name = owner.id if isinstance(owner, ast.Name) else owner.attr if isinstance(owner, ast.Attribute) else None
        return isinstance(func, ast.Attribute) and (name, func.attr) in CLOCK_READS

    return sorted(node.lineno for node in ast.walk(tree) if isinstance(node, ast.Call) and is_read(node.func))


def test_the_clock_is_read_in_one_module_at_most_two_places() -> None:
    reads = {f"{path.relative_to(PACKAGE)}:{line}" for path in package_modules() for line in clock_reads(path)}
    assert {place.split(":")[0] for place in reads} == {"clock.py"}, sorted(reads)
    assert len(reads) <= 2, sorted(reads)


def test_the_clock_reader_sees_every_form(tmp_path: Path) -> None:
    source = tmp_path / "example.py"
    source.write_text("import time\nfrom datetime import UTC, date, datetime\n"
                      "a = datetime.now(UTC).replace(microsecond=0)\nb = time.time()\nc = date.today()\n"
                      "d = time.monotonic()\ne = datetime.fromtimestamp(0)\n", encoding="utf-8")
    assert clock_reads(source) == [3, 4, 5]


def test_the_clock_reader_sees_module_paths_and_imported_functions(tmp_path: Path) -> None:
    source = tmp_path / "example.py"
    source.write_text("import datetime\nfrom time import monotonic, time as now\n"
                      "a = datetime.datetime.now()\nb = now()\nc = monotonic()\nd = datetime.date.today()\n",
                      encoding="utf-8")
    assert clock_reads(source) == [3, 4, 6]
