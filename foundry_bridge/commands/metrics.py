"""``foundry-bridge metrics``: ranking metrics, the negative-query report and the context-assembly check."""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

from .._text import printable
from ..errors import UsageError
from ..metrics.measures import measures_help, measures_labels
from ._options import Finite, deprecated_alias, quiet_option, refuse_overwrite

MEASURES_HELP = measures_help()
MEASURES_LABELS = measures_labels()

if TYPE_CHECKING:
    from ..dataset.columnar import LoadResult
    from ..dataset.spec import LocalMetricsSpec
    from ..mapping import Mapping
    from ..metrics.measures import Measure
    from ..metrics.ranking import RankingResult

__all__ = ["command", "compute_metrics", "per_query_json", "render_text"]


def compute_metrics(data: str | None = None, **options: Any) -> dict[str, Any]:
    """The command's whole JSON document: ``params``, ``per_query``, ``summary``, ``negative_report``, ``assembly``.

    ``data`` (+ ``mapping_path``) or ``qrels`` + ``run``; the other options (``ks``, ``relevance_threshold``,
    ``nan_policy``, ``surface_threshold``) left ``None``/empty take the mapping's ``metrics`` defaults (with
    ``qrels``/``run`` and no mapping: k=10, threshold 1, propagate). ``average`` (``ranking.AVERAGES``; default
    ``trec_eval`` with ``qrels``/``run``, ``kind`` with ``data``): ``trec_eval`` adds the summary ``all``.
    ``measures`` (``parse_measure`` spellings, e.g. ``rr@10``, ``ndcg(gain=exp)``, ``P_5``, ``map``): output
    only these; one without a cutoff is computed at every k, and the cutoffs given extend the k's (only they are
    used when no k is given).
    """
    doc, result = _compute(data, **options)
    return {"params": doc.pop("params"), "per_query": result.per_query, **doc}


@dataclass(frozen=True)
class _Settings:
    """The options after the mapping's ``metrics`` defaults: measures (``None``: all), cutoffs, relevance
    threshold, NaN policy, surface threshold, abstention phrases; ``depth`` = the largest cutoff (the report's k)."""

    measures: tuple[Measure, ...] | None
    ks: tuple[int, ...]
    threshold: int
    nan_policy: str
    surface: float | None
    phrases: list[str] | None
    average: str

    @property
    def depth(self) -> int:
        return self.ks[-1]

    @property
    def read_depth(self) -> int:
        """The documents read per query: the whole list when a condensed measure is asked for (its top k are the
        first k judged documents, wherever they are), else ``depth``."""
        whole = any(m.column.endswith("_cond") or m.cutoff is None for m in self.measures or ())
        return _WHOLE_LIST if whole else self.depth


_WHOLE_LIST = 2**31 - 1


def _settings(
    spec: LocalMetricsSpec,
    *,
    ks: tuple[int, ...] = (),
    relevance_threshold: int | None = None,
    nan_policy: str | None = None,
    surface_threshold: float | None = None,
    measures: tuple[str, ...] = (),
    average: str = "kind",
) -> _Settings:
    chosen, ks_ = _measures_and_ks(measures, ks, spec.k)
    threshold = spec.relevance_threshold if relevance_threshold is None else relevance_threshold
    if threshold < 1:
        raise UsageError(f"--relevance-threshold must be >= 1 (label 0 means irrelevant), got {threshold}")
    surface = spec.surface_threshold if surface_threshold is None else surface_threshold
    policy = nan_policy or spec.nan_policy
    return _Settings(chosen, ks_, threshold, policy, surface, spec.abstention_phrases, average)


def _load(
    data: str | None,
    mapping: Mapping | None,
    mapping_path: str | None,
    qrels: str | None,
    run: str | None,
    s: _Settings,
) -> tuple[LoadResult, dict[str, Any]]:
    """The arrays and assembly rows of the dataset (through the mapping) or of the TREC files, and the input's
    description for ``params``."""
    from ..dataset.columnar import load_dataset, load_trec_files

    if data is not None and mapping is not None and qrels is not None:
        return _with_qrels(data, mapping, qrels, s), {"data": str(data), "qrels": str(qrels)}
    if data is None or mapping is None:
        assert qrels is not None and run is not None  # checked by _compute
        source = {"qrels": str(qrels), "run": str(run), **({"mapping": mapping_path} if mapping_path else {})}
        return load_trec_files(qrels, run, depth=s.read_depth, relevance_threshold=s.threshold), source
    source = {"data": str(data), "mapping": mapping_path or "(packaged default)"}
    depth = s.read_depth
    loaded = load_dataset(data, mapping, depth=depth, relevance_threshold=s.threshold, abstention_phrases=s.phrases)
    ids = loaded[0].query_ids
    if len(set(ids)) < len(ids):
        _refuse_duplicate_ids(data, mapping_path)
    return loaded, source


def _with_qrels(data: str, mapping: Mapping, qrels: str, s: _Settings) -> LoadResult:
    """DATA's rankings labelled by the qrels file alone (kind from those labels, as with --run): DATA's own labels
    are left out, and a warning says so."""
    import warnings

    from ..dataset.columnar import arrays_from_rankings, read_qrels_file
    from ..errors import FoundryBridgeWarning
    from ..judged import ranked_lists

    rankings, own, _ = ranked_lists(data, mapping)
    if own:
        warnings.warn(
            FoundryBridgeWarning(
                f"{own} queries of {data} carry labels of their own: left out, --qrels {qrels} labels every query "
                "(pass human labels as --human-qrels to compare and correct judge labels)"
            ),
            stacklevel=2,
        )
    labels = read_qrels_file(qrels)
    order = [*rankings, *(q for q in labels if q not in rankings)]
    return arrays_from_rankings(rankings, labels, order, depth=s.read_depth, threshold=s.threshold), []


def _labels(qrels: str | None, human_qrels: str | None) -> dict[str, Any]:
    """``params["relevance_labels"]``: who labelled the qrels (``judge-labelled`` with the judge's provenance when
    judge-docs wrote them, else ``human``); refuses human qrels given as judge labels' correction without them."""
    from ..judged import JUDGE_LABELLED, check_human_qrels, read_provenance

    if human_qrels is not None:
        check_human_qrels(qrels, human_qrels)
    prov = read_provenance(qrels) if qrels else None
    if prov is None:
        return {"source": "human" if qrels else "dataset"}
    keys = ("backend", "judge", "rubric", "k", "date", "counts")
    return {"source": JUDGE_LABELLED, **{key: prov[key] for key in keys}}


def _queue_usage(
    labels: dict[str, Any], human_qrels: str | None, queue: str | None, queue_out: str | None, size: int | None
) -> None:
    """The query queue's options need their partners: ``--queue-out`` judge-labelled ``--qrels``, ``--queue``
    ``--human-qrels`` (the labels it weighs), ``--queue-size`` ``--queue-out``."""
    if queue_out is not None and labels["source"] != "judge-labelled":
        raise UsageError("--queue-out ranks queries for human labels on judge-labelled qrels: give --qrels a file "
                         "judge-docs wrote")  # fmt: skip
    if queue is not None and human_qrels is None:
        raise UsageError("--queue weighs the human labels of --human-qrels by the queue's design: give --human-qrels")
    if size is not None and queue_out is None:
        raise UsageError("--queue-size and --queue-seed set the lines --queue-out writes: give --queue-out")


def _refuse_duplicate_ids(data: str, mapping_path: str | None) -> None:
    """A ``DatasetError`` listing ``validate``'s duplicate-query-id errors (each line named): a query counted once
    per copy would move every mean, so ``metrics`` refuses the file as ``validate`` (and ``plan``, ``run``) do."""
    from ..errors import DatasetError
    from ..validate import validate

    report = validate(data, mapping=mapping_path)
    duplicates = [p for p in report.problems if p.code == "duplicate_query_id"]
    more = report.omitted.get("duplicate_query_id", 0)
    listed = [str(p) for p in duplicates] + ([f"... and {more} more not listed"] if more else [])
    head = f"{len(duplicates) + more} row(s) repeat a query id, each would be counted as one more query:"
    raise DatasetError(
        "\n".join([head, *listed]),
        file=str(data),
        hint="give every query a unique id; `foundry-bridge validate` lists the same lines",
    )


def _assembly_summary(assembly: list[dict[str, Any]], s: _Settings) -> dict[str, Any]:
    return {
        "k": s.depth,
        "relevance_threshold": s.threshold,
        "queries_with_context": len(assembly),
        "checked": sum(1 for row in assembly if row["checked"]),
        "with_dropped_relevant": sum(1 for row in assembly if row["dropped_relevant"]),
        "no_document_text": sum(1 for row in assembly if row["no_content"]),
        "per_query": assembly,
    }


def _compute(
    data: str | None = None,
    *,
    mapping_path: str | None = None,
    qrels: str | None = None,
    run: str | None = None,
    human_qrels: str | None = None,
    queue: str | None = None,
    queue_out: str | None = None,
    queue_size: int | None = None,
    queue_seed: int | None = None,
    average: str | None = None,
    progress: Callable[[str, int, int | None], None] | None = None,
    **options: Any,
) -> tuple[dict[str, Any], RankingResult]:
    """``compute_metrics``' document without ``per_query``, and the ranking result that holds it as columns
    (``options``: ``_settings``' keywords; ``progress("metrics", step, 3)`` after the read, the ranking metrics
    and the negative-query report)."""
    from ..dataset.spec import LocalMetricsSpec
    from ..mapping import load_mapping
    from ..metrics.negative import negative_report_from_arrays
    from ..metrics.ranking import ranking_from_arrays

    if data is not None and run:
        raise UsageError("give either DATA (with --qrels to label it) or --qrels/--run, not both")
    if data is None and not (qrels and run):
        raise UsageError("give DATA (a dataset, with --mapping) or both --qrels and --run")
    labels = _labels(qrels, human_qrels)
    _queue_usage(labels, human_qrels, queue, queue_out, queue_size if queue_seed is None else queue_seed)
    mapping = load_mapping(mapping_path) if (data is not None or mapping_path) else None
    spec = mapping.metrics if mapping is not None else LocalMetricsSpec()
    s = _settings(spec, average=average or ("kind" if data is not None and not qrels else "trec_eval"), **options)
    step = progress or (lambda stage, done, total: None)
    step("metrics", 0, 3)
    (arrays, assembly), source = _load(data, mapping, mapping_path, qrels, run, s)
    step("metrics", 1, 3)
    result = ranking_from_arrays(arrays, ks=s.ks, nan_policy=s.nan_policy, measures=s.measures, average_mode=s.average)
    step("metrics", 2, 3)
    negative = negative_report_from_arrays(arrays, k=s.depth, surface_threshold=s.surface)
    step("metrics", 3, 3)
    params = dict(result.params)
    params.update({"surface_threshold": s.surface, "report_k": s.depth, "input": source, "queries": arrays.n_queries})
    params["relevance_labels"] = labels
    doc = {"params": params, "summary": result.summary, "negative_report": negative}
    if human_qrels is not None or queue_out is not None:
        inputs = _judged_inputs(data, mapping, run, qrels, human_qrels)
        if human_qrels is not None:
            doc["judged_vs_human"] = _vs_human(inputs, queue, s)
        if queue_out is not None:
            doc["queue_out"] = _write_queue(inputs, (data, mapping), queue_out, (queue_size, queue_seed), s)
    return {**doc, "assembly": _assembly_summary(assembly, s)}, result


def _judged_inputs(
    data: str | None, mapping: Mapping | None, run: str | None, qrels: Any, human_qrels: str | None
) -> tuple[dict[str, Any], dict[str, dict[str, int]], dict[str, dict[str, int]], int]:
    """The positive ranked queries of DATA or the run file, the judge's and the humans' qrels (empty: none), and how
    many queries DATA declares negative (left out: positive and negative means never mix)."""
    from ..dataset.columnar import read_qrels_file, read_ranking_file
    from ..judged import ranked_lists

    negative: set[str] = set()
    if data is not None and mapping is not None:
        rankings, _, negative = ranked_lists(data, mapping)
    else:
        rankings = read_ranking_file(str(run), mapping)
    human = read_qrels_file(human_qrels) if human_qrels else {}
    positive = {q: r for q, r in rankings.items() if q not in negative}
    return positive, read_qrels_file(qrels), human, len(rankings) - len(positive)


def _vs_human(inputs: tuple[Any, ...], queue: str | None, s: _Settings) -> dict[str, Any]:
    """``judged.compare_with_human`` on the ranked queries; with ``queue`` (``--queue``: the query queue the human
    labels followed) the labels of its labelled prefix weighted by their inclusion probabilities
    (``judged.queue_inclusion``), those after a gap left out, each note a warning too."""
    import warnings

    from ..errors import FoundryBridgeWarning
    from ..judged import compare_with_human, queue_inclusion, read_query_queue

    positive, judged, human, negative = inputs
    probability, extra = None, {}
    if queue is not None:
        inclusion = queue_inclusion(read_query_queue(queue), human, positive)
        for note in inclusion.warnings:
            warnings.warn(FoundryBridgeWarning(f"--queue {queue}: {note}"), stacklevel=2)
        beyond = set(inclusion.beyond)
        human = {q: labels for q, labels in human.items() if q not in beyond}
        probability = inclusion.probability
        extra = {"queue": {"file": queue, "labelled_prefix": inclusion.prefix, "left_out": inclusion.beyond}}
        extra["queue"] |= {"labelled_before": len(inclusion.before), "notes": inclusion.notes}
    out = compare_with_human(positive, judged, human, ks=s.ks, threshold=s.threshold, probability=probability)
    return {**out, "declared_negative_left_out": negative, **extra}


def _write_queue(
    inputs: tuple[Any, ...],
    source: tuple[str | None, Mapping | None],
    path: str,
    draw: tuple[int | None, int | None],
    s: _Settings,
) -> dict[str, Any]:
    """``--queue-out``: the query queue (``judged.query_queue`` at the largest k) as JSONL, one query a line, best
    first, with its query text when DATA has one (``draw``: ``--queue-size``, ``--queue-seed``); returns what
    ``queue_out`` says of it."""
    from .._io import atomic_open, dumps
    from ..judged import QUEUE_MEASURE, query_queue, query_texts

    positive, judged, human, _ = inputs
    (data, mapping), (size, seed) = source, draw
    texts = query_texts(data, mapping) if data is not None and mapping is not None else None
    lines = query_queue(positive, judged, human, k=s.depth, threshold=s.threshold, size=size, seed=seed, texts=texts)
    with atomic_open(path) as fh:
        for line in lines:
            fh.write(dumps(line) + b"\n")
    candidates = lines[0]["queue_candidates"] if lines else 0
    return {"file": path, "lines": len(lines), "candidates": candidates, "size_measure": f"{QUEUE_MEASURE}@{s.depth}"}


def _measures_and_ks(
    measures: tuple[str, ...], ks: tuple[int, ...], default_ks: list[int]
) -> tuple[tuple[Measure, ...] | None, tuple[int, ...]]:
    """The ``--measure`` selection at its cutoffs (``None``: every measure) and the k's to compute."""
    from ..metrics.measures import expand, parse_measure
    from ..metrics.ranking import normalize_ks

    parsed = [parse_measure(m) for m in measures]
    base = ks or (default_ks if any(m.cutoff is None for m in parsed) or not parsed else ())
    try:
        base_ks = normalize_ks(base) if base else ()
    except ValueError as exc:
        raise UsageError(f"--k: {exc}") from None
    if not parsed:
        return None, base_ks
    chosen, cutoffs = expand(parsed, base_ks)
    return chosen, tuple(sorted({*base_ks, *cutoffs}))


def per_query_json(result: RankingResult) -> bytes:
    """``orjson.dumps(result.per_query)``, byte for byte, built from the columns without a dict per query."""
    import msgspec
    import numpy as np

    values = [result.columns[key] for key in result.metric_keys]
    # msgspec writes floats as orjson does (shortest round trip, NaN → null) below 1e16; above, the exponents
    # are spelled differently (orjson 1e+16, msgspec 1e16)
    if any(np.nanmax(np.abs(v), initial=0.0) >= 1e16 for v in values if v.size):
        import orjson

        return orjson.dumps(result.per_query)
    keys, cols = result.column_lists()
    names = [f"c{i}" for i in range(len(keys))]
    row = msgspec.defstruct("PerQuery", [(n, Any) for n in names], rename=dict(zip(names, keys, strict=True)), gc=False)
    return msgspec.json.encode(list(map(row, *cols)))


def _json_document(doc: dict[str, Any], result: RankingResult) -> bytes:
    """``dumps(compute_metrics(...))`` from ``_compute``'s parts, the per-query rows serialized from columns."""
    from .._io import dumps

    head = dumps({"params": doc["params"]})
    tail = dumps({key: value for key, value in doc.items() if key != "params"})
    return head[:-1] + b',"per_query":' + per_query_json(result) + b"," + tail[1:]


def _fmt(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.4f}"
    return str(value)


_LISTED = 10  # query ids listed per line of the text summary


def render_text(doc: dict[str, Any]) -> str:
    """A short human-readable summary of ``compute_metrics``' output."""
    p = doc["params"]
    lines = [
        f"queries: {p['queries']}  k: {', '.join(map(str, p['ks']))}  relevant: label >= {p['relevance_threshold']}"
        f"  NaN policy: {p['nan_policy']}",
        "",
    ]
    summary = doc["summary"]
    keys = [key for key in summary["positive"] if key not in ("queries", "undefined", "undefined_ndcg")]
    every = summary.get("all")  # --average trec_eval: judged queries, both kinds, undefined = 0
    labels = p.get("relevance_labels", {})
    judged = labels.get("source") == "judge-labelled"
    if judged:
        from ..judged import judge_name

        lines += [
            f"relevance labels: judge-labelled ({judge_name(labels)}, {labels['date']}; "
            f"{labels['counts']['unknown']} document(s) unknown, left unlabelled)",
            "",
        ]
    width = 34 if judged else 18
    head = f"{'metric':<{width}}" + (f"{'judged (' + every['average'] + ')':>22}" if every else "")
    lines.append(head + f"{'positive':>12}{'negative':>12}")
    for key in ["queries", "undefined", "undefined_ndcg", *keys]:
        pos, neg = summary["positive"][key], summary["negative"][key]
        all_ = "" if not every else f"{_fmt(every.get(key, '')):>22}"
        name = f"{key} (judge-labelled)" if judged and key in keys else key
        lines.append(f"{name:<{width}}{all_}{_fmt(pos):>12}{_fmt(neg):>12}")
    if every:
        lines.append(
            f"judged (trec_eval): the {every['queries']} queries with qrels, both kinds, undefined counted as 0; "
            f"{every['left_out']} without qrels left out"
        )
    if "judged_vs_human" in doc:
        lines += _vs_human_text(doc["judged_vs_human"])
    if "queue_out" in doc:
        q = doc["queue_out"]
        lines += [
            "",
            f"query queue: {q['lines']} of {q['candidates']} queries without human labels written to {q['file']} "
            f"(size measure: the judge's {q['size_measure']} stratum); label its first lines, as many as you can",
        ]
    agg = doc["negative_report"]["aggregate"]
    lines += [
        "",
        f"negative queries: {agg['negatives']} (declared {agg['by_rule']['declared']}, "
        f"from labels {agg['by_rule']['labels']})",
        f"  surfaced evidence (score >= {_fmt(p['surface_threshold'])}): {_fmt(agg['surfaced_evidence'])}",
        f"  abstained (heuristic): {agg['abstained']} of {agg['with_response']} with a response",
        f"  labelling contradictions: {agg['labelling_contradictions']}",
        f"  positive queries that abstained: {', '.join(agg['positive_abstentions']) or '—'}",
        f"  top-score ROC AUC (positive vs negative): {_fmt(agg['top_score_auc'])}",
    ]
    for row in agg["thresholds"]:
        lines.append(
            f"    abstain below {row['threshold']:.4g}: negatives suppressed {_fmt(row['negatives_suppressed'])}, "
            f"positives lost {_fmt(row['positives_lost'])}"
        )
    asm = doc["assembly"]
    head = f"context assembly (top {asm['k']}): "
    if not asm["queries_with_context"]:
        lines += ["", head + "not checked: no query has a context"]
        return "\n".join(lines) + "\n"
    no_text = [row["query_id"] for row in asm["per_query"] if row["no_content"]]
    lines += [
        "",
        head
        + f"{asm['checked']} checked, {asm['with_dropped_relevant']} dropped a relevant retrieved document"
        + (f"; {len(no_text)} not checked: no document text" if no_text else ""),
    ]
    for row in asm["per_query"]:
        if row["dropped_relevant"]:
            lines.append(f"  {row['query_id']}: dropped {', '.join(row['dropped_relevant'])}")
    if no_text:
        more = f" and {len(no_text) - _LISTED} more" if len(no_text) > _LISTED else ""
        lines.append(f"  not checked (no document text): {', '.join(no_text[:_LISTED])}{more}")
    return printable("\n".join(lines) + "\n")


def _vs_human_text(v: dict[str, Any]) -> list[str]:
    """The judge-vs-human section (``report._vs_human.vs_human_parts``): κ, the confusion table, the corrected means."""
    from ..report._blocks import aligned
    from ..report._vs_human import vs_human_parts

    lines, tables, notes = vs_human_parts(v)
    out = ["", f"judge-labelled vs human labels: {lines[0]}", *(f"  {line}" for line in lines[1:])]
    for head, rows in tables:
        out += [f"  {line}" for line in aligned(head, rows)]
    return [*out, f"  ({notes[0]})", *(f"  {n}" for n in notes[1:])]


@click.command(
    name="metrics",
    help=f"Compute {MEASURES_LABELS}, the negative-query report and the assembly check.\n\n"
    "DATA is a dataset read through --mapping (default: the packaged mapping, whose `metrics` section gives the "
    "defaults), or use --qrels and --run for TREC files ranked as trec_eval ranks them.",
)
@click.argument("data", required=False, type=click.Path(dir_okay=True))
@click.option("--mapping", "mapping_path", type=click.Path(exists=True, dir_okay=False), help="Mapping file.")
@click.option(
    "--qrels",
    type=click.Path(exists=True, dir_okay=False),
    help="TREC qrels file: with --run, or labelling DATA's rankings (judge-docs' output: metrics say judge-labelled).",
)
@click.option("--run", type=click.Path(exists=True, dir_okay=False), help="TREC run file (with --qrels).")
@click.option(
    "--human-qrels",
    type=click.Path(exists=True, dir_okay=False),
    help="Human qrels for some queries: κ against the judge-labelled --qrels and PPI-corrected means.",
)
@click.option(
    "--queue-out",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write the queries to give human labels next (JSONL, best first: query, the judged documents to label, the "
    "queue's design) for judge-labelled --qrels: label its first lines, as many as you can (docs/trust.md).",
)
@click.option(
    "--queue-size",
    type=click.IntRange(1, None),
    default=None,
    help="--queue-out writes only its first N lines (default: every query without human labels).",
)
@click.option(
    "--queue-seed",
    type=click.IntRange(0, 2**32 - 1),
    default=None,
    help="Seed of --queue-out's random order (the same inputs and seed give the same queue; default 24).",
)
@click.option(
    "--queue",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="The --queue-out file the --human-qrels labels followed: its labelled prefix weighted by the queue's "
    "inclusion probabilities (labels after an unlabelled place are left out, with a warning).",
)
@click.option("--k", "ks", type=click.IntRange(1, 1_000_000), multiple=True, help="Cutoff; repeat for several.")
@click.option(
    "--measure",
    "measures",
    multiple=True,
    metavar="MEASURE",
    help="Output only this measure (repeatable), e.g. rr@10, MRR@10, ndcg(gain=exp)@3; without @k at every --k, "
    "except map (ap), rprec and bpref: without @k the whole ranking, as trec_eval's map, Rprec and bpref. "
    f"Measures: {MEASURES_HELP}.",
)
@click.option(
    "--relevance-threshold",
    type=click.IntRange(-(2**63), 2**63 - 1),
    default=None,
    help="Relevant ⇔ label ≥ this (default 1).",
)
@click.option(
    "--nan-policy",
    type=click.Choice(["propagate", "drop", "zerofill"]),
    default=None,
    help="The per-kind means' rule for a query whose metric is undefined (no relevant label): propagate (the mean "
    "is null if any is), drop (the mean of the defined ones), zerofill (count it as 0). Default: the mapping's, else "
    "propagate.",
)
@click.option(
    "--average",
    type=click.Choice(["trec_eval", "kind"]),
    default=None,
    help="trec_eval: add the mean over the judged queries, both kinds, undefined = 0, unjudged left out (trec_eval "
    "-c, pytrec_eval, ir_measures); kind: the per-kind means only. Default: trec_eval with --qrels/--run, kind "
    "with DATA.",
)
@click.option("--surface-threshold", type=Finite(), default=None, help="A top-k score ≥ this surfaced evidence.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["json", "text"]),
    default="json",
    show_default=True,
    help="Output format: the whole JSON document, or a readable summary.",
)
@click.option("--out", type=click.Path(dir_okay=False), default=None, help="Write here (atomically).")
@deprecated_alias("-o", "--output", new="--out", dest="out")
@quiet_option
def command(data: str | None, fmt: str, out: str | None, quiet: bool, **options: Any) -> None:
    """``foundry-bridge metrics``: see the help text above (``options``: ``_compute``'s keywords)."""
    from .._io import atomic_open
    from ._progress import command_progress

    inputs = [data, *(options.get(k) for k in ("mapping_path", "qrels", "run", "human_qrels", "queue"))]
    refuse_overwrite({"--out": out, "--queue-out": options.get("queue_out")}, inputs)
    progress, done = command_progress(quiet)
    doc, result = _compute(data, progress=progress, **options)
    done()
    payload = _json_document(doc, result) + b"\n" if fmt == "json" else render_text(doc).encode()
    if out:
        with atomic_open(out) as fh:
            fh.write(payload)
    else:
        sys.stdout.flush()
        sys.stdout.buffer.write(payload)
        sys.stdout.buffer.flush()
