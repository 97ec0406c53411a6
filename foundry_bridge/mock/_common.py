"""What every resource of the emulator shares: the store, errors as Azure envelopes, JSON responses, paging.

``EmulatorBase`` holds the configuration and the in-memory ``Store``; the resource mixins (``_evals``,
``_runs``, ``_items``, ``_datasets``) add the handlers and ``_emulator.FoundryEmulator`` routes requests to them.
"""

from __future__ import annotations

import re
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

from .._io import dumps, loads
from ._faults import FaultConfig, FaultInjector
from ._scoring import DocretShape

__all__ = ["PROJECT_ENDPOINT", "EmulatorBase", "Store"]

PROJECT_ENDPOINT = "https://mock.services.ai.azure.com/api/projects/mock-project"
MOCK_USER = "mock-user"
_PREFIX = r"^/api/projects/(?P<project>[^/]+)"
_OPENAI = r"/openai(?P<v1>/v1)?"
_BLOB_HOST = r"\.blob\.core\.windows\.net$"
_BLOB_PATH = "/_blob/"


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


def _copy(value: Any) -> Any:
    """A deep copy of JSON data."""
    return loads(dumps(value))


class EmulatorBase:
    """The state and the helpers the resource handlers share (set up by ``FoundryEmulator.__init__``)."""

    polls_to_complete: int
    seconds_to_complete: float
    faults: FaultConfig
    docret_shape: DocretShape
    strict_evaluators: bool
    store: Store
    _clock: Callable[[], float]
    _injector: FaultInjector
    _lock: threading.RLock
    _run_count: int

    def _now(self) -> int:
        return int(self._clock())

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

    def _eval(self, eval_id: str) -> dict[str, Any]:
        ev = self.store.evals.get(eval_id)
        if ev is None:
            raise _not_found("Eval", eval_id)
        return ev

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

    def _forget_run(self, run_id: str) -> None:
        self.store.runs.pop(run_id, None)
        self.store.run_state.pop(run_id, None)
        self.store.output_items.pop(run_id, None)
