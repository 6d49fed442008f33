"""The table layout options of `init` and the HBase shell script that applies them.

What Thrift1 cannot do (pre-split a table, create a namespace), the HBase
shell can: `shell_script` turns the `hbase-schema/*.hbase` files (shipped in
the package as `sitemapcrawl/hbase_schema`, a link to the one top-level copy)
into one script with the table prefix, namespace, compression and split
points applied, for an operator to run by hand (`init --print-schema`) or
for `init` to run through the `hbase_shell` setting. Split points are read
from a file or computed from a sample of seeds; both are pure functions here.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from sitemapcrawl.errors import InvalidUrlError, UsageError
from sitemapcrawl.model.webpage import TABLE_NAMES, WEBPAGE_TABLE
from sitemapcrawl.modes import Compression
from sitemapcrawl.web.rowkeys import host_row_prefix
from sitemapcrawl.web.urls import canonicalize

#: A family line of the schema files (their format is pinned by tests/unit/test_schema_files.py).
_FAMILY_END = re.compile(r"(\{NAME => '\w+',[^}]*BLOCKCACHE => (?:true|false))\}")
#: The line a schema file ends with; one `exit` ends the whole script instead.
_EXIT_LINE = re.compile(r"^exit\s*$", re.MULTILINE)
#: What a namespace may be called (HBase: letters, digits and '_').
_NAMESPACE = re.compile(r"[A-Za-z0-9_]+")
#: Split keys are printable ASCII: row keys of canonical URLs are.
_SPLIT_KEY = re.compile(r"[\x21-\x7e]+")
#: HBase's names for our compression choices.
HBASE_COMPRESSION = {Compression.NONE: "NONE", Compression.GZ: "GZ", Compression.SNAPPY: "SNAPPY"}


@dataclass(frozen=True)
class Layout:
    """How `init` lays the tables out on a cluster, beyond their families."""

    table_prefix: str = ""
    """The `table_prefix` setting; `ns:` at its start names a namespace."""
    compression: Compression = Compression.NONE
    """Block compression of every family."""
    split_keys: tuple[str, ...] = ()
    """Start keys of the webpage table's regions after the first (sorted, distinct)."""

    @property
    def namespace(self) -> str | None:
        """The namespace the prefix names (`crawl:` -> `crawl`), or None (HBase's `default`)."""
        namespace, sep, _ = self.table_prefix.partition(":")
        return namespace if sep else None


def check_namespace(layout: Layout) -> None:
    """UsageError unless the namespace part of the prefix is a name HBase accepts."""
    namespace = layout.namespace
    if namespace is not None and not _NAMESPACE.fullmatch(namespace):
        raise UsageError(f"table prefix {layout.table_prefix!r}: the namespace before ':' must be letters, "
                         "digits and '_'")


def packaged_files() -> Traversable:
    """The folder of the schema files inside the installed package (`hbase-schema/` in the source tree)."""
    return resources.files("sitemapcrawl") / "hbase_schema"


def schema_scripts() -> dict[str, str]:
    """Table base name -> the text of its `.hbase` file, from the package, for every table of the row
    model's registry (webpage first, then by name). UsageError naming a file the package lacks."""
    folder = packaged_files()
    scripts = {}
    for table in sorted(TABLE_NAMES, key=lambda name: (name != WEBPAGE_TABLE, name)):
        entry = folder / f"{table}.hbase"
        if not entry.is_file():
            raise UsageError(f"the package has no hbase_schema/{table}.hbase (a broken install?)")
        scripts[table] = entry.read_text(encoding="utf-8")
    return scripts


def _ruby(text: str) -> str:
    """A single-quoted Ruby string holding `text`."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def shell_script(layout: Layout) -> str:
    """One HBase shell script creating every missing table with `layout` applied.

    The namespace is created when missing; every family gets the
    compression; the webpage table gets the split points (HBase makes one
    region more than there are points). Tables that exist are left alone,
    as the schema files do. Cost: reads the packaged schema files.
    """
    check_namespace(layout)
    lines = [
        "# Made by `sitemapcrawl init --print-schema` from the package's hbase-schema/ files.",
        "# Run it with `hbase shell -n FILE` (or scripts/hbase-local shell FILE).",
        f"ENV['SITEMAPCRAWL_TABLE_PREFIX'] = {_ruby(layout.table_prefix)}",
    ]
    if layout.namespace is not None:
        # `list_namespace` prints the names but returns nil; the shell's admin object returns them.
        lines.append(f"create_namespace {_ruby(layout.namespace)} unless "
                     f"@shell.admin.list_namespace.include?({_ruby(layout.namespace)})")
    compression = HBASE_COMPRESSION[layout.compression]
    for table, text in schema_scripts().items():
        body = _EXIT_LINE.sub("", text).rstrip()
        families = _FAMILY_END.findall(body)
        if not families:
            raise UsageError(f"hbase_schema/{table}.hbase declares no families in the expected form")
        if table == WEBPAGE_TABLE and layout.split_keys:
            last = list(_FAMILY_END.finditer(body))[-1]
            keys = ", ".join(_ruby(key) for key in layout.split_keys)
            body = f"{body[: last.end()]}, SPLITS => [{keys}]{body[last.end():]}"
        if layout.compression is not Compression.NONE:
            body = _FAMILY_END.sub(lambda m: f"{m.group(1)}, COMPRESSION => '{compression}'}}", body)
        lines += ["", f"# ---- {table} " + "-" * (60 - len(table)), body]
    lines += ["", "exit", ""]
    return "\n".join(lines)


def read_split_keys(path: Path) -> tuple[str, ...]:
    """Split points from a file: one row key per line; blank lines and `#` comments skipped.

    Keys are printable ASCII with no spaces (row keys of canonical URLs are);
    they are sorted and made distinct. Raises UsageError naming the file and
    line of a bad key, or when the file holds none.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"split keys file {path}: cannot read it ({type(exc).__name__})") from None
    keys = set()
    for number, line in enumerate(text.splitlines(), 1):
        key = line.strip()
        if not key or key.startswith("#"):
            continue
        if not _SPLIT_KEY.fullmatch(key):
            raise UsageError(f"split keys file {path}, line {number}: {key[:80]!r} is not printable ASCII "
                             "without spaces")
        keys.add(key)
    if not keys:
        raise UsageError(f"split keys file {path}: no keys in it")
    return tuple(sorted(keys))


def split_keys_from_urls(urls: Iterable[str], regions: int) -> tuple[str, ...]:
    """Up to `regions - 1` split points that share the URLs' hosts out evenly, a host never cut.

    Each point is a host's row-key prefix (`com.example.www:`), so all of a
    host's rows stay in one region; hosts are weighted by how many URLs they
    have. Fewer points come back when there are fewer hosts than regions.
    URLs that cannot be keyed are skipped. Cost: one canonicalisation per URL,
    memory per distinct host.
    """
    if regions < 1:
        raise UsageError(f"--regions must be at least 1, not {regions}")
    hosts: Counter[str] = Counter()
    for url in urls:
        try:
            hosts[host_row_prefix(canonicalize(url))] += 1
        except InvalidUrlError:
            continue
    ordered = sorted(hosts)
    total = sum(hosts.values())
    before = [0]  # before[i]: URLs of the hosts sorted before ordered[i]
    for prefix in ordered[:-1]:
        before.append(before[-1] + hosts[prefix])
    keys: list[str] = []
    previous = 0
    regions = min(regions, len(ordered))  # a host is never cut: at most one region per host
    for k in range(1, regions):
        # Region k starts at the host whose URLs-before come closest to k shares,
        # leaving a host for each boundary still to place.
        candidates = range(previous + 1, len(ordered) - (regions - 1 - k))
        if not candidates:
            break
        previous = min(candidates, key=lambda i: (abs(before[i] * regions - k * total), i))
        keys.append(ordered[previous])
    return tuple(keys)


def seed_urls(path: Path) -> list[str]:
    """The URL of each seed line of a seed file (its first word); comments and blank lines skipped."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"seed file {path}: cannot read it ({type(exc).__name__})") from None
    return [line.split()[0] for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
