"""Evals: create (checking testing criteria as the service does), get, update, list, delete."""

from __future__ import annotations

import difflib
import uuid
from typing import Any

import httpx

from ._common import MOCK_USER, EmulatorBase, _bad, _json_response
from ._evaluators import Served, served, unserved_reason
from ._graders import check_grader
from ._scoring import template_fields

__all__ = ["EvalRoutes"]


_SAMPLE_SCHEMA = {"type": "object", "properties": {"output_text": {"type": "string"}}}


class EvalRoutes(EmulatorBase):
    """Evals: create (checking testing criteria as the service does), get, update, list, delete."""

    def _resolve_evaluator(self, where: str, evaluator_name: str) -> Served:
        """The served builtin called ``evaluator_name``; 400 for an OpenAI grader, an unknown builtin (with the
        closest published name) or a custom evaluator name."""
        found = served(evaluator_name)
        if found is not None:
            return found
        if evaluator_name.startswith("builtin."):
            raise _bad(f"{where}: {unserved_reason(evaluator_name)}", f"{where}.evaluator_name")
        raise _bad(
            f"{where}: unknown evaluator '{evaluator_name}': not a builtin evaluator, and this project has no "
            "custom evaluator of that name (the builtins are named 'builtin.<name>': GET /evaluators)",
            f"{where}.evaluator_name",
        )

    def _check_criterion(self, i: int, crit: Any, properties: dict[str, Any] | None, seen: set[str]) -> dict[str, Any]:
        where = f"testing_criteria[{i}]"
        if not isinstance(crit, dict):
            raise _bad(f"{where} must be an object.", where)
        ctype = crit.get("type")
        if ctype != "azure_ai_evaluator":
            raise _bad(
                f"{where}.type {ctype!r} is not supported by the emulator (only 'azure_ai_evaluator').",
                f"{where}.type",
            )
        name = crit.get("name")
        if not isinstance(name, str) or not name:
            raise _bad(f"{where}.name is required (a non-empty string).", f"{where}.name")
        if name in seen:
            raise _bad(f"{where}: duplicate testing criterion name '{name}'.", f"{where}.name")
        seen.add(name)
        evaluator_name = crit.get("evaluator_name")
        if not isinstance(evaluator_name, str) or not evaluator_name:
            raise _bad(f"{where} ({name}): evaluator_name is required.", f"{where}.evaluator_name")
        where = f"{where} ({name})"
        spec = self._resolve_evaluator(where, evaluator_name)
        mapping = crit.get("data_mapping")
        if mapping is not None and (
            not isinstance(mapping, dict) or not all(isinstance(v, str) for v in mapping.values())
        ):
            raise _bad(f"{where}: data_mapping must be an object of template strings.", "data_mapping")
        init = crit.get("initialization_parameters")
        if init is not None and not isinstance(init, dict):
            raise _bad(f"{where}: initialization_parameters must be an object.", "initialization_parameters")
        init = init or {}
        _check_init(where, spec, init)
        problem = check_grader(spec.primary.name, init) if spec.kind == "grader" else None
        if problem is not None:
            raise _bad(f"{where}: initialization_parameters: {problem} ({spec.name}).", "initialization_parameters")
        if self.strict_evaluators and mapping:  # the service itself accepts these (recorded)
            _check_inputs(where, spec, mapping)
            _check_templates(where, mapping, properties)
        out: dict[str, Any] = {
            "type": ctype,
            "id": f"{name}_{uuid.uuid4()}",
            "name": name,
            "evaluator_name": evaluator_name,
            "evaluator_version": crit.get("evaluator_version") or "",
        }
        if "initialization_parameters" in crit:
            out["initialization_parameters"] = crit["initialization_parameters"]
        if mapping is not None:  # without one, the service maps the item's fields by name
            out["data_mapping"] = mapping
        return out

    def _create_eval(self, request: httpx.Request, v1: str | None = None, **_: Any) -> httpx.Response:
        self._check_api_version(request, v1)
        body = self._object_body(request)
        dsc = body.get("data_source_config")
        if not isinstance(dsc, dict):
            raise _bad("data_source_config is required (an object).", "data_source_config")
        properties: dict[str, Any] | None = None
        if dsc.get("type") == "custom":
            schema = dsc.get("item_schema")
            if not isinstance(schema, dict):
                raise _bad("data_source_config.item_schema is required for type 'custom'.", "item_schema")
            include = bool(dsc.get("include_sample_schema", False))
            stored_schema: dict[str, Any] = {"item": schema}
            if include:
                stored_schema["sample"] = _SAMPLE_SCHEMA
            stored_dsc: dict[str, Any] = {
                "type": "custom",
                "item_schema": {},
                "include_sample_schema": include,
                "schema": stored_schema,
            }
            if isinstance(schema.get("properties"), dict):
                properties = schema["properties"]
        elif dsc.get("type") == "azure_ai_source":
            stored_dsc = dict(dsc)
        else:
            raise _bad(
                f"data_source_config.type {dsc.get('type')!r} is not supported (use 'custom' or 'azure_ai_source').",
                "data_source_config.type",
            )
        criteria = body.get("testing_criteria")
        if not isinstance(criteria, list) or not criteria:
            raise _bad("testing_criteria is required (a non-empty array).", "testing_criteria")
        seen: set[str] = set()
        stored_criteria = [self._check_criterion(i, c, properties, seen) for i, c in enumerate(criteria)]
        metadata = body.get("metadata")
        if metadata is not None and not isinstance(metadata, dict):
            raise _bad("metadata must be an object of strings.", "metadata")
        now = self._now()
        eval_id = f"eval_{uuid.uuid4().hex}"
        ev = {
            "object": "eval",
            "created_at": now,
            "modified_at": now,
            "created_by": MOCK_USER,
            "id": eval_id,
            "name": body.get("name") or "",
            "metadata": metadata or {},
            "properties": {"evals_run_type": "azure_ai"},
            "data_source_config": stored_dsc,
            "testing_criteria": stored_criteria,
        }
        self.store.evals[eval_id] = ev
        return _json_response(201, ev)

    def _get_eval(self, request: httpx.Request, eval_id: str, v1: str | None = None, **_: Any) -> httpx.Response:
        self._check_api_version(request, v1)
        return _json_response(200, self._eval(eval_id))

    def _update_eval(self, request: httpx.Request, eval_id: str, v1: str | None = None, **_: Any) -> httpx.Response:
        self._check_api_version(request, v1)
        ev = self._eval(eval_id)
        body = self._object_body(request)
        if "name" in body:
            if not isinstance(body["name"], str):
                raise _bad("name must be a string.", "name")
            ev["name"] = body["name"]
        if "metadata" in body:
            if not isinstance(body["metadata"], dict):
                raise _bad("metadata must be an object of strings.", "metadata")
            ev["metadata"] = body["metadata"]
        ev["modified_at"] = self._now()
        return _json_response(200, ev)

    def _list_evals(self, request: httpx.Request, v1: str | None = None, **_: Any) -> httpx.Response:
        self._check_api_version(request, v1)
        order_by = request.url.params.get("order_by", "created_at")
        if order_by not in ("created_at", "updated_at"):
            raise _bad(f"order_by must be 'created_at' or 'updated_at', got {order_by!r}", "order_by")
        key = "created_at" if order_by == "created_at" else "modified_at"
        evals = sorted(self.store.evals.values(), key=lambda e: e[key])  # stable: insertion order breaks ties
        return _json_response(200, self._page(request, evals))

    def _delete_eval(self, request: httpx.Request, eval_id: str, v1: str | None = None, **_: Any) -> httpx.Response:
        legacy = self._check_api_version(request, v1)
        self._eval(eval_id)
        del self.store.evals[eval_id]
        for run_id in [r for r, st in self.store.run_state.items() if st.eval_id == eval_id]:
            self._forget_run(run_id)
        if legacy:  # recorded: 202 and an azureml location on the preview route
            location = f"https://mock.api.azureml.ms/openai/evals/{eval_id}"
            status = 202
        else:
            location = f"{request.url.scheme}://{request.url.netloc.decode()}{request.url.path}/{eval_id}"
            status = 200
        # ``deleted: false`` on success is what the service answers (recorded).
        body = {"object": "eval.deleted", "deleted": False, "eval_id": eval_id, "run_id": None, "location": location}
        return _json_response(status, body)


def _check_inputs(where: str, item: Served, mapping: dict[str, Any]) -> None:
    """(strict mode) The data mapping names every input of one of the contract's input groups."""
    groups = item.contract.input_groups
    if groups and not any(set(group) <= set(mapping) for group in groups):
        needs = " or ".join("(" + ", ".join(g) + ")" for g in groups)
        missing = min((sorted(set(g) - set(mapping)) for g in groups), key=lambda m: len(m))
        raise _bad(
            f"{where}: data_mapping is missing required input(s) {', '.join(map(repr, missing))} "
            f"for {item.name}, which needs {needs}.",
            "data_mapping",
        )


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "number": (int, float),
    "integer": (int,),
    "string": (str,),
    "array": (list,),
    "object": (dict,),
    "boolean": (bool,),
}


def _check_init(where: str, item: Served, init: dict[str, Any]) -> None:
    """A judge names its deployment (``model`` is the recorded alternative spelling), every other required init
    parameter is given, and each has its published JSON type and, for an enumeration, one of its values."""
    if item.needs_deployment and not (init.get("deployment_name") or init.get("model")):
        raise _bad(
            f"{where}: initialization_parameters.deployment_name is required for {item.name} "
            "(the judge model deployment).",
            "initialization_parameters.deployment_name",
        )
    for name in item.contract.required_init:
        if name != "deployment_name" and init.get(name) is None:
            raise _bad(
                f"{where}: initialization_parameters.{name} is required for {item.name} (published contract).",
                f"initialization_parameters.{name}",
            )
    for name, schema in item.contract.init_params.items():
        value = init.get(name)
        if value is None or not isinstance(schema, dict):
            continue
        types = _JSON_TYPES.get(str(schema.get("type")))
        wrong_bool = isinstance(value, bool) and schema.get("type") != "boolean"
        if types is not None and (wrong_bool or not isinstance(value, types)):
            raise _bad(
                f"{where}: initialization_parameters.{name} must be of type {schema['type']}, got {value!r}.",
                f"initialization_parameters.{name}",
            )
        if "enum" in schema and value not in schema["enum"]:
            raise _bad(
                f"{where}: initialization_parameters.{name} must be one of {', '.join(map(repr, schema['enum']))}, "
                f"got {value!r}.",
                f"initialization_parameters.{name}",
            )


def _check_templates(where: str, mapping: dict[str, Any], properties: dict[str, Any] | None) -> None:
    """Every ``{{item.x}}`` of the data mapping names a property of the eval's item schema."""
    for key, template in mapping.items():
        for source, path in template_fields(template):
            top = path.split(".", 1)[0]
            if source == "item" and properties is not None and top not in properties:
                guess = difflib.get_close_matches(top, list(properties), n=1)
                hint = f"; did you mean '{guess[0]}'?" if guess else f"; known fields: {', '.join(properties)}"
                raise _bad(
                    f"{where}: data_mapping.{key} uses '{{{{item.{path}}}}}' but '{top}' is not a property "
                    f"of data_source_config.item_schema{hint}",
                    f"data_mapping.{key}",
                )
