"""The mapping-file model: where each field lives in the dataset, which evaluators run, local-metric settings.

A mapping is YAML (see ``mappings/``); its JSON Schema (``mappings/mapping.schema.json``) is generated from
these models by ``foundry-bridge schema``. Unknown keys are errors, so a typo never passes silently.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..dataset.spec import (
    ContextSpec,
    DatasetSpec,
    DocumentsField,
    FieldPaths,
    LabelRange,
    LabelsField,
    LocalMetricsSpec,
    TrecFiles,
)

__all__ = [
    "ContextSpec",
    "DatasetSpec",
    "DocumentsField",
    "EvaluatorEntry",
    "FieldPaths",
    "LabelRange",
    "LabelsField",
    "LocalMetricsSpec",
    "Mapping",
    "TrecFiles",
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class EvaluatorEntry(_Strict):
    """One Foundry testing criterion."""

    evaluator: str = Field(description="Foundry evaluator name, e.g. `builtin.groundedness`")
    name: str | None = Field(None, description="criterion name; defaults to the evaluator's short name")
    init: dict[str, Any] = Field(
        default_factory=dict,
        description="initialization_parameters; `${ENV_VAR}` is expanded (e.g. deployment_name)",
    )
    inputs: dict[str, str] = Field(
        default_factory=dict,
        description="evaluator input → item field; inputs not listed map to the item field of the same name",
    )


class Mapping(_Strict):
    """A whole mapping file."""

    version: Literal[1] = 1
    description: str = ""
    dataset: DatasetSpec = DatasetSpec()
    context: ContextSpec = ContextSpec()
    labels: LabelRange = LabelRange()
    metrics: LocalMetricsSpec = LocalMetricsSpec()
    evaluators: list[EvaluatorEntry] = Field(default_factory=list)
    response_id: str | None = Field(
        None,
        description="item field under `dataset.fields.extra` that holds the id of the model response a row scored "
        "(e.g. a chat completion id): `report --otel` sends it as `gen_ai.response.id`",
    )
