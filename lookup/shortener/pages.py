"""The few HTML pages a person may see instead of a redirect: warning, password, preview.

Every value placed in a page is HTML-escaped; pages are never cached, may not be
framed, and load nothing from anywhere (a strict Content-Security-Policy).
"""

from __future__ import annotations

from html import escape

from lookup.shortener.model import Link

#: Headers sent with every page.
PAGE_HEADERS = {
    "Cache-Control": "no-store",
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}

_STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem;"
    "color:#1f2328;line-height:1.5}h1{font-size:1.4rem}code{word-break:break-all;"
    "background:#f6f8fa;padding:.1rem .3rem;border-radius:4px}.warn{border-left:4px solid #d1242f;"
    "padding:.5rem 1rem;background:#fff5f5}.btn{display:inline-block;padding:.5rem 1rem;"
    "border-radius:6px;background:#0969da;color:#fff;text-decoration:none;border:0;font-size:1rem;"
    "cursor:pointer}input{font-size:1rem;padding:.4rem}.err{color:#d1242f}"
)


def _page(title: str, body: str) -> str:
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width,initial-scale=1">'
        '<meta name=robots content="noindex,nofollow">'
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head>"
        f"<body>{body}</body></html>"
    )


def scan_reasons_html(link: Link) -> str:
    """The scanner's reasons for its verdict as a list (empty when none fired)."""
    if not link.scan_reasons:
        return ""
    items = "".join(f"<li>{escape(reason)}</li>" for reason in link.scan_reasons)
    return f'<ul id="reasons">{items}</ul>'


def warning_page(link: Link, short_url: str) -> str:
    """Shown instead of a redirect for a DISABLED link: no Location, no clickable destination."""
    by_scanner = bool(link.status_reason) and link.status_reason != "owner"
    why = (
        "Our safety checks flagged its destination as harmful."
        if by_scanner
        else "Its owner has disabled it."
    )
    reasons = ""
    if by_scanner and link.scan_reasons:
        reasons = f"<p>Safety scan: <strong>{escape(link.scan_verdict)}</strong>, because:</p>"
        reasons += scan_reasons_html(link)
    return _page(
        "Warning: this link has been disabled",
        '<h1 id="warning">Warning: this link has been disabled</h1>'
        f'<div class="warn"><p>The short link <code>{escape(short_url)}</code> '
        f"no longer redirects. {escape(why)}</p>{reasons}"
        f"<p>It pointed to <code>{escape(link.long_url)}</code>. "
        "We recommend you do not visit it.</p>"
        "</div>",
    )


#: A dead link's page: its title and what it says, by the JSON error code it stands for.
_DEAD = {
    "NOT_FOUND": ("This short link does not exist", "No link has this address. Check for a typo."),
    "LINK_EXPIRED": (
        "This short link has expired",
        "It reached its end date or its last allowed visit, and no longer redirects.",
    ),
    "LINK_DELETED": ("This short link was deleted", "Its owner deleted it."),
}


def dead_link_page(short_url: str, code: str) -> str:
    """What a person following a missing, expired or deleted short link reads (a browser's
    answer; an API client gets the JSON error with the same ``code``)."""
    title, why = _DEAD.get(code, _DEAD["NOT_FOUND"])
    return _page(
        title,
        f'<h1 id="dead">{escape(title)}</h1>'
        f"<p>The short link <code>{escape(short_url)}</code> goes nowhere. {escape(why)}</p>",
    )


def password_page(link: Link, short_url: str, *, error: str | None = None) -> str:
    """The form a password-protected link shows first; it posts back to the short URL."""
    message = f'<p class="err" id="error">{escape(error)}</p>' if error else ""
    return _page(
        "Password required",
        "<h1>This link is protected by a password</h1>"
        f"<p>Enter the password for <code>{escape(short_url)}</code> to continue.</p>{message}"
        f'<form method="post" action="/{escape(link.key)}">'
        '<label for="password">Password</label> '
        '<input id="password" type="password" name="password" autocomplete="current-password" '
        'required maxlength="128" autofocus> '
        '<button class="btn" type="submit">Continue</button></form>',
    )


def preview_page(link: Link, short_url: str, status: str) -> str:
    """``GET /{key}+``: where the link goes, its scan verdict, and a button to continue."""
    if link.password_hash:
        destination = "<p>The destination is hidden until the password is entered.</p>"
    else:
        destination = (
            "<p>This short link goes to:</p>"
            f"<p><code id=destination>{escape(link.long_url)}</code></p>"
        )
    disabled = status == "DISABLED"
    if disabled:
        action = '<div class="warn"><p>This link has been disabled and will not redirect.</p></div>'
    else:
        action = (
            f'<p><a class="btn" id="continue" href="/{escape(link.key)}" '
            'rel="noreferrer">Continue</a></p>'
        )
    if link.scan_reasons:
        why = "<p>Why: the scanner's rules that fired —</p>" + scan_reasons_html(link)
    elif link.scan_verdict == "PENDING":
        why = "<p>The safety scan has not run yet.</p>"
    else:
        why = "<p>No safety rule fired for this destination.</p>"
    return _page(
        "Link preview",
        f"<h1>Preview of <code>{escape(short_url)}</code></h1>{destination}"
        f"<p>Safety scan: <strong id=verdict>{escape(link.scan_verdict)}</strong> · "
        f"status: <strong id=status>{escape(status)}</strong></p>{why}{action}",
    )
