"""Normalized evaluation results: one row per (dataset row, criterion, metric), from any backend.

Every backend (cloud, mock, local) writes ``results.jsonl`` in a run folder with these rows; the report reads
them. A result that could not be computed has ``score=None`` and ``error`` set: it is never a 0 and never
dropped. docs/running.md lists the run folder's files.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["RUN_FILES", "ResultRow"]

RUN_FILES = {
    "plan": "plan.json",
    "items": "items.jsonl",
    "state": "state.json",
    "output_items": "output_items.jsonl",
    "results": "results.jsonl",
    "manifest": "manifest.json",
    "records": "records.jsonl",
}


class ResultRow(BaseModel):
    """One metric of one criterion on one dataset row."""

    model_config = ConfigDict(extra="ignore")

    row: int  # 0-based row index (Foundry's datasource_item_id)
    query_id: str | None
    criterion: str  # testing criterion name
    evaluator: str  # e.g. builtin.groundedness
    metric: str  # e.g. groundedness, ndcg@3
    score: float | None = None
    label: str | None = None  # "pass" | "fail" | None
    passed: bool | None = None
    threshold: float | None = None
    reason: str | None = None
    error: str | None = None  # "CODE: message" when the evaluator failed on this row
    properties: dict[str, Any] | None = None

    @property
    def errored(self) -> bool:
        return self.error is not None
