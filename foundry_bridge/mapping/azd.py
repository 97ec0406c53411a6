"""The Azure Developer CLI's eval file (``evals/azure.eval.yaml``, read by ``azd ai eval`` of the
``azure.ai.evaluations`` extension): written from a plan, and read as a mapping source.

The format is the extension's configuration types (``EvalConfig``, ``DatasetDecl``, ``Eval``, ``EvaluatorRef``;
decoded strictly). Written: one dataset (the plan's items) and one eval whose evaluators are the plan's criteria
with explicit ``data_mapping``s; the mapping's ``labels`` and ``metrics``, which azd has no key for, ride in one
comment line ``# foundry-bridge: {...}``. Read: the file's one eval, its builtin evaluators becoming
the mapping's ``evaluators``. A custom rubric, a ``{{sample.*}}`` binding or an unpublished version is refused,
located at its line; later problems are located at the azd key they came from (``azd_line_finder``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .._text import did_you_mean
from ..catalog import CATALOG
from ..errors import MappingError
from ._lines import LineOf, dotted, key_line

__all__ = [
    "AZD_KEYS",
    "SETTINGS_PREFIX",
    "azd_eval_file",
    "azd_line_finder",
    "is_azd_config",
    "is_azd_node",
    "mapping_data_from_azd",
]

AZD_KEYS: dict[str, tuple[str, ...]] = {  # the extension's YAML keys, per level
    "": ("datasets", "evaluators", "evals"),
    "datasets[]": ("name", "file", "version"),
    "evaluators[]": ("$ref", "name", "source", "version", "definition"),
    "evals[]": (
        "name",
        "id",
        "description",
        "dataset",
        "source",
        "evaluation_level",
        "max_samples",
        "evaluators",
        "target",
    ),
    "evals[].evaluators[]": ("evaluator", "name", "version", "initialization_parameters", "data_mapping"),
}
_ITEM = re.compile(r"^\{\{\s*item\.([A-Za-z_][\w.]*)\s*\}\}$")
_CANONICAL = ("query_id", "query", "kind", "context", "response", "ground_truth")
_DOC_LISTS = ("retrieved_documents", "retrieval_ground_truth")
_SAFE_NAME = re.compile(r"[^A-Za-z0-9_-]+")


SETTINGS_PREFIX = "# foundry-bridge:"  # the comment line holding the mapping sections azd has no key for
_SETTINGS_KEYS = ("labels", "metrics")
_AZD_KEY_OF = {"init": "initialization_parameters", "inputs": "data_mapping"}  # mapping key → azd key, per evaluator


def _is_azd(keys: set[str], evals_is_list: bool) -> bool:
    return evals_is_list and keys <= set(AZD_KEYS[""])


def is_azd_config(data: dict[str, Any]) -> bool:
    """A parsed YAML file in azd's eval format: an ``evals`` list and only azd's top-level keys."""
    return _is_azd(set(data), isinstance(data.get("evals"), list))


def is_azd_node(node: Any) -> bool:
    """``is_azd_config`` for a composed YAML node tree."""
    import yaml

    if not isinstance(node, yaml.MappingNode):
        return False
    keys = {k.value: v for k, v in node.value if isinstance(k, yaml.ScalarNode)}
    return _is_azd(set(keys), isinstance(keys.get("evals"), yaml.SequenceNode))


def _azd_rows(plan: Any) -> Iterator[dict[str, Any]]:
    """The plan's items, each with its record's declared ``kind`` and its ``ground_truth`` when the item lacks them
    (a kind derived from the labels is left out: it is derived again, the same way, when the file is read)."""
    for wrapped, record in zip(plan.items, plan.records, strict=True):
        row = dict(wrapped["item"])
        if record.get("kind_source") == "declared":
            row.setdefault("kind", record["kind"])
        if record.get("ground_truth") is not None:
            row.setdefault("ground_truth", record["ground_truth"])
        yield row


def _settings_line(plan: Any) -> str:
    """``# foundry-bridge: {labels: {...}, metrics: {...}}``: one line of flow YAML."""
    import yaml

    settings = {
        "labels": plan.mapping.labels.model_dump(mode="json"),
        "metrics": plan.mapping.metrics.model_dump(mode="json", exclude_none=True),
    }
    flow = yaml.safe_dump(settings, default_flow_style=True, width=float("inf"), sort_keys=False, allow_unicode=True)
    return f"{SETTINGS_PREFIX} {flow.strip()}\n"


def azd_eval_file(plan: Any, out: Path) -> tuple[Path, Path]:
    """Write ``out/evals/azure.eval.yaml`` and its dataset ``out/evals/datasets/<name>.jsonl`` (the plan's items);
    returns both paths. The eval's evaluators are the plan's criteria, each with its explicit data mapping."""
    import yaml

    from .._io import atomic_open, write_jsonl

    name = _SAFE_NAME.sub("-", plan.name).strip("-") or "foundry-bridge"
    evals_dir = out / "evals"
    dataset = evals_dir / "datasets" / f"{name}.jsonl"
    write_jsonl(dataset, _azd_rows(plan))
    evaluators = []
    for crit in plan.criteria:
        ref: dict[str, Any] = {"evaluator": crit.evaluator, "name": crit.name}
        if crit.init:
            ref["initialization_parameters"] = dict(crit.init)
        ref["data_mapping"] = dict(crit.data_mapping)
        evaluators.append(ref)
    config = {
        "datasets": [{"name": name, "file": f"./datasets/{dataset.name}"}],
        "evals": [{"name": name, "dataset": name, "evaluation_level": "turn", "evaluators": evaluators}],
    }
    header = (
        "# written by `foundry-bridge plan --format azd`: the same criteria as the plan, for `azd ai eval`.\n"
        "# azure.yaml: services: {evals: {host: azure.ai.eval, uses: [<your ai project service>],\n"
        "#                                $ref: ./evals/azure.eval.yaml}}\n"
        "# the mapping's label range and local-metric settings, read back by `--mapping` (azd ignores comments):\n"
        + _settings_line(plan)
    )
    path = evals_dir / "azure.eval.yaml"
    with atomic_open(path) as fh:
        fh.write((header + yaml.safe_dump(config, sort_keys=False, allow_unicode=True)).encode("utf-8"))
    return path, dataset


def mapping_data_from_azd(
    data: dict[str, Any], *, file: str | None, node: Any, text: str
) -> tuple[dict[str, Any], LineOf]:
    """The mapping (as a dict for ``mapping_from_dict``) of the one eval of an azd eval file (``data``, its YAML
    ``node`` tree, its ``text`` for the settings comment), and the line finder of that mapping's key paths in the
    file (``azd_line_finder``). ``MappingError`` (file, line, field) for what cannot be read offline."""

    def fail(message: str, loc: tuple[Any, ...], hint: str | None = None) -> MappingError:
        return MappingError(message, file=file, line=key_line(node, loc), field=dotted(loc) or None, hint=hint)

    _check_keys(data, "", (), fail)
    evals = data["evals"]
    if len(evals) != 1:
        raise fail(f"the file declares {len(evals)} evals", ("evals",), "keep one eval per file read by foundry-bridge")
    entry = evals[0]
    if not isinstance(entry, dict):
        raise fail("an eval is a mapping", ("evals", 0))
    _check_keys(entry, "evals[]", ("evals", 0), fail)
    refs = entry.get("evaluators")
    if not isinstance(refs, list) or not refs:
        raise fail("an eval needs at least one evaluator", ("evals", 0, "evaluators"))
    evaluators: list[dict[str, Any]] = []
    extra: dict[str, str] = {}
    for j, ref in enumerate(refs):
        loc = ("evals", 0, "evaluators", j)
        if not isinstance(ref, dict):
            raise fail("an evaluator entry is a mapping with `evaluator:`", loc)
        _check_keys(ref, "evals[].evaluators[]", loc, fail)
        evaluators.append(_evaluator(ref, loc, fail, extra))
    description = entry.get("description") or f"azd eval {entry.get('name')!r}"
    settings, _ = _read_settings(text, file)
    # the azd dataset holds only the columns its evaluators bind: a document list no evaluator binds is not read
    # (an evaluator without data_mapping reads its inputs under their own names)
    bound = {
        column
        for ev in evaluators
        for column in ev.get("inputs") or {i.name: i.name for i in CATALOG[ev["evaluator"]].inputs}.values()
    }
    fields: dict[str, Any] = {name: None for name in _DOC_LISTS if name not in bound}
    mapping = {
        "description": str(description),
        "dataset": {"fields": {**fields, "extra": extra}},
        "evaluators": evaluators,
    }
    return {**mapping, **settings}, azd_line_finder(node, text, file=file)


def azd_line_finder(node: Any, text: str, *, file: str | None) -> LineOf:
    """The line in an azd eval file of a key path of the mapping read from its one eval:
    ``evaluators[j].init.x`` is ``evals[0].evaluators[j].initialization_parameters.x``, ``inputs`` is
    ``data_mapping``; ``labels``/``metrics`` are the settings comment's line; anything else is the eval's line."""
    try:
        settings_line = _read_settings(text, file)[1]
    except MappingError:  # reported when the file was loaded; a line here is a nicety
        settings_line = None

    def line_of(loc: tuple[Any, ...]) -> int | None:
        if loc[:1] and loc[0] in _SETTINGS_KEYS and settings_line is not None:
            return settings_line
        if loc[:1] != ("evaluators",):
            return key_line(node, ("evals", 0))
        ref = list(loc[1:])
        if len(ref) >= 2:
            ref[1] = _AZD_KEY_OF.get(str(ref[1]), ref[1])
        return key_line(node, ("evals", 0, "evaluators", *ref))

    return line_of


def _read_settings(text: str, file: str | None) -> tuple[dict[str, Any], int | None]:
    """The ``labels``/``metrics`` of the file's settings comment (``SETTINGS_PREFIX``) and its line; ({}, None)
    without one. ``MappingError`` at that line for text that is not a flow mapping of those keys, or a second
    such line."""
    from .._yaml import load_bounded

    found: tuple[dict[str, Any], int] | None = None
    for number, row in enumerate(text.splitlines(), 1):
        if not row.startswith(SETTINGS_PREFIX):
            continue
        if found is not None:
            raise MappingError(
                f"a second `{SETTINGS_PREFIX}` line (the first is line {found[1]})", file=file, line=number
            )
        try:
            value, _ = load_bounded(row[len(SETTINGS_PREFIX) :], file=file)
        except MappingError as exc:
            raise MappingError(exc.message, file=file, line=number, hint=exc.hint) from None
        if not isinstance(value, dict):
            raise MappingError(
                "the settings comment holds a mapping", file=file, line=number, hint="{labels: {...}, metrics: {...}}"
            )
        for key in value:
            if key not in _SETTINGS_KEYS:
                guess = did_you_mean(str(key), list(_SETTINGS_KEYS))
                hint = f"did you mean {guess!r}?" if guess else f"it holds {' and '.join(_SETTINGS_KEYS)}"
                raise MappingError(f"unknown key {key!r}", file=file, line=number, field=str(key), hint=hint)
        found = value, number
    return found if found is not None else ({}, None)


def _check_keys(obj: dict[str, Any], level: str, loc: tuple[Any, ...], fail: Any) -> None:
    known = AZD_KEYS[level]
    for key in obj:
        if key not in known:
            guess = did_you_mean(str(key), list(known))
            hint = f"did you mean {guess!r}?" if guess else f"azd ai eval knows: {', '.join(known)}"
            raise fail(f"unknown key {key!r} (azd ai eval decodes strictly)", (*loc, key), hint)


def _evaluator(ref: dict[str, Any], loc: tuple[Any, ...], fail: Any, extra: dict[str, str]) -> dict[str, Any]:
    """One ``EvaluatorRef`` as a mapping ``evaluators`` entry; item columns beyond the canonical ones → ``extra``."""
    name = ref.get("evaluator")
    spec = CATALOG.get(name) if isinstance(name, str) else None
    if spec is None:
        hint = "foundry-bridge runs Foundry's builtin evaluators; a custom rubric runs through azd only"
        if isinstance(name, str) and name.startswith("builtin."):
            guess = did_you_mean(name, list(CATALOG))
            hint = f"did you mean {guess!r}?" if guess else "see `foundry-bridge catalog`"
        raise fail(f"evaluator {name!r} is not a builtin foundry-bridge knows", (*loc, "evaluator"), hint)
    version = ref.get("version")
    if version is not None and str(version) != spec.version:
        raise fail(
            f"pins version {version!r}; foundry-bridge evaluates {spec.name} version {spec.version}",
            (*loc, "version"),
            f"remove the pin or set it to {spec.version!r}",
        )
    out: dict[str, Any] = {"evaluator": spec.name}
    if ref.get("name"):
        out["name"] = str(ref["name"])
    init = ref.get("initialization_parameters") or {}
    if not isinstance(init, dict):
        raise fail("initialization_parameters is a mapping", (*loc, "initialization_parameters"))
    if init:
        out["init"] = dict(init)
    mapping = ref.get("data_mapping") or {}
    if not isinstance(mapping, dict):
        raise fail("data_mapping is a mapping of input → template", (*loc, "data_mapping"))
    inputs = {}
    for inp, template in mapping.items():
        found = _ITEM.match(template) if isinstance(template, str) else None
        if found is None:
            raise fail(
                f"{template!r} is not a dataset column binding",
                (*loc, "data_mapping", inp),
                'foundry-bridge evaluates saved rows: bind each input to "{{item.<column>}}"',
            )
        column = found.group(1)
        inputs[str(inp)] = column
        if column not in _CANONICAL and column not in _DOC_LISTS:
            extra[column] = column
    if inputs:
        out["inputs"] = inputs
    return out
