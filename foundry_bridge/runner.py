"""Run an evaluation plan on a backend and leave a complete run folder behind.

``run_evaluation(plan, run_dir, backend)`` writes ``plan.json``, ``items.jsonl``, ``records.jsonl`` and an
initial ``state.json``, calls ``backend.execute(ctx)``, then writes ``results.jsonl`` and ``manifest.json``.
``get_backend("cloud" | "mock" | "local", **options)`` builds a backend; cloud and mock are the same
``FoundryBackend`` over the same ``FoundryClient`` — only the httpx transport and the credential differ.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import __version__
from ._io import dumps, loads, write_json, write_jsonl
from .catalog import CATALOG
from .errors import BackendError, UsageError
from .mapping.plan import Plan
from .results import RUN_FILES, ResultRow
from .runner_protocol import Backend, ProgressCallback, RunContext, no_progress, utc_now

__all__ = [
    "BACKENDS",
    "MOCK_ENDPOINT",
    "RunSummary",
    "backend_identity",
    "get_backend",
    "is_finished",
    "load_plan",
    "read_results",
    "run_evaluation",
    "same_run",
    "summarize",
]

BACKENDS = ("cloud", "mock", "local")
MOCK_ENDPOINT = "https://mock.services.ai.azure.com/api/projects/mock-project"


@dataclass
class RunSummary:
    """What a run produced, in numbers. Verdicts count (row, criterion) pairs, judged on the criterion's
    primary metric (``ndcg@3`` for document retrieval); a pair with any errored metric counts as errored."""

    run_dir: Path
    backend: str
    rows: int
    criteria: list[str]
    results: int = 0
    passed: int = 0
    failed: int = 0
    errored: int = 0
    no_verdict: int = 0
    per_criterion: dict[str, dict[str, int]] = field(default_factory=dict)
    eval_id: str | None = None
    run_ids: list[str] = field(default_factory=list)
    report_url: str | None = None
    reused: bool = False
    warnings: list[str] = field(default_factory=list)

    def text(self) -> str:
        """A few human lines."""
        reused = " (reused: same dataset and plan already finished)" if self.reused else ""
        lines = [
            f"run folder: {self.run_dir}{reused}",
            f"backend: {self.backend}; rows: {self.rows}; criteria: {', '.join(self.criteria)}",
            f"verdicts: {self.passed} passed, {self.failed} failed, {self.errored} errored"
            + (f", {self.no_verdict} without verdict" if self.no_verdict else ""),
        ]
        for name, c in self.per_criterion.items():
            lines.append(f"  {name}: {c['passed']} passed, {c['failed']} failed, {c['errored']} errored")
        if self.eval_id:
            lines.append(f"eval: {self.eval_id}; runs: {', '.join(self.run_ids)}")
        if self.report_url:
            lines.append(f"report: {self.report_url}")
        return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------------------
def summarize(rows: list[ResultRow], plan: Plan, run_dir: Path, backend: str) -> RunSummary:
    """Count verdicts per (row, criterion) and collect warnings about errored results."""
    primary = {c.name: (CATALOG[c.evaluator].primary_metric if c.evaluator in CATALOG else None) for c in plan.criteria}
    pairs: dict[tuple[int, str], list[ResultRow]] = {}
    for r in rows:
        pairs.setdefault((r.row, r.criterion), []).append(r)
    per: dict[str, dict[str, int]] = {
        c.name: {"passed": 0, "failed": 0, "errored": 0, "no_verdict": 0} for c in plan.criteria
    }
    for (_, crit), group in pairs.items():
        counts = per.setdefault(crit, {"passed": 0, "failed": 0, "errored": 0, "no_verdict": 0})
        if any(r.error for r in group):
            counts["errored"] += 1
            continue
        chosen = [r for r in group if r.metric == primary.get(crit)] or group
        verdicts = [r.passed for r in chosen if r.passed is not None]
        if not verdicts:
            counts["no_verdict"] += 1
        elif all(verdicts):
            counts["passed"] += 1
        else:
            counts["failed"] += 1
    summary = RunSummary(
        run_dir=run_dir,
        backend=backend,
        rows=len(plan.items),
        criteria=[c.name for c in plan.criteria],
        results=len(rows),
        passed=sum(c["passed"] for c in per.values()),
        failed=sum(c["failed"] for c in per.values()),
        errored=sum(c["errored"] for c in per.values()),
        no_verdict=sum(c["no_verdict"] for c in per.values()),
        per_criterion=per,
    )
    if summary.errored:
        causes: dict[str, int] = {}
        for group in pairs.values():
            first = next((r.error for r in group if r.error), None)
            if first:
                key = first.split(":", 1)[0]
                causes[key] = causes.get(key, 0) + 1
        shown = ", ".join(f"{k} ×{v}" for k, v in sorted(causes.items(), key=lambda kv: -kv[1]))
        summary.warnings.append(
            f"{summary.errored} of {len(pairs)} (row, criterion) results ERRORED ({shown}); they are kept in "
            "results.jsonl with their cause and are not scores"
        )
    return summary


def read_results(run_dir: str | os.PathLike[str]) -> list[ResultRow]:
    """The ``ResultRow`` s of a run folder."""
    path = Path(run_dir) / RUN_FILES["results"]
    with open(path, "rb") as fh:
        return [ResultRow.model_validate(loads(line)) for line in fh if line.strip()]


def _jsonl(path: Path) -> list[dict[str, Any]]:
    with open(path, "rb") as fh:
        return [loads(line) for line in fh if line.strip()]


def load_plan(run_dir: str | os.PathLike[str]) -> Plan:
    """The plan saved in a run folder (``plan.json`` + ``items.jsonl`` + ``records.jsonl``)."""
    run_dir = Path(run_dir)
    path = run_dir / RUN_FILES["plan"]
    if not path.is_file():
        raise UsageError(f"{run_dir} is not a run folder: {RUN_FILES['plan']} is missing")
    data = loads(path.read_bytes())
    data["items"] = _jsonl(run_dir / RUN_FILES["items"])
    records = run_dir / RUN_FILES["records"]
    data["records"] = _jsonl(records) if records.is_file() else []
    return Plan.model_validate(data)


def _read_state(run_dir: Path) -> dict[str, Any] | None:
    path = run_dir / RUN_FILES["state"]
    if not path.is_file():
        return None
    return loads(path.read_bytes())


# the files a run writes once it has executed: stale after a reset
_OUTPUT_FILES = ("results", "manifest", "output_items")


# ---------------------------------------------------------------------------------------------------------------
def run_evaluation(
    plan: Plan,
    run_dir: str | os.PathLike[str],
    backend: Backend,
    *,
    resume: bool = False,
    force: bool = False,
    progress: ProgressCallback | None = None,
) -> RunSummary:
    """Execute ``plan`` on ``backend`` into ``run_dir``; resume an interrupted run; reuse a finished one.

    * ``resume``: ``run_dir`` must hold a ``state.json``; polling and collection continue without a second
      submission (the plan must be the same).
    * Without ``resume``, a ``run_dir`` whose state shows the same dataset and plan already ``completed`` is
      reused as is (no request sent) unless ``force``; one holding another or an unfinished run is refused
      unless ``force`` (which starts over).
    """
    run_dir = Path(run_dir)
    plan_hash = plan.fingerprint()
    identity = backend_identity(backend)
    state = _read_state(run_dir)
    same = state is not None and same_run(state, plan, backend.name, identity)
    if not force and state is not None and is_finished(state, run_dir, plan, backend.name, identity):
        rows = read_results(run_dir)
        summary = summarize(rows, plan, run_dir, backend.name)
        summary.reused = True
        _ids_into(summary, state or {})
        return summary
    if resume:
        if state is None:
            raise UsageError(f"nothing to resume in {run_dir}: no {RUN_FILES['state']}")
        if not same and not force:
            raise UsageError(
                f"{run_dir} holds a run of another plan, dataset or backend ({state.get('backend')}); "
                "resume with the same inputs, or use --force to start over"
            )
    elif state is not None and not force:
        what = "an unfinished run of this plan" if same else "a run of another plan or dataset"
        hint = f"--resume {run_dir} to continue it" if same else "another --out folder"
        raise UsageError(f"{run_dir} already holds {what}; use {hint}, or --force to submit again")
    reset = force or not resume or state is None
    if reset:
        state = None
    preflight = getattr(backend, "preflight", None)
    if callable(preflight):  # refuse a plan the backend cannot run before anything is written
        preflight(plan)

    started = time.monotonic()
    state = state or {
        "backend": backend.name,
        "backend_identity": identity,
        "plan_sha256": plan_hash,
        "dataset_sha256": plan.dataset_sha256,
        "dataset_path": plan.dataset_path,
        "created_at": utc_now(),
        "status": "new",
    }
    ctx = RunContext(
        plan=plan,
        run_dir=run_dir,
        state=state,
        manifest={"timings": {"started_at": utc_now()}},
        progress=progress or no_progress,
        resume=resume,
    )
    run_dir.mkdir(parents=True, exist_ok=True)
    if reset:  # a new run: no result of an earlier one may sit beside it, even if this one fails
        for key in _OUTPUT_FILES:
            (run_dir / RUN_FILES[key]).unlink(missing_ok=True)
    if reset or not (run_dir / RUN_FILES["plan"]).is_file():
        write_json(run_dir / RUN_FILES["plan"], plan.model_dump(mode="json", exclude={"items", "records"}))
        write_jsonl(run_dir / RUN_FILES["items"], plan.items)
        write_jsonl(run_dir / RUN_FILES["records"], plan.records)
    ctx.save_state()

    rows = backend.execute(ctx)
    write_jsonl(run_dir / RUN_FILES["results"], (r.model_dump(mode="json") for r in rows))
    state["status"] = "completed"
    state["finished_at"] = utc_now()
    ctx.save_state()

    summary = summarize(rows, plan, run_dir, backend.name)
    _ids_into(summary, state)
    summary.report_url = ctx.manifest.get("report_url")
    timings = ctx.manifest.setdefault("timings", {})
    timings["finished_at"] = utc_now()
    timings["total_seconds"] = round(time.monotonic() - started, 3)
    manifest = {
        "tool": "foundry-bridge",
        "tool_version": __version__,
        "python": sys.version.split()[0],
        "backend": backend.name,
        "status": "completed",
        "plan_name": plan.name,
        "plan_sha256": plan_hash,
        "dataset_path": plan.dataset_path,
        "dataset_sha256": plan.dataset_sha256,
        "mapping_path": plan.mapping_path,
        "criteria": [{"name": c.name, "evaluator": c.evaluator, "init": c.init} for c in plan.criteria],
        "rows": len(plan.items),
        "results": len(rows),
        "verdicts": {
            "passed": summary.passed,
            "failed": summary.failed,
            "errored": summary.errored,
            "no_verdict": summary.no_verdict,
        },
        "per_criterion": summary.per_criterion,
        "warnings": summary.warnings,
        "resumed": resume,
        **ctx.manifest,
    }
    manifest.setdefault("eval_id", state.get("eval_id"))
    manifest.setdefault("run_ids", [r.get("run_id") for r in state.get("runs", [])])
    manifest.setdefault("report_url", None)
    manifest.setdefault("evaluators", state.get("evaluators", []))
    write_json(run_dir / RUN_FILES["manifest"], manifest)
    return summary


def backend_identity(backend: Backend) -> dict[str, Any]:
    """The backend's ``identity`` (endpoint, judge model), JSON-normalized; {} for backends without one."""
    identity = getattr(backend, "identity", None)
    return loads(dumps(identity)) if isinstance(identity, dict) else {}


def same_run(state: dict[str, Any], plan: Plan, backend: str, identity: dict[str, Any]) -> bool:
    """Does ``state`` describe a run of this plan, dataset and backend (same endpoint / judge)?"""
    return (
        state.get("plan_sha256") == plan.fingerprint()
        and state.get("dataset_sha256") == plan.dataset_sha256
        and state.get("backend") == backend
        and state.get("backend_identity", {}) == identity
    )


def is_finished(state: dict[str, Any], run_dir: Path, plan: Plan, backend: str, identity: dict[str, Any]) -> bool:
    """Does ``run_dir`` (whose ``state.json`` is ``state``) hold a completed run of this plan, ready to reuse?"""
    return (
        state.get("status") == "completed"
        and same_run(state, plan, backend, identity)
        and (run_dir / RUN_FILES["results"]).is_file()
    )


def _ids_into(summary: RunSummary, state: dict[str, Any]) -> None:
    summary.eval_id = state.get("eval_id")
    summary.run_ids = [r["run_id"] for r in state.get("runs", []) if r.get("run_id")]
    urls = [r.get("report_url") for r in state.get("runs", []) if r.get("report_url")]
    summary.report_url = urls[0] if len(urls) == 1 else summary.report_url


# ---------------------------------------------------------------------------------------------------------------
_FOUNDRY_OPTIONS = {"inline_max_bytes", "max_rows_per_run", "page_size", "run_timeout"}
_CLIENT_OPTIONS = {"api_version", "max_retries", "sleep", "poll_interval", "max_poll_interval", "retry_policy"}
_LOCAL_OPTIONS = {
    "judge_endpoint",
    "judge_model",
    "cache_dir",
    "use_cache",
    "cache_ttl",
    "concurrency",
    "api_key_env",
    "azure",
    "api_version",
    "timeout",
    "credential",
}


def _split(options: dict[str, Any], allowed: set[str], backend: str) -> tuple[dict[str, Any], dict[str, Any]]:
    unknown = set(options) - allowed
    if unknown:
        raise UsageError(f"option(s) {', '.join(sorted(unknown))} do not apply to the {backend} backend")
    fb = {k: v for k, v in options.items() if k in _FOUNDRY_OPTIONS}
    cl = {k: v for k, v in options.items() if k in _CLIENT_OPTIONS}
    return fb, cl


def _capped_sleep(cap: float) -> Callable[[float], None]:
    def sleep(seconds: float) -> None:
        time.sleep(min(seconds, cap))

    return sleep


def get_backend(name: str, **options: Any) -> Backend:
    """Build a backend. ``None`` options are ignored.

    * ``cloud``: ``endpoint`` (else ``$AZURE_AI_PROJECT_ENDPOINT``), ``credential`` (else
      ``DefaultAzureCredential``), client options (``api_version``, ``max_retries``, ``poll_interval``, ...) and
      backend options (``inline_max_bytes``, ``max_rows_per_run``, ``page_size``, ``run_timeout``).
    * ``mock``: the same, over ``FoundryEmulator(...).transport()`` with a static fake token; pass
      ``emulator=`` to reuse one (its store lives in memory), or ``faults=`` / ``polls_to_complete=`` /
      ``docret_shape=`` to build one. Waits are capped at 50 ms unless ``sleep=`` is given.
    * ``local``: ``foundry_bridge.local.LocalBackend(judge_endpoint=, judge_model=, cache_dir=, use_cache=,
      cache_ttl=, concurrency=)``.
    """
    options = {k: v for k, v in options.items() if v is not None}
    if name == "cloud":
        from .foundry import ENDPOINT_ENV, FoundryBackend, FoundryClient, default_credential

        endpoint = options.pop("endpoint", None) or os.environ.get(ENDPOINT_ENV)
        credential = options.pop("credential", None)
        fb, cl = _split(options, _FOUNDRY_OPTIONS | _CLIENT_OPTIONS, name)
        from .foundry import validate_endpoint

        endpoint = validate_endpoint(endpoint)  # before building a credential
        client = FoundryClient(endpoint, credential or default_credential(), **cl)
        return FoundryBackend(client, name="cloud", **fb)
    if name == "mock":
        from .foundry import FoundryBackend, FoundryClient, StaticTokenCredential

        emulator = options.pop("emulator", None)
        emu_kwargs = {k: options.pop(k) for k in ("faults", "polls_to_complete", "docret_shape") if k in options}
        endpoint = options.pop("endpoint", MOCK_ENDPOINT)
        credential = options.pop("credential", None) or StaticTokenCredential("mock-token")
        fb, cl = _split(options, _FOUNDRY_OPTIONS | _CLIENT_OPTIONS, name)
        if emulator is None:
            try:
                from .mock import FoundryEmulator
            except ImportError as exc:  # pragma: no cover - the emulator ships with the package
                raise BackendError(f"the Foundry emulator is not available: {exc}") from exc
            emulator = FoundryEmulator(**emu_kwargs)
        cl.setdefault("sleep", _capped_sleep(0.05))
        cl.setdefault("poll_interval", 0.0)
        client = FoundryClient(endpoint, credential, transport=emulator.transport(), **cl)
        backend = FoundryBackend(client, name="mock", **fb)
        backend.emulator = emulator
        return backend
    if name == "local":
        _split(options, _LOCAL_OPTIONS, name)
        try:
            from .local import LocalBackend  # type: ignore[attr-defined]
        except ImportError as exc:
            raise BackendError(f"the local backend is not available: {exc}") from exc
        return LocalBackend(**options)
    raise UsageError(f"unknown backend {name!r}; choose one of: {', '.join(BACKENDS)}")
