"""The web side: URLs, URL rules, the polite HTTP client, robots.txt, links and discovery.

`urls` canonicalises URLs, `hostnames` host names and registered domains,
`rowkeys` builds row keys and key prefixes from them; `urlfilters` and `rules` decide
which URLs are in scope; `http` is the one HTTP client (behind a small
protocol, failures as values), `decoding` undoes its Content-Encoding
within a cap; `robots` parses robots.txt with protego and
`robots_txt` fetches it; `htmllinks` takes a page's outlinks; `pagesays`
reads what a page says about itself (robots directives, canonical,
hreflang) from its head and headers; `challenge` tells a bot challenge
from an error; `access` adds headers and netrc basic auth to requests;
`discover` finds a site's sitemaps (robots.txt lines, well-known paths);
`warc` keeps every exchange of the client as WARC records (`fetch --warc`).
"""

#: What other packages may use of this one, module by module (tests/unit/test_layout.py refuses any other
#: name): a module or a name not here is this package's own.
FACE: dict[str, tuple[str, ...]] = {
    "challenge": ("challenge_of",),
    "discover": ("read_robots", "robots_url", "site_tree"),
    "htmllinks": ("extract_links",),
    "http": ("AsyncHttpClient", "HttpResponse", "PoliteHttpClient", "conditional_headers", "fetch_document"),
    "pagesays": ("is_html", "page_says", "x_robots_tag"),
    "robots": ("RobotsPolicy",),
    "robots_txt": ("HostReport", "check_origin_async", "host_report", "robots_host_row"),
    "rowkeys": (
        "host_row_prefix", "origin_of_key", "origin_row_prefix", "row_key", "url_from_row_key",
        "url_prefix_to_row_prefix",
    ),
    "rules": ("UrlRules",),
    "urls": (
        "CanonicalRules", "DEFAULT_RULES", "canonical_host", "canonicalize", "host_key", "origin",
        "registered_domain_key",
    ),
    "warc": ("Capture", "Unrecorded", "WarcRecorder", "open_recorder"),
}
