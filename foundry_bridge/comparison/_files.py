"""``compare --qrels QRELS RUN…``: run files (TREC, BEIR ``.json``, the project's JSONL) scored with the local
measures at compare time, then compared by the one engine (``_compare.compare_sources``: the same join, tests,
family, gate, JUnit and rendering as run folders). No run folder, no Foundry column.

The per-query values are trec_eval's with ``-c`` (and pytrec_eval's on the topics a run has):

- the topics are the qrels' (a BEIR ``.tsv`` or a TREC qrels file), in the qrels' order, the same for every run, so
  every pair is paired on every topic. A run's query absent from the qrels is left out (trec_eval evaluates judged
  topics only) and counted in a warning; a qrels topic a run lacks is scored as an empty ranking (``-c``: 0), and
  named in a warning.
- each measure is ``metrics.ranking.compute``'s (``metrics.measures``' registry: any measure, any cutoff, computed
  now — ``ndcg@20`` needs no folder made at 20). A topic whose value the kernels leave undefined — judged, but no
  label reaches the relevance threshold (n_rel = 0, or an ideal DCG of 0) — counts as 0, the value trec_eval and
  pytrec_eval print for it. The mean over the topics is then trec_eval's ``-c`` mean (``all``).
- ``qrels`` may be several files (``compare --qrels`` given once per run, each system's documents judged
  separately): their labels merged as trec_eval reads the files concatenated — the topics in order of first
  appearance, a (query, document) labelled in two files keeps the later file's label, counted in a warning. Who
  labelled them (``judged.qrels_labels``: human, or judge-labelled with the judge and rubric) is the caller's
  ``labels``, recorded in ``Comparison.qrels`` with its notes among the warnings every output shows.
- every topic is in the one section, shown as ``positive`` (trec_eval has no negative queries). The means are
  ``metrics.ranking.average``'s ``trec_eval`` mode (``metrics --average trec_eval``'s numbers).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..metrics.measures import Measure, is_measure_name, parse_measure
from ..report._model import MetricInfo
from ._compare import _TWO_RUNS, CompareOptions, Comparison, RunSummaryRow, compare_sources, run_names
from ._gates import GateSpec, as_gate
from ._join import Engine, arrays_table, engine

__all__ = ["DEFAULT_MEASURES", "TOPICS_RULE", "ScoredRuns", "compare_run_files", "score_run_files"]

DEFAULT_MEASURES = ("ndcg@10", "rr@10", "recall@10")  # the sweep's measures at the default k (run folders': stage k)
DEFAULT_K = 10  # a measure named without a cutoff (``ndcg``) is taken at this k
TOPICS_RULE = (
    "trec_eval -c: every qrels topic, in one section; a run's query not in the qrels left out, a qrels topic a run "
    "lacks scored as an empty ranking; a judged topic without a relevant label counts as 0"
)


def _measures(metrics: Sequence[str] | None, fail_on: Sequence[str | GateSpec]) -> list[Measure]:
    """The measures to compute: ``--metric``'s (or ``DEFAULT_MEASURES``) and the gated ones, each at its cutoff
    (``DEFAULT_K`` when it has none), distinct, in the order given. A name that is no local measure is left to
    ``_compare._resolve`` (its did-you-mean error names the measures computed)."""
    specs = list(metrics or DEFAULT_MEASURES) + [as_gate(s).metric for s in fail_on]
    out: dict[Measure, None] = {}
    for spec in specs:
        if not is_measure_name(spec):
            continue
        m = parse_measure(spec)
        m = m if m.cutoff is not None else m @ DEFAULT_K
        _ = m.column  # a parameter setting the kernels compute (a UsageError otherwise)
        out[m] = None
    if not out:
        raise UsageError("compare --qrels compares local measures: give --metric e.g. ndcg@10, rr@10, recall@100")
    return list(out)


def _topic_values(
    rankings: dict[str, list[tuple[float | None, str]]],
    qrels: dict[str, dict[str, int]],
    topics: list[str],
    measures: Sequence[Measure],
    threshold: int,
) -> dict[str, Any]:
    """Each measure's value on every topic (``topics`` order), trec_eval's: undefined → 0, as
    ``metrics.ranking.average``'s ``trec_eval`` mode counts it (module docstring). A condensed measure
    (``ndcg_cond@10``) reads each whole ranking (its top k are the first k judged documents, wherever they are)."""
    import numpy as np

    from ..dataset.columnar import arrays_from_rankings
    from ..metrics.ranking import compute

    ks = sorted({m.cutoff for m in measures if m.cutoff is not None})
    depth = ks[-1]
    if any(m.column.endswith("_cond") for m in measures):
        depth = max(depth, max((len(r) for r in rankings.values()), default=0))
    arrays = arrays_from_rankings(rankings, qrels, topics, depth=depth, threshold=threshold)
    columns = compute(arrays, ks, extra=measures)
    return {m.key: np.nan_to_num(columns[m.key], nan=0.0) for m in measures}


def _run_warnings(label: str, rankings: dict[str, Any], qrels: dict[str, Any], topics: list[str]) -> list[str]:
    """What trec_eval's rules did to this run: unjudged queries left out, missing topics scored empty."""
    out = []
    unjudged = [q for q in rankings if q not in qrels]
    if unjudged:
        out.append(
            f"{label}: {len(unjudged)} query(ies) not in the qrels left out (trec_eval evaluates judged topics "
            f"only): {', '.join(unjudged[:10])}{' …' if len(unjudged) > 10 else ''}"
        )
    missing = [q for q in topics if q not in rankings]
    if missing:
        out.append(
            f"{label}: {len(missing)} qrels topic(s) not in the run scored as an empty ranking (trec_eval -c): "
            f"{', '.join(missing[:10])}{' …' if len(missing) > 10 else ''}"
        )
    return out


QrelsFiles = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]


def _files(qrels: QrelsFiles) -> list[str | os.PathLike[str]]:
    return [qrels] if isinstance(qrels, str | os.PathLike) else list(qrels)


def _read_qrels(files: Sequence[str | os.PathLike[str]]) -> tuple[dict[str, dict[str, int]], list[str]]:
    """The qrels files' labels merged (module docstring) and a warning counting the labels a later file replaced."""
    from ..dataset.columnar import read_qrels_file

    merged: dict[str, dict[str, int]] = {}
    replaced: list[str] = []
    for path in files:
        for qid, labels in read_qrels_file(path).items():
            known = merged.setdefault(qid, {})
            replaced += [f"{qid}/{d}" for d, g in labels.items() if known.get(d, g) != g]
            known.update(labels)
    warnings = []
    if replaced:
        warnings.append(
            f"{len(replaced)} (query, document) pair(s) labelled differently in the qrels files, the later file's "
            f"label kept (trec_eval on the files concatenated): {', '.join(replaced[:10])}"
            f"{' …' if len(replaced) > 10 else ''}"
        )
    return merged, warnings


@dataclass
class ScoredRuns:
    """Run files scored on a qrels file (``score_run_files``): the topics, each run's per-topic values by measure key
    (``topics`` order) and what trec_eval's rules did to each run (``warnings``)."""

    topics: list[str]
    names: list[str]
    values: list[dict[str, Any]]
    warnings: list[str]


def score_run_files(
    qrels: QrelsFiles,
    runs: Sequence[str | os.PathLike[str]],
    measures: Sequence[str | Measure],
    *,
    relevance_threshold: int = 1,
    mapping_path: str | os.PathLike[str] | None = None,
    labels: Sequence[str] | None = None,
) -> ScoredRuns:
    """Each run file's per-topic values of ``measures`` (each with a cutoff) on the qrels' topics, trec_eval's with
    ``-c`` (module docstring; ``qrels`` one file or several, merged). One run's rankings are in memory at a time."""
    from ..dataset.columnar import read_ranking_file

    if relevance_threshold < 1:
        raise UsageError(f"--relevance-threshold must be >= 1 (label 0 means irrelevant), got {relevance_threshold}")
    parsed = [parse_measure(m) for m in measures]
    if any(m.cutoff is None for m in parsed):
        raise UsageError("score_run_files: give every measure its cutoff (ndcg@10)")
    judged, merge_warnings = _read_qrels(_files(qrels))
    topics = list(judged)
    mapping = None
    if any(Path(r).suffix.lower() == ".jsonl" for r in runs):
        from ..mapping import load_mapping

        mapping = load_mapping(mapping_path)
    names = run_names(runs, labels, stem=True)
    out = ScoredRuns(topics, names, [], merge_warnings)
    for path, name in zip(runs, names, strict=True):
        rankings = read_ranking_file(path, mapping)
        out.values.append(_topic_values(rankings, judged, topics, parsed, relevance_threshold))
        out.warnings += _run_warnings(name, rankings, judged, topics)
        del rankings
    return out


def compare_run_files(
    qrels: QrelsFiles,
    runs: Sequence[str | os.PathLike[str]],
    *,
    metrics: Sequence[str] | None = None,
    fail_on: Sequence[str | GateSpec] = (),
    all_pairs: bool | None = None,
    relevance_threshold: int = 1,
    mapping_path: str | os.PathLike[str] | None = None,
    labels: Sequence[str] | None = None,
    relevance_labels: tuple[dict[str, Any], Sequence[str]] | None = None,
    **options: Any,
) -> Comparison:
    """Compare run files on a qrels file; the first run is the baseline (module docstring: the values' rules).

    ``metrics``: the local measures compared (any ``parse_measure`` spelling, at any cutoff; default
    ``DEFAULT_MEASURES``), and ``fail_on``'s measures are computed too: the family is every measure computed ×
    pairs. ``all_pairs``: test every pair of runs (``Comparison.all_pairs``: ranking, letters, win/tie/loss, effect
    sizes); ``None``: when there are three runs or more. ``relevance_threshold``: relevant ⇔ label ≥ it (trec_eval
    ``-l``). ``mapping_path``: the mapping a ``.jsonl`` run is read through (default: the packaged one).
    ``qrels``: one file or several, merged. ``relevance_labels``: who labelled them and the notes to show
    (``judged.qrels_labels``, which the command calls; ``None``: not said).
    ``options``: ``CompareOptions``' other fields (seed, n_resamples, alpha, correction, gate_correction, …)."""
    import numpy as np

    from ..metrics.ranking import average

    if len(runs) < 2:
        raise UsageError(_TWO_RUNS)
    measures = _measures(metrics, fail_on)
    scored = score_run_files(
        qrels, runs, measures, relevance_threshold=relevance_threshold, mapping_path=mapping_path, labels=labels
    )
    topics, names = scored.topics, scored.names
    infos = [
        MetricInfo(
            key=m.key, source="local", metric=m.key, higher_is_better=m.higher_is_better, definition=m.definition
        )
        for m in measures
    ]
    judged = np.ones(len(topics), bool)  # every topic is a qrels topic
    means = [{k: average(v, judged, "trec_eval") for k, v in values.items()} for values in scored.values]

    def describe(chosen: list[str]) -> tuple[list[str], list[RunSummaryRow]]:
        rows = [
            RunSummaryRow(
                label=name,
                run_dir=str(path),
                queries=len(topics),
                positive=len(topics),
                negative=0,
                means={f"positive:{k}": v for k, v in m.items() if k in chosen},
            )
            for name, path, m in zip(names, runs, means, strict=True)
        ]
        return list(chosen), rows

    opts = CompareOptions(
        metrics=metrics,
        fail_on=fail_on,
        all_pairs=len(runs) >= 3 if all_pairs is None else all_pairs,
        judge_tests=False,
        **options,
    )
    with engine() as (work, con):
        tables = [
            arrays_table(topics, values, infos, str(path), work, i)
            for i, (values, path) in enumerate(zip(scored.values, runs, strict=True))
        ]
        comparison = compare_sources(Engine(con, tables, work), names, describe, opts)
    who, notes = relevance_labels or (None, ())
    comparison.warnings = [*notes, *scored.warnings, *comparison.warnings]
    comparison.qrels = {
        "qrels": ", ".join(os.fspath(f) for f in _files(qrels)),
        **({"labels": who} if who is not None else {}),
        "runs": {name: str(path) for name, path in zip(names, runs, strict=True)},
        "topics": len(topics),
        "relevance_threshold": relevance_threshold,
        "measures": [m.key for m in measures],
        "rule": TOPICS_RULE,
    }
    return comparison
