"""`report --html FILE`: the panels as one self-contained HTML page (inline CSS and SVG).

No network is needed to open the file: no external style sheet, script,
font or image; charts are inline SVG drawn here. Every value from the table
(URLs, problems, robots.txt lines) is HTML-escaped, since a crawled site
chooses them. `serve` reuses `render_panel` for its live page and adds a
small script (`page(..., live=...)`) that refreshes each panel in place.

Pure: a snapshot in, text out. Cost: linear in the hosts and sitemaps shown.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from sitemapcrawl.errors import UsageError
from sitemapcrawl.model.audit import NEED_LINKS
from sitemapcrawl.report.panels import PANELS, Snapshot, panel_data
from sitemapcrawl.scoring.quality import SIGNALS

_CSS = """
:root { --fg: #1d2330; --muted: #5b6475; --line: #d9dde5; --bar: #3d6fb6; --bg: #f6f7f9; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg);
       margin: 0; padding: 1.5rem; }
h1 { font-size: 1.4rem; margin: 0 0 .25rem; }
h2 { font-size: 1.1rem; margin: 0 0 .75rem; }
.sub { color: var(--muted); margin-bottom: 1rem; }
.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(420px, 1fr)); gap: 1rem; }
section { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 1rem; overflow-x: auto; }
section.wide { grid-column: 1 / -1; }
.cards { display: flex; flex-wrap: wrap; gap: .75rem; }
.card { border: 1px solid var(--line); border-radius: 6px; padding: .5rem .9rem; min-width: 7rem; }
.card b { display: block; font-size: 1.4rem; }
.card span { color: var(--muted); font-size: .85rem; }
table { border-collapse: collapse; width: 100%; font-size: .85rem; }
th, td { border-bottom: 1px solid var(--line); padding: .3rem .4rem; text-align: left; vertical-align: top; }
th { background: #eef1f5; position: sticky; top: 0; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
td.url { word-break: break-all; min-width: 14rem; max-width: 28rem; }
.note { color: var(--muted); font-size: .8rem; }
td.why { min-width: 18rem; }
table.sitemaps td.url { min-width: 12rem; max-width: 20rem; }
td.signals { font-size: .75rem; white-space: nowrap; font-variant-numeric: tabular-nums; }
.audits { display: grid; grid-template-columns: repeat(auto-fit, minmax(360px, 1fr)); gap: .75rem; }
.audit ul { margin: .25rem 0; padding-left: 1.1rem; max-height: 16rem; overflow-y: auto; }
.audit li.url { word-break: break-all; font-size: .85rem; }
.audit .count { color: var(--muted); font-weight: normal; }
.audit .why { color: var(--muted); word-break: normal; }
h3 { font-size: .95rem; margin: .75rem 0 .35rem; }
h3.url { word-break: break-all; }
.history { margin-bottom: 1rem; }
.state-ok, .state-trusted { color: #1d7a3a; } .state-demoted { color: #a35d00; }
.state-blacklisted, .state-blocked { color: #b3261e; font-weight: 600; }
svg text { font: 12px system-ui, sans-serif; fill: var(--fg); }
#live-status { color: var(--muted); font-size: .85rem; }
"""
_STATE_COLOURS = {"ok": "#2e8b57", "trusted": "#2e8b57", "demoted": "#e69500", "blacklisted": "#c0392b",
                  "blocked": "#c0392b", None: "#9aa3b2"}
#: Sitemaps drawn in the quality chart (the worst first); the table lists them all.
CHART_SITEMAPS = 40


def _e(value: Any) -> str:
    return html.escape("-" if value is None else str(value), quote=True)


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def bar_chart(pairs: list[list[Any]], title: str, colours: list[str] | None = None, width: int = 460,
              fmt: str = "{:,}") -> str:
    """A horizontal bar chart as inline SVG: one bar per [label, value] pair, with its value."""
    row, value_w, char_w = 22, 60, 7
    # Labels get the room the longest needs, up to 45% of the width; longer ones keep their end.
    fits = max(6, int(width * 0.45 - 12) // char_w)
    longest = min(fits, max([len(str(label)) for label, _ in pairs] + [4]))
    label_w = longest * char_w + 12
    top = max([float(v) for _, v in pairs] + [1e-9])
    bars = []
    for i, (label, value) in enumerate(pairs):
        length = (width - label_w - value_w) * float(value) / top
        colour = colours[i] if colours else "var(--bar)"
        short = str(label) if len(str(label)) <= longest else "…" + str(label)[1 - longest:]
        y = i * row
        bars.append(
            f'<text x="{label_w - 6}" y="{y + 15}" text-anchor="end"><title>{_e(label)}</title>{_e(short)}</text>'
            f'<rect x="{label_w}" y="{y + 4}" width="{length:.1f}" height="{row - 8}" fill="{colour}" rx="2"/>'
            f'<text x="{label_w + length + 4:.1f}" y="{y + 15}">{_e(fmt.format(value))}</text>')
    height = max(row, row * len(pairs))
    return (f'<svg role="img" aria-label="{_e(title)}" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg"><title>{_e(title)}</title>'
            + "".join(bars) + "</svg>")


def _chart_block(title: str, pairs: list[list[Any]]) -> str:
    return f"<h3>{_e(title)}</h3>{bar_chart(pairs, title)}"


def _totals(data: dict[str, Any]) -> str:
    cards = [("rows", data["rows"]), ("hosts", data["hosts"]), ("sitemaps", data["sitemaps"]),
             ("fetched", data["fetched"]), ("errors", data["errors"]), ("unreadable rows", data["unreadable"])]
    outcomes = ", ".join(f"{_e(k)} {_e(n)}" for k, n in data["sitemap_outcomes"].items()) or "none"
    return ('<div class="cards">' + "".join(f'<div class="card"><b>{v:,}</b><span>{_e(k)}</span></div>'
                                            for k, v in cards)
            + f'</div><p class="note">Sitemaps by outcome: {outcomes}. Read from HBase at {_e(data["taken"])}, '
            f'from {_e(data["source"])}.</p>')


def _sitemaps(data: dict[str, Any]) -> str:
    rows = data["sitemaps"]
    charted = [r for r in rows if r["quality"] is not None][:CHART_SITEMAPS]
    chart = bar_chart([[r["url"], r["quality"]] for r in charted], "Sitemap quality (worst first)",
                      [_STATE_COLOURS.get(r["state"], "#9aa3b2") for r in charted], width=760, fmt="{:.2f}") \
        if charted else '<p class="note">No sitemap scored yet.</p>'
    head = ("<tr><th>sitemap</th><th>type</th><th>found</th><th>status</th><th>entries</th>"
            "<th>dropped scope / filter / limit</th><th>quality</th><th>state</th>"
            '<th>signals</th><th class="why">why, problems, errors</th></tr>')
    body = []
    for r in rows:
        status = _e(r["status"]) + (f" ({_e(r['http_code'])})" if r["http_code"] is not None else "")
        # Each sentence once: the blacklist reason quotes the worst note, a note may quote a problem.
        reason = r["blacklisted"] or ""
        notes = [f"blacklisted: {reason}"] if reason else []
        notes += [n for n in r["notes"] if n not in reason]
        notes += [p for p in r["problems"] if not any(p in note for note in notes)]
        if r["error"]:
            notes.append(f"fetch error: {r['error']}")
        notes += [f"warning (read leniently): {w}" for w in r.get("warnings", ())]
        body.append(
            f'<tr><td class="url">{_e(r["url"])}</td><td>{_e(r["type"])}</td><td>{_e(r["source"])}</td>'
            f'<td>{status}</td><td class="n">{_e(r["entries"])}</td>'
            f'<td class="n">{_e(r["dropped_scope"])} / {_e(r["dropped_filter"])} / {_e(r["dropped_limit"])}</td>'
            f'<td class="n">{_num(r["quality"])}</td><td class="state-{_e(r["state"])}">{_e(r["state"])}</td>'
            # The six signals in one narrow column, so the why column fits a 1280 px screen.
            + '<td class="signals">' + "<br>".join(f"{_e(s)} {_num(r['signals'].get(s))}" for s in SIGNALS)
            + '</td><td class="note why">' + "<br>".join(_e(n) for n in notes) + "</td></tr>")
    shown = f'<p class="note">{len(rows)} of {data["count"]} sitemaps shown.</p>' if len(rows) < data["count"] else ""
    return (f'{chart}{shown}<table class="sitemaps"><thead>{head}</thead>'
            f"<tbody>{''.join(body)}</tbody></table>")


def _hosts(data: dict[str, Any]) -> str:
    head = ("<tr><th>host</th><th>rows</th><th>errors</th><th>robots.txt denied</th><th>blocked by the site</th>"
            "<th>in sitemaps</th><th>via links</th><th>statuses</th><th>robots.txt and crawl delay</th></tr>")
    body = "".join(
        f'<tr><td class="url">{_e(h["host"])}</td><td class="n">{h["rows"]:,}</td><td class="n">{h["errors"]:,}</td>'
        f'<td class="n">{h["robots_denied"]:,}</td><td class="n">{h["blocked_by_site"]:,}</td>'
        f'<td class="n">{h["in_sitemaps"]:,}</td>'
        f'<td class="n">{h["via_links"]:,}</td>'
        f'<td class="note">{", ".join(f"{_e(k)} {_e(v)}" for k, v in h["by_status"].items())}</td>'
        f'<td class="note">{"<br>".join(_e(line) for line in h["robots"]) or "no robots.txt fetched"}</td></tr>'
        for h in data["hosts"])
    chart = bar_chart([[h["host"], h["errors"]] for h in data["hosts"][:20]], "Fetch errors per host") \
        if any(h["errors"] for h in data["hosts"]) else ""
    return f"{chart}<table><thead>{head}</thead><tbody>{body}</tbody></table>"


def _freshness(data: dict[str, Any]) -> str:
    months = data["lastmod_by_month"]
    by_month = (f"<h3>Pages by lastmod month</h3>{column_chart(months, 'Pages by lastmod month')}" if months
                else '<p class="note">No page has a lastmod.</p>')
    due = (_chart_block("Rows by when they are due", data["due"]) if data["due"]
           else f'<p class="note">{_e(data.get("note", ""))}</p>')
    return (by_month
            + _chart_block("Pages by changefreq", data["changefreq"])
            + due
            + _chart_block("Pages with a lastmod: fetched after it (fresh) or before (stale)",
                           data["fresh_vs_stale"]))


def column_chart(pairs: list[list[Any]], title: str, width: int = 460, height: int = 140) -> str:
    """A vertical bar chart as inline SVG (a histogram): one column per [label, value], labels every few."""
    top = max([float(v) for _, v in pairs] + [1e-9])
    step = max(1, -(-len(pairs) // 6))  # at most six labels, so they never overlap
    inner = height - 34
    bar_w = max(2.0, (width - 10) / max(1, len(pairs)))
    parts = []
    for i, (label, value) in enumerate(pairs):
        tall = inner * float(value) / top
        x = 5 + i * bar_w
        parts.append(f'<rect x="{x:.1f}" y="{14 + inner - tall:.1f}" width="{max(1.0, bar_w - 1):.1f}" '
                     f'height="{tall:.1f}" fill="var(--bar)"><title>{_e(label)}: {_e(value)}</title></rect>')
        if i % step == 0:
            parts.append(f'<text x="{x:.1f}" y="{height - 6}">{_e(label)}</text>')
    return (f'<svg role="img" aria-label="{_e(title)}" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg"><title>{_e(title)}</title>'
            f'<text x="5" y="11">max {_e(f"{top:,.0f}")}</text>' + "".join(parts) + "</svg>")


_STATUS_COLOURS = {"fetched": "#2e8b57", "not_modified": "#5fae7f", "unfetched": "#9aa3b2", "redirect": "#e69500",
                   "gone": "#c0392b", "retry": "#d9534f", "blocked_robots": "#7b4fa0", "too_large": "#8a5a44",
                   "deferred": "#b8b8b8"}


def history_chart(parses: list[dict[str, Any]], title: str, width: int = 420, height: int = 120) -> str:
    """Per parse, a column of the sitemap's entries split by the statuses of its URLs (inline SVG)."""
    top = max([float(p["entries"] or 0) for p in parses] + [sum(p["statuses"].values()) for p in parses] + [1e-9])
    inner = height - 30
    col = min(40.0, (width - 10) / max(1, len(parses)))
    parts = []
    for i, p in enumerate(parses):
        x = 5 + i * col
        y = 12 + inner
        statuses = p["statuses"] or {"entries": p["entries"] or 0}
        for status, n in sorted(statuses.items()):
            tall = inner * n / top
            y -= tall
            parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{col - 4:.1f}" height="{tall:.1f}" '
                         f'fill="{_STATUS_COLOURS.get(status, "var(--bar)")}"><title>{_e(p["at"])}: '
                         f'{_e(status)} {n:,}</title></rect>')
        parts.append(f'<text x="{x:.1f}" y="{height - 4}">{_e(p["entries"])}</text>')
    return (f'<svg role="img" aria-label="{_e(title)}" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg"><title>{_e(title)}</title>'
            + "".join(parts) + "</svg>")


def _audit(data: dict[str, Any]) -> str:
    blocks = []
    for name, item in data["lists"].items():
        if name in NEED_LINKS and not data["mixed"]:
            blocks.append(f'<div class="audit"><h3>{_e(item["title"])}</h3><p class="note">Needs a mixed crawl '
                          "(sitemaps and links): no crawled page linked anywhere yet.</p></div>")
            continue
        shown = len(item["urls"])
        more = (f'<p class="note">{shown} of {item["total"]:,} shown; all of them: '
                f'<code>{_e(item["export"])}</code></p>') if item["total"] > shown else ""
        reasons = item.get("reasons", {})
        listing = ("<ul>" + "".join(f'<li class="url">{_e(u)}' + (f' <span class="why">{_e(reasons[u])}</span>'
                                                                   if reasons.get(u) else "") + "</li>"
                                    for u in item["urls"]) + "</ul>"
                   if shown else '<p class="note">None.</p>')
        blocks.append(f'<div class="audit" data-list="{_e(name)}"><h3>{_e(item["title"])} '
                      f'<span class="count">{item["total"]:,}</span></h3>{listing}{more}</div>')
    return '<div class="audits">' + "".join(blocks) + "</div>"


def _history(data: dict[str, Any]) -> str:
    if not data["sitemaps"]:
        return '<p class="note">No sitemap parsed yet.</p>'
    blocks = []
    for sitemap in data["sitemaps"]:
        parses = sitemap["parses"]
        rows = "".join(
            f'<tr><td>{_e(p["at"])}</td><td class="n">{_e(p["entries"])}</td>'
            + ('<td colspan="5" class="note">first parse</td>' if p["first"] else "".join(
                f'<td class="n">{p[k]:,}</td>' for k in ("added", "removed", "lastmod", "changefreq", "priority")))
            + '<td class="note">' + ", ".join(f"{_e(k)} {v:,}" for k, v in sorted(p["statuses"].items()))
            + "</td></tr>" for p in reversed(parses))
        blocks.append(
            f'<div class="history"><h3 class="url">{_e(sitemap["url"])}</h3>'
            f'{history_chart(parses, "Entries and statuses per parse: " + sitemap["url"])}'
            "<table><thead><tr><th>parsed</th><th>entries</th><th>added</th><th>removed</th><th>lastmod</th>"
            f"<th>changefreq</th><th>priority</th><th>statuses of its URLs</th></tr></thead><tbody>{rows}</tbody>"
            "</table></div>")
    return ('<p class="note">Each column: one parse, its entries split by the fetch status of its URLs '
            "(green fetched, grey unfetched, orange redirect, red gone or retry, purple robots.txt). "
            "Every change: <code>sitemapcrawl changes --sitemap URL</code>.</p>" + "".join(blocks))


def render_panel(snapshot: Snapshot, name: str, options: dict[str, Any] | None = None) -> str:
    """The inner HTML of one panel (KeyError for an unknown name)."""
    data = panel_data(snapshot, name, options)
    if name == "totals":
        return _totals(data)
    if name == "status":
        return bar_chart(data["by_status"], "Rows by status")
    if name == "discovery":
        return bar_chart(data["by_discovery"], "Rows by how they were found")
    if name == "sitemaps":
        return _sitemaps(data)
    if name == "hosts":
        return _hosts(data)
    if name == "audit":
        return _audit(data)
    if name == "history":
        return _history(data)
    return _freshness(data)


_WIDE = {"sitemaps", "hosts", "audit", "history"}


def page(snapshot: Snapshot, title: str = "sitemapcrawl report", live: str = "") -> str:
    """The whole page: every panel in a section (`data-panel` = its name); `live` is a script to add."""
    sections = "".join(
        f'<section id="{name}" data-panel="{name}" class="{"wide" if name in _WIDE else ""}">'
        f"<h2>{_e(heading)}</h2><div class=\"body\">{render_panel(snapshot, name)}</div></section>"
        for name, (heading, _) in PANELS.items())
    status = '<div id="live-status"></div>' if live else ""
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{_e(title)}</title>'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            # An empty icon: the browser asks for no /favicon.ico (a 404 would be a console error).
            f'<link rel="icon" href="data:,"><style>{_CSS}</style></head>'
            f'<body><h1>{_e(title)}</h1><div class="sub">Read from HBase at '
            f'{_e(snapshot.taken.strftime("%Y-%m-%d %H:%M:%S UTC"))}</div>{status}'
            f'<div class="grid">{sections}</div>{live}</body></html>')


def write_report(snapshot: Snapshot, path: Path) -> int:
    """Write the page to `path` (UTF-8); return its size in bytes. UsageError when it cannot be written."""
    text = page(snapshot).encode("utf-8")
    try:
        path.write_bytes(text)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
    return len(text)
