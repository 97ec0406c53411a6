"""The published contracts of Foundry's builtin evaluators, as typed values.

A *contract* is what an evaluator promises on the wire: its version, the inputs its ``data_mapping`` may name (and
which are required), its initialization parameters and the metrics it outputs (type, direction, range). Two
sources describe contracts, in different spellings, and this module reads both into one ``Contract``:

- the published specs (``resources/contracts/builtin-specs.json``, Azure/azureml-assets, July 2026):
  ``version`` (int), ``evaluatorSubType``, ``initParameterSchema``, ``dataMappingSchema``, ``outputSchema``;
- the live catalog (``GET {project}/evaluators?type=builtin``): ``version`` (string), ``definition.type``,
  ``definition.init_parameters``, ``definition.data_schema``, ``definition.metrics``.

``catalog.py`` holds what this project adds on top for the evaluators it maps (roles of inputs, thresholds,
query-kind rules); this module holds only what Foundry publishes, for all 44 builtins.

Quirks kept as published: ``required_inputs`` is ``None`` when a spec declares no ``required`` list (the evaluator
decides per evaluation level: conversation or turn); a metric's ``min_value``/``max_value`` is ``None`` when the
spec gives none (booleans, unbounded counts).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from ._text import did_you_mean

__all__ = [
    "Contract",
    "MetricContract",
    "contract_from_live",
    "contract_from_spec",
    "get_contract",
    "published_contracts",
]

_SPECS = ("resources", "contracts", "builtin-specs.json")


@dataclass(frozen=True)
class MetricContract:
    """One output metric as published: ``type`` is ``ordinal``, ``continuous`` or ``boolean``; ``higher_is_better``
    reads ``desirable_direction`` (``increase`` → True, ``decrease`` → False)."""

    name: str
    type: str
    higher_is_better: bool
    min_value: float | None = None
    max_value: float | None = None


@dataclass(frozen=True)
class Contract:
    """A builtin evaluator's published contract. ``inputs`` and ``init_params`` map a name to its JSON Schema
    (as published, a ``dict``); ``subtype`` is ``code`` (evaluator code, LLM judge or not), ``service`` (an Azure AI
    safety service) or ``openai_graders`` (an OpenAI grader type, configured entirely by init parameters)."""

    name: str
    version: int
    subtype: str
    categories: tuple[str, ...]
    levels: tuple[str, ...] | None
    inputs: Mapping[str, Any]
    required_inputs: tuple[str, ...] | None
    init_params: Mapping[str, Any]
    required_init: tuple[str, ...]
    metrics: tuple[MetricContract, ...]
    input_groups: tuple[tuple[str, ...], ...] = ()  # alternative required sets (``required``, or each ``anyOf``)

    @property
    def short_name(self) -> str:
        """``builtin.relevance`` → ``relevance``."""
        return self.name.removeprefix("builtin.")

    def metric(self, name: str) -> MetricContract | None:
        """The output metric called ``name``, if the contract declares it."""
        return next((m for m in self.metrics if m.name == name), None)


def _metrics(schema: Mapping[str, Any] | None) -> tuple[MetricContract, ...]:
    out = []
    for name, m in (schema or {}).items():
        out.append(
            MetricContract(
                name=name,
                type=str(m.get("type", "continuous")),
                higher_is_better=m.get("desirable_direction", "increase") != "decrease",
                min_value=None if m.get("min_value") is None else float(m["min_value"]),
                max_value=None if m.get("max_value") is None else float(m["max_value"]),
            )
        )
    return tuple(out)


def _required(schema: Mapping[str, Any] | None) -> tuple[str, ...] | None:
    req = (schema or {}).get("required")
    return None if req is None else tuple(req)


def _input_groups(schema: Mapping[str, Any]) -> tuple[tuple[str, ...], ...]:
    alternatives = [schema] if "required" in schema else list(schema.get("anyOf") or ())
    return tuple(tuple(alt["required"]) for alt in alternatives if alt.get("required"))


def _contract(name: str, version: Any, subtype: str, entry: Mapping[str, Any], parts: tuple[Any, Any, Any]) -> Contract:
    init, data, metrics = (p or {} for p in parts)
    levels = entry.get("supportedEvaluationLevels")
    return Contract(
        name=name,
        version=int(version),
        subtype=subtype,
        categories=tuple(entry.get("categories") or ()),
        levels=None if levels is None else tuple(levels),
        inputs=dict(data.get("properties") or {}),
        required_inputs=_required(data),
        init_params=dict(init.get("properties") or {}),
        required_init=_required(init) or (),
        metrics=_metrics(metrics),
        input_groups=_input_groups(data),
    )


def contract_from_spec(name: str, spec: Mapping[str, Any]) -> Contract:
    """A contract from a published ``spec.yaml`` entry (the bundled ``builtin-specs.json`` spelling)."""
    parts = (spec.get("initParameterSchema"), spec.get("dataMappingSchema"), spec.get("outputSchema"))
    return _contract(name, spec["version"], str(spec.get("evaluatorSubType", "code")), spec, parts)


def contract_from_live(entry: Mapping[str, Any]) -> Contract:
    """A contract from one item of a live ``GET /evaluators`` answer (``version`` is a string there, and the
    schemas sit under ``definition``)."""
    d = entry.get("definition") or {}
    parts = (d.get("init_parameters"), d.get("data_schema"), d.get("metrics"))
    return _contract(str(entry["name"]), entry["version"], str(d.get("type", "code")), entry, parts)


@cache
def published_contracts() -> Mapping[str, Contract]:
    """Every published builtin contract, by Foundry name (``builtin.*``), in the specs' order."""
    text = resources.files("foundry_bridge").joinpath(*_SPECS).read_text(encoding="utf-8")
    return {name: contract_from_spec(name, spec) for name, spec in json.loads(text).items()}


def get_contract(name: str) -> Contract:
    """A published contract by Foundry name (``builtin.x``) or short name; KeyError with a did-you-mean."""
    known = published_contracts()
    found = known.get(name) or known.get(f"builtin.{name}")
    if found is not None:
        return found
    guess = did_you_mean(name, list(known)) or did_you_mean(f"builtin.{name}", list(known))
    hint = f"; did you mean {guess!r}?" if guess else f"; known: {', '.join(known)}"
    raise KeyError(f"unknown builtin evaluator {name!r}{hint}")
