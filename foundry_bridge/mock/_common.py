"""What every resource of the emulator shares: the store, errors as Azure envelopes, JSON responses, paging.

``EmulatorBase`` holds the configuration and the ``Store`` (blobs and each run's rows are spooled to files:
memory holds their offsets, not their bytes); the resource mixins (``_evals``, ``_runs``, ``_items``,
``_datasets``) add the handlers and ``_emulator.FoundryEmulator`` routes requests to them.
"""

from __future__ import annotations

import re
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterator, MutableMapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from .._io import dumps, loads
from ..mapping.plan import JsonlRows
from ._faults import FaultConfig, FaultInjector
from ._output import RunOutput
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
    rows: JsonlRows  # each row, spooled to a file (read back a block at a time)
    samples: Sequence[dict[str, Any] | None]  # each row's sample (inline, or a target's output), spooled when any
    created: float
    legacy: bool
    will_fail: bool
    errored_rows: set[int]
    target: str | None = None  # the target type of an azure_ai_target_completions run
    account: str = "mock-account"
    project: str = "mock-project"
    polls: int = 0


class BlobFiles(MutableMapping[str, bytes]):
    """Uploaded blobs by ``"container/path"``, each a file of a temporary directory made on first use (removed by
    ``close``, or at exit): memory holds their names, not their bytes."""

    def __init__(self) -> None:
        self._dir: tempfile.TemporaryDirectory[str] | None = None
        self._paths: dict[str, Path] = {}

    def path(self, key: str) -> Path:
        """The file holding blob ``key`` (``KeyError`` when there is none)."""
        return self._paths[key]

    def __getitem__(self, key: str) -> bytes:
        return self._paths[key].read_bytes()

    def __setitem__(self, key: str, data: bytes) -> None:
        if self._dir is None:
            self._dir = tempfile.TemporaryDirectory(prefix="foundry-bridge-emulator-")
        path = self._paths.get(key) or Path(self._dir.name) / f"{len(self._paths) + 1}.blob"
        path.write_bytes(data)
        self._paths[key] = path

    def __delitem__(self, key: str) -> None:
        self._paths.pop(key).unlink(missing_ok=True)

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)

    def close(self) -> None:
        self._paths.clear()
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None


@dataclass
class Store:
    """Everything the emulator holds; inspect it in tests (the evals, runs and datasets are the wire objects as
    served, except that an inline run's ``data_source`` rows are read back from its spool when it is served).
    Nothing grows with the rows in memory: uploaded blobs are files (``BlobFiles``), each run's rows and samples
    an anonymous spool file (``RowSpool``, gone once the run is forgotten) and its output compact arrays."""

    evals: dict[str, dict[str, Any]] = field(default_factory=dict)
    runs: dict[str, dict[str, Any]] = field(default_factory=dict)
    output_items: dict[str, RunOutput] = field(default_factory=dict)  # run id → compact output, once completed
    datasets: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)  # (name, version) → version
    blobs: BlobFiles = field(default_factory=BlobFiles)  # "container/path" → bytes, kept in files
    run_state: dict[str, _RunState] = field(default_factory=dict)

    def close(self) -> None:
        """Remove the spooled files (the store keeps its evals, runs and datasets, without their rows)."""
        self.blobs.close()
        self.run_state.clear()
        self.output_items.clear()


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


def page_positions(n: int, limit: int, order: str, index: int | None, after: str | None) -> tuple[range, bool]:
    """The positions of an n-long list that a cursor page covers (``index``: the position of the ``after`` id,
    None for the first page), and whether more follow."""
    start = 0  # position in the requested order
    if index is not None:
        if not 0 <= index < n:
            raise _bad(f"after: no object with id {after!r} in this list", "after")
        start = (index if order == "asc" else n - 1 - index) + 1
    stop = min(start + limit, n)
    positions = range(start, stop) if order == "asc" else range(n - 1 - start, n - 1 - stop, -1)
    return positions, stop < n


def list_envelope(page: list[dict[str, Any]], has_more: bool) -> dict[str, Any]:
    """A list answer as recorded: ``data``, ``first_id``, ``last_id``, ``has_more`` (no ``object``)."""
    return {
        "data": page,
        "first_id": page[0]["id"] if page else None,
        "last_id": page[-1]["id"] if page else None,
        "has_more": has_more,
    }


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
    model_version: str
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

    @staticmethod
    def _page_params(request: httpx.Request) -> tuple[int, str, str | None]:
        """``limit`` (1–100, default 20), ``order`` (asc|desc) and ``after`` of a list request."""
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
        return limit, order, params.get("after") or None

    def _page(self, request: httpx.Request, objects: list[dict[str, Any]]) -> dict[str, Any]:
        """Cursor pagination over ``objects``: ``after`` (an id), ``limit``, ``order``."""
        limit, order, after = self._page_params(request)
        ids = [o["id"] for o in objects]
        index = None if after is None else next((i for i, x in enumerate(ids) if x == after), -1)
        positions, has_more = page_positions(len(objects), limit, order, index, after)
        return list_envelope([objects[i] for i in positions], has_more)

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
        self.store.run_state.pop(run_id, None)  # its spooled rows are closed (and gone) with it
        self.store.output_items.pop(run_id, None)
