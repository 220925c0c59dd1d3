"""Screenshot the dashboard in Debian's headless Chromium (the README's picture of Home).

    .venv/bin/python scripts/screenshot.py                    # Home → docs/screenshot-home.png
    .venv/bin/python scripts/screenshot.py --page capacity --out /tmp/capacity.png --full-page

Starts the real API and dashboard on free loopback ports (the same harness as the
browser tests), or uses an already running dashboard given with ``--url``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "browser"))

from browser_harness import (  # noqa: E402
    CHROMIUM,
    launch_chromium,
    port_free,
    running_stack,
    take_screenshot,
)

#: The API's usual address, shown on Home; used when free so the picture shows what
#: `make run` shows.
USUAL_API_PORT = 8000


def main(argv: list[str] | None = None) -> int:
    """Take one screenshot; returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--page", default="", help="URL path of the page ('' is Home)")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshot-home.png")
    parser.add_argument("--url", help="an already running dashboard (default: start one)")
    parser.add_argument("--width", type=int, default=1400)
    parser.add_argument("--height", type=int, default=900)
    parser.add_argument("--full-page", action="store_true", help="capture the whole page")
    args = parser.parse_args(argv)
    if not CHROMIUM.exists():
        print(f"{CHROMIUM} is missing; install it with `apt-get install -y chromium`")
        return 1

    from playwright.sync_api import sync_playwright

    with ExitStack() as stack:
        base = args.url
        if base is None:
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory()))
            api_port = USUAL_API_PORT if port_free(USUAL_API_PORT) else None
            _, dashboard = stack.enter_context(running_stack(workdir, api_port))
            base = dashboard.url
        playwright = stack.enter_context(sync_playwright())
        browser = launch_chromium(playwright)
        stack.callback(browser.close)
        page = browser.new_page(viewport={"width": args.width, "height": args.height})
        take_screenshot(page, base, args.page, args.out, full_page=args.full_page)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
