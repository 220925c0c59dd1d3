"""The click analytics' old import paths (``analytics.log``, ``log_redis``, ``counts``,
``counts_pg``) still give the same objects as the seams' packages (``clicklog``,
``clickcounts``) for one release, for notebooks and outside code; and the analytics
package still names its backends."""

from __future__ import annotations

import importlib

import pytest

A = "lookup.shortener.analytics"

OLD_TO_NEW = {
    f"{A}.log": {
        f"{A}.clicklog": ("ClickLog", "LogRecord", "open_click_log"),
        f"{A}.clicklog.sqlite": ("PAGE_SIZE", "WAL_CHECKPOINT_PAGES", "SqliteClickLog"),
        f"{A}.clicklog.memory": ("MemoryClickLog",),
    },
    f"{A}.log_redis": {f"{A}.clicklog.redis": ("RedisClickLog", "offset_of", "stream_id")},
    f"{A}.counts": {
        f"{A}.clickcounts": ("ClickCounts", "CountRow", "CountsBatch", "open_click_counts"),
        f"{A}.clickcounts.sqlite": ("SqliteClickCounts",),
    },
    f"{A}.counts_pg": {f"{A}.clickcounts.postgres": ("PostgresClickCounts",)},
}


@pytest.mark.parametrize("old", sorted(OLD_TO_NEW))
def test_an_old_path_gives_the_new_objects(old: str) -> None:
    alias = importlib.import_module(old)
    for new, names in OLD_TO_NEW[old].items():
        module = importlib.import_module(new)
        for name in names:
            assert getattr(alias, name) is getattr(module, name), f"{old}.{name}"
    assert sorted(alias.__all__) == sorted(n for names in OLD_TO_NEW[old].values() for n in names)


def test_the_analytics_package_names_the_backends_and_the_ports() -> None:
    analytics = importlib.import_module(A)
    from lookup.shortener.analytics.clickcounts import ClickCounts, open_click_counts
    from lookup.shortener.analytics.clickcounts.sqlite import SqliteClickCounts
    from lookup.shortener.analytics.clicklog import ClickLog, LogRecord, open_click_log
    from lookup.shortener.analytics.clicklog.memory import MemoryClickLog
    from lookup.shortener.analytics.clicklog.sqlite import SqliteClickLog

    expected = {
        "ClickCounts": ClickCounts,
        "open_click_counts": open_click_counts,
        "SqliteClickCounts": SqliteClickCounts,
        "ClickLog": ClickLog,
        "LogRecord": LogRecord,
        "open_click_log": open_click_log,
        "MemoryClickLog": MemoryClickLog,
        "SqliteClickLog": SqliteClickLog,
    }
    for name, value in expected.items():
        assert getattr(analytics, name) is value, name
        assert name in analytics.__all__
    assert not [name for name in analytics.__all__ if not hasattr(analytics, name)]
