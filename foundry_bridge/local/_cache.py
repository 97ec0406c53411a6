"""The judge response cache: one small JSON file per judge answer, keyed by everything that decides the answer.

Layout: ``<cache_dir>/<key[:2]>/<key>.json`` holding ``{"format", "created", "key_parts", "output"}``, where
``output`` is the evaluator's output dict for one call and ``key`` is the SHA-256 of the canonical JSON of
``key_parts`` (see ``judge_key_parts`` in ``_judges``). Writes go to a temporary file in the same directory and
are renamed into place (``os.replace``), so a reader sees a whole entry or none, and concurrent writers — threads
or processes — of the same key simply race to install identical content. A file that cannot be read or parsed
is a miss (and is overwritten by the next store). Entries older than ``ttl`` seconds are misses.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from .._io import atomic_open

__all__ = ["CACHE_FORMAT", "ResponseCache", "cache_key", "default_cache_dir"]

CACHE_FORMAT = 1


def default_cache_dir() -> Path:
    """``$FOUNDRY_BRIDGE_CACHE_DIR``, else ``$XDG_CACHE_HOME/foundry_bridge/judge``, else ``~/.cache/...``."""
    explicit = os.environ.get("FOUNDRY_BRIDGE_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "foundry_bridge" / "judge"


def cache_key(parts: dict[str, Any]) -> str:
    """Hex SHA-256 of the canonical JSON (sorted keys, UTF-8) of ``parts``."""
    return hashlib.sha256(orjson.dumps(parts, option=orjson.OPT_SORT_KEYS | orjson.OPT_SERIALIZE_NUMPY)).hexdigest()


class ResponseCache:
    """A directory of cached evaluator outputs; safe to share between threads and processes."""

    def __init__(
        self, directory: str | os.PathLike[str], *, ttl: float | None = None, clock: Callable[[], float] = time.time
    ) -> None:
        if ttl is not None and ttl <= 0:
            raise ValueError("cache ttl must be a positive number of seconds (or None for no expiry)")
        self.directory = Path(directory)
        self.ttl = ttl
        self._clock = clock

    def path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The cached output for ``key``, or None (absent, unreadable, other format, or expired)."""
        try:
            entry = orjson.loads(self.path(key).read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return None
        if not isinstance(entry, dict) or entry.get("format") != CACHE_FORMAT:
            return None
        if not isinstance(entry.get("output"), dict):
            return None
        if self.ttl is not None:
            created = entry.get("created")
            if not isinstance(created, int | float) or self._clock() - created > self.ttl:
                return None
        return entry["output"]

    def put(self, key: str, output: dict[str, Any], *, key_parts: dict[str, Any] | None = None) -> None:
        """Store ``output`` atomically (temporary file in the same directory, then ``os.replace``)."""
        entry = {"format": CACHE_FORMAT, "created": self._clock(), "key_parts": key_parts, "output": output}
        data = orjson.dumps(entry, option=orjson.OPT_SERIALIZE_NUMPY)
        with atomic_open(self.path(key), durable=False, private=True) as fh:  # a lost entry is only a miss
            fh.write(data)

    def __len__(self) -> int:
        return sum(1 for _ in self.directory.glob("??/*.json")) if self.directory.exists() else 0
