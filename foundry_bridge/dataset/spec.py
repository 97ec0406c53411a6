"""What a reader needs to know about a dataset: where each field lives, the TREC files, the context source,
the label range and the local-metric settings.

These models are part of the mapping file (``foundry_bridge.mapping.model.Mapping`` holds them), but they are
defined here, below the mapping layer, so that the readers depend on nothing above ``dataset``.
"""

from __future__ import annotations

from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "BeirFiles",
    "ContextSpec",
    "DataSource",
    "DatasetSpec",
    "DocumentsField",
    "FieldPaths",
    "KindField",
    "LabelRange",
    "LabelsField",
    "LocalMetricsSpec",
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


KindValue = str | int | bool


class KindField(_Strict):
    """A declared kind under the data's own values: ``{field: type, negative: [unanswerable]}``."""

    field: str = Field(description="dotted path to the kind in a row")
    positive: list[KindValue] | None = Field(
        None, description="values that mean `positive`; omitted → every value not listed under `negative`"
    )
    negative: list[KindValue] | None = Field(
        None, description="values that mean `negative`; omitted → every value not listed under `positive`"
    )

    def canonical(self, value: object) -> object:
        """``positive`` / ``negative`` for a value the lists place (a value both lists leave out, when both are
        given, stays as it is: an error); None stays None."""
        if value is None:
            return None
        for kind, listed in (("negative", self.negative), ("positive", self.positive)):
            if listed is not None and any(type(v) is type(value) and v == value for v in listed):
                return kind
        if self.positive is None:
            return "positive"
        return "negative" if self.negative is None else value


class FieldPaths(_Strict):
    """Where each canonical field lives in a JSONL row (dotted paths for nested objects)."""

    query_id: str = "query_id"
    query: str = "query"
    kind: str | KindField | None = Field(
        "kind",
        description="`positive` | `negative`; absent → derived from the labels; other values: "
        "`{field: <path>, negative: [...], positive: [...]}` says which of the data's values mean what",
    )
    context: str | None = Field("context", description="the exact string that was sent to the model")
    response: str | None = "response"
    ground_truth: str | None = Field("ground_truth", description="reference answer")
    retrieved_documents: DocumentsField | None = DocumentsField()
    retrieval_ground_truth: LabelsField | None = LabelsField()
    extra: dict[str, str] = Field(
        default_factory=dict, description="more item fields: item field name → dotted path in the row"
    )

    @property
    def kind_path(self) -> str | None:
        """The dotted path of the kind (``kind``, or its ``field``)."""
        return self.kind.field if isinstance(self.kind, KindField) else self.kind

    def declared_kind(self, value: object) -> object:
        """A row's declared kind read through ``kind``'s value lists (``KindField.canonical``), or as it is."""
        return self.kind.canonical(value) if isinstance(self.kind, KindField) else value


class TrecFiles(_Strict):
    """TREC inputs, relative to the dataset directory given on the command line."""

    qrels: str | None = Field("qrels.txt", description="`qid 0 docid label` lines")
    run: str = Field("run.txt", description="`qid Q0 docid rank score tag` lines (ordered as trec_eval does)")
    queries: str | None = Field("queries.tsv", description="`qid<TAB>text` lines")
    responses: str | None = Field(
        None, description="optional JSONL with query_id, context, response, ground_truth, kind per query"
    )


class BeirFiles(_Strict):
    """BEIR's layout, relative to the dataset directory given on the command line, plus a run file."""

    corpus: str | None = Field("corpus.jsonl", description="`{_id, title, text}` lines; only retrieved ids are kept")
    queries: str = Field("queries.jsonl", description="`{_id, text}` lines")
    qrels: str | None = Field("qrels/test.tsv", description="`query-id<TAB>corpus-id<TAB>score` under a header")
    run: str = Field("run.txt", description="TREC run `qid Q0 docid rank score tag`, or `.json`: {qid: {docid: score}}")
    responses: str | None = Field(
        None, description="optional JSONL with query_id, context, response, ground_truth, kind per query"
    )


class DatasetSpec(_Strict):
    format: Literal["jsonl", "trec", "beir"] = Field(
        "jsonl",
        description="`jsonl`: rows, read from a JSONL file, a parquet/Arrow/Feather file, a Hugging Face dataset "
        "saved to disk or a DataFrame (by what DATA is); `trec`: a TREC directory; `beir`: a BEIR directory",
    )
    fields: FieldPaths = FieldPaths()
    trec: TrecFiles = TrecFiles()
    beir: BeirFiles = BeirFiles()


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


class DataSource(Protocol):
    """What the readers read from a mapping: a ``Mapping`` satisfies it."""

    @property
    def dataset(self) -> DatasetSpec: ...

    @property
    def context(self) -> ContextSpec: ...

    @property
    def metrics(self) -> LocalMetricsSpec: ...
