"""Run an evaluation plan on a backend and leave a complete run folder behind.

``prepare_run(plan, backend, out, resume=, force=)`` decides (reuse a finished run, resume an unfinished one, or
start anew; refuse a folder holding something else); ``execute_run(decision, plan, backend)`` writes the plan
and an initial ``state.json`` (through ``runfolder.RunFolder``), calls ``backend.execute(ctx)`` and streams the
rows it yields into ``results.jsonl`` (counting verdicts on the way: ``VerdictCounter``), then writes
``manifest.json``. The caller holds the folder's lock (``RunFolder.lock``) around both;
``run_evaluation`` is the two in one call, under the lock.
``get_backend("cloud" | "mock" | "local", **options)`` builds a backend; cloud and mock are the same
``FoundryBackend`` over the same ``FoundryClient`` — only the httpx transport and the credential differ.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from . import __version__
from ._io import dumps, loads
from .catalog import CATALOG
from .columns import QueryFacts, seal
from .errors import BackendError, UsageError
from .mapping.plan import Plan
from .results import RUN_FILES, ResultRow
from .runfolder import DamagedRunFolderError, Manifest, RunFolder, RunFolderError, RunState
from .runner_protocol import Backend, Capabilities, ProgressCallback, RunContext, no_progress, utc_now

__all__ = [
    "BACKENDS",
    "MOCK_ENDPOINT",
    "RunDecision",
    "RunSummary",
    "VerdictCounter",
    "backend_for_resume",
    "backend_identity",
    "choose_out",
    "default_out",
    "execute_run",
    "find_finished_twin",
    "get_backend",
    "load_plan",
    "prepare_run",
    "read_results",
    "run_evaluation",
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
_ZERO = {"passed": 0, "failed": 0, "errored": 0, "no_verdict": 0}


class VerdictCounter:
    """Verdicts per (row, criterion) pair, counted as result rows stream past in row order (the order every
    backend produces and ``results.jsonl`` holds): the rows of one dataset row are grouped while it lasts, so
    memory holds one row's results, never the run's. A pair is judged on the criterion's primary metric
    (``ndcg@3`` for document retrieval), or all its rows when none is the primary one; a pair with any errored
    metric counts as errored, one without any pass/fail as without verdict."""

    def __init__(self, plan: Plan) -> None:
        self.primary = {
            c.name: (CATALOG[c.evaluator].primary_metric if c.evaluator in CATALOG else None) for c in plan.criteria
        }
        self.per: dict[str, dict[str, int]] = {c.name: dict(_ZERO) for c in plan.criteria}
        self.causes: dict[str, int] = {}  # the first error's code of each errored pair
        self.results = 0
        self.pairs = 0
        self._row: int | None = None
        self._open: dict[str, list[ResultRow]] = {}

    def count(self, rows: Iterable[ResultRow]) -> Iterator[ResultRow]:
        """``rows`` passed through, each one counted."""
        for r in rows:
            self.results += 1
            if r.row != self._row:
                self._flush()
                self._row = r.row
            self._open.setdefault(r.criterion, []).append(r)
            yield r
        self._flush()

    def _flush(self) -> None:
        for crit, group in self._open.items():
            self.pairs += 1
            counts = self.per.setdefault(crit, dict(_ZERO))
            first = next((r.error for r in group if r.error), None)
            if first is not None:
                counts["errored"] += 1
                key = first.split(":", 1)[0]
                self.causes[key] = self.causes.get(key, 0) + 1
                continue
            chosen = [r for r in group if r.metric == self.primary.get(crit)] or group
            verdicts = [r.passed for r in chosen if r.passed is not None]
            counts["no_verdict" if not verdicts else "passed" if all(verdicts) else "failed"] += 1
        self._open = {}

    def summary(self, plan: Plan, run_dir: Path, backend: str) -> RunSummary:
        """The counts as a ``RunSummary``, with a warning naming the causes when any pair errored."""
        per = self.per
        summary = RunSummary(
            run_dir=run_dir,
            backend=backend,
            rows=len(plan.items),
            criteria=[c.name for c in plan.criteria],
            results=self.results,
            passed=sum(c["passed"] for c in per.values()),
            failed=sum(c["failed"] for c in per.values()),
            errored=sum(c["errored"] for c in per.values()),
            no_verdict=sum(c["no_verdict"] for c in per.values()),
            per_criterion=per,
        )
        if summary.errored:
            shown = ", ".join(f"{k} ×{v}" for k, v in sorted(self.causes.items(), key=lambda kv: -kv[1]))
            summary.warnings.append(
                f"{summary.errored} of {self.pairs} (row, criterion) results ERRORED ({shown}); they are kept in "
                "results.jsonl with their cause and are not scores"
            )
        return summary


def summarize(rows: Iterable[ResultRow], plan: Plan, run_dir: Path, backend: str) -> RunSummary:
    """Count verdicts per (row, criterion) of ``rows`` (in row order, streamed: see ``VerdictCounter``) and
    collect warnings about errored results."""
    counter = VerdictCounter(plan)
    for _ in counter.count(rows):
        pass
    return counter.summary(plan, run_dir, backend)


def read_results(run_dir: str | os.PathLike[str]) -> list[ResultRow]:
    """The ``ResultRow`` s of a run folder, as a list (``RunFolder.iter_results`` streams them)."""
    return list(RunFolder(run_dir).iter_results())


def load_plan(run_dir: str | os.PathLike[str]) -> Plan:
    """The plan saved in a run folder (``plan.json`` + ``items.jsonl`` + ``records.jsonl``)."""
    return RunFolder(run_dir).read_plan()


# ---------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RunDecision:
    """What ``prepare_run`` decided: ``reuse`` a finished run as is, ``resume`` an unfinished one from its state,
    or start a ``new`` run (the folder's earlier outputs are removed when it starts)."""

    action: Literal["reuse", "resume", "new"]
    folder: RunFolder
    state: RunState | None = None  # the finished state (reuse) or the one to continue from (resume)
    resume: bool = False  # --resume was asked for (recorded in the manifest)


def choose_out(
    plan: Plan,
    backend: Backend,
    out: str | os.PathLike[str] | None,
    *,
    force: bool = False,
    dataset: str | os.PathLike[str] | None = None,
) -> RunFolder:
    """The run folder: ``out``, else a finished run of the same dataset, plan and backend under ``runs/`` (unless
    ``force``), else a new ``runs/<dataset>-<backend>-<UTC stamp>``."""
    if out is None:
        if dataset is None:
            raise UsageError("give DATA (a JSONL file or TREC directory), or --resume RUN_DIR")
        twin = None if force else find_finished_twin(Path(dataset), plan, backend.name, backend_identity(backend))
        out = twin.path if twin is not None else default_out(Path(dataset), backend.name)
    return RunFolder(out)


def prepare_run(
    plan: Plan,
    backend: Backend,
    out: str | os.PathLike[str] | None,
    *,
    resume: bool = False,
    force: bool = False,
    dataset: str | os.PathLike[str] | None = None,
) -> RunDecision:
    """Decide where and how ``plan`` runs on ``backend``; raise ``UsageError`` when the folder forbids it.
    The caller holds the folder's lock (``RunFolder.lock``) from here to the end of the run.

    * ``out=None``: see ``choose_out``.
    * A folder whose state shows this plan ``completed`` is reused (unless ``force``) once its files are checked
      (``RunFolder.check_consistent``): a damaged one is collected again on ``resume``, else refused.
    * ``resume``: the folder must hold a ``state.json`` of the same inputs (or ``force`` starts over).
    * Otherwise a folder that holds another or an unfinished run is refused unless ``force`` (which also starts
      over from a ``state.json`` too damaged to read) — but an unfinished run of this plan that created nothing on
      the service (``state.json`` names no eval, run or dataset: the credential failed, say) is started again.
    """
    identity = backend_identity(backend)
    folder = choose_out(plan, backend, out, force=force, dataset=dataset)
    state = _read_state(folder, force=force)
    if not force and folder.is_finished(state, plan, backend.name, identity):
        try:
            folder.check_consistent(require_manifest=True)
        except DamagedRunFolderError:
            if not resume:
                raise
            return RunDecision("resume", folder, state, resume)  # collected again from the service
        return RunDecision("reuse", folder, state, resume)
    same = state is not None and state.same_run(plan, backend.name, identity)
    if resume:
        if state is None:
            raise UsageError(f"nothing to resume in {folder.path}: no {RUN_FILES['state']}")
        if not same and not force:
            raise UsageError(
                f"{folder.path} holds a run of another plan, dataset or backend ({state.backend}); "
                "resume with the same inputs, or use --force to start over"
            )
    elif state is not None and not force and not (same and not state.service_ids()):
        what = "an unfinished run of this plan" if same else "a run of another plan or dataset"
        hint = f"--resume {folder.path} to continue it" if same else "another --out folder"
        raise UsageError(f"{folder.path} already holds {what}; use {hint}, or --force to submit again")
    if resume and not force:
        return RunDecision("resume", folder, state, resume)
    return RunDecision("new", folder, None, resume)


def _read_state(folder: RunFolder, *, force: bool) -> RunState | None:
    """``state.json``; with ``force`` (start over) one too damaged to read is ignored."""
    try:
        return folder.read_state()
    except RunFolderError:
        if force:
            return None
        raise


def default_out(data: Path, backend: str) -> Path:
    """``runs/<dataset stem>-<backend>-<UTC stamp>``, never a folder that exists."""
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    stem = data.stem if data.is_file() else data.name
    out = Path("runs") / f"{stem}-{backend}-{stamp}"
    n = 1
    while out.exists():  # two runs in the same second: never land in the other's folder
        n += 1
        out = Path("runs") / f"{stem}-{backend}-{stamp}-{n}"
    return out


def find_finished_twin(data: Path, plan: Plan, backend: str, identity: dict[str, Any]) -> RunFolder | None:
    """The newest finished run folder under ``runs/`` of the same dataset, plan and backend (same identity);
    damaged folders are skipped."""
    stem = data.stem if data.is_file() else data.name
    base = Path("runs")
    if not base.is_dir():
        return None
    for path in sorted(base.glob(f"{stem}-{backend}-*"), reverse=True):
        folder = RunFolder(path)
        try:
            if folder.is_finished(folder.read_state(), plan, backend, identity):
                folder.check_consistent(require_manifest=True)
                return folder
        except RunFolderError:
            continue
    return None


def run_evaluation(
    plan: Plan,
    run_dir: str | os.PathLike[str],
    backend: Backend,
    *,
    resume: bool = False,
    force: bool = False,
    progress: ProgressCallback | None = None,
) -> RunSummary:
    """Execute ``plan`` on ``backend`` into ``run_dir``; resume an interrupted run; reuse a finished one
    (``prepare_run`` decides, ``execute_run`` carries it out), holding the folder's lock throughout."""
    with RunFolder(run_dir).lock():
        return execute_run(prepare_run(plan, backend, run_dir, resume=resume, force=force), plan, backend, progress)


def execute_run(
    decision: RunDecision,
    plan: Plan,
    backend: Backend,
    progress: ProgressCallback | None = None,
    notify: Callable[[str], None] | None = None,
    facts: QueryFacts | None = None,
) -> RunSummary:
    """Carry out ``decision``: reuse (no request sent), or preflight, write the plan, execute while the result
    rows stream into ``results.jsonl`` (counted on the way), then the final state, the manifest and the run's
    columns (``columns.seal``; ``facts``: the per-query facts computed while the plan's records were read,
    ``columns.prepare_facts``, else they are computed from ``records.jsonl``). ``notify`` gets one line per
    service id as it is created."""
    folder = decision.folder
    if decision.action == "reuse":
        summary = summarize(folder.iter_results(), plan, folder.path, backend.name)
        summary.reused = True
        _ids_into(summary, decision.state)
        return summary
    backend.preflight(plan)  # refuse a plan the backend cannot run before anything is written
    started = time.monotonic()
    state = decision.state or RunState.for_plan(plan, backend.name, backend_identity(backend), utc_now())
    if decision.action == "new":  # no result of an earlier run may sit beside this one, even if it fails
        folder.reset()
    if decision.action == "new" or not folder.has_plan():
        folder.write_plan(plan)
    ctx = RunContext(plan, folder.path, state, {"timings": {"started_at": utc_now()}}, progress or no_progress)
    ctx.resume = decision.action == "resume"
    if notify is not None:
        ctx.notify = notify
    ctx.save_state()
    counter = VerdictCounter(plan)
    folder.write_results(counter.count(backend.execute(ctx)))  # streamed: appended as the backend produces them
    state.status = "completed"
    state.finished_at = utc_now()
    ctx.save_state()
    summary = counter.summary(plan, folder.path, backend.name)
    _ids_into(summary, state)
    summary.report_url = ctx.manifest.get("report_url")
    folder.write_manifest(_manifest(plan, backend, summary, state, ctx.manifest, started, decision.resume))
    seal(folder, plan=plan, facts=facts)  # the results and per-query facts as columns: what reports read
    return summary


def _manifest(
    plan: Plan,
    backend: Backend,
    summary: RunSummary,
    state: RunState,
    extra: dict[str, Any],
    started: float,
    resumed: bool,
) -> Manifest:
    """``manifest.json``: the runner's provenance, then what the backend recorded (``extra``) on top."""
    timings = extra.setdefault("timings", {})
    timings["finished_at"] = utc_now()
    timings["total_seconds"] = round(time.monotonic() - started, 3)
    fields: dict[str, Any] = {
        "tool": "foundry-bridge",
        "tool_version": __version__,
        "python": sys.version.split()[0],
        "backend": backend.name,
        "status": "completed",
        "plan_name": plan.name,
        "plan_sha256": state.plan_sha256,
        "dataset_path": plan.dataset_path,
        "dataset_sha256": plan.dataset_sha256,
        "mapping_path": plan.mapping_path,
        "criteria": [{"name": c.name, "evaluator": c.evaluator, "init": c.init} for c in plan.criteria],
        "rows": len(plan.items),
        "results": summary.results,
        "verdicts": {
            "passed": summary.passed,
            "failed": summary.failed,
            "errored": summary.errored,
            "no_verdict": summary.no_verdict,
        },
        "per_criterion": summary.per_criterion,
        "warnings": summary.warnings,
        "resumed": resumed,
        **extra,
    }
    fields.setdefault("eval_id", state.eval_id)
    fields.setdefault("run_ids", [r.run_id for r in state.runs or []])
    fields.setdefault("report_url", None)
    fields.setdefault("evaluators", state.evaluators or [])
    return Manifest.model_validate(fields)


def backend_identity(backend: Backend) -> dict[str, Any]:
    """The backend's ``identity`` (endpoint, judge model), JSON-normalized."""
    identity: dict[str, Any] = loads(dumps(backend.identity))
    return identity


def _ids_into(summary: RunSummary, state: RunState | None) -> None:
    if state is None:
        return
    summary.eval_id = state.eval_id
    summary.run_ids = state.run_ids
    urls = [r.report_url for r in state.runs or [] if r.report_url]
    summary.report_url = urls[0] if len(urls) == 1 else summary.report_url


def backend_for_resume(folder: RunFolder, requested: str | None, *, force: bool = False) -> tuple[str, RunState | None]:
    """The backend that ran ``folder`` (``requested`` must agree unless ``force``) and its state."""
    state = folder.read_state()
    recorded = state.backend if state is not None else None
    if requested is not None and recorded and requested != recorded and not force:
        raise UsageError(f"{folder.path} was run with --backend {recorded}, not {requested}")
    backend = requested or recorded
    if backend is None:
        raise UsageError(f"cannot tell which backend ran {folder.path}; pass --backend")
    return backend, state


# ---------------------------------------------------------------------------------------------------------------
_FOUNDRY_OPTIONS = {"inline_max_bytes", "max_rows_per_run", "page_size", "run_timeout", "eval_id"}
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
    "judge_timeout",
    "judge_retries",
    "give_up_after",
    "repeat",
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


def _mock_backend(options: dict[str, Any]) -> Backend:
    """The cloud code path over the emulator's transport, with a static fake token; the emulator's setup is part
    of the backend's identity, and its runs live in this process's memory."""
    from .foundry import FoundryBackend, FoundryClient, StaticTokenCredential
    from .mock import FoundryEmulator

    emulator = options.pop("emulator", None)
    emu_kwargs = {k: options.pop(k) for k in ("faults", "polls_to_complete", "docret_shape") if k in options}
    endpoint = options.pop("endpoint", MOCK_ENDPOINT)
    credential = options.pop("credential", None) or StaticTokenCredential("mock-token")
    fb, cl = _split(options, _FOUNDRY_OPTIONS | _CLIENT_OPTIONS, "mock")
    if emulator is None:  # nobody reads this one's call log: recording it would keep every request and response
        emulator = FoundryEmulator(record_calls=False, **emu_kwargs)
    cl.setdefault("sleep", _capped_sleep(0.05))
    cl.setdefault("poll_interval", 0.0)
    client = FoundryClient(endpoint, credential, transport=emulator.transport(), **cl)
    setup = {"emulator": emulator.setup()}
    capabilities = Capabilities(resume_elsewhere=False)
    return FoundryBackend(client, name="mock", setup=setup, capabilities=capabilities, judges_deployed=False, **fb)


def get_backend(name: str, **options: Any) -> Backend:
    """Build a backend. ``None`` options are ignored.

    * ``cloud``: ``endpoint`` (else ``$AZURE_AI_PROJECT_ENDPOINT``), ``credential`` (else
      ``DefaultAzureCredential``), client options (``api_version``, ``max_retries``, ``poll_interval``, ...) and
      backend options (``inline_max_bytes``, ``max_rows_per_run``, ``page_size``, ``run_timeout``, ``eval_id``: add
      the runs to that existing eval, whose testing criteria must be the plan's, instead of creating one).
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
        return _mock_backend(options)
    if name == "local":
        _split(options, _LOCAL_OPTIONS, name)
        try:
            from .local import LocalBackend
        except ImportError as exc:
            raise BackendError(f"the local backend is not available: {exc}") from exc
        backend: Backend = LocalBackend(**options)
        return backend
    raise UsageError(f"unknown backend {name!r}; choose one of: {', '.join(BACKENDS)}")
