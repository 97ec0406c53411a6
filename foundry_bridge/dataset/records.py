"""Canonical records: one evaluation query, in Foundry's own field names, whatever the input layout."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .._text import did_you_mean
from .spec import KindField

__all__ = [
    "KINDS",
    "GroundTruthLabel",
    "Kind",
    "KindSource",
    "QueryRecord",
    "RetrievedDocument",
    "derive_kind",
    "kind_problem",
]

Kind = Literal["positive", "negative"]
KindSource = Literal["declared", "labels", "unknown"]
KINDS: tuple[Kind, ...] = ("positive", "negative")


def derive_kind(declared: Any, labels: Iterable[int] | None, relevance_threshold: int) -> tuple[Kind, KindSource]:
    """A query's ``(kind, kind_source)``: the declared kind when it is ``positive`` or ``negative``; else, when the
    query has labels (even none), negative iff no label reaches ``relevance_threshold``; else positive by
    convention, source ``unknown``. The one definition every reader (and the validator's kind check) uses."""
    if declared in KINDS:
        return declared, "declared"
    if labels is not None:
        return ("positive" if any(v >= relevance_threshold for v in labels) else "negative"), "labels"
    return "positive", "unknown"


def kind_problem(value: Any, setting: str | KindField | None = None) -> tuple[str, str] | None:
    """(message, hint) for a declared kind (read through the mapping's ``setting``: ``FieldPaths.declared_kind``)
    that is neither absent (``None``) nor ``positive``/``negative``; the hint is a did-you-mean, abbreviations
    included (``neg`` → ``negative``), else how to map the data's own values."""
    if value is None or value in KINDS:
        return None
    if isinstance(setting, KindField):  # both lists given, the value in neither
        return (
            f"kind {value!r} is listed under neither dataset.fields.kind.positive nor dataset.fields.kind.negative",
            f"add {value!r} to one of them",
        )
    guess = did_you_mean(str(value), KINDS, prefix=True)
    path = setting or "kind"
    hint = (
        f"did you mean {guess!r}?"
        if guess
        else f"if {value!r} is the data's own word for a kind, map it in the mapping: dataset.fields.kind: "
        f"{{field: {path}, negative: [...], positive: [...]}} (the values that mean each); or set "
        "dataset.fields.kind: null to derive kind from the labels"
    )
    return f"kind must be 'positive' or 'negative', got {value!r}", hint


class RetrievedDocument(BaseModel):
    """One search result; its position in ``QueryRecord.retrieved_documents`` is its rank (1-based)."""

    model_config = ConfigDict(frozen=True)

    document_id: str
    relevance_score: float | None = None
    content: str | None = None
    title: str | None = None


class GroundTruthLabel(BaseModel):
    """One human relevance judgement (a qrels line)."""

    model_config = ConfigDict(frozen=True)

    document_id: str
    query_relevance_label: int


class QueryRecord(BaseModel):
    """One query with its three artifacts (ranked results, context sent, response) and optional labels.

    ``kind`` is always set: declared in the data (``kind_source="declared"``), or derived from the labels —
    negative when no label reaches the relevance threshold (``"labels"``); ``"unknown"`` when the query has
    neither a declared kind nor labels (then ``kind`` is ``"positive"`` by convention and reports say so).
    ``line`` is the 1-based line of the row in ``source`` (for TREC input: of the run file).
    """

    query_id: str
    query: str | None = None
    kind: Kind = "positive"
    kind_source: KindSource = "declared"
    retrieved_documents: list[RetrievedDocument] = Field(default_factory=list)
    retrieval_ground_truth: list[GroundTruthLabel] | None = None
    context: str | None = None
    response: str | None = None
    ground_truth: str | None = None
    extra: dict[str, Any] = Field(default_factory=dict)
    source: str | None = None
    line: int | None = None

    def item(self) -> dict[str, Any]:
        """The Foundry run item (the value under ``{"item": ...}``): canonical fields plus extras."""
        item: dict[str, Any] = {"query_id": self.query_id}
        if self.query is not None:
            item["query"] = self.query
        item["kind"] = self.kind
        if self.context is not None:
            item["context"] = self.context
        if self.response is not None:
            item["response"] = self.response
        if self.ground_truth is not None:
            item["ground_truth"] = self.ground_truth
        item["retrieved_documents"] = [
            {"document_id": d.document_id, "relevance_score": d.relevance_score} for d in self.retrieved_documents
        ]
        if self.retrieval_ground_truth is not None:
            item["retrieval_ground_truth"] = [
                {"document_id": g.document_id, "query_relevance_label": g.query_relevance_label}
                for g in self.retrieval_ground_truth
            ]
        item.update(self.extra)
        return item
