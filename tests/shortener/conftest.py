"""Fixtures for the shortener: an injectable clock, services and apps over a temp data dir."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from lookup.kit.ratelimit import RatePolicy
from lookup.server import create_app
from lookup.shortener import Limits, LinkApi, Shortener, ShortenerConfig, ShortenerService
from lookup.shortener.http import mount

BASE_URL = "http://127.0.0.1:8000"


class Clock:
    """A settable clock used as both wall clock and monotonic clock."""

    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def generous_limits() -> Limits:
    """Limits no functional test reaches (rate-limit tests set their own)."""
    big = RatePolicy.per(100_000, 1)
    return Limits(anonymous=big, owner=big, ip=big, misses=big, passwords=big)


def no_dns(host: str) -> list[str]:
    """The scanner's resolver in tests: it knows no name (tests never use the network;
    tests/shortener/test_destinations.py injects its own answers)."""
    return []


@pytest.fixture
def limits() -> Limits:
    """Fresh generous limits a test can tighten before building an app."""
    return generous_limits()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def make_config(tmp_path: Path, clock: Clock) -> Callable[..., ShortenerConfig]:
    def factory(**overrides: Any) -> ShortenerConfig:
        settings: dict[str, Any] = {
            "data_dir": tmp_path / "data",
            "base_url": BASE_URL,
            "wall_clock": clock,
            "mono_clock": clock,
            "block_size": 100,
            "limits": generous_limits(),
            # The scanner's thread would race tests that look at a fresh link's verdict;
            # tests/shortener/test_scanner.py switches it on where it is the subject.
            "scanner": False,
            "resolve_host": no_dns,
        }
        settings.update(overrides)
        return ShortenerConfig(**settings)

    return factory


@pytest.fixture
def shortener(make_config: Callable[..., ShortenerConfig]) -> Iterator[Shortener]:
    """The composition root over a temp data dir (no background loops started)."""
    root = Shortener(make_config())
    yield root
    root.close()


@pytest.fixture
def service(shortener: Shortener) -> ShortenerService:
    """The domain service of :func:`shortener`."""
    return shortener.service


@pytest.fixture
def api(shortener: Shortener) -> LinkApi:
    """The JSON-level API of :func:`shortener` (parse → service → view)."""
    return shortener.api


class App:
    """A TestClient over the real server app with only the shortener mounted."""

    def __init__(
        self, config: ShortenerConfig, analytics_options: dict[str, Any] | None = None
    ) -> None:
        holder: dict[str, Shortener] = {}

        def _mount(mounts: Any) -> None:
            holder["shortener"] = mount(mounts, config=config, analytics_options=analytics_options)

        self.app = create_app(config.data_dir, base_url=config.base_url, subsystems=[_mount])
        self.client = TestClient(self.app, raise_server_exceptions=False)
        self.client.__enter__()
        self.shortener = holder["shortener"]
        self.service = self.shortener.service

    def close(self) -> None:
        self.client.__exit__(None, None, None)
        self.shortener.close()


@pytest.fixture
def make_app(make_config: Callable[..., ShortenerConfig]) -> Iterator[Callable[..., App]]:
    apps: list[App] = []

    def factory(analytics_options: dict[str, Any] | None = None, **overrides: Any) -> App:
        app = App(make_config(**overrides), analytics_options)
        apps.append(app)
        return app

    yield factory
    for app in apps:
        app.close()


@pytest.fixture
def app(make_app: Callable[..., App]) -> App:
    return make_app()


@pytest.fixture
def token() -> str:
    return "owner-token-0123456789-abcdef"


@pytest.fixture
def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}
