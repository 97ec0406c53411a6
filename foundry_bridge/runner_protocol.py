"""The contract every backend (cloud, mock, local) fulfils, and the run context they share.

The runner (``foundry_bridge.runner``) prepares the run folder (``runfolder.RunFolder``: ``plan.json``,
``items.jsonl``, ``records.jsonl``), then iterates ``backend.execute(ctx)``: the backend yields normalized
``ResultRow`` s in row order as it produces them (one per dataset row × criterion × metric; a failure is a row with
``error`` set, never a missing row), which the runner appends to ``results.jsonl`` — no backend holds a run's
rows in memory; ``ctx.state`` and ``ctx.manifest`` are complete once the iteration ends. A backend records ids in
``ctx.state`` (a ``RunState``) and provenance in ``ctx.manifest`` (extra fields of ``manifest.json``).
``ctx.save_state()`` persists ``state.json`` atomically — a backend calls it as soon as it has ids worth resuming
from, after ``ctx.announce``-ing each new service id (the CLI prints them on stderr); a state that cannot be
written once service ids exist is a ``ServiceIdsNotSavedError`` listing them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from .mapping.plan import Plan
from .results import ResultRow
from .runfolder import RunFolder, RunState, ServiceIdsNotSavedError

__all__ = ["Backend", "Capabilities", "ProgressCallback", "RunContext", "no_progress", "utc_now"]

# progress(stage, done, total): stage is e.g. "polling", "collecting", "judging"; total may be None
ProgressCallback = Callable[[str, int, "int | None"], None]


def no_progress(stage: str, done: int, total: int | None) -> None:
    """The progress callback that reports nothing."""
    return None


def no_notice(message: str) -> None:
    """The notice callback that prints nothing."""
    return None


def utc_now() -> str:
    """The current UTC time as ISO 8601 to the second: the timestamps of ``state.json`` and ``manifest.json``."""
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class Capabilities:
    """What a backend can do, for the runner and the CLI to word their advice.

    ``resume_elsewhere``: another process can ``--resume`` a run from its ``state.json`` (false for the emulator,
    whose service state lives in the memory of the process that ran it). ``judges_here``: the judges run in this
    process, so an interrupted run keeps only what ``caches_answers`` (the response cache) saved as it arrived.
    """

    resume_elsewhere: bool = True
    judges_here: bool = False
    caches_answers: bool = False


@dataclass
class RunContext:
    """What a backend gets: the plan, the run folder, resumable state, provenance, a progress callback."""

    plan: Plan
    run_dir: Path
    state: RunState | None = None  # None: a fresh state for the plan (tests that call a backend directly)
    manifest: dict[str, Any] = field(default_factory=dict)
    progress: ProgressCallback = no_progress
    resume: bool = False
    notify: Callable[[str], None] = no_notice  # one line per service id created (the CLI: stderr)
    # on resume of a run that finished: its result rows, in row order (a backend that judges here keeps the ones
    # that did not error and asks again for the others)
    earlier: Iterator[ResultRow] | None = None
    folder: RunFolder = field(init=False)

    def __post_init__(self) -> None:
        self.folder = RunFolder(self.run_dir)
        if self.state is None:
            self.state = RunState.for_plan(self.plan, "", {}, utc_now())

    @property
    def run_state(self) -> RunState:
        """``state`` (never None after construction)."""
        assert self.state is not None
        return self.state

    def announce(self, kind: str, service_id: str) -> None:
        """Tell the user a service resource exists (before it is saved: a failed save cannot hide it)."""
        self.notify(f"{kind} created: {service_id}")

    def save_state(self) -> None:
        """Write ``state.json`` atomically (call as soon as there are ids worth resuming from). Once service ids
        exist, a failed write is a ``ServiceIdsNotSavedError`` that lists them."""
        try:
            self.folder.write_state(self.run_state)
        except OSError as exc:
            if not self.run_state.service_ids():
                raise
            raise ServiceIdsNotSavedError.from_os_error(exc, self.folder, self.run_state) from exc


@runtime_checkable
class Backend(Protocol):
    """A way to execute a plan. Every member is required (checked with ``isinstance``)."""

    name: str  # "cloud" | "mock" | "local"

    @property
    def identity(self) -> dict[str, Any]:
        """What, besides the plan, determines the answers (endpoint, judge model): a finished run is reused only
        when the plan, the dataset and this identity are all the same. JSON values only; never a secret."""
        ...

    @property
    def capabilities(self) -> Capabilities:
        """Hints for the runner and the CLI (see ``Capabilities``)."""
        ...

    def preflight(self, plan: Plan) -> None:
        """Raise a ``FoundryBridgeError`` now if this backend cannot run ``plan`` (called before anything is
        written)."""
        ...

    def execute(self, ctx: RunContext) -> Iterable[ResultRow]:
        """Run every criterion on every item; yield one ResultRow per (row, criterion, metric), in row order
        (rows of a dataset row together), as they are produced."""
        ...
