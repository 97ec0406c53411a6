"""Mapping rules: the criteria (from a mapping's ``evaluators`` or hand-written ``testing_criteria``) against the
catalog: evaluator names, initialization parameters, inputs, ``{{item.x}}`` templates, label ranges.

Each criterion is resolved to a ``Criterion`` (which item field feeds which input, its label range) that the data
rules then check every row against.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from .._text import did_you_mean
from ..catalog import CATALOG, EvaluatorSpec
from ..dataset._json import JsonLimitError, decode_document, duplicate_keys
from ..errors import InputError, MappingError
from ..mapping.loader import ParamTypeError, expand_param, mapping_line_finder, param_type_problem
from ..mapping.model import EvaluatorEntry, Mapping, available_fields
from ..wire import LONE_TEMPLATE as _TEMPLATE
from ._report import ValidationReport
from ._rules import Context

__all__ = ["Criterion", "criteria_from_mapping", "criteria_from_wire", "validate_criteria_file"]

_LABEL_BOUNDS = ("ground_truth_label_min", "ground_truth_label_max")


@dataclass
class Criterion:
    """A testing criterion resolved against the catalog: which item field feeds which input."""

    name: str
    spec: EvaluatorSpec
    fields: dict[str, str]  # input → item field
    label_min: int = 0
    label_max: int = 4
    where: str = ""  # field path of the criterion's init parameters in its file
    range_source: str = ""  # where the label range comes from, for the note that states it
    max_from: str = "mapping"  # what sets the maximum: the mapping's `labels`, or the criterion's `init` or
    # `initialization_parameters` (also for the evaluator's default, which is overridden there)

    def field_of_type(self, input_type: str) -> str | None:
        """The item field bound to this criterion's first input of ``input_type`` (labels, documents)."""
        return next((f for inp, f in self.fields.items() if self.spec.input(inp).type == input_type), None)


def _suggestion(guess: str | None, label: str, known: Any) -> str:
    return f"did you mean {guess!r}?" if guess else f"{label}: {', '.join(known)}"


def _check_spec(evaluator: Any, where: str, loc: tuple[Any, ...], ctx: Context) -> EvaluatorSpec | None:
    if not isinstance(evaluator, str) or not evaluator:
        ctx.add("missing_evaluator", where, loc=loc)
        return None
    spec = CATALOG.get(evaluator)
    if spec is None:
        guess = did_you_mean(evaluator, list(CATALOG)) or did_you_mean(f"builtin.{evaluator}", list(CATALOG))
        ctx.add(
            "unknown_evaluator", where, loc=loc, evaluator=evaluator, suggestion=_suggestion(guess, "known", CATALOG)
        )
    return spec


def _check_init(
    spec: EvaluatorSpec,
    init: dict[str, Any],
    where: str,
    loc: tuple[Any, ...],
    ctx: Context,
    environ: dict[str, str] | None,
) -> dict[str, Any]:
    """Unknown init params, values of the wrong catalog type, missing deployment.

    Returns the init with env vars expanded (a ``${VAR}`` alone converted to an int/float parameter's type, as the
    plan does); a value that failed is kept as None.
    """
    expanded: dict[str, Any] = {}
    for key, value in init.items():
        kloc, kwhere = (*loc, key), f"{where}.{key}"
        if key in spec.param_names:
            expanded[key] = _expand_param(spec, key, value, kwhere, kloc, ctx, environ)
        else:
            hint = _suggestion(did_you_mean(key, spec.param_names), "accepted", spec.param_names)
            ctx.add("unknown_init_param", kwhere, loc=kloc, key=key, evaluator=spec.name, suggestion=hint)
    if spec.needs_deployment:
        if "deployment_name" not in init:
            ctx.add("missing_deployment", f"{where}.deployment_name", loc=loc, evaluator=spec.name)
        else:
            dep = expanded.get("deployment_name")
            if dep is not None and (not isinstance(dep, str) or not dep.strip()):
                ctx.add("missing_deployment/empty", f"{where}.deployment_name", loc=(*loc, "deployment_name"))
    return expanded


def _expand_param(
    spec: EvaluatorSpec, key: str, value: Any, where: str, loc: tuple[Any, ...], ctx: Context, environ: Any
) -> Any:
    """One init value expanded as the plan does and checked against its catalog type; None if it failed."""
    ptype = spec.param(key).type
    try:
        out = expand_param(value, ptype, environ=environ, where=where)
    except MappingError as exc:
        rule = "bad_init_type/expanded" if isinstance(exc, ParamTypeError) else "env_not_set"
        ctx.add(rule, where, loc=loc, message=exc.message, hint=exc.hint)
        return None
    problem = param_type_problem(out, ptype)
    if problem is not None:
        ctx.add("bad_init_type", where, loc=loc, key=key, problem=problem[0], hint=problem[1])
        return None
    return out


class _Range(NamedTuple):
    """A criterion's label range and what it comes from (``source``, as the note about it says)."""

    label_min: int
    label_max: int
    source: str
    max_from: str


def _label_range(spec: EvaluatorSpec, init: dict[str, Any], labels: tuple[int, int, str] | None) -> _Range | None:
    """The (min, max) label range a criterion with a labels input validates against, and its source: each bound
    from the criterion's init, else the mapping's ``labels`` (``labels``: min, max and where they come from; None
    for hand-written criteria), else the evaluator's default.

    None if it has no labels input, or if a bound was rejected by ``_check_init`` (reported there as an error; kept
    as None): the range Foundry would use is then unknown, so labels are not range-checked against a guess.
    """
    if not any(i.type == "labels" for i in spec.inputs):
        return None
    init_name = "initialization_parameters" if labels is None else "init"
    bounds: list[int] = []
    sources: list[str] = []
    for i, name in enumerate(_LABEL_BOUNDS):
        if name in init:
            value, source = init[name], "init"
            if value is None:
                return None  # rejected and reported by _check_init
        elif labels is not None:
            value, source = labels[i], "mapping"
        else:
            value, source = (spec.param(name).default if name in spec.param_names else None), "default"
        if value is None:
            return None  # the evaluator has no such bound
        if not isinstance(value, int) or isinstance(value, bool):
            # _check_init rejects these; reaching here is a bug, never a silent skip
            raise TypeError(f"{name} {value!r} is not an integer")
        bounds.append(value)
        sources.append(source)
    source = _range_source(sources[0], sources[1], init_name, labels[2] if labels else "")
    max_from = "mapping" if sources[1] == "mapping" else init_name
    return _Range(bounds[0], bounds[1], source, max_from)


def _range_source(low: str, high: str, init_name: str, mapping_origin: str) -> str:
    """Where a range comes from, in words, given where each bound does (``init``, ``mapping``, ``default``)."""
    texts = {"init": f"from its {init_name}", "mapping": mapping_origin, "default": "the evaluator's default"}
    if low != high:
        return f"{_LABEL_BOUNDS[0]} {texts[low]}, {_LABEL_BOUNDS[1]} {texts[high]}"
    if low == "default":
        return f"{texts['default']} (no ground_truth_label_min/max in its {init_name})"
    return texts[low]


def _with_range(c: Criterion, rng: _Range | None, loc: tuple[Any, ...], ctx: Context) -> Criterion:
    """``c`` with its label range set, and the warnings a range alone gives (fidelity with labels ≥ 10)."""
    if rng is None:
        return c
    c.label_min, c.label_max, c.range_source, c.max_from = rng
    line = ctx.line_of(loc) or ctx.line_of(loc[:-1])
    bounds = {"label_min": c.label_min, "label_max": c.label_max}
    if c.label_max >= 10:
        ctx.add("label_max_fidelity", f"{c.where}.ground_truth_label_max", line=line, **bounds)
    if c.label_min >= c.label_max:
        ctx.add("bad_label_range", c.where, line=line, **bounds)
    return c


def _not_an_input(key: str, spec: EvaluatorSpec, where: str, loc: tuple[Any, ...], ctx: Context) -> None:
    guess = did_you_mean(key, spec.input_names)
    if guess is not None and guess.lower() == key.lower():
        ctx.add("input_wrong_case", where, loc=loc, key=key, guess=guess)
    else:
        suggestion = _suggestion(guess, "inputs", spec.input_names)
        ctx.add("unknown_input", where, loc=loc, key=key, evaluator=spec.name, suggestion=suggestion)


# -- criteria from a mapping --------------------------------------------------------------------------------------


def criteria_from_mapping(
    mapping: Mapping, file: str | None, report: ValidationReport, environ: dict[str, str] | None
) -> list[Criterion]:
    """The mapping's ``evaluators`` resolved and checked; problems go into ``report``."""
    ctx = Context(report, file, mapping_line_finder(file))
    produced = set(available_fields(mapping))
    if "labels" in mapping.model_fields_set:
        origin = "from the mapping's `labels`" + (f" ({file})" if file else "")
    else:
        origin = "the default (the mapping sets no `labels`)"
    labels = (mapping.labels.min, mapping.labels.max, origin)
    out: list[Criterion] = []
    names: set[str] = set()
    if not mapping.evaluators:
        ctx.add("no_evaluators", "evaluators", loc=("evaluators",))
    for i, entry in enumerate(mapping.evaluators):
        c = _mapping_entry(entry, i, produced, labels, ctx, environ)
        if c is None:
            continue
        if entry.name is not None and c.name in names:
            where = f"evaluators[{i}].name"
            ctx.add("duplicate_criterion_name/mapping", where, loc=("evaluators", i, "name"), name=c.name)
        names.add(c.name)
        out.append(c)
    return out


def _mapping_entry(
    entry: EvaluatorEntry,
    i: int,
    produced: set[str],
    labels: tuple[int, int, str],
    ctx: Context,
    environ: dict[str, str] | None,
) -> Criterion | None:
    where, loc = f"evaluators[{i}]", ("evaluators", i)
    spec = _check_spec(entry.evaluator, f"{where}.evaluator", (*loc, "evaluator"), ctx)
    if spec is None:
        return None
    init = _check_init(spec, entry.init, f"{where}.init", (*loc, "init"), ctx, environ)
    fields: dict[str, str] = {}
    for key, target in entry.inputs.items():
        if key in spec.input_names:
            fields[key] = target
        else:
            _not_an_input(key, spec, f"{where}.inputs.{key}", (*loc, "inputs", key), ctx)
    for inp in spec.input_names:
        if inp not in fields and (inp in spec.required_inputs or inp in produced):
            fields[inp] = inp
    c = Criterion(entry.name or spec.short_name, spec, fields, where=f"{where}.init")
    return _with_range(c, _label_range(spec, init, labels), (*loc, "init"), ctx)


# -- hand-written criteria ----------------------------------------------------------------------------------------


def validate_criteria_file(path: str | os.PathLike[str], report: ValidationReport) -> list[Criterion]:
    """Parse and check a JSON file of testing_criteria (or an eval-create body); problems go into ``report``."""
    file = str(path)
    ctx = Context(report, file)
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        ctx.add("missing_file/criteria")
        return []
    data = decode_document(raw)
    if isinstance(data, JsonLimitError):
        if data.code == "bad_json":
            ctx.add("bad_json/criteria", reason=data.reason)
        else:  # not UTF-8 at its line (and the offset in that line); the other limits for the whole file
            ctx.add(data.code, line=data.line, message=data.message, hint=data.hint)
        return []
    if duplicate_keys(raw, data):
        _duplicate_key_lines(raw.decode("utf-8"), ctx)
    return criteria_from_wire(data, file, report)


def _duplicate_key_lines(text: str, ctx: Context) -> None:
    """``duplicate_key/criteria`` for every key written twice in one object, with both lines (the JSON composed as
    YAML, whose nodes know their lines)."""
    from .._yaml import compose_bounded

    found: list[tuple[str, int, int]] = []
    try:
        compose_bounded(text, file=ctx.file, duplicate_keys=found)
    except InputError:  # pragma: no cover - JSON that is not YAML: orjson keeps the last value, unreported
        return
    for key, first, second in found:
        ctx.add("duplicate_key/criteria", key, line=second, key=key, first=first, second=second)


def criteria_from_wire(criteria: Any, file: str | None, report: ValidationReport) -> list[Criterion]:
    """Hand-written ``testing_criteria`` (a list, or a whole eval-create body)."""
    ctx = Context(report, file, mapping_line_finder(file))
    prefix: tuple[Any, ...] = ()
    if isinstance(criteria, dict) and "testing_criteria" in criteria:
        criteria, prefix = criteria["testing_criteria"], ("testing_criteria",)
    if not isinstance(criteria, list):
        ctx.add("bad_criteria_file")
        return []
    out: list[Criterion] = []
    names: set[str] = set()
    for i, crit in enumerate(criteria):
        c = _wire_criterion(crit, i, (*prefix, i), names, ctx)
        if c is not None:
            out.append(c)
    return out


def _wire_criterion(crit: Any, i: int, loc: tuple[Any, ...], names: set[str], ctx: Context) -> Criterion | None:
    where = f"testing_criteria[{i}]"
    if not isinstance(crit, dict):
        ctx.add("bad_criterion", where, loc=loc)
        return None
    if crit.get("type") != "azure_ai_evaluator":
        ctx.add("not_checked", f"{where}.type", loc=(*loc, "type"), type=crit.get("type"))
        return None
    name = _wire_name(crit.get("name"), i, where, loc, names, ctx)
    spec = _check_spec(crit.get("evaluator_name"), f"{where}.evaluator_name", (*loc, "evaluator_name"), ctx)
    if spec is None:
        return None
    pinned = crit.get("evaluator_version")
    if pinned not in (None, "", "latest") and str(pinned) != spec.version:
        vloc = (*loc, "evaluator_version")
        ctx.add(
            "evaluator_version",
            f"{where}.evaluator_version",
            loc=vloc,
            evaluator=spec.name,
            version=pinned,
            current=spec.version,
        )
    init_where, init_loc = f"{where}.initialization_parameters", (*loc, "initialization_parameters")
    init = crit.get("initialization_parameters") or {}
    if not isinstance(init, dict):
        ctx.add("bad_init", init_where, loc=init_loc)
        init = {}
    init = _check_init(spec, init, init_where, init_loc, ctx, None)
    fields = _wire_data_mapping(crit.get("data_mapping"), spec, where, loc, ctx)
    return _with_range(Criterion(name, spec, fields, where=init_where), _label_range(spec, init, None), init_loc, ctx)


def _wire_name(name: Any, i: int, where: str, loc: tuple[Any, ...], names: set[str], ctx: Context) -> str:
    if not isinstance(name, str) or not name:
        ctx.add("missing_name", f"{where}.name", loc=loc)
        name = f"#{i}"
    elif name in names:
        ctx.add("duplicate_criterion_name", f"{where}.name", loc=(*loc, "name"), name=name)
    names.add(name)
    return name


def _wire_data_mapping(dm: Any, spec: EvaluatorSpec, where: str, loc: tuple[Any, ...], ctx: Context) -> dict[str, str]:
    """Input → item field of a ``data_mapping``: unknown inputs, bad templates, required inputs not mapped."""
    if not isinstance(dm, dict):
        ctx.add("missing_data_mapping", f"{where}.data_mapping", loc=loc)
        dm = {}
    fields: dict[str, str] = {}
    for key, template in dm.items():
        kloc, kwhere = (*loc, "data_mapping", key), f"{where}.data_mapping.{key}"
        if key not in spec.input_names:
            _not_an_input(key, spec, kwhere, kloc, ctx)
            continue
        m = _TEMPLATE.match(template) if isinstance(template, str) else None
        if m is None:
            ctx.add("bad_template", kwhere, loc=kloc, template=template, key=key)
        elif m.group(1) == "sample":
            ctx.add("sample_template", kwhere, loc=kloc, template=template, key=key)
        else:
            fields[key] = m.group(2)
    mapped = set(fields) | {k for k in dm if k in spec.input_names}  # a bad template is reported already
    if dm and not any(all(g in mapped for g in group) for group in spec.input_groups):
        best = min(spec.input_groups, key=lambda g: sum(x not in mapped for x in g))
        missing = [x for x in best if x not in mapped]
        pairs = ", ".join(f'"{x}": "{{{{item.{x}}}}}"' for x in missing)
        where_dm = f"{where}.data_mapping"
        ctx.add(
            "missing_input_mapping",
            where_dm,
            loc=(*loc, "data_mapping"),
            evaluator=spec.name,
            missing=", ".join(missing),
            pairs=pairs,
        )
    return fields
