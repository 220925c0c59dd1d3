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

from browser_harness import CHROMIUM, launch_chromium, port_free, running_stack  # noqa: E402

#: The API's usual address, shown on Home; used when free so the picture shows what
#: `make run` shows.
USUAL_API_PORT = 8000

#: Text that is on screen once each page has rendered.
READY_TEXT = {"": "The four systems", "capacity": "How each figure is worked out"}


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

    from playwright.sync_api import expect, sync_playwright

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
        page.goto(f"{base.rstrip('/')}/{args.page}")
        ready = READY_TEXT.get(args.page)
        if ready:
            expect(page.get_by_text(ready).first).to_be_visible(timeout=30_000)
        else:  # any other page: its title is drawn and its first script run has ended
            expect(page.locator("h1").first).to_be_visible(timeout=30_000)
            app = page.locator('[data-testid="stApp"]')
            expect(app).to_have_attribute("data-test-script-state", "notRunning", timeout=30_000)
        if args.page == "capacity":
            expect(page.locator(".js-plotly-plot").first).to_be_visible(timeout=30_000)
        # Wait for the script run to finish (the "Running..." widget goes away).
        expect(page.locator('[data-testid="stStatusWidget"]')).to_have_count(0, timeout=30_000)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(args.out), full_page=args.full_page)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
