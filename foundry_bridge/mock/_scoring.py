"""How the emulator scores one row for one testing criterion, and the result entries it serves.

Which scorer runs is read from the evaluator's published contract (``_evaluators.Served.kind``), never from its
name; templates, input presence and NaN rules are ``foundry_bridge.wire``'s:

- ``ranking`` (document retrieval): the project's local metrics (``foundry_bridge.metrics.docret``, the service's
  exact arithmetic), in the ``single`` (1.17+, ``properties``) or ``per_metric`` shape;
- ``computed`` (bleu, gleu, meteor, f1, rouge): azure-ai-evaluation itself (``_nlp.py``);
- ``grader`` (the OpenAI model graders ``label_model``, ``score_model``): the lexical stand-in of ``_graders``
  over the parts their ``input`` messages read, with the label or score, verdict and reason;
- ``judge``, ``safety``, ``stand_in``: a **mock score** from lexical overlap between the mapped inputs (see
  ``overlap``), on the metric's published type, range and direction — never a model's judgement; the ``reason``
  says so. Judges and safety evaluators carry a mock ``sample`` (the judge call) and report token usage.

A criterion without ``data_mapping`` takes the item's fields by name (as the recorded service does). A row missing
every input group is an errored result; its message is assembled when a page is served, because it names the
share of the criterion's rows that failed (``batch_message``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ..contracts import MetricContract
from ..metrics.docret import document_retrieval
from ..wire import is_present, passes, render_mapping, template_fields
from ._evaluators import Served, threshold_of
from ._graders import grade, grader_parts, rendered_messages
from ._nlp import NlpResult, NlpUnavailable, compute
from ._words import tokens

__all__ = [
    "DocretShape",
    "Outcome",
    "Scored",
    "StoredCriterion",
    "batch_message",
    "criterion_from_wire",
    "errored_results",
    "nlp_results",
    "overlap",
    "render_mapping",
    "score",
    "tally",
    "template_fields",
    "tokens",
]

DocretShape = Literal["single", "per_metric"]
Outcome = Literal["passed", "failed", "errored"]
RESULT_TYPE = "azure_ai_evaluator"
SAFETY_MODEL = "azure_ai_system_model"  # the model name the service reports for its safety evaluators (recorded)
# Inputs that describe tools, not text to compare.
_NON_TEXT_INPUTS = frozenset({"tool_definitions", "tool_calls"})
_MISSING = "Either 'conversation' or individual inputs must be provided."


def overlap(candidate: set[str], reference: set[str]) -> float:
    """Overlap coefficient ``|A ∩ B| / min(|A|, |B|)``; 0 when either side is empty."""
    if not candidate or not reference:
        return 0.0
    return len(candidate & reference) / min(len(candidate), len(reference))


@dataclass(frozen=True)
class StoredCriterion:
    """A stored testing criterion, ready to score: its served evaluator, init parameters, data mapping (None:
    the item's fields by name) and the model name its usage is reported under."""

    name: str
    evaluator: Served
    init: Mapping[str, Any]
    mapping: Mapping[str, Any] | None
    docret_shape: DocretShape = "single"
    model: str | None = None

    def inputs(self, item: Mapping[str, Any], sample: Mapping[str, Any] | None) -> dict[str, Any]:
        """The evaluator inputs of one row: rendered from ``data_mapping``, or the item's fields named like the
        contract's inputs."""
        if self.mapping is None:
            return {k: item[k] for k in self.evaluator.contract.inputs if item.get(k) is not None}
        return render_mapping(self.mapping, item, sample)

    def metric_names(self) -> list[str]:
        """The metrics this criterion reports (errored rows carry one errored result each)."""
        served = self.evaluator
        if served.kind == "ranking" and served.spec is not None:
            return [m.name for m in served.spec.metrics] if self.docret_shape == "per_metric" else [served.short]
        return [m.name for m in served.contract.metrics] if served.kind != "computed" else [served.primary.name]


@dataclass
class Scored:
    """One criterion on one row: verdict, results, the computed numbers to keep (``computed`` kind), the error
    detail of an errored row (without the batch prefix), and the mock model usage."""

    verdict: Outcome
    results: list[dict[str, Any]] = field(default_factory=list)
    numbers: tuple[NlpResult, ...] | None = None
    error: str | None = None
    usage: dict[str, int] | None = None


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


def batch_message(detail: str, errored: int, total: int) -> str:
    """An errored row's message as the service writes it: the evaluator's batch summary
    (``floor(100 × errored / total)%``, the share of the criterion's rows that failed) and the row's error."""
    share = math.floor(errored * 100 / total) if total else 0
    return f"(SystemError) {share}% of the batch run failed. (UserError) {detail}"


def _clean(value: Any) -> Any:
    """NaN/inf → None, recursively (JSON has no NaN)."""
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def _missing_detail(served: Served, inputs: Mapping[str, Any]) -> str | None:
    """None when some input group of the contract is fully present, else the service's text and what is missing."""
    groups = served.contract.input_groups
    if not groups or any(all(is_present(inputs.get(k)) for k in g) for g in groups):
        return None
    missing = sorted({k for g in groups for k in g if not is_present(inputs.get(k))})
    needs = " or ".join("(" + ", ".join(g) + ")" for g in groups)
    return f"{served.sdk_class}: {_MISSING} Empty or missing: {', '.join(missing)}; needs {needs}."


def _score_ranking(crit: StoredCriterion, inputs: Mapping[str, Any]) -> Scored:
    spec = crit.evaluator.spec
    assert spec is not None  # a ranking evaluator is a catalog one
    kwargs = {k: v for k, v in crit.init.items() if k in spec.param_names}
    try:
        out = document_retrieval(*(inputs.get(i.name) for i in spec.inputs), **kwargs)
    except Exception as exc:  # the evaluator rejects the row: an errored result, as the service reports it
        return Scored("errored", error=f"{type(exc).__name__}: {exc}")
    short = spec.short_name
    props = _clean(dict(out.get(f"{short}_properties") or {}))
    if crit.docret_shape == "single":
        passed = bool(out.get(f"{short}_passed"))
        result = _result(
            crit.name,
            short,
            _clean(out.get(short)),
            passed,
            out.get(f"{short}_threshold"),
            out.get(f"{short}_reason"),
            properties=props,
        )
        return Scored("passed" if passed else "failed", [result])
    results, verdict = [], False
    for metric in spec.metrics:
        passed = props.get(f"{metric.name}_passed")  # the metrics write every <m>, <m>_passed, <m>_threshold
        threshold = props.get(f"{metric.name}_threshold")
        results.append(_result(crit.name, metric.name, props.get(metric.name), passed, threshold, None))
        verdict = bool(passed) if metric.name == spec.primary_metric else verdict
    return Scored("passed" if verdict else "failed", results)


def nlp_results(crit: StoredCriterion, numbers: tuple[NlpResult, ...]) -> list[dict[str, Any]]:
    """The served results of a computed evaluator from its kept numbers."""
    return [_result(crit.name, n.metric, _clean(n.score), n.passed, n.threshold, None) for n in numbers]


def _score_computed(crit: StoredCriterion, inputs: Mapping[str, Any], unavailable: dict[str, str]) -> Scored:
    try:
        numbers, passed = compute(crit.evaluator, crit.init, inputs, unavailable)
    except NlpUnavailable as exc:
        return Scored("errored", error=f"{crit.evaluator.sdk_class}: {exc}")
    except Exception as exc:  # the evaluator rejects the row
        return Scored("errored", error=f"{crit.evaluator.sdk_class}: {type(exc).__name__}: {exc}")
    kept = tuple(numbers)
    return Scored("passed" if passed else "failed", nlp_results(crit, kept), numbers=kept)


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


def _mock_value(served: Served, metric: MetricContract, value: float) -> int | float:
    """The mock score of ``metric`` for an overlap ``value``: a boolean is 1.0 when the overlap is at least 0.5
    (0.0 for a lower-is-better boolean, whose 1 is the bad outcome); an ordinal or continuous score is
    ``min + round((max − min) × overlap)`` on its published range (1–5 judges, 0–1 graders). Safety severities
    (0–7, lower is better) are 0 ("very low"): the emulator does not run the safety service."""
    if metric.type == "boolean":
        good = value >= 0.5 if served.kind != "safety" or "context" in served.contract.inputs else True
        return float(good if metric.higher_is_better else not good)
    low = metric.min_value if metric.min_value is not None else 1.0
    high = metric.max_value if metric.max_value is not None else 5.0
    if served.kind == "safety":
        return int(low if not metric.higher_is_better else high)
    if metric.type == "continuous":
        return round(low + (high - low) * value, 4)
    return int(low + math.floor((high - low) * value + 0.5))


def _passes(metric: MetricContract, score: float, threshold: float | None) -> bool:
    """A boolean metric's mock score (and one without a threshold) is its verdict; any other is compared."""
    as_verdict = metric.type == "boolean" or threshold is None
    return bool(passes(score, threshold, metric.higher_is_better, as_verdict=as_verdict))


def _mock_sample(model: str, inputs: Mapping[str, Any], reason: str, score: Any) -> tuple[dict[str, Any], dict]:
    prompt = json.dumps({k: v for k, v in inputs.items() if v is not None}, ensure_ascii=False)
    output = f"<S0>mock judge: lexical overlap, no model was called</S0>\n<S1>{reason}</S1>\n<S2>{score}</S2>"
    usage = {"prompt_tokens": len(prompt.split()), "completion_tokens": len(output.split())}
    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    sample = {
        "usage": dict(usage),
        "finish_reason": "stop",
        "model": model,
        "input": [{"role": "user", "content": prompt}],
        "output": [{"role": "assistant", "content": output}],
    }
    return sample, usage


def _reason(served: Served, metric: MetricContract, score: Any, basis: str) -> str:
    if served.kind == "safety":
        return (
            f"Mock score (foundry_bridge emulator, not a safety-service judgement): {metric.name} {score}; the "
            f"emulator does not run Azure AI content safety ({basis})."
        )
    span = "true/false" if metric.type == "boolean" else f"{metric.min_value:g}–{metric.max_value:g}"
    what = "not a model judgement" if served.kind == "judge" else f"a stand-in for {served.short}, not its code"
    return (
        f"Mock score (foundry_bridge emulator, {what}): {basis} → {score} on {span}. "
        "Lexical overlap only; use the cloud or local backend for real judgements."
    )


def _score_mock(crit: StoredCriterion, inputs: Mapping[str, Any]) -> Scored:
    served = crit.evaluator
    candidate, cand_tokens, ref_tokens, others = _split_inputs(inputs)
    value = overlap(cand_tokens, ref_tokens)
    basis = (
        f"{len(cand_tokens & ref_tokens)} shared content word(s) between {candidate} ({len(cand_tokens)}) and "
        f"{' + '.join(others) or 'nothing'} ({len(ref_tokens)}); overlap {value:.2f}"
    )
    results, verdict, usage = [], False, None
    for metric in served.contract.metrics:
        score = _mock_value(served, metric, value)
        threshold = threshold_of(served, metric, dict(crit.init))
        passed = _passes(metric, score, threshold)
        reason = _reason(served, metric, score, basis)
        sample = None
        if crit.model is not None and metric is served.primary:
            sample, usage = _mock_sample(crit.model, inputs, reason, score)
        results.append(_result(crit.name, metric.name, score, passed, threshold, reason, sample=sample))
        verdict = passed if metric is served.primary else verdict
    return Scored("passed" if verdict else "failed", results, usage=usage)


def _score_grader(crit: StoredCriterion, item: Mapping[str, Any], sample: Mapping[str, Any] | None) -> Scored:
    served, messages = crit.evaluator, list(crit.init.get("input") or [])
    try:
        value, passed, label, threshold, reason = grade(
            served.primary.name, crit.init, grader_parts(messages, item, sample)
        )
    except ValueError as exc:
        return Scored("errored", error=f"{served.sdk_class}: {exc}")
    result = _result(crit.name, served.primary.name, value, passed, threshold, reason)
    if label is not None:  # label_model answers with the label it chose
        result["label"] = label
    usage = None
    if crit.model is not None:
        result["sample"], usage = _mock_sample(
            crit.model, {"input": rendered_messages(messages, item, sample)}, reason, label or value
        )
    return Scored("passed" if passed else "failed", [result], usage=usage)


def score(
    crit: StoredCriterion,
    item: Mapping[str, Any],
    sample: Mapping[str, Any] | None = None,
    unavailable: dict[str, str] | None = None,
) -> Scored:
    """Score one row for one criterion. ``unavailable`` (per run) remembers computed evaluators that cannot run
    here, so their failure is not retried on every row."""
    if crit.evaluator.kind == "grader":  # no data mapping: its input messages read the row
        return _score_grader(crit, item, sample)
    inputs = crit.inputs(item, sample)
    problem = _missing_detail(crit.evaluator, inputs)
    if problem is not None:
        return Scored("errored", error=problem)
    kind = crit.evaluator.kind
    if kind == "ranking":
        return _score_ranking(crit, inputs)
    if kind == "computed":
        return _score_computed(crit, inputs, {} if unavailable is None else unavailable)
    return _score_mock(crit, inputs)


def criterion_from_wire(
    wire: Mapping[str, Any], served: Served, docret_shape: DocretShape, model_version: str
) -> StoredCriterion:
    """A stored criterion ready to score. Usage is reported under ``<deployment>-<model version>`` for judges (as
    recorded: ``gpt-4o-mini-2024-07-18``) and under the service's system model for safety evaluators."""
    init = wire.get("initialization_parameters") or {}
    model = None
    if served.kind in ("judge", "grader"):
        model = f"{init.get('deployment_name') or init.get('model') or 'mock-judge'}-{model_version}"
    elif served.kind == "safety":
        model = SAFETY_MODEL
    mapping = wire.get("data_mapping")
    return StoredCriterion(wire["name"], served, init, mapping or None, docret_shape, model)


def tally(
    rows: Iterable[list[tuple[str, Outcome]]], criteria: list[str]
) -> tuple[dict[str, int], list[dict[str, Any]]]:
    """``result_counts`` and ``per_testing_criteria_results`` from per-row ``(criterion, verdict)`` pairs (any
    iterable: the emulator passes a generator, one row at a time).

    As the service counts (derived from the recordings): rows, not results — a row passed when every criterion
    passed, failed when any failed, errored when any errored (a row can be both failed and errored); a criterion
    that errored on every row is left out of the per-criterion list.
    """
    totals = {"total": 0, "passed": 0, "failed": 0, "errored": 0, "skipped": 0}
    per_crit = {name: {"passed": 0, "failed": 0, "errored": 0, "skipped": 0} for name in criteria}
    for row in rows:
        totals["total"] += 1
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
