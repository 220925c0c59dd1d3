"""Private, metadata and other non-public destinations are refused (issue 11, item 2).

At create and at retarget, in every spelling a browser accepts; and for life, by the
scanner, which re-resolves each destination's host (a stub resolver here, never the
network) and disables a link whose name starts pointing into those ranges. A named
allowance (``allowed_ranges``, off by default) lets a test or a local demo shorten its
own loopback pages without weakening the rule for everybody.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from pathlib import Path

import pytest

from lookup.shortener import Shortener, ShortenerConfig
from lookup.shortener.urls import AddressPolicy, Blocklist, UrlPolicy, UrlRejected

REFUSED = [
    "http://192.168.1.1/admin",
    "http://169.254.169.254/latest/meta-data/",
    "http://10.0.0.5/",
    "http://172.16.3.4:8080/",
    "http://127.0.0.1:9000/echo",
    "http://100.64.0.1/",  # carrier-grade NAT
    "http://224.0.0.1/",  # multicast
    "http://239.255.255.250:1900/",
    "http://240.0.0.1/",  # reserved
    "http://0.0.0.0/",
    "http://255.255.255.255/",
    "http://198.18.0.1/",  # benchmarking
    "http://192.0.2.7/",  # documentation
    # the same addresses in the spellings a browser also reads as IPv4
    "http://2130706433/",  # decimal 127.0.0.1
    "http://017700000001/",  # octal
    "http://0x7f000001/",  # hex
    "http://0x7f.1/",
    "http://127.1/",
    "http://0177.0.0.1/",
    "http://127.0.0.1./",  # trailing dot
    "http://0xa9.0xfe.0xa9.0xfe/latest/meta-data/",
    "http://2852039166/latest/meta-data/",  # 169.254.169.254
    "http://localhost/",
    "http://LOCALHOST./x",
    "http://api.localhost/",
    # IPv6
    "http://[::1]/",
    "http://[fe80::1]/",
    "http://[fc00::1]/",
    "http://[fd12:3456::1]/",
    "http://[ff02::1]/",
    "http://[::]/",
    "http://[2001:db8::1]/",
    "http://[::ffff:127.0.0.1]/",  # IPv4-mapped
    "http://[::ffff:a9fe:a9fe]/",
    "http://[::ffff:192.168.1.1]:8080/",
    "http://[64:ff9b::a9fe:a9fe]/",  # NAT64 of the metadata address
    "http://[2002:c0a8:0101::1]/",  # 6to4 of 192.168.1.1
]


@pytest.fixture
def policy() -> UrlPolicy:
    return UrlPolicy(["https://sh.example"], Blocklist(None))


@pytest.mark.parametrize("raw", REFUSED)
def test_non_public_destinations_are_refused_in_every_spelling(policy: UrlPolicy, raw: str) -> None:
    with pytest.raises(UrlRejected) as info:
        policy.check(raw)
    assert info.value.code == "PRIVATE_ADDRESS", info.value.message
    assert info.value.message


@pytest.mark.parametrize(
    "raw",
    [
        "http://8.8.8.8/",
        "https://1.1.1.1/dns-query",
        "http://[2606:4700:4700::1111]/",
        "http://[::ffff:8.8.8.8]/",
        "https://example.com/",
        "https://100.128.0.1/",  # just past the carrier-grade NAT block
    ],
)
def test_public_destinations_stay_accepted(policy: UrlPolicy, raw: str) -> None:
    assert policy.check(raw)


def test_alternative_spellings_of_a_public_address_stay_invalid(policy: UrlPolicy) -> None:
    with pytest.raises(UrlRejected) as info:
        policy.check("http://134744072/")  # 8.8.8.8 in decimal: not a canonical host
    assert info.value.code == "INVALID_URL"


def test_an_allowance_names_the_ranges_it_opens() -> None:
    policy = UrlPolicy([], Blocklist(None), addresses=AddressPolicy(["127.0.0.0/8", "::1/128"]))
    assert policy.check("http://127.0.0.1:9000/echo")
    assert policy.check("http://localhost:8001/")
    assert policy.check("http://[::1]:8001/")
    for raw in ("http://192.168.1.1/admin", "http://169.254.169.254/"):
        with pytest.raises(UrlRejected) as info:
            policy.check(raw)
        assert info.value.code == "PRIVATE_ADDRESS"
    with pytest.raises(ValueError):
        AddressPolicy(["not a network"])


def test_an_address_policy_agrees_with_the_ipaddress_oracle() -> None:
    rule = AddressPolicy()
    for text in ("10.1.2.3", "100.100.1.1", "169.254.1.1", "8.8.4.4", "fe80::2", "2a00::1"):
        ip = ipaddress.ip_address(text)
        oracle = (not ip.is_global) or ip.is_multicast
        assert (rule.refusal(text) is not None) == oracle, text


# -- create and retarget over the API ---------------------------------------------------


def test_create_and_retarget_refuse_private_destinations(app, auth) -> None:  # type: ignore[no-untyped-def]
    answer = app.client.post("/v1/links", json={"longUrl": "http://169.254.169.254/latest/"})
    assert answer.status_code == 400 and answer.json()["error"] == "PRIVATE_ADDRESS"
    created = app.client.post(
        "/v1/links", json={"longUrl": "https://example.com/ok"}, headers=auth
    ).json()
    patched = app.client.patch(
        f"/v1/links/{created['key']}", json={"longUrl": "http://192.168.1.1/admin"}, headers=auth
    )
    assert patched.status_code == 400 and patched.json()["error"] == "PRIVATE_ADDRESS"
    assert app.service.get(created["key"]).long_url == "https://example.com/ok"


# -- the scanner re-resolves destinations for life --------------------------------------


class StubResolver:
    """Answers from a table the test edits; counts lookups. Never touches the network."""

    def __init__(self) -> None:
        self.answers: dict[str, list[str]] = {}
        self.asked: list[str] = []

    def __call__(self, host: str) -> list[str]:
        self.asked.append(host)
        return list(self.answers.get(host, []))


def test_the_scanner_disables_a_link_whose_host_starts_resolving_privately(
    make_config: Callable[..., ShortenerConfig], tmp_path: Path
) -> None:
    resolver = StubResolver()
    resolver.answers["rebind.example"] = ["93.184.216.34"]
    root = Shortener(make_config(scanner=True, analytics=False, resolve_host=resolver))
    try:
        key = root.api.create({"longUrl": "https://rebind.example/x"}).body["key"]
        assert root.scanner is not None
        root.scanner.drain()
        link = root.service.get(key)
        assert link.status.value == "ACTIVE" and "rebind.example" in resolver.asked
        resolver.answers["rebind.example"] = ["93.184.216.34", "169.254.169.254"]
        root.scanner.request(key, "recheck")
        root.scanner.drain()
        link = root.service.get(key)
        assert link.status.value == "DISABLED"
        assert link.scan_verdict == "MALICIOUS"
        assert any("169.254.169.254" in r for r in link.scan_reasons), link.scan_reasons
        # ... and the sweep re-enables it once the name points back to a public address.
        resolver.answers["rebind.example"] = ["93.184.216.34"]
        root.scanner.request(key, "recheck")
        root.scanner.drain()
        assert root.service.get(key).status.value == "ACTIVE"
    finally:
        root.close()


def test_the_scanner_honours_the_allowance(
    make_config: Callable[..., ShortenerConfig],
) -> None:
    resolver = StubResolver()
    resolver.answers["sandbox.test"] = ["127.0.0.1"]
    root = Shortener(
        make_config(
            scanner=True, analytics=False, resolve_host=resolver, allowed_ranges=("127.0.0.0/8",)
        )
    )
    try:
        key = root.api.create({"longUrl": "http://sandbox.test:8600/"}).body["key"]
        assert root.scanner is not None
        root.scanner.drain()
        assert root.service.get(key).status.value == "ACTIVE" and resolver.asked
    finally:
        root.close()
