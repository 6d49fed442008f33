"""The web side: URLs, URL rules, the polite HTTP client, robots.txt, links and discovery.

`urls` canonicalises URLs, `hostnames` host names and registered domains,
`rowkeys` builds row keys and key prefixes from them; `urlfilters` and `rules` decide
which URLs are in scope; `http` is the one HTTP client (behind a small
protocol, failures as values); `robots` parses robots.txt with protego and
`robots_txt` fetches it; `htmllinks` takes a page's outlinks; `pagesays`
reads what a page says about itself (robots directives, canonical,
hreflang) from its head and headers; `challenge` tells a bot challenge
from an error; `access` adds headers and netrc basic auth to requests;
`discover` finds a site's sitemaps (robots.txt lines, well-known paths);
`warc` keeps every exchange of the client as WARC records (`fetch --warc`).
"""

__all__ = [
    "access", "challenge", "discover", "hostnames", "htmllinks", "http", "pagesays", "robots", "robots_txt",
    "rowkeys", "rules", "urlfilters", "urls", "warc",
]
