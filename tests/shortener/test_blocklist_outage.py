"""Drill: the fleet's PostgreSQL stops (``pg_ctl stop -m immediate``) under the shared
blocklist and the scanner's leader.

While it is down the blocklist keeps enforcing the last list it read (never an empty
one; ``read_errors`` counts the failed checks) and the leadership answers "not the
leader" instead of raising; after the restart an edit made meanwhile elsewhere is
enforced, and the lead is taken again. The figures (how long one check takes against a
stopped server, how soon after the restart both recover) are printed (``-s``).
"""

from __future__ import annotations

import time
from typing import Any

from lookup.kit.leader import open_leadership
from lookup.shortener.blocklist import open_blocklist_source
from lookup.shortener.urls import Blocklist


def test_the_blocklist_and_the_leader_ride_out_a_postgres_outage(own_postgres: Any) -> None:
    url = own_postgres.url
    now = [0.0]
    source = open_blocklist_source(url)
    blocklist = Blocklist(source=source, builtin=[], recheck_s=1.0, clock=lambda: now[0])
    leader = open_leadership(url, "outage-drill")
    try:
        blocklist.edit(["bad.example"], [])
        assert leader.hold()

        own_postgres.stop("immediate")
        now[0] += 5
        t0 = time.monotonic()
        assert blocklist.match("www.bad.example") == "bad.example"  # the last list holds
        check_s = time.monotonic() - t0
        assert blocklist.read_errors == 1
        assert not leader.hold()  # a lost session: no longer leading, no exception
        own_postgres.start()
        restarted = time.monotonic()

        # Another process edits the list once the server is back.
        other = open_blocklist_source(url)
        deadline = time.monotonic() + 60
        while True:
            try:
                other.edit(["worse.example"], [], str.lower)
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        other.close()

        def recovered() -> bool:
            now[0] += 5
            return blocklist.match("worse.example") == "worse.example"

        while not recovered():
            assert time.monotonic() < deadline, "the blocklist never saw the edit"
            time.sleep(0.2)
        list_back_s = time.monotonic() - restarted
        while not leader.hold():
            assert time.monotonic() < deadline, "the lead was never taken again"
            time.sleep(0.2)
        lead_back_s = time.monotonic() - restarted
        assert blocklist.match("www.bad.example") == "bad.example"
        print(f"\nPostgreSQL down: one blocklist check took {check_s:.2f} s and kept the last "
              f"list; after the restart the edit was enforced in {list_back_s:.2f} s and the "
              f"lead retaken in {lead_back_s:.2f} s")  # fmt: skip
        assert check_s < 10.0  # bounded by the pool's timeout, never a hang
    finally:
        leader.release()
        blocklist.close()
