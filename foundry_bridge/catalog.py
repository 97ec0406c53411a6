"""The evaluator catalog: every supported Foundry builtin evaluator, described once, as data.

Validation, the criteria builder, the emulator's scoring, the local backend and the report's columns all read
this module; adding an evaluator is one entry in ``CATALOG``. Versions, inputs, init parameters and output metrics
are the published contracts (``foundry_bridge.contracts``, the specs the cloud builtins are registered from, July
2026; ``tests/test_catalog.py`` checks every entry against them); this module adds what the project needs on top:
input roles and types, thresholds, the metrics a result row carries, and how a verdict reads per query kind.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ._text import builtin_entry

__all__ = [
    "CATALOG",
    "INPUT_TYPE_ORDER",
    "INPUT_TYPE_SCHEMAS",
    "LABEL_MODEL",
    "PARAM_ALIASES",
    "SCORE_MODEL",
    "EvaluatorSpec",
    "InputSpec",
    "MetricSpec",
    "ParamSpec",
    "get_evaluator",
]

InputType = Literal["string", "documents", "labels", "messages", "string_or_messages", "string_object_or_messages"]

# JSON Schema of each input type, as Foundry's catalog ``data_schema`` writes it (used for the eval's item_schema).
INPUT_TYPE_SCHEMAS: dict[str, dict[str, object]] = {
    "string": {"type": "string"},
    "string_or_messages": {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "object"}}]},
    "string_object_or_messages": {
        "anyOf": [{"type": "string"}, {"type": "object"}, {"type": "array", "items": {"type": "object"}}]
    },
    "documents": {"type": "array", "items": {"type": "object"}},
    "labels": {"type": "array", "items": {"type": "object"}},
    "messages": {"type": "array", "items": {"type": "object"}},
}
# a field read by several inputs takes the narrowest of their types (the lowest)
INPUT_TYPE_ORDER = {"string": 0, "documents": 0, "labels": 0, "string_or_messages": 1, "string_object_or_messages": 2}
MetricKind = Literal["ordinal", "continuous", "boolean"]


@dataclass(frozen=True)
class InputSpec:
    """One evaluator input (a key of the criterion's ``data_mapping``)."""

    name: str
    type: InputType
    description: str = ""


@dataclass(frozen=True)
class ParamSpec:
    """One initialization parameter (a key of ``initialization_parameters``).

    ``aliases``: other spellings a declaration (a mapping file, azd's ``azure.eval.yaml``) may use for it; the
    mapping layer stores the parameter under ``name``, the only spelling sent to Foundry.
    """

    name: str
    type: type
    required: bool = False
    default: object = None
    description: str = ""
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class MetricSpec:
    """One output metric: its range, its direction and its default pass threshold."""

    name: str
    kind: MetricKind
    higher_is_better: bool
    min_value: float | None = None
    max_value: float | None = None
    threshold_param: str | None = None  # the init param holding this metric's threshold, if any
    default_threshold: float | None = None
    same_as: str | None = None  # an output metric that is a row metric under another name (document_retrieval)


@dataclass(frozen=True)
class EvaluatorSpec:
    """A builtin evaluator: Foundry name, inputs, init parameters, metrics.

    ``input_groups`` lists alternative sets of inputs; a row is valid when every input of at least one
    group is present (most evaluators have exactly one group: their required inputs).

    ``metrics`` are the metrics a result row carries (one ``ResultRow`` each). ``outputs`` are the metrics the
    published output schema declares, when they are not those: ``document_retrieval`` 3 declares one,
    ``document_retrieval`` (= ndcg@3, ``same_as``), and its code returns the nine measures under
    ``document_retrieval_properties`` (``properties_key``), which are the rows' metrics.

    ``abstention_correct_on_negative``: the evaluator's own verdict fails a response that abstains, but on a
    negative query (nothing relevant exists) abstaining is the correct outcome; the report's negative-query
    section then counts that verdict as correct, not as a failure.
    """

    name: str
    version: str
    description: str
    inputs: tuple[InputSpec, ...]
    input_groups: tuple[tuple[str, ...], ...]
    params: tuple[ParamSpec, ...]
    metrics: tuple[MetricSpec, ...]
    primary_metric: str
    needs_deployment: bool
    preview: bool = False
    sdk_class: str | None = None  # azure.ai.evaluation class computing the same thing locally
    notes: tuple[str, ...] = field(default_factory=tuple)
    outputs: tuple[MetricSpec, ...] = ()
    abstention_correct_on_negative: bool = False

    @property
    def short_name(self) -> str:
        """``builtin.groundedness`` → ``groundedness`` (the default criterion name)."""
        return self.name.removeprefix("builtin.")

    @property
    def input_names(self) -> tuple[str, ...]:
        return tuple(i.name for i in self.inputs)

    @property
    def required_inputs(self) -> frozenset[str]:
        """Inputs present in every input group."""
        groups = [set(g) for g in self.input_groups]
        return frozenset(set.intersection(*groups)) if groups else frozenset()

    @property
    def properties_key(self) -> str | None:
        """Where the evaluator's code puts the rows' metrics when its output declares others
        (``document_retrieval_properties``); None when the rows' metrics are the outputs."""
        return f"{self.short_name}_properties" if self.outputs else None

    def output(self, name: str) -> MetricSpec | None:
        """The published output metric called ``name`` that is not a row metric (``document_retrieval``)."""
        return next((m for m in self.outputs if m.name == name), None)

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)

    def param(self, name: str) -> ParamSpec:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    def param_called(self, key: str) -> str | None:
        """The name of the init parameter ``key`` spells: ``key`` itself, or the parameter it is an alias of
        (``model`` → ``deployment_name``); None for neither."""
        if key in self.param_names:
            return key
        return next((p.name for p in self.params if key in p.aliases), None)

    def metric(self, name: str) -> MetricSpec:
        for m in self.metrics:
            if m.name == name:
                return m
        raise KeyError(name)

    def input(self, name: str) -> InputSpec:
        for i in self.inputs:
            if i.name == name:
                return i
        raise KeyError(name)


_QUERY = InputSpec("query", "string_or_messages", "the user's question")
_RESPONSE = InputSpec("response", "string_or_messages", "the answer the model produced")
_CONTEXT = InputSpec("context", "string", "the exact context string sent to the model")
_GROUND_TRUTH = InputSpec("ground_truth", "string", "the reference answer")
# azd's files write the judge as `model` (what custom rubrics take); the azure.ai.evaluations extension binds
# either spelling to the one the evaluator declares (judgeModelAliases in its internal/cmd/build.go)
_DEPLOYMENT = ParamSpec("deployment_name", str, required=True, description="judge model deployment", aliases=("model",))


def _judge(
    short: str,
    version: str,
    description: str,
    inputs: tuple[InputSpec, ...],
    groups: tuple[tuple[str, ...], ...],
    sdk_class: str,
    *,
    preview: bool = False,
    extra_params: tuple[ParamSpec, ...] = (),
) -> EvaluatorSpec:
    """An LLM judge: score 1–5, higher is better, pass at or above ``threshold`` (default 3)."""
    return EvaluatorSpec(
        name=f"builtin.{short}",
        version=version,
        description=description,
        inputs=inputs,
        input_groups=groups,
        params=(
            _DEPLOYMENT,
            *extra_params,
            ParamSpec("threshold", float, default=3, description="pass at or above (1–5)"),
        ),
        metrics=(MetricSpec(short, "ordinal", True, 1, 5, "threshold", 3),),
        primary_metric=short,
        needs_deployment=True,
        preview=preview,
        sdk_class=sdk_class,
    )


_NDCG = MetricSpec("ndcg@3", "continuous", True, 0, 1, "ndcg_threshold", 0.5)

DOCUMENT_RETRIEVAL = EvaluatorSpec(
    name="builtin.document_retrieval",
    version="3",
    description="Ranking quality against human labels (no model): ndcg@3, xdcg@3, fidelity, holes, ...",
    inputs=(
        InputSpec("retrieval_ground_truth", "labels", "[{document_id, query_relevance_label}] human labels"),
        InputSpec("retrieved_documents", "documents", "[{document_id, relevance_score}] the search results"),
    ),
    input_groups=(("retrieval_ground_truth", "retrieved_documents"),),
    params=(
        ParamSpec("ground_truth_label_min", int, default=0, description="lowest label (means irrelevant)"),
        ParamSpec("ground_truth_label_max", int, default=4, description="highest label"),
        ParamSpec("ndcg_threshold", float, default=0.5),
        ParamSpec("xdcg_threshold", float, default=50.0),
        ParamSpec("fidelity_threshold", float, default=0.5),
        ParamSpec("top1_relevance_threshold", float, default=50.0),
        ParamSpec("top3_max_relevance_threshold", float, default=50.0),
        ParamSpec("total_retrieved_documents_threshold", int, default=50),
        ParamSpec("total_ground_truth_documents_threshold", int, default=50),
    ),
    metrics=(
        _NDCG,
        MetricSpec("xdcg@3", "continuous", True, 0, None, "xdcg_threshold", 50.0),
        MetricSpec("fidelity", "continuous", True, 0, 1, "fidelity_threshold", 0.5),
        MetricSpec("top1_relevance", "continuous", True, None, None, "top1_relevance_threshold", 50.0),
        MetricSpec("top3_max_relevance", "continuous", True, None, None, "top3_max_relevance_threshold", 50.0),
        MetricSpec("holes", "ordinal", False, 0, None, None, 0),
        MetricSpec("holes_ratio", "continuous", False, 0, 1, None, 0),
        MetricSpec("total_retrieved_documents", "ordinal", True, 0, None, "total_retrieved_documents_threshold", 50),
        MetricSpec(
            "total_ground_truth_documents", "ordinal", True, 0, None, "total_ground_truth_documents_threshold", 50
        ),
    ),
    outputs=(MetricSpec("document_retrieval", "continuous", True, 0, 1, "ndcg_threshold", 0.5, same_as=_NDCG.name),),
    primary_metric="ndcg@3",
    needs_deployment=False,
    sdk_class="DocumentRetrievalEvaluator",
    notes=(
        "ranks by relevance_score, not list order; k is fixed at 3",
        "an unlabelled retrieved document (hole) counts as label 0, even when the minimum label is 1",
        "fidelity weights are mis-assigned when ground_truth_label_max >= 10",
        "version 3 outputs one metric, `document_retrieval` (= ndcg@3), with the nine measures under "
        "`document_retrieval_properties`; version 2 returned one result per measure (both are read)",
    ),
)

_GRADER_INPUT = ParamSpec(
    "input", list, required=True, description="messages whose {{item.x}} templates the grader fills"
)


def _grader(short: str, description: str, params: tuple[ParamSpec, ...], metric: MetricSpec) -> EvaluatorSpec:
    """An OpenAI model grader (``label_model``, ``score_model``; subtype ``openai_graders``, version 1): no data
    mapping (its ``input`` messages read the item through ``{{item.x}}`` templates), configured wholly by init
    parameters, judged by the deployment it names."""
    return EvaluatorSpec(
        name=f"builtin.{short}",
        version="1",
        description=description,
        inputs=(),
        input_groups=(),
        params=(
            ParamSpec("deployment_name", str, required=True, description="judge model deployment"),
            ParamSpec("model", str, required=True, description="the judge model"),
            ParamSpec("name", str, required=True, description="the grader's name"),
            ParamSpec("type", str, required=True, description=f"{short!r}"),
            _GRADER_INPUT,
            *params,
        ),
        metrics=(metric,),
        primary_metric=short,
        needs_deployment=True,
        notes=("an OpenAI grader: the input messages are the prompt, rendered per item from {{item.x}} templates",),
    )


LABEL_MODEL = _grader(
    "label_model",
    "A model picks one of the given labels per item; passes when it is one of passing_labels",
    (
        ParamSpec("labels", list, required=True, description="the labels the model chooses from"),
        ParamSpec("passing_labels", list, required=True, description="the labels that pass"),
    ),
    MetricSpec("label_model", "boolean", True, 0, 1, None, None),
)
SCORE_MODEL = _grader(
    "score_model",
    "A model scores each item on a numeric range; passes at or above pass_threshold",
    (
        ParamSpec("range", list, required=True, description="[low, high] of the score"),
        ParamSpec("pass_threshold", float, required=True, description="pass at or above"),
    ),
    MetricSpec("score_model", "continuous", True, 0, 1, "pass_threshold", None),
)

_QUERY_TEXT = InputSpec("query", "string", "the user's question")
_RESPONSE_TEXT = InputSpec("response", "string", "the answer the model produced")

CATALOG: dict[str, EvaluatorSpec] = {
    spec.name: spec
    for spec in (
        DOCUMENT_RETRIEVAL,
        _judge(
            "retrieval",
            "12",
            "Is the retrieved context relevant to the query? (query ↔ context)",
            (_QUERY_TEXT, _CONTEXT),
            (("query", "context"),),
            "RetrievalEvaluator",
        ),
        _judge(
            "groundedness",
            "16",
            "Is the response supported by the context? (context ↔ response)",
            (
                _QUERY,
                _CONTEXT,
                _RESPONSE,
                InputSpec("tool_definitions", "string_object_or_messages"),
                InputSpec("messages", "messages", "the whole conversation (conversation level)"),
            ),
            (("response", "context"), ("query", "response")),  # the conversation form, (messages,), is not mapped
            "GroundednessEvaluator",
            extra_params=(ParamSpec("evaluation_level", str, description="conversation or turn"),),
        ),
        _judge(
            "relevance",
            "11",
            "Does the response address the query? (query ↔ response)",
            (_QUERY, _RESPONSE),
            (("query", "response"),),
            "RelevanceEvaluator",
        ),
        _judge(
            "response_completeness",
            "9",
            "Does the response cover the reference answer?",
            (_GROUND_TRUTH, _RESPONSE),
            (("ground_truth", "response"),),
            "ResponseCompletenessEvaluator",
            preview=True,
        ),
        EvaluatorSpec(
            name="builtin.groundedness_pro",
            version="7",
            description="Service-side groundedness check (Azure AI Content Safety); boolean verdict",
            inputs=(_QUERY_TEXT, _CONTEXT, _RESPONSE_TEXT),
            input_groups=(("query", "context", "response"),),
            params=(ParamSpec("threshold", float, default=5),),
            metrics=(MetricSpec("groundedness_pro", "boolean", True, 0, 1, None, None),),
            primary_metric="groundedness_pro",
            needs_deployment=False,
            preview=True,
            sdk_class="GroundednessProEvaluator",
            notes=(
                "cannot run offline: it calls the Foundry safety service",
                "version 6 required an azure_ai_project init parameter; version 7 has none (the service's own)",
            ),
        ),
        EvaluatorSpec(
            name="builtin.quality_grader",
            version="6",
            description="One 0–1 verdict over relevance, abstention, completeness, groundedness and context coverage",
            inputs=(_QUERY, _RESPONSE, _CONTEXT),
            input_groups=(("query", "response"),),
            params=(_DEPLOYMENT,),
            metrics=(MetricSpec("quality_grader", "ordinal", True, 0, 1, None, 0.5),),
            primary_metric="quality_grader",
            needs_deployment=True,
            preview=True,
            abstention_correct_on_negative=True,
            notes=(
                "preview; turn level only; no threshold parameter: 1 passes, 0 fails (read at 0.5)",
                "its code fails a response that abstains, the right answer to a negative query: the report counts "
                "an abstention on a negative query as correct",
                "no azure-ai-evaluation class: it cannot run on the local backend",
            ),
        ),
        LABEL_MODEL,
        SCORE_MODEL,
    )
}


PARAM_ALIASES: dict[str, tuple[str, ...]] = {  # parameter name → the other spellings a declaration may use
    p.name: p.aliases for spec in CATALOG.values() for p in spec.params if p.aliases
}


def get_evaluator(name: str) -> EvaluatorSpec:
    """Look an evaluator up by Foundry name (``builtin.x``) or short name; KeyError with a did-you-mean."""
    return builtin_entry(CATALOG, name, "evaluator")
