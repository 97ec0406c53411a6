"""The contract every backend (cloud, mock, local) fulfils, and the run context they share.

The runner (``foundry_bridge.runner``) creates the run folder, writes ``plan.json``, ``items.jsonl`` and
``records.jsonl``, then calls ``backend.execute(ctx)``; the backend returns normalized ``ResultRow`` s (one per
dataset row × criterion × metric; a failure is a row with ``error`` set, never a missing row) and may record
ids and provenance in ``ctx.state`` / ``ctx.manifest``. ``ctx.save_state()`` persists ``state.json``
atomically — a backend calls it as soon as it has ids worth resuming from.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from ._io import write_json
from .mapping.plan import Plan
from .results import RUN_FILES, ResultRow

__all__ = ["Backend", "ProgressCallback", "RunContext", "no_progress", "utc_now"]

# progress(stage, done, total): stage is e.g. "polling", "collecting", "judging"; total may be None
ProgressCallback = Callable[[str, int, "int | None"], None]


def no_progress(stage: str, done: int, total: int | None) -> None:
    """The progress callback that reports nothing."""
    return None


def utc_now() -> str:
    """The current UTC time as ISO 8601 to the second: the timestamps of ``state.json`` and ``manifest.json``."""
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass
class RunContext:
    """What a backend gets: the plan, the run folder, resumable state, provenance, a progress callback."""

    plan: Plan
    run_dir: Path
    state: dict[str, Any] = field(default_factory=dict)
    manifest: dict[str, Any] = field(default_factory=dict)
    progress: ProgressCallback = no_progress
    resume: bool = False

    def save_state(self) -> None:
        """Write ``state.json`` atomically (call as soon as there are ids worth resuming from)."""
        write_json(self.run_dir / RUN_FILES["state"], self.state)


class Backend(Protocol):
    """A way to execute a plan."""

    name: str  # "cloud" | "mock" | "local"

    @property
    def identity(self) -> dict[str, Any]:
        """What, besides the plan, determines the answers (endpoint, judge model): a finished run is reused only
        when the plan, the dataset and this identity are all the same. Never holds a secret."""
        ...

    def execute(self, ctx: RunContext) -> list[ResultRow]:
        """Run every criterion on every item; return one ResultRow per (row, criterion, metric)."""
        ...
