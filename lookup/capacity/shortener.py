"""The URL shortener's estimate (seed 001): rates, storage, the click stream, key length.

The figure that shapes the design is the key space's fill, not storage: 62^6 keys
would hold ten years of links but be a fifth full, so keys are 7 characters.
"""

from __future__ import annotations

from dataclasses import dataclass

from lookup.capacity.checks import Validated, assume, fraction
from lookup.capacity.core import Plan, Workings, figure, quantity
from lookup.capacity.helpers import BASE62


@dataclass(frozen=True)
class ShortenerAssumptions(Validated):
    """The URL shortener's sizing assumptions (seed: 100M links a month, 100:1 reads)."""

    links_per_month: float = assume(100e6, "new short links created per month")
    read_write_ratio: float = assume(100.0, "redirects per link created")
    peak_factor: float = assume(5.0, "peak traffic as a multiple of the average")
    retention_years: float = assume(10.0, "years a link is kept")
    bytes_per_link: float = assume(500.0, "bytes per stored link incl. URL, owner, index")
    bytes_per_click_event: float = assume(200.0, "bytes per click event on the stream")
    replicas: int = assume(3, "copies of the link store", minimum=1, inclusive=True, integer=True)
    alphabet: int = assume(
        BASE62, "characters allowed in a key (base62)", minimum=2, inclusive=True, integer=True
    )
    max_key_density: float = fraction(
        0.01,
        "highest acceptable key-space fill after the retention period",
        allow_zero=False,
        allow_one=True,
    )
    hot_links_per_day: float = assume(10e6, "distinct links clicked on a given day")
    cache_bytes_per_link: float = assume(300.0, "bytes per link in the cache")
    days_per_month: float = assume(30.0, "days in a month for the per-second conversion")


def _has_too_short(v: Workings) -> bool:
    return v["too_short_length"] >= 1


def _has_fit(v: Workings) -> bool:
    return v["fit_length"] < v["key_length"]


class ShortenerPlan(Plan):
    """The shortener's estimate: rates, storage, click stream, key length and hot set."""

    inputs = ShortenerAssumptions
    steps = (
        figure("seconds_per_month", "Seconds in a month", "s",
               "{a.days_per_month} × {SECONDS_PER_DAY} s"),
        figure("writes_per_s", "Writes (new links)", "/s",
               "{a.links_per_month} / {seconds_per_month} s"),
        figure("peak_writes_per_s", "Writes at peak", "/s",
               "{writes_per_s:q} × {a.peak_factor}"),
        figure("reads_per_s", "Reads (redirects)", "/s",
               "{writes_per_s:q} × {a.read_write_ratio}"),
        figure("peak_reads_per_s", "Reads at peak", "/s", "{reads_per_s:q} × {a.peak_factor}"),
        figure("links_total", "Links in {a.retention_years} years", "count",
               "{a.links_per_month} × {MONTHS_PER_YEAR} × {a.retention_years}"),
        figure("storage_bytes", "Storage", "B", "{links_total} × {a.bytes_per_link:B}"),
        figure("replicated_storage_bytes", "Storage with {a.replicas:raw} replicas", "B",
               "{storage_bytes:q} × {a.replicas:raw}"),
        figure("clicks_per_day", "Clicks a day", "/day",
               "{reads_per_s:q} × {SECONDS_PER_DAY} s"),
        figure("click_bytes_per_day", "Click events a day", "B",
               "{clicks_per_day} × {a.bytes_per_click_event:B}"),
        figure("peak_click_bytes_per_s", "Click events at peak", "B/s",
               "{peak_reads_per_s:q} × {a.bytes_per_click_event:B}"),
        quantity("too_short_length", "{fit_length} − 1", "chars"),
        figure("too_short_key_space", "Key space at {too_short_length:raw} characters", "count",
               "{a.alphabet:raw}^{too_short_length:raw} [< {links_total} links → too short]",
               when=_has_too_short),
        quantity("fit_length", "key_length_for({links_total}, 1.0, {a.alphabet})", "chars"),
        figure("fit_key_space", "Key space at {fit_length:raw} characters", "count",
               "{a.alphabet:raw}^{fit_length:raw}", when=_has_fit),
        figure("fit_density", "Fill at {fit_length:raw} characters", "fraction",
               "{links_total} / {fit_key_space}", when=_has_fit),
        figure("key_length", "Key length chosen", "chars",
               "[shortest length with fill ≤ {a.max_key_density:fraction}]",
               by="key_length_for({links_total}, {a.max_key_density}, {a.alphabet})"),
        figure("key_space", "Key space at {key_length:raw} characters", "count",
               "{a.alphabet:raw}^{key_length:raw}"),
        figure("key_density", "Fill at {key_length:raw} characters", "fraction",
               "{links_total} / {key_space}"),
        figure("hot_set_bytes", "Hot set in cache", "B",
               "{a.hot_links_per_day} links × {a.cache_bytes_per_link:B}"),
    )  # fmt: skip

    def driver(self) -> str:
        """The one number that shapes the design, and why."""
        shorter = (
            "{fit_length:raw} characters would fit but be {fit_density:fraction} full, "
            if _has_fit(self.workings())
            else ""
        )
        return self.say(
            "Key-space density, not storage, drives the design: {links_total:count} links in "
            "{a.retention_years} years — " + shorter + "so keys are {key_length:raw} characters "
            "({key_density:fraction} full), while {storage_bytes:B} of storage and "
            "{peak_writes_per_s:/s} peak writes are routine and the effort goes to "
            "{peak_reads_per_s:/s} peak reads."
        )


def shortener(a: ShortenerAssumptions = ShortenerAssumptions()) -> ShortenerPlan:
    """Size the URL shortener: per-second rates, bytes, key length and the hot set."""
    return ShortenerPlan.of(a)
