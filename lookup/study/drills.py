"""Scenario drills on live failures: the learner picks what will happen, then the real
failure is triggered and the outcome measured.

Every drill is a :class:`~lookup.study.measure.Drill`: a scenario's choices (id → text)
and a ``run(**params)`` that breaks the real code — a shared cache tier killed under
redirect load, a replica cut off from its peers, a search shard slowed, a crawler worker
frozen past its lease, a Snowflake clock stepped back — and returns a
:class:`~lookup.study.measure.DrillOutcome` whose ``choice`` is decided by thresholds on
what was measured (the ``chain`` states them), never fixed in advance.

Drills with ``requires`` start their own throw-away servers on free loopback ports from
the installed binaries, stop them when done, and raise
:class:`~lookup.errors.Unavailable` (code ``SERVER_MISSING``) naming the server when it
is not installed. The drills live by area in ``drills_<area>.py``.
"""

from __future__ import annotations

from lookup.study.drills_cache import CACHE_DRILLS
from lookup.study.drills_common import SERVERS, need, server_available
from lookup.study.drills_crawler import CRAWLER_DRILLS
from lookup.study.drills_ids import IDS_DRILLS
from lookup.study.drills_kv import KV_DRILLS
from lookup.study.drills_limits import LIMITS_DRILLS
from lookup.study.drills_proximity import PROXIMITY_DRILLS
from lookup.study.drills_search import SEARCH_DRILLS
from lookup.study.drills_typeahead import TYPEAHEAD_DRILLS
from lookup.study.measure import Drill, DrillOutcome

__all__ = ["DRILLS", "SERVERS", "available", "need", "run_drill", "server_available"]

#: Every drill, by name.
DRILLS: dict[str, Drill] = {
    **CACHE_DRILLS,
    **KV_DRILLS,
    **SEARCH_DRILLS,
    **CRAWLER_DRILLS,
    **IDS_DRILLS,
    **LIMITS_DRILLS,
    **TYPEAHEAD_DRILLS,
    **PROXIMITY_DRILLS,
}


def available(drill: Drill) -> bool:
    """Whether every server ``drill`` requires is installed here."""
    return all(server_available(s) for s in drill.requires)


def run_drill(name: str, **params: float | int | str | bool) -> DrillOutcome:
    """Run drill ``name`` with its defaults overridden by ``params`` (unknown ones refused).

    A drill checks the servers it needs itself, for the parameters given: the lease drill
    without a lease, for one, needs no etcd.
    """
    if name not in DRILLS:
        raise KeyError(f"no drill {name!r}; there are {', '.join(sorted(DRILLS))}")
    drill = DRILLS[name]
    unknown = sorted(set(params) - set(drill.params))
    if unknown:
        raise ValueError(
            f"drill {name!r} takes no parameter {', '.join(unknown)}; it takes "
            f"{', '.join(sorted(drill.params))}"
        )
    return drill.run(**{**drill.params, **params})  # a drill checks its own servers
