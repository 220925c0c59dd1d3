"""Old import path of leadership, kept for one release: use :mod:`lookup.kit.leadership`.

The port (:class:`Leadership`, :func:`open_leadership`) is :mod:`lookup.kit.leadership`;
the embedded backend is :class:`lookup.kit.leadership.solo.SoloLeadership`.
"""

from __future__ import annotations

from lookup.kit.leadership import Leadership, open_leadership
from lookup.kit.leadership.solo import SoloLeadership

__all__ = ["Leadership", "SoloLeadership", "open_leadership"]
