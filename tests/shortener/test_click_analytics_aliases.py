"""The click analytics' old import paths (``analytics.log``, ``log_redis``, ``counts``,
``counts_pg``) still give the same objects as the seams' packages (``clicklog``,
``clickcounts``) for one release, for notebooks and outside code; and the analytics
package still names its backends."""

from __future__ import annotations

import importlib
import time
from pathlib import Path

import pytest

from tests.aliases import check_alias

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
    check_alias(old, OLD_TO_NEW[old])


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


def test_the_background_loops_still_log_once_an_old_path_is_imported(tmp_path: Path) -> None:
    """Importing ``analytics.log`` binds that module as the package's attribute ``log``;
    the package's loops once logged through a global of that name, so a failed round
    raised AttributeError and stopped its loop."""
    from lookup.shortener.analytics import ClickAnalytics
    from lookup.shortener.analytics.clicklog.memory import MemoryClickLog

    for old in OLD_TO_NEW:
        importlib.import_module(old)

    class DownThenUp(MemoryClickLog):
        def __init__(self) -> None:
            super().__init__()
            self.failures_left, self.reads_after = 2, 0

        def end_offset(self) -> int:
            if self.failures_left:
                self.failures_left -= 1
                raise OSError("the click log is briefly down")
            self.reads_after += 1
            return super().end_offset()

    down = DownThenUp()
    analytics = ClickAnalytics(
        tmp_path, b"s" * 32, ship_interval_s=0.01, aggregate_interval_s=0.01, click_log=down
    )
    analytics.start()
    try:
        deadline = time.monotonic() + 60
        while down.reads_after < 3:  # the aggregator's loop went on after its failed rounds
            assert time.monotonic() < deadline, analytics.stats()
            time.sleep(0.02)
        assert analytics.stats()["loopErrors"] == 2
    finally:
        analytics.stop()
        analytics.close()
