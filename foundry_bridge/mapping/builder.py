"""Build the plan: testing criteria, item schema and run items from a mapping and the dataset's records.

Every evaluator fact (inputs, their JSON types, init params) comes from ``catalog``. Choices (docs/mapping.md):
- an input is mapped when the mapping lists it under ``inputs``, when it is required, or when the mapping
  produces an item field of the same name; ``data_mapping`` is ``{"<input>": "{{item.<field>}}"}``;
- ``item_schema`` lists the item fields the criteria read, typed as the catalog's ``data_schema`` types them;
  ``required`` holds the fields bound to inputs every row must have; ``include_sample_schema`` is ``true``,
  as in the recorded dataset runs;
- items are ``{"item": {"query_id": ..., <every field a criterion reads>: value or null}}``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from collections.abc import Mapping as TMapping
from pathlib import Path
from typing import Any

from .._text import did_you_mean
from ..catalog import INPUT_TYPE_ORDER, INPUT_TYPE_SCHEMAS, get_evaluator
from ..errors import MappingError
from ..wire import item_template, parse_template, template_fields
from .loader import defaults_taken, expand_param, param_type_problem
from .model import Mapping, available_fields
from .plan import CriterionPlan, EnvDefault, Plan, RowSpool

__all__ = ["build_criteria", "build_eval_body", "build_plan", "grader_fields", "item_fields", "item_schema"]


def _criterion_name(entry_name: str | None, default: str, taken: set[str], index: int) -> str:
    if entry_name is not None:
        if entry_name in taken:
            raise MappingError(
                f"criterion name {entry_name!r} is used twice",
                field=f"evaluators[{index}].name",
                hint="give each evaluator entry a distinct `name`",
            )
        return entry_name
    name, n = default, 2
    while name in taken:
        name, n = f"{default}_{n}", n + 1
    return name


def build_criteria(mapping: Mapping, *, environ: TMapping[str, str] | None = None) -> list[CriterionPlan]:
    """One ``CriterionPlan`` per mapping entry; ``${VAR}`` / ``${VAR:-default}`` expanded in init params."""
    fields = set(available_fields(mapping))
    taken: set[str] = set()
    criteria: list[CriterionPlan] = []
    for i, entry in enumerate(mapping.evaluators):
        where = f"evaluators[{i}]"
        try:
            spec = get_evaluator(entry.evaluator)
        except KeyError as exc:
            raise MappingError(str(exc.args[0]), field=f"{where}.evaluator") from None
        name = _criterion_name(entry.name, spec.short_name, taken, i)
        taken.add(name)
        for key in entry.inputs:
            if key not in spec.input_names:
                guess = did_you_mean(key, spec.input_names)
                raise MappingError(
                    f"{key!r} is not an input of {spec.name}",
                    field=f"{where}.inputs.{key}",
                    hint=f"did you mean {guess!r}?" if guess else f"inputs: {', '.join(spec.input_names)}",
                )
        env = dict(environ) if environ is not None else None
        init: dict[str, Any] = {}
        for key, value in entry.init.items():
            ptype = spec.param(key).type if key in spec.param_names else None
            init[key] = expand_param(value, ptype, environ=env, where=f"{where}.init.{key}")
            problem = param_type_problem(init[key], ptype)
            if problem is not None:
                raise MappingError(f"{key} {problem[0]}", field=f"{where}.init.{key}", hint=problem[1])
        for param, default in (
            ("ground_truth_label_min", mapping.labels.min),
            ("ground_truth_label_max", mapping.labels.max),
        ):
            if param in spec.param_names and param not in init:
                init[param] = default
        data_mapping: dict[str, str] = {}
        required = spec.required_inputs
        for inp in spec.input_names:
            target = entry.inputs.get(inp, inp)
            if inp in entry.inputs or inp in required or target in fields:
                data_mapping[inp] = item_template(target)
        criteria.append(CriterionPlan(name=name, evaluator=spec.name, init=init, data_mapping=data_mapping))
    return criteria


def _env_defaults(
    mapping: Mapping, criteria: list[CriterionPlan], *, environ: TMapping[str, str] | None = None
) -> list[EnvDefault]:
    """The init parameters of ``criteria`` (built from ``mapping`` by ``build_criteria``, one per entry) whose value
    is a ``${VAR:-default}`` default because VAR was unset or empty (``loader.defaults_taken``)."""
    out: list[EnvDefault] = []
    for i, (entry, crit) in enumerate(zip(mapping.evaluators, criteria, strict=True)):
        for key, value in entry.init.items():
            out += [
                EnvDefault(
                    criterion=crit.name, param=key, field=f"evaluators[{i}].init.{key}", variable=var, value=default
                )
                for var, default in defaults_taken(value, environ=environ)
            ]
    return out


def _field_of(template: str) -> str | None:
    """The item field a ``{{item.<field>}}`` template reads (``wire.parse_template``); None for anything else."""
    parsed = parse_template(template)
    return parsed[1] if parsed is not None and parsed[0] == "item" else None


def grader_fields(c: CriterionPlan) -> list[str]:
    """The item fields a model grader's ``input`` messages read through ``{{item.x}}`` templates (``label_model``,
    ``score_model``: no data mapping); none for another criterion."""
    out: list[str] = []
    messages = c.init.get("input")
    for message in messages if isinstance(messages, list) else ():
        content = message.get("content") if isinstance(message, dict) else None
        for source, path in template_fields(content) if isinstance(content, str) else ():
            top = path.split(".", 1)[0]
            if source == "item" and top not in out:
                out.append(top)
    return out


def item_fields(criteria: Iterable[CriterionPlan]) -> list[str]:
    """The item fields the criteria read (data mappings, and graders' ``input`` templates), in first-use order."""
    out: list[str] = []
    for c in criteria:
        for f in [_field_of(t) for t in c.data_mapping.values()] + grader_fields(c):
            if f is not None and f not in out:
                out.append(f)
    return out


def item_schema(criteria: Iterable[CriterionPlan]) -> dict[str, Any]:
    """``{"type": "object", "properties": {...}, "required": [...]}`` for the fields the criteria read.

    A field read by several inputs gets the narrowest of their types; ``required`` lists fields bound to an input
    that every input group of its evaluator needs.
    """
    types: dict[str, str] = {}
    required: list[str] = []
    for c in criteria:
        spec = get_evaluator(c.evaluator)
        for inp, template in c.data_mapping.items():
            f = _field_of(template)
            if f is None:
                continue
            t = spec.input(inp).type
            if f not in types or INPUT_TYPE_ORDER[t] < INPUT_TYPE_ORDER[types[f]]:
                types[f] = t
            if inp in spec.required_inputs and f not in required:
                required.append(f)
        for f in grader_fields(c):  # any JSON value: a grader's template writes it into its message as text
            types.setdefault(f, "string_object_or_messages")
    return {
        "type": "object",
        "properties": {f: dict(INPUT_TYPE_SCHEMAS[t]) for f, t in types.items()},
        "required": required,
    }


def build_eval_body(criteria: list[CriterionPlan], *, name: str, metadata: dict[str, str]) -> dict[str, Any]:
    """The ``POST /openai/v1/evals`` body, keys in the order the openai client sends them."""
    return {
        "data_source_config": {"type": "custom", "item_schema": item_schema(criteria), "include_sample_schema": True},
        "testing_criteria": [c.testing_criterion() for c in criteria],
        "metadata": metadata,
        "name": name,
    }


def build_plan(
    records: Iterable[Any],
    mapping: Mapping,
    *,
    name: str | None = None,
    dataset_path: str | os.PathLike[str] | None = None,
    mapping_path: str | os.PathLike[str] | None = None,
    environ: TMapping[str, str] | None = None,
) -> Plan:
    """Criteria, eval-create body and run items for ``records`` (``QueryRecord``s) under ``mapping``. The items
    and records are streamed to temporary files as the records are read (``plan.JsonlRows``)."""
    from .. import __version__
    from .._io import sha256_file

    criteria = build_criteria(mapping, environ=environ)
    used = item_fields(criteria)
    items, dumps = RowSpool(), RowSpool()  # streamed to temporary files: a million rows are not held in memory
    for record in records:
        full = record.item()
        item: dict[str, Any] = {"query_id": record.query_id}
        for f in used:
            item[f] = full.get(f)
        items.append({"item": item})
        dumps.append(record.model_dump())
    dataset_name = Path(dataset_path).name if dataset_path is not None else None
    if name is None:
        name = Path(dataset_path).stem if dataset_path is not None else "foundry-bridge-eval"
    metadata = {"generator": f"foundry_bridge {__version__}"}
    if dataset_name:
        metadata["dataset"] = dataset_name
    metadata["mapping"] = Path(mapping_path).name if mapping_path is not None else "default.yaml"
    sha = None
    if dataset_path is not None and Path(dataset_path).is_file():
        sha = sha256_file(dataset_path)
    return Plan(
        name=name,
        mapping=mapping,
        criteria=criteria,
        eval_body=build_eval_body(criteria, name=name, metadata=metadata),
        items=items.rows(),
        records=dumps.rows(),
        dataset_path=str(dataset_path) if dataset_path is not None else None,
        dataset_sha256=sha,
        mapping_path=str(mapping_path) if mapping_path is not None else None,
        env_defaults=_env_defaults(mapping, criteria, environ=environ),
    )
