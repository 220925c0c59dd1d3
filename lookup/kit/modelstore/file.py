"""Ranking models in a directory (``file:///path`` or a plain path): small JSON files, one
current per name, atomic swaps — the embedded :class:`~lookup.kit.modelstore.ModelStore`.

Layout under the store's directory (``DATA_DIR/models`` by default)::

    <name>/<version>.json      one trained model (immutable once published)
    <name>/CURRENT             the version served (replaced with os.replace: atomic)
    <name>/HISTORY             the versions that were current, oldest first (for rollback)
    <name>/rejected/<version>.json + .reason.json

A version is a sortable string (``v000003``) the trainer picks with
:meth:`~FileModelStore.next_version`. ``open`` returns the parsed JSON; a file that does
not parse raises ``ValueError`` — the serving side then keeps the hand-set weights and
says why.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lookup.kit.engines.storeurl import StoreUrl
from lookup.kit.snapshots import snapshot_directory

if TYPE_CHECKING:
    from lookup.kit.ltr import LinearRanker

__all__ = ["FileModelStore"]

_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,40}$")
_VERSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,60}$")


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


class FileModelStore:
    """Model versions per name in a directory (see the module docstring)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    @classmethod
    def from_url(cls, url: StoreUrl) -> FileModelStore:
        """The store in the directory ``url`` names (``file:///path`` or a plain path)."""
        return cls(snapshot_directory(url.url))

    def _dir(self, name: str) -> Path:
        if not _NAME.match(name):
            raise ValueError(f"bad model name {name!r}")
        return self.root / name

    @staticmethod
    def _check_version(version: str) -> None:
        if not _VERSION.match(version):
            raise ValueError(f"bad model version {version!r}")

    def names(self) -> list[str]:
        """Names with at least one stored version."""
        if not self.root.is_dir():
            return []
        return sorted(p.name for p in self.root.iterdir() if p.is_dir() and self.versions(p.name))

    def versions(self, name: str, /) -> list[str]:
        """Stored versions, oldest first."""
        d = self._dir(name)
        if not d.is_dir():
            return []
        return sorted(p.stem for p in d.glob("*.json") if not p.name.startswith("."))

    def current(self, name: str, /) -> str | None:
        """The served version, or None before the first publish."""
        try:
            text = (self._dir(name) / "CURRENT").read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            return None
        return text or None

    def current_token(self, name: str) -> tuple[str, int] | None:
        """What changes when the served model changes (cheap to poll)."""
        try:
            st = (self._dir(name) / "CURRENT").stat()
        except FileNotFoundError:
            return None
        return (self.current(name) or "", st.st_mtime_ns)

    def open(self, name: str, version: str | None = None, /) -> dict[str, Any] | None:
        """A version's parsed JSON (default: the current one); ValueError if it is broken."""
        version = version or self.current(name)
        if version is None:
            return None
        self._check_version(version)
        path = self._dir(name) / f"{version}.json"
        if not path.is_file():
            raise LookupError(f"no model {name} version {version} in {self.root}")
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"model {name} {version} is not valid JSON: {exc}") from exc

    def next_version(self, name: str) -> str:
        """A fresh version number after every stored or rejected one."""
        d = self._dir(name)
        seen = [*self.versions(name), *(p.stem for p in (d / "rejected").glob("*.json"))]
        nums = [int(v[1:]) for v in seen if re.fullmatch(r"v\d+", v)]
        return f"v{max(nums, default=0) + 1:06d}"

    def publish(self, name: str, version: str, source: str | os.PathLike[str], /) -> None:
        """Move a written model file in as ``version`` and make it current."""
        self._check_version(version)
        d = self._dir(name)
        d.mkdir(parents=True, exist_ok=True)
        target = d / f"{version}.json"
        if target.exists():
            raise ValueError(f"model {name} version {version} already exists")
        shutil.move(os.fspath(source), target)
        self._swap(name, version)

    def _swap(self, name: str, version: str) -> None:
        d = self._dir(name)
        before = self.current(name)
        if before is not None and before != version:
            history = d / "HISTORY"
            old = history.read_text(encoding="utf-8") if history.exists() else ""
            _write_atomic(history, old + before + "\n")
        _write_atomic(d / "CURRENT", version + "\n")

    def publish_model(
        self,
        name: str,
        ranker: LinearRanker,
        figures: Mapping[str, Any],
        require_gain: bool = True,
    ) -> tuple[str, bool]:
        """Write a trained model as the next version: current when its held-out NDCG gain
        interval (``figures["gainNdcg"]``: mean, low, high) lies above zero, else kept aside
        as rejected with the figures as the reason. Returns (version, made current)."""
        self.root.mkdir(parents=True, exist_ok=True)
        version = self.next_version(name)
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, dir=self.root) as f:
            json.dump(ranker.to_json(), f, indent=1)
            path = Path(f.name)
        if require_gain and figures["gainNdcg"][1] <= 0:
            self.reject(name, version, path, {"why": "no held-out NDCG gain", **figures})
            return version, False
        self.publish(name, version, path)
        return version, True

    def activate(self, name: str, version: str, /) -> None:
        """Serve a stored version."""
        self._check_version(version)
        if version not in self.versions(name):
            raise LookupError(f"no model {name} version {version}")
        self._swap(name, version)

    def rollback(self, name: str, /) -> str:
        """Serve the version that was current before the last swap again (itself a swap:
        a second rollback undoes the first)."""
        d = self._dir(name)
        history = d / "HISTORY"
        lines = history.read_text(encoding="utf-8").split() if history.exists() else []
        stored = set(self.versions(name))
        while lines and lines[-1] not in stored:
            lines.pop()
        if not lines:
            raise LookupError(f"model {name} has no earlier version to roll back to")
        version = lines.pop()
        before = self.current(name)
        if before is not None:
            lines.append(before)
        _write_atomic(history, "".join(v + "\n" for v in lines))
        _write_atomic(d / "CURRENT", version + "\n")
        return version

    def reject(
        self,
        name: str,
        version: str,
        source: str | os.PathLike[str],
        reason: Mapping[str, Any],
        /,
    ) -> None:
        """Keep a refused model aside with its reason; never served."""
        self._check_version(version)
        d = self._dir(name) / "rejected"
        d.mkdir(parents=True, exist_ok=True)
        shutil.move(os.fspath(source), d / f"{version}.json")
        _write_atomic(d / f"{version}.reason.json", json.dumps(dict(reason), indent=2))
