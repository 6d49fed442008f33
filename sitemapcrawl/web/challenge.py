"""Bot challenges and WAF blocks: when a site's defence answered instead of the page.

A 403, 429 or 503 with the signature of a known bot defence (Cloudflare,
Akamai, AWS WAF, DataDome, PerimeterX, Sucuri) says the site is not broken:
we are blocked. fetch records it as its own fact (`f:blk`, status
`deferred`), so the page is not counted as an HTTP error nor against its
sitemap's fetch signal, and the audit lists it as `blocked-by-site`. Pure:
status, lower-case headers and the start of the body in, a vendor name out.

A signature is a header only that defence sends (`cf-mitigated: challenge`,
`x-amzn-waf-action`, `x-datadome`, `x-sucuri-id`), or its server name
together with words of its challenge or block page, or words only its
pages hold (PerimeterX's captcha script). A plain 403 of the site itself
matches none.

Cost: a few dict lookups and, for those three status codes only, a search
of the first `BODY_BYTES` of the body.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

__all__ = ["BLOCK_CODES", "BODY_BYTES", "VENDORS", "challenge_of"]

#: The answers a bot defence gives instead of the page.
BLOCK_CODES = frozenset({403, 429, 503})
#: How much of the body is searched for a challenge page's words.
BODY_BYTES = 32 * 1024


def _words(*words: str) -> re.Pattern[bytes]:
    return re.compile("|".join(re.escape(word) for word in words).encode(), re.IGNORECASE)


_CLOUDFLARE_PAGE = _words("just a moment...", "attention required! | cloudflare", "cdn-cgi/challenge-platform",
                          "cf-browser-verification", "sorry, you have been blocked", "cf-error-details")
_AKAMAI_PAGE = _words("access denied", "reference #", "reference&#32;&#35;", "_abck", "bm-verify")
_AWS_PAGE = _words("awswaf", "token.awswaf.com", "aws-waf-token")
_DATADOME_PAGE = _words("captcha-delivery.com", "datadome")
_PERIMETERX_PAGE = _words("px-captcha", "_pxappid", "captcha.px-cdn.net", "client.perimeterx.net", "_pxhd")
_SUCURI_PAGE = _words("sucuri website firewall", "cloudproxy@sucuri.net", "sucuri.net/privacy-policy")


def _cloudflare(headers: Mapping[str, str], head: bytes) -> bool:
    if headers.get("cf-mitigated", "").strip().lower() == "challenge":
        return True
    return "cloudflare" in headers.get("server", "").lower() and _CLOUDFLARE_PAGE.search(head) is not None


def _akamai(headers: Mapping[str, str], head: bytes) -> bool:
    return "akamaighost" in headers.get("server", "").lower() and _AKAMAI_PAGE.search(head) is not None


def _aws_waf(headers: Mapping[str, str], head: bytes) -> bool:
    return "x-amzn-waf-action" in headers or _AWS_PAGE.search(head) is not None


def _datadome(headers: Mapping[str, str], head: bytes) -> bool:
    if "x-datadome" in headers or "x-dd-b" in headers:
        return True
    return "datadome" in headers.get("server", "").lower() or _DATADOME_PAGE.search(head) is not None


def _perimeterx(headers: Mapping[str, str], head: bytes) -> bool:
    return _PERIMETERX_PAGE.search(head) is not None


def _sucuri(headers: Mapping[str, str], head: bytes) -> bool:
    if "x-sucuri-id" in headers or "x-sucuri-block" in headers:
        return True
    return "sucuri" in headers.get("server", "").lower() or _SUCURI_PAGE.search(head) is not None


#: Each defence's name and its test, most specific first.
VENDORS: tuple[tuple[str, Callable[[Mapping[str, str], bytes], bool]], ...] = (
    ("cloudflare", _cloudflare), ("aws-waf", _aws_waf), ("datadome", _datadome), ("sucuri", _sucuri),
    ("perimeterx", _perimeterx), ("akamai", _akamai),
)


def challenge_of(status: int | None, headers: Mapping[str, str], body: bytes) -> str | None:
    """The bot defence that answered (`cloudflare`, `akamai`, `aws-waf`, `datadome`, `perimeterx`, `sucuri`),
    or None: another answer, or a 403/429/503 of the site itself. `headers` in lower case."""
    if status not in BLOCK_CODES:
        return None
    head = body[:BODY_BYTES]
    return next((name for name, test in VENDORS if test(headers, head)), None)
