"""The plan: everything one evaluation submits, built from a dataset and a mapping before any backend runs.

``build_plan`` (in ``mapping.builder``) makes it; every backend consumes it; ``plan.json`` in a run folder is
its JSON dump.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field

from .model import Mapping

__all__ = ["CriterionPlan", "Plan"]


class CriterionPlan(BaseModel):
    """One testing criterion as it will be sent (``type: azure_ai_evaluator``)."""

    model_config = ConfigDict(frozen=True)

    name: str
    evaluator: str  # builtin.x
    init: dict[str, Any] = Field(default_factory=dict)  # initialization_parameters, env vars expanded
    data_mapping: dict[str, str] = Field(default_factory=dict)  # input → "{{item.field}}"

    def testing_criterion(self) -> dict[str, Any]:
        """The wire form of this criterion inside the eval-create body."""
        body: dict[str, Any] = {"type": "azure_ai_evaluator", "name": self.name, "evaluator_name": self.evaluator}
        if self.init:
            body["initialization_parameters"] = dict(self.init)
        body["data_mapping"] = dict(self.data_mapping)
        return body


class Plan(BaseModel):
    """Eval-create body, run items, and the settings needed to interpret the results later."""

    name: str
    mapping: Mapping
    criteria: list[CriterionPlan]
    eval_body: dict[str, Any]  # POST /openai/v1/evals body
    items: list[dict[str, Any]]  # [{"item": {...}}], one per dataset row, in row order
    records: list[dict[str, Any]] = Field(
        default_factory=list, description="canonical QueryRecord dumps (with document content), row order"
    )
    dataset_path: str | None = None
    dataset_sha256: str | None = None
    mapping_path: str | None = None

    @property
    def query_ids(self) -> list[str]:
        return [it["item"].get("query_id") for it in self.items]

    def fingerprint(self) -> str:
        """SHA-256 over what the service would see (eval body + items): same plan ⇒ same run."""
        h = hashlib.sha256()
        h.update(orjson.dumps(self.eval_body, option=orjson.OPT_SORT_KEYS))
        for it in self.items:
            h.update(orjson.dumps(it, option=orjson.OPT_SORT_KEYS))
        return h.hexdigest()
