"""The typeahead's knobs."""

from __future__ import annotations

from lookup.settings.base import (
    Setting,
    as_answer_entries,
    as_bulk_items,
    as_flag,
    as_origins,
    as_rate,
    as_share,
    as_text,
    as_typo_below,
    as_walk_rows,
)

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
]
