"""``foundry-bridge run``: submit a dataset's evaluation to a backend, wait, collect, write a run folder."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from ._options import Finite, SectionedCommand, mapping_option, run_estimate_option
from .validate import skip_validation_option

__all__ = ["command"]


# the backend each option applies to (the library refuses it elsewhere: ``runner.get_backend``); the help's sections
_CLOUD_AND_MOCK = ("endpoint", "max_rows_per_run", "inline_max_bytes", "eval_id")
_LOCAL_TUNING = (
    "judge_endpoint",
    "judge_model",
    "cache_dir",
    "cache_ttl",
    "concurrency",
    "judge_timeout",
    "judge_retries",
)
_SECTIONS = {
    **dict.fromkeys(_CLOUD_AND_MOCK, "cloud and mock options"),
    "mock_faults": "mock options",
    **dict.fromkeys((*_LOCAL_TUNING, "no_cache", "repeats"), "local options"),
}


# -- the command -------------------------------------------------------------------------------------------------
@click.command(name="run", cls=SectionedCommand, sections=_SECTIONS)
@click.argument("data", required=False, type=click.Path(exists=True, path_type=Path))
@mapping_option()
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
    type=click.Path(file_okay=False, path_type=Path),  # a missing folder: the runner says how to start over
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
    run unless --force (a local run with errored judge calls asks the judge again for those rows only).
    Errored results are kept as errors and reported loudly; a failed or canceled run exits
    non-zero with the service's message.
    """
    from ..errors import UsageError
    from ..mock import parse_faults
    from ..runner import RunInterrupted, run_evaluation
    from ._estimate import show_run_estimate
    from ._progress import progress_reporter, warnings_to_stderr
    from .validate import skipping_validation

    if resume_dir is not None and out is not None and out.resolve() != resume_dir.resolve():
        raise UsageError("--resume DIR and --out name different folders; give only --resume")
    if resume_dir is None and data is not None and backend is None:
        raise UsageError("choose a backend: --backend cloud|mock|local")
    name = backend if backend is not None or resume_dir is None else _recorded_backend(resume_dir, force)
    tuning["eval_id"] = _eval_id(name, tuning["eval_id"])
    options = _backend_options(name, endpoint, parse_faults(mock_faults), tuning)
    try:
        with warnings_to_stderr(not quiet), progress_reporter(not quiet, terminal=sys.stderr.isatty()) as progress:
            summary = run_evaluation(
                data, resume_dir or out, backend, mapping=mapping_path, resume=resume_dir is not None, force=force,
                repeats=repeats, skip_validation=skipping_validation(), progress=progress,
                notify=None if quiet else _notice, before_run=show_run_estimate, **options,
            )  # fmt: skip
    except RunInterrupted as exc:
        click.echo(f"Interrupted. {exc.cli_text()}", err=True)
        raise
    click.echo(str(summary.run_dir))
    if not quiet:
        click.echo(summary.text(), err=True)
    for warning in summary.warnings:
        click.secho(f"WARNING: {warning}", fg="red", bold=True, err=True)
    for repeat in summary.repeat_dirs:
        click.echo(str(repeat))
    if summary.repeat_dirs:
        runs = [str(summary.run_dir), *(f"--repeat-run {f}" for f in summary.repeat_dirs)]
        click.echo("judge noise: foundry-bridge report " + " ".join(runs), err=True)


def _recorded_backend(resume_dir: Path, force: bool) -> str | None:
    """On ``--resume`` without ``--backend``: the backend the run was started with (which options apply)."""
    from ..runfolder import RunFolder
    from ..runner import backend_for_resume

    return backend_for_resume(RunFolder(resume_dir), None, force=force)[0]


def _eval_id(backend: str | None, given: str | None) -> str | None:
    """``--eval-id`` for the backend: cloud and mock only; a run folder stands for its eval."""
    from ..errors import UsageError
    from ..runfolder import RunFolder

    if given and backend == "local":
        raise UsageError("--eval-id applies to --backend cloud or mock (the local backend has no evals)")
    if given and Path(given).is_dir():  # a run folder: its eval
        made = RunFolder(given).read_state()
        if made is None or not made.eval_id:
            raise UsageError(f"--eval-id {given}: that run folder has no eval (state.json names none)")
        given = made.eval_id
    return given


def _backend_options(backend: str | None, endpoint: str | None, faults: Any, tuning: dict[str, Any]) -> dict[str, Any]:
    """The options given on the command line, as ``get_backend`` keywords (those not given left out): the library
    refuses one that ``backend`` ignores (``--judge-model`` on mock, ``--endpoint`` on local), naming it."""
    options = {k: tuning[k] for k in (*_LOCAL_TUNING, "max_rows_per_run", "inline_max_bytes", "eval_id")}
    options.update(endpoint=endpoint, faults=faults, use_cache=False if tuning["no_cache"] else None)
    return {k: v for k, v in options.items() if v is not None}


def _notice(message: str) -> None:
    """A service id just created, on stderr (one line each; also kept in state.json)."""
    click.echo(message, err=True)
