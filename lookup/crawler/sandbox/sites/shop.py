"""The shop host: faceted navigation and session ids in URLs (traps), and a catch-all soft 404."""

from __future__ import annotations

import random
import re
import threading
from urllib.parse import urlencode

from lookup.crawler.sandbox import content
from lookup.crawler.sandbox.sites.base import World, esc, html_response, page, text_response
from lookup.crawler.sandbox.web import Request, Response

__all__ = ["ShopSite"]


class ShopSite:
    """Products from public functions, listed with facets that multiply into endless URLs."""

    #: Links on the shop's front page to paths it does not have (its catch-all answers).
    DEAD = ("/gift-cards", "/clearance/2019")
    DEPARTMENTS = ("Home and garden", "Electronics", "Books", "Clothing", "Toys and games")
    PER_PAGE = 4
    SORTS = ("price", "name", "newest")
    MAX_PAGE = 40

    def __init__(self, world: World) -> None:
        self.world = world
        self.products = content.products(world.config.products)
        self._rng = random.Random(world.config.seed + 1)
        self._rng_lock = threading.Lock()

    def _visit(self) -> str:
        with self._rng_lock:
            return f"{self._rng.getrandbits(96):024x}"

    def _listing_url(self, facets: dict[str, str]) -> str:
        q = {k: v for k, v in facets.items() if v}
        return "/products" + ("?" + urlencode(q) if q else "")

    def listing(self, params: dict[str, str]) -> str:
        colour, size = params.get("colour", ""), params.get("size", "")
        sort = params.get("sort", "") or "price"
        try:
            pageno = max(1, min(int(params.get("page", "1") or 1), 10_000))
        except ValueError:
            pageno = 1
        items = [
            p
            for p in self.products
            if (not colour or p.colour == colour) and (not size or p.size == size)
        ]
        key = {"price": lambda p: p.price, "name": lambda p: p.name, "newest": lambda p: -p.sku}
        items.sort(key=key.get(sort, key["price"]))
        shown = items[(pageno - 1) * self.PER_PAGE : pageno * self.PER_PAGE]
        facets = {"colour": colour, "size": size, "sort": params.get("sort", ""), "page": ""}
        links = []
        for name, values in (
            ("colour", content.COLOURS),
            ("size", content.SIZES),
            ("sort", self.SORTS),
        ):
            for v in values:
                f = dict(facets, **{name: v})
                links.append(f'<a href="{esc(self._listing_url(f))}">{name}: {v}</a>')
        if pageno < self.MAX_PAGE:
            f = dict(facets, page=str(pageno + 1))
            links.append(f'<a href="{esc(self._listing_url(f))}">next page</a>')
        rows = "".join(
            f'<li><a href="/product/{p.sku}?sid={self._visit()}">{esc(p.name)}</a> — '
            f"{p.colour}, size {p.size.upper()}, {p.price} EUR</li>"
            for p in shown
        )
        main = (
            f"<h1>Products</h1><p>{len(items)} products match.</p>"
            f"<ul>{rows or '<li>No products match these filters.</li>'}</ul>"
        )
        nav = " ".join(links) + f' <a href="/?visit={self._visit()}">shop home</a>'
        return page("Products", main, nav=nav)

    def handle(self, req: Request) -> Response:
        p = req.path
        if p == "/robots.txt":
            return text_response("User-agent: *\nDisallow: /cart\nDisallow: /checkout\n")
        if p == "/":
            dead = "".join(f' <a href="{u}">{u.strip("/")}</a>' for u in self.DEAD)
            main = (
                "<h1>The sandbox shop</h1><p>Functions of the standard library, for sale.</p>"
                f'<p><a href="/products">All products</a>{dead}</p>'
            )
            nav = f'<a href="/?visit={self._visit()}">home</a> <a href="/cart">cart</a>'
            return html_response(page("Shop", main, nav=nav))
        if p == "/products":
            return html_response(self.listing(req.params()))
        m = re.fullmatch(r"/product/(\d+)", p)
        if m and 1 <= int(m.group(1)) <= len(self.products):
            prod = self.products[int(m.group(1)) - 1]
            related = [self.products[(prod.sku + k) % len(self.products)] for k in (0, 1, 2)]
            rel = " ".join(f'<a href="/product/{r.sku}">{esc(r.name)}</a>' for r in related)
            main = (
                f"<h1>{esc(prod.name)}</h1><pre>{esc(prod.description)}</pre>"
                f"<p>{prod.price} EUR — {prod.colour}, size {prod.size.upper()}</p>"
                f'<p><a href="/cart/add?sku={prod.sku}">add to cart</a></p>'
            )
            return html_response(page(prod.name, main, nav=f"Related: {rel}"))
        if p.startswith("/cart") or p.startswith("/checkout"):
            return html_response(page("Cart", "<h1>Your cart is empty</h1>"))
        return self.catch_all(p)

    def catch_all(self, path: str) -> Response:
        """Any other path: a generic landing page with 200 OK — a soft 404 with no
        "not found" wording anywhere, which only a comparison with a probe reveals."""
        departments = "".join(f"<li>{d}</li>" for d in self.DEPARTMENTS)
        main = (
            f"<h1>Shop the sandbox</h1><p>Browse <code>{esc(path)}</code> and more in our "
            f"departments:</p><ul>{departments}</ul>"
            "<p>Free delivery on orders over 50 EUR. Returns within 30 days, no questions "
            "asked. Our team answers every message within one working day.</p>"
        )
        return html_response(page("Sandbox shop", main), soft_404=True)

    def soft_404s(self) -> list[str]:
        return [self.world.url("shop", u) for u in self.DEAD]
