"""``foundry-bridge report RUN_DIR``: merge a run's Foundry results with local metrics into one report."""

from __future__ import annotations

from pathlib import Path

import click

from .._io import atomic_open
from ..metrics.measures import measures_labels
from ._ci import publish_report, report_ci_options

__all__ = ["command"]


@click.command(
    "report",
    help=f"Merge a run folder's Foundry results with the local metrics ({measures_labels()}, negative-query report, "
    "stage attribution) into one report: JSON (the model), Markdown (fits a pull-request comment) or one "
    "self-contained HTML file. Positive and negative queries are reported separately; errored and missing judge "
    "scores are counted, never averaged as 0. See docs/report.md.",
)
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@report_ci_options
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["json", "md", "html"]),
    default=None,
    help="Output format (default: from --out's extension, else md).",
)
@click.option("--out", "out", type=click.Path(dir_okay=False, path_type=Path), help="Write here (atomically).")
@click.option(
    "--labelling-queue",
    "queue",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write the retrieved-but-unlabelled documents, most urgent first: qrels lines "
    "'qid 0 docid ?' (or JSONL when the name ends in .jsonl).",
)
@click.option(
    "--stage-k", type=click.IntRange(1, 1_000_000), default=None, help="Cutoff for stage attribution (default: max k)."
)
def command(run_dir: Path, fmt: str | None, out: Path | None, queue: Path | None, stage_k: int | None) -> None:
    from ..report import build_report, render, write_labelling_queue

    if fmt is None:
        suffix = out.suffix.lower() if out else ""
        fmt = {".json": "json", ".html": "html", ".htm": "html"}.get(suffix, "md")
    report = build_report(run_dir, stage_k=stage_k)
    text = render(report, fmt)
    if out is None:
        click.echo(text, nl=False)
    else:
        with atomic_open(out) as fh:
            fh.write(text.encode("utf-8"))
        click.echo(f"wrote {out} ({fmt})", err=True)
    if queue is not None:
        n = write_labelling_queue(report, queue)
        click.echo(f"wrote {queue}: {n} (query, document) pairs to label", err=True)
    publish_report(report)
