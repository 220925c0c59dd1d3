"""Lookup Workbench: four read-heavy lookup systems, built for real and explained.

The one idea under all four: reads vastly outnumber writes, so decide the answer
in advance — choose the key, precompute the answer per key, cache the hot head,
rebuild indexes offline and swap them atomically, keep writes off the read path.
"""

__version__ = "0.1.0"
