"""The mapping-file model: where each field lives in the dataset, which evaluators run, local-metric settings.

A mapping is YAML (see ``mappings/``); its JSON Schema (``mappings/mapping.schema.json``) is generated from
these models by ``foundry-bridge schema``. Unknown keys are errors, so a typo never passes silently.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from ..catalog import get_evaluator
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
    "JudgeDocsSpec",
    "LabelRange",
    "LabelsField",
    "LocalMetricsSpec",
    "Mapping",
    "TrecFiles",
    "available_fields",
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

    @field_validator("init")
    @classmethod
    def _param_names(cls, init: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        """Each key under its catalog parameter's name: an alias (``model``, azd's spelling of the judge) becomes
        the parameter (``deployment_name``), for every reader of the mapping; a parameter written under two
        spellings is an ``init_alias`` error naming the alias (``ctx["key"]``). Unknown evaluators and keys stay
        as written: validation names them."""
        try:
            spec = get_evaluator(str(info.data.get("evaluator")))
        except KeyError:
            return init
        out: dict[str, Any] = {}
        for key, value in init.items():
            name = spec.param_called(key) or key
            if name != key and name in init:
                message = f"{key!r} and {name!r} name the same parameter of {spec.name}: keep one"
                raise PydanticCustomError("init_alias", message, {"key": key})
            out[name] = value
        return out


class JudgeDocsSpec(_Strict):
    """``judge-docs``: documents graded 0–3 by a judge (judge-labelled qrels). Present: ``plan --estimate`` counts
    its calls; ``k`` is ``judge-docs``' default depth; the system's models make ``report --qrels`` warn of
    circularity when one of them is the judge."""

    k: int = Field(10, ge=1, description="grade each query's top k documents (and those of the context as sent)")
    model: str | None = Field(
        None, description="the judge's deployment or model: prices the estimate; checked against the system's models"
    )
    reranker: str | None = Field(None, description="the model that ranks the system's documents, if any")
    generator: str | None = Field(None, description="the model that writes the system's answers, if any")
    coverage: bool = Field(
        False, description="also judge retrieval coverage and utilization per query (two judge calls each)"
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
    judge_docs: JudgeDocsSpec | None = Field(
        None, description="grade every retrieved document with a judge (`judge-docs`): judge-labelled qrels"
    )
    response_id: str | None = Field(
        None,
        description="item field under `dataset.fields.extra` that holds the id of the model response a row scored "
        "(e.g. a chat completion id): `report --otel` sends it as `gen_ai.response.id`",
    )


_CANONICAL = ("query", "kind", "context", "response", "ground_truth", "retrieved_documents", "retrieval_ground_truth")


def available_fields(mapping: Mapping) -> list[str]:
    """Item fields the mapping can produce (besides ``query_id``), in canonical order, then extras."""
    f = mapping.dataset.fields
    if mapping.dataset.format == "trec":
        t = mapping.dataset.trec
        have = {"kind", "retrieved_documents"}
        if t.qrels:
            have.add("retrieval_ground_truth")
        if t.queries:
            have.add("query")
        if t.responses:
            have |= {n for n in ("query", "context", "response", "ground_truth") if getattr(f, n)}
    else:
        have = {n for n in _CANONICAL if getattr(f, n) is not None}
        if mapping.context.source == "rebuilt_from_documents" and f.retrieved_documents is not None:
            have.add("context")
    out = [n for n in _CANONICAL if n in have]
    if mapping.dataset.format != "trec" or mapping.dataset.trec.responses:
        out += [n for n in f.extra if n not in out]
    return out
