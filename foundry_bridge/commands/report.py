"""``foundry-bridge report RUN_DIR``: merge a run's Foundry results with local metrics into one report."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import click

from .._io import atomic_open
from ..metrics.measures import measures_labels
from ..metrics.ppi import QUEUE_SEED
from ._ci import publish_report, report_ci_options
from ._options import quiet_option, refuse_overwrite

__all__ = ["command"]


@click.command(
    "report",
    help=f"Merge a run folder's Foundry results with the local metrics ({measures_labels()}, negative-query report, "
    "stage attribution) into one report: JSON (the model), Markdown (fits a pull-request comment) or one "
    "self-contained HTML file. Positive and negative queries are reported separately; errored and missing judge "
    "scores are counted, never averaged as 0. Every query's row is written as Parquet (or JSON lines: --per-query "
    "jsonl) beside --out (FILE.queries.parquet: r.md -> r.md.queries.parquet) or to --queries; the report shows "
    "the aggregates, the distributions and the worst queries of each stage. See docs/report.md.",
)
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@report_ci_options
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "md", "html"]),
    default=None,
    help="Output format (default: from --out's extension; else plain aligned text on a terminal, Markdown "
    "otherwise). With -q, text prints the headline numbers and the queries per stage only.",
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
@click.option(
    "--queries",
    "queries_out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write every query's row here (default with --out: FILE.queries.parquet beside it, FILE.queries.jsonl "
    "with --per-query jsonl; without --out: not written).",
)
@click.option(
    "--per-query",
    "per_query",
    type=click.Choice(["parquet", "jsonl"]),
    default="parquet",
    show_default=True,
    help="The per-query file's format: Parquet (one row per query, nested lists for documents; pandas, polars, "
    "DuckDB) or JSON lines.",
)
@click.option(
    "--worst",
    type=click.IntRange(0, 10_000),
    default=10,
    show_default=True,
    help="Worst queries shown per stage (most failed answer judges, then the lowest scores).",
)
@click.option(
    "--human-verdicts",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Human verdicts (JSONL {query_id, evaluator, score | passed, rater?}, or a template CSV): agreement, "
    "PPI-corrected means in 'Can the judge be trusted?'. See docs/trust.md.",
)
@click.option(
    "--repeat-run",
    "repeats",
    multiple=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="A run folder of the same rows judged again (repeatable): the judges' noise and flaky rows.",
)
@click.option(
    "--verdict-queue",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the judge verdicts to label next (human-verdict JSONL, blanks to fill): label from the first line "
    "on; any number of first lines is a random sample the report weights back.",
)
@click.option(
    "--verdict-queue-size",
    type=click.IntRange(1, 1_000_000),
    default=20,
    show_default=True,
    help="How many verdicts --verdict-queue writes (its order is random, favouring rows worth labelling; each "
    "line keeps the design the report needs).",
)
@click.option(
    "--verdict-queue-seed",
    type=int,
    default=QUEUE_SEED,
    show_default=True,
    help="Seed of --verdict-queue's random order (the same run and seed give the same queue).",
)
@click.option(
    "--verdict-queue-audit",
    is_flag=True,
    help="Order --verdict-queue as a uniform random sample (every row equally likely) instead of by priority.",
)
@click.option(
    "--target-pass-rate",
    type=click.FloatRange(0, 1, min_open=True),
    default=0.05,
    show_default=True,
    help="The label budget: labels each judge needs for its corrected pass rate ± this (docs/trust.md).",
)
@click.option(
    "--target-score",
    type=click.FloatRange(0, min_open=True),
    default=0.25,
    show_default=True,
    help="... and for its corrected mean score ± this.",
)
@click.option(
    "--qrels",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Judge-labelled qrels (judge-docs' output) for a run without human labels: the local metrics and the "
    "stage attribution (search / assembly) from them, marked judge-based; circularity warned when the mapping's "
    "judge_docs names the judge as the system's reranker or generator.",
)
@click.option(
    "--human-qrels",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Human qrels for some of the run's queries (with --qrels): a section with the judge's weighted κ against "
    "them and each ranking metric's mean corrected by PPI / PPI++, as metrics --human-qrels computes them.",
)
@quiet_option
def command(
    run_dir: Path,
    fmt: str | None,
    out: Path | None,
    queue: Path | None,
    stage_k: int | None,
    queries_out: Path | None,
    per_query: Literal["parquet", "jsonl"],
    worst: int,
    human_verdicts: Path | None,
    repeats: tuple[Path, ...],
    verdict_queue: Path | None,
    verdict_queue_size: int,
    verdict_queue_seed: int,
    verdict_queue_audit: bool,
    target_pass_rate: float,
    target_score: float,
    qrels: Path | None,
    human_qrels: Path | None,
    quiet: bool,
) -> None:
    from ..report import (
        build_report,
        queries_path,
        render,
        render_text,
        write_labelling_queue,
        write_verdict_queue_for,
    )

    if fmt is None:
        import sys

        suffix = out.suffix.lower() if out else ""
        terminal = "text" if out is None and sys.stdout.isatty() else "md"
        fmt = {".json": "json", ".html": "html", ".htm": "html", ".txt": "text"}.get(suffix, terminal)
    if queries_out is None and out is not None:
        queries_out = queries_path(out, per_query)
    refuse_overwrite(
        {"--out": out, "--queries": queries_out, "--labelling-queue": queue, "--verdict-queue": verdict_queue},
        [run_dir, human_verdicts, *repeats, qrels, human_qrels],
    )
    if human_qrels is not None:
        from ..judged import check_human_qrels

        check_human_qrels(qrels, human_qrels)
    relabel, notes = None, list[str]()
    if qrels is not None:
        from ..judged import relabeller
        from ..runfolder import RunFolder

        spec = RunFolder(run_dir).read_plan(items=False, records=False).mapping.judge_docs
        relabel, notes = relabeller(qrels, spec)
    vs_human = None
    if human_qrels is not None and qrels is not None:
        from ..judged import run_vs_human

        vs_human = run_vs_human(run_dir, qrels, human_qrels)
    from ._progress import command_progress

    progress, done = command_progress(quiet)
    report = build_report(
        run_dir, stage_k=stage_k, queries_out=queries_out, per_query=per_query, worst=worst,
        human_verdicts=human_verdicts, repeats=repeats, label_targets=(target_pass_rate, target_score),
        progress=progress, relabel=relabel, judged_notes=notes, judged_vs_human=vs_human,
    )  # fmt: skip
    done()
    if queries_out is not None:
        kind = "Parquet" if per_query == "parquet" else "JSON lines"
        click.echo(f"wrote {queries_out} ({report.per_query.rows} queries, {kind})", err=True)
    text = render_text(report, quiet=quiet) if fmt == "text" else render(report, fmt)
    if out is None:
        click.echo(text, nl=False)
    else:
        with atomic_open(out, sweep=True) as fh:  # sweep: the temporaries of a report that was killed
            fh.write(text.encode("utf-8"))
        click.echo(f"wrote {out} ({fmt})", err=True)
    if queue is not None:
        n = write_labelling_queue(report, queue)
        click.echo(f"wrote {queue}: {n} (query, document) pairs to label", err=True)
    if verdict_queue is not None and report.trust is not None:
        n = write_verdict_queue_for(
            run_dir, report.trust, verdict_queue, verdict_queue_size, seed=verdict_queue_seed, audit=verdict_queue_audit
        )
        click.echo(f"wrote {verdict_queue}: {n} judge verdicts to label", err=True)
    publish_report(report, out)
