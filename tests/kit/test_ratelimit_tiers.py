"""Tiered limits: the identity's tier picked per check, the table re-read when it changes.

The last test changes the table under a running process (a real subprocess answering
checks over a pipe) and sees its very next checks follow the new limits — no restart.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lookup.kit.engines.redisserver import RedisServer
from lookup.kit.ratelimit import RateLimiter, TieredRateLimiter, TierTable
from lookup.kit.ratelimit.tiers import Tiers, write_tier_table

TIERS = {"free": "2/1000000", "pro": "5/1000000", "enterprise": "9/1000000"}


@pytest.fixture
def table_path(tmp_path: Path) -> Path:
    path = tmp_path / "tiers.json"
    write_tier_table(path, TIERS, {"alice": "pro", "acme": "enterprise"}, version=1)
    return path


def _admitted(limiter: RateLimiter, identity: str, tries: int = 12) -> int:
    return sum(limiter.check(identity).allowed for _ in range(tries))


def test_each_identity_gets_its_tiers_limit(table_path: Path) -> None:
    limiter = TieredRateLimiter(TierTable(table_path), clock=lambda: 0.0)
    assert isinstance(limiter, RateLimiter)
    assert [limiter.tier_of(x) for x in ("bob", "alice", "acme")] == ["free", "pro", "enterprise"]
    assert [_admitted(limiter, x) for x in ("bob", "alice", "acme")] == [2, 5, 9]
    assert limiter.check("alice").headers()["RateLimit-Limit"] == "5"
    assert limiter.policy.capacity == 2  # a stranger's
    assert limiter.stats()["version"] == 1


def test_a_changed_table_is_followed_by_the_next_check(table_path: Path) -> None:
    table = TierTable(table_path)
    limiter = TieredRateLimiter(table, clock=lambda: 0.0)
    assert _admitted(limiter, "bob") == 2
    write_tier_table(table_path, {**TIERS, "pro": "7/1000000"}, {"alice": "pro", "bob": "pro"},
                     version=2)  # fmt: skip
    assert limiter.tier_of("bob") == "pro" and table.version == 2
    assert _admitted(limiter, "bob") == 7  # bob moved up: pro's new limit, a fresh budget
    assert _admitted(limiter, "alice") == 7
    assert table.reloads == 1


def test_a_broken_table_keeps_the_last_good_one(table_path: Path) -> None:
    table = TierTable(table_path)
    table_path.write_text("{not json")
    assert table.version == 1 and table.bad_reads == 1
    with pytest.raises(ValueError, match="no limit"):
        Tiers.from_json('{"tiers": {"pro": "1/1"}, "default": "free"}')
    with pytest.raises(ValueError, match="no limit"):
        write_tier_table(table_path, TIERS, {"x": "platinum"}, version=3)
    with pytest.raises(ValueError, match="rate policy"):
        Tiers.from_json('{"tiers": {"free": "lots"}}')


def test_recheck_s_spaces_out_the_looks_at_the_file(table_path: Path) -> None:
    now = {"t": 0.0}
    table = TierTable(table_path, recheck_s=5.0, clock=lambda: now["t"])
    write_tier_table(table_path, TIERS, version=2)
    now["t"] = 1.0
    assert table.version == 1  # not looked at yet
    now["t"] = 5.0
    assert table.version == 2


def test_tiers_on_redis_are_shared_and_follow_a_change(
    redis_server: RedisServer, table_path: Path
) -> None:
    url = f"{redis_server.url}?algorithm=sliding_log"
    a = TieredRateLimiter(TierTable(table_path), url, name="tiers")
    b = TieredRateLimiter(TierTable(table_path), url, name="tiers")
    a.reset()
    assert _admitted(a, "alice", 3) + _admitted(b, "alice", 6) == 5  # one pro limit, shared
    write_tier_table(table_path, {**TIERS, "pro": "8/1000000"}, {"alice": "pro"}, version=2)
    assert _admitted(b, "alice", 6) == 3  # the same state on Redis, under the new limit
    a.reset()
    a.close()
    b.close()


_PROCESS = textwrap.dedent(
    """
    import sys
    from lookup.kit.ratelimit import TieredRateLimiter, TierTable
    limiter = TieredRateLimiter(TierTable(sys.argv[1]), clock=lambda: 0.0)
    for line in sys.stdin:
        who, tries = line.split()
        got = [limiter.check(who) for _ in range(int(tries))]
        print(sum(d.allowed for d in got), got[-1].limit, limiter.tier_of(who), flush=True)
    """
)


def test_a_running_process_follows_a_tier_change_without_a_restart(table_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", _PROCESS, str(table_path)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None

    def ask(who: str, tries: int) -> list[str]:
        proc.stdin.write(f"{who} {tries}\n")  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]
        return proc.stdout.readline().split()  # type: ignore[union-attr]

    try:
        assert ask("carol", 10) == ["2", "2", "free"]
        assert ask("alice", 10) == ["5", "5", "pro"]
        write_tier_table(table_path, {**TIERS, "free": "3/1000000"}, {"carol": "enterprise"},
                         version=2)  # fmt: skip
        assert ask("carol", 20) == ["9", "9", "enterprise"]  # upgraded while running
        assert ask("alice", 10) == ["3", "3", "free"]  # downgraded: free's new limit
    finally:
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0
