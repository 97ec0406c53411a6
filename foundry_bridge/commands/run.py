"""``foundry-bridge run``: submit a dataset's evaluation to a backend, wait, collect, write a run folder."""

from __future__ import annotations

import dataclasses
import logging
import sys
import time
import typing
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

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
def progress_reporter(enabled: bool) -> Iterator[Any]:
    """A ``progress(stage, done, total)`` callback drawing on stderr (rich if installed); a no-op when off."""
    if not enabled:
        yield None
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

        def callback(stage: str, done: int, total: int | None) -> None:
            label = _STAGE_LABELS.get(stage, stage)
            if stage == "polling":
                label = f"{label} (poll {done})"
            if stage not in tasks:
                tasks[stage] = bar.add_task(label, total=total)
            bar.update(tasks[stage], completed=done, total=total, description=label)

        yield callback


def _plain_progress() -> Any:
    last = {"t": 0.0, "stage": ""}

    def callback(stage: str, done: int, total: int | None) -> None:
        now = time.monotonic()
        if stage == last["stage"] and now - last["t"] < 2.0 and (total is None or done < total):
            return
        last.update(t=now, stage=stage)
        suffix = f" {done}/{total}" if total else f" ({done})"
        click.echo(f"{_STAGE_LABELS.get(stage, stage)}{suffix}", err=True)

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
def _default_out(data: Path, backend: str) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    stem = data.stem if data.is_file() else data.name
    out = Path("runs") / f"{stem}-{backend}-{stamp}"
    n = 1
    while out.exists():  # two runs in the same second: never land in the other's folder
        n += 1
        out = Path("runs") / f"{stem}-{backend}-{stamp}-{n}"
    return out


def _finished_twin(data: Path, backend: Any, plan: Any) -> Path | None:
    """An earlier finished run folder under ``runs/`` of the same dataset, plan and backend (same identity)."""
    from .._io import loads
    from ..runner import backend_identity, is_finished

    stem = data.stem if data.is_file() else data.name
    base = Path("runs")
    if not base.is_dir():
        return None
    identity = backend_identity(backend)
    for folder in sorted(base.glob(f"{stem}-{backend.name}-*"), reverse=True):
        state_path = folder / "state.json"
        if not state_path.is_file():
            continue
        try:
            state = loads(state_path.read_bytes())
        except ValueError:
            continue
        if is_finished(state, folder, plan, backend.name, identity):
            return folder
    return None


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
@click.option("--max-rows-per-run", type=click.IntRange(min=1), default=None, help="Split larger datasets into runs.")
@click.option(
    "--inline-max-bytes",
    type=click.IntRange(min=0),
    default=None,
    help="Rows up to this many JSON bytes go inline; larger runs are uploaded as a dataset.",
)
@click.option("--judge-endpoint", default=None, help="local: OpenAI-compatible judge endpoint.")
@click.option("--judge-model", default=None, help="local: judge model / deployment name.")
@click.option("--no-cache", is_flag=True, help="local: do not read or write the judge response cache.")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path), default=None, help="local: cache dir.")
@click.option("--cache-ttl", type=float, default=None, help="local: cache entries older than SECONDS are ignored.")
@click.option("--concurrency", type=click.IntRange(min=1), default=None, help="local: parallel judge calls.")
@click.option(
    "--mock-fault",
    "mock_faults",
    multiple=True,
    metavar="KEY=VALUE",
    help="mock: inject a fault, e.g. rate_limit_every=3, server_error_every=5, failed_runs=0, errored_rows=1,4.",
)
@skip_validation_option
def command(
    data: Path | None,
    mapping_path: Path | None,
    backend: str | None,
    out: Path | None,
    endpoint: str | None,
    resume_dir: Path | None,
    force: bool,
    quiet: bool,
    max_rows_per_run: int | None,
    inline_max_bytes: int | None,
    judge_endpoint: str | None,
    judge_model: str | None,
    no_cache: bool,
    cache_dir: Path | None,
    cache_ttl: float | None,
    concurrency: int | None,
    mock_faults: tuple[str, ...],
) -> None:
    """Run the evaluation of DATA (a JSONL file or a TREC directory) on a backend and write a run folder.

    The run folder holds plan.json, items.jsonl, records.jsonl, state.json (ids to resume from),
    output_items.jsonl (raw service output), results.jsonl (one normalized row per row × criterion × metric)
    and manifest.json (provenance). Ctrl-C loses nothing: `foundry-bridge run --resume DIR` continues polling and
    collecting without submitting again. Running the same dataset with the same plan again reuses the finished
    run unless --force. Errored results are kept as errors and reported loudly; a failed or canceled run exits
    non-zero with the service's message.
    """
    from azure.core.exceptions import AzureError

    from .._io import loads
    from ..errors import BackendError, UsageError
    from ..foundry import RunFailedError
    from ..runner import get_backend, load_plan, run_evaluation

    if resume_dir is not None:
        if out is not None and out.resolve() != resume_dir.resolve():
            raise UsageError("--resume DIR and --out name different folders; give only --resume")
        run_dir = resume_dir
        state_path = run_dir / "state.json"
        state = loads(state_path.read_bytes()) if state_path.is_file() else {}
        recorded = state.get("backend")
        if backend is None:
            backend = recorded
        elif recorded and backend != recorded and not force:
            raise UsageError(f"{run_dir} was run with --backend {recorded}, not {backend}")
        if backend is None:
            raise UsageError(f"cannot tell which backend ran {run_dir}; pass --backend")
        plan = load_plan(run_dir) if data is None else _build(data, mapping_path)
        if backend == "cloud":
            endpoint = endpoint or state.get("endpoint")
    else:
        if data is None:
            raise UsageError("give DATA (a JSONL file or TREC directory), or --resume RUN_DIR")
        if backend is None:
            raise UsageError("choose a backend: --backend cloud|mock|local")
        plan = _build(data, mapping_path)
        run_dir = out

    if mock_faults and backend != "mock":
        raise UsageError("--mock-fault only applies to --backend mock")
    options: dict[str, Any] = {"max_rows_per_run": max_rows_per_run, "inline_max_bytes": inline_max_bytes}
    if backend == "cloud":
        options["endpoint"] = endpoint
    elif backend == "mock":
        options["endpoint"] = endpoint
        options["faults"] = parse_faults(mock_faults)
    else:
        options = {
            "judge_endpoint": judge_endpoint,
            "judge_model": judge_model,
            "cache_dir": cache_dir,
            "use_cache": False if no_cache else None,
            "cache_ttl": cache_ttl,
            "concurrency": concurrency,
        }
    runner_backend = get_backend(backend, **options)
    if run_dir is None:
        twin = None if force or data is None else _finished_twin(data, runner_backend, plan)
        run_dir = twin or _default_out(data, backend)

    show = not quiet and sys.stderr.isatty()
    handler = None
    if not quiet:  # retries and other client warnings (already redacted) go to stderr
        handler = logging.StreamHandler(sys.stderr)
        handler.setLevel(logging.WARNING)
        handler.setFormatter(logging.Formatter("warning: %(message)s"))
        logging.getLogger("foundry_bridge").addHandler(handler)
    try:
        with progress_reporter(show) as progress:
            summary = run_evaluation(
                plan, run_dir, runner_backend, resume=resume_dir is not None, force=force, progress=progress
            )
    except RunFailedError as exc:
        raise RunFailedError(
            f"{exc}. Once the cause is fixed, `foundry-bridge run --resume {run_dir}` submits the failed part again",
            run=exc.run,
        ) from exc
    except AzureError as exc:
        hint = ""
        if backend == "mock" and resume_dir is not None:
            hint = " (the emulator keeps its state in memory: a mock run cannot be resumed in another process)"
        raise BackendError(f"{exc}{hint}; the run folder {run_dir} keeps the ids to --resume from") from exc
    except KeyboardInterrupt:
        click.echo(f"Interrupted. Nothing is lost: foundry-bridge run --resume {run_dir}", err=True)
        raise
    finally:
        if handler is not None:
            logging.getLogger("foundry_bridge").removeHandler(handler)

    click.echo(str(summary.run_dir))
    if not quiet:
        click.echo(summary.text(), err=True)
    for warning in summary.warnings:
        click.secho(f"WARNING: {warning}", fg="red", bold=True, err=True)


def _build(data: Path, mapping_path: Path | None) -> Any:
    from ..mapping import build_plan, load_mapping
    from .validate import records_through_gate

    mapping = load_mapping(mapping_path)
    records = records_through_gate(data, mapping_path, mapping, "run")  # the gate: before anything is written or sent
    return build_plan(records, mapping, dataset_path=data, mapping_path=mapping_path)
