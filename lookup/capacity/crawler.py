"""The web crawler's estimate (seed 004): fetch rate, bandwidth, storage, the seen-URL set,
and the render tier (seed 003 §6.5: a render costs about ten times a plain fetch).

The figure that shapes the design is politeness: one request per host every few
seconds makes a big site take months, while the whole fleet is a few machines.
"""

from __future__ import annotations

from dataclasses import dataclass

from lookup.capacity.checks import Validated, assume, fraction
from lookup.capacity.core import Plan, figure


@dataclass(frozen=True)
class CrawlerAssumptions(Validated):
    """The crawler's sizing assumptions (seed: 1B pages a month, 100 KB each)."""

    pages_per_month: float = assume(1e9, "pages fetched per month")
    days_per_month: float = assume(30.0, "days in a month for the per-second conversion")
    peak_factor: float = assume(2.0, "peak fetch rate as a multiple of the average")
    page_bytes: float = assume(100e3, "average uncompressed HTML page in bytes")
    compression_ratio: float = assume(5.0, "storage compression ratio", minimum=1.0, inclusive=True)
    retention_months: float = assume(12.0, "months of page versions kept")
    links_per_page: float = assume(50.0, "links extracted per page", inclusive=True)
    known_urls: float = assume(20e9, "URLs known in total (the seen-URL set)")
    bloom_fp_rate: float = fraction(
        0.01, "seen-URL Bloom filter false-positive rate", allow_zero=False
    )
    bloom_partitions: int = assume(
        64, "partitions the Bloom filter is split over", minimum=1, inclusive=True, integer=True
    )
    url_metadata_bytes: float = assume(200.0, "bytes of metadata per known URL")
    fetch_seconds: float = assume(2.0, "seconds per fetch (DNS, connect, slow servers)")
    connections_per_machine: float = assume(500.0, "connections one async fetcher holds")
    host_delay_seconds: float = assume(2.0, "seconds between requests to the same host")
    big_site_pages: float = assume(10e6, "pages on one big site")
    render_share: float = fraction(
        0.1, "share of fetched pages rendered in a browser (the render threshold's yield)",
        allow_one=True,
    )  # fmt: skip
    render_cost_factor: float = assume(
        10.0, "a browser render's processor time and memory as a multiple of a plain fetch's",
        minimum=1.0, inclusive=True,
    )  # fmt: skip
    fetch_cpu_seconds: float = assume(0.02, "processor seconds per plain fetch (parse included)")
    fetch_memory_bytes: float = assume(5e6, "memory one plain fetch in flight holds, bytes")
    render_seconds: float = assume(5.0, "seconds one render takes (its own requests included)")


class CrawlerPlan(Plan):
    """The crawler's estimate: fetch rate, bandwidth, storage, seen-set, fleet, politeness."""

    inputs = CrawlerAssumptions
    steps = (
        figure("seconds_per_month", "Seconds in a month", "s",
               "{a.days_per_month} × {SECONDS_PER_DAY} s"),
        figure("fetch_rate_per_s", "Fetch rate", "/s",
               "{a.pages_per_month} pages / {seconds_per_month} s"),
        figure("peak_fetch_rate_per_s", "Fetch rate at peak", "/s",
               "{fetch_rate_per_s:q} × {a.peak_factor}"),
        figure("bandwidth_bytes_per_s", "Bandwidth", "B/s",
               "{fetch_rate_per_s:q} × {a.page_bytes:B}"),
        figure("bandwidth_bits_per_s", "Bandwidth in bits", "bit/s",
               "{bandwidth_bytes_per_s:q} × 8"),
        figure("peak_bandwidth_bits_per_s", "Bandwidth at peak", "bit/s",
               "{bandwidth_bits_per_s:q} × {a.peak_factor}"),
        figure("raw_bytes_per_month", "Raw pages a month", "B",
               "{a.pages_per_month} × {a.page_bytes:B}"),
        figure("compressed_bytes_per_month", "Stored pages a month (compressed)", "B",
               "{raw_bytes_per_month:q} / {a.compression_ratio}"),
        figure("retained_bytes", "Stored pages for {a.retention_months} months", "B",
               "{compressed_bytes_per_month:q} × {a.retention_months}"),
        figure("link_checks_per_s", "Link checks", "/s",
               "{fetch_rate_per_s:q} × {a.links_per_page} links"),
        figure("bloom_bits_per_url",
               "Bloom bits per URL at {a.bloom_fp_rate:fraction} false positives", "bits",
               "−ln {a.bloom_fp_rate} / (ln 2)²"),
        figure("bloom_hashes", "Bloom hash functions", "hashes",
               "[≈ {bloom_bits_per_url} × ln 2, rounded to the better whole number]",
               by="bloom_optimal_hashes({a.bloom_fp_rate})"),
        figure("bloom_bits", "Seen-URL set (Bloom filter)", "bit",
               "{a.known_urls} × {bloom_bits_per_url} bits"),
        figure("bloom_bytes", "Seen-URL set in bytes", "B", "{bloom_bits:q} / 8"),
        figure("bloom_partition_bytes", "Per partition ({a.bloom_partitions:raw})", "B",
               "{bloom_bytes:q} / {a.bloom_partitions:raw}"),
        figure("url_metadata_bytes", "URL metadata", "B",
               "{a.known_urls} URLs × {a.url_metadata_bytes:B}"),
        figure("in_flight", "Fetches in flight (Little's law)", "count",
               "{peak_fetch_rate_per_s:q} × {a.fetch_seconds} s"),
        figure("fetch_machines", "Fetcher machines, minimum", "machines",
               "ceil({in_flight} / {a.connections_per_machine} connections)"),
        figure("hosts_active", "Hosts that must be active at once", "hosts",
               "{peak_fetch_rate_per_s:q} × {a.host_delay_seconds} s per host"),
        figure("big_site_seconds", "Crawling one big site", "s",
               "{a.big_site_pages} pages × {a.host_delay_seconds} s"),
        figure("big_site_days", "Crawling one big site, in days", "days",
               "{big_site_seconds} s / {SECONDS_PER_DAY} s"),
        figure("renders_per_s", "Renders at peak (two-tier: the share past the threshold)", "/s",
               "{peak_fetch_rate_per_s:q} × {a.render_share:fraction}"),
        figure("fetch_cores", "Processor cores for the plain fetches at peak", "cores",
               "{peak_fetch_rate_per_s:q} × {a.fetch_cpu_seconds} s"),
        figure("render_cores", "Processor cores for the renders", "cores",
               "{renders_per_s:q} × {a.fetch_cpu_seconds} s × {a.render_cost_factor:raw}"),
        figure("render_cost_share", "Rendering's share of the crawl's processor time", "fraction",
               "{render_cores} / ({fetch_cores} + {render_cores})"),
        figure("render_everything_cores", "Cores if every page were rendered", "cores",
               "{peak_fetch_rate_per_s:q} × {a.fetch_cpu_seconds} s × {a.render_cost_factor:raw}"),
        figure("renders_in_flight", "Renders in flight (Little's law)", "count",
               "{renders_per_s:q} × {a.render_seconds} s"),
        figure("render_memory_bytes", "Memory for the renders in flight", "B",
               "{renders_in_flight} × {a.fetch_memory_bytes:B} × {a.render_cost_factor:raw}"),
    )  # fmt: skip

    def driver(self) -> str:
        """The one number that shapes the design, and why."""
        return self.say(
            "Politeness, not the fleet, sets the pace: at one request per "
            "{a.host_delay_seconds} s per host a {a.big_site_pages:count}-page site takes "
            "{big_site_days:days}, while the whole {peak_fetch_rate_per_s:/s} peak needs only "
            "{fetch_machines:raw} fetcher machines — so design per-host queues and crawl "
            "budgets, and keep the {link_checks_per_s:/s} link checks cheap with an in-memory "
            "{bloom_bytes:B} Bloom filter."
        )


def crawler(a: CrawlerAssumptions = CrawlerAssumptions()) -> CrawlerPlan:
    """Size the crawler: fetch rate, bandwidth, storage, seen-URL set, fleet, politeness."""
    return CrawlerPlan.of(a)
