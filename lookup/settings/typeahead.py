"""The typeahead's knobs."""

from __future__ import annotations

from lookup.settings.base import (
    Setting,
    as_answer_entries,
    as_bulk_items,
    as_flag,
    as_origins,
    as_positive_float,
    as_rate,
    as_seconds,
    as_share,
    as_text,
    as_typo_below,
    as_walk_rows,
)


def as_trending_gates(raw: str) -> tuple[int, int, int]:
    """``FLOOR/USERS/NETWORKS`` (e.g. ``500/20/10``) → three positive whole numbers."""
    parts = raw.strip().split("/")
    if len(parts) != 3 or not all(p.strip().isdigit() and int(p) >= 1 for p in parts):
        raise ValueError("expected FLOOR/USERS/NETWORKS, three whole numbers from 1 (500/20/10)")
    floor, users, networks = (int(p) for p in parts)
    return floor, users, networks


def as_dask_scheduler(raw: str) -> str:
    """``tcp://HOST:PORT`` (or ``tls://``), ``local``, or empty/``off`` (no Dask)."""
    value = raw.strip()
    if value.lower() in ("", "off"):
        return ""
    if value.lower() == "local":
        return "local"
    scheme, sep, rest = value.partition("://")
    host, colon, port = rest.rpartition(":")
    if scheme not in ("tcp", "tls") or not sep or not host or not colon or not port.isdigit():
        raise ValueError("expected tcp://HOST:PORT, local, or off")
    if not 1 <= int(port) <= 65535:
        raise ValueError(f"port {port} is not between 1 and 65535")
    return value


KNOBS: list[Setting] = [
    # -- typeahead -------------------------------------------------------------------------
    Setting(
        "suggest_cors_origins",
        "LOOKUP_SUGGEST_CORS_ORIGINS",
        (),
        as_origins,
        "origins",
        "ORIGIN[,ORIGIN...] | *",
        "web origins whose pages may call GET /v1/suggest from the browser (CORS): "
        "https://app.example,http://localhost:3000; * allows any; empty (default): none.",
    ),
    Setting(
        "typeahead_rate_searches",
        "LOOKUP_TYPEAHEAD_RATE_SEARCHES",
        "30/60:30",
        as_rate,
        "rate",
        "COUNT/SECONDS[:BURST]",
        "submitted searches (POST /v1/searches) per client address (an IPv6 /64): a "
        "person searches a few times a minute; a brigade from one client is cut off.",
    ),
    Setting(
        "typeahead_typo_tolerance",
        "LOOKUP_TYPEAHEAD_TYPO_TOLERANCE",
        True,
        as_flag,
        "flag",
        "on | off",
        "add typo-tolerant matches when a prefix finds too little (one typo from 4 "
        "characters, two from 8; marked `typos` in the answer); off: prefixes only.",
    ),
    Setting(
        "typeahead_typo_below",
        "LOOKUP_TYPEAHEAD_TYPO_BELOW",
        1,
        as_typo_below,
        "suggestions",
        "1..10",
        "the typo fallback runs when the exact prefix finds fewer suggestions than this "
        "(and than the page holds): 1, as Typesense's typo_tokens_threshold, only when it "
        "finds none, which keeps it off the hot path; 10 also fills short pages.",
    ),
    Setting(
        "typeahead_answer_cache",
        "LOOKUP_TYPEAHEAD_ANSWER_CACHE",
        20000,
        as_answer_entries,
        "answers",
        "0..1000000",
        "finished /v1/suggest answers each API process keeps by query string, each valid "
        "while the snapshot, hot blocklist and trending sets it came from are current (a "
        "repeated prefix then costs a dictionary lookup); 0 turns it off.",
    ),
    Setting(
        "typeahead_typo_budget",
        "LOOKUP_TYPEAHEAD_TYPO_BUDGET",
        3000,
        as_walk_rows,
        "rows",
        "0..1000000",
        "trie code points one typo-tolerant walk may visit before it answers with what "
        "it found (about 3 µs each): the bound on a corrected answer's cost.",
    ),
    Setting(
        "typeahead_blocklist",
        "LOOKUP_TYPEAHEAD_BLOCKLIST",
        "",
        as_text,
        "url",
        "",
        "where the typeahead hot blocklist lives: postgresql://user@host:port/db shares "
        "one list between API processes (`lookup up --backend postgres` sets it to the "
        "shortener's store); file:///path/blocklist.txt or unset: <data-dir>/typeahead/"
        "blocklist.txt, edited under a file lock. Each process re-reads it within a "
        "second of a change.",
    ),
    Setting(
        "typeahead_recent",
        "LOOKUP_TYPEAHEAD_RECENT",
        "",
        as_text,
        "url",
        "",
        "where each device's recent searches live (GET /v1/suggest/recent): "
        "postgresql://user@host:port/db shares them between API processes; "
        "sqlite:///path/recent.db or unset: <data-dir>/typeahead/recent.db.",
    ),
    Setting(
        "typeahead_recent_per_user",
        "LOOKUP_TYPEAHEAD_RECENT_PER_USER",
        20,
        as_bulk_items,
        "count",
        "1..10000",
        "recent searches kept per device (the oldest go first): a search box shows a "
        "handful, and a bound keeps one busy device from growing the store.",
    ),
    Setting(
        "typeahead_picked_weight",
        "LOOKUP_TYPEAHEAD_PICKED_WEIGHT",
        0.5,
        as_share,
        "weight",
        "0 < W <= 1",
        "what a search picked from the suggestions counts in the next build's scores "
        "(a typed-out search counts 1): suggestions shape what people search, so a "
        "pick is weaker evidence of demand than a query typed in full.",
    ),
    Setting(
        "typeahead_dask_scheduler",
        "LOOKUP_TYPEAHEAD_DASK_SCHEDULER",
        "",
        as_dask_scheduler,
        "url",
        "tcp://HOST:PORT | local | off",
        "where `lookup typeahead build` folds the log into scores: a Dask scheduler "
        "(tcp://HOST:PORT) whose workers take the query and user partitions; local: a "
        "two-worker cluster on this machine; unset (default): in the building process.",
    ),
    Setting(
        "typeahead_searches_url",
        "LOOKUP_TYPEAHEAD_SEARCHES_URL",
        "",
        as_text,
        "url",
        "",
        "where submitted searches and the trending windows go: redis://host:port/db"
        "[?stream=S&group=G&maxlen=N&prefix=P] shares them between API processes (a "
        "stream each process copies, in a consumer group, to <data-dir>/typeahead/"
        "searches.csv for the next build; trending counts and distinct users in Redis); "
        "file:///path/searches.csv or unset: that file, trending in each process's memory.",
    ),
    Setting(
        "typeahead_searches_claim_idle",
        "LOOKUP_TYPEAHEAD_SEARCHES_CLAIM_IDLE",
        30.0,
        as_seconds,
        "seconds",
        "",
        "a search another process took from the stream but did not copy for this long is "
        "taken over (XAUTOCLAIM): that process died; longer than any copy takes.",
    ),
    Setting(
        "typeahead_searches_copy_delay",
        "LOOKUP_TYPEAHEAD_SEARCHES_COPY_DELAY",
        0.0,
        as_seconds,
        "seconds",
        "",
        "a pause between taking searches from the stream and copying them: 0 in "
        "service; the kill drill sets it so a copier dies holding a batch.",
    ),
    Setting(
        "typeahead_trending_gates",
        "LOOKUP_TYPEAHEAD_TRENDING_GATES",
        (500, 20, 10),
        as_trending_gates,
        "searches/users/networks",
        "FLOOR/USERS/NETWORKS",
        "what a query needs in the ten-minute window to trend: searches, distinct users, "
        "distinct client networks (/24, /48); a spike from few people is how a brigade looks.",
    ),
    Setting(
        "typeahead_snapshot_store",
        "LOOKUP_TYPEAHEAD_SNAPSHOT_STORE",
        "",
        as_text,
        "url",
        "postgresql://USER@HOST/DB",
        "where builds publish snapshots and servers serve them from: postgresql://… keeps "
        "them as versions in the database (chunks with checksums, the current one swapped "
        "in one transaction and announced by NOTIFY), so servers need no shared disk; "
        "empty: <data-dir>/typeahead/snapshots.",
    ),
    Setting(
        "typeahead_snapshot_cache",
        "LOOKUP_TYPEAHEAD_SNAPSHOT_CACHE",
        "",
        as_text,
        "path",
        "DIR",
        "where a server keeps its copies of snapshots fetched from a shared (postgresql://) "
        "snapshot store, chunks checked and shared between versions; empty: a directory "
        "under the system's temporary directory.",
    ),
    Setting(
        "typeahead_reload_poll",
        "LOOKUP_TYPEAHEAD_RELOAD_POLL",
        1.0,
        as_positive_float,
        "seconds",
        "",
        "how often a shard server and the shard router look for a new current snapshot in "
        "a directory store (a PostgreSQL store tells them at once, by NOTIFY); they load "
        "it in the background and switch without a restart.",
    ),
]
