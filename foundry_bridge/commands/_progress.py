"""What ``run`` shows on stderr while a run goes on: the progress (a bar on a terminal, lines otherwise) and the
library's log warnings (retries). Loaded when ``run`` runs, not for its ``--help``."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

__all__ = ["progress_reporter", "warnings_to_stderr"]

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
