"""Pydantic models of the Foundry evaluation wire objects (``/openai/v1/evals``, datasets).

Every model ignores nothing and rejects nothing: unknown fields are kept as extras (``model_extra``), missing
optional fields are ``None``. The service adds fields over time; parsing must not break when it does.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "TERMINAL_STATUSES",
    "BlobReference",
    "DatasetVersion",
    "Eval",
    "EvalRun",
    "OutputItem",
    "OutputResult",
    "PendingUpload",
    "ResultCounts",
    "RunError",
    "TestingCriterion",
    "sample_error_text",
]

TERMINAL_STATUSES = frozenset({"completed", "failed", "canceled", "cancelled"})


class _Wire(BaseModel):
    """Base of wire models: extra fields allowed and kept; short repr."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    def __repr__(self) -> str:
        text = super().__repr__()
        return text if len(text) <= 1024 else text[:1000] + "...)"


def sample_error_text(sample: Any) -> str | None:
    """``"CODE: message"`` from a result's ``sample.error`` (a dict, a string or absent), or None."""
    err = sample.get("error") if isinstance(sample, dict) else None
    if not err:
        return None
    if isinstance(err, dict):
        parts = [str(p) for p in (err.get("code"), err.get("message")) if p]
        return ": ".join(parts) or "ERROR: (no message)"
    return str(err)


class TestingCriterion(_Wire):
    """A testing criterion as the service echoes it (``evaluator_version`` is ``""`` when unpinned)."""

    __test__ = False  # not a pytest test class

    type: str | None = None
    id: str | None = None
    name: str
    evaluator_name: str | None = None
    evaluator_version: str | None = None
    initialization_parameters: dict[str, Any] | None = None
    data_mapping: dict[str, Any] | None = None


class Eval(_Wire):
    """An eval (``eval_<hex>``): the criteria and the data schema."""

    id: str
    object: str | None = None
    name: str | None = None
    created_at: int | None = None
    metadata: dict[str, Any] | None = None
    testing_criteria: list[TestingCriterion] = Field(default_factory=list)


class RunError(_Wire):
    """The run-level ``error`` object (all-null on create, ``null`` later, filled on failure)."""

    code: str | None = None
    message: str | None = None
    correlation_id: str | None = None
    inner_error: Any = None

    def describe(self) -> str:
        return ": ".join(p for p in (self.code, self.message) if p) or "no error details"


class ResultCounts(_Wire):
    total: int = 0
    passed: int = 0
    failed: int = 0
    errored: int | None = None
    skipped: int | None = None


class EvalRun(_Wire):
    """A run (``evalrun_<hex>``): status, counts, report URL, error."""

    id: str
    eval_id: str | None = None
    object: str | None = None
    status: str = "queued"
    name: str | None = None
    created_at: int | None = None
    modified_at: int | None = None
    report_url: str | None = None
    result_counts: ResultCounts | None = None
    per_testing_criteria_results: list[dict[str, Any]] | None = None
    per_model_usage: list[dict[str, Any]] | None = None
    error: RunError | None = None
    metadata: dict[str, Any] | None = None

    @property
    def done(self) -> bool:
        return self.status in TERMINAL_STATUSES


class OutputResult(_Wire):
    """One result entry of an output item: one criterion (and one metric of it)."""

    type: str | None = None
    name: str = ""
    metric: str | None = None
    score: Any = None  # number, bool or null; coerced when normalized (never trusted to be a float)
    label: Any = None
    reason: Any = None
    threshold: Any = None
    passed: Any = None
    status: str | None = None
    sample: dict[str, Any] | None = None
    properties: dict[str, Any] | None = None


class OutputItem(_Wire):
    """One output item: one dataset row with all its results."""

    id: str
    object: str | None = None
    run_id: str | None = None
    eval_id: str | None = None
    status: str | None = None
    datasource_item_id: int | None = None
    datasource_item: dict[str, Any] | None = None
    results: list[OutputResult] = Field(default_factory=list)
    sample: dict[str, Any] | None = None


class BlobReference(_Wire):
    blob_uri: str = Field(alias="blobUri")
    credential: dict[str, Any] = Field(default_factory=dict, repr=False)  # holds the SAS URL: never shown

    @property
    def sas_uri(self) -> str | None:
        return self.credential.get("sasUri")


class PendingUpload(_Wire):
    """Response of ``startPendingUpload``: where to PUT the blob."""

    blob_reference: BlobReference = Field(alias="blobReference")
    pending_upload_id: str | None = Field(None, alias="pendingUploadId")
    version: str | None = None


class DatasetVersion(_Wire):
    """A dataset version; its ``id`` goes into a run's ``{"type": "file_id", "id": ...}`` source."""

    id: str
    name: str | None = None
    version: str | None = None
    type: str | None = None
    data_uri: str | None = Field(None, alias="dataUri")
