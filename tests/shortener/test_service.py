"""The service: create rules, idempotency, tombstones, owner changes, scanner seams, sweeping."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from lookup.errors import WorkbenchError
from lookup.kit.http import api_error_for
from lookup.shortener import LinkApi, Shortener, ShortenerConfig, ShortenerService, Status, owner_id
from lookup.shortener.keys import is_generated_shape
from lookup.shortener.model import ClickContext

OWNER = owner_id("owner-token-0123456789-abcdef")
OTHER = owner_id("someone-else-0123456789-xyz")


def _code(excinfo: pytest.ExceptionInfo[WorkbenchError]) -> tuple[int, str]:
    """The HTTP status the server answers for the error, and its code."""
    return api_error_for(excinfo.value).status, excinfo.value.code


def test_created_links_get_generated_keys_and_a_short_url(
    service: ShortenerService, api: LinkApi
) -> None:
    created = api.create({"longUrl": "https://example.com/a"})
    assert not created.replayed
    body = created.body
    assert is_generated_shape(body["key"])
    assert body["shortUrl"] == f"http://127.0.0.1:8000/{body['key']}"
    assert body["longUrl"] == "https://example.com/a" and body["expiresAt"] is None
    assert service.get(body["key"]).status is Status.ACTIVE
    keys = {api.create({"longUrl": "https://example.com/a"}).body["key"] for _ in range(50)}
    assert len(keys) == 50  # the same URL twice is two links


def test_secret_and_allocator_survive_a_restart(
    make_config: Callable[..., ShortenerConfig],
) -> None:
    first = Shortener(make_config())
    key = first.api.create({"longUrl": "https://example.com/"}).body["key"]
    ident = first.minter.id_for(key)
    first.close()
    second = Shortener(make_config())
    assert second.minter.id_for(key) == ident  # same secret, same mapping
    assert second.minter.mint()[0] >= 100  # the first process's block is never reissued
    assert second.service.get(key).long_url == "https://example.com/"
    second.close()


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({}, "INVALID_URL"),
        ({"longUrl": 5}, "INVALID_URL"),
        ({"longUrl": "javascript:alert(1)"}, "INVALID_URL"),
        ({"longUrl": "https://example.com", "extra": 1}, "UNKNOWN_FIELD"),
        ({"longUrl": "https://example.com", "customAlias": "login"}, "RESERVED_ALIAS"),
        ({"longUrl": "https://example.com", "customAlias": "abcdefg"}, "INVALID_ALIAS"),
        ({"longUrl": "https://example.com", "customAlias": ["x"]}, "INVALID_ALIAS"),
        ({"longUrl": "https://example.com", "expiresAt": "tomorrow"}, "INVALID_EXPIRY"),
        ({"longUrl": "https://example.com", "expiresAt": "2020-01-01T00:00:00Z"}, "INVALID_EXPIRY"),
        ({"longUrl": "https://example.com", "expiresAt": True}, "INVALID_EXPIRY"),
        ({"longUrl": "https://example.com", "maxClicks": 0}, "INVALID_MAX_CLICKS"),
        ({"longUrl": "https://example.com", "maxClicks": "5"}, "INVALID_MAX_CLICKS"),
        ({"longUrl": "https://example.com", "maxClicks": True}, "INVALID_MAX_CLICKS"),
        ({"longUrl": "https://example.com", "maxClicks": 1.5}, "INVALID_MAX_CLICKS"),
        ({"longUrl": "https://example.com", "redirectType": 307}, "INVALID_REDIRECT_TYPE"),
        ({"longUrl": "https://example.com", "redirectType": True}, "INVALID_REDIRECT_TYPE"),
        ({"longUrl": "https://example.com", "maxAge": 60}, "INVALID_MAX_AGE"),
        (
            {"longUrl": "https://example.com", "redirectType": 301, "maxAge": 10**9},
            "INVALID_MAX_AGE",
        ),
        ({"longUrl": "https://example.com", "password": ""}, "INVALID_PASSWORD"),
        ({"longUrl": "https://example.com", "password": "x" * 129}, "INVALID_PASSWORD"),
        ({"longUrl": "https://example.com", "tags": "a"}, "INVALID_TAGS"),
        ({"longUrl": "https://example.com", "tags": ["ok", "not ok"]}, "INVALID_TAGS"),
        ({"longUrl": "https://example.com", "tags": [str(i) for i in range(11)]}, "INVALID_TAGS"),
        ({"longUrl": "http://127.0.0.1:8000/abc1234"}, "SELF_REFERENCE"),
        ({"longUrl": "https://wicar.org/"}, "BLOCKED_DOMAIN"),
    ],
)
def test_invalid_creates_are_refused_with_specific_codes(
    api: LinkApi, body: dict, code: str
) -> None:
    with pytest.raises(WorkbenchError) as info:
        api.create(body)
    assert _code(info) == (400, code)


def test_alias_claim_conflict_is_409(service: ShortenerService, api: LinkApi) -> None:
    api.create({"longUrl": "https://a.example/", "customAlias": "ipl-final"}, owner=OWNER)
    with pytest.raises(WorkbenchError) as info:
        api.create({"longUrl": "https://b.example/", "customAlias": "ipl-final"}, owner=OTHER)
    assert _code(info) == (409, "ALIAS_TAKEN")
    assert service.get("ipl-final").long_url == "https://a.example/"


def test_301_links_get_a_bounded_default_max_age(api: LinkApi) -> None:
    body = api.create({"longUrl": "https://a.example/", "redirectType": 301}).body
    assert (body["redirectType"], body["maxAge"]) == (301, 3600)
    body = api.create({"longUrl": "https://a.example/", "redirectType": 301, "maxAge": 0}).body
    assert body["maxAge"] == 0


def test_idempotent_retries_return_the_original(api: LinkApi, clock) -> None:  # type: ignore[no-untyped-def]
    body = {"longUrl": "https://example.com/t", "expiresAt": clock.now + 100}
    first = api.create(body, owner=OWNER, idempotency_key="3f1c9e2a")
    clock.advance(200)  # even after the requested expiry passed, a retry replays
    again = api.create(dict(reversed(list(body.items()))), owner=OWNER, idempotency_key="3f1c9e2a")
    assert again.replayed and again.body == first.body
    with pytest.raises(WorkbenchError) as info:
        api.create(
            {"longUrl": "https://example.com/other"}, owner=OWNER, idempotency_key="3f1c9e2a"
        )
    assert _code(info) == (422, "IDEMPOTENCY_KEY_REUSED")
    other = api.create(
        body | {"expiresAt": clock.now + 100}, owner=OTHER, idempotency_key="3f1c9e2a"
    )
    assert not other.replayed and other.body["key"] != first.body["key"]
    with pytest.raises(WorkbenchError) as info:
        api.create(body, idempotency_key="bad key with spaces")
    assert _code(info) == (400, "INVALID_IDEMPOTENCY_KEY")


def test_an_alias_retry_with_its_idempotency_key_is_not_a_conflict(
    api: LinkApi,
) -> None:
    body = {"longUrl": "https://example.com/", "customAlias": "retry-me"}
    first = api.create(body, owner=OWNER, idempotency_key="k-1")
    assert api.create(body, owner=OWNER, idempotency_key="k-1").body == first.body


def test_deleted_keys_are_never_reused(service: ShortenerService, api: LinkApi) -> None:
    alias = api.create({"longUrl": "https://a.example/", "customAlias": "old-promo"}, owner=OWNER)
    generated = api.create({"longUrl": "https://a.example/"}, owner=OWNER)
    for key in (alias.body["key"], generated.body["key"]):
        service.delete(key, owner=OWNER)
        assert service.get(key).status is Status.DELETED
    with pytest.raises(WorkbenchError) as info:
        api.create({"longUrl": "https://evil.example/", "customAlias": "old-promo"}, owner=OTHER)
    assert _code(info) == (409, "ALIAS_TAKEN")
    later = {api.create({"longUrl": "https://b.example/"}).body["key"] for _ in range(300)}
    assert generated.body["key"] not in later
    with pytest.raises(WorkbenchError) as info:
        service.delete("old-promo", owner=OWNER)
    assert _code(info) == (410, "LINK_GONE")


def test_only_the_owner_may_change_a_link(service: ShortenerService, api: LinkApi) -> None:
    key = api.create({"longUrl": "https://a.example/"}, owner=OWNER).body["key"]
    anon = api.create({"longUrl": "https://a.example/"}).body["key"]
    cases = [(key, None, 401), (key, OTHER, 403), (anon, OWNER, 403), ("nothing-here", OWNER, 404)]
    for k, who, status in cases:
        with pytest.raises(WorkbenchError) as info:
            api.update(k, {"tags": ["x"]}, owner=who)
        assert api_error_for(info.value).status == status
        with pytest.raises(WorkbenchError) as info:
            service.delete(k, owner=who)
        assert api_error_for(info.value).status == status


def test_retarget_is_audited_rescanned_and_visible_at_once(
    service: ShortenerService, api: LinkApi, shortener: Shortener
) -> None:
    events: list[tuple[str, str]] = []
    shortener.events.subscribe(lambda event, link: events.append((event, link.key)))
    key = api.create({"longUrl": "https://old.example/"}, owner=OWNER).body["key"]
    assert service.resolver.resolve(key).long_url == "https://old.example/"
    service.set_scan_verdict(key, "SAFE")
    link = api.update(key, {"longUrl": "https://new.example/", "tags": ["Promo"]}, owner=OWNER)
    assert link.long_url == "https://new.example/" and link.tags == ("promo",)
    assert link.scan_verdict == "PENDING"  # goes back through the scanner
    assert service.resolver.resolve(key).long_url == "https://new.example/"
    history = api.audit(key, OWNER)
    retarget = [h for h in history if h["action"] == "retarget"][0]
    assert (retarget["actor"], retarget["oldUrl"], retarget["newUrl"]) == (
        "owner",
        "https://old.example/",
        "https://new.example/",
    )
    assert retarget["at"].endswith("Z")
    assert ("created", key) in events and ("retargeted", key) in events


@pytest.mark.parametrize(
    ("patch", "code"),
    [
        ({}, "EMPTY_PATCH"),
        ({"owner": "me"}, "UNKNOWN_FIELD"),
        ({"longUrl": "data:text/html,hi"}, "INVALID_URL"),
        ({"expiresAt": "2001-01-01T00:00:00Z"}, "INVALID_EXPIRY"),
        ({"status": "DELETED"}, "INVALID_STATUS"),
        ({"maxAge": 10}, "INVALID_MAX_AGE"),
        ({"maxClicks": -1}, "INVALID_MAX_CLICKS"),
        ({"tags": [1]}, "INVALID_TAGS"),
    ],
)
def test_bad_patches(api: LinkApi, patch: dict, code: str) -> None:
    key = api.create({"longUrl": "https://a.example/"}, owner=OWNER).body["key"]
    with pytest.raises(WorkbenchError) as info:
        api.update(key, patch, owner=OWNER)
    assert _code(info) == (400, code)


def test_owner_disable_and_enable_but_not_a_scanner_disable(
    service: ShortenerService, api: LinkApi
) -> None:
    key = api.create({"longUrl": "https://a.example/"}, owner=OWNER).body["key"]
    assert api.update(key, {"status": "DISABLED"}, owner=OWNER).status is Status.DISABLED
    assert api.update(key, {"status": "ACTIVE"}, owner=OWNER).status is Status.ACTIVE
    service.set_scan_verdict(key, "MALICIOUS")
    assert service.get(key).status is Status.DISABLED
    with pytest.raises(WorkbenchError) as info:
        api.update(key, {"status": "ACTIVE"}, owner=OWNER)
    assert _code(info) == (409, "DISABLED_BY_SCANNER")
    service.enable(key)
    assert service.get(key).status is Status.ACTIVE
    with pytest.raises(ValueError):
        service.set_scan_verdict(key, "GREAT")


def test_an_expired_link_cannot_be_revived(service: ShortenerService, clock, api: LinkApi) -> None:  # type: ignore[no-untyped-def]
    key = api.create(
        {"longUrl": "https://a.example/", "expiresAt": clock.now + 10}, owner=OWNER
    ).body["key"]
    clock.advance(10)
    assert service.effective_status(service.get(key)) is Status.EXPIRED
    with pytest.raises(WorkbenchError) as info:
        api.update(key, {"expiresAt": clock.now + 1000}, owner=OWNER)
    assert _code(info) == (410, "LINK_GONE")


def test_sweep_tombstones_expired_links(
    service: ShortenerService, clock, api: LinkApi, shortener: Shortener
) -> None:  # type: ignore[no-untyped-def]
    key = api.create({"longUrl": "https://a.example/", "expiresAt": clock.now + 10}).body["key"]
    keep = api.create({"longUrl": "https://a.example/"}).body["key"]
    events: list[str] = []
    shortener.events.subscribe(lambda event, link: events.append(event))
    assert service.sweep() == 0
    clock.advance(11)
    assert service.sweep() == 1
    assert service.get(key).status is Status.EXPIRED and service.get(key).long_url == ""
    assert service.get(keep).status is Status.ACTIVE
    assert events == ["expired"]


def test_listing_pages_and_filters(api: LinkApi, clock) -> None:  # type: ignore[no-untyped-def]
    made = []
    for i in range(7):
        clock.advance(1)
        made.append(
            api.create(
                {"longUrl": f"https://a.example/{i}", "tags": ["odd"] if i % 2 else []}, owner=OWNER
            ).body["key"]
        )
    page = api.list_links(OWNER, limit=3)
    keys = [link["key"] for link in page["links"]]
    while page["nextCursor"]:
        page = api.list_links(OWNER, limit=3, cursor=page["nextCursor"])
        keys += [link["key"] for link in page["links"]]
    assert keys == list(reversed(made))
    assert len(api.list_links(OWNER, tag="ODD")["links"]) == 3
    assert api.list_links(OTHER)["links"] == []
    for bad in ({"cursor": "!!!"}, {"cursor": "WzEsMl0"}, {"status": "nope"}, {"limit": 0}):
        with pytest.raises(WorkbenchError):
            api.list_links(OWNER, **bad)


def test_click_hook_errors_never_escape(service: ShortenerService) -> None:
    seen: list[ClickContext] = []
    service.on_click = seen.append
    ctx = ClickContext(key="k", ts=1.0, client_ip="127.0.0.1")
    service.emit_click(ctx)
    assert seen == [ctx] and service.clicks_emitted == 1

    def broken(_: ClickContext) -> None:
        raise RuntimeError("buffer exploded")

    service.on_click = broken
    service.emit_click(ctx)
    assert service.click_hook_errors == 1


def test_csv_round_trip(api: LinkApi) -> None:
    api.create(
        {"longUrl": "https://a.example/1", "customAlias": "csv-alias", "tags": ["x", "y"]},
        owner=OWNER,
    )
    api.create({"longUrl": "https://a.example/2", "maxClicks": 3}, owner=OWNER)
    text = api.export_csv(OWNER)
    lines = text.strip().splitlines()
    assert lines[0].startswith("key,shortUrl,longUrl,customAlias") and len(lines) == 3
    rows = api.parse_import(text)
    result = api.import_rows(rows, owner=OTHER)
    by_status = sorted(r["status"] for r in result["rows"])
    assert by_status == [201, 409]  # the alias is taken (by the original); the other is recreated
    assert result["created"] == 1 and result["failed"] == 1
    assert {link["longUrl"] for link in api.list_links(OTHER)["links"]} == {"https://a.example/2"}


def test_csv_import_refusals(api: LinkApi) -> None:
    for bad in ("", "url\nhttps://a.example/", "longUrl\n" + "https://a.example/\n" * 1001):
        with pytest.raises(WorkbenchError):
            api.parse_import(bad)
    rows = api.parse_import('longUrl,maxClicks\nhttps://a.example/,lots\n"https://b.example/",2\n')
    result = api.import_rows(rows, owner=OWNER)
    assert [r["status"] for r in result["rows"]] == [400, 201]


def test_metrics_expose_every_layer(
    service: ShortenerService, api: LinkApi, shortener: Shortener
) -> None:
    key = api.create({"longUrl": "https://a.example/"}).body["key"]
    service.resolver.resolve(key)
    metrics = shortener.metrics()
    assert metrics["cache"]["l1"]["hits"] == 1
    assert set(metrics["rateLimits"]) == {"anonymous", "owner", "ip", "misses", "passwords"}
    assert metrics["links"]["ACTIVE"] == 1 and metrics["created"] == 1


def test_data_dir_layout(service: ShortenerService, tmp_path: Path) -> None:
    files = {p.name for p in (tmp_path / "data" / "shortener").iterdir()}
    assert {"links.sqlite3", "secret.key", "blocklist.txt"} <= files


def test_limits_come_from_the_environment() -> None:
    from lookup.shortener import Limits

    limits = Limits.from_env(
        {"LOOKUP_SHORTENER_RATE_ANON": "3/60", "LOOKUP_SHORTENER_RATE_MISSES": "5/1:9"}
    )
    assert limits.anonymous.capacity == 3 and limits.misses.capacity == 9
    assert limits.owner == Limits().owner
    with pytest.raises(ValueError, match="LOOKUP_SHORTENER_RATE_OWNER"):
        Limits.from_env({"LOOKUP_SHORTENER_RATE_OWNER": "lots"})


def test_a_failing_subscriber_never_stops_a_change_or_the_others(
    api: LinkApi, shortener: Shortener
) -> None:
    heard: list[str] = []

    def broken(event: str, link: object) -> None:
        raise RuntimeError("subscriber exploded")

    shortener.events.subscribe(broken)
    shortener.events.subscribe(lambda event, link: heard.append(event))
    key = api.create({"longUrl": "https://a.example/"}, owner=OWNER).body["key"]
    assert shortener.service.get(key).long_url == "https://a.example/"
    assert heard == ["created"]
