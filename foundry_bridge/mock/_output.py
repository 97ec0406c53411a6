"""A finished run's output items, kept compactly: per criterion one verdict byte per row, the error detail of
errored rows and, for evaluators computed by azure-ai-evaluation, their numbers in flat arrays. The JSON of an
item is built when a page asks for it: mock judges, stand-ins and document retrieval are deterministic and cheap,
so their results are recomputed from the row (read back from the run's spool file, as its ``data_source`` view
is); computed evaluators are read back from their arrays. 100,000 rows × 4 criteria cost a few hundred kilobytes
of memory, not copies of every row, result, reason and judge sample.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ._nlp import NlpResult
from ._scoring import Outcome, Scored, StoredCriterion, batch_message, errored_results, nlp_results, score

__all__ = ["EMPTY_ITEM_SAMPLE", "CriterionOutput", "RunOutput", "target_fields"]

_CODE: dict[Outcome, int] = {"passed": 0, "failed": 1, "errored": 2}
_ERRORED = 2
_NONE = 2  # a passed flag that is null
EMPTY_ITEM_SAMPLE: dict[str, Any] = {
    "error": None,
    "finish_reason": "",
    "input": [],
    "max_completion_tokens": None,
    "model": "",
    "output": [],
    "seed": None,
    "temperature": None,
    "top_p": None,
    "usage": None,
}


def _flag(value: bool | None) -> int:
    return _NONE if value is None else int(bool(value))


@dataclass
class CriterionOutput:
    """What one criterion keeps of a run: ``verdicts[row]`` (0 passed, 1 failed, 2 errored), ``errors[row]`` (the
    detail of an errored row) and, for a computed evaluator, ``metrics`` (result names, from its first scored
    row) with ``scores``/``thresholds`` (NaN for null) and ``passed`` (0, 1, 2 for null), ``len(metrics)`` per row."""

    criterion: StoredCriterion
    verdicts: bytearray = field(default_factory=bytearray)
    errors: dict[int, str] = field(default_factory=dict)
    metrics: list[str] = field(default_factory=list)
    scores: array = field(default_factory=lambda: array("d"))
    thresholds: array = field(default_factory=lambda: array("d"))
    passed: bytearray = field(default_factory=bytearray)
    errored: int = 0

    def add(self, row: int, scored: Scored) -> None:
        """Keep row ``row``'s outcome (rows are added in order)."""
        self.verdicts.append(_CODE[scored.verdict])
        if scored.verdict == "errored":
            self.errored += 1
            self.errors[row] = scored.error or "evaluator execution failed"
        if self.criterion.evaluator.kind != "computed":
            return
        numbers = scored.numbers or ()
        if numbers and not self.metrics:
            self.metrics = [n.metric for n in numbers]
            self.scores.extend([math.nan] * len(self.metrics) * row)  # rows before the first scored one
            self.thresholds.extend([math.nan] * len(self.metrics) * row)
            self.passed.extend([_NONE] * len(self.metrics) * row)
        by_name = {n.metric: n for n in numbers}
        for metric in self.metrics:
            n = by_name.get(metric)
            self.scores.append(math.nan if n is None or n.score is None else float(n.score))
            self.thresholds.append(math.nan if n is None or n.threshold is None else float(n.threshold))
            self.passed.append(_NONE if n is None else _flag(n.passed))

    def results(self, row: int, item: Mapping[str, Any], sample: Mapping[str, Any] | None) -> list[dict[str, Any]]:
        """Row ``row``'s results as served."""
        crit = self.criterion
        if self.verdicts[row] == _ERRORED:
            message = batch_message(self.errors[row], self.errored, len(self.verdicts))
            return errored_results(crit.name, crit.metric_names(), message)
        if crit.evaluator.kind != "computed":
            return score(crit, item, sample).results
        k = len(self.metrics)
        numbers = tuple(
            NlpResult(
                metric,
                _number(self.scores[row * k + j]),
                None if self.passed[row * k + j] == _NONE else bool(self.passed[row * k + j]),
                _number(self.thresholds[row * k + j]),
            )
            for j, metric in enumerate(self.metrics)
        )
        return nlp_results(crit, numbers)


def target_fields(sample: Mapping[str, Any], target: str) -> dict[str, Any]:
    """A target's stand-in output, flattened into its datasource item as the service shows it."""
    out = {
        "sample.output_text": sample["output_text"],
        "sample.output_status": sample["output_status"],
        "sample.output_status.status": "success",
        "sample.output_status.message": "",
    }
    if target == "azure_ai_agent":
        out["sample.output_items"] = sample["output_items"]
    return out


def _number(value: float) -> float | int | None:
    if math.isnan(value):
        return None
    return int(value) if value.is_integer() and abs(value) < 2**53 else value


@dataclass
class RunOutput:
    """A finished run's output: the criteria's compact outcomes over the run's rows (kept by reference)."""

    run_id: str
    eval_id: str
    created_at: int
    rows: Sequence[dict[str, Any]]  # the run's spooled rows (read back when a page asks)
    samples: Sequence[dict[str, Any] | None]
    target: str | None  # "azure_ai_model" / "azure_ai_agent" for target runs: their outputs join the item
    criteria: list[CriterionOutput]
    row_passed: bytearray = field(default_factory=bytearray)

    def __len__(self) -> int:
        return len(self.rows)

    def item(self, i: int) -> dict[str, Any]:
        """Output item ``i`` (0-based; its id is ``str(i + 1)``), built now."""
        row, sample = self.rows[i], self.samples[i]
        datasource_item = (
            row if self.target is None or sample is None else {**row, **target_fields(sample, self.target)}
        )
        results: list[dict[str, Any]] = []
        for crit in self.criteria:
            results.extend(crit.results(i, row, sample))
        return {
            "object": "eval.run.output_item",
            "id": str(i + 1),
            "run_id": self.run_id,
            "eval_id": self.eval_id,
            "created_at": self.created_at,
            "status": "completed",
            "datasource_item_id": i,
            "datasource_item": datasource_item,
            "results": results,
            "sample": dict(EMPTY_ITEM_SAMPLE),
        }

    def passed(self, i: int) -> bool:
        return bool(self.row_passed[i])
