"""The report model: one pydantic value that the JSON, Markdown and HTML renderers read.

Everything a reader needs to interpret the numbers travels inside the model: provenance, the declared
parameters (k, relevance threshold, NaN policy, label range, pass thresholds), metric definitions, and counts of
what was scored, errored, missing or undefined. Its JSON Schema is published as ``mappings/report.schema.json``.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from ._trust_model import TrustSection

__all__ = [
    "LIST_CAP",
    "REPORT_SCHEMA_VERSION",
    "STAGES",
    "CanaryFlag",
    "Distribution",
    "FoundryScore",
    "HoleEntry",
    "MetricAggregate",
    "MetricInfo",
    "NegativeSection",
    "Params",
    "PerQuery",
    "Provenance",
    "QueryRow",
    "Report",
    "Section",
    "Stage",
    "StageSection",
    "foundry_key",
    "report_json_schema",
]

REPORT_SCHEMA_VERSION = "2"
LIST_CAP = 100  # ids listed per list (stages, negative queries, labelling queue); the per-query file has all

Stage = Literal["search", "assembly", "generation", "ok", "unknown"]
STAGES: tuple[Stage, ...] = ("search", "assembly", "generation", "ok", "unknown")
ScoreStatus = Literal["scored", "errored", "missing"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Provenance(_Model):
    """Where the numbers come from."""

    run_dir: str
    backend: str | None = None
    dataset_path: str | None = None
    dataset_sha256: str | None = None
    mapping_path: str | None = None
    plan_fingerprint: str | None = None
    eval_id: str | None = None
    run_ids: list[str] = Field(default_factory=list)
    report_url: str | None = None
    evaluators: list[dict[str, Any]] = Field(
        default_factory=list, description="[{criterion, evaluator, version}] as planned or echoed by the service"
    )
    tool_version: str = Field(description="foundry_bridge version that built this report")
    run_tool_version: str | None = Field(None, description="foundry_bridge version that wrote the run folder")
    created_at: str = Field(description="when this report was built (UTC, ISO 8601)")
    run_started_at: str | None = None
    run_finished_at: str | None = None
    run_status: str | None = None


class CriterionThreshold(_Model):
    """A pass threshold as declared in the plan (or the catalog default)."""

    criterion: str
    evaluator: str
    metric: str
    threshold: float | None = None
    higher_is_better: bool = True


class Params(_Model):
    """The declared parameters every number in the report depends on."""

    k: list[int]
    stage_k: int = Field(description="the cutoff used for stage attribution and the labelling queue (max of k)")
    relevance_threshold: int = Field(description="relevant ⇔ label ≥ this")
    nan_policy: Literal["propagate", "drop", "zerofill"]
    label_min: int
    label_max: int
    surface_threshold: float | None = None
    abstention_phrases: list[str] | None = Field(None, description="None → the built-in phrase list")
    thresholds: list[CriterionThreshold] = Field(default_factory=list)
    answer_criteria: list[str] = Field(
        default_factory=list, description="criteria judging the response (used for stage attribution, canaries)"
    )


class MetricInfo(_Model):
    """One column of the report."""

    key: str = Field(description="the key in QueryRow.local / QueryRow.foundry and in the aggregates")
    source: Literal["local", "foundry"]
    criterion: str | None = None
    evaluator: str | None = None
    metric: str
    higher_is_better: bool | None = None
    threshold: float | None = None
    primary: bool = Field(True, description="local metrics, and each criterion's primary metric (summary rows)")
    definition: str = ""


class FoundryScore(_Model):
    """One Foundry (or local-judge) metric on one query, as the backend returned it."""

    status: ScoreStatus = Field(description="scored | errored (error set) | missing (no result, or a null score)")
    score: float | None = None
    passed: bool | None = None
    label: str | None = None
    threshold: float | None = None
    reason: str | None = None
    error: str | None = None


class QueryRow(_Model):
    """Everything about one query."""

    row: int
    query_id: str
    kind: Literal["positive", "negative"]
    kind_source: str
    query: str | None = None
    response: str | None = None
    canary: str | None = None
    local: dict[str, float | None] = Field(default_factory=dict, description="local ranking metrics (NaN → null)")
    foundry: dict[str, FoundryScore] = Field(default_factory=dict)
    abstained: bool | None = None
    dropped_relevant: list[str] = Field(default_factory=list, description="relevant top-k docs not in the context")
    holes: list[str] = Field(default_factory=list, description="unlabelled documents in the top stage_k")
    stage: Stage
    stage_reason: str
    search_partial: bool = Field(
        False,
        description="a relevant document is in the top stage_k but not one of the query's highest label: a partial "
        "search miss hit@k does not show (the stage is the rules' own)",
    )


class MetricAggregate(_Model):
    """One metric over one section (positive or negative queries). Coverage first."""

    queries: int = Field(description="queries in the section (the denominator of coverage)")
    scored: int
    errored: int = 0
    missing: int = 0
    undefined: int = Field(0, description="local metrics: queries where the metric is undefined (NaN)")
    coverage: float | None = Field(None, description="scored ÷ queries")
    mean: float | None = Field(None, description="mean of scored values only (local: per the NaN policy)")
    median: float | None = None
    min: float | None = None
    max: float | None = None
    passed: int = 0
    failed: int = 0
    pass_rate: float | None = Field(None, description="passed ÷ (passed + failed); None when nothing was judged")


class Section(_Model):
    """Aggregates over one kind of query; positive and negative are never mixed."""

    kind: Literal["positive", "negative"]
    queries: int
    kind_sources: dict[str, int] = Field(default_factory=dict)
    metrics: dict[str, MetricAggregate] = Field(default_factory=dict)
    stages: dict[str, int] = Field(default_factory=dict)


class NegativeSection(_Model):
    """Negative queries: the local negative-query report beside the Foundry scores for those queries. Each list
    holds the first ``LIST_CAP`` ids in dataset order; ``counts`` the full numbers."""

    queries: list[str] = Field(default_factory=list)
    surfaced_evidence: list[str] = Field(
        default_factory=list, description="negative queries whose top k surfaced evidence (score ≥ surface_threshold)"
    )
    answered: list[str] = Field(default_factory=list, description="negative queries whose response did not abstain")
    abstained: list[str] = Field(default_factory=list)
    label_contradictions: list[str] = Field(default_factory=list)
    counts: dict[str, int] = Field(default_factory=dict, description="how many ids each list has in full")
    local: dict[str, Any] = Field(
        default_factory=dict,
        description="foundry_bridge.metrics.negative_query_report (its per_query list: the first LIST_CAP)",
    )


class StageSection(_Model):
    """Where each query failed: fix the index (search), the context builder (assembly) or the prompt (generation)."""

    counts: dict[str, int]
    queries: dict[str, list[str]] = Field(description="per stage, the first LIST_CAP query ids in dataset order")
    worst: dict[str, list[str]] = Field(
        default_factory=dict, description="per stage, the N worst query ids (failed answer judges, lowest scores)"
    )
    rules: list[str]
    stage_k: int | None = Field(None, description="the cutoff K of the rules (params.stage_k)")
    relevance_threshold: int | None = Field(
        None, description="relevant ⇔ label ≥ this: what 'a relevant document in the top K' means in the rules"
    )
    search_partial: int = Field(
        0, description="positive queries with a relevant document in the top K but none of their highest label"
    )
    search_partial_queries: list[str] = Field(
        default_factory=list, description="the first LIST_CAP of them, in dataset order"
    )
    judged: dict[str, int] = Field(
        default_factory=dict,
        description="per stage, the queries whose stage rests on the answer judges' verdicts (positive rules 6 "
        "and 8: ok, or generation without an abstention)",
    )
    judged_queries: dict[str, list[str]] = Field(
        default_factory=dict, description="per stage, the first LIST_CAP of them, in dataset order"
    )


class HoleEntry(_Model):
    """A retrieved but unlabelled document: label it next."""

    document_id: str
    count: int = Field(description="queries whose top stage_k retrieved it")
    best_rank: int
    mean_rank: float
    priority: float = Field(description="Σ 1/rank over its appearances: how often and how high")
    queries: list[dict[str, Any]] = Field(default_factory=list, description="[{query_id, rank}]")


class CanaryFlag(_Model):
    """A deliberately broken answer and what the answer judges made of it."""

    query_id: str
    canary: str
    passed_by: list[str] = Field(default_factory=list, description="answer criteria that passed it (flagged)")
    failed_by: list[str] = Field(default_factory=list)
    unscored: list[str] = Field(default_factory=list, description="answer criteria errored or missing")
    caught: bool | None = Field(None, description="True if any answer judge failed it; None if none scored")


class Distribution(_Model):
    """One metric's histogram per section: ``edges`` (one bin per integer on small integer scales, else 10 bins)."""

    key: str
    edges: list[float]
    integer: bool
    positive: list[int]
    negative: list[int]


class PerQuery(_Model):
    """Where the per-query rows are: one ``QueryRow`` a row (Parquet, or JSON lines), in dataset order."""

    path: str | None = Field(None, description="the file written beside the report (None: not written)")
    format: Literal["parquet", "jsonl"] = Field("parquet", description="the file's format: Parquet or JSON lines")
    rows: int
    complete: bool = Field(description="the renderers saw every row (else only the worst per stage)")
    worst_per_stage: int = Field(description="N of stages.worst")


class Report(_Model):
    """The whole report. The per-query rows are not part of the JSON: they are written as JSONL beside it
    (``per_query.path``); ``queries`` holds them in memory when the run is small (``per_query.complete``), else the
    rows of ``stages.worst``."""

    schema_version: str = REPORT_SCHEMA_VERSION
    provenance: Provenance
    params: Params
    metrics: list[MetricInfo]
    coverage: dict[str, Any] = Field(
        default_factory=dict, description="rows, result rows, errored/missing counts: read this first"
    )
    positive: Section
    negative: Section
    negative_queries: NegativeSection
    stages: StageSection
    canaries: list[CanaryFlag] = Field(
        default_factory=list, description="every canary when at most LIST_CAP, else those no judge caught first"
    )
    canary_counts: dict[str, int] = Field(default_factory=dict, description="canaries, caught, not_caught, no_verdict")
    labelling_queue: list[HoleEntry] = Field(
        default_factory=list, description="the LIST_CAP most urgent documents (each with its first LIST_CAP queries)"
    )
    distributions: list[Distribution] = Field(default_factory=list)
    trust: TrustSection | None = Field(None, description="Can the judge be trusted? (docs/trust.md)")
    judged_vs_human: dict[str, Any] | None = Field(
        None, description="report --qrels J --human-qrels H: κ and PPI-corrected means (judged.run_vs_human)"
    )
    per_query: PerQuery
    warnings: list[str] = Field(default_factory=list)
    _queries: list[QueryRow] = PrivateAttr(default_factory=list)
    _columns: Any = PrivateAttr(None)  # report._build.Columns: what compare reads
    _holes: Any = PrivateAttr(None)  # report._queue.Holes: the whole labelling queue
    _drill: list[Any] = PrivateAttr(default_factory=list)  # report._drill.DrillQuery: the per-query drill-down

    def __eq__(self, other: object) -> bool:
        """Equal published content (the JSON): the rows and columns held in memory are not compared."""
        return isinstance(other, Report) and self.__dict__ == other.__dict__

    __hash__ = None  # type: ignore[assignment]

    @property
    def queries(self) -> list[QueryRow]:
        """The per-query rows held in memory (every row when ``per_query.complete``)."""
        return self._queries

    @property
    def drill(self) -> list[Any]:
        """The per-query drill-down (``report._drill.DrillQuery``, a module above this one): the worst queries of
        each failing stage, worst first."""
        return self._drill

    def metric(self, key: str) -> MetricInfo:
        for m in self.metrics:
            if m.key == key:
                return m
        raise KeyError(key)

    def to_pandas(self) -> Any:
        """A pandas DataFrame with one row per query, every query of the run (``report._frames``)."""
        return _frames().query_frame(self)

    def to_polars(self) -> Any:
        """``to_pandas`` as a polars DataFrame."""
        return _frames().query_frame(self, polars=True)

    def aggregates_frame(self) -> Any:
        """A pandas DataFrame with one row per (metric, section): the aggregates, counts as integers."""
        return _frames().aggregates_frame(self)


class Frames(Protocol):
    """``report._frames``, the DataFrames of a report: a layer above the build (a report that holds only some of its
    rows builds them all again from its run folder), so the package plugs it in (``report/__init__.py`` sets
    ``FRAMES``) and the model imports nothing above itself."""

    def query_frame(self, report: Report, *, polars: bool = False) -> Any: ...

    def aggregates_frame(self, report: Report, *, polars: bool = False) -> Any: ...


FRAMES: Frames | None = None


def _frames() -> Frames:
    if FRAMES is None:  # only when this module is loaded apart from its package
        raise RuntimeError("import foundry_bridge.report to use a report's DataFrames")
    return FRAMES


def foundry_key(criterion: str, metric: str) -> str:
    """The column key of a Foundry metric: ``metric`` when it equals the criterion name, else ``criterion/metric``."""
    return metric if metric == criterion else f"{criterion}/{metric}"


def report_json_schema() -> dict[str, Any]:
    """The published JSON Schema of the report (``mappings/report.schema.json``)."""
    schema = Report.model_json_schema()
    row = QueryRow.model_json_schema()  # one line of the per-query JSONL file (per_query.path)
    schema["$defs"] = {**schema["$defs"], **row.pop("$defs", {}), "QueryRow": row}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$comment": "generated from foundry_bridge.report.Report; regenerate with "
        "`python -m foundry_bridge.report.schema mappings/report.schema.json`",
        **schema,
        "title": "foundry-bridge report",
    }
