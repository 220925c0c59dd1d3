"""The crawl event schema, declared once in ``lookup/kit/crawlevents.py``: the crawler's
real output follows it, the synthetic crawl the search tests use follows it, and both
sides refuse what does not (checked against ``jsonschema`` as an independent oracle)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from lookup.crawler import CrawlConfig, Sandbox, SandboxConfig, TrapPolicy, crawl
from lookup.crawler.output import EventLogWriter
from lookup.kit.crawlevents import InvalidEvent, event_errors, json_schema
from lookup.search.events import EventLogReader
from tests.search.corpus import BASE_TIME, CrawlWriter, stdlib_pages

VALIDATOR = jsonschema.Draft202012Validator(json_schema())


def _both_agree(event: dict) -> bool:
    ours = not event_errors(event)
    assert ours == VALIDATOR.is_valid(event), (event, event_errors(event))
    return ours


@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    web = Sandbox(SandboxConfig.small()).start()
    out = tmp_path_factory.mktemp("schema-crawl")
    try:
        seeds = [web.url("docs", "/"), web.url("moved", "/")]
        cfg = dict(
            hosts=web.hosts(),
            strict_hosts=True,
            min_delay=0.01,
            delay_factor=1.0,
            timeout=1.5,
            connect_timeout=1.0,
            recrawl_initial=0.2,
            recrawl_min=0.1,
        )
        crawl(
            CrawlConfig(
                out,
                seeds=seeds,
                max_pages=60,
                max_seconds=30,
                traps=TrapPolicy(host_budget=30, max_depth=5),
                **cfg,
            )
        )  # type: ignore[arg-type]
        crawl(CrawlConfig(out, resume=True, new_cycle=True, recrawl=True, max_seconds=4, **cfg))  # type: ignore[arg-type]
    finally:
        web.stop()
    return [json.loads(x) for x in (out / "events.jsonl").read_text().splitlines()]


def test_the_crawlers_events_follow_the_schema(crawled: list[dict]) -> None:
    kinds = {e["type"] for e in crawled}
    assert kinds == {"PageFetched", "PageRemoved"}
    assert all(_both_agree(e) for e in crawled)


def test_the_synthetic_crawl_of_the_search_tests_follows_it_too(tmp_path: Path) -> None:
    c = CrawlWriter(tmp_path)
    pages = stdlib_pages(12)
    events = c.fetch(pages) + [c.gone(pages[0].url, at=BASE_TIME + 86400)]
    assert all(_both_agree(e) for e in events)


@pytest.mark.parametrize(
    "change",
    [
        {"outLinks": ["http://a.test/"]},  # a list where the crawler writes a count
        {"contentHash": "5d41402abc4b2a76b9719d911017c592"},
        {"httpStatus": 404},  # a gone page is a PageRemoved, never a PageFetched
        {"fetchedAt": "yesterday"},
        {"url": ""},
        {"colour": "red"},
        {"type": "PageGone"},
    ],
)
def test_both_sides_refuse_an_event_off_the_schema(change: dict, tmp_path: Path) -> None:
    good = CrawlWriter(tmp_path / "c").fetch(stdlib_pages(1))[0]
    bad = {**good, **change}
    assert not _both_agree(bad)
    writer = EventLogWriter(tmp_path / "events.jsonl")
    with pytest.raises(InvalidEvent):
        writer.append(bad)  # the crawler never writes it
    writer.append(good)
    writer.close()
    crawl_dir = tmp_path / "c"
    with (crawl_dir / "events.jsonl").open("a") as f:
        f.write(json.dumps(bad) + "\n")
    reader = EventLogReader(crawl_dir)
    assert [e.url for e, _ in reader.read()] == [good["url"]]  # search skips and counts it
    assert reader.malformed == 1
