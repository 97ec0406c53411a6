"""What a result row means, written once: templates, input presence, thresholds, numbers, result shapes.

The cloud normalizer, the emulator's scoring and the local backend read these rules, and the criteria builder and
the validator write and check templates with them, so one row gives the same ``ResultRow`` on every backend
(``tests/test_wire_parity.py``). Each function's docstring states its rule and why.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any, Literal, NamedTuple

from .catalog import DOCUMENT_RETRIEVAL, EvaluatorSpec, MetricSpec
from .errors import redact

__all__ = [
    "ABSTENTION_IS_CORRECT",
    "LONE_TEMPLATE",
    "TEMPLATE",
    "MetricReading",
    "canonical_key",
    "classify_service_error",
    "finite_number",
    "is_present",
    "item_template",
    "missing_inputs",
    "parse_template",
    "passed_for_kind",
    "passes",
    "range_error",
    "read_metric",
    "render",
    "render_mapping",
    "resolve_threshold",
    "template_fields",
    "to_bool",
    "to_number",
]

_FIELD = r"\{\{\s*(item|sample)\.([^{}\s]+)\s*\}\}"
TEMPLATE = re.compile(_FIELD)  # groups: source ("item" | "sample"), a dotted path (a digit indexes a list)
LONE_TEMPLATE = re.compile(rf"^\s*{_FIELD}\s*$")  # a value that is one template and nothing else
_ABSENT = object()

# -- templates ---------------------------------------------------------------------------------------------------


def item_template(field: str) -> str:
    """``"query"`` → ``"{{item.query}}"`` (what the criteria builder writes)."""
    return "{{item." + field + "}}"


def parse_template(template: Any) -> tuple[str, str] | None:
    """``"{{item.a.b}}"`` → ``("item", "a.b")``; None when ``template`` is not exactly one template."""
    m = LONE_TEMPLATE.match(template) if isinstance(template, str) else None
    return (m.group(1), m.group(2)) if m else None


def template_fields(template: str) -> list[tuple[str, str]]:
    """``"{{item.query}} / {{sample.output_text}}"`` → ``[("item", "query"), ("sample", "output_text")]``."""
    return [(m.group(1), m.group(2)) for m in TEMPLATE.finditer(template)]


def _lookup(source: Mapping[str, Any], path: str) -> Any:
    if path in source:
        return source[path]
    value: Any = source
    for part in path.split("."):
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return _ABSENT
    return value


def render(template: Any, sources: Mapping[str, Mapping[str, Any]]) -> Any:
    """One data-mapping value resolved against ``sources`` (``{"item": ..., "sample": ...}``).

    A lone template gives the value as is; templates inside longer text are replaced by the value's text. A field
    that is absent or null gives None, and so does a text that refers to one (half a sentence is not the input the
    user mapped). A non-string value is a constant and is returned unchanged.
    """
    if not isinstance(template, str):
        return template
    lone = parse_template(template)
    if lone is not None:
        value = _lookup(sources.get(lone[0]) or {}, lone[1])
        return None if value is _ABSENT else value
    parts: list[str] = []
    at = 0
    for m in TEMPLATE.finditer(template):
        value = _lookup(sources.get(m.group(1)) or {}, m.group(2))
        if value is _ABSENT or value is None:
            return None
        parts += [template[at : m.start()], value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)]
        at = m.end()
    return "".join(parts) + template[at:]


def render_mapping(
    data_mapping: Mapping[str, Any], item: Mapping[str, Any], sample: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The evaluator inputs of one row; an input whose value renders to None is left out (see ``render``)."""
    sources = {"item": item, "sample": sample or {}}
    out: dict[str, Any] = {}
    for key, template in data_mapping.items():
        value = render(template, sources)
        if value is not None:
            out[key] = value
    return out


# -- input presence ----------------------------------------------------------------------------------------------


def is_present(value: Any) -> bool:
    """Is this input present? ``None`` and blank text (empty or whitespace only) are absent; everything else is a
    value, **an empty list included**.

    Why, from what the service runs (azure-ai-evaluation, whose messages the recorded output items carry):
    ``null`` fields are absent (``groundedness.json``: rows with ``query: null`` are judged in the
    context + response form; ``eval_ai_assisted_nlp.json``: "Either 'conversation' or individual inputs must be
    provided" for a missing input). An empty ``retrieved_documents`` list is a result, not a missing input: the
    document-retrieval evaluator scores it 0 on every metric; an empty ``retrieval_ground_truth`` list reaches the
    evaluator, which rejects it with its own message ("must contain at least one item"). Blank text is nothing to
    judge: groundedness treats blank context as no context and its agent form needs a non-empty query and response.
    """
    return value is not None and not (isinstance(value, str) and not value.strip())


def missing_inputs(spec: EvaluatorSpec, inputs: Mapping[str, Any]) -> list[str] | None:
    """None when every input of some input group of ``spec`` is present, else the inputs that are missing
    (sorted, over all groups)."""
    groups = spec.input_groups or (tuple(sorted(spec.required_inputs)),)
    if any(all(is_present(inputs.get(k)) for k in group) for group in groups):
        return None
    return sorted({k for g in groups for k in g if not is_present(inputs.get(k))})


# -- numbers, thresholds -----------------------------------------------------------------------------------------


def to_number(value: Any) -> float | None:
    """A number as float, or None: ``bool`` is not a number (``True`` is a verdict, not 1); ``int``/``float`` and
    text that ``float()`` reads (``" 0.5 "``, ``"3"``, ``"nan"``) are. NaN and ±inf are returned as they are."""
    if type(value) is float or type(value) is int:  # the common cases, first (a bool's type is bool, not int)
        return float(value)
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):  # subclasses (numpy floats)
        return float(value)
    try:
        return float(value.strip()) if isinstance(value, str) else None
    except ValueError:
        return None


def finite_number(value: Any) -> float | None:
    """``to_number``, with NaN and ±inf read as no number (thresholds: a NaN threshold is no threshold)."""
    out = to_number(value)
    return out if out is not None and math.isfinite(out) else None


_VERDICTS = {"pass": True, "passed": True, "true": True, "fail": False, "failed": False, "false": False}


def to_bool(value: Any) -> bool | None:
    """A verdict: ``True``/``False``, or the text ``pass``/``passed``/``true`` and ``fail``/``failed``/``false``
    (any case); anything else, numbers included, is unknown (None)."""
    if isinstance(value, bool):
        return value
    return _VERDICTS.get(value.strip().lower()) if isinstance(value, str) else None


def resolve_threshold(metric: MetricSpec | None, init: Mapping[str, Any]) -> int | float | None:
    """The pass threshold of ``metric`` under a criterion's init parameters: the parameter the catalog names for
    it (``threshold`` for a metric not in the catalog) when it holds a finite number (kept as written, int or
    float: it enters cache keys), else the catalog's default (None for an unknown metric)."""
    param = metric.threshold_param if metric is not None else "threshold"
    value = init.get(param) if param else None
    if isinstance(value, int | float) and finite_number(value) is not None:
        return value
    return metric.default_threshold if metric is not None else None


def passes(
    score: Any,
    threshold: Any,
    higher_is_better: bool = True,
    *,
    nan: Literal["fail", "unknown"] = "fail",
    as_verdict: bool = False,
) -> Any:
    """Does ``score`` pass? ``score >= threshold`` when higher is better, ``score <= threshold`` when lower is better
    (holes, holes_ratio, the safety severities): **a score equal to its threshold passes**.

    The rule is written with the comparison operators alone, so it serves a Python number (a ``bool`` back) and a
    numpy array (elementwise, a bool array back) alike, and keeps Python's semantics for any other type: a
    threshold ``True`` is 1; an incomparable one (``None``, text) raises ``TypeError``, as azure-ai-evaluation's
    DocumentRetrievalEvaluator does on every call: it compares ``value >= threshold`` exactly so
    (``metrics.docret`` is tested against the installed library).

    ``nan``: a NaN score **fails** (``"fail"``, the default: every comparison with NaN is false; the library fails an
    undefined fidelity so), or has **no verdict** (``"unknown"``: ``None`` for a number, NaN in a float array of
    1.0/0.0; the trust statistics, where NaN means "not rated" and a missing human score gives no derived pass).

    ``as_verdict``: the score is itself a verdict (a boolean metric's 1/0, or a metric with no threshold): truthy
    passes when higher is better, falsy when lower is better, and ``threshold`` is not read (Python numbers only;
    how the emulator reads its boolean mock scores).
    """
    if as_verdict:
        return bool(score) if higher_is_better else not score
    verdict = score >= threshold if higher_is_better else score <= threshold
    if nan == "fail":
        return verdict
    if isinstance(score, int | float):  # a number (numpy's float64 included): NaN is the one unequal to itself
        return None if score != score else verdict
    import numpy as np  # only arrays come here: wire itself stays numpy-free at import

    return np.where(np.isnan(score), np.nan, verdict)


def range_error(metric: MetricSpec | None, score: float | None) -> str | None:
    """``JUDGE_SCORE_OUT_OF_RANGE: ...`` when a finite ``score`` lies outside the range the catalog documents for
    ``metric`` (a judge answering 99 or -7 on its 1-5 scale), else None (no range declared, no score, in range).

    Such a score is no reading of the scale: the row is an error, counted and never averaged, passed or charted,
    on every backend (the cloud normalizer, the emulator's rows through it, the local judges all call this). A
    difference below 1e-9 of the bound is float rounding, not a different answer.
    """
    if metric is None or score is None or not math.isfinite(score):
        return None
    lo, hi = metric.min_value, metric.max_value
    below = lo is not None and score < lo - 1e-9 * max(1.0, abs(lo))
    above = hi is not None and score > hi + 1e-9 * max(1.0, abs(hi))
    if not (below or above):
        return None
    scale = f"{'' if lo is None else f'{lo:g}'}–{'' if hi is None else f'{hi:g}'}"
    return f"JUDGE_SCORE_OUT_OF_RANGE: the {metric.name} score {score:g} is outside its range {scale}: not averaged"


ABSTENTION_IS_CORRECT = "abstained on a negative query: the correct outcome (this evaluator fails every abstention)"


def passed_for_kind(
    spec: EvaluatorSpec | None, passed: bool | None, *, kind: str, abstained: bool | None
) -> tuple[bool | None, str | None]:
    """An evaluator's verdict read for the query's kind: ``(passed, note)``.

    The verdict stands as given, except for an evaluator whose catalog entry says ``abstention_correct_on_negative``
    (``builtin.quality_grader``: its code fails a response that abstains): on a negative query (nothing relevant
    exists) a response that abstained is the correct outcome, so a failed verdict reads as passed, with
    ``ABSTENTION_IS_CORRECT`` as the note. ``abstained`` is the report's abstention reading of the response
    (``metrics.abstention``); unknown (None) changes nothing, and neither does a positive query.
    """
    if (
        passed is False
        and kind == "negative"
        and abstained is True
        and spec is not None
        and spec.abstention_correct_on_negative
    ):
        return True, ABSTENTION_IS_CORRECT
    return passed, None


# -- result shapes -----------------------------------------------------------------------------------------------

_SERVICE_SPELLING, _CATALOG_SPELLING = "total_groundtruth_documents", "total_ground_truth_documents"


def canonical_key(key: str) -> str:
    """The service's spelling of a metric → the catalog's (``total_groundtruth_documents``), also inside
    ``<metric>_result`` style keys."""
    if key == _SERVICE_SPELLING or key.startswith(_SERVICE_SPELLING + "_"):
        return _CATALOG_SPELLING + key[len(_SERVICE_SPELLING) :]
    return key


class MetricReading(NamedTuple):
    """One metric read from a result: score, verdict, threshold, and the ``CODE: message`` when unusable."""

    metric: str
    score: float | None
    label: str | None
    passed: bool | None
    threshold: float | None
    error: str | None


def read_metric(props: Mapping[str, Any], metric: str, spec: MetricSpec | None = None) -> MetricReading:
    """Read ``metric`` from a result dict keyed ``<m>``, ``<m>_result``, ``<m>_passed``, ``<m>_threshold`` (the
    document-retrieval ``properties`` the service returns, azure-ai-evaluation's ``document_retrieval_properties``
    and the emulator's both; keys as ``canonical_key`` spells them).

    ``passed`` is ``<m>_passed``, else read from the label. The score: absent → ``MISSING_SCORE``; present but
    null, NaN or ±inf → ``NAN_SCORE`` (the metric is undefined for this row, e.g. fidelity when every label equals
    a minimum ≥ 1; JSON has no NaN, so the service and the emulator write null), with label and verdict kept.
    A finite score outside ``spec``'s range (``range_error``) is ``JUDGE_SCORE_OUT_OF_RANGE``: no score, no verdict.
    """
    label = props.get(metric + "_result")
    label = label if isinstance(label, str) else None
    passed = to_bool(props.get(metric + "_passed"))
    if passed is None and label is not None:
        passed = to_bool(label)
    threshold = finite_number(props.get(metric + "_threshold"))
    raw = props.get(metric, _ABSENT)
    score = None if raw is _ABSENT else to_number(raw)
    error = None
    if score is not None and math.isfinite(score):  # the common case, first
        error = range_error(spec, score)
        if error is not None:
            score, passed = None, None
    elif raw is _ABSENT:
        error = f"MISSING_SCORE: no {metric} value in the {DOCUMENT_RETRIEVAL.short_name} output"
    elif raw is None or (score is not None and not math.isfinite(score)):
        error = f"NAN_SCORE: {metric} is undefined for this row (e.g. fidelity when every label equals the minimum)"
        score = None
    elif score is None:
        error = f"MISSING_SCORE: {metric} is not a number ({raw!r})"
    return MetricReading(metric, score, label, passed, threshold, error)


# azure-ai-evaluation's texts for a row it cannot take → the code its exception category (and the local backend)
# gives. The first is recorded (eval_ai_assisted_nlp.json); the second is the library's document-retrieval text,
# which the service wraps the same way ("(SystemError) 100% of the batch run failed. (UserError) <text>").
_SERVICE_INPUT_ERRORS = {
    "Either 'conversation' or individual inputs must be provided": "MISSING_INPUT",
    "'retrieval_ground_truth' parameter must contain at least one item": "MISSING_FIELD",
}


def classify_service_error(error: str | None) -> str | None:
    """A result's ``CODE: message`` as the service wrote it, with one refinement: the service reports every
    evaluator failure as ``FAILED_EXECUTION``; one whose message is azure-ai-evaluation's text for a missing input
    (or an empty ground-truth list) gets the code the local backend gives the same row, ``MISSING_INPUT``
    (``MISSING_FIELD``), followed by the service's text."""
    prefix = "FAILED_EXECUTION: "
    if error is None:
        return None
    error = redact(error)  # the service's text may echo a key or token: never stored in clear
    if not error.startswith(prefix):
        return error
    for text, code in _SERVICE_INPUT_ERRORS.items():
        if text in error:
            return f"{code}: {error[len(prefix) :]}"
    return error
