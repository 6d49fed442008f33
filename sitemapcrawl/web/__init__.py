"""The web side: URLs, URL rules, the polite HTTP client, robots.txt, links and discovery.

`urls` canonicalises URLs and builds row keys; `urlfilters` and `rules` decide
which URLs are in scope; `http` is the one HTTP client (behind a small
protocol, failures as values); `robots` parses robots.txt with protego and
`robots_txt` fetches it; `htmllinks` takes a page's outlinks; `discover`
finds a site's sitemaps (robots.txt lines, well-known paths).
"""

__all__ = [
    "discover", "hostnames", "htmllinks", "http", "robots", "robots_txt", "rowkeys", "rules", "urlfilters", "urls",
]
