"""How the emulator scores one row for one testing criterion, and the result entries it returns.

Which scorer runs is read from the catalog entry, never from an evaluator's name (templates, input presence and
thresholds are ``foundry_bridge.wire``'s):

- an evaluator that takes human labels and needs no model (``inputs`` of type ``labels``): the project's local
  document-retrieval metrics (``foundry_bridge.metrics.docret``, the service's exact arithmetic), in the
  ``single`` (1.17+, ``properties``) or ``per_metric`` (one result per catalog metric) shape;
- an LLM judge (``needs_deployment``) or a boolean service evaluator: a **mock score**, lexical token overlap
  between the mapped inputs (see ``overlap``), never a model's judgement — the ``reason`` says so;
- a ``builtin.*`` evaluator absent from the catalog: a generic 0–1 overlap score, documented as meaningless.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ..catalog import EvaluatorSpec, MetricSpec
from ..metrics.docret import document_retrieval
from ..wire import is_present, missing_inputs, render_mapping, resolve_threshold, template_fields

__all__ = [
    "DocretShape",
    "RowScore",
    "errored_results",
    "is_ranking",
    "overlap",
    "render_mapping",
    "result_metrics",
    "score_row",
    "tally",
    "template_fields",
    "tokens",
]

DocretShape = Literal["single", "per_metric"]
Verdict = Literal["passed", "failed", "errored"]
RESULT_TYPE = "azure_ai_evaluator"
_WORD = re.compile(r"[a-z0-9]+")
_STOPWORD_TEXT = (
    "a an the of to in on and or for is are was were be been being it its this that these those with as at by "
    "from what which who whom how do does did i you my your our we they he she them their there here not no can "
    "will would should could may might has have had about into than then so if"
)
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())
# Inputs that describe tools, not text to compare.
_NON_TEXT_INPUTS = frozenset({"tool_definitions", "tool_calls"})


def tokens(value: Any) -> set[str]:
    """Lower-cased alphanumeric words of a value (JSON-encoded if not a string), minus common English stopwords."""
    if value is None:
        return set()
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return {t for t in _WORD.findall(text.lower()) if t not in _STOPWORDS}


def overlap(candidate: set[str], reference: set[str]) -> float:
    """Overlap coefficient ``|A ∩ B| / min(|A|, |B|)``; 0 when either side is empty."""
    if not candidate or not reference:
        return 0.0
    return len(candidate & reference) / min(len(candidate), len(reference))


def _split_inputs(inputs: Mapping[str, Any]) -> tuple[str | None, set[str], set[str], list[str]]:
    """The judged input (``response`` if mapped, else the last present one), its tokens, the others' tokens."""
    present = [k for k, v in inputs.items() if is_present(v) and k not in _NON_TEXT_INPUTS]
    if not present:
        return None, set(), set(), []
    candidate = "response" if "response" in present else present[-1]
    others = [k for k in present if k != candidate]
    ref: set[str] = set()
    for k in others:
        ref |= tokens(inputs[k])
    return candidate, tokens(inputs[candidate]), ref, others


def _passes(metric: MetricSpec | None, score: float, threshold: float | None, higher_is_better: bool = True) -> bool:
    if threshold is None:
        return bool(score)
    better = metric.higher_is_better if metric is not None else higher_is_better
    return score >= threshold if better else score <= threshold


def _result(
    name: str,
    metric: str,
    score: Any,
    passed: bool | None,
    threshold: Any,
    reason: str | None,
    *,
    sample: dict[str, Any] | None = None,
    properties: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One result entry, keys in the service's order."""
    out: dict[str, Any] = {
        "type": RESULT_TYPE,
        "name": name,
        "metric": metric,
        "score": score,
        "label": None if passed is None else ("pass" if passed else "fail"),
        "reason": reason,
        "threshold": threshold,
        "passed": passed,
        "status": "completed",
    }
    if properties is not None:
        out["properties"] = properties
    if sample is not None:
        out["sample"] = sample
    return out


def errored_results(name: str, metrics: list[str], message: str) -> list[dict[str, Any]]:
    """Errored entries as the service writes them: null score/label/threshold/passed, ``sample.error``."""
    return [
        {
            "type": RESULT_TYPE,
            "name": name,
            "metric": metric,
            "score": None,
            "label": None,
            "reason": None,
            "threshold": None,
            "passed": None,
            "sample": {"error": {"code": "FAILED_EXECUTION", "message": message}},
        }
        for metric in metrics
    ]


@dataclass
class RowScore:
    """The results of one criterion on one row, its verdict, and the (mock) model usage it cost."""

    results: list[dict[str, Any]]
    verdict: Verdict
    model: str | None = None
    usage: dict[str, int] = field(default_factory=dict)


def _clean(value: Any) -> Any:
    """NaN/inf → None, recursively (JSON has no NaN)."""
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def _missing_inputs_message(spec: EvaluatorSpec, inputs: Mapping[str, Any]) -> str | None:
    """None when some input group is fully present (``wire.missing_inputs``), else a service-like message."""
    missing = missing_inputs(spec, inputs)
    if missing is None:
        return None
    groups = " or ".join("(" + ", ".join(g) + ")" for g in spec.input_groups)
    cls = spec.sdk_class or spec.short_name
    return (
        f"(SystemError) 100% of the batch run failed. (UserError) {cls}: Either 'conversation' or individual "
        f"inputs must be provided. Empty or missing: {', '.join(missing)}; needs {groups}."
    )


def _score_ranking(
    name: str, spec: EvaluatorSpec, inputs: Mapping[str, Any], init: Mapping[str, Any], shape: DocretShape
) -> RowScore:
    metric_names = [m.name for m in spec.metrics] if shape == "per_metric" else [spec.short_name]
    kwargs = {k: v for k, v in init.items() if k in spec.param_names}
    args = [inputs.get(i.name) for i in spec.inputs]
    try:
        out = document_retrieval(*args, **kwargs)
    except Exception as exc:  # the evaluator rejects the row: an errored result, as the service reports it
        message = f"(SystemError) 100% of the batch run failed. (UserError) {type(exc).__name__}: {exc}"
        return RowScore(errored_results(name, metric_names, message), "errored")
    short = spec.short_name
    props = _clean(dict(out.get(f"{short}_properties") or {}))
    if shape == "single":
        passed = bool(out.get(f"{short}_passed"))
        result = _result(
            name,
            short,
            _clean(out.get(short)),
            passed,
            out.get(f"{short}_threshold"),
            out.get(f"{short}_reason"),
            properties=props,
        )
        return RowScore([result], "passed" if passed else "failed")
    results = []
    verdict: Verdict = "failed"
    for metric in spec.metrics:
        passed = props.get(f"{metric.name}_passed")  # the metrics write every <m>, <m>_passed, <m>_threshold
        results.append(
            _result(name, metric.name, props.get(metric.name), passed, props.get(f"{metric.name}_threshold"), None)
        )
        if metric.name == spec.primary_metric:
            verdict = "passed" if passed else "failed"
    return RowScore(results, verdict)


def _mock_sample(model: str, inputs: Mapping[str, Any], reason: str, score: Any) -> tuple[dict[str, Any], dict]:
    prompt = json.dumps({k: v for k, v in inputs.items() if v is not None}, ensure_ascii=False)
    output = f"<S0>mock judge: lexical overlap, no model was called</S0>\n<S1>{reason}</S1>\n<S2>{score}</S2>"
    usage = {
        "prompt_tokens": len(prompt.split()),
        "completion_tokens": len(output.split()),
    }
    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    sample = {
        "usage": dict(usage),
        "finish_reason": "stop",
        "model": model,
        "input": [{"role": "user", "content": prompt}],
        "output": [{"role": "assistant", "content": output}],
    }
    return sample, usage


def _score_overlap(
    name: str, spec: EvaluatorSpec | None, evaluator_name: str, inputs: Mapping[str, Any], init: Mapping[str, Any]
) -> RowScore:
    candidate, cand_tokens, ref_tokens, others = _split_inputs(inputs)
    value = overlap(cand_tokens, ref_tokens)
    shared = len(cand_tokens & ref_tokens)
    basis = (
        f"{shared} shared content word(s) between {candidate} ({len(cand_tokens)}) and "
        f"{' + '.join(others) or 'nothing'} ({len(ref_tokens)}); overlap {value:.2f}"
    )
    if spec is None:  # uncataloged builtin: generic 0-1 stand-in
        score: Any = round(value, 4)
        threshold = resolve_threshold(None, init)
        threshold = 0.5 if threshold is None else threshold
        passed = score >= threshold
        reason = (
            f"Mock score (foundry_bridge emulator): {evaluator_name} is not in the catalog, so this is a generic "
            f"lexical-overlap stand-in with no meaning for this evaluator; {basis}."
        )
        return RowScore(
            [_result(name, evaluator_name.removeprefix("builtin."), score, passed, threshold, reason)],
            "passed" if passed else "failed",
        )
    metric = spec.metric(spec.primary_metric)
    threshold = resolve_threshold(metric, init)
    if metric.kind == "boolean":
        verdict_bool = value >= 0.5
        score = 1.0 if verdict_bool else 0.0
        passed = verdict_bool
        reason = (
            f"Mock score (foundry_bridge emulator, not a real judgement): {basis}; "
            f"{'grounded' if verdict_bool else 'not grounded'} because overlap is "
            f"{'at least' if verdict_bool else 'below'} 0.5."
        )
        threshold = resolve_threshold(None, init)  # its metric has no threshold parameter: the init one, echoed
        result = _result(name, metric.name, score, passed, threshold, reason)
        return RowScore([result], "passed" if passed else "failed")
    low = int(metric.min_value if metric.min_value is not None else 1)
    high = int(metric.max_value if metric.max_value is not None else 5)
    score = low + math.floor((high - low) * value + 0.5)
    passed = _passes(metric, score, threshold)
    reason = (
        f"Mock score (foundry_bridge emulator, not a model judgement): {basis} → {score} on {low}–{high}. "
        "Lexical overlap only; use the cloud or local backend for real judgements."
    )
    model = str(init.get("deployment_name") or init.get("model") or "mock-judge")
    sample, usage = _mock_sample(model, inputs, reason, score)
    result = _result(name, metric.name, score, passed, threshold, reason, sample=sample)
    return RowScore([result], "passed" if passed else "failed", model=model, usage=usage)


def score_row(
    criterion: Mapping[str, Any],
    spec: EvaluatorSpec | None,
    item: Mapping[str, Any],
    sample: Mapping[str, Any] | None = None,
    *,
    docret_shape: DocretShape = "single",
) -> RowScore:
    """Score one row for one criterion (``criterion`` is its stored wire form)."""
    name = criterion["name"]
    init = criterion.get("initialization_parameters") or {}
    inputs = render_mapping(criterion.get("data_mapping") or {}, item, sample)
    if spec is not None:
        problem = _missing_inputs_message(spec, inputs)
        if problem is not None:
            metrics = result_metrics(spec, criterion["evaluator_name"], docret_shape)
            return RowScore(errored_results(name, metrics, problem), "errored")
        if is_ranking(spec):
            return _score_ranking(name, spec, inputs, init, docret_shape)
    return _score_overlap(name, spec, criterion["evaluator_name"], inputs, init)


def is_ranking(spec: EvaluatorSpec) -> bool:
    """An evaluator scored from human labels without a model (document retrieval)."""
    return not spec.needs_deployment and any(i.type == "labels" for i in spec.inputs)


def result_metrics(spec: EvaluatorSpec | None, evaluator_name: str, docret_shape: DocretShape) -> list[str]:
    """The metric names a criterion reports (used for injected errored rows)."""
    if spec is None:
        return [evaluator_name.removeprefix("builtin.")]
    if is_ranking(spec):
        return [m.name for m in spec.metrics] if docret_shape == "per_metric" else [spec.short_name]
    return [spec.primary_metric]


def tally(rows: list[list[tuple[str, Verdict]]], criteria: list[str]) -> tuple[dict[str, int], list[dict[str, Any]]]:
    """``result_counts`` and ``per_testing_criteria_results`` from per-row ``(criterion, verdict)`` pairs.

    As the service counts (derived from the recordings): rows, not results — a row passed when every criterion
    passed, failed when any failed, errored when any errored (a row can be both failed and errored); a criterion
    that errored on every row is left out of the per-criterion list.
    """
    totals = {"total": len(rows), "passed": 0, "failed": 0, "errored": 0, "skipped": 0}
    per_crit = {name: {"passed": 0, "failed": 0, "errored": 0, "skipped": 0} for name in criteria}
    for row in rows:
        verdicts = [v for _, v in row]
        for name, verdict in row:
            per_crit[name][verdict] += 1
        totals["errored"] += "errored" in verdicts
        totals["failed"] += "failed" in verdicts
        totals["passed"] += all(v == "passed" for v in verdicts)
    per_criteria = [
        {"testing_criteria": name, **counts}
        for name, counts in per_crit.items()
        if counts["passed"] or counts["failed"]
    ]
    return totals, per_criteria
