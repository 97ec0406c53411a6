"""What a long command (``run``, ``report``, ``compare``, ``metrics``) shows on stderr while it works: the progress
(a bar with the time left on a terminal, a line every few seconds otherwise, as in CI logs) and the library's log
warnings (retries). One mechanism for every command: the library takes a ``progress(stage, done, total)`` callback
and calls it at coarse points (per batch, per step, per run), never per row. Loaded when a command runs, not for its
``--help``."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import click

__all__ = ["SILENT_FOR", "command_progress", "progress_reporter", "warnings_to_stderr"]

# report, compare and metrics: no line in a log for work shorter than this many seconds (most runs of them)
SILENT_FOR = 3.0

_STAGE_LABELS = {
    "submitted": "submitting runs",
    "uploading": "uploading data",
    "polling": "waiting for Foundry",
    "collecting": "collecting results",
    "judging": "judging",
    "report": "building the report",
    "reading runs": "reading the runs",
    "metrics": "computing metrics",
}


# -- progress ----------------------------------------------------------------------------------------------------
@contextmanager
def progress_reporter(enabled: bool, *, terminal: bool = True, after: float = 0.0) -> Iterator[Any]:
    """A ``progress(stage, done, total)`` callback on stderr: a bar with the elapsed and remaining time on a terminal
    (rich if installed), a line every few seconds otherwise; None when off. Stage ``errored`` (errored tasks so
    far) is shown with the others. ``after``: the lines start only once the work has taken that long (seconds)."""
    if not enabled:
        yield None
        return
    if not terminal:
        yield _plain_progress(after=after)
        return
    try:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
    except ImportError:
        yield _plain_progress(after=after)
        return
    tasks: dict[str, Any] = {}
    columns = (
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
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


def command_progress(quiet: bool) -> tuple[Any, Callable[[], None]]:
    """The running command's ``progress`` callback (None with ``--quiet``) and the function that ends it: call it
    before writing to stdout (a live bar would otherwise catch what is printed); the command's end calls it too.
    Lines in a log start after ``SILENT_FOR`` seconds."""
    stack = ExitStack()
    progress = stack.enter_context(progress_reporter(not quiet, terminal=sys.stderr.isatty(), after=SILENT_FOR))
    click.get_current_context().call_on_close(stack.close)
    return progress, stack.close


def _plain_progress(interval: float = 5.0, after: float = 0.0) -> Any:
    """Lines such as ``judging 40/100, 3 errored, 12 s, about 18 s left``: on a change of stage, at the end of one,
    and at most every ``interval`` seconds in between (backends report at least every second while they wait).
    The time left is the stage's pace so far: elapsed in the stage ÷ done × (total − done)."""
    started = time.monotonic()
    stage_started: dict[str, float] = {}
    last_time, last_stage, errored = [0.0], [""], [0]

    def callback(stage: str, done: int, total: int | None) -> None:
        if stage == "errored":
            errored[0] = done
            return
        now = time.monotonic()
        stage_started.setdefault(stage, now)
        if now - started < after:
            return
        if stage == last_stage[0] and now - last_time[0] < interval and (total is None or done < total):
            return
        last_time[0], last_stage[0] = now, stage
        suffix = f" {done}/{total}" if total else f" ({done})"
        errors = f", {errored[0]} errored" if errored[0] else ""
        left = ""
        if total and 0 < done < total:
            left = f", about {(now - stage_started[stage]) / done * (total - done):.0f} s left"
        click.echo(f"{_STAGE_LABELS.get(stage, stage)}{suffix}{errors}, {now - started:.0f} s{left}", err=True)

    return callback


@contextmanager
def warnings_to_stderr(enabled: bool) -> Iterator[None]:
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
