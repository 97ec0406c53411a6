"""A stateful emulation of Foundry's evaluation API: plain request → response handlers over a store whose rows are
spooled to temporary files (``close`` removes them).

Routes are matched on the path after ``/api/projects/<project>`` on any host, under both ``/openai/v1/...`` and
the older ``/openai/...?api-version=...``; the dataset upload flow (``startPendingUpload``, blob PUT, PATCH
version) stores bytes so a run can read ``{"type": "file_id", "id": "azureai://.../data/<name>/versions/<v>"}``.
The wire format follows ``shared/reference/foundry-evals-api.md`` and the recorded exchanges; see
``docs/mock.md`` for every choice made where the service's behaviour was not observed.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Literal

import httpx
import respx

from ..errors import redact
from ._catalog import CatalogRoutes
from ._common import _BLOB_HOST, _BLOB_PATH, _OPENAI, _PREFIX, PROJECT_ENDPOINT, Store, _error_response, _HttpError
from ._datasets import DatasetRoutes
from ._evals import EvalRoutes
from ._faults import FaultConfig, FaultInjector
from ._insights import InsightRoutes
from ._items import ItemRoutes
from ._runs import RunRoutes
from ._scoring import DocretShape

__all__ = ["PROJECT_ENDPOINT", "FoundryEmulator", "Store"]

log = logging.getLogger("foundry_bridge.mock")


class FoundryEmulator(EvalRoutes, RunRoutes, ItemRoutes, DatasetRoutes, CatalogRoutes, InsightRoutes):
    """Foundry's evaluation API in memory, served in-process (``transport()``) or on loopback (``serve``).

    ``polls_to_complete``: a run answers ``in_progress`` to its first N GETs and has finished on GET N+1
    (N=0: the first GET sees it finished); ``seconds_to_complete`` additionally requires that much time since
    creation. ``docret_shape`` picks the document-retrieval result shape: ``"single"`` (one result with
    ``properties``, azure-ai-evaluation ≥ 1.17) or ``"per_metric"`` (one result per metric, the docs' shape).
    ``strict_evaluators`` refuses mapping mistakes at create (400: a data mapping without the inputs of any input
    group, a template naming a field absent from the item schema); by default the eval is accepted and the rows
    come back errored inside a completed run, as the service does (recorded). ``model_version`` is the judge model
    version reported in ``per_model_usage`` and judge samples (``<deployment>-<model_version>``, as recorded).
    """

    def __init__(
        self,
        *,
        polls_to_complete: int = 2,
        seconds_to_complete: float = 0.0,
        faults: FaultConfig | None = None,
        docret_shape: DocretShape = "single",
        strict_evaluators: bool = False,
        model_version: str = "2024-07-18",
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
        self.model_version = model_version
        self.record_calls = record_calls
        self.store = Store()
        self._clock = clock
        self._injector = FaultInjector(self.faults)
        self._lock = threading.RLock()
        self._run_count = 0
        self.router = respx.Router(assert_all_called=False, assert_all_mocked=True)
        self._register_routes()

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
            "strict_evaluators": self.strict_evaluators,
            "model_version": self.model_version,
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
            *self._catalog_routes(),
            *self._insight_routes(),
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

    def close(self) -> None:
        """Remove the files the emulator spooled its blobs and runs' rows to (also done at exit); its evals, runs
        and datasets stay, without their rows."""
        with self._lock:
            self.store.close()

    def __enter__(self) -> FoundryEmulator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run_status(self, run_id: str) -> Literal["queued", "in_progress", "completed", "canceled", "failed"]:
        """The status a run has now, without counting a poll."""
        return self.store.runs[run_id]["status"]
