"""The mapping-file model: where each field lives in the dataset, which evaluators run, local-metric settings.

A mapping is YAML (see ``mappings/``); its JSON Schema (``mappings/mapping.schema.json``) is generated from
these models by ``foundry-bridge schema``. Unknown keys are errors, so a typo never passes silently.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

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


class DocumentsField(_Strict):
    """A list of retrieved documents in each row; list order is rank order."""

    path: str = Field("retrieved_documents", description="dotted path to the list in a row")
    document_id: str = Field("document_id", description="key of the id inside each list element")
    relevance_score: str | None = Field("relevance_score", description="key of the search engine score")
    content: str | None = Field("content", description="key of the document text (for the assembly check)")
    title: str | None = Field("title", description="key of the document title")
    scores_from_rank: bool = Field(
        False,
        description="replace relevance_score by a monotone score from rank (n, n-1, ..., 1 for n documents), so "
        "that Foundry, which ranks by score, keeps the list order (e.g. after a reranker)",
    )


class LabelsField(_Strict):
    """A list of human relevance labels (qrels) in each row."""

    path: str = Field("retrieval_ground_truth", description="dotted path to the list in a row")
    document_id: str = "document_id"
    query_relevance_label: str = "query_relevance_label"


class FieldPaths(_Strict):
    """Where each canonical field lives in a JSONL row (dotted paths for nested objects)."""

    query_id: str = "query_id"
    query: str = "query"
    kind: str | None = Field("kind", description="`positive` | `negative`; absent → derived from the labels")
    context: str | None = Field("context", description="the exact string that was sent to the model")
    response: str | None = "response"
    ground_truth: str | None = Field("ground_truth", description="reference answer")
    retrieved_documents: DocumentsField | None = DocumentsField()
    retrieval_ground_truth: LabelsField | None = LabelsField()
    extra: dict[str, str] = Field(
        default_factory=dict, description="more item fields: item field name → dotted path in the row"
    )


class TrecFiles(_Strict):
    """TREC inputs, relative to the dataset directory given on the command line."""

    qrels: str | None = Field("qrels.txt", description="`qid 0 docid label` lines")
    run: str = Field("run.txt", description="`qid Q0 docid rank score tag` lines (ordered as trec_eval does)")
    queries: str | None = Field("queries.tsv", description="`qid<TAB>text` lines")
    responses: str | None = Field(
        None, description="optional JSONL with query_id, context, response, ground_truth, kind per query"
    )


class DatasetSpec(_Strict):
    format: Literal["jsonl", "trec"] = "jsonl"
    fields: FieldPaths = FieldPaths()
    trec: TrecFiles = TrecFiles()


class ContextSpec(_Strict):
    """Where the judges' ``context`` comes from. The default is the saved context, as sent to the model."""

    source: Literal["saved", "rebuilt_from_documents"] = Field(
        "saved",
        description="`rebuilt_from_documents` joins the top documents' content: an explicit, labelled "
        "approximation, never the default",
    )
    separator: str = "\n\n"
    top_k: int | None = Field(None, ge=1, description="with `rebuilt_from_documents`: documents to join")


class LabelRange(_Strict):
    min: int = Field(0, description="lowest label; it means irrelevant")
    max: int = Field(4, description="highest label")


class LocalMetricsSpec(_Strict):
    k: list[int] = Field(default_factory=lambda: [10], description="cutoffs for rr/recall/precision/hit/ndcg")
    relevance_threshold: int = Field(1, description="relevant ⇔ label ≥ this")
    nan_policy: Literal["propagate", "drop", "zerofill"] = "propagate"
    surface_threshold: float | None = Field(
        None, description="negative-query report: a top-k relevance_score at or above this surfaced evidence"
    )
    abstention_phrases: list[str] | None = Field(
        None, description="phrases that mark an abstaining response (heuristic); None → built-in list"
    )


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
