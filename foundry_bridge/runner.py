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
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from . import __version__
from ._io import dumps, loads
from .catalog import CATALOG
from .dataset.frames import Table
from .errors import BackendError, TwoWay, UsageError, describe_os_error, option, spelled
from .mapping.model import Mapping
from .mapping.plan import Plan
from .results import RUN_FILES, ResultRow
from .runfolder import DamagedRunFolderError, Manifest, RunFolder, RunFolderError, RunState
from .runner_protocol import Backend, Capabilities, ProgressCallback, RunContext, no_progress, utc_now

__all__ = [
    "BACKENDS",
    "MOCK_ENDPOINT",
    "RunDecision",
    "RunInterrupted",
    "RunSummary",
    "VerdictCounter",
    "backend_for_resume",
    "backend_identity",
    "choose_out",
    "default_out",
    "execute_run",
    "find_finished_twin",
    "get_backend",
    "plan_evaluation",
    "prepare_run",
    "read_results",
    "run_evaluation",
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
    retried: int = 0  # errored judgements of the finished run asked again (the others kept)
    warnings: list[str] = field(default_factory=list)
    repeat_dirs: list[Path] = field(default_factory=list)  # OUT.repeat2 … OUT.repeatK of ``repeats=K``

    def text(self) -> str:
        """A few human lines."""
        reused = " (reused: same dataset and plan already finished)" if self.reused else ""
        if self.retried:
            reused = f" (finished before: {self.retried} errored judgement(s) asked again, the others kept)"
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
        elif self.backend == "mock":
            lines.append(f"report: an emulator run has no Foundry portal page; `foundry-bridge report {self.run_dir}`")
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
        criteria = [c.name for c in plan.criteria]
        summary = RunSummary(run_dir, backend, len(plan.items), criteria, self.results, per_criterion=self.per)
        for k in _ZERO:
            setattr(summary, k, sum(c[k] for c in self.per.values()))
        if summary.errored:
            shown = ", ".join(f"{k} ×{v}" for k, v in sorted(self.causes.items(), key=lambda kv: -kv[1]))
            summary.warnings.append(
                f"{summary.errored} of {self.pairs} (row, criterion) results ERRORED ({shown}); they are kept in "
                "results.jsonl with their cause and are not scores"
            )
        return summary


def read_results(run_dir: str | os.PathLike[str]) -> list[ResultRow]:
    """The ``ResultRow`` s of a run folder, as a list (``RunFolder.iter_results`` streams them)."""
    return list(RunFolder(run_dir).iter_results())


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
            raise UsageError(
                spelled(
                    "give out= (the run folder): only data read from a path has a default folder under runs/",
                    "give DATA (a JSONL file or TREC directory), or --resume RUN_DIR",
                )
            )
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
    try:
        state = folder.read_state()
    except RunFolderError:
        if not force:  # with force (start over), a state too damaged to read is ignored
            raise
        state = None
    if not force and folder.is_finished(state, plan, backend.name, identity):
        try:
            folder.check_consistent(require_manifest=True)
        except DamagedRunFolderError:
            if not resume:
                raise
            return RunDecision("resume", folder, state, resume)  # collected again from the service
        if backend.capabilities.judges_here and _errored_judgements(folder):
            return RunDecision("resume", folder, state, resume)  # the errored judgements are asked again
        return RunDecision("reuse", folder, state, resume)
    same = state is not None and state.same_run(plan, backend.name, identity)
    if resume:
        if state is None:
            raise _nothing_to_resume(folder)
        if not same and not force:
            raise UsageError(
                f"{folder.path} holds a run of another plan, dataset or backend ({state.backend}); "
                f"resume with the same inputs, or use {option('force')} to start over"
            )
    elif state is not None and not force and not (same and not state.service_ids()):
        what = "an unfinished run of this plan" if same else "a run of another plan or dataset"
        hint = (
            f"{spelled('resume=True', f'--resume {folder.path}')} to continue it" if same else f"another {_OUT} folder"
        )
        raise UsageError(f"{folder.path} already holds {what}; use {hint}, or {option('force')} to submit again")
    if resume and not force:
        return RunDecision("resume", folder, state, resume)
    return RunDecision("new", folder, None, resume)


def _nothing_to_resume(folder: RunFolder) -> UsageError:
    """The refusal to resume ``folder``, with the way to start over: it has no ``state.json``, or does not exist at
    all (a run stopped before it wrote anything)."""
    why = "" if folder.path.is_dir() else " (the folder does not exist: the run stopped before it wrote anything)"
    return UsageError(
        f"nothing to resume in {folder.path}: no {RUN_FILES['state']}{why}; run again with "
        f"{_start_over(folder.path)} to start over"
    )


def _errored_judgements(folder: RunFolder) -> int:
    """How many results of the finished run in ``folder`` are judge calls that errored (a timeout, an outage, an
    unreadable answer: the local backend's ``local.judge_errors``), which running again asks the judge for."""
    manifest = folder.read_manifest()
    local = (manifest.model_extra or {}).get("local") if manifest is not None else None
    errors = local.get("judge_errors") if isinstance(local, dict) else None
    return errors if isinstance(errors, int) and not isinstance(errors, bool) else 0


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


def plan_evaluation(
    data: str | os.PathLike[str] | Table,
    mapping: Mapping | str | os.PathLike[str] | None = None,
    *,
    name: str | None = None,
    skip_validation: bool = False,
    command: str = "plan",
) -> Plan:
    """The plan of ``data`` (a JSONL file, a TREC/BEIR directory, a table file or a pandas/polars/pyarrow table)
    under ``mapping`` (a file, a loaded ``Mapping``, or None: the packaged default), read through the validation
    gate (``validate.gated_records``): ``ValidationFailed`` lists every error once the data is read, before
    anything is written or sent. ``skip_validation`` reads it unchecked after a ``ValidationSkipped`` warning."""
    from .mapping import build_plan, load_mapping
    from .validate import gated_records

    model = mapping if isinstance(mapping, Mapping) else load_mapping(mapping)
    mapping_path = None if isinstance(mapping, Mapping) else mapping
    gate_mapping = model if mapping_path is None else mapping_path  # a file names itself in the problems
    records = gated_records(data, gate_mapping, command=command, skip_validation=skip_validation)
    dataset = data if isinstance(data, str | os.PathLike) else None
    return build_plan(records, model, name=name, dataset_path=dataset, mapping_path=mapping_path)


class RunInterrupted(TwoWay, KeyboardInterrupt):
    """Ctrl-C during a run, with what the interrupted run left and how to go on. Still a ``KeyboardInterrupt``."""


def run_evaluation(
    data: Plan | str | os.PathLike[str] | Table | None = None,
    out: str | os.PathLike[str] | None = None,
    backend: Backend | str | None = None,
    *,
    mapping: Mapping | str | os.PathLike[str] | None = None,
    resume: bool = False,
    force: bool = False,
    repeats: int = 1,
    skip_validation: bool = False,
    progress: ProgressCallback | None = None,
    notify: Callable[[str], None] | None = None,
    before_run: Callable[[Plan, Backend], None] | None = None,
    **backend_options: Any,
) -> RunSummary:
    """Run an evaluation into the run folder ``out`` and return its summary; what ``foundry-bridge run`` does.

    * ``data``: a ``Plan``, or data to plan (``plan_evaluation``: through the validation gate, under ``mapping``,
      unless ``skip_validation``); None with ``resume`` continues the plan saved in ``out``.
    * ``out``: the run folder; None: a finished run of the same dataset, plan and backend under ``runs/`` (reused
      unless ``force``), else a new ``runs/<dataset>-<backend>-<UTC stamp>`` (a path ``data`` is needed for both).
    * ``backend``: a ``Backend``, or ``"mock"`` (the default), ``"cloud"`` or ``"local"`` built by ``get_backend``
      with ``backend_options`` (``judge_model=``, ``faults=``, ``eval_id=``, ...); on ``resume`` the backend,
      endpoint and eval the run was started with.
    * The folder's lock is held from its first read to the end; ``prepare_run`` decides (reuse a finished run,
      resume, start anew, or refuse a folder holding something else unless ``force``); ``execute_run`` runs it.
    * ``repeats`` K > 1 (a new local run): the judges judge every row K times, into ``out``, ``out.repeat2`` …
      ``out.repeatK`` (the repeat index in the cache key); the summary lists them in ``repeat_dirs``.
    * ``progress(stage, done, total)`` as the run advances; ``notify(line)`` for each service id created;
      ``before_run(plan, backend)`` once the decision is made, before anything is sent.

    Errors are typed (``UsageError``, ``ValidationFailed``, ``BackendError``, ``RunFailedError``; Ctrl-C is a
    ``RunInterrupted``) and say how to continue in Python's words (``force=True``); their ``cli_text()`` says it in
    the command line's (``--force``).
    """
    with ExitStack() as owned:  # the run folder's lock, held from the first read of the folder to the end
        if resume:
            if out is None:
                raise UsageError(f"{option('resume')} continues the run in a folder: give its {_OUT}")
            if not RunFolder(out).path.is_dir():  # said before the lock, which would create the folder
                raise _nothing_to_resume(RunFolder(out))
            owned.enter_context(RunFolder(out).lock())
            backend, backend_options = _resumed_backend(RunFolder(out), backend, backend_options, force=force)
        plan = _plan_of(data, out, mapping, resume=resume, skip_validation=skip_validation)
        chosen = _backend_of(backend, backend_options, repeats=repeats, resume=resume)
        dataset = data if isinstance(data, str | os.PathLike) else plan.dataset_path
        folder = choose_out(plan, chosen, out, force=force, dataset=dataset)
        if not resume:
            owned.enter_context(folder.lock())
        elif not force:
            _refuse_resume_elsewhere(folder, plan, chosen)
        decision = prepare_run(plan, chosen, folder.path, resume=resume, force=force)
        if before_run is not None:
            before_run(plan, chosen)
        summary = _execute(decision, plan, chosen, progress, notify)
        for i in range(2, repeats + 1):
            again = get_backend("local", **backend_options, repeat=i)
            folder = RunFolder(summary.run_dir.with_name(f"{summary.run_dir.name}.repeat{i}"))
            with folder.lock():
                decision = prepare_run(plan, again, folder.path, resume=False, force=force)
                summary.repeat_dirs.append(_execute(decision, plan, again, progress, notify).run_dir)
    return summary


_OUT = spelled("out=", "--out")


def _plan_of(
    data: Plan | str | os.PathLike[str] | Table | None,
    out: str | os.PathLike[str] | None,
    mapping: Mapping | str | os.PathLike[str] | None,
    *,
    resume: bool,
    skip_validation: bool,
) -> Plan:
    """The plan to run: ``data`` itself, the plan of ``data`` through the gate, or on ``resume`` the folder's."""
    if isinstance(data, Plan):
        return data
    if data is not None:
        return plan_evaluation(data, mapping, skip_validation=skip_validation, command="run")
    if resume and out is not None:
        return RunFolder(out).read_plan()
    what = spelled("data (a file, a directory, a table or a Plan)", "DATA (a JSONL file or TREC directory)")
    raise UsageError(f"give {what}, or {option('resume', cli='--resume RUN_DIR')}" + spelled(" with out=", ""))


def _backend_of(backend: Backend | str | None, options: dict[str, Any], *, repeats: int, resume: bool) -> Backend:
    """``backend`` built (a name: ``get_backend(name, **options)``), after the checks of the options that only
    one backend takes."""
    name = backend if isinstance(backend, str) else "mock" if backend is None else backend.name
    if options.get("faults") is not None and name != "mock":
        raise UsageError(f"{spelled('faults=', '--mock-fault')} only applies to {option('backend', 'mock')}")
    if repeats > 1 and (name != "local" or resume):
        raise UsageError(
            f"{spelled('repeats=', '--repeats')} applies to a new {option('backend', 'local')} run "
            "(judges here, answers cached)"
        )
    if backend is None or isinstance(backend, str):
        return get_backend(name, **options)
    if options:
        raise UsageError(f"option(s) {', '.join(sorted(options))} are for a backend given by name, not a Backend")
    return backend


def _resumed_backend(
    folder: RunFolder, backend: Backend | str | None, options: dict[str, Any], *, force: bool
) -> tuple[Backend | str, dict[str, Any]]:
    """On ``resume``: the backend that ran ``folder`` (``backend`` must agree unless ``force``), and for a cloud
    or mock run the endpoint and eval it was started with (so its identity matches and no new eval is made)."""
    if not (backend is None or isinstance(backend, str)):  # built by the caller: prepare_run checks its identity
        return backend, options
    name, state = backend_for_resume(folder, backend, force=force)
    options = dict(options)
    if name in ("cloud", "mock"):
        options["eval_id"] = _resumed_eval_id(folder, options.get("eval_id"), state)
    if name == "cloud" and state is not None:  # the identity holds it from the start, before any request
        options["endpoint"] = options.get("endpoint") or state.endpoint or state.backend_identity.get("endpoint")
    return name, options


def _resumed_eval_id(folder: RunFolder, given: str | None, state: RunState | None) -> str | None:
    """The eval a resumed run was started with, which a different ``eval_id`` may not change."""
    recorded = state.backend_identity.get("eval_id") if state is not None else None
    if given and given != recorded:
        started = f"with {option('eval_id', recorded)}" if recorded else f"without {spelled('eval_id=', '--eval-id')}"
        raise UsageError(
            f"{folder.path} was started {started}: {option('resume')} continues it there; "
            f"drop {spelled('eval_id=', '--eval-id')}"
        )
    return recorded if isinstance(recorded, str) else None


def _refuse_resume_elsewhere(folder: RunFolder, plan: Plan, backend: Backend) -> None:
    """A run whose service state lived in the memory of another process (the emulator) cannot be resumed here: say
    so, rather than call it a run of another plan when only the emulator's setup (its faults) differs. (With the
    same setup the resume is tried: an emulator handed in may hold the run; one that does not answers 404, which
    ``_execute`` words as this same refusal.)"""
    state = folder.read_state()
    if backend.capabilities.resume_elsewhere or state is None or state.status == "completed":
        return
    if state.backend != backend.name or state.same_run(plan, backend.name, backend_identity(backend)):
        return
    raise _cannot_resume_here(folder, backend, state.status)


def _cannot_resume_here(folder: RunFolder, backend: Backend, status: str | None) -> UsageError:
    """The refusal to resume an emulator run whose evals and runs died with the process that started it."""
    return UsageError(
        f"{folder.path} holds an unfinished {backend.name} run (status {status!r}): the emulator's evals and "
        "runs lived in the memory of the process that started it, which has ended, so no other process can resume "
        f"it; run again with {_start_over(folder.path)} to start over"
    )


def _start_over(path: Path) -> str:
    return spelled(f"force=True, out={str(path)!r}", f"--force --out {path}")


def _resume_call(path: Path) -> str:
    return spelled(f"`run_evaluation(out={str(path)!r}, resume=True)`", f"`foundry-bridge run --resume {path}`")


def _execute(
    decision: RunDecision,
    plan: Plan,
    backend: Backend,
    progress: ProgressCallback | None,
    notify: Callable[[str], None] | None,
) -> RunSummary:
    """``execute_run``, each failure worded with how to continue."""
    from azure.core.exceptions import AzureError

    from .foundry import RunFailedError

    run_dir = decision.folder.path
    try:
        return execute_run(decision, plan, backend, progress, notify)
    except RunFailedError as exc:
        raise RunFailedError(
            f"{exc.template or exc}. Once the cause is fixed, {_resume_call(run_dir)} submits the failed part again",
            run=exc.run,
        ) from exc
    except AzureError as exc:
        if decision.resume and not backend.capabilities.resume_elsewhere and getattr(exc, "status_code", None) == 404:
            # an emulator that never held this run (its state died with the process that started it)
            state = decision.state
            raise _cannot_resume_here(decision.folder, backend, state.status if state else None) from None
        raise BackendError(f"{exc}; {_how_to_continue(decision.folder, backend)}") from exc
    except OSError as exc:  # a full disk or a permission failure once the service holds the run
        if not _saved_ids(decision.folder):
            raise
        raise BackendError(f"{describe_os_error(exc)}; {_how_to_continue(decision.folder, backend)}") from exc
    except KeyboardInterrupt as exc:
        raise RunInterrupted(_after_interrupt(backend, run_dir)) from exc


def _saved_ids(folder: RunFolder) -> list[tuple[str, str]]:
    """The service ids ``state.json`` records (none when it cannot be read: the error at hand matters more)."""
    try:
        state = folder.read_state()
    except Exception:
        return []
    return state.service_ids() if state is not None else []


def _how_to_continue(folder: RunFolder, backend: Backend) -> str:
    """What to do once the cause of a failure is fixed, truthfully: with service ids saved, resume (or start over,
    for a backend whose runs no other process can resume); with none, nothing was created on the service, so the
    same call starts the run again (``prepare_run`` does not refuse such a folder)."""
    if not _saved_ids(folder):
        return "nothing was created on the service: once the cause is fixed, " + spelled(
            "call `run_evaluation` again the same way", "run the same command again"
        )
    how = (
        f"{_resume_call(folder.path)} finishes the run without submitting again"
        if backend.capabilities.resume_elsewhere
        else f"run again with {_start_over(folder.path)} (a {backend.name} run cannot be resumed by another process)"
    )
    return f"the service ids are saved in {folder.file('state')}: once the cause is fixed, {how}"


def _after_interrupt(backend: Backend, run_dir: Path) -> str:
    """What an interrupted run left, truthfully for each backend."""
    if not backend.capabilities.resume_elsewhere:  # the emulator: its evals and runs die with this process
        return (
            f"This {backend.name} run lived in this process's memory and cannot be resumed; "
            f"run again with {_start_over(run_dir)} to start over"
        )
    if backend.capabilities.judges_here:  # results.jsonl is written at the end; answers are cached as they arrive
        judge = spelled("judge_* options", "--judge-* options")
        again = f"{_resume_call(run_dir).replace('`', '')} with the same {judge}"
        if backend.capabilities.caches_answers:
            return f"The judge answers received so far are cached: {again} judges the rest"
        return f"With {spelled('use_cache=False', '--no-cache')} nothing was kept: {again} judges every row again"
    return f"Nothing is lost: {_resume_call(run_dir).replace('`', '')}"


def execute_run(
    decision: RunDecision,
    plan: Plan,
    backend: Backend,
    progress: ProgressCallback | None = None,
    notify: Callable[[str], None] | None = None,
) -> RunSummary:
    """Carry out ``decision``: reuse (no request sent), or preflight, write the plan, execute while the result
    rows stream into ``results.jsonl`` (counted on the way), then the final state and the manifest. ``notify``
    gets one line per service id as it is created."""
    folder = decision.folder
    if decision.action == "reuse":
        counter = VerdictCounter(plan)
        deque(counter.count(folder.iter_results()), maxlen=0)
        summary = counter.summary(plan, folder.path, backend.name)
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
    if ctx.resume and folder.file("results").is_file():  # read while the new one is written beside it
        ctx.earlier = folder.iter_results()
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
    summary.retried = int(ctx.manifest.get("retried") or 0)
    folder.write_manifest(_manifest(plan, backend, summary, state, ctx.manifest, started, decision.resume))
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
        "verdicts": {k: getattr(summary, k) for k in _ZERO},
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
    """The backend that ran ``folder`` (``requested`` must agree unless ``force``) and its state; ``UsageError``
    with the way to start over when the folder holds nothing to resume."""
    state = folder.read_state() if folder.path.is_dir() else None
    if state is None:
        raise _nothing_to_resume(folder)
    recorded = state.backend
    if requested is not None and recorded and requested != recorded and not force:
        raise UsageError(f"{folder.path} was run with {option('backend', recorded)}, not {requested}")
    backend = requested or recorded
    if backend is None:
        raise UsageError(f"cannot tell which backend ran {folder.path}; pass {spelled('backend=', '--backend')}")
    return backend, state


# ---------------------------------------------------------------------------------------------------------------
_FOUNDRY_OPTIONS = {"inline_max_bytes", "max_rows_per_run", "page_size", "run_timeout", "eval_id"}
_CLIENT_OPTIONS = {"api_version", "max_retries", "sleep", "poll_interval", "max_poll_interval", "retry_policy"}


# the command line's spelling of a keyword, where it is not ``--`` + the keyword with dashes
_CLI_SPELLING = {"use_cache": "--no-cache", "faults": "--mock-fault"}


def _split(options: dict[str, Any], allowed: set[str], backend: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """``options`` for a cloud/mock backend as (backend, client) keywords; ``UsageError`` names any that ``backend``
    does not take (the one rule: ``run``'s command line relies on it to refuse an option of another backend)."""
    unknown = sorted(set(options) - allowed)
    if unknown:
        names = ", ".join(spelled(k, _CLI_SPELLING.get(k, "--" + k.replace("_", "-"))) for k in unknown)
        see = spelled("", " (`foundry-bridge run --help` lists the options of each backend)")
        raise UsageError(f"option(s) {names} do not apply to the {backend} backend{see}")
    fb = {k: v for k, v in options.items() if k in _FOUNDRY_OPTIONS}
    cl = {k: v for k, v in options.items() if k in _CLIENT_OPTIONS}
    return fb, cl


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
    cl.setdefault("sleep", lambda seconds: time.sleep(min(seconds, 0.05)))
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
        from .foundry import ENDPOINT_ENV, FoundryBackend, FoundryClient, default_credential, validate_endpoint

        endpoint = options.pop("endpoint", None) or os.environ.get(ENDPOINT_ENV)
        credential = options.pop("credential", None)
        fb, cl = _split(options, _FOUNDRY_OPTIONS | _CLIENT_OPTIONS, name)
        endpoint = validate_endpoint(endpoint)  # before building a credential
        client = FoundryClient(endpoint, credential or default_credential(), **cl)
        return FoundryBackend(client, name="cloud", **fb)
    if name == "mock":
        return _mock_backend(options)
    if name == "local":
        import inspect

        try:
            from .local import LocalBackend
        except ImportError as exc:
            raise BackendError(f"the local backend is not available: {exc}") from exc
        _split(options, set(inspect.signature(LocalBackend).parameters), name)
        backend: Backend = LocalBackend(**options)
        return backend
    raise UsageError(f"unknown backend {name!r}; choose one of: {', '.join(BACKENDS)}")
