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

``diff_contracts`` lists every difference between two sets of contracts (version, inputs and their groups, init
parameters, metrics): ``foundry-bridge catalog diff`` prints it, and exits non-zero when there is one.
``live_entries`` reads a saved ``GET /evaluators`` answer in any of the shapes it is kept in.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from ._text import builtin_entry

__all__ = [
    "Contract",
    "Difference",
    "MetricContract",
    "contract_from_live",
    "contract_from_spec",
    "diff_contracts",
    "get_contract",
    "live_entries",
    "live_entry",
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
    input_groups: tuple[tuple[str, ...], ...]  # alternative required sets (``anyOf``), else the one required set
    init_params: Mapping[str, Any]
    required_init: tuple[str, ...]
    metrics: tuple[MetricContract, ...]

    @property
    def short_name(self) -> str:
        """``builtin.relevance`` → ``relevance``."""
        return self.name.removeprefix("builtin.")

    def metric(self, name: str) -> MetricContract | None:
        """The output metric called ``name``, if the contract declares it."""
        return next((m for m in self.metrics if m.name == name), None)


def _metrics(schema: Mapping[str, Any] | None) -> tuple[MetricContract, ...]:
    def bound(m: Mapping[str, Any], key: str) -> float | None:
        return None if m.get(key) is None else float(m[key])

    return tuple(
        MetricContract(
            name,
            str(m.get("type", "continuous")),
            m.get("desirable_direction", "increase") != "decrease",
            bound(m, "min_value"),
            bound(m, "max_value"),
        )
        for name, m in (schema or {}).items()
    )


def _required(schema: Mapping[str, Any] | None) -> tuple[str, ...] | None:
    req = (schema or {}).get("required")
    return None if req is None else tuple(req)


def _groups(schema: Mapping[str, Any]) -> tuple[tuple[str, ...], ...]:
    """``anyOf: [{required: [...]}, ...]`` → those sets; else the ``required`` list as the one set (none if empty)."""
    alternatives = [tuple(g.get("required") or ()) for g in schema.get("anyOf") or () if isinstance(g, Mapping)]
    required = tuple(schema.get("required") or ())
    return tuple(alternatives) if alternatives else ((required,) if required else ())


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
        input_groups=_groups(data),
        init_params=dict(init.get("properties") or {}),
        required_init=_required(init) or (),
        metrics=_metrics(metrics),
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


def _schema(
    properties: Mapping[str, Any], required: tuple[str, ...] | None, groups: tuple[tuple[str, ...], ...]
) -> dict[str, Any]:
    """A JSON Schema object as the live answer writes it; ``required`` left out when the spec gives none (the
    evaluator decides per evaluation level), alternative groups as ``anyOf``."""
    out: dict[str, Any] = {"type": "object", "properties": dict(properties)}
    if required is not None:
        out["required"] = list(required)
    if len(groups) > 1 or (groups and required is None):
        out["anyOf"] = [{"required": list(g)} for g in groups]
    return out


def live_entry(contract: Contract, *, created_at: str = "2026-07-23T00:00:00+00:00") -> dict[str, Any]:
    """A contract in the live ``GET /evaluators`` spelling (as recorded: ``version`` a string, the schemas under
    ``definition``, ``min_value``/``max_value`` written even when null); ``contract_from_live`` reads it back to the
    same contract, evaluation levels aside (the live answer does not carry them)."""
    metrics = {
        m.name: {
            "type": m.type,
            "desirable_direction": "increase" if m.higher_is_better else "decrease",
            "min_value": m.min_value,
            "max_value": m.max_value,
        }
        for m in contract.metrics
    }
    return {
        "id": f"azureml://registries/azureml/evaluators/{contract.name}/versions/{contract.version}",
        "name": contract.name,
        "display_name": contract.short_name,
        "metadata": {"provider": "Microsoft"},
        "description": "",
        "version": str(contract.version),
        "created_by": "azureml",
        "created_at": created_at,
        "modified_at": created_at,
        "categories": list(contract.categories),
        "evaluator_type": "builtin",
        "definition": {
            "type": contract.subtype,
            "init_parameters": _schema(contract.init_params, contract.required_init, ()),
            "metrics": metrics,
            "data_schema": _schema(contract.inputs, contract.required_inputs, contract.input_groups),
        },
    }


@cache
def published_contracts() -> Mapping[str, Contract]:
    """Every published builtin contract, by Foundry name (``builtin.*``), in the specs' order."""
    text = resources.files("foundry_bridge").joinpath(*_SPECS).read_text(encoding="utf-8")
    return {name: contract_from_spec(name, spec) for name, spec in json.loads(text).items()}


def get_contract(name: str) -> Contract:
    """A published contract by Foundry name (``builtin.x``) or short name; KeyError with a did-you-mean."""
    return builtin_entry(published_contracts(), name, "builtin evaluator")


# -- drift -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Difference:
    """One way two contracts of the same evaluator differ. ``aspect``: ``evaluator`` (present on one side only),
    ``version``, ``input``, ``input groups``, ``init parameter``, ``required init``, ``metric``; ``name`` is the
    input, parameter or metric concerned; ``ours``/``theirs`` are the bundled and the other side's values (None:
    absent on that side)."""

    evaluator: str
    aspect: str
    name: str | None
    ours: Any
    theirs: Any

    def describe(self, other: str = "other") -> str:
        """``builtin.x: version: bundled 3, live 2`` (``other`` names the side compared with the bundled one)."""
        what = f"{self.aspect} {self.name}" if self.name else self.aspect
        return f"{self.evaluator}: {what}: bundled {_show(self.ours)}, {other} {_show(self.theirs)}"

    def __str__(self) -> str:
        return self.describe()

    def as_json(self) -> dict[str, Any]:
        return {
            "evaluator": self.evaluator,
            "aspect": self.aspect,
            "name": self.name,
            "bundled": self.ours,
            "other": self.theirs,
        }


def _show(value: Any) -> str:
    if value is None:
        return "absent"
    return json.dumps(value, sort_keys=True) if isinstance(value, dict | list) else str(value)


def _metric_view(m: MetricContract) -> dict[str, Any]:
    return {"type": m.type, "higher_is_better": m.higher_is_better, "min": m.min_value, "max": m.max_value}


def _keyed(aspect: str, name: str, ours: Mapping[str, Any], theirs: Mapping[str, Any]) -> list[Difference]:
    """Differences between two name → value maps: a key on one side only, or a value that differs."""
    out = []
    for key in [*ours, *(k for k in theirs if k not in ours)]:
        a, b = ours.get(key), theirs.get(key)
        if a != b:
            out.append(Difference(name, aspect, key, a, b))
    return out


def _diff_one(ours: Contract, theirs: Contract) -> list[Difference]:
    name = ours.name
    out = []
    if ours.version != theirs.version:
        out.append(Difference(name, "version", None, ours.version, theirs.version))
    out += _keyed("input", name, ours.inputs, theirs.inputs)
    groups_a, groups_b = sorted(map(sorted, ours.input_groups)), sorted(map(sorted, theirs.input_groups))
    if groups_a != groups_b:
        out.append(Difference(name, "input groups", None, groups_a, groups_b))
    out += _keyed("init parameter", name, ours.init_params, theirs.init_params)
    if sorted(ours.required_init) != sorted(theirs.required_init):
        out.append(Difference(name, "required init", None, sorted(ours.required_init), sorted(theirs.required_init)))
    metrics_a = {m.name: _metric_view(m) for m in ours.metrics}
    out += _keyed("metric", name, metrics_a, {m.name: _metric_view(m) for m in theirs.metrics})
    return out


def diff_contracts(
    ours: Mapping[str, Contract], theirs: Mapping[str, Contract], *, only: Iterable[str] | None = None
) -> list[Difference]:
    """Every difference between the bundled contracts (``ours``) and another set (a live or saved catalog, the
    emulator's): evaluators on one side only, then per evaluator its version, inputs (schema by schema), input
    groups, init parameters, required init parameters and metrics (type, direction, range). ``only`` restricts
    the comparison to those evaluator names (e.g. the ones this project's catalog maps)."""
    wanted = None if only is None else set(only)

    def kept(n: str) -> bool:
        return wanted is None or n in wanted

    out = [Difference(n, "evaluator", None, "present", None) for n in ours if n not in theirs and kept(n)]
    out += [Difference(n, "evaluator", None, None, "present") for n in theirs if n not in ours and kept(n)]
    for n in ours:
        if n in theirs and kept(n):
            out += _diff_one(ours[n], theirs[n])
    return out


def live_entries(data: Any) -> list[dict[str, Any]]:
    """The evaluator entries of a saved ``GET /evaluators`` answer: one page (``{"value": [...]}``), a list of pages
    or of entries, or a test-proxy recording (``{"Entries": [...]}``: the ``type=builtin`` GET answers). Raises
    ValueError for anything else."""
    if isinstance(data, Mapping) and isinstance(data.get("Entries"), list):
        pages = [
            e.get("ResponseBody")
            for e in data["Entries"]
            if isinstance(e, Mapping) and e.get("RequestMethod") == "GET" and "type=builtin" in str(e.get("RequestUri"))
        ]
        return live_entries([p for p in pages if isinstance(p, Mapping)])
    if isinstance(data, Mapping) and isinstance(data.get("value"), list):
        return [v for v in data["value"] if isinstance(v, dict)]
    if isinstance(data, list):
        out: list[dict[str, Any]] = []
        for part in data:
            if isinstance(part, Mapping) and isinstance(part.get("value"), list):
                out += live_entries(part)
            elif isinstance(part, dict) and "name" in part:
                out.append(part)
        return out
    raise ValueError(
        "not a GET /evaluators answer: expected {'value': [...]}, a list of pages or entries, or a recording"
    )
