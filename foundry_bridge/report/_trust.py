"""The report's "Can the judge be trusted?" section, computed from a run folder in one streaming pass.

For every LLM judge of the plan (a catalog evaluator that needs a deployment): its agreement with the human
verdicts (``metrics.agreement.judge_trust``: κ on pass/fail, quadratic-weighted κ on the scale, Krippendorff's α
among raters and with the judge as one more rater, each with its bootstrap interval), its mean score and pass rate four
ways (judge only, human only, PPI, PPI++: ``metrics.ppi.estimate_mean``; several raters' disagreement in the
intervals), and its label budget (``MeanEstimates.labels_for_target``: labels in all for a PPI++ interval of ±0.05
on a pass rate and ±0.25 on the mean score by default — PPI's variance with the agreement seen so far; with no
label yet the worst case, or the judge's own spread as the guess of the humans'). κ, weighted κ and α on fewer
than ``MIN_AGREEMENT_ROWS`` rows are greyed (HTML class ``few``; Markdown italics and °) with a warning line. Then
the retrieval judge against the qrels (``qrels_check``'s rule on each record, no human work), and the generated
canaries (``canaries.score_canaries``). Each part says what it was computed from, and ``missing`` says in words
what could not be computed and why.

The pass reads ``plan.json`` without items, then ``records.jsonl`` (query ids, the qrels truth, canary cases),
then ``results.jsonl`` into one score and one pass column per judge (NaN where unscored): memory grows with
rows × judges floats, not with the rows' text. ``write_verdict_queue_for`` streams the folder again to write the
rows to label next, texts read only for the rows picked.
"""

from __future__ import annotations

import html
import math
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from .._io import loads
from ..canaries import RETRIEVAL, CanaryCase, CanaryScore, score_canaries
from ..catalog import CATALOG
from ..columns import RunColumns
from ..dataset.verdicts import (
    HumanVerdict,
    QueueRow,
    VerdictFile,
    human_arrays,
    inclusion_array,
    read_verdicts,
    write_verdict_queue,
)
from ..errors import DatasetError
from ..metrics.agreement import (
    MIN_AGREEMENT_ROWS,
    agreement,
    judge_noise,
    judge_trust,
    noise_band,
    rater_mean,
    verdict_flips,
)
from ..metrics.ppi import QUEUE_SEED, queue_merge, queue_order
from ..runfolder import RunFolder
from ._format import fmt_num, html_table, md_escape, md_table
from ._model import foundry_key
from ._trust_model import (
    PASS_RATE_HALF_WIDTH,
    SCORE_HALF_WIDTH,
    AgreementOut,
    EstimateOut,
    JudgeEntry,
    JudgeNoiseOut,
    JudgeTrustOut,
    MeanOut,
    NoiseEntry,
    RetrievalCheck,
    TrustSection,
    TrustSource,
)

__all__ = [
    "PASS_RATE_HALF_WIDTH",
    "SCORE_HALF_WIDTH",
    "JudgeEntry",
    "NoiseEntry",
    "RetrievalCheck",
    "TrustSection",
    "TrustSource",
    "noise_bands",
    "render_trust_html",
    "render_trust_markdown",
    "trust_json",
    "trust_section",
    "write_verdict_queue_for",
]


@dataclass
class _Judge:
    criterion: str
    evaluator: str
    metric: str
    threshold: float | None
    higher_is_better: bool
    scale: list[float] | None
    score: np.ndarray
    passed: np.ndarray


class _QueryIds(Sequence[str]):
    """The run's query ids in row order, fetched from its columns at the first use beyond their count (a report
    without judges or verdicts needs only the count)."""

    def __init__(self, run: RunColumns) -> None:
        self.run, self._ids = run, None if run.n_queries else list[str]()

    @property
    def ids(self) -> list[str]:
        if self._ids is None:
            self._ids = self.run.texts("query_id")
        return self._ids

    def __len__(self) -> int:
        return self.run.n_queries

    def __getitem__(self, index: Any) -> Any:
        return self.ids[index]

    def __iter__(self) -> Iterator[str]:
        return iter(self.ids)


@dataclass
class _Columns:
    """The one pass over the folder: the run's query ids, the judges' columns, the qrels truth, canary cases."""

    query_ids: Sequence[str]
    judges: dict[str, _Judge]  # criterion → columns
    truth: np.ndarray  # context_holds_relevant as 1/0, NaN unknown
    cases: list[CanaryCase]
    canary: np.ndarray  # True on a generated canary row: left out of agreement, means and the queue
    results_read: int

    def real(self, column: np.ndarray) -> np.ndarray:
        """``column`` with the canary rows blanked (NaN)."""
        return np.where(self.canary, np.nan, column)


def _judges(folder: RunFolder, n: int) -> dict[str, _Judge]:
    """Every judge criterion of the plan, its columns of ``n`` rows unscored (NaN)."""
    from ..wire import resolve_threshold

    out = {}
    for crit in folder.read_plan(items=False, records=False).criteria:
        spec = CATALOG.get(crit.evaluator)
        if spec is None or not spec.needs_deployment:
            continue
        metric = spec.metric(spec.primary_metric)
        scale = None
        if metric.kind == "ordinal" and metric.min_value is not None and metric.max_value is not None:
            scale = [float(v) for v in range(int(metric.min_value), int(metric.max_value) + 1)]
        threshold = resolve_threshold(metric, crit.init)
        threshold = None if threshold is None else float(threshold)
        nan = np.full(n, np.nan)
        out[crit.name] = _Judge(
            crit.name, crit.evaluator, metric.name, threshold, metric.higher_is_better, scale, nan, nan.copy()
        )
    return out


def _collect(run: RunColumns) -> _Columns:
    """The run's query ids, qrels truth and canary cases (its per-query columns), and each judge's last score and
    verdict per row (rows without an error), one judge at a time."""
    n = run.n_queries
    query_ids = _QueryIds(run)
    truth = np.asarray(run.column("holds_relevant"), np.float64) if n else np.zeros(0)
    cases: list[CanaryCase] = []
    canary = np.zeros(n, bool)
    for row, qid, case in run.sql(
        "SELECT row, query_id, canary_case FROM queries WHERE canary_case IS NOT NULL ORDER BY row"
    ).fetchall():
        c = loads(case)
        cases.append(CanaryCase(qid, c["kind"], c["of"], c["expect"]))
        canary[row] = True
    judges = _judges(run.folder, n)
    for col in judges.values():
        got = run.sql(
            "SELECT row, arg_max(score, seq) FILTER (WHERE score IS NOT NULL), "
            "arg_max(passed::DOUBLE, seq) FILTER (WHERE passed IS NOT NULL) FROM results "
            "WHERE criterion = ? AND metric = ? AND error IS NULL AND row >= 0 AND row < ? GROUP BY row",
            [col.criterion, col.metric, n],
        ).fetchall()
        for row, score, passed in got:
            if score is not None:
                col.score[row] = score
            if passed is not None:
                col.passed[row] = passed
    return _Columns(query_ids, judges, truth, cases, canary, run.result_counts()[0])


def _check_scale(verdicts: Sequence[HumanVerdict], judge: _Judge, source: str) -> None:
    """A human score off the judge's scale is the file's mistake: named by line, before any statistic."""
    if judge.scale is None:
        return
    lo, hi = judge.scale[0], judge.scale[-1]
    for v in verdicts:
        same = v.evaluator.removeprefix("builtin.") == judge.evaluator.removeprefix("builtin.")
        if same and v.score is not None and (v.score not in judge.scale):
            raise DatasetError(
                f"score {v.score:g} on {v.evaluator!r} is not on the judge's scale {lo:g}–{hi:g} (whole numbers)",
                file=source,
                line=v.line,
                field="score",
                hint=f"give a whole number from {lo:g} to {hi:g}, or 'passed': true/false",
            )


def _judge_entry(
    judge: _Judge, verdicts: VerdictFile | None, cols: _Columns, targets: tuple[float, float]
) -> JudgeEntry:
    rows, query_ids = (verdicts.verdicts if verdicts is not None else []), cols.query_ids
    hs, _ = human_arrays(rows, judge.evaluator, query_ids)
    hp, _ = human_arrays(rows, judge.evaluator, query_ids, what="passed")
    drawn = inclusion_array(rows, judge.evaluator, query_ids, source=verdicts.source if verdicts else None)
    hs[:, drawn.beyond] = hp[:, drawn.beyond] = np.nan  # not part of the sample: left out of every number
    score, passed = cols.real(judge.score), cols.real(judge.passed)
    scale, off_scale = judge.scale, []
    if judge.scale is not None and not np.isin(score[~np.isnan(score)], judge.scale).all():
        lo, hi = judge.scale[0], judge.scale[-1]
        scale, off_scale = None, [f"the judge gave scores off its {lo:g}–{hi:g} scale: κ on the values seen"]
    trust = judge_trust(
        score,
        passed,
        hs,
        hp,
        probability=drawn.probability,
        threshold=judge.threshold,
        higher_is_better=judge.higher_is_better,
        categories=scale,
        pass_target=targets[0],
        score_target=targets[1],
    )
    scored = score[~np.isnan(score)]
    missing = off_scale + list(trust.missing)
    need_pass = trust.pass_rate.labels_for_target if trust.pass_rate else None
    need_score = trust.score_mean.labels_for_target if trust.score_mean else None
    if trust.n_labeled == 0:
        missing = [f"no human verdict on {judge.evaluator}: its numbers are uncorrected", *off_scale]
    if not scored.size:
        missing.append(f"{judge.criterion} scored no row")
    if drawn.gap is not None:
        missing.append(
            f"{int(drawn.beyond.sum())} labels on {judge.evaluator} are at verdict-queue places after place "
            f"{drawn.gap}, left unlabelled, and are left out (a labelled prefix of the queue is a probability "
            f"sample, labels after a gap are not): label place {drawn.gap} to count them"
        )
    return JudgeEntry(
        criterion=judge.criterion,
        evaluator=judge.evaluator,
        metric=judge.metric,
        threshold=judge.threshold,
        higher_is_better=judge.higher_is_better,
        scale=judge.scale,
        rows_scored=int(scored.size),
        rows_passed_known=int(np.count_nonzero(~np.isnan(passed))),
        trust=JudgeTrustOut.model_validate(trust),
        labels_for_pass_rate=need_pass,
        labels_for_score=need_score,
        pass_rate_target=targets[0],
        score_target=targets[1],
        worst=[
            {"query_id": query_ids[d.index], "judge": d.judge, "human": d.human}
            for d in (trust.on_scale.disagreements if trust.on_scale else [])
        ],
        missing=missing,
    )


def _retrieval(cols: _Columns) -> RetrievalCheck:
    real = ~cols.canary  # a generated canary repeats its original's context: left out
    known = int(np.count_nonzero(~np.isnan(cols.truth[real])))
    judge = next((j for j in cols.judges.values() if j.evaluator == RETRIEVAL), None)
    if judge is None:
        return RetrievalCheck(
            criterion=None, agreement=None, rows_known=known, missing=["no retrieval judge in the run"]
        )
    if known == 0:
        why = "no row has both a context and qrels labels for its retrieved documents: nothing to check it against"
        return RetrievalCheck(criterion=judge.criterion, agreement=None, rows_known=0, missing=[why])
    return RetrievalCheck(
        criterion=judge.criterion,
        agreement=AgreementOut.model_validate(agreement(judge.passed[real], cols.truth[real], categories=(0.0, 1.0))),
        rows_known=known,
    )


def _canaries(cols: _Columns, missing: list[str]) -> list[CanaryScore]:
    if not cols.cases:
        missing.append("no generated canary in the run (`foundry-bridge canaries DATA --out DATA2`, then run DATA2)")
        return []
    ids = {c.query_id for c in cols.cases} | {c.of for c in cols.cases}
    first: dict[str, _Judge] = {}
    for j in cols.judges.values():
        first.setdefault(j.evaluator, j)  # the first criterion of an evaluator speaks for it
    verdicts = {
        (q, e): None if np.isnan(j.passed[i]) else bool(j.passed[i])
        for i, q in enumerate(cols.query_ids)
        if q in ids
        for e, j in first.items()
    }
    return score_canaries(cols.cases, verdicts)


def _unmatched(verdicts: VerdictFile, cols: _Columns) -> tuple[int, list[str]]:
    """Verdicts the run cannot use (unknown query, or an evaluator with no judge here), and those evaluators."""
    ids = set(cols.query_ids)
    judged = {j.evaluator.removeprefix("builtin.") for j in cols.judges.values()}
    orphans = sorted({v.evaluator for v in verdicts.verdicts if v.evaluator.removeprefix("builtin.") not in judged})
    n = sum(1 for v in verdicts.verdicts if v.query_id not in ids or v.evaluator.removeprefix("builtin.") not in judged)
    return n, orphans


def trust_section(
    run_dir: str | os.PathLike[str],
    verdicts_path: str | os.PathLike[str] | None = None,
    *,
    questions: Mapping[str, str] | None = None,
    repeats: Sequence[str | os.PathLike[str]] = (),
    run: RunColumns | None = None,
    targets: tuple[float, float] = (PASS_RATE_HALF_WIDTH, SCORE_HALF_WIDTH),
) -> TrustSection:
    """The trust section of the run in ``run_dir``, with the human verdicts of ``verdicts_path`` (JSONL or CSV,
    ``dataset.verdicts.read_verdicts``; ``questions`` maps a template sheet's columns to evaluators) when given,
    and the judges' noise when ``repeats`` names run folders of the same rows judged again. ``targets``: the
    half-widths (pass rate, mean score) each judge's label budget is for."""
    verdicts = read_verdicts(verdicts_path, questions=questions) if verdicts_path is not None else None
    cols = _collect(run if run is not None else RunColumns.open(run_dir))
    source = TrustSource(
        run_dir=str(run_dir), rows=len(cols.query_ids), results_read=cols.results_read, canary_rows=len(cols.cases)
    )
    missing: list[str] = []
    if verdicts is None:
        missing.append(
            "no human verdicts given (--human-verdicts FILE): agreement and corrected means need a few labels; "
            "--verdict-queue FILE writes the rows to label first"
        )
    else:
        source.verdicts_path, source.verdicts, source.verdicts_unfilled = (
            verdicts.source,
            len(verdicts.verdicts),
            verdicts.unfilled,
        )
        source.verdicts_unmatched, source.evaluators_without_judge = _unmatched(verdicts, cols)
        for judge in cols.judges.values():
            _check_scale(verdicts.verdicts, judge, verdicts.source)
    if not cols.judges:
        missing.append("the plan has no LLM judge: nothing to trust or distrust")
    judges = [_judge_entry(j, verdicts, cols, targets) for j in cols.judges.values()]
    canaries = _canaries(cols, missing)
    noise = _noise(cols, [_collect(RunColumns.open(r)) for r in repeats])
    if not repeats:
        missing.append("judge noise: one judgement per row in this run (repeats are needed to measure it)")
    return TrustSection(
        source=source,
        judges=judges,
        retrieval=_retrieval(cols),
        canaries=canaries,
        canary_cases=len(cols.cases),
        noise=noise,
        missing=missing,
    )


def noise_bands(section: TrustSection) -> dict[str, float]:
    """Each judge's noise bands from repeat runs under its report metric keys — the score's (``criterion/metric``,
    or ``metric`` when it is the criterion's name) and the pass rate's (``<key>/pass``) — for
    ``compare_runs(noise=...)``: a smaller difference is "within judge noise"."""
    metric = {j.criterion: j.metric for j in section.judges}
    out: dict[str, float] = {}
    for n in section.noise:
        if n.criterion not in metric:
            continue
        key = foundry_key(n.criterion, metric[n.criterion])
        out |= {key: n.score_band} if n.score_band is not None else {}
        out |= {key + "/pass": n.pass_band} if n.pass_band is not None else {}
    return out


def _noise(cols: _Columns, again: Sequence[_Columns]) -> list[NoiseEntry]:
    """Each judge's repeats × rows matrices (the repeat runs aligned on this run's query ids), its noise and bands."""
    if not again:
        return []
    pairs = [_paired_rows(cols.query_ids, other.query_ids) for other in again]
    out = []
    for name, judge in cols.judges.items():
        scores, passed = [cols.real(judge.score)], [cols.real(judge.passed)]
        for other, index in zip(again, pairs, strict=True):
            same = other.judges.get(name)
            for matrix, column in ((scores, "score"), (passed, "passed")):
                values = np.full(index.size, np.nan)
                if same is not None:
                    values[index >= 0] = getattr(same, column)[index[index >= 0]]
                matrix.append(cols.real(values))
        noise = judge_noise(np.vstack(scores), np.vstack(passed), categories=judge.scale)
        rows = noise.rows
        pass_sd = judge_noise(np.vstack(passed)).noise_sd
        out.append(
            NoiseEntry(
                criterion=name,
                runs=len(scores),
                noise=JudgeNoiseOut.model_validate(noise),
                flaky_queries=[cols.query_ids[i] for i in noise.flaky],
                score_band=_finite(noise_band(noise.noise_sd, rows)) if rows else None,
                pass_band=_finite(noise_band(pass_sd, rows)) if rows else None,
            )
        )
    return out


def _paired_rows(ids: Sequence[str], other: Sequence[str]) -> np.ndarray:
    """For each row of ``ids``, ``other``'s row of the same query id (its last when repeated), -1 where it has none:
    the pairing ``compare`` makes."""
    last = {q: i for i, q in enumerate(other)}
    return np.fromiter((last.get(q, -1) for q in ids), np.int64, len(ids))


def _finite(value: float) -> float | None:
    return None if math.isnan(value) else value


def _spread(cols: _Columns) -> np.ndarray:
    """1 where the judges that scored a row disagree on pass/fail (two or more verdicts), else 0."""
    if not cols.judges:
        return np.zeros(len(cols.query_ids))
    return verdict_flips(np.vstack([j.passed for j in cols.judges.values()]))[1].astype(float)


def write_verdict_queue_for(
    run_dir: str | os.PathLike[str],
    section: TrustSection,
    path: str | os.PathLike[str],
    limit: int = 20,
    *,
    questions: Mapping[str, str] | None = None,
    seed: int = QUEUE_SEED,
    audit: bool = False,
) -> int:
    """Write the first ``limit`` (judge, row) pairs of the verdict queue's order as human-verdict JSONL to fill in
    (``dataset.verdicts.write_verdict_queue``); returns the lines written. ``questions`` as given to
    ``trust_section`` (a template sheet's columns → evaluators).

    Each judge's candidate rows are ordered by ``metrics.ppi.queue_order`` (key u/p, p the row's share of the size
    measure: judge-score stratum and the judges disagreeing on the row, floored; ``audit``: uniform), u seeded by
    ``seed`` + the judge's position, and the orders merged by key (``queue_merge``: the first n lines hold about
    n / judges of each), so labelling the file's first n lines, for any n, is a probability sample. Each line keeps
    its place and the design (``queue_place``, ``queue_u``, ``queue_share``, ``queue_next_key`` — the key of the
    line after it —, ``queue_seed``) for the report to weight the labels back."""
    run = RunColumns.open(run_dir)
    cols = _collect(run)
    given = section.source.verdicts_path
    verdicts = read_verdicts(given, questions=questions).verdicts if given else []
    spread = _spread(cols)
    judges = list(cols.judges.values())
    orders = []
    for k, judge in enumerate(judges):
        hs, _ = human_arrays(verdicts, judge.evaluator, cols.query_ids)
        orders.append(queue_order(cols.real(judge.score), rater_mean(hs), spread=spread, seed=seed + k, audit=audit))
    drawn = queue_merge(orders, limit)
    texts = _texts(run, {cols.query_ids[d.index] for _, d in drawn})
    rows = []
    for k, d in drawn:
        text = texts.get(cols.query_ids[d.index], {})
        place: dict[str, Any] = {"queue_place": d.place, "queue_u": d.u, "queue_share": d.share}
        place |= {"queue_next_key": None if math.isinf(d.next_key) else d.next_key, "queue_seed": seed + k}
        row = QueueRow(
            cols.query_ids[d.index], judges[k].evaluator, d.place, d.reason, text.get("query"), text.get("response")
        )
        rows.append(replace(row, design=d.design, place=place))
    return write_verdict_queue(rows, Path(path))


def _texts(run: RunColumns, wanted: set[str]) -> dict[str, dict[str, str | None]]:
    """Query and response of the wanted rows only (the context is left out: long, and in the run folder)."""
    ids = np.empty(len(wanted), dtype=object)
    ids[:] = sorted(wanted)
    run.con.register("trust_wanted", {"query_id": ids})
    try:
        rows = run.sql(
            "SELECT q.query_id, q.query, q.response FROM queries q SEMI JOIN trust_wanted w ON q.query_id = w.query_id"
        ).fetchall()
    finally:
        run.con.unregister("trust_wanted")
    return {qid: {"query": query, "response": response} for qid, query, response in rows}


# -- rendering ---------------------------------------------------------------------------------------------------


def _num(value: float | None, digits: int = 2) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else fmt_num(value, digits)


class _Few(str):
    """A table cell standing on fewer than ``MIN_AGREEMENT_ROWS`` rows: greyed (HTML class ``few``, Markdown
    italics) and marked °."""


def _agreement_cell(value: float | None, rows: int, interval: list[float | None] | None = None) -> str:
    """κ or α (with its interval when given), a ``_Few`` cell below ``MIN_AGREEMENT_ROWS`` rows."""
    text = _num(value)
    if value is not None and interval and interval[0] is not None and interval[1] is not None:
        text += f" [{_num(interval[0])}, {_num(interval[1])}]"
    return _Few(text + "°") if value is not None and 0 <= rows < MIN_AGREEMENT_ROWS else text


def _few_rows(section: TrustSection) -> bool:
    return any(isinstance(c, _Few) for r in _table_rows(section)[1] for c in r)


def _estimate(e: EstimateOut | None) -> str:
    """``mean [low, high]``, † when the interval was clipped to the scale; "too few labels (need N)" below the
    minimum (no point estimate either: a number from two labels invites quoting)."""
    if e is None or e.mean is None:
        return "–"
    if e.need_labels is not None:
        return f"too few labels (need {e.need_labels})"
    if e.low is None or e.high is None:
        return _num(e.mean)
    return f"{_num(e.mean)} [{_num(e.low)}, {_num(e.high)}]" + ("†" if e.clipped else "")


def _means(m: MeanOut | None) -> tuple[str, str, str, str]:
    if m is None:
        return ("–",) * 4
    return _estimate(m.judge_only), _estimate(m.human_only), _estimate(m.ppi), _estimate(m.ppi_plus)


def _table_rows(section: TrustSection) -> tuple[list[str], list[list[str]]]:
    """The judge table as text cells (escaped by the caller): one row per judge and quantity."""
    head = ["judge", "rows scored", "labelled", "raters", "κ pass/fail", "weighted κ", "α humans", "α with judge"]
    head += ["what", "judge only", "human only", "PPI", "PPI++"]
    rows = []
    for j in section.judges:
        t = j.trust
        kappa = _agreement_cell(t.on_pass.kappa, _rows_of(t.on_pass), t.on_pass.kappa_interval) if t.on_pass else "–"
        wk = "–"
        if t.on_scale:
            wk = _agreement_cell(t.on_scale.weighted_kappa, _rows_of(t.on_scale), t.on_scale.weighted_kappa_interval)
        common = [j.criterion, str(j.rows_scored), str(t.n_labeled), str(t.raters), kappa, wk]
        common += [
            _agreement_cell(t.alpha_humans, t.alpha_rows, t.alpha_humans_interval),
            _agreement_cell(t.alpha_with_judge, t.alpha_with_judge_rows, t.alpha_with_judge_interval),
        ]
        rows.append([*common, "pass rate", *_means(t.pass_rate)])
        rows.append([""] * len(common) + ["mean score", *_means(t.score_mean)])
    return head, rows


def _rows_of(a: AgreementOut) -> int:
    return a.n if a.rows < 0 else a.rows


def _budget_notes(j: JudgeEntry) -> list[str]:
    """The label budget of one judge, and the raters' disagreement when it widens the intervals."""
    out = []
    have = j.trust.n_labeled
    parts = []
    for what, need, target in (
        ("pass rate", j.labels_for_pass_rate, j.pass_rate_target),
        ("mean score", j.labels_for_score, j.score_target),
    ):
        if need is not None:
            more = f" ({need - have} more)" if have and need > have else ""
            parts.append(f"{need} labelled rows in all{more} give its {what} ±{target:g}")
    if parts:
        how = "by themselves" if have == 0 else "with the judge's scores (PPI++; its agreement so far)"
        lead = "no human label yet — " if have == 0 else ""
        out.append(f"{j.criterion}: {lead}{'; '.join(parts)} {how}.")
    if have and j.labels_for_pass_rate is None:
        out.append(
            f"{j.criterion}: not even labelling all {j.rows_scored} rows gives its pass rate ±{j.pass_rate_target:g}."
        )
    for what, m in (("pass rate", j.trust.pass_rate), ("mean score", j.trust.score_mean)):
        r = m.raters if m else None
        if r is not None and r.variance > 0:
            unreachable = m is not None and m.labels_for_target is None and have > 0
            extra = (
                " — beyond what more rows can narrow: more raters, or raters who agree, are needed"
                if unreachable
                else ""
            )
            out.append(
                f"{j.criterion}: its {r.raters} raters disagree systematically on the {what} (variance of the mean "
                f"{r.variance:.3g} on {r.df} df): that disagreement is in the human-only, PPI and PPI++ intervals"
                f"{extra}."
            )
    return out


def _notes(section: TrustSection) -> list[str]:
    """The sentences under the table: labels that would help, disagreements, and every missing piece."""
    out = []
    if section.judges and _few_rows(section):
        out.append(
            f"° κ, weighted κ or α on fewer than {MIN_AGREEMENT_ROWS} rows (greyed): a hint, not a measure — at 10 "
            "rows a κ of 0.6 has a standard error near 0.25."
        )
    for j in section.judges:
        design = next((m.design for m in (j.trust.pass_rate, j.trust.score_mean) if m and m.design), None)
        if design and j.trust.n_labeled:
            out.append(f"{j.criterion}: human only, PPI and PPI++ — {design}.")
        out.extend(_budget_notes(j))
        rate = j.trust.pass_rate
        plus = rate.ppi_plus if rate else None
        if plus is not None and plus.need_labels is not None:
            out.append(
                f"{j.criterion}: {plus.n_labeled} labelled rows: the corrected numbers (PPI, PPI++) need "
                f"{plus.need_labels} for an interval ({plus.need_labels - plus.n_labeled} more)."
            )
        halve = rate.labels_to_halve if rate else None
        if halve is not None:
            out.append(f"{j.criterion}: about {halve} more labels would halve the PPI++ interval of its pass rate.")
        if j.worst:
            worst = ", ".join(f"{w['query_id']} (judge {w['judge']:g}, human {w['human']:g})" for w in j.worst[:3])
            out.append(f"{j.criterion}: largest judge–human gaps: {worst}.")
        out.extend(f"{j.criterion}: {m}." for m in j.missing if "no human verdict on" not in m)
    return out


def trust_headline(section: TrustSection) -> str:
    """The section in one sentence, for the report's first screen: how many judges, against how many human
    verdicts, and where the judges' numbers come from."""
    judges = len(section.judges)
    humans = section.source.verdicts if section.source.verdicts_path is not None else 0
    basis = (
        f"checked against {humans} human verdicts" if humans else "no human verdicts yet: agreement cannot be measured"
    )
    canaries = f"; {section.canary_cases} generated canary cases" if section.canaries else ""
    return f"{judges} {'judge' if judges == 1 else 'judges'}, {basis}{canaries}."


def _source_line(section: TrustSection) -> str:
    s = section.source
    line = f"Computed from {s.rows} rows and {s.results_read} result rows of {s.run_dir}"
    if s.canary_rows:
        line += f" ({s.canary_rows} generated canaries left out of agreement and means)"
    if s.verdicts_path is None:
        return line + "; no human-verdict file."
    line += f", and {s.verdicts} human verdicts from {s.verdicts_path}"
    extra = [f"{s.verdicts_unmatched} not matching this run"] if s.verdicts_unmatched else []
    extra += [f"{s.verdicts_unfilled} queue lines not filled in"] if s.verdicts_unfilled else []
    extra += [f"no judge for {', '.join(s.evaluators_without_judge)}"] if s.evaluators_without_judge else []
    return line + (f" ({'; '.join(extra)})" if extra else "") + "."


def _noise_lines(section: TrustSection) -> list[str]:
    out = []
    for n in section.noise:
        flips = "–" if n.noise.flip_rate is None else f"{100 * n.noise.flip_rate:.0f} %"
        flaky = f"; flaky: {', '.join(n.flaky_queries[:5])}" if n.flaky_queries else ""
        out.append(
            f"{n.criterion} against itself over {n.runs} runs of {n.noise.rows} rows: score noise sd "
            f"{_num(n.noise.noise_sd)}, verdict flips on {flips} of rows, α {_num(n.noise.alpha)}{flaky}; a "
            f"difference of two runs' means within ±{_num(n.score_band)} (pass rate ±{_num(n.pass_band)}) is noise."
        )
    return out


def _retrieval_line(section: TrustSection) -> str:
    r = section.retrieval
    if r.agreement is None:
        return "Retrieval judge vs qrels: " + "; ".join(r.missing) + "."
    a = r.agreement
    rates = f"judge passes {_num(a.judge_rates[1])}, qrels say relevant-in-context {_num(a.reference_rates[1])}"
    return (
        f"Retrieval judge ({r.criterion}) vs qrels (the context holds a document labelled relevant): agreement "
        f"{_num(a.observed)}, κ {_agreement_cell(a.kappa, -1, a.kappa_interval)} on {a.n} rows ({rates}; "
        f"{a.n_missing} rows unknown)."
    )


def _canary_rows(section: TrustSection) -> list[list[str]]:
    return [
        [c.kind, c.evaluator, c.expect, str(c.caught), str(len(c.missed)), str(c.unscored), ", ".join(c.missed[:5])]
        for c in section.canaries
    ]


_CANARY_HEAD = ["canary type", "judge", "must", "caught", "missed", "unscored", "missed ids (first 5)"]


def _md_cell(cell: str) -> str:
    if not cell:
        return ""
    return f"*{md_escape(cell)}*" if isinstance(cell, _Few) else md_escape(cell)


def render_trust_markdown(section: TrustSection) -> str:
    """The section as Markdown (dataset text escaped), starting with its ``##`` heading."""

    def table(head: list[str], rows: list[list[str]]) -> list[str]:
        return md_table([md_escape(h) for h in head], ([_md_cell(c) for c in r] for r in rows))

    lines = ["## Can the judge be trusted?", "", md_escape(_source_line(section)), ""]
    if section.judges:
        head, rows = _table_rows(section)
        lines += [*table(head, rows), "", md_escape(_INTERVAL_NOTE + " " + _KAPPA_NOTE), ""]
    lines += [f"- {md_escape(n)}" for n in _notes(section) + _noise_lines(section)]
    lines += ["", md_escape(_retrieval_line(section)), ""]
    if section.canaries:
        lines += [f"Generated canaries: {section.canary_cases} cases.", "", *table(_CANARY_HEAD, _canary_rows(section))]
        lines.append("")
    lines += [f"- Missing: {md_escape(m)}" for m in section.missing]
    return "\n".join(lines).rstrip() + "\n"


_INTERVAL_NOTE = (
    "Intervals are 95 %: Wilson for pass rates, Student's t for mean scores, PPI and PPI++ with t and two "
    "pseudo-rows (PPI++'s λ cross-fitted), several raters' disagreement added (docs/trust.md); † cut to the "
    "scale; κ, weighted κ and α with their bootstrap intervals over rows."
)
_KAPPA_NOTE = (
    "Read κ against the base rates: a judge that passes everything agrees often and has κ 0. PPI corrects the "
    "judge's mean with the human labels; PPI++ leans on the judge only as far as it tracks the humans."
)


def render_trust_html(section: TrustSection) -> str:
    """The section as an HTML fragment (``<section>``; every value escaped, no script, no style attribute)."""
    e = html.escape

    def table(head: list[str], rows: list[list[str]]) -> str:
        few = '<td class="few">'
        return html_table(head, rows, lambda c: (few if isinstance(c, _Few) else "<td>") + e(c) + "</td>")

    parts = ['<section id="trust">', "<h2>Can the judge be trusted?</h2>", f"<p>{e(_source_line(section))}</p>"]
    if section.judges:
        parts += [table(*_table_rows(section)), f"<p>{e(_INTERVAL_NOTE)} {e(_KAPPA_NOTE)}</p>"]
    notes = _notes(section) + _noise_lines(section)
    if notes:
        parts.append("<ul>" + "".join(f"<li>{e(n)}</li>" for n in notes) + "</ul>")
    parts.append(f"<p>{e(_retrieval_line(section))}</p>")
    if section.canaries:
        parts += [
            f"<p>Generated canaries: {section.canary_cases} cases.</p>",
            table(_CANARY_HEAD, _canary_rows(section)),
        ]
    if section.missing:
        parts.append('<ul class="missing">' + "".join(f"<li>Missing: {e(m)}</li>" for m in section.missing) + "</ul>")
    parts.append("</section>")
    return "\n".join(parts) + "\n"


def trust_json(section: TrustSection) -> dict[str, Any]:
    """The section as JSON-ready data (NaN → null): what the JSON report holds."""
    return dict(loads(section.model_dump_json()))
