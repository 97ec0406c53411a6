"""Which builtin evaluators the emulator serves, and how it scores each: read from the published contracts.

Every ``builtin.*`` name of ``foundry_bridge.contracts`` (the 44 published specs) is served; the scorer is chosen
from the contract's subtype, inputs, init parameters and metric type (and, for document retrieval, from the
project's catalog), never from a list of names:

- ``ranking``: a catalog evaluator scored from human labels (document retrieval): the project's exact metrics;
- ``computed``: code evaluators that need no model, take ``response`` and ``ground_truth`` and output one
  continuous 0–1 metric (bleu, gleu, meteor, f1, rouge): computed for real by azure-ai-evaluation's class of the
  same name (``_nlp.py``);
- ``judge``: code evaluators configured with a ``deployment_name`` (LLM judges): a mock score on the metric's
  published range and type;
- ``safety``: the Azure AI safety service's evaluators (subtype ``service``): a benign stand-in (severity 0,
  booleans at their passing value), or, for those comparing a response with a ``context``, the overlap rule;
- ``stand_in``: the other code evaluators that need no model (bbeh, ifeval, regex_match,
  task_navigation_efficiency): a lexical-overlap stand-in on their published metrics;
- ``grader``: the OpenAI graders that call a model (subtype ``openai_graders`` with a ``deployment_name``:
  ``label_model``, ``score_model``): the lexical stand-in of ``_graders``.

The other OpenAI graders (string_check, text_similarity, python_grader) are refused at create.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from .._text import did_you_mean
from ..catalog import CATALOG, EvaluatorSpec
from ..contracts import Contract, MetricContract, published_contracts
from ..wire import resolve_threshold

__all__ = ["ScorerKind", "Served", "served", "threshold_of", "unserved_reason"]

ScorerKind = Literal["ranking", "computed", "judge", "safety", "stand_in", "grader"]
_JUDGE_PARAM = "deployment_name"
_GRADERS = "openai_graders"
_NLP_INPUTS = frozenset({"response", "ground_truth"})


@dataclass(frozen=True)
class Served:
    """A builtin evaluator as the emulator serves it: its contract, the catalog entry when the project maps it,
    the scorer kind, and the azure-ai-evaluation class name its messages carry (``F1ScoreEvaluator``)."""

    contract: Contract
    spec: EvaluatorSpec | None
    kind: ScorerKind
    sdk_class: str

    @property
    def name(self) -> str:
        return self.contract.name

    @property
    def short(self) -> str:
        return self.contract.short_name

    @property
    def primary(self) -> MetricContract:
        """The metric a criterion's verdict follows: the first one published."""
        return self.contract.metrics[0]

    @property
    def needs_deployment(self) -> bool:
        return _JUDGE_PARAM in self.contract.required_init

    def default_threshold(self, metric: MetricContract) -> float | None:
        """A metric's pass threshold when neither the criterion nor the catalog sets one: the middle of its published
        range (1–5 → 3, 0–7 lower-better → 3, 0–1 → 1 for ordinals and 0.5 for continuous scores); booleans none."""
        if metric.type == "boolean" or metric.min_value is None or metric.max_value is None:
            return None
        half = (metric.max_value - metric.min_value) / 2
        if metric.type == "continuous":
            return metric.min_value + half
        return metric.min_value + (math.ceil(half) if metric.higher_is_better else math.floor(half))


def _kind(contract: Contract, spec: EvaluatorSpec | None) -> ScorerKind:
    if spec is not None and not spec.needs_deployment and any(i.type == "labels" for i in spec.inputs):
        return "ranking"
    if contract.subtype == "service":
        return "safety"
    if contract.subtype == _GRADERS:
        return "grader"
    if _JUDGE_PARAM in contract.init_params:
        return "judge"
    only = contract.metrics[0] if len(contract.metrics) == 1 else None
    if only is not None and only.type == "continuous" and set(contract.inputs) == _NLP_INPUTS:
        return "computed"
    return "stand_in"


def _class_name(contract: Contract, spec: EvaluatorSpec | None) -> str:
    """``f1_score`` → ``F1ScoreEvaluator`` (the catalog's name when it has one)."""
    if spec is not None and spec.sdk_class:
        return spec.sdk_class
    return "".join(part.capitalize() for part in contract.short_name.split("_")) + "Evaluator"


@cache
def _served_by_name() -> dict[str, Served]:
    out = {}
    for name, contract in published_contracts().items():
        if contract.subtype == _GRADERS and _JUDGE_PARAM not in contract.init_params:
            continue  # string_check, text_similarity, python_grader: not run here
        spec = CATALOG.get(name)
        out[name] = Served(contract, spec, _kind(contract, spec), _class_name(contract, spec))
    return out


def served(evaluator_name: str) -> Served | None:
    """The served evaluator called ``evaluator_name`` (a ``builtin.*`` name), or None."""
    return _served_by_name().get(evaluator_name)


def unserved_reason(evaluator_name: str) -> str:
    """Why ``evaluator_name`` is not served: an OpenAI grader the emulator cannot run, or an unknown name (with the
    closest published name)."""
    contract = published_contracts().get(evaluator_name)
    if contract is not None:
        return (
            f"'{evaluator_name}' is an OpenAI grader (subtype openai_graders), which the foundry_bridge emulator "
            "cannot run; run it on Foundry, or leave it out of the emulated eval"
        )
    guess = did_you_mean(evaluator_name, list(_served_by_name()))
    hint = f"did you mean '{guess}'?" if guess else f"the {len(_served_by_name())} served builtins: GET /evaluators"
    return f"unknown evaluator '{evaluator_name}': no published builtin has that name; {hint}"


def threshold_of(item: Served, metric: MetricContract, init: dict[str, Any]) -> float | None:
    """The criterion's threshold for ``metric``: ``wire.resolve_threshold`` (the init parameter the catalog names
    for it, ``threshold`` otherwise, with the catalog's default), else ``Served.default_threshold``."""
    known = next((m for m in item.spec.metrics if m.name == metric.name), None) if item.spec is not None else None
    value = resolve_threshold(known if known is not None and known.threshold_param else None, init)
    return value if value is not None else item.default_threshold(metric)
