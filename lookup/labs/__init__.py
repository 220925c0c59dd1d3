"""The dashboard's labs: the processes its pages run for drills, behind one supervisor.

Pages render and call; they own no process. ``supervisor(data_dir).start(kind, key,
**params)`` starts a lab once (a second call returns the running one), ``get`` finds it
again — from a reloaded page, or from the state file a crashed dashboard left — and every
lab stops when the dashboard exits. The kinds (:data:`KINDS`) adapt the launchers the
systems already have; this package is a consumer like ``lookup.fleet``: it may import any
system, and no system imports it. The serving fleet's read side (``fleet_state``,
``layer_counts``, ``outage_drill``: HTTP calls to a fleet ``lookup fleet`` started) is
named here too, so the dashboard imports no launcher.
"""

from lookup.kit.lazy import lazy_exports

_EXPORTS = {
    "KINDS": "lookup.labs.core",
    "TITLES": "lookup.labs.core",
    "Lab": "lookup.labs.core",
    "LabRecord": "lookup.labs.core",
    "LabSupervisor": "lookup.labs.core",
    "RecordedLab": "lookup.labs.core",
    "stop_every_lab": "lookup.labs.core",
    "supervisor": "lookup.labs.core",
    "available": "lookup.labs.servers",
    "RedisLab": "lookup.labs.servers",
    "RedisClusterLab": "lookup.labs.servers",
    "KvClusterLab": "lookup.labs.servers",
    "IdLeaseLab": "lookup.labs.servers",
    "CrawlLab": "lookup.labs.crawl",
    "CrawlFleetLab": "lookup.labs.crawlfleet",
    "IndexBuildLab": "lookup.labs.indexbuild",
    "SearchClusterLab": "lookup.labs.searchcluster",
    "SandboxLab": "lookup.labs.sandbox",
    "ProcessLab": "lookup.labs.process",
    "fleet_state": "lookup.labs.serving",
    "layer_counts": "lookup.labs.serving",
    "outage_drill": "lookup.labs.serving",
    "redact": "lookup.labs.serving",
    "lookup_command": "lookup.launcher",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
