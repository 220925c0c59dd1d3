"""The one rule for starting a throw-away server on a port chosen for it: a lost race for the
port starts it again on a fresh one.

:func:`~lookup.kit.engines.ports.free_port` checks that a port binds *now*, but a server
handed the port's *number* (``redis-server --port``, etcd's URLs, ``postgres -p``) binds it
a moment later, and another process can take it in between. Such a server then fails to
start with ``EADDRINUSE`` — "Address already in use" in its log. Every launcher of
:mod:`lookup.kit.engines` reads its server's log when the server did not start and raises
:func:`start_failure`'s error: :class:`PortTaken` for that case, which
:func:`start_on_fresh_ports` answers by drawing fresh ports and starting again, at most
:data:`LAUNCH_TRIES` times; any other failure is reported at once. A server that keeps a
port it was given (a restart that must keep its URL, a port the caller named) does not
move.

A server that runs in our own process needs none of this: bind the socket first and hand
it over (uvicorn's ``Server.serve(sockets=[sock])``), as the crawler's sandbox web does.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from lookup.errors import Unavailable

__all__ = [
    "LAUNCH_TRIES",
    "PortTaken",
    "address_in_use",
    "log_since",
    "log_size",
    "start_failure",
    "start_on_fresh_ports",
]

log = logging.getLogger(__name__)

T = TypeVar("T")

#: How many times a server is started in all before a lost port race is an error.
LAUNCH_TRIES = 5


class PortTaken(Unavailable):
    """A server could not bind its address: another process took the port first."""


def address_in_use(text: str) -> bool:
    """Whether a server's log (or error) says it could not bind: ``EADDRINUSE``."""
    lowered = text.lower()
    return "address already in use" in lowered or "eaddrinuse" in lowered


def log_size(path: Path) -> int:
    """The size of a server's log file now (0 when there is none): where this start's
    lines will begin."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def log_since(path: Path, offset: int, limit: int = 4000) -> str:
    """What a server wrote to its log after ``offset`` (the last ``limit`` characters)."""
    try:
        with path.open("rb") as f:
            f.seek(offset)
            return f.read().decode(errors="replace")[-limit:]
    except OSError:
        return ""


def start_failure(message: str, log_text: str) -> Unavailable:
    """The error for a server that did not start: :class:`PortTaken` when its log says its
    address was in use (start it again elsewhere), else :class:`Unavailable`."""
    return PortTaken(message) if address_in_use(log_text) else Unavailable(message)


def start_on_fresh_ports(attempt: Callable[[int], T], what: str, tries: int = LAUNCH_TRIES) -> T:
    """Start a server by ``attempt(n)`` (``n`` = 0, 1, …: the try), which draws its ports
    itself; an attempt that raises :class:`PortTaken` is made again, ``tries`` in all.

    The attempt cleans up what it started before it raises. After the last lost race the
    error is :class:`Unavailable`, naming the server and the last port refused.
    """
    last: PortTaken | None = None
    for n in range(tries):
        try:
            return attempt(n)
        except PortTaken as exc:
            last = exc
            log.info("%s lost its port (%s); starting it again on a fresh one", what, exc)
    raise Unavailable(f"{what} did not start: its port was taken {tries} times ({last})") from last
