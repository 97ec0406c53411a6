"""The code evaluators that need no model, computed for real by azure-ai-evaluation (imported only here, and only
when such an evaluator runs): BleuScoreEvaluator, GleuScoreEvaluator, MeteorScoreEvaluator, F1ScoreEvaluator,
RougeScoreEvaluator — each the class named after the builtin (``_evaluators.Served.sdk_class``).

The service's shapes, as recorded (``eval_ai_assisted_nlp.json``): one result per metric, named as the SDK names
its output — ``bleu``, ``gleu``, ``meteor``, ``f1_score``; an SDK output with per-metric ``<m>_passed`` values
under ``<metric>_properties`` (ROUGE) becomes one result per such metric (``rouge_precision``, ``rouge_recall``,
``rouge_f1_score``), each with its own threshold, and the criterion's verdict follows ``<metric>_passed`` (ROUGE:
the F1 score). ``reason`` is null.

BLEU, GLEU and METEOR tokenize with NLTK and need its data (``punkt_tab``; METEOR also ``wordnet``), which
azure-ai-evaluation downloads on first use. When it cannot (offline), the first row's ``LookupError`` is kept and
every row of that evaluator is errored with it, so a run does not retry the download once per row.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ._evaluators import Served

__all__ = ["NlpResult", "NlpUnavailable", "compute"]

_LOCK = threading.Lock()
_EVALUATORS: dict[tuple[str, tuple[tuple[str, Any], ...]], Callable[..., Mapping[str, Any]]] = {}


@dataclass(frozen=True)
class NlpResult:
    """One result of a computed evaluator: metric name, score, verdict, threshold."""

    metric: str
    score: float | None
    passed: bool | None
    threshold: float | None


class NlpUnavailable(RuntimeError):
    """The evaluator cannot run in this environment (its message says what to install)."""


def _evaluator(item: Served, init: Mapping[str, Any]) -> Callable[..., Mapping[str, Any]]:
    kwargs = tuple(sorted((k, v) for k, v in init.items() if k in item.contract.init_params))
    key = (item.sdk_class, kwargs)
    with _LOCK:
        found = _EVALUATORS.get(key)
        if found is None:
            import azure.ai.evaluation as sdk

            _sdk_logs_to_stderr()
            cls = getattr(sdk, item.sdk_class)
            found = _EVALUATORS[key] = cls(**dict(kwargs))
    return found


class _Stderr:
    """The ``sys.stderr`` of the moment a line is written (a stream bound once may be closed by then)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def _sdk_logs_to_stderr() -> None:
    """azure-ai-evaluation's batch engine logs through handlers bound to ``sys.stdout`` at its import: that would
    mix its lines into a command's output (``--format json`` on stdout), and an stdout swapped and closed since (a
    test runner, an embedding program) makes every later row fail with "I/O operation on closed file". Its
    handlers write to the current stderr instead, warnings and above only."""
    try:
        from azure.ai.evaluation._legacy._common import _logging as sdk_logging
    except ImportError:  # another layout of the SDK: its own handlers stay
        return
    for logger in (getattr(sdk_logging, n, None) for n in ("flow_logger", "bulk_logger", "logger")):
        if isinstance(logger, logging.Logger):
            logger.setLevel(max(logger.level, logging.WARNING))
            for handler in logger.handlers:
                if isinstance(handler, logging.StreamHandler):
                    handler.stream = _Stderr()  # not setStream: it flushes the old, maybe closed, stream


def _results(item: Served, out: Mapping[str, Any]) -> tuple[list[NlpResult], bool]:
    metric = item.primary.name
    props = out.get(f"{metric}_properties")
    names = [k.removesuffix("_passed") for k in props if k.endswith("_passed")] if isinstance(props, dict) else []
    if names:
        assert isinstance(props, dict)
        results = [NlpResult(n, props.get(n), props.get(f"{n}_passed"), props.get(f"{n}_threshold")) for n in names]
    else:
        results = [NlpResult(metric, out.get(metric), out.get(f"{metric}_passed"), out.get(f"{metric}_threshold"))]
    return results, bool(out.get(f"{metric}_passed"))


def compute(
    item: Served, init: Mapping[str, Any], inputs: Mapping[str, Any], unavailable: dict[str, str]
) -> tuple[list[NlpResult], bool]:
    """Score one row with the azure-ai-evaluation class of ``item``: its results and the criterion's verdict.

    Raises ``NlpUnavailable`` when the evaluator cannot run here (NLTK data missing; remembered in
    ``unavailable``, class name → why, for the rest of the run), and whatever the evaluator raises for a row it
    rejects (the caller turns both into errored results)."""
    why = unavailable.get(item.sdk_class)
    if why is not None:
        raise NlpUnavailable(why)
    evaluator = _evaluator(item, init)
    try:
        out = evaluator(response=inputs.get("response"), ground_truth=inputs.get("ground_truth"))
    except LookupError as exc:  # NLTK data absent and not downloadable: remember, do not retry every row
        first = str(exc).strip().splitlines()
        resource = next((line.strip() for line in first if "Resource" in line), "NLTK data")
        why = (
            f"{resource} (needed by {item.sdk_class}) is not installed and could not be downloaded; install it "
            "with `python -m nltk.downloader punkt_tab wordnet` or point NLTK_DATA at a copy"
        )
        unavailable[item.sdk_class] = why
        raise NlpUnavailable(why) from None
    return _results(item, out)
