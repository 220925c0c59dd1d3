"""The engines ``bench_search.py`` times: ours (whole /search path, one shard's query) and
the anchors — ``bm25s``, ``rank_bm25``, SQLite FTS5 and ``tantivy`` — behind one interface."""

from __future__ import annotations

import shutil
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from lookup.search import Coordinator, SearchService, Signals, analyze_query, kernels
from lookup.search.bm25 import make_plan

if TYPE_CHECKING:
    from benchmarks.bench_search import Doc


@dataclass
class Built:
    """How long an engine took to index the corpus and what it left on disk."""

    seconds: float
    bytes: int | None
    note: str = ""


def dir_bytes(path: Path) -> int:
    """Bytes of every file under ``path``."""
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


class Engine:
    """One search engine under test: build it once, then answer one query at a time."""

    name = ""
    semantics = ""  # "AND" or "OR"

    def search(self, query: str) -> list[str]:
        """URLs of the top 10 for ``query``."""
        raise NotImplementedError

    def close(self) -> None:
        """Release what the engine holds."""


class OursFull(Engine):
    """Our engine end to end, the path ``GET /search`` runs: coordinator, fan-out, snippets."""

    semantics = "AND→OR"

    def __init__(self, index_dir: Path, shards: int, signals: Signals | None = None) -> None:
        self.name = f"ours: /search path ({shards} shard{'s' if shards > 1 else ''})"
        self.service = SearchService(
            index_dir, realtime=False, coordinator=Coordinator(signals=signals or Signals.off())
        )
        self.service.reload()
        kernels.wait()  # timed as served once loaded: the compiled kernels

    def search(self, query: str) -> list[str]:
        return [r["url"] for r in self.service.search(query, 1, 10)["results"]]

    def close(self) -> None:
        self.service.stop()


class OursShard(Engine):
    """One shard's query execution alone, pure BM25, top 10, like-for-like with the libraries.

    No thread hop, no snippets; result URLs come from a table built once, as the other
    engines map ids to URLs from a list. ``prune`` (default) takes the top 10 by dynamic
    pruning where it pays and does not count every match — the estimated count is what
    ``tantivy`` without ``count`` skips too; ``prune=False`` scores exhaustively and counts.
    """

    def __init__(self, index_dir: Path, conjunctive: bool, prune: bool = True) -> None:
        self.semantics = "AND" if conjunctive else "OR"
        self.prune = prune
        self.name = f"ours: shard query, {self.semantics}" + ("" if prune else ", exhaustive")
        self.service = SearchService(index_dir, realtime=False)
        self.snapshot = self.service.reload()
        assert self.snapshot is not None and len(self.snapshot.shards) == 1
        kernels.wait()
        self.conjunctive = conjunctive
        self.now = time.time()
        self.signals = Signals.off()  # pure BM25, like the libraries (built once, not per query)
        self.urls = [
            [view.reader.stored(d)["url"] for d in range(view.reader.n_docs)]
            for view in self.snapshot.shards[0].segments
        ]

    def hits(self, query: str) -> list[Any]:
        snap = self.snapshot
        terms = analyze_query(query)
        plan = make_plan(
            terms, [snap.df(t) for t in terms], snap.live_docs, snap.live_length, 10,
            self.now, self.signals,
            conjunctive=self.conjunctive,
            or_fallback=False,  # AND means AND here, as in the libraries (/search falls back)
            prune=self.prune,
            exact_count=not self.prune,
        )  # fmt: skip
        return snap.shards[0].search(plan).hits

    def search(self, query: str) -> list[str]:
        urls = self.urls
        return [urls[h.segment][h.doc] for h in self.hits(query)]

    def close(self) -> None:
        self.service.stop()


class Bm25sEngine(Engine):
    """``bm25s`` (Lucene's BM25, k1 1.2, b 0.75) over our analyser's tokens: same terms."""

    name = "bm25s (lucene)"
    semantics = "OR"

    def __init__(self, docs: Sequence[Doc], tokens: list[list[str]], workdir: Path) -> None:
        import bm25s

        started = time.perf_counter()
        self.retriever = bm25s.BM25(method="lucene", k1=1.2, b=0.75)
        self.retriever.index(tokens, show_progress=False)
        seconds = time.perf_counter() - started
        path = workdir / "bm25s"
        self.retriever.save(str(path))
        self.built = Built(seconds, dir_bytes(path), "index from pre-analysed tokens")
        self.urls = [d.url for d in docs]
        self.vocab = self.retriever.vocab_dict

    def search(self, query: str) -> list[str]:
        terms = [t for t in analyze_query(query) if t in self.vocab]
        if not terms:
            return []
        ids, scores = self.retriever.retrieve([terms], k=10, show_progress=False, n_threads=0)
        return [self.urls[int(i)] for i, s in zip(ids[0], scores[0], strict=True) if s > 0]


class RankBm25Engine(Engine):
    """``rank_bm25``'s BM25Okapi over the same tokens: scores every document per query."""

    name = "rank_bm25 (Okapi)"
    semantics = "OR"

    def __init__(self, docs: Sequence[Doc], tokens: list[list[str]]) -> None:
        from rank_bm25 import BM25Okapi

        started = time.perf_counter()
        self.bm25 = BM25Okapi(tokens, k1=1.2, b=0.75)
        self.built = Built(time.perf_counter() - started, None, "in memory only")
        self.urls = [d.url for d in docs]

    def search(self, query: str) -> list[str]:
        scores = self.bm25.get_scores(analyze_query(query))
        top = np.argpartition(-scores, 10)[:10] if scores.size > 10 else np.arange(scores.size)
        top = top[np.argsort(-scores[top])]
        return [self.urls[int(i)] for i in top if scores[i] > 0]


class Fts5Engine(Engine):
    """SQLite FTS5 (porter stemmer) ranked with ``bm25()``, in a file on disk."""

    def __init__(self, path: Path, urls: list[str], conjunctive: bool) -> None:
        self.semantics = "AND" if conjunctive else "OR"
        self.name = f"SQLite FTS5 bm25(), {self.semantics}"
        self.db = sqlite3.connect(path, check_same_thread=False)
        self.urls = urls
        self.joiner = " " if conjunctive else " OR "

    @staticmethod
    def build(docs: Sequence[Doc], path: Path) -> Built:
        """Index the corpus into a fresh FTS5 table in ``path`` (merged to one b-tree)."""
        path.unlink(missing_ok=True)
        started = time.perf_counter()
        db = sqlite3.connect(path)
        db.execute("CREATE VIRTUAL TABLE docs USING fts5(title, body, tokenize='porter unicode61')")
        db.executemany(
            "INSERT INTO docs(rowid, title, body) VALUES (?, ?, ?)",
            ((i, d.title, d.text) for i, d in enumerate(docs)),
        )
        db.execute("INSERT INTO docs(docs) VALUES ('optimize')")
        db.commit()
        db.close()
        return Built(time.perf_counter() - started, path.stat().st_size)

    def search(self, query: str) -> list[str]:
        words = [w for w in query.lower().split() if w.isalnum()]
        if not words:
            return []
        match = self.joiner.join(f'"{w}"' for w in words)
        rows = self.db.execute(
            "SELECT rowid FROM docs WHERE docs MATCH ? ORDER BY bm25(docs) LIMIT 10", (match,)
        ).fetchall()
        return [self.urls[r[0]] for r in rows]

    def close(self) -> None:
        self.db.close()


class TantivyEngine(Engine):
    """``tantivy`` (Rust, BM25) through its Python bindings, English stemming tokenizer."""

    def __init__(self, path: Path, urls: list[str], conjunctive: bool) -> None:
        import tantivy

        self.semantics = "AND" if conjunctive else "OR"
        self.name = f"tantivy, {self.semantics}"
        self.index = tantivy.Index.open(str(path))
        self.index.reload()
        self.searcher = self.index.searcher()
        self.urls = urls
        self.conjunctive = conjunctive

    @staticmethod
    def build(docs: Sequence[Doc], path: Path) -> Built:
        """Index the corpus into a fresh tantivy index in ``path`` (one writer thread)."""
        import tantivy

        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
        builder = tantivy.SchemaBuilder()
        builder.add_integer_field("id", stored=True, indexed=False)
        builder.add_text_field("title", tokenizer_name="en_stem", index_option="freq")
        builder.add_text_field("body", tokenizer_name="en_stem", index_option="freq")
        index = tantivy.Index(builder.build(), path=str(path))
        started = time.perf_counter()
        writer = index.writer(heap_size=200_000_000, num_threads=1)
        for i, d in enumerate(docs):
            writer.add_document(tantivy.Document(id=i, title=d.title, body=d.text))
        writer.commit()
        writer.wait_merging_threads()
        return Built(time.perf_counter() - started, dir_bytes(path))

    def search(self, query: str) -> list[str]:
        words = [w for w in query.lower().split() if w.isalnum()]
        if not words:
            return []
        q = self.index.parse_query(
            " ".join(words), ["title", "body"], conjunction_by_default=self.conjunctive
        )
        hits = self.searcher.search(q, 10, count=False).hits  # top 10 only, as ours
        return [self.urls[self.searcher.doc(addr)["id"][0]] for _, addr in hits]
