"""The sandbox web: a realistic multi-host web on loopback for the crawler to crawl.

``Sandbox(SandboxConfig.small()).start()`` serves it from a background thread (tests);
``lookup sandbox`` serves it in the foreground. Hosts are names under
``.sandbox.test`` on their own loopback addresses (127.0.0.2, 127.0.0.3, ...), some
sharing one address; the name table is at ``http://127.0.0.1:PORT/_sandbox/hosts``.
The control address also serves the request log (``/_sandbox/log``), the manifest
of every known duplicate, trap and hostile behaviour (``/_sandbox/manifest``) and
the certificate of the sandbox's own CA (``/_sandbox/ca.pem``).

Some hosts (``docs`` by default) are served over https too, on a second port of
their address. Their certificate is issued at startup by a throwaway CA made with
``trustme`` (held in memory; the CA certificate is written only into a temporary
directory that :meth:`Sandbox.stop` removes). A crawler trusts it by adding that
file to its CA bundle — verification is never switched off.
"""

from __future__ import annotations

import json
import shutil
import ssl
import tempfile
import weakref
from pathlib import Path
from typing import Any

import trustme

from lookup.crawler.sandbox.sites import SandboxConfig, World, build_sites, esc, page
from lookup.crawler.sandbox.web import (
    LoggedRequest,
    Request,
    RequestLog,
    Response,
    SandboxServer,
    log_as_json,
)

__all__ = ["LoggedRequest", "RequestLog", "Sandbox", "SandboxConfig"]


class Sandbox:
    """The whole sandbox web: sites, server, request log and manifest."""

    def __init__(self, config: SandboxConfig | None = None) -> None:
        self.config = config or SandboxConfig()
        self.world = World(self.config)
        self.sites = build_sites(self.world)
        unknown = set(self.config.tls_hosts) - set(self.world.names)
        if unknown:
            raise ValueError(f"no such sandbox hosts for TLS: {sorted(unknown)}")
        vhosts = {
            self.world.names[key]: (self.world.addresses[key], site.handle)
            for key, site in self.sites.handlers.items()
        }
        tls_names = frozenset(self.world.names[k] for k in self.config.tls_hosts)
        self.ca: trustme.CA | None = None
        context: ssl.SSLContext | None = None
        if tls_names:
            self.ca = trustme.CA(organization_name="Lookup Workbench sandbox web (throwaway)")
            leaf = self.ca.issue_cert(*sorted(tls_names))
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            leaf.configure_cert(context)
        self._tmp: Path | None = None
        self.server = SandboxServer(
            vhosts,
            self._control,
            self.config.control_address,
            self.config.port,
            tls_names=tls_names,
            tls_context=context,
            tls_port=self.config.tls_port,
        )

    # -- lifecycle ---------------------------------------------------------------
    def bind(self) -> int:
        """Bind every address (port 0 picks a free one); returns the port."""
        port = self.server.bind()
        self.config.port = port
        self.config.tls_port = self.server.tls_port
        return port

    def start(self) -> Sandbox:
        """Serve from a background thread."""
        self.bind()
        self.server.start_in_thread()
        return self

    def serve_forever(self) -> None:
        """Serve in the calling thread until interrupted."""
        self.bind()
        try:
            self.server.serve_forever()
        finally:
            self._remove_tmp()

    def stop(self) -> None:
        self.server.stop()
        self._remove_tmp()

    def _remove_tmp(self) -> None:
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def __enter__(self) -> Sandbox:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- what a crawler and a test need --------------------------------------------
    @property
    def port(self) -> int:
        return self.config.port

    @property
    def log(self) -> RequestLog:
        return self.server.log

    @property
    def control_url(self) -> str:
        return f"http://{self.config.control_address}:{self.port}"

    @property
    def tls_port(self) -> int | None:
        """The https port of the TLS hosts (None: no host speaks TLS)."""
        return self.config.tls_port if self.ca is not None else None

    @property
    def ca_pem(self) -> bytes:
        """The PEM certificate of the CA that signed the sandbox's TLS certificate."""
        if self.ca is None:
            raise RuntimeError("this sandbox serves no host over TLS")
        return self.ca.cert_pem.bytes()

    @property
    def ca_path(self) -> Path:
        """``ca_pem`` in a file (in a temporary directory removed by :meth:`stop`)."""
        if self._tmp is None:
            self._tmp = Path(tempfile.mkdtemp(prefix="lookup-sandbox-"))
            # Removed by stop(), or at exit for a sandbox never stopped.
            weakref.finalize(self, shutil.rmtree, self._tmp, ignore_errors=True)
        path = self._tmp / "sandbox-ca.pem"
        if not path.exists():
            path.write_bytes(self.ca_pem)
        return path

    def hosts(self) -> dict[str, str]:
        """Host name → loopback address (what DNS would say)."""
        return {self.world.names[k]: self.world.addresses[k] for k in self.sites.handlers}

    def hosts_file(self) -> str:
        """The name table in ``/etc/hosts`` format."""
        by_addr: dict[str, list[str]] = {}
        for name, addr in self.hosts().items():
            by_addr.setdefault(addr, []).append(name)
        lines = ["# the sandbox web's names (there is no DNS for .sandbox.test)"]
        lines += [f"{addr}\t{' '.join(names)}" for addr, names in sorted(by_addr.items())]
        return "\n".join(lines) + "\n"

    def seeds(self) -> list[str]:
        """Where a crawl of the sandbox web starts: the docs host and the hub.

        The hub links every host's front page, so the frontier serves them all in
        parallel from the crawl's first seconds (each under its own politeness rule).
        """
        return [self.world.url("docs", "/"), self.world.url("hub", "/")]

    def url(self, key: str, path: str) -> str:
        """The URL of ``path`` on the host with key ``key`` (``docs``, ``shop``, ...)."""
        return self.world.url(key, path)

    def manifest(self) -> dict[str, Any]:
        """Ground truth: hosts, seeds, duplicate clusters, traps, robots cases, hostile hosts."""
        w = self.world
        h = self.sites.handlers
        docs = h["docs"].manifest()
        exact = h["mirror"].clusters()
        # The www twin serves every docs page again.
        twins = ("/", "/elsewhere.html", "/drafts/published-intro.html", "/feed.txt?format=html")
        for path in twins:
            members = [
                {"url": w.url("docs", path), "reason": "original"},
                {"url": w.url("www", path), "reason": "www"},
            ]
            if w.tls("docs"):
                members.append({"url": w.https_url("docs", path), "reason": "https"})
            exact.append({"kind": "exact", "members": members})
        return {
            "port": self.port,
            "agent": self.config.agent,
            "hosts": [
                {"name": w.names[k], "address": w.addresses[k], "key": k, "role": w.roles[k]}
                for k in h
            ],
            "seeds": self.seeds(),
            "duplicates": exact + h["news"].clusters(),
            "url_variants": docs["url_variants"],
            "canonical": docs["canonical"],
            "robots": {
                "disallowed": docs["disallowed"],
                "allowed_by_wildcard": docs["allowed_by_wildcard"],
                "failing_hosts": [w.names["closed"], w.names["hung"]],
                "missing_hosts": [w.names["blog"]],
                "crawl_delay": {
                    w.names["docs"]: self.config.crawl_delay,
                    w.names["www"]: self.config.crawl_delay,
                    w.names["wiki"]: self.config.crawl_delay,
                },
                "noindex": docs["noindex"],
                "nofollow_only": docs["nofollow_only"],
            },
            "outside": docs["outside"],
            "sitemaps": docs["sitemaps"] + [w.url("wiki", "/sitemap.xml")],
            "traps": h["calendar"].traps()
            + [
                {"host": w.names["shop"], "kind": "faceted-navigation", "prefix": "/products"},
                {"host": w.names["shop"], "kind": "session-id", "prefix": "/?visit="},
            ],
            "hostile": {
                "slow": w.names["slow"],
                "stall": w.url("slow", "/stall.html"),
                "busy": w.names["busy"],
                "retry_after": self.config.retry_after,
                "redirects": h["redirect"].manifest(),
                "press": h["press"].manifest(),
                **h["junk"].manifest(),
            },
            "changing": h["blog"].changing() + h["wiki"].changing(),
            "rendering": h["app"].manifest(),
            # Pages that answer 200 OK but mean "not found"; the request log marks every
            # such answer (``soft_404``), these are the ones linked from real pages.
            "soft_404s": h["calendar"].soft_404s() + h["news"].soft_404s() + h["shop"].soft_404s(),
            "tls": {
                "port": self.tls_port,
                "hosts": [w.names[k] for k in self.config.tls_hosts] if self.ca else [],
                "ca": f"{self.control_url}/_sandbox/ca.pem" if self.ca else None,
                "https_variants": [
                    {"http": w.url("docs", p), "https": w.https_url("docs", p)}
                    for p in ("/", f"/lib/{w.first_module}.html")
                ]
                if self.ca and w.tls("docs")
                else [],
            },
        }

    # -- the control address -----------------------------------------------------
    def _control(self, req: Request) -> Response:
        if req.path == "/_sandbox/manifest":
            return Response(200, json.dumps(self.manifest(), indent=1), "application/json")
        if req.path == "/_sandbox/hosts":
            return Response(200, self.hosts_file(), "text/plain; charset=utf-8")
        if req.path == "/_sandbox/ca.pem":
            if self.ca is None:
                return _json_error(404, "NO_TLS", "no sandbox host speaks TLS")
            return Response(200, self.ca_pem, "application/x-pem-file")
        if req.path == "/_sandbox/log":
            try:
                since = max(0, int(req.params().get("since", "0") or 0))
            except ValueError:
                return _json_error(400, "BAD_REQUEST", "since must be an integer")
            return Response(200, log_as_json(self.log.entries(since)), "application/x-ndjson")
        if req.path == "/":
            rows = "".join(
                f"<tr><td><a href='{esc(self.world.url(k, '/'))}'>{esc(w)}</a></td>"
                f"<td>{esc(self.world.addresses[k])}</td><td>{esc(self.world.roles[k])}</td></tr>"
                for k, w in self.world.names.items()
            )
            main = (
                "<h1>The sandbox web</h1><table>"
                f"{rows}</table><p><a href='/_sandbox/hosts'>hosts</a> "
                "<a href='/_sandbox/manifest'>manifest</a> <a href='/_sandbox/log'>log</a> "
                "<a href='/_sandbox/ca.pem'>CA certificate</a></p>"
            )
            return Response(200, page("Sandbox", main))
        return _json_error(404, "NOT_FOUND", f"no such endpoint: {req.path}")


def _json_error(status: int, code: str, message: str) -> Response:
    """An error from the control address, in the workbench's ``{error, message}`` shape."""
    return Response(status, json.dumps({"error": code, "message": message}), "application/json")
