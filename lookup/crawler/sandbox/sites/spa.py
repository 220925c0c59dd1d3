"""The app host: a site whose pages its script builds in the browser (a single-page app).

What the cheap fetch sees of a guide is a shell — a heading, an empty
``<div id="root"></div>`` and a script; the guide's text and its links to the other
guides appear only once ``/static/app.js`` has run and fetched ``/api/pages/<slug>.json``.
The news page carries its data inline (a large ``<script type="application/json">``, as
server-side frameworks embed it) and is built from that. A crawler that does not render
indexes headings and finds no guide but the one it was given; one that renders finds them
all. Three pages are the other side of the detector: a long article with a small
analytics script, a short status page with no script at all, and a long article the
script only enhances — none needs a render.

While it runs, the app also asks for ``/api/private/track.json`` (disallowed by
robots.txt) and for an image on the hub host: a polite renderer asks for neither (the
request log is the proof).
"""

from __future__ import annotations

import json

from lookup.crawler.sandbox.sites.base import (
    NOT_FOUND,
    World,
    esc,
    html_response,
    page,
    text_response,
)
from lookup.crawler.sandbox.web import Request, Response

__all__ = ["GUIDES", "SpaSite"]

#: slug → (title, paragraphs): the guides only the script shows.
GUIDES: dict[str, tuple[str, tuple[str, ...]]] = {
    "green-tea": (
        "Brewing green tea",
        (
            "Green tea wants water well below the boil: around seventy-five degrees "
            "keeps the leaves sweet instead of bitter.",
            "Steep a sencha for a minute, then pour every drop out of the pot so the "
            "second infusion starts from damp, not drowned, leaves.",
        ),
    ),
    "oolong": (
        "Rolling oolong by hand",
        (
            "Oolong leaves are bruised, withered and rolled until their edges oxidise "
            "while the centres stay green.",
            "Tightly rolled pearls unfurl over five or six short infusions, each one "
            "tasting of stone fruit and toasted rice.",
        ),
    ),
    "matcha": (
        "Whisking matcha without lumps",
        (
            "Sift the powder through a fine sieve before the water touches it, or the "
            "whisk only chases clumps around the bowl.",
            "A bamboo chasen moved in a quick letter M raises a fine foam; circles just "
            "slosh the tea against the rim.",
        ),
    ),
    "puerh": (
        "Storing pu-erh cakes",
        (
            "Pressed pu-erh keeps changing for decades, so it is stored like wine: dark, "
            "steady, a little humid and far from spices.",
            "Pry a few grams from the cake's edge with a blunt pick to keep the leaves "
            "whole rather than crumbling them to dust.",
        ),
    ),
}

#: The news items the news page embeds as inline JSON.
NEWS = (
    ("Harvest report", "The first flush in the hills came two weeks early after a warm spring."),
    ("Tasting evening", "Members compared three roasts of the same oolong side by side."),
    ("New kettle", "The shop now sells a kettle that holds water at any temperature."),
)

_SERVER_TEXT = (
    "Tea is the dried leaf of one plant, Camellia sinensis; white, green, oolong, black and "
    "pu-erh differ only in how the leaf is withered, rolled, oxidised and dried. The same "
    "bush can give all of them, and the craft of each style is in those few steps after "
    "picking. This page is written on the server, so every word of it is in the HTML a "
    "crawler fetches, scripts or none."
)

_NOTES = (
    "Water matters as much as leaf. Hard water dulls a delicate green tea and flattens the "
    "aroma of an oolong, while very soft water can make a black tea taste thin. Filtered "
    "tap water, freshly drawn and heated once, suits almost every style.",
    "Cups change the taste too: thin porcelain keeps the heat briefly and suits green tea, "
    "while thick clay holds warmth for the long infusions of a dark roast.",
    "Write down the leaf, the weight, the temperature and the time of every pot for a "
    "week; the notes settle arguments that memory never does.",
)


class SpaSite:
    """A tea shop's single-page app: script-built guides and the detector's counter-examples."""

    def __init__(self, world: World, key: str = "app") -> None:
        self.world = world
        self.key = key

    # -- ground truth ------------------------------------------------------------------
    def url(self, path: str) -> str:
        return self.world.url(self.key, path)

    def manifest(self) -> dict[str, object]:
        """Which pages need a render, which do not, and the requests a renderer must refuse."""
        return {
            "host": self.world.names[self.key],
            "script_built": [self.url("/"), self.url("/news.html")]
            + [self.url(f"/guide/{slug}") for slug in GUIDES],
            "server_built": [
                self.url(p) for p in ("/about.html", "/status.html", "/enhanced.html")
            ],  # fmt: skip
            "rendered_text": {self.url(f"/guide/{s}"): p[0] for s, (_, p) in GUIDES.items()},
            "refused": {
                "robots": self.url("/api/private/track.json"),
                "other_host": self.world.url("hub", "/pixel.gif"),
            },
        }

    # -- pages ---------------------------------------------------------------------------
    def _shell(self, title: str, head: str = "", root: str = '<div id="root"></div>') -> str:
        footer = (
            '<a href="/about.html">About</a> · <a href="/status.html">Status</a> · '
            '<a href="/news.html">News</a> · <a href="/enhanced.html">Notes</a>'
        )
        return (
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f"<title>{esc(title)} — Leaf &amp; Kettle</title>{head}"
            '<script src="/static/app.js" defer></script></head>\n<body>\n'
            '<header><a href="/">Leaf &amp; Kettle</a></header>\n'
            f"<h1>{esc(title)}</h1>\n{root}\n"
            "<noscript>This shop needs JavaScript to show its pages.</noscript>\n"
            f"<footer>{footer}</footer>\n</body></html>\n"
        )

    def _news(self) -> str:
        data = {"title": "News", "items": [{"title": t, "text": x} for t, x in NEWS],
                "padding": ["tea"] * 400}  # fmt: skip
        blob = json.dumps(data).replace("</", "<\\/")
        head = f'<script id="page-data" type="application/json">{blob}</script>'
        return self._shell("News", head, root='<div id="feed"></div>')

    def _app_js(self) -> str:
        pixel = json.dumps(self.world.url("hub", "/pixel.gif"))
        return (
            "(async () => {\n"
            '  const root = document.getElementById("root") || document.getElementById("feed");\n'
            '  const inline = document.getElementById("page-data");\n'
            "  let data;\n"
            "  if (inline) { data = JSON.parse(inline.textContent); } else {\n"
            "    const parts = location.pathname.split('/');\n"
            "    const slug = location.pathname === '/' ? 'home' : parts[parts.length - 1];\n"
            "    const answer = await fetch('/api/pages/' + slug + '.json');\n"
            "    data = await answer.json();\n"
            "  }\n"
            "  fetch('/api/private/track.json').catch(() => null);\n"
            "  const img = new Image();\n"
            f"  img.src = {pixel};\n"
            "  document.body.appendChild(img);\n"
            "  const main = document.createElement('main');\n"
            "  const h = document.createElement('h2');\n"
            "  h.textContent = data.title;\n"
            "  main.appendChild(h);\n"
            "  for (const p of data.paragraphs || []) {\n"
            "    const el = document.createElement('p');\n"
            "    el.textContent = p;\n"
            "    main.appendChild(el);\n"
            "  }\n"
            "  for (const item of data.items || []) {\n"
            "    const el = document.createElement('p');\n"
            "    el.textContent = item.title + ': ' + item.text; main.appendChild(el);\n"
            "  }\n"
            "  const list = document.createElement('ul');\n"
            "  for (const link of data.links || []) {\n"
            "    const li = document.createElement('li'); const a = document.createElement('a');\n"
            "    a.href = link.href; a.textContent = link.text; li.appendChild(a);\n"
            "    list.appendChild(li);\n"
            "  }\n"
            "  main.appendChild(list);\n"
            "  root.appendChild(main);\n"
            "})();\n"
        )

    def _api(self, slug: str) -> Response:
        links = [{"href": f"/guide/{s}", "text": t} for s, (t, _) in GUIDES.items()]
        if slug == "home":
            data = {"title": "Guides to tea", "paragraphs": [
                "Four guides from the people behind the counter: brewing, rolling, "
                "whisking and storing tea, each written for the shop's regulars.",
            ], "links": links}  # fmt: skip
        elif slug in GUIDES:
            title, paragraphs = GUIDES[slug]
            others = [link for link in links if link["href"] != f"/guide/{slug}"]
            data = {"title": title, "paragraphs": list(paragraphs), "links": others}
        else:
            return Response(404, '{"error": "no such page"}', "application/json")
        return Response(200, json.dumps(data), "application/json")

    def handle(self, req: Request) -> Response:
        p = req.path
        if p == "/robots.txt":
            return text_response("User-agent: *\nDisallow: /api/private/\n")
        if p == "/":
            return html_response(self._shell("Leaf & Kettle"))
        if p.startswith("/guide/") and p.removeprefix("/guide/") in GUIDES:
            return html_response(self._shell(GUIDES[p.removeprefix("/guide/")][0]))
        if p == "/news.html":
            return html_response(self._news())
        if p == "/static/app.js":
            return Response(200, self._app_js(), "text/javascript; charset=utf-8")
        if p.startswith("/api/pages/") and p.endswith(".json"):
            return self._api(p.removeprefix("/api/pages/").removesuffix(".json"))
        if p == "/api/private/track.json":
            return Response(200, '{"tracked": true}', "application/json")
        if p == "/about.html":
            script = "<script>window.visits = (window.visits || 0) + 1;</script>"
            return html_response(page("About the shop", f"<p>{_SERVER_TEXT}</p>", head=script))
        if p == "/status.html":
            return html_response(
                page(
                    "Status",
                    "<p>The shop is open and every order placed before noon leaves today.</p>",
                )
            )
        if p == "/enhanced.html":
            script = (
                "<script>document.addEventListener('DOMContentLoaded', () => {"
                "for (const p of document.querySelectorAll('main p')) {"
                "p.title = p.textContent.split(' ').length + ' words'; }});</script>"
            )
            body = "".join(f"<p>{esc(text)}</p>" for text in _NOTES)
            return html_response(page("Notes on the leaf", body, head=script))
        return NOT_FOUND
