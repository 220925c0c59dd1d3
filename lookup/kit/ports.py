"""Old import path of free loopback ports, kept for one release.

Its names moved to :mod:`lookup.kit.engines.ports`, with the rest of the kit's engine
plumbing (:mod:`lookup.kit.engines`); this module gives the very same objects.
"""

from __future__ import annotations

from lookup.kit.engines.ports import BUS_OFFSET, BUS_PORT_RANGE, PORT_RANGE, free_port, port_free

__all__ = ["BUS_OFFSET", "BUS_PORT_RANGE", "PORT_RANGE", "free_port", "port_free"]
