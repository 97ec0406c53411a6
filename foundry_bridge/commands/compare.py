"""``foundry-bridge compare RUN_A RUN_B [RUN_C ...]``: paired per-query comparison of runs, with a CI gate."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from .._io import atomic_open
from ..metrics.measures import measures_help
from ._ci import compare_ci_options, junit_path, publish_comparison
from ._options import Finite, quiet_option, refuse_overwrite

__all__ = ["command"]


@click.command(
    "compare",
    help="Compare runs over the same queries: run folders, or run files with --qrels (TREC, BEIR .json, the "
    "project's JSONL; local measures computed now, at any cutoff, trec_eval -c's values). The first run is the "
    "baseline; each other run is a candidate; --all-pairs tests every pair and ranks the runs. "
    "Per metric and per query kind, in one table: mean delta, the paired test of the metric's kind (sign-flip for "
    "continuous metrics, Wilcoxon for a judge's score, McNemar for pass/fail), a Student t confidence interval, "
    "win/tie/loss counts and the queries that got worse; a one-screen sweep table for N "
    "candidates; queries present in only one run are listed. Exit code 3 when a gate fails (a --fail-on metric "
    "regresses significantly, a floor or a lost-query limit is broken, a Foundry metric's coverage drops); 4 when "
    "a gate is inconclusive; 2 when a --fail-on gate could never fire. See docs/report.md.",
)
@click.argument("runs", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@compare_ci_options
@click.option(
    "--qrels",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Compare run files (RUN: a TREC run, a BEIR .json run, or the project's .jsonl) on these qrels (TREC "
    "`qid 0 docid label`, or BEIR's .tsv): the --metric and --fail-on measures are computed now on every qrels "
    "topic, as trec_eval -c does (a run's unjudged query left out, a missing topic scored as an empty ranking, a "
    "topic without a relevant label 0). Default measures: ndcg@10, rr@10, recall@10. judge-docs' qrels are shown "
    "judge-labelled; repeat --qrels to merge judge-docs files (e.g. one per run) of one judge and rubric (human "
    "and judge labels never mixed). See docs/report.md.",
)
@click.option(
    "--allow-judge-change",
    is_flag=True,
    help="With judge-labelled --qrels files of different judges or rubrics: compare anyway, flagged 'the judge "
    "changed' (refused without it).",
)
@click.option(
    "--all-pairs/--baseline-only",
    "all_pairs",
    default=None,
    help="Test every pair of runs, not only each candidate against the baseline: per metric, the runs ranked by "
    "their mean with a compact letter display (runs sharing a letter do not differ significantly), the win/tie/loss "
    "matrix and each pair's effect size; every pair in the one family. Default: on with --qrels and 3 runs or more.",
)
@click.option(
    "--relevance-threshold",
    type=click.IntRange(1, 2**63 - 1),
    default=1,
    show_default=True,
    help="With --qrels: relevant ⇔ label ≥ this (trec_eval -l).",
)
@click.option(
    "--mapping",
    "mapping_path",
    type=click.Path(exists=True, dir_okay=False),
    help="With --qrels: the mapping a .jsonl run is read through (default: the packaged one).",
)
@click.option(
    "--metric",
    "metrics",
    multiple=True,
    help="Show only this metric (repeatable; every metric the runs share is still tested, so the corrected p does "
    "not depend on what is shown): a Foundry metric key (groundedness, document_retrieval/ndcg@3) or "
    "a local measure in any spelling, e.g. rr@10, MRR@10, ndcg(gain=exp)@10, or ndcg for every k. "
    f"Local measures: {measures_help()}.",
)
@click.option(
    "--fail-on",
    "fail_on",
    multiple=True,
    metavar="GATE",
    help="A gate (repeatable). Relative, [negative:]METRIC[:DELTA]: exit 3 if METRIC (spelled as for --metric) got "
    "significantly worse by more than DELTA (default 0) on positive queries (prefix negative: for negative ones); "
    "the gated metrics are the primary family, corrected among themselves (--gate-correction), and their verdict "
    "in every output is the gate's; inconclusive (exit 4) when the test could not have detected the change asked "
    "about (--power-delta, else DELTA, else the observed one), with the paired queries needed. A floor, "
    "[negative:]METRIC>=X (or <=, >, <): the candidate's mean against X, on its 95% interval or its estimate "
    "(--floor-on). Lost queries, lost@K<=N: at most N queries with a relevant document in the baseline's top K may "
    "have none in the candidate's. A gate with no comparable pair (or fewer than --min-paired) is an error (exit 2).",
)
@click.option(
    "--floor-on",
    type=click.Choice(["interval", "estimate"]),
    default="interval",
    show_default=True,
    help="How a floor gate (METRIC>=X) reads the candidate's mean: its 95% interval (passed when the whole interval "
    "meets X, failed when none of it does, else inconclusive with the queries needed), or the point estimate.",
)
@click.option(
    "--gates",
    "gates_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A YAML gate file: `gates:` a list of gates as --fail-on writes them (or {gate: ..., floor_on: "
    "interval|estimate} for a floor), and an optional `alpha:` (the --alpha of the comparison). Added to the "
    "--fail-on gates. See docs/report.md.",
)
@click.option(
    "--gate-correction",
    type=click.Choice(["none", "holm", "bh"]),
    default="holm",
    show_default=True,
    help="The primary family's correction, across the --fail-on gates (candidates × gated metrics): Holm "
    "(false-alarm rate across all gates ≤ alpha), Benjamini–Hochberg, or none (each gate at its own alpha).",
)
@click.option(
    "--allow-empty-gate",
    is_flag=True,
    help="A --fail-on gate that could never fire (no comparable pair, or fewer than --min-paired) is reported as a "
    "skipped check (a skipped JUnit case) instead of an error.",
)
@click.option(
    "--coverage-drop",
    type=Finite(min=0, max=1),
    default=None,
    help="Exit 3 if a Foundry metric's coverage (scored ÷ queries) drops by more than this (default 0 when "
    "--fail-on is given; unchecked otherwise).",
)
@click.option(
    "--alpha",
    type=Finite(min=0, max=1, min_open=True),
    default=0.05,
    show_default=True,
    help="Significance level of the verdicts and of each --fail-on gate (the intervals stay at 95%).",
)
@click.option(
    "--correction",
    type=click.Choice(["westfall-young", "holm", "bh", "none"]),
    default="westfall-young",
    show_default=True,
    help="The secondary family's correction (every metric not gated, not only those shown; a test whose every "
    "difference is 0 is shown but not counted): Westfall–Young step-down minP over each pair of runs' joint sign "
    "flips (correlated metrics, such as one measure at several k, cost nothing), Holm, Benjamini–Hochberg, or "
    "none (p corrected = p).",
)
@click.option(
    "--judge-tests/--no-judge-tests",
    default=True,
    show_default=True,
    help="Also compare each judge's pass/fail verdict (rows <key>/pass, McNemar) beside its score, in the one "
    "table and family.",
)
@click.option(
    "--repeat-run",
    "repeats",
    multiple=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="A repeat of the baseline run (run --repeats): a judge-metric difference inside the judge's own noise "
    "band is 'within judge noise', not a change (repeatable).",
)
@click.option(
    "--power-delta",
    type=Finite(min=0, min_open=True),
    default=None,
    help="Report the paired queries each gated test needs to detect this Δ with 80% power at --alpha "
    "(default: the --fail-on tolerated drop, when given). The minimum detectable Δ at the current n is always shown.",
)
@click.option(
    "--judge-trust-floor",
    type=Finite(min=-1, max=1),
    default=None,
    help="Require a trusted judge: a --fail-on judge metric whose judge's κ against --human-verdicts (on the "
    "baseline run) is below this, or whose corrected interval is wider than the gate's delta, is inconclusive "
    "(exit 4, with the labels / queries it needs), never passed or failed.",
)
@click.option(
    "--human-verdicts",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Human verdicts (JSONL or CSV): on the baseline run's rows for --judge-trust-floor; on the anchor rows for "
    "--anchor (each anchor judge's κ with the humans).",
)
@click.option(
    "--anchor",
    nargs=2,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    metavar="OLD NEW",
    default=None,
    help="Judge drift: two run folders of the same frozen anchor rows, judged by the old and by the new judge. Per "
    "judge metric, the judge's shift on the anchor (the paired test of the metric's kind) beside the system Δ, and a "
    "verdict: judge changed, system changed, both, or no change. See docs/trust.md.",
)
@click.option(
    "--min-paired",
    type=click.IntRange(1, 10**9),
    default=10,
    show_default=True,
    help="Fewer paired queries than this: 'too few paired queries', no decision.",
)
@click.option(
    "--seed", type=click.IntRange(0, 2**63 - 1), default=42, show_default=True, help="Seed of the numpy Generator."
)
@click.option(
    "--resamples",
    type=click.IntRange(100, 1_000_000),
    default=10_000,
    show_default=True,
    help="Random sign flips of the paired test of continuous metrics (more: a steadier p, slower).",
)
@click.option(
    "--foundry",
    is_flag=True,
    help="Also ask Foundry's Insights API for its own comparison of the same runs (run folders made with --backend "
    "cloud, one service run each, all in the baseline's eval: run the candidates with --eval-id) and show it beside "
    "the judge tests, disagreements flagged; never part of the gate. See docs/trust.md.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "md", "html"]),
    default=None,
    help="Output format: plain aligned text (the default on a terminal), Markdown (fits a pull-request comment; the "
    "default otherwise), the comparison as JSON, or one HTML page that draws the deltas with their intervals "
    "(inline SVG, no script). With -q, text prints the verdict and gate lines only.",
)
@click.option(
    "--label",
    "labels",
    multiple=True,
    metavar="NAME",
    help="A run's name in the outputs: one per RUN, in order (default: its file or folder name, with its parent "
    "folders when two names clash).",
)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Write here (atomically).")
@quiet_option
def command(
    runs: tuple[Path, ...],
    qrels: tuple[Path, ...],
    allow_judge_change: bool,
    all_pairs: bool | None,
    relevance_threshold: int,
    mapping_path: str | None,
    metrics: tuple[str, ...],
    fail_on: tuple[str, ...],
    floor_on: str,
    gates_file: Path | None,
    gate_correction: str,
    allow_empty_gate: bool,
    coverage_drop: float | None,
    alpha: float,
    correction: str,
    min_paired: int,
    power_delta: float | None,
    judge_trust_floor: float | None,
    human_verdicts: Path | None,
    anchor: tuple[Path, Path] | None,
    repeats: tuple[Path, ...],
    judge_tests: bool,
    seed: int,
    resamples: int,
    foundry: bool,
    fmt: str | None,
    labels: tuple[str, ...],
    out: Path | None,
    quiet: bool,
) -> None:
    from ..comparison import (
        CompareGateFailed,
        CompareGateInconclusive,
        GateSpec,
        compare_run_files,
        compare_runs,
        judge_trust_by_key,
        load_gate_file,
        noise_bands_by_key,
        render_comparison_html,
        render_comparison_json,
        render_comparison_markdown,
        render_comparison_text,
    )
    from ..errors import UsageError
    from ..report import trust_section

    if len(runs) < 2:
        raise UsageError("compare needs at least two runs: RUN_A RUN_B [RUN_C ...]")
    if (judge_trust_floor is not None and human_verdicts is None) or (judge_trust_floor is not None and qrels):
        raise UsageError("--judge-trust-floor and --human-verdicts go together, on run folders (not --qrels)")
    if human_verdicts is not None and judge_trust_floor is None and not anchor:
        raise UsageError("--human-verdicts goes with --judge-trust-floor or --anchor")
    if anchor and qrels:
        raise UsageError("--anchor compares run folders' judge scores: it does not go with --qrels")
    if allow_judge_change and not qrels:
        raise UsageError("--allow-judge-change goes with judge-labelled --qrels files")
    _check_inputs(runs, qrels, repeats=bool(repeats), foundry=foundry, mapping=mapping_path)
    refuse_overwrite(
        {"--out": out, "--junit": junit_path()},
        [*runs, *qrels, mapping_path, human_verdicts, *(anchor or ()), *repeats, gates_file],
    )
    gates: list[str | GateSpec] = list(fail_on)
    if gates_file is not None:
        read = load_gate_file(gates_file)
        gates += read.gates
        if read.alpha is not None:
            source = click.get_current_context().get_parameter_source("alpha")
            if source != click.core.ParameterSource.DEFAULT and alpha != read.alpha:
                raise UsageError(f"--alpha {alpha:g} and {gates_file}'s alpha: {read.alpha:g} differ: give one of them")
            alpha = read.alpha
    from ._progress import command_progress

    progress, done = command_progress(quiet)
    common: dict[str, Any] = {
        "metrics": list(metrics) or None,
        "seed": seed,
        "n_resamples": resamples,
        "alpha": alpha,
        "fail_on": gates,
        "floor_on": floor_on,
        "correction": correction,
        "gate_correction": gate_correction,
        "allow_empty_gate": allow_empty_gate,
        "min_paired": min_paired,
        "power_delta": power_delta,
        "labels": list(labels) or None,
    }
    if qrels:
        from ..judged import qrels_labels

        comparison = compare_run_files(
            qrels,
            list(runs),
            relevance_labels=qrels_labels(qrels, allow_judge_change=allow_judge_change),
            all_pairs=all_pairs,
            relevance_threshold=relevance_threshold,
            mapping_path=mapping_path,
            coverage_drop=coverage_drop,
            **common,
        )
    else:
        request: Any = None  # the service is asked, and its client imported, only with --foundry
        if foundry:
            from ..foundry._insights import request_comparison as request

        comparison = compare_runs(
            list(runs),
            coverage_drop=coverage_drop,
            noise=noise_bands_by_key(trust_section(runs[0], repeats=repeats)) if repeats else None,
            judge_tests=judge_tests,
            trust=judge_trust_by_key(trust_section(runs[0], human_verdicts)) if judge_trust_floor is not None else None,
            trust_floor=judge_trust_floor,
            anchor=anchor,
            anchor_verdicts=human_verdicts,
            foundry=request,
            all_pairs=bool(all_pairs),
            progress=progress,
            **common,
        )
    done()
    if fmt is None:
        import sys

        fmt = "text" if out is None and sys.stdout.isatty() else "md"
    if fmt == "text":
        text = render_comparison_text(comparison, quiet=quiet)
    else:
        render = {"json": render_comparison_json, "html": render_comparison_html}.get(fmt, render_comparison_markdown)
        text = render(comparison)
    if out is None:
        click.echo(text, nl=False)
    else:
        with atomic_open(out) as fh:
            fh.write(text.encode("utf-8"))
        click.echo(f"wrote {out} ({fmt})", err=True)
    publish_comparison(comparison, out)
    if comparison.gate.get("failed"):
        raise CompareGateFailed("compare gate failed: " + "; ".join(comparison.gate["reasons"]))
    if comparison.gate.get("inconclusive"):
        raise CompareGateInconclusive("compare gate inconclusive: " + "; ".join(comparison.gate["inconclusive"]))


def _check_inputs(
    runs: tuple[Path, ...], qrels: tuple[Path, ...], *, repeats: bool, foundry: bool, mapping: str | None
) -> None:
    """Run folders without --qrels, run files with it; the options of the other kind of input refused."""
    from ..errors import UsageError

    if not qrels:
        files = [str(r) for r in runs if not r.is_dir()]
        if files:
            raise UsageError(
                f"{', '.join(files)}: not a run folder. To compare run files (TREC, BEIR .json, .jsonl), give the "
                "qrels: compare --qrels QRELS RUN_A RUN_B ..."
            )
        if mapping:
            raise UsageError("--mapping reads .jsonl run files: it goes with --qrels")
        return
    folders = [str(r) for r in runs if r.is_dir()]
    if folders:
        raise UsageError(
            f"{', '.join(folders)}: a folder. With --qrels every RUN is a run file; compare run folders without --qrels"
        )
    for flag, given in (("--repeat-run", repeats), ("--foundry", foundry)):
        if given:
            raise UsageError(f"{flag} compares run folders' judge scores: it does not go with --qrels")
