"""Index versions that can be trusted (issue 28 item 11): validate, reject, roll back.

A new version goes live only if it passes validation — no empty shard, the document count
within bounds of the live version's, the live version's canary queries still finding their
pages — and is otherwise kept aside with the reason while the live one serves on;
``lookup index rollback`` returns to the previous version in one pointer swap. Oracles: the
canary queries are checked against a plain search of the version they came from; the
bounds and the shard rule against their formulas written out here.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lookup.cli import main
from lookup.errors import Conflict, NotBuilt
from lookup.search import SearchService, build_index, current_manifest
from lookup.search.canary import (
    DOCS_SLACK,
    EMPTY_SHARD_MIN_AVERAGE,
    ReleasePolicy,
    check_docs,
    check_shards,
    validate,
)
from lookup.search.indexer import shard_of
from lookup.search.location import describe_versions, open_index_location
from lookup.search.manifest import Manifest, SegmentEntry, SourceState
from tests.search.corpus import BASE_TIME, CrawlWriter, Page, stdlib_pages, url_hash

N = 80


@pytest.fixture(scope="module")
def corpus() -> list[Page]:
    return stdlib_pages(N)


def _crawl(root: Path, pages: list[Page]) -> CrawlWriter:
    c = CrawlWriter(root)
    c.fetch(pages)
    return c


def _search_urls(index: Path, query: str) -> list[str]:
    svc = SearchService(index, realtime=False)
    try:
        return [r["url"] for r in svc.search(query, limit=20)["results"]]
    finally:
        svc.close()


@pytest.fixture
def live(tmp_path: Path, corpus: list[Page]) -> tuple[CrawlWriter, Path]:
    """A crawl of :data:`N` pages and its index (version 1, two shards)."""
    crawl = _crawl(tmp_path / "crawl", corpus)
    out = tmp_path / "index"
    report = build_index(crawl.root, out, shards=2)
    assert report.published and report.version == 1
    return crawl, out


# --------------------------------------------------------------------- the canary queries


def test_the_live_version_stores_canary_queries_that_find_their_pages(
    live: tuple[CrawlWriter, Path], corpus: list[Page]
) -> None:
    _, out = live
    m = current_manifest(out)
    assert m is not None
    policy = ReleasePolicy.from_settings()
    assert 0 < len(m.canaries) <= policy.queries
    titles = {p.url: p.title for p in corpus}
    for c in m.canaries:
        # oracle: a plain search of the version ranks the canary's page first
        assert _search_urls(out, c["query"])[0] == c["url"]
        assert c["urlHash"] == url_hash(c["url"])
        assert c["query"] == " ".join(titles[c["url"]].replace(".", " ").lower().split())
    # the most-linked pages first: the test web's hubs (every third page links to one)
    assert {c["url"] for c in m.canaries[:5]} <= {p.url for p in corpus[:10]}


def test_a_version_that_loses_its_canary_pages_is_rejected_and_the_live_one_serves(
    live: tuple[CrawlWriter, Path],
) -> None:
    crawl, out = live
    before = current_manifest(out)
    assert before is not None
    # the same pages, but every canary page rewritten: the count is fine, the answers not
    rewritten = [
        Page(c["url"], f"renamed page {i}", "nothing of the old words remains here at all")
        for i, c in enumerate(before.canaries)
    ]
    crawl.fetch(rewritten, at=BASE_TIME + 86400)
    report = build_index(crawl.root, out)
    assert not report.published and report.version == 2 and report.live_version == 1
    failed = [c["name"] for c in report.validation["checks"] if not c["ok"]]
    assert failed == ["canaries"], report.validation
    assert all(r["found"] is None for r in report.validation["canaries"])
    live_now = current_manifest(out)
    assert live_now is not None and live_now.version == 1
    assert open_index_location(out).versions() == [1]  # the candidate's manifest is aside
    # its segment files are collected: only version 1's remain
    named = {e.name for shard in live_now.segments for e in shard}
    on_disk = {p.name for p in out.glob("shard-*/seg-*")}
    assert on_disk == named
    record = json.loads((out / "rejected" / "version-000002.json").read_text())
    assert record["version"] == 2 and "canaries" in record["reason"]
    assert record["manifest"]["version"] == 2
    # the old answers still come from version 1
    c = before.canaries[0]
    assert _search_urls(out, c["query"])[0] == c["url"]


def test_a_benign_update_passes_every_check(live: tuple[CrawlWriter, Path]) -> None:
    crawl, out = live
    crawl.fetch(
        [
            Page(f"http://new.test/{i}.html", f"fresh page {i}", f"wombat words {i}")
            for i in range(5)
        ],
        at=BASE_TIME + 86400,
    )
    report = build_index(crawl.root, out)
    assert report.published and report.incremental and report.version == 2
    checks = {c["name"]: c for c in report.validation["checks"]}
    assert set(checks) == {"shards", "docs", "canaries"} and all(c["ok"] for c in checks.values())
    assert all(r["found"] == 1 for r in report.validation["canaries"])
    assert report.canaries > 0 and current_manifest(out).version == 2  # type: ignore[union-attr]


# ---------------------------------------------------------------- the document count


def test_a_version_that_lost_most_documents_is_rejected_and_its_number_not_reused(
    live: tuple[CrawlWriter, Path], tmp_path: Path, corpus: list[Page]
) -> None:
    _, out = live
    small = _crawl(tmp_path / "small", corpus[:30])
    first = build_index(small.root, out)
    assert not first.published and first.version == 2
    checks = {c["name"]: c for c in first.validation["checks"]}
    assert not checks["docs"]["ok"] and "30 documents vs 80 live" in checks["docs"]["detail"]
    second = build_index(small.root, out)
    assert not second.published and second.version == 3  # every attempt has its own number
    info = describe_versions(open_index_location(out))
    assert info["live"] == 1 and [r["version"] for r in info["rejected"]] == [3, 2]
    assert "docs" in info["rejected"][0]["reason"]
    # a deliberate change of data set: --force skips the comparisons
    forced = build_index(small.root, out, force=True)
    assert forced.published and forced.version == 4
    assert current_manifest(out).live_docs == 30  # type: ignore[union-attr]


def _manifest(counts: list[int], version: int = 2) -> Manifest:
    return Manifest(
        version=version,
        shards=len(counts),
        created_at=0.0,
        source=SourceState("crawl", "fp"),
        segments=[[SegmentEntry(f"seg-{i:06d}", n)] if n else [] for i, n in enumerate(counts)],
    )


@settings(max_examples=200, deadline=None)
@given(
    old=st.integers(0, 10_000),
    new=st.integers(0, 10_000),
    low=st.floats(0.05, 1.0),
    high=st.floats(1.0, 20.0),
)
def test_the_document_bounds_are_the_ratio_to_the_live_count(
    old: int, new: int, low: float, high: float
) -> None:
    policy = ReleasePolicy(min_docs_ratio=low, max_docs_ratio=high)
    check = check_docs(_manifest([new]), _manifest([old], 1), policy)
    expected = old == 0 or low * old <= new <= high * old or abs(new - old) <= DOCS_SLACK
    # at the boundary float division may round either way: only judge clear cases
    if old and (abs(new - low * old) < 1e-6 * old or abs(new - high * old) < 1e-6 * old):
        return
    assert check.ok == expected, (old, new, low, high, check.detail)


@settings(max_examples=200, deadline=None)
@given(counts=st.lists(st.integers(0, 60), min_size=1, max_size=8))
def test_an_empty_shard_fails_once_shards_average_enough_documents(counts: list[int]) -> None:
    check = check_shards(_manifest(counts))
    average = sum(counts) / len(counts)
    assert check.ok == (0 not in counts or average < EMPTY_SHARD_MIN_AVERAGE)
    # the shard check runs even with force, and with nothing live to compare with
    report = validate(_manifest(counts), None, _manifest(counts, 1), ReleasePolicy(), force=True)
    assert [c.name for c in report.checks] == ["shards"] and report.ok == check.ok


@settings(max_examples=50, deadline=None)
@given(shards=st.integers(1, 8), seed=st.integers(0, 2**32))
def test_hash_sharding_never_leaves_a_shard_empty_at_that_average(shards: int, seed: int) -> None:
    """No false rejection: at the threshold, a shard is empty by chance with probability at
    most s·(1−1/s)^(16·s) < 10⁻⁶ per version; the indexer's own hash, random URLs."""
    n = EMPTY_SHARD_MIN_AVERAGE * shards
    hit = {shard_of(url_hash(f"http://h{seed}.test/{i}"), shards) for i in range(n)}
    assert hit == set(range(shards))


# ----------------------------------------------------------------------------- rollback


def test_rollback_returns_to_the_previous_version_and_back(
    live: tuple[CrawlWriter, Path],
) -> None:
    crawl, out = live
    crawl.fetch([Page("http://new.test/x.html", "quokka page", "quokka lives here")], BASE_TIME + 9)
    assert build_index(crawl.root, out).published
    location = open_index_location(out)
    assert _search_urls(out, "quokka") == ["http://new.test/x.html"]
    assert location.rollback() == (1, 2)
    assert current_manifest(out).version == 1  # type: ignore[union-attr]
    assert _search_urls(out, "quokka") == []
    assert location.rollback() == (2, 1)  # the rolled-away version is the target now
    assert _search_urls(out, "quokka") == ["http://new.test/x.html"]


def test_a_build_after_a_rollback_keeps_the_rollback_target(
    live: tuple[CrawlWriter, Path],
) -> None:
    """Garbage collection keeps what CURRENT and PREVIOUS name, not the newest numbers:
    after a rollback the live version is the oldest."""
    crawl, out = live
    for i in range(2):
        crawl.fetch([Page(f"http://n.test/{i}", f"n {i}", f"extra {i}")], BASE_TIME + 10 + i)
        assert build_index(crawl.root, out).published
    location = open_index_location(out)
    assert location.versions() == [2, 3]
    location.rollback()  # 2 live, 3 previous
    crawl.fetch([Page("http://n.test/9", "n 9", "extra 9")], BASE_TIME + 20)
    report = build_index(crawl.root, out)
    assert report.published and report.version == 4 and report.incremental
    assert location.previous_token() == "manifest-000002.json"
    assert 2 in location.versions()
    assert location.rollback() == (2, 4)
    assert current_manifest(out).version == 2  # type: ignore[union-attr]


def test_rollback_without_a_previous_version_is_a_conflict(
    live: tuple[CrawlWriter, Path], tmp_path: Path
) -> None:
    _, out = live
    with pytest.raises(Conflict) as err:
        open_index_location(out).rollback()
    assert err.value.code == "NO_PREVIOUS"
    with pytest.raises(NotBuilt):
        open_index_location(tmp_path / "empty").rollback()
    location = open_index_location(out)
    with location.writer(), pytest.raises(Conflict) as busy:
        location.rollback()
    assert busy.value.code == "INDEX_BUSY"


# --------------------------------------------------------------------- the command line


def test_the_command_line_rejects_lists_and_rolls_back(
    tmp_path: Path,
    corpus: list[Page],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = tmp_path / "data"
    a = _crawl(tmp_path / "a", corpus[:40])
    assert main(["index", str(a.root), "--shards", "1", "--data-dir", str(data)]) == 0
    assert main(["index", "rollback", "--data-dir", str(data)]) == 1
    assert "no previous version" in capsys.readouterr().err
    b = _crawl(tmp_path / "b", corpus)
    assert main(["index", str(b.root), "--data-dir", str(data)]) == 0
    tiny = _crawl(tmp_path / "tiny", corpus[:8])
    capsys.readouterr()
    assert main(["index", str(tiny.root), "--data-dir", str(data)]) == 1
    err = capsys.readouterr().err
    assert "version 3" in err and "rejected" in err and "docs:" in err
    assert "Version 2 keeps serving" in err and "--force" in err
    assert main(["index", "versions", "--data-dir", str(data)]) == 0
    listing = capsys.readouterr().out
    assert "live" in listing and "previous (rollback target)" in listing
    assert "3  rejected: docs:" in listing
    assert main(["index", "rollback", "--data-dir", str(data)]) == 0
    assert "index version 1 is live again" in capsys.readouterr().out
    assert current_manifest(data / "search").version == 1  # type: ignore[union-attr]
    # a crawl directory that happens to be called "rollback" is still indexed
    shutil.copytree(a.root, tmp_path / "rollback")
    monkeypatch.chdir(tmp_path)
    assert main(["index", "rollback", "--out", "o"]) == 0
    assert "full build" in capsys.readouterr().out


# ------------------------------------------------------- the real-time tier after a rollback


def test_after_a_rollback_the_real_time_tier_covers_from_the_older_watermark(
    live: tuple[CrawlWriter, Path], corpus: list[Page]
) -> None:
    """Rolled back to version 1 of the same crawl, the pages fetched after its watermark
    come from the real-time tier again, and a page deleted through the API stays deleted."""
    crawl, out = live
    svc = SearchService(out, realtime=True)
    svc.start()
    try:
        gone = svc.delete(url=corpus[40].url)
        assert gone["deleted"]
        crawl.fetch([Page("http://new.test/z.html", "zorilla", "zorilla page")], BASE_TIME + 5)
        assert build_index(crawl.root, out).published  # version 2 holds both changes
        svc.reload(wait=True)
        assert svc.live_version().version == 2  # type: ignore[union-attr]
        open_index_location(out).rollback()
        svc.reload(wait=True)
        assert svc.live_version().version == 1  # type: ignore[union-attr]
        assert svc.tier is not None
        svc.tier.poll()
        urls = [r["url"] for r in svc.search("zorilla")["results"]]
        assert urls == ["http://new.test/z.html"]
        title = corpus[40].title.replace(".", " ")
        assert corpus[40].url not in [r["url"] for r in svc.search(title)["results"]]
    finally:
        svc.close()


OPS = st.lists(
    st.one_of(
        st.just(("publish", 0)),
        st.just(("rollback", 0)),
        st.tuples(st.just("gc"), st.integers(1, 3)),
    ),
    max_size=25,
)


@settings(max_examples=60, deadline=None)
@given(ops=OPS)
def test_publish_rollback_and_collection_keep_the_pointers_sound(
    ops: list[tuple[str, int]],
) -> None:
    """Any sequence of publishes, rollbacks and collections, against a two-pointer model:
    ``CURRENT`` always names a kept manifest, ``PREVIOUS`` the version live before the last
    swap, a rollback swaps the two (or is refused exactly when the model has no target),
    and collection never drops either pointer's version while it keeps more than one."""
    import tempfile

    from lookup.search import manifest as manifests

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        live: int | None = None
        previous: int | None = None
        published: set[int] = set()
        next_version = 1
        for op, arg in ops:
            if op == "publish":
                manifests.publish(out, _manifest([], next_version))
                published.add(next_version)
                if live is not None:
                    previous = live
                live, next_version = next_version, next_version + 1
            elif op == "rollback":
                if live is None:
                    with pytest.raises(NotBuilt):
                        manifests.rollback(out)
                elif previous is None or previous not in published:
                    with pytest.raises(Conflict):
                        manifests.rollback(out)
                else:
                    assert manifests.rollback(out) == (previous, live)
                    live, previous = previous, live
            else:
                manifests.collect_garbage(out, keep_versions=arg)
                newest = set(sorted(published)[-arg:])
                pinned = {live} | ({previous} if arg > 1 else set())
                published = {v for v in published if v in newest or v in pinned}
            kept = open_index_location(out).versions()
            assert kept == sorted(published)
            assert manifests.version_of(manifests.current_token(out)) == live
            if live is not None:
                assert live in kept
                assert current_manifest(out).version == live  # type: ignore[union-attr]
            if previous is not None:
                assert manifests.version_of(manifests.previous_token(out)) == previous
