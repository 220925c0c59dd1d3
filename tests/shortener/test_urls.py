"""Long-URL validation: what is refused and why, IDNA, self-reference, blocklist, and a fuzz."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lookup.shortener.urls import (
    MAX_URL_LENGTH,
    AddressPolicy,
    Blocklist,
    UrlPolicy,
    UrlRejected,
    normalize_host,
)

OWN = "http://127.0.0.1:8000"
#: These tests shorten loopback and documentation addresses, which the service refuses
#: unless named (tests/shortener/test_destinations.py holds the refusals themselves).
ALLOWED = AddressPolicy(["127.0.0.0/8", "::1/128", "2001:db8::/32"])


@pytest.fixture
def policy() -> UrlPolicy:
    return UrlPolicy([OWN], Blocklist(None), addresses=ALLOWED)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("https://example.com/tickets/final?utm_source=whatsapp", None),
        ("http://example.com", None),
        ("HTTPS://EXAMPLE.com/Path", "https://example.com/Path"),
        ("https://example.com:443/x", "https://example.com/x"),
        ("http://example.com:8080/x", None),
        ("https://example.com./x", "https://example.com/x"),
        ("https://Bücher.example/straße", "https://xn--bcher-kva.example/stra%C3%9Fe"),
        ("https://例え.テスト/パス?q=値#frag", None),
        ("https://[2001:db8::1]:8443/x", None),
        ("http://127.0.0.1:9000/echo", None),
        ("http://127.0.0.2:8000/other-loopback", None),
        ("http://localhost:8001/", None),
        ("https://my_host.example/", None),
        ("https://example.com/a%20b", None),
    ],
)
def test_accepted(policy: UrlPolicy, raw: str, expected: str | None) -> None:
    url = policy.check(raw)
    if expected is not None:
        assert url == expected
    assert url.isascii() and len(url) <= MAX_URL_LENGTH
    assert url.startswith(("http://", "https://"))


def test_unicode_host_matches_the_stdlib_idna_codec(policy: UrlPolicy) -> None:
    # Independent oracle for a name that IDNA 2003 and 2008 agree on.
    url = policy.check("https://bücher.example/")
    assert urlsplit(url).hostname == "bücher.example".encode("idna").decode()


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        ("javascript:alert(1)", "INVALID_URL"),
        ("JavaScript://example.com/%0Aalert(1)", "INVALID_URL"),
        ("data:text/html,<script>alert(1)</script>", "INVALID_URL"),
        ("file:///etc/passwd", "INVALID_URL"),
        ("ftp://example.com/x", "INVALID_URL"),
        ("example.com", "INVALID_URL"),
        ("//example.com/x", "INVALID_URL"),
        ("https:example.com", "INVALID_URL"),
        ("https://", "INVALID_URL"),
        ("https://example.com/\r\nSet-Cookie: a=b", "INVALID_URL"),
        ("https://example.com/a b", "INVALID_URL"),
        ("https://example.com/\x00", "INVALID_URL"),
        ("https://example.com/\u202egnp.exe", "INVALID_URL"),  # bidi override
        ("https://exa\u200bmple.com/", "INVALID_URL"),  # zero-width space
        ("https://user:pass@example.com/", "INVALID_URL"),
        ("https://good.example\\@evil.example/", "INVALID_URL"),
        ("https://example.com:99999/", "INVALID_URL"),
        ("https://example.com:0/", "INVALID_URL"),
        ("https://[::1/", "INVALID_URL"),
        ("https://exa mple.com/", "INVALID_URL"),
        ("https://-bad-.example/", "INVALID_URL"),
        ("https://0x7f.1/", "INVALID_URL"),
        ("https://999.1.1.1/", "INVALID_URL"),
        ("https://a..b/", "INVALID_URL"),
        ("https://\u00ad.example/", "INVALID_URL"),  # soft hyphen only
        ("https://" + "a" * 64 + ".example/", "INVALID_URL"),
        ("https://example.com/" + "x" * MAX_URL_LENGTH, "INVALID_URL"),
        ("", "INVALID_URL"),
        (None, "INVALID_URL"),
        (["https://example.com"], "INVALID_URL"),
        ("http://127.0.0.1:8000/abc1234", "SELF_REFERENCE"),
        ("http://localhost:8000/abc1234", "SELF_REFERENCE"),
        ("http://[::1]:8000/x", "SELF_REFERENCE"),
        ("HTTP://LOCALHOST.:8000/x", "SELF_REFERENCE"),
        ("https://malware.testing.google.test/testing/malware/", "BLOCKED_DOMAIN"),
        ("https://sub.wicar.org/x", "BLOCKED_DOMAIN"),
    ],
)
def test_refused(policy: UrlPolicy, raw: object, code: str) -> None:
    with pytest.raises(UrlRejected) as info:
        policy.check(raw)
    assert info.value.code == code
    assert info.value.message


def test_percent_encoding_expansion_counts_against_the_cap(policy: UrlPolicy) -> None:
    raw = "https://example.com/" + "é" * 700  # 720 characters, 4,220 once encoded
    with pytest.raises(UrlRejected):
        policy.check(raw)


def test_public_origin_is_own_too() -> None:
    policy = UrlPolicy(["https://sh.example"], Blocklist(None))
    with pytest.raises(UrlRejected) as info:
        policy.check("https://SH.example:443/abc")
    assert info.value.code == "SELF_REFERENCE"
    assert policy.check("http://sh.example:8080/abc")  # another port is another origin


def test_wildcard_bind_treats_every_loopback_as_self() -> None:
    policy = UrlPolicy(["http://0.0.0.0:8000"], Blocklist(None), addresses=ALLOWED)
    for raw in ("http://127.0.0.9:8000/x", "http://localhost:8000/", "http://[::1]:8000/"):
        with pytest.raises(UrlRejected):
            policy.check(raw)
    assert policy.check("http://127.0.0.9:8001/x")


def test_blocklist_file_reloads_and_blocks_subdomains(tmp_path: Path) -> None:
    now = [0.0]
    path = tmp_path / "blocklist.txt"
    blocklist = Blocklist(path, recheck_s=1.0, clock=lambda: now[0])
    blocklist.write_template()
    policy = UrlPolicy([], blocklist)
    assert policy.check("https://shop.bad-shop.example/")
    version = blocklist.version
    path.write_text(path.read_text() + "Bad-Shop.example.  # seen in phishing mail\n\n")
    now[0] += 0.5
    assert policy.check("https://shop.bad-shop.example/")  # not re-read yet
    now[0] += 1.0
    with pytest.raises(UrlRejected) as info:
        policy.check("https://shop.bad-shop.example/")
    assert info.value.code == "BLOCKED_DOMAIN" and blocklist.version != version
    assert policy.check("https://not-bad-shop.example/")  # a suffix is not a parent domain
    assert "bad-shop.example" in blocklist.domains()


def test_normalize_host_directly() -> None:
    assert normalize_host("EXAMPLE.COM.") == "example.com"
    assert normalize_host("2001:DB8::1") == "2001:db8::1"
    assert normalize_host("10.0.0.1") == "10.0.0.1"
    for bad in ("", "fe80::1%eth0", "a" * 254, "1.2.3"):
        with pytest.raises(UrlRejected):
            normalize_host(bad)


url_like = st.builds(
    lambda scheme, host, path: f"{scheme}://{host}/{path}",
    st.sampled_from(["http", "https", "HTTP", "javascript", "data", "file", "ftp", ""]),
    st.text(min_size=0, max_size=40),
    st.text(max_size=80),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.one_of(
        st.text(max_size=200), url_like, st.binary(max_size=50).map(lambda b: b.decode("latin-1"))
    )
)
def test_fuzz_only_validation_errors_and_safe_outputs(raw: str) -> None:
    policy = UrlPolicy([OWN], Blocklist(None))
    try:
        url = policy.check(raw)
    except UrlRejected as exc:
        assert exc.code in ("INVALID_URL", "SELF_REFERENCE", "BLOCKED_DOMAIN", "PRIVATE_ADDRESS")
        return
    assert AddressPolicy().refusal_of_host(policy.host_of(url)) is None  # never a private one
    assert url.isascii()
    assert not any(ord(c) <= 0x20 or ord(c) == 0x7F for c in url)
    assert url.split(":", 1)[0] in ("http", "https")
    assert len(url) <= MAX_URL_LENGTH
    assert policy.check(url) == url  # the normal form is a fixed point
