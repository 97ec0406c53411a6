"""``foundry-bridge run``: submit a dataset's evaluation to a backend, wait, collect, write a run folder."""

from __future__ import annotations

import dataclasses
import logging
import sys
import time
import typing
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from ._options import Finite, run_estimate_option
from .validate import skip_validation_option

__all__ = ["command", "parse_faults", "progress_reporter"]

_STAGE_LABELS = {
    "submitted": "submitting runs",
    "uploading": "uploading data",
    "polling": "waiting for Foundry",
    "collecting": "collecting results",
    "judging": "judging",
}


# -- progress ----------------------------------------------------------------------------------------------------
@contextmanager
def progress_reporter(enabled: bool, *, terminal: bool = True) -> Iterator[Any]:
    """A ``progress(stage, done, total)`` callback on stderr: a bar on a terminal (rich if installed), a line every
    few seconds otherwise; a no-op when off. Stage ``errored`` (errored tasks so far) is shown with the others."""
    if not enabled:
        yield None
        return
    if not terminal:
        yield _plain_progress()
        return
    try:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
    except ImportError:
        yield _plain_progress()
        return
    tasks: dict[str, Any] = {}
    columns = (
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        errored = [0]

        def callback(stage: str, done: int, total: int | None) -> None:
            if stage == "errored":
                errored[0] = done
                return
            label = _STAGE_LABELS.get(stage, stage) + (f" ({errored[0]} errored)" if errored[0] else "")
            if stage == "polling":
                label = f"{label} (poll {done})"
            if stage not in tasks:
                tasks[stage] = bar.add_task(label, total=total)
            bar.update(tasks[stage], completed=done, total=total, description=label)

        yield callback


def _plain_progress(interval: float = 5.0) -> Any:
    """Lines such as ``judging 40/100, 3 errored, 12 s``: on a change of stage, at the end of one, and at most
    every ``interval`` seconds in between (backends report at least every second while they wait)."""
    started = time.monotonic()
    last_time, last_stage, errored = [0.0], [""], [0]

    def callback(stage: str, done: int, total: int | None) -> None:
        if stage == "errored":
            errored[0] = done
            return
        now = time.monotonic()
        if stage == last_stage[0] and now - last_time[0] < interval and (total is None or done < total):
            return
        last_time[0], last_stage[0] = now, stage
        suffix = f" {done}/{total}" if total else f" ({done})"
        errors = f", {errored[0]} errored" if errored[0] else ""
        click.echo(f"{_STAGE_LABELS.get(stage, stage)}{suffix}{errors}, {now - started:.0f} s", err=True)

    return callback


# -- --mock-fault ------------------------------------------------------------------------------------------------
def parse_faults(specs: tuple[str, ...]) -> Any:
    """``KEY=VALUE`` options → ``foundry_bridge.mock.FaultConfig`` (tuple fields take comma-separated values)."""
    from ..errors import UsageError

    if not specs:
        return None
    from ..mock import FaultConfig

    hints = typing.get_type_hints(FaultConfig)
    known = {f.name for f in dataclasses.fields(FaultConfig)}
    values: dict[str, Any] = {}
    for spec in specs:
        key, sep, raw = spec.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or key not in known:
            fields = ", ".join(sorted(known))
            raise UsageError(f"--mock-fault {spec!r}: expected FIELD=VALUE with FIELD one of {fields}")
        values[key] = _coerce(hints[key], raw.strip(), spec)
    try:
        return FaultConfig(**values)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"--mock-fault: {exc}") from exc


def _coerce(hint: Any, raw: str, spec: str) -> Any:
    from ..errors import UsageError

    text = str(hint)
    try:
        if "tuple" in text:
            parts = [p.strip() for p in raw.split(",") if p.strip()]
            return tuple(int(p) for p in parts) if "int" in text else tuple(parts)
        if hint is bool:
            return raw.lower() in {"1", "true", "yes", "on"}
        if hint is int:
            return int(raw)
        if hint is float:
            return float(raw)
    except ValueError as exc:
        raise UsageError(f"--mock-fault {spec!r}: {exc}") from exc
    return raw if raw.lower() not in {"none", ""} else None


# -- the command -------------------------------------------------------------------------------------------------
@click.command(name="run")
@click.argument("data", required=False, type=click.Path(exists=True, path_type=Path))
@click.option(
    "--mapping",
    "mapping_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Mapping file (YAML). Default: the packaged mappings/default.yaml.",
)
@click.option(
    "--backend",
    type=click.Choice(["cloud", "mock", "local"]),
    default=None,
    help="cloud: Microsoft Foundry; mock: the in-process emulator; local: azure-ai-evaluation judges.",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Run folder (default: runs/<dataset>-<backend>-<UTC timestamp>).",
)
@click.option(
    "--endpoint",
    default=None,
    help="Foundry project endpoint (default: $AZURE_AI_PROJECT_ENDPOINT); https only.",
)
@click.option(
    "--resume",
    "resume_dir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="Continue the run in this folder (poll and collect; never submits again).",
)
@click.option("--force", is_flag=True, help="Submit again even if the same dataset and plan already finished.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar and no summary, only the run folder.")
@click.option(
    "--max-rows-per-run", type=click.IntRange(1, 10**9), default=None, help="Split larger datasets into runs."
)
@click.option(
    "--inline-max-bytes",
    type=click.IntRange(0, 2**31 - 1),
    default=None,
    help="Rows up to this many JSON bytes go inline; larger runs are uploaded as a dataset.",
)
@click.option(
    "--eval-id",
    default=None,
    metavar="EVAL_ID|RUN_DIR",
    help="cloud/mock: add the run to this existing eval, or to a run folder's eval (its testing criteria must be "
    "this mapping's) instead of creating one, so `compare --foundry` can compare it with that eval's runs.",
)
@click.option("--judge-endpoint", default=None, help="local: OpenAI-compatible judge endpoint.")
@click.option("--judge-model", default=None, help="local: judge model / deployment name.")
@click.option("--no-cache", is_flag=True, help="local: do not read or write the judge response cache.")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path), default=None, help="local: cache dir.")
@click.option("--cache-ttl", type=Finite(0, 1e9, min_open=True), help="local: ignore entries older (s).")
@click.option("--concurrency", type=click.IntRange(1, 256), default=None, help="local: parallel judge calls.")
@click.option("--judge-timeout", type=Finite(0, 3600, min_open=True), help="local: s per request [60].")
@click.option("--judge-retries", type=click.IntRange(0, 20), help="local: retries of a failed judge request [3].")
@click.option(
    "--mock-fault",
    "mock_faults",
    multiple=True,
    metavar="KEY=VALUE",
    help="mock: inject a fault, e.g. rate_limit_every=3, server_error_every=5, failed_runs=0, errored_rows=1,4.",
)
@click.option(
    "--repeats",
    type=click.IntRange(1, 100),
    default=1,
    show_default=True,
    help="local: judge every row K times (the repeat index is part of the response-cache key, so a cached re-run "
    "is free): OUT, then OUT.repeat2 … OUT.repeatK; `report OUT --repeat-run OUT.repeat2 …` shows the judges' "
    "noise.",
)
@skip_validation_option
@run_estimate_option
def command(
    data: Path | None,
    mapping_path: Path | None,
    backend: str | None,
    out: Path | None,
    endpoint: str | None,
    resume_dir: Path | None,
    force: bool,
    quiet: bool,
    mock_faults: tuple[str, ...],
    repeats: int,
    **tuning: Any,
) -> None:
    """Run the evaluation of DATA (a JSONL file or a TREC directory) on a backend and write a run folder.

    The run folder holds plan.json, items.jsonl, records.jsonl, state.json (ids to resume from),
    output_items.jsonl (raw service output), results.jsonl (one normalized row per row × criterion × metric)
    and manifest.json (provenance). Ctrl-C loses nothing: `foundry-bridge run --resume DIR` continues polling and
    collecting without submitting again. Running the same dataset with the same plan again reuses the finished
    run unless --force. Errored results are kept as errors and reported loudly; a failed or canceled run exits
    non-zero with the service's message.
    """
    from contextlib import ExitStack

    from ..errors import UsageError
    from ..runfolder import RunFolder
    from ..runner import choose_out, get_backend, prepare_run
    from ._estimate import show_run_estimate

    facts = None  # the records' facts computed while the plan was built: removed once every run has sealed them
    try:
        with ExitStack() as owned:  # the run folder's lock, held from the first read of the folder to the end
            if resume_dir is not None:
                owned.enter_context(RunFolder(resume_dir).lock())
            name, plan, facts, out, endpoint = _inputs(data, mapping_path, backend, out, endpoint, resume_dir, force)
            if mock_faults and name != "mock":
                raise UsageError("--mock-fault only applies to --backend mock")
            if repeats > 1 and (name != "local" or resume_dir is not None):
                raise UsageError("--repeats applies to a new --backend local run (judges here, answers cached)")
            tuning["eval_id"] = _eval_id(name, tuning["eval_id"], resume_dir)
            runner_backend = get_backend(name, **_backend_options(name, endpoint, parse_faults(mock_faults), tuning))
            folder = choose_out(plan, runner_backend, out, force=force, dataset=data)
            if resume_dir is None:
                owned.enter_context(folder.lock())
            elif not force:
                _refuse_resume_elsewhere(folder, plan, runner_backend)
            decision = prepare_run(plan, runner_backend, folder.path, resume=resume_dir is not None, force=force)
            show_run_estimate(plan, runner_backend)
            summary = _execute(decision, plan, runner_backend, quiet=quiet, facts=facts)
        click.echo(str(summary.run_dir))
        if not quiet:
            click.echo(summary.text(), err=True)
        for warning in summary.warnings:
            click.secho(f"WARNING: {warning}", fg="red", bold=True, err=True)
        if repeats > 1:
            _repeat_runs(plan, Path(summary.run_dir), repeats, tuning, force=force, quiet=quiet, facts=facts)
    finally:
        if facts is not None:
            facts.remove()


def _repeat_runs(
    plan: Any, run_dir: Path, repeats: int, tuning: dict[str, Any], *, force: bool, quiet: bool, facts: Any = None
) -> None:
    """Repeats 2..K of a local run, each its own run folder beside the first (``RUN.repeatI``), judged with the
    repeat index in the cache key; prints the report command that reads them."""
    from ..runfolder import RunFolder
    from ..runner import get_backend, prepare_run

    folders = []
    for i in range(2, repeats + 1):
        backend = get_backend("local", **_backend_options("local", None, None, tuning), repeat=i)
        folder = RunFolder(run_dir.with_name(f"{run_dir.name}.repeat{i}"))
        with folder.lock():
            decision = prepare_run(plan, backend, folder.path, resume=False, force=force)
            summary = _execute(decision, plan, backend, quiet=quiet, facts=facts)
        click.echo(str(summary.run_dir))
        folders.append(str(summary.run_dir))
    click.echo(
        "judge noise: foundry-bridge report " + " ".join([str(run_dir), *(f"--repeat-run {f}" for f in folders)]),
        err=True,
    )


def _inputs(
    data: Path | None,
    mapping_path: Path | None,
    backend: str | None,
    out: Path | None,
    endpoint: str | None,
    resume_dir: Path | None,
    force: bool,
) -> tuple[str, Any, Any, Path | None, str | None]:
    """The backend's name, the plan, its records' facts (``_build``; None on a bare ``--resume``), the run folder
    (None: let ``prepare_run`` choose) and the endpoint; on
    ``--resume`` the backend and the cloud endpoint default to what ``state.json`` recorded."""
    from ..errors import UsageError
    from ..runfolder import RunFolder
    from ..runner import backend_for_resume

    if resume_dir is None:
        if data is None:
            raise UsageError("give DATA (a JSONL file or TREC directory), or --resume RUN_DIR")
        if backend is None:
            raise UsageError("choose a backend: --backend cloud|mock|local")
        return backend, *_build(data, mapping_path), out, endpoint
    if out is not None and out.resolve() != resume_dir.resolve():
        raise UsageError("--resume DIR and --out name different folders; give only --resume")
    folder = RunFolder(resume_dir)
    name, state = backend_for_resume(folder, backend, force=force)
    plan, facts = (folder.read_plan(), None) if data is None else _build(data, mapping_path)
    if name == "cloud" and state is not None:  # the identity holds it from the start, before any request
        endpoint = endpoint or state.endpoint or state.backend_identity.get("endpoint")
    return name, plan, facts, resume_dir, endpoint


def _eval_id(backend: str, given: str | None, resume_dir: Path | None) -> str | None:
    """``--eval-id`` for the backend: cloud and mock only; a run folder stands for its eval; on ``--resume``, the one
    the run was started with (so the backend's identity matches and no new eval is created), which a different
    ``--eval-id`` may not change."""
    from ..errors import UsageError
    from ..runfolder import RunFolder

    if given and backend == "local":
        raise UsageError("--eval-id applies to --backend cloud or mock (the local backend has no evals)")
    if given and Path(given).is_dir():  # a run folder: its eval
        made = RunFolder(given).read_state()
        if made is None or not made.eval_id:
            raise UsageError(f"--eval-id {given}: that run folder has no eval (state.json names none)")
        given = made.eval_id
    if resume_dir is None:
        return given
    state = RunFolder(resume_dir).read_state()
    recorded = state.backend_identity.get("eval_id") if state is not None else None
    if given and given != recorded:
        started = f"with --eval-id {recorded}" if recorded else "without --eval-id"
        raise UsageError(f"{resume_dir} was started {started}: --resume continues it there; drop --eval-id")
    return recorded if isinstance(recorded, str) else None


def _refuse_resume_elsewhere(folder: Any, plan: Any, backend: Any) -> None:
    """A run whose service state lived in the memory of another process (the emulator) cannot be resumed here: say
    so, rather than call it a run of another plan when only the emulator's setup (its faults) differs. (With the
    same setup the resume is tried, and the service's 404 is explained.)"""
    from ..errors import UsageError
    from ..runner import backend_identity

    state = folder.read_state()
    if backend.capabilities.resume_elsewhere or state is None or state.status == "completed":
        return
    if state.backend != backend.name or state.same_run(plan, backend.name, backend_identity(backend)):
        return
    raise UsageError(
        f"{folder.path} holds an unfinished {backend.name} run (status {state.status!r}): the emulator's evals and "
        "runs lived in the memory of the process that started it, which has ended, so no other process can resume "
        f"it; run again with --force --out {folder.path} to start over"
    )


_LOCAL_TUNING = (
    "judge_endpoint",
    "judge_model",
    "cache_dir",
    "cache_ttl",
    "concurrency",
    "judge_timeout",
    "judge_retries",
)


def _backend_options(backend: str, endpoint: str | None, faults: Any, tuning: dict[str, Any]) -> dict[str, Any]:
    """The command-line options that apply to ``backend``, as ``get_backend`` keywords."""
    if backend == "local":
        return {**{k: tuning[k] for k in _LOCAL_TUNING}, "use_cache": False if tuning["no_cache"] else None}
    options = {k: tuning[k] for k in ("max_rows_per_run", "inline_max_bytes", "eval_id")}
    options["endpoint"] = endpoint
    if backend == "mock":
        options["faults"] = faults
    return options


@contextmanager
def _warnings_to_stderr(enabled: bool) -> Iterator[None]:
    """Retries and other client warnings (already redacted) go to stderr while the block runs. azure-identity's
    own warning about a failed credential chain is not printed: its text is the error this command prints (with
    no handler of its own it would reach Python's last-resort handler, so the chain's list would show twice);
    an application that configures logging still receives it."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(logging.WARNING)
    handler.setFormatter(logging.Formatter("warning: %(message)s"))
    said_in_the_error = logging.NullHandler()
    if enabled:
        logging.getLogger("foundry_bridge").addHandler(handler)
    logging.getLogger("azure.identity").addHandler(said_in_the_error)
    try:
        yield
    finally:
        logging.getLogger("foundry_bridge").removeHandler(handler)
        logging.getLogger("azure.identity").removeHandler(said_in_the_error)


def _execute(decision: Any, plan: Any, backend: Any, *, quiet: bool, facts: Any = None) -> Any:
    """``execute_run`` with a progress bar, and each failure worded with how to continue."""
    from azure.core.exceptions import AzureError, ClientAuthenticationError

    from ..errors import BackendError
    from ..foundry import RunFailedError
    from ..runner import execute_run

    run_dir = decision.folder.path
    try:
        with _warnings_to_stderr(not quiet), progress_reporter(not quiet, terminal=sys.stderr.isatty()) as progress:
            return execute_run(decision, plan, backend, progress, notify=None if quiet else _notice, facts=facts)
    except RunFailedError as exc:
        raise RunFailedError(
            f"{exc}. Once the cause is fixed, `foundry-bridge run --resume {run_dir}` submits the failed part again",
            run=exc.run,
        ) from exc
    except AzureError as exc:
        hint = ""
        if decision.resume and not backend.capabilities.resume_elsewhere:
            hint = " (the emulator keeps its state in memory: a mock run cannot be resumed in another process)"
        if isinstance(exc, ClientAuthenticationError) and exc.status_code is None:  # the credential, not the service
            hint = " (sign in with `az login` or `azd auth login`, or set AZURE_CLIENT_ID and its secret)"
        raise BackendError(f"{exc}{hint}; {_how_to_continue(decision.folder, backend)}") from exc
    except OSError as exc:  # a full disk or a permission failure once the service holds the run
        raise _os_error_after_submission(exc, decision.folder, backend) from exc
    except KeyboardInterrupt:
        click.echo(f"Interrupted. {_after_interrupt(backend, run_dir)}", err=True)
        raise


def _saved_ids(folder: Any) -> list[tuple[str, str]]:
    """The service ids ``state.json`` records (none when it cannot be read: the error at hand matters more)."""
    try:
        state = folder.read_state()
    except Exception:
        return []
    return state.service_ids() if state is not None else []


def _how_to_continue(folder: Any, backend: Any) -> str:
    """What to do once the cause of a failure is fixed, truthfully: with service ids saved, resume (or start over,
    for a backend whose runs no other process can resume); with none, nothing was created on the service, so the
    same command starts the run again (``prepare_run`` does not refuse such a folder)."""
    if not _saved_ids(folder):
        return "nothing was created on the service: once the cause is fixed, run the same command again"
    how = (
        f"`foundry-bridge run --resume {folder.path}` finishes the run without submitting again"
        if backend.capabilities.resume_elsewhere
        else f"run again with --force --out {folder.path} (a {backend.name} run cannot be resumed by another process)"
    )
    return f"the service ids are saved in {folder.file('state')}: once the cause is fixed, {how}"


def _os_error_after_submission(exc: OSError, folder: Any, backend: Any) -> Exception:
    """``exc`` as it is, unless service ids are already saved: then it also says how to finish the run."""
    from ..errors import BackendError, describe_os_error

    if not _saved_ids(folder):
        return exc
    return BackendError(f"{describe_os_error(exc)}; {_how_to_continue(folder, backend)}")


def _notice(message: str) -> None:
    """A service id just created, on stderr (one line each; also kept in state.json)."""
    click.echo(message, err=True)


def _after_interrupt(backend: Any, run_dir: Path) -> str:
    """What an interrupted run left, truthfully for each backend."""
    if not backend.capabilities.resume_elsewhere:  # the emulator: its evals and runs die with this process
        return (
            f"This {backend.name} run lived in this process's memory and cannot be resumed; "
            f"run again with --force --out {run_dir} to start over"
        )
    if backend.capabilities.judges_here:  # results.jsonl is written at the end; answers are cached as they arrive
        again = f"foundry-bridge run --resume {run_dir} with the same --judge-* options"
        if backend.capabilities.caches_answers:
            return f"The judge answers received so far are cached: {again} judges the rest"
        return f"With --no-cache nothing was kept: {again} judges every row again"
    return f"Nothing is lost: foundry-bridge run --resume {run_dir}"


def _build(data: Path, mapping_path: Path | None) -> tuple[Any, Any]:
    """The plan of DATA under the mapping (new runs, and ``--resume DIR DATA``), and the per-query facts computed
    from the same records as they are read (``columns.prepare_facts``: the run seals them without reading
    records.jsonl again; the caller removes them); no run folder is touched yet."""
    from ..columns import prepare_facts
    from ..mapping import build_plan, load_mapping
    from .validate import records_through_gate

    mapping = load_mapping(mapping_path)
    records = records_through_gate(data, mapping_path, mapping, "run")  # the gate: before anything is written or sent
    records, facts = prepare_facts(records, mapping)
    try:
        return build_plan(records, mapping, dataset_path=data, mapping_path=mapping_path), facts
    except BaseException:
        facts.remove()
        raise
