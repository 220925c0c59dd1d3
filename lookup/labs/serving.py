"""What the dashboard asks of processes it does not run: a serving fleet ``lookup up``
started: its state file, each worker's cache-layer counts, the cache-tier outage drill
asked of the fleet's control address, and a URL with its password hidden (``redact``).

These are the launchers' client halves, named here so that the dashboard imports no
launcher module (``tests/test_layers.py``)."""

from __future__ import annotations

from lookup.fleet import layer_counts, outage_drill, redact
from lookup.fleet import read_state as fleet_state

__all__ = ["fleet_state", "layer_counts", "outage_drill", "redact"]
