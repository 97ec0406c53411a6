"""A stateful emulation of Foundry's evaluation API: plain request → response handlers over an in-memory store.

Routes are matched on the path after ``/api/projects/<project>`` on any host, under both ``/openai/v1/...`` and
the older ``/openai/...?api-version=...``; the dataset upload flow (``startPendingUpload``, blob PUT, PATCH
version) stores bytes so a run can read ``{"type": "file_id", "id": "azureai://.../data/<name>/versions/<v>"}``.
The wire format follows ``shared/reference/foundry-evals-api.md`` and the recorded exchanges; see
``docs/mock.md`` for every choice made where the service's behaviour was not observed.
"""

from __future__ import annotations

import base64
import dataclasses
import difflib
import hashlib
import logging
import re
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from email.utils import formatdate
from typing import Any, Literal
from urllib.parse import urlsplit

import httpx
import respx

from .._io import dumps, loads
from ..catalog import CATALOG, EvaluatorSpec
from ..errors import redact
from ._faults import FaultConfig, FaultInjector
from ._scoring import (
    DocretShape,
    RowScore,
    Verdict,
    errored_results,
    render_mapping,
    result_metrics,
    score_row,
    tally,
    template_fields,
)

__all__ = ["PROJECT_ENDPOINT", "FoundryEmulator", "Store"]

log = logging.getLogger("foundry_bridge.mock")

PROJECT_ENDPOINT = "https://mock.services.ai.azure.com/api/projects/mock-project"
MOCK_USER = "mock-user"
_PREFIX = r"^/api/projects/(?P<project>[^/]+)"
_OPENAI = r"/openai(?P<v1>/v1)?"
_BLOB_HOST = r"\.blob\.core\.windows\.net$"
_BLOB_PATH = "/_blob/"
_SAMPLE_SCHEMA = {"type": "object", "properties": {"output_text": {"type": "string"}}}
_EMPTY_ITEM_SAMPLE: dict[str, Any] = {
    "error": None,
    "finish_reason": "",
    "input": [],
    "max_completion_tokens": None,
    "model": "",
    "output": [],
    "seed": None,
    "temperature": None,
    "top_p": None,
    "usage": None,
}
_RUN_STATUSES = ("queued", "in_progress", "completed", "canceled", "failed")
_DATASET_ID = re.compile(r"/data/(?P<name>[^/]+)/versions/(?P<version>[^/?#]+)$")
_SUPPORTED_DATA_SOURCES = ("jsonl", "azure_ai_target_completions")


class _HttpError(Exception):
    """Raised inside a handler to answer with an Azure error envelope."""

    def __init__(self, status: int, code: str, message: str, *, target: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.target = target


def _bad(message: str, target: str | None = None) -> _HttpError:
    return _HttpError(400, "UserError", message, target=target)


def _not_found(what: str, ident: str) -> _HttpError:
    return _HttpError(404, "NotFound", f"{what} with id '{ident}' was not found.")


@dataclass
class _RunState:
    """Bookkeeping of one run that is not part of its wire form."""

    eval_id: str
    index: int
    rows: list[dict[str, Any]]
    samples: list[dict[str, Any] | None]
    created: float
    legacy: bool
    will_fail: bool
    errored_rows: set[int]
    datasource_items: list[dict[str, Any]]
    account: str = "mock-account"
    project: str = "mock-project"
    polls: int = 0
    passed_rows: list[bool] = field(default_factory=list)  # per output item, once finished


@dataclass
class Store:
    """Everything the emulator holds; inspect it in tests (all values are the wire objects as served)."""

    evals: dict[str, dict[str, Any]] = field(default_factory=dict)
    runs: dict[str, dict[str, Any]] = field(default_factory=dict)
    output_items: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # run id → items, once done
    datasets: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)  # (name, version) → version
    blobs: dict[str, bytes] = field(default_factory=dict)  # "container/path" → bytes
    run_state: dict[str, _RunState] = field(default_factory=dict)


def _json_response(status: int, body: Any, headers: dict[str, str] | None = None) -> httpx.Response:
    base = {
        "content-type": "application/json; charset=utf-8",
        "apim-request-id": str(uuid.uuid4()),
        "x-ms-region": "mock",
    }
    return httpx.Response(status, content=dumps(body), headers={**base, **(headers or {})})


def _error_response(exc: _HttpError, headers: dict[str, str] | None = None) -> httpx.Response:
    error: dict[str, Any] = {"code": exc.code, "message": exc.message}
    if exc.target:
        error["target"] = exc.target
    return _json_response(exc.status, {"error": error}, headers)


def _account(request: httpx.Request) -> str:
    host = request.url.host
    if host.endswith(".services.ai.azure.com"):
        return host.split(".", 1)[0]
    return "mock-account"


def _blob_key(url: str) -> str | None:
    """``https://<sa>.blob.core.windows.net/<container>/<path>`` or ``<origin>/_blob/<container>/<path>`` → key."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if re.search(_BLOB_HOST, host):
        return parts.path.lstrip("/") or None
    if parts.path.startswith(_BLOB_PATH):
        return parts.path[len(_BLOB_PATH) :] or None
    return None


class FoundryEmulator:
    """Foundry's evaluation API in memory, served in-process (``transport()``) or on loopback (``serve``).

    ``polls_to_complete``: a run answers ``in_progress`` to its first N GETs and has finished on GET N+1
    (N=0: the first GET sees it finished); ``seconds_to_complete`` additionally requires that much time since
    creation. ``docret_shape`` picks the document-retrieval result shape: ``"single"`` (one result with
    ``properties``, azure-ai-evaluation ≥ 1.17) or ``"per_metric"`` (one result per metric, the docs' shape).
    ``strict_evaluators`` rejects ``builtin.*`` evaluators absent from the catalog (by default they are accepted
    and scored by a generic stand-in, as the service accepts them).
    """

    def __init__(
        self,
        *,
        polls_to_complete: int = 2,
        seconds_to_complete: float = 0.0,
        faults: FaultConfig | None = None,
        docret_shape: DocretShape = "single",
        strict_evaluators: bool = False,
        clock: Callable[[], float] = time.time,
        record_calls: bool = True,
    ) -> None:
        if polls_to_complete < 0 or seconds_to_complete < 0:
            raise ValueError("polls_to_complete and seconds_to_complete must be >= 0")
        if docret_shape not in ("single", "per_metric"):
            raise ValueError(f"docret_shape must be 'single' or 'per_metric', got {docret_shape!r}")
        self.polls_to_complete = polls_to_complete
        self.seconds_to_complete = seconds_to_complete
        self.faults = faults or FaultConfig()
        self.docret_shape: DocretShape = docret_shape
        self.strict_evaluators = strict_evaluators
        self.record_calls = record_calls
        self.store = Store()
        self._clock = clock
        self._injector = FaultInjector(self.faults)
        self._lock = threading.RLock()
        self._run_count = 0
        self.router = respx.Router(assert_all_called=False, assert_all_mocked=True)
        self._register_routes()

    # ------------------------------------------------------------------ plumbing
    @property
    def injected_faults(self) -> list[tuple[int, str]]:
        """Every transient fault answered so far: ``(status, "METHOD /path")``."""
        return list(self._injector.injected)

    def handler(self, request: httpx.Request) -> httpx.Response:
        """Answer one request (thread-safe); the function behind ``transport()`` and the loopback server."""
        with self._lock:
            response = self.router.handler(request)
            if not self.record_calls:
                self.router.reset()
            return response

    def setup(self) -> dict[str, Any]:
        """What shapes this emulator's answers (faults, document-retrieval shape, polls to complete): part of a
        mock backend's reuse identity."""
        return {
            "faults": dataclasses.asdict(self.faults),
            "docret_shape": self.docret_shape,
            "polls_to_complete": self.polls_to_complete,
        }

    def transport(self) -> httpx.MockTransport:
        """An httpx transport serving every request from this emulator."""
        return httpx.MockTransport(self.handler)

    def httpx2_transport(self) -> Any:
        """An ``httpx2.MockTransport`` serving from this emulator: the openai 3.x SDK in-process, no socket.

        ``openai.OpenAI(base_url=..., api_key="x", http_client=httpx2.Client(transport=emu.httpx2_transport()))``
        (``httpx2`` ships with openai 3.x; imported only here).
        """
        import httpx2

        def handle(request: Any) -> Any:
            forwarded = httpx.Request(
                request.method, str(request.url), headers=list(request.headers.multi_items()), content=request.content
            )
            response = self.handler(forwarded)
            return httpx2.Response(
                response.status_code, headers=list(response.headers.multi_items()), content=response.content
            )

        return httpx2.MockTransport(handle)

    def _now(self) -> int:
        return int(self._clock())

    def _add(self, method: str, pattern: str, fn: Callable[..., httpx.Response]) -> None:
        self.router.route(method=method, path__regex=_PREFIX + pattern + "$").mock(side_effect=self._wrap(fn))

    def _wrap(self, fn: Callable[..., httpx.Response]) -> Callable[..., httpx.Response]:
        def side_effect(request: httpx.Request, **params: Any) -> httpx.Response:
            fault = self._injector.transient(request.method, request.url.path)
            if fault is not None:
                return _error_response(_HttpError(fault.status, fault.code, fault.message), fault.headers)
            try:
                return fn(request, **params)
            except _HttpError as exc:
                return _error_response(exc)
            except Exception as exc:  # an emulator bug: answer like a service would, and log it
                log.exception("emulator error on %s %s", request.method, redact(str(request.url)))
                return _error_response(_HttpError(500, "InternalServerError", f"emulator error: {exc}"))

        return side_effect

    def _register_routes(self) -> None:
        ev = _OPENAI + r"/evals"
        one = ev + r"/(?P<eval_id>[^/]+)"
        runs = one + r"/runs"
        run = runs + r"/(?P<run_id>[^/]+)"
        items = run + r"/output_items"
        ds = r"/datasets/(?P<name>[^/]+)/versions"
        dsv = ds + r"/(?P<version>[^/]+)"
        table: list[tuple[str, str, Callable[..., httpx.Response]]] = [
            ("POST", ev, self._create_eval),
            ("GET", ev, self._list_evals),
            ("GET", one, self._get_eval),
            ("POST", one, self._update_eval),
            ("DELETE", one, self._delete_eval),
            ("POST", runs, self._create_run),
            ("GET", runs, self._list_runs),
            ("POST", run + r"/cancel", self._cancel_run),
            ("GET", run, self._get_run),
            ("POST", run, self._cancel_run),  # the TypeSpec's cancel route
            ("DELETE", run, self._delete_run),
            ("GET", items, self._list_output_items),
            ("GET", items + r"/(?P<item_id>[^/]+)", self._get_output_item),
            ("POST", dsv + r"/startPendingUpload", self._start_pending_upload),
            ("POST", dsv + r"/credentials", self._dataset_credentials),
            ("PATCH", dsv, self._patch_dataset_version),
            ("GET", dsv, self._get_dataset_version),
            ("DELETE", dsv, self._delete_dataset_version),
            ("GET", ds, self._list_dataset_versions),
            ("GET", r"/datasets", self._list_datasets),
        ]
        for method, pattern, fn in table:
            self._add(method, pattern, fn)
        for method in ("PUT", "GET", "HEAD"):
            blob = self._wrap(self._blob)
            self.router.route(method=method, host__regex=_BLOB_HOST).mock(side_effect=blob)
            self.router.route(method=method, path__startswith=_BLOB_PATH).mock(side_effect=blob)
        self.router.route().mock(side_effect=self._wrap(self._no_route))

    def _no_route(self, request: httpx.Request, **_: Any) -> httpx.Response:
        raise _HttpError(404, "NotFound", f"No such route in the Foundry emulator: {request.method} {request.url.path}")

    @staticmethod
    def _body(request: httpx.Request) -> Any:
        raw = request.content
        if not raw or not raw.strip():
            return None
        try:
            return loads(raw)
        except ValueError as exc:
            raise _bad(f"The request body is not valid JSON: {exc}") from None

    def _object_body(self, request: httpx.Request) -> dict[str, Any]:
        body = self._body(request)
        if not isinstance(body, dict):
            raise _bad("The request body must be a JSON object.")
        return body

    @staticmethod
    def _check_api_version(request: httpx.Request, v1: str | None) -> bool:
        """True for the legacy ``/openai/...`` form, which needs ``api-version``."""
        legacy = not v1
        if legacy and "api-version" not in request.url.params:
            raise _bad("Missing required query parameter 'api-version' (or use the /openai/v1 routes).")
        return legacy

    def _page(
        self,
        request: httpx.Request,
        objects: list[dict[str, Any]],
        index_of: Callable[[str], int | None] | None = None,
    ) -> dict[str, Any]:
        """Cursor pagination: ``after`` (an id), ``limit`` (1–100, default 20), ``order`` (asc|desc).

        ``index_of(id)`` finds an id's position in ``objects`` without a scan (output items: id N is at N-1).
        """
        params = request.url.params
        try:
            limit = int(params.get("limit", "20"))
        except ValueError:
            raise _bad(f"limit must be an integer, got {params.get('limit')!r}", "limit") from None
        if not 1 <= limit <= 100:
            raise _bad(f"limit must be between 1 and 100, got {limit}", "limit")
        order = params.get("order", "asc")
        if order not in ("asc", "desc"):
            raise _bad(f"order must be 'asc' or 'desc', got {order!r}", "order")
        n = len(objects)
        start = 0  # position in the requested order
        after = params.get("after")
        if after:
            if index_of is not None:
                index = index_of(after)
            else:
                index = next((i for i, o in enumerate(objects) if o["id"] == after), None)
            if index is None or not 0 <= index < n or objects[index]["id"] != after:
                raise _bad(f"after: no object with id {after!r} in this list", "after")
            start = (index if order == "asc" else n - 1 - index) + 1
        stop = min(start + limit, n)
        page = objects[start:stop] if order == "asc" else [objects[n - 1 - i] for i in range(start, stop)]
        return {
            "data": page,
            "first_id": page[0]["id"] if page else None,
            "last_id": page[-1]["id"] if page else None,
            "has_more": stop < n,
        }

    # ------------------------------------------------------------------ evals
    def _eval(self, eval_id: str) -> dict[str, Any]:
        ev = self.store.evals.get(eval_id)
        if ev is None:
            raise _not_found("Eval", eval_id)
        return ev

    def _resolve_evaluator(self, where: str, evaluator_name: str) -> EvaluatorSpec | None:
        spec = CATALOG.get(evaluator_name)
        if spec is not None:
            return spec
        shorts = {s.short_name: s.name for s in CATALOG.values()}
        if evaluator_name.startswith("builtin."):
            close = difflib.get_close_matches(evaluator_name.removeprefix("builtin."), list(shorts), n=1, cutoff=0.8)
            if close:
                raise _bad(
                    f"{where}: unknown evaluator '{evaluator_name}'; did you mean '{shorts[close[0]]}'?",
                    f"{where}.evaluator_name",
                )
            if not self.strict_evaluators:
                return None
            raise _bad(
                f"{where}: evaluator '{evaluator_name}' is not emulated (strict mode); known: {', '.join(CATALOG)}",
                f"{where}.evaluator_name",
            )
        raise _bad(
            f"{where}: unknown evaluator '{evaluator_name}': not a builtin evaluator, and this project has no "
            f"custom evaluator of that name (known builtins include {', '.join(CATALOG)})",
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
        mapping = crit.get("data_mapping") or {}
        if not isinstance(mapping, dict) or not all(isinstance(v, str) for v in mapping.values()):
            raise _bad(f"{where}: data_mapping must be an object of template strings.", "data_mapping")
        init = crit.get("initialization_parameters")
        if init is not None and not isinstance(init, dict):
            raise _bad(f"{where}: initialization_parameters must be an object.", "initialization_parameters")
        init = init or {}
        if spec is not None:
            if not any(set(group) <= set(mapping) for group in spec.input_groups):
                needs = " or ".join("(" + ", ".join(g) + ")" for g in spec.input_groups)
                smallest: set[str] = min((set(g) - set(mapping) for g in spec.input_groups), key=len)
                missing = sorted(smallest)
                raise _bad(
                    f"{where}: data_mapping is missing required input(s) {', '.join(map(repr, missing))} "
                    f"for {spec.name}, which needs {needs}.",
                    "data_mapping",
                )
            if spec.needs_deployment and not (init.get("deployment_name") or init.get("model")):
                raise _bad(
                    f"{where}: initialization_parameters.deployment_name is required for {spec.name} "
                    "(the judge model deployment).",
                    "initialization_parameters.deployment_name",
                )
            for param in spec.params:
                value = init.get(param.name)
                if value is None:
                    continue
                ok = (
                    isinstance(value, int | float) and not isinstance(value, bool)
                    if param.type is float
                    else isinstance(value, param.type) and not isinstance(value, bool)
                )
                if not ok:
                    raise _bad(
                        f"{where}: initialization_parameters.{param.name} must be of type {param.type.__name__}, "
                        f"got {value!r}.",
                        f"initialization_parameters.{param.name}",
                    )
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
        out: dict[str, Any] = {
            "type": ctype,
            "id": f"{name}_{uuid.uuid4()}",
            "name": name,
            "evaluator_name": evaluator_name,
            "evaluator_version": crit.get("evaluator_version") or "",
        }
        if "initialization_parameters" in crit:
            out["initialization_parameters"] = crit["initialization_parameters"]
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

    # ------------------------------------------------------------------ runs
    def _rows_from_dataset(self, dataset_id: str) -> list[dict[str, Any]]:
        m = _DATASET_ID.search(dataset_id)
        version = self.store.datasets.get((m.group("name"), m.group("version"))) if m else None
        if version is None:
            raise _bad(
                f"data_source.source.id: dataset '{dataset_id}' was not found in this project "
                "(upload it first: startPendingUpload, PUT the blob, PATCH the version).",
                "data_source.source.id",
            )
        key = _blob_key(version["dataUri"])
        if version.get("type") == "uri_folder" and key is not None:
            prefix = key.rstrip("/") + "/"
            blobs = [self.store.blobs[k] for k in sorted(self.store.blobs) if k.startswith(prefix)]
        else:
            blobs = [self.store.blobs[key]] if key in self.store.blobs else []
        if not blobs:
            raise _bad(f"data_source.source.id: dataset '{dataset_id}' has no uploaded data at {version['dataUri']}.")
        rows: list[dict[str, Any]] = []
        for blob in blobs:
            for lineno, line in enumerate(blob.decode("utf-8-sig").splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    row = loads(line)
                except ValueError:
                    raise _bad(f"dataset '{dataset_id}' line {lineno} is not valid JSON.") from None
                if not isinstance(row, dict):
                    raise _bad(f"dataset '{dataset_id}' line {lineno} is not a JSON object.")
                if isinstance(row.get("item"), dict) and set(row) <= {"item", "sample"}:
                    row = row["item"]
                rows.append(row)
        return rows

    def _target_samples(self, ds: dict[str, Any], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Deterministic stand-in outputs for a model/agent target (no model is called)."""
        target = ds.get("target")
        if not isinstance(target, dict) or target.get("type") not in ("azure_ai_model", "azure_ai_agent"):
            raise _bad("data_source.target must be {type: azure_ai_model|azure_ai_agent, ...}.", "data_source.target")
        template = (ds.get("input_messages") or {}).get("template") or []
        samples = []
        for row in rows:
            texts = []
            for message in template if isinstance(template, list) else []:
                content = message.get("content") if isinstance(message, dict) else None
                text = content.get("text") if isinstance(content, dict) else content
                if isinstance(text, str):
                    value = render_mapping({"t": text}, row)["t"]
                    texts.append(value if isinstance(value, str) else "" if value is None else dumps(value).decode())
            prompt = " ".join(texts)
            output = f"Mock target output (foundry_bridge emulator, no model was called) for: {prompt}"
            samples.append(
                {
                    "output_text": output,
                    "output_status": {"status": "success", "message": ""},
                    "output_items": [
                        {"role": "assistant", "content": [{"type": "output_text", "text": output, "annotations": []}]}
                    ],
                }
            )
        return samples

    def _create_run(self, request: httpx.Request, eval_id: str, v1: str | None = None, **_: Any) -> httpx.Response:
        legacy = self._check_api_version(request, v1)
        ev = self._eval(eval_id)
        body = self._object_body(request)
        ds = body.get("data_source")
        if not isinstance(ds, dict):
            raise _bad("data_source is required (an object).", "data_source")
        if ds.get("type") not in _SUPPORTED_DATA_SOURCES:
            raise _bad(
                f"data_source.type {ds.get('type')!r} is not supported by the emulator "
                f"(supported: {', '.join(_SUPPORTED_DATA_SOURCES)}).",
                "data_source.type",
            )
        source = ds.get("source")
        if not isinstance(source, dict):
            raise _bad("data_source.source is required (an object).", "data_source.source")
        samples: list[dict[str, Any] | None]
        if source.get("type") == "file_content":
            content = source.get("content")
            if not isinstance(content, list) or not content:
                raise _bad("data_source.source.content must be a non-empty array.", "data_source.source.content")
            rows = []
            samples = []
            for i, entry in enumerate(content):
                if not isinstance(entry, dict) or not isinstance(entry.get("item"), dict):
                    raise _bad(
                        f"data_source.source.content[{i}] must be an object with an 'item' object.",
                        f"data_source.source.content[{i}]",
                    )
                rows.append(entry["item"])
                samples.append(entry.get("sample") if isinstance(entry.get("sample"), dict) else None)
        elif source.get("type") == "file_id":
            if not isinstance(source.get("id"), str):
                raise _bad("data_source.source.id is required (a dataset version id).", "data_source.source.id")
            rows = self._rows_from_dataset(source["id"])
            if not rows:
                raise _bad(f"dataset '{source['id']}' holds no rows.", "data_source.source.id")
            samples = [None] * len(rows)
        else:
            raise _bad(
                f"data_source.source.type {source.get('type')!r} is not supported (file_content or file_id).",
                "data_source.source.type",
            )
        schema = ev["data_source_config"].get("schema", {}).get("item", {})
        required = schema.get("required") if isinstance(schema, dict) else None
        for i, row in enumerate(rows):
            for key in required or []:
                if key not in row:
                    raise _bad(
                        f"row {i}: required field '{key}' (data_source_config.item_schema.required) is missing.",
                        f"data_source.source.content[{i}].item.{key}",
                    )
        datasource_items = [dict(r) for r in rows]
        if ds["type"] == "azure_ai_target_completions":
            samples = list(self._target_samples(ds, rows))
            for item, sample in zip(datasource_items, samples, strict=True):
                item["sample.output_text"] = sample["output_text"]  # type: ignore[index]
                item["sample.output_status"] = sample["output_status"]  # type: ignore[index]
                item["sample.output_status.status"] = "success"
                item["sample.output_status.message"] = ""
                if ds["target"]["type"] == "azure_ai_agent":
                    item["sample.output_items"] = sample["output_items"]  # type: ignore[index]
        if ds["type"] == "azure_ai_target_completions" and ds["target"]["type"] == "azure_ai_agent":
            ds = {**ds, "target": {**ds["target"], "tool_descriptions": ds["target"].get("tool_descriptions", [])}}
        metadata = body.get("metadata")
        if metadata is not None and not isinstance(metadata, dict):
            raise _bad("metadata must be an object of strings.", "metadata")
        now = self._now()
        run_id = f"evalrun_{uuid.uuid4().hex}"
        index = self._run_count
        self._run_count += 1
        state = _RunState(
            eval_id=eval_id,
            index=index,
            rows=rows,
            samples=samples,
            created=self._clock(),
            legacy=legacy,
            will_fail=self._injector.run_fails(index),
            errored_rows=self._injector.errored_rows(len(rows)),
            datasource_items=datasource_items,
            account=_account(request),
            project=self._project(request),
        )
        run: dict[str, Any] = {
            "object": "eval.run",
            "created_at": now,
            "modified_at": now,
            "created_by": None,
            "id": run_id,
            "eval_id": eval_id,
            "status": "in_progress",
            "model": None,
            "data_source": ds,
            "metadata": metadata,
            "properties": {"eval_id": eval_id, "NetworkType": "Public"},
            "name": body.get("name") or f"run-{run_id[-8:]}",
            "report_url": None,
            "result_counts": {"total": 0, "passed": 0, "failed": 0, "errored": 0, "skipped": 0},
            "per_model_usage": [],
            "per_testing_criteria_results": [],
            "error": {"code": None, "message": None, "correlation_id": None, "inner_error": None},
        }
        created_view = _copy(run)
        # What later GETs show: rows unwrapped (or, for targets, turned into a dataset), created_by, trigger_type.
        served_ds = _copy(ds)
        if ds["type"] == "azure_ai_target_completions":
            stamp = time.strftime("%Y-%m-%d_%H%M%S", time.gmtime(now))
            inline_name = f"eval-data-{stamp}_{uuid.uuid4().hex[:5]}_UTC"
            served_ds["source"] = {"type": "file_id", "id": self._dataset_id(request, inline_name, "1")}
            metadata = {"is_inline_dataset": "true", "has_nested_data": "False", **(metadata or {})}
        elif source.get("type") == "file_content":
            served_ds["source"]["content"] = [_copy(r) for r in rows]
        run["data_source"] = served_ds
        run["created_by"] = MOCK_USER
        run["metadata"] = {**(metadata or {}), "trigger_type": "oneoff"}
        run["properties"] = {
            **run["properties"],
            "runType": "eval_run",
            "_azureml.evaluation_run": "evaluation.service",
            "_azureml.evaluate_artifacts": '[{"path": "instance_results.jsonl", "type": "table"}]',
        }
        run["error"] = None
        self.store.runs[run_id] = run
        self.store.run_state[run_id] = state
        return _json_response(201, created_view)

    @staticmethod
    def _project(request: httpx.Request) -> str:
        m = re.match(_PREFIX, request.url.path)
        return m.group("project") if m else "mock-project"

    def _dataset_id(self, request: httpx.Request, name: str, version: str) -> str:
        return (
            f"azureai://accounts/{_account(request)}/projects/{self._project(request)}/data/{name}/versions/{version}"
        )

    def _run(self, eval_id: str, run_id: str) -> tuple[dict[str, Any], _RunState]:
        self._eval(eval_id)
        run = self.store.runs.get(run_id)
        state = self.store.run_state.get(run_id)
        if run is None or state is None or state.eval_id != eval_id:
            raise _not_found("Run", run_id)
        return run, state

    def _advance(self, run_id: str) -> None:
        """Finish a run whose polls and time are up (scores are computed at that moment)."""
        run = self.store.runs[run_id]
        state = self.store.run_state[run_id]
        if run["status"] != "in_progress":
            return
        polls_needed = self.polls_to_complete + self.faults.slow_polls
        seconds_needed = self.seconds_to_complete + self.faults.slow_seconds
        if state.polls <= polls_needed or self._clock() - state.created < seconds_needed:
            return
        now = self._now()
        run["modified_at"] = now
        if state.will_fail:
            run["status"] = "failed"
            run["error"] = {"code": self.faults.run_error_code, "message": self.faults.run_error_message}
            self.store.output_items[run_id] = []
            return
        self._complete(run_id, run, state, now)

    def _complete(self, run_id: str, run: dict[str, Any], state: _RunState, now: int) -> None:
        ev = self.store.evals[state.eval_id]
        criteria = ev["testing_criteria"]
        specs = [CATALOG.get(c["evaluator_name"]) for c in criteria]
        only = set(self.faults.errored_criteria)
        usage: dict[str, dict[str, int]] = {}
        verdict_rows: list[list[tuple[str, Verdict]]] = []
        items = []
        for i, (row, sample) in enumerate(zip(state.rows, state.samples, strict=True)):
            results: list[dict[str, Any]] = []
            verdicts = []
            for crit, spec in zip(criteria, specs, strict=True):
                if i in state.errored_rows and (not only or crit["name"] in only):
                    metrics = result_metrics(spec, crit["evaluator_name"], self.docret_shape)
                    message = (
                        "(SystemError) 100% of the batch run failed. (UserError) evaluator execution failed "
                        "(fault injected by the foundry_bridge emulator)"
                    )
                    scored = RowScore(errored_results(crit["name"], metrics, message), "errored")
                else:
                    scored = score_row(crit, spec, row, sample, docret_shape=self.docret_shape)
                results.extend(scored.results)
                verdicts.append((crit["name"], scored.verdict))
                if scored.model:
                    u = usage.setdefault(
                        scored.model,
                        {"invocation_count": 0, "total_tokens": 0, "prompt_tokens": 0, "completion_tokens": 0},
                    )
                    u["invocation_count"] += 1
                    for key in ("total_tokens", "prompt_tokens", "completion_tokens"):
                        u[key] += scored.usage.get(key, 0)
            verdict_rows.append(verdicts)
            item_sample = dict(_EMPTY_ITEM_SAMPLE)
            items.append(
                {
                    "object": "eval.run.output_item",
                    "id": str(i + 1),
                    "run_id": run_id,
                    "eval_id": state.eval_id,
                    "created_at": now,
                    "status": "completed",
                    "datasource_item_id": i,
                    "datasource_item": state.datasource_items[i],
                    "results": results,
                    "sample": item_sample,
                }
            )
            state.passed_rows.append(all(v == "passed" for _, v in verdicts))
        host = {"account": state.account, "project": state.project}
        run["status"] = "completed"
        run["properties"]["job_logs"] = (
            f"azureai://accounts/{host['account']}/projects/{host['project']}/evaluationresults/"
            f"eval-result-{run_id}-MOCK/versions/1"
        )
        run["report_url"] = (
            f"https://ai.azure.com/nextgen/r/mock,mock-rg,,{host['account']},{host['project']}"
            f"/build/evaluations/{state.eval_id}/run/{run_id}"
        )
        totals, per_criteria = tally(verdict_rows, [c["name"] for c in criteria])
        run["result_counts"] = totals
        run["per_model_usage"] = [{"model_name": model, **u, "cached_tokens": 0} for model, u in sorted(usage.items())]
        run["per_testing_criteria_results"] = per_criteria
        self.store.output_items[run_id] = items

    def _get_run(
        self, request: httpx.Request, eval_id: str, run_id: str, v1: str | None = None, **_: Any
    ) -> httpx.Response:
        self._check_api_version(request, v1)
        run, state = self._run(eval_id, run_id)
        state.polls += 1
        self._advance(run_id)
        return _json_response(200, run)

    def _list_runs(self, request: httpx.Request, eval_id: str, v1: str | None = None, **_: Any) -> httpx.Response:
        self._check_api_version(request, v1)
        self._eval(eval_id)
        status = request.url.params.get("status")
        if status is not None and status not in _RUN_STATUSES:
            raise _bad(f"status must be one of {', '.join(_RUN_STATUSES)}, got {status!r}", "status")
        runs = []
        for run_id, state in self.store.run_state.items():
            if state.eval_id != eval_id:
                continue
            self._advance(run_id)
            run = self.store.runs[run_id]
            if status is None or run["status"] == status:
                runs.append(run)
        return _json_response(200, self._page(request, runs))

    def _cancel_run(
        self, request: httpx.Request, eval_id: str, run_id: str, v1: str | None = None, **_: Any
    ) -> httpx.Response:
        self._check_api_version(request, v1)
        run, _state = self._run(eval_id, run_id)
        if run["status"] in ("completed", "failed"):
            raise _HttpError(400, "UserError", f"Run '{run_id}' has already {run['status']} and cannot be canceled.")
        if run["status"] != "canceled":
            run["status"] = "canceled"
            run["modified_at"] = self._now()
            self.store.output_items[run_id] = []
        return _json_response(200, run)

    def _forget_run(self, run_id: str) -> None:
        self.store.runs.pop(run_id, None)
        self.store.run_state.pop(run_id, None)
        self.store.output_items.pop(run_id, None)

    def _delete_run(
        self, request: httpx.Request, eval_id: str, run_id: str, v1: str | None = None, **_: Any
    ) -> httpx.Response:
        self._check_api_version(request, v1)
        self._run(eval_id, run_id)
        self._forget_run(run_id)
        return _json_response(200, {"object": "eval.run.deleted", "deleted": True, "run_id": run_id})

    # ------------------------------------------------------------------ output items
    def _list_output_items(
        self, request: httpx.Request, eval_id: str, run_id: str, v1: str | None = None, **_: Any
    ) -> httpx.Response:
        self._check_api_version(request, v1)
        self._run(eval_id, run_id)
        status = request.url.params.get("status")
        if status is not None and status not in ("pass", "fail"):
            raise _bad(f"status must be 'pass' or 'fail', got {status!r}", "status")
        items = self.store.output_items.get(run_id, [])
        index_of: Callable[[str], int | None] | None = _item_index
        if status is not None:
            passed = self.store.run_state[run_id].passed_rows
            items = [it for it, ok in zip(items, passed, strict=True) if ok == (status == "pass")]
            index_of = None
        page = self._page(request, items, index_of)
        return _json_response(200, page)

    def _get_output_item(
        self, request: httpx.Request, eval_id: str, run_id: str, item_id: str, v1: str | None = None, **_: Any
    ) -> httpx.Response:
        self._check_api_version(request, v1)
        self._run(eval_id, run_id)
        for item in self.store.output_items.get(run_id, []):
            if item["id"] == item_id:
                return _json_response(200, item)
        raise _not_found("Output item", item_id)

    # ------------------------------------------------------------------ datasets and blobs
    def _blob_container_url(self, request: httpx.Request, container: str) -> str:
        """In-process: ``https://mock.blob.core.windows.net/<c>``; on loopback: ``<server>/_blob/<c>``."""
        host = request.url.host
        if host.endswith(".services.ai.azure.com") or host.endswith(".azure.com"):
            return f"https://mock.blob.core.windows.net/{container}"
        return f"{request.url.scheme}://{request.url.netloc.decode()}{_BLOB_PATH}{container}"

    def _blob_reference(self, container_url: str, blob_uri: str, permissions: str) -> dict[str, Any]:
        return {
            "blobUri": blob_uri,
            "storageAccountArmId": "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/mock-rg/"
            "providers/Microsoft.Storage/storageAccounts/mockstorage",
            "credential": {
                "type": "SAS",
                "credentialType": "SAS",
                "sasUri": f"{container_url}?sv=mock&sr=c&sp={permissions}&sig=mock",
            },
        }

    def _start_pending_upload(self, request: httpx.Request, name: str, version: str, **_: Any) -> httpx.Response:
        body = self._body(request) or {}
        if not isinstance(body, dict):
            raise _bad("The request body must be a JSON object.")
        kind = body.get("pendingUploadType", "BlobReference")
        if kind != "BlobReference":
            raise _bad(f"pendingUploadType must be 'BlobReference', got {kind!r}", "pendingUploadType")
        if (name, version) in self.store.datasets:
            raise _HttpError(409, "Conflict", f"Dataset '{name}' version '{version}' already exists.")
        container = f"mock-{uuid.uuid5(uuid.NAMESPACE_URL, f'{name}/{version}/{uuid.uuid4()}')}"
        url = self._blob_container_url(request, container)
        ref = self._blob_reference(url, url, "rcwl")
        out = {
            "blobReference": ref,
            "blobReferenceForConsumption": _copy(ref),
            "pendingUploadId": None,
            "pendingUploadType": "BlobReference",
            "version": version,
        }
        return _json_response(200, out)

    def _patch_dataset_version(self, request: httpx.Request, name: str, version: str, **_: Any) -> httpx.Response:
        body = self._object_body(request)
        existing = self.store.datasets.get((name, version))
        data_uri = body.get("dataUri") or (existing or {}).get("dataUri")
        if not isinstance(data_uri, str) or not data_uri:
            raise _bad("dataUri is required (the blob URL the data was uploaded to).", "dataUri")
        kind = body.get("type") or (existing or {}).get("type") or "uri_file"
        if kind not in ("uri_file", "uri_folder"):
            raise _bad(f"type must be 'uri_file' or 'uri_folder', got {kind!r}", "type")
        if _blob_key(data_uri) is None:
            raise _bad(f"dataUri {data_uri!r} is not a blob URL of this project's storage.", "dataUri")
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S.0000000+00:00", time.gmtime(self._clock()))
        created = (existing or {}).get("systemData", {}).get("createdAt", stamp)
        dataset = {
            "id": self._dataset_id(request, name, version),
            "name": name,
            "version": version,
            "displayName": name,
            "description": body.get("description", (existing or {}).get("description")),
            "tags": body.get("tags", (existing or {}).get("tags", {})) or {},
            "type": kind,
            "isReference": False,
            "dataUri": data_uri.split("?", 1)[0],
            "isSingleFile": kind == "uri_file",
            "connectionName": body.get("connectionName"),
            "systemData": {
                "createdAt": created,
                "createdBy": MOCK_USER,
                "createdByType": None,
                "lastModifiedAt": stamp,
            },
        }
        self.store.datasets[(name, version)] = dataset
        return _json_response(200, {**dataset, "isSingleFile": False})  # as recorded: true only on later GETs

    def _get_dataset_version(self, request: httpx.Request, name: str, version: str, **_: Any) -> httpx.Response:
        dataset = self.store.datasets.get((name, version))
        if dataset is None:
            raise _not_found("Dataset version", f"{name}/{version}")
        return _json_response(200, dataset)

    def _delete_dataset_version(self, request: httpx.Request, name: str, version: str, **_: Any) -> httpx.Response:
        self.store.datasets.pop((name, version), None)
        return httpx.Response(204)

    def _list_dataset_versions(self, request: httpx.Request, name: str, **_: Any) -> httpx.Response:
        versions = [d for (n, _v), d in self.store.datasets.items() if n == name]
        return _json_response(200, {"value": versions[::-1]})  # newest first, as recorded

    def _list_datasets(self, request: httpx.Request, **_: Any) -> httpx.Response:
        latest: dict[str, dict[str, Any]] = {}
        for (n, _v), d in self.store.datasets.items():
            latest[n] = d
        return _json_response(200, {"value": list(latest.values())})

    def _dataset_credentials(self, request: httpx.Request, name: str, version: str, **_: Any) -> httpx.Response:
        dataset = self.store.datasets.get((name, version))
        if dataset is None:
            raise _not_found("Dataset version", f"{name}/{version}")
        uri = dataset["dataUri"]
        container = uri.rsplit("/", 1)[0] if dataset["type"] == "uri_file" else uri
        ref = self._blob_reference(container, uri, "rl")
        return _json_response(200, {"blobReference": ref, "blobReferenceForConsumption": _copy(ref)})

    def _blob(self, request: httpx.Request, **_: Any) -> httpx.Response:
        key = _blob_key(str(request.url))
        if key is None or "/" not in key:
            raise _HttpError(400, "InvalidUri", f"Not a blob URL: {request.url.path}")
        if request.method in ("GET", "HEAD"):
            data = self.store.blobs.get(key)
            if data is None:
                raise _HttpError(404, "BlobNotFound", f"The specified blob does not exist: {key}")
            return httpx.Response(
                200,
                content=data if request.method == "GET" else b"",
                headers={"content-type": "application/octet-stream", "x-ms-blob-type": "BlockBlob"},
            )
        if request.headers.get("if-none-match") == "*" and key in self.store.blobs:
            raise _HttpError(409, "BlobAlreadyExists", f"The specified blob already exists: {key}")
        data = request.content
        self.store.blobs[key] = data
        md5 = base64.b64encode(hashlib.md5(data).digest()).decode()
        return httpx.Response(
            201,
            headers={
                "ETag": f'"0x{hashlib.sha1(data).hexdigest()[:15].upper()}"',
                "Last-Modified": formatdate(self._clock(), usegmt=True),
                "Content-MD5": md5,
                "x-ms-request-server-encrypted": "true",
                "x-ms-version": request.headers.get("x-ms-version", "2025-11-05"),
            },
        )

    # ------------------------------------------------------------------ conveniences for tests
    def run_status(self, run_id: str) -> Literal["queued", "in_progress", "completed", "canceled", "failed"]:
        """The status a run has now, without counting a poll."""
        return self.store.runs[run_id]["status"]


def _item_index(item_id: str) -> int | None:
    """Output item ``"N"`` sits at position N-1 of its run's list."""
    return int(item_id) - 1 if item_id.isdigit() else None


def _copy(value: Any) -> Any:
    """A deep copy of JSON data."""
    return loads(dumps(value))
