"""``FoundryClient``: a small typed client for Foundry's evaluation routes, over httpx.

The transport is the only thing that differs between the cloud and the emulator: ``transport=None`` talks to
the network; ``transport=FoundryEmulator().transport()`` talks to the in-process emulator. Everything above it
— auth, retries, error mapping, pagination, polling, upload — is the same code.

Routes (``api_version=None``, the current SDK form): ``{endpoint}/openai/v1/evals...`` with no query string.
With ``api_version="2025-11-15-preview"`` (older SDKs): ``{endpoint}/openai/evals...?api-version=...``.
Datasets: ``{endpoint}/datasets/...?api-version=v1``.
"""

from __future__ import annotations

import ipaddress
import logging
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any, TypeVar
from urllib.parse import quote, urlsplit

import httpx
import orjson
from azure.core.exceptions import DecodeError, HttpResponseError
from pydantic import BaseModel, ValidationError

from .. import __version__
from .._text import endpoint_problem, shown_url
from ..errors import UsageError, redact
from ._auth import FOUNDRY_SCOPE, TokenCredential, TokenProvider
from ._exceptions import http_error, request_error
from ._models import DatasetVersion, Eval, EvalRun, OutputItem, PendingUpload
from ._paging import ItemPaged
from ._poller import RunPoller
from ._retry import RetryPolicy, parse_retry_after

__all__ = ["ENDPOINT_ENV", "FoundryClient", "is_loopback", "validate_endpoint"]

_M = TypeVar("_M", bound=BaseModel)

logger = logging.getLogger("foundry_bridge.foundry")
logger.addHandler(logging.NullHandler())  # a library: the application decides where records go

ENDPOINT_ENV = "AZURE_AI_PROJECT_ENDPOINT"
DEFAULT_PAGE_SIZE = 100
DEFAULT_TIMEOUT = httpx.Timeout(120.0, connect=10.0)
DEFAULT_REQUEST_DEADLINE = 300.0  # seconds: one request's answer, however it trickles (each read: DEFAULT_TIMEOUT)
_LOOPBACK_NAMES = {"localhost", "localhost.localdomain"}


class _RedactingFilter(logging.Filter):
    """Scrubs tokens and SAS signatures from records of httpx's own logger (it logs full URLs at INFO)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except (TypeError, ValueError):
            return True
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, ()
        return True


def _guard_httpx_logger() -> None:
    """Install the redacting filter on the ``httpx`` logger once (on first client construction, not import)."""
    httpx_logger = logging.getLogger("httpx")
    if not any(isinstance(f, _RedactingFilter) for f in httpx_logger.filters):
        httpx_logger.addFilter(_RedactingFilter())


def _typed(page: tuple[str | None, list[dict[str, Any]]]) -> tuple[str | None, list[OutputItem]]:
    token, items = page
    return token, [OutputItem.model_validate(it) for it in items]


def is_loopback(host: str) -> bool:
    """``localhost``, or a loopback address (brackets of an IPv6 host allowed)."""
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def validate_endpoint(endpoint: str | None) -> str:
    """The project endpoint without a trailing slash; https required except on loopback (the emulator)."""
    if not endpoint:
        raise UsageError(
            f"no Foundry project endpoint: pass --endpoint or set {ENDPOINT_ENV} "
            "(https://<account>.services.ai.azure.com/api/projects/<project>)"
        )
    problem = endpoint_problem(endpoint, "the project endpoint")
    if problem:
        raise UsageError(problem)
    parts = urlsplit(endpoint.strip())
    host = parts.hostname or ""
    secure = parts.scheme == "https" or (parts.scheme == "http" and is_loopback(host))
    if not (host and secure):
        raise UsageError(
            "the project endpoint must be an https URL (plain http only on 127.0.0.1/localhost): "
            f"{redact(shown_url(endpoint))!r}"
        )
    return endpoint.strip().rstrip("/")


class FoundryClient:
    """Foundry evaluation client: evals, runs, output items and dataset upload.

    :param endpoint: project endpoint, ``https://<account>.services.ai.azure.com/api/projects/<project>``
    :param credential: anything with ``get_token(*scopes)`` (an azure-identity credential)
    :param transport: an httpx transport (``None``: the network)
    :param api_version: ``None`` for the ``/openai/v1`` routes, or an ``api-version`` for the older form
    :param max_retries: retries per request for 408/409/429/5xx and connection errors
    :param sleep: called for every wait (retries and polling); tests pass a no-op
    :param request_deadline: seconds from sending a request to the last byte of its answer: an answer still
        arriving past it (a server trickling bytes, which each read's ``timeout`` never cuts off) fails the
        attempt as a ``ReadTimeout`` (retried like one)
    """

    def __init__(
        self,
        endpoint: str,
        credential: TokenCredential,
        *,
        transport: httpx.BaseTransport | None = None,
        api_version: str | None = None,
        max_retries: int = 6,
        retry_policy: RetryPolicy | None = None,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        sleep: Callable[[float], None] = time.sleep,
        poll_interval: float = 2.0,
        max_poll_interval: float = 30.0,
        datasets_api_version: str = "v1",
        scope: str = FOUNDRY_SCOPE,
        request_deadline: float = DEFAULT_REQUEST_DEADLINE,
    ) -> None:
        self.endpoint = validate_endpoint(endpoint)
        self.request_deadline = request_deadline
        _guard_httpx_logger()
        self.api_version = api_version
        self.datasets_api_version = datasets_api_version
        self.sleep = sleep
        self.poll_interval = poll_interval
        self.max_poll_interval = max_poll_interval
        self.retry = retry_policy or RetryPolicy(max_retries=max_retries, sleep=sleep)
        self._tokens = TokenProvider(credential, scope)
        self._http = httpx.Client(
            transport=transport,
            timeout=timeout,
            headers={
                "User-Agent": f"foundry-bridge/{__version__} httpx/{httpx.__version__}",
                "Accept": "application/json",
            },
            follow_redirects=False,
        )
        if api_version is None:
            self._evals_base = f"{self.endpoint}/openai/v1/evals"
            self._evals_params: dict[str, str] = {}
        else:
            self._evals_base = f"{self.endpoint}/openai/evals"
            self._evals_params = {"api-version": api_version}
        self.requests_sent = 0

    # -- plumbing ------------------------------------------------------------------------------------------------
    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> FoundryClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"FoundryClient(endpoint={self.endpoint!r}, api_version={self.api_version!r})"

    def _request(
        self,
        method: str,
        url: str,
        *,
        json: Any = None,
        content: bytes | None = None,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        authenticated: bool = True,
        accept_statuses: frozenset[int] = frozenset(),
        retry_conflict: bool = True,
    ) -> httpx.Response:
        """Send with auth and retries; return the response (2xx or an ``accept_statuses`` one) or raise."""
        body = content
        hdrs = dict(headers or {})
        if json is not None:
            body = orjson.dumps(json)
            hdrs.setdefault("Content-Type", "application/json")
        hdrs["x-ms-client-request-id"] = str(uuid.uuid4())
        attempt = 0
        refreshed = False
        shown = redact(str(httpx.URL(url).copy_with(query=None)))
        while True:
            if authenticated:
                hdrs["Authorization"] = self._tokens.authorization()
            request = self._http.build_request(method, url, content=body, params=params, headers=hdrs)
            started = time.monotonic()
            try:
                response = self._read_within(self._http.send(request, stream=True), started + self.request_deadline)
            except httpx.TransportError as exc:
                if attempt >= self.retry.max_retries:
                    raise request_error(request, exc, attempts=attempt + 1) from exc
                self._pause(f"{method} {shown}: {type(exc).__name__}", attempt, self.retry.backoff(attempt))
                attempt += 1
                continue
            finally:
                self.requests_sent += 1
            status = response.status_code
            logger.info("%s %s -> %d (%.3f s)", method, shown, status, time.monotonic() - started)
            if status < 400 or status in accept_statuses:
                return response
            if status == 401 and authenticated and not refreshed:
                # the token may have been revoked or rotated early: ask the credential once more
                refreshed = True
                self._tokens.token(force_refresh=True)
                continue
            self._pause(f"{method} {shown} -> {status}", attempt, self._retry_delay(response, attempt, retry_conflict))
            attempt += 1

    @staticmethod
    def _read_within(response: httpx.Response, deadline: float) -> httpx.Response:
        """``response`` (sent with ``stream=True``) read whole, or ``httpx.ReadTimeout`` when bytes still arrive
        after ``deadline`` (``time.monotonic``): a total bound on the answer, where httpx bounds each read alone.
        An answer that has nothing more to send is never cut off (a large upload's empty 201)."""
        try:
            response.content  # noqa: B018 - read already (an in-process transport): nothing can trickle
            return response
        except httpx.ResponseNotRead:
            pass
        chunks = []
        try:
            for chunk in response.iter_raw():
                if time.monotonic() > deadline:
                    raise httpx.ReadTimeout(
                        "the answer was still arriving at the request's deadline", request=response.request
                    )
                chunks.append(chunk)
        finally:
            response.close()
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            content=b"".join(chunks),
            request=response.request,
            extensions=response.extensions,
        )

    def _retry_delay(self, response: httpx.Response, attempt: int, retry_conflict: bool) -> float:
        """How long to wait before retrying a refused request (its ``Retry-After``, else the backoff); raises the
        response's error when it is not retried: not retryable, retries used up, or a wait beyond
        ``max_retry_after``."""
        status = response.status_code
        if not (self.retry.should_retry_status(status) and (status != 409 or retry_conflict)):
            raise self._status_error(response, attempts=attempt + 1)
        if attempt >= self.retry.max_retries:
            raise self._status_error(
                response, attempts=attempt + 1, note=f"gave up after {self.retry.max_retries} retries"
            )
        wait = parse_retry_after(response.headers)
        if wait is not None and wait > self.retry.max_retry_after:
            raise self._status_error(
                response,
                attempts=attempt + 1,
                note=f"the service asked to retry after {wait:.0f} s, longer than the "
                f"{self.retry.max_retry_after:.0f} s this client waits; try again later",
            )
        return wait if wait is not None else self.retry.backoff(attempt)

    def _pause(self, what: str, attempt: int, delay: float) -> None:
        logger.warning("%s; retry %d/%d in %.2f s", what, attempt + 1, self.retry.max_retries, delay)
        self.retry.sleep(delay)

    @staticmethod
    def _status_error(response: httpx.Response, *, attempts: int, note: str = "") -> Exception:
        response.read()
        # not chained to httpx's HTTPStatusError: its message holds the full URL, which may carry a SAS signature
        return http_error(response, attempts=attempts, note=note)

    @staticmethod
    def _json(response: httpx.Response) -> Any:
        return orjson.loads(response.content) if response.content else None

    @classmethod
    def _parse(cls, model: type[_M], response: httpx.Response) -> _M:
        """Validate a response body as ``model``; a malformed body is a ``DecodeError`` with a redacted message.

        pydantic's ``ValidationError`` echoes the input (a SAS URL, say), so it is neither raised nor chained.
        """
        try:
            return model.model_validate(cls._json(response))
        except (ValidationError, orjson.JSONDecodeError) as exc:
            problems = exc.errors(include_input=False) if isinstance(exc, ValidationError) else []
            detail = "; ".join(".".join(str(p) for p in e["loc"]) + ": " + e["msg"] for e in problems[:5])
            request = response.request
            url = redact(str(request.url.copy_with(query=None)))
            err = DecodeError(message=f"{request.method} {url}: unexpected response body ({detail or 'not JSON'})")
        raise err

    def _evals_url(self, *parts: str) -> str:
        return "/".join([self._evals_base, *(quote(p, safe="") for p in parts)])

    def _params(self, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
        params = dict(self._evals_params)
        if extra:
            params.update({k: v for k, v in extra.items() if v is not None})
        return params

    # -- evals ---------------------------------------------------------------------------------------------------
    def create_eval(self, body: Mapping[str, Any]) -> Eval:
        """``POST /evals`` with an eval-create body (``data_source_config``, ``testing_criteria``, ``name``)."""
        response = self._request("POST", self._evals_url(), json=dict(body), params=self._params())
        return self._parse(Eval, response)

    def get_eval(self, eval_id: str) -> Eval:
        response = self._request("GET", self._evals_url(eval_id), params=self._params())
        return self._parse(Eval, response)

    # -- runs ----------------------------------------------------------------------------------------------------
    def create_run(
        self,
        eval_id: str,
        data_source: Mapping[str, Any],
        *,
        name: str | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> EvalRun:
        """``POST /evals/{eval_id}/runs``; returns the run as created (usually ``in_progress``)."""
        body: dict[str, Any] = {"data_source": dict(data_source)}
        if metadata:
            body["metadata"] = dict(metadata)
        if name:
            body["name"] = name
        response = self._request("POST", self._evals_url(eval_id, "runs"), json=body, params=self._params())
        return self._parse(EvalRun, response)

    def get_run(self, eval_id: str, run_id: str) -> EvalRun:
        response = self._request("GET", self._evals_url(eval_id, "runs", run_id), params=self._params())
        return self._parse(EvalRun, response)

    def begin_run(
        self,
        eval_id: str,
        data_source: Mapping[str, Any],
        *,
        name: str | None = None,
        metadata: Mapping[str, str] | None = None,
        progress: Callable[[str, int, int | None], None] | None = None,
    ) -> RunPoller:
        """Create a run and return a poller for it (save ``poller.continuation_token()`` before waiting)."""
        run = self.create_run(eval_id, data_source, name=name, metadata=metadata)
        return self.run_poller(eval_id, run.id, run=run, progress=progress)

    def run_poller(
        self,
        eval_id: str,
        run_id: str,
        *,
        run: EvalRun | None = None,
        progress: Callable[[str, int, int | None], None] | None = None,
    ) -> RunPoller:
        """A poller for an existing run."""
        return RunPoller(
            self,
            eval_id,
            run_id,
            run=run,
            interval=self.poll_interval,
            max_interval=self.max_poll_interval,
            progress=progress,
        )

    def list_output_items(
        self, eval_id: str, run_id: str, *, page_size: int = DEFAULT_PAGE_SIZE
    ) -> ItemPaged[OutputItem]:
        """Every output item of a run, page by page (``after`` = id of the last item of the previous page)."""
        raw = self.list_output_items_raw(eval_id, run_id, page_size=page_size)
        return ItemPaged(raw.fetch, lambda page: _typed(raw.extract(page)))

    def list_output_items_raw(
        self, eval_id: str, run_id: str, *, page_size: int = DEFAULT_PAGE_SIZE
    ) -> ItemPaged[dict[str, Any]]:
        """As ``list_output_items``, with the items as the service sent them (dicts: fast, lossless)."""
        url = self._evals_url(eval_id, "runs", run_id, "output_items")

        def fetch(after: str | None) -> Any:
            params = self._params({"limit": page_size, "after": after})
            page = self._json(self._request("GET", url, params=params))
            if not isinstance(page, dict) or not isinstance(page.get("data", []), list):
                raise HttpResponseError(message=f"GET {url}: not an output-item page: {redact(str(page)[:200])}")
            return page

        def extract(page: dict[str, Any]) -> tuple[str | None, list[dict[str, Any]]]:
            data = page.get("data") or []
            if not page.get("has_more") or not data:
                return None, data
            last = data[-1].get("id") if isinstance(data[-1], dict) else None
            if last is None:
                raise HttpResponseError(message=f"GET {url}: has_more is true but the last item has no id")
            return str(last), data

        return ItemPaged(fetch, extract)

    # -- evaluator catalog ---------------------------------------------------------------------------------------
    def list_evaluators(self, evaluator_type: str = "builtin") -> ItemPaged[dict[str, Any]]:
        """``GET {endpoint}/evaluators?type=...&api-version=v1``: every registered evaluator version, as sent.

        Paged by ``continuationToken`` (as recorded, ``eval_catalog.json``): a page may be empty and still carry a
        token (the first one was), so paging stops only when a page has none; ``nextLink`` is not followed (the
        recorded one names another host)."""
        url = f"{self.endpoint}/evaluators"

        def fetch(token: str | None) -> Any:
            params = {"api-version": self.datasets_api_version, "type": evaluator_type, "continuationToken": token}
            page = self._json(self._request("GET", url, params={k: v for k, v in params.items() if v is not None}))
            if not isinstance(page, dict) or not isinstance(page.get("value", []), list):
                raise HttpResponseError(message=f"GET {url}: not an evaluator page: {redact(str(page)[:200])}")
            return page

        def extract(page: dict[str, Any]) -> tuple[str | None, list[dict[str, Any]]]:
            token = page.get("continuationToken")
            return (str(token) if token else None), [v for v in page.get("value") or [] if isinstance(v, dict)]

        return ItemPaged(fetch, extract)

    # -- datasets ------------------------------------------------------------------------------------------------
    def _datasets_url(self, name: str, version: str, suffix: str = "") -> str:
        return f"{self.endpoint}/datasets/{quote(name, safe='')}/versions/{quote(version, safe='')}{suffix}"

    def upload_dataset(
        self,
        name: str,
        version: str,
        data: bytes,
        *,
        filename: str = "data.jsonl",
        connection_name: str | None = None,
    ) -> DatasetVersion:
        """Upload ``data`` as a ``uri_file`` dataset version; its ``id`` goes into a run's ``file_id`` source.

        When the version exists already (HTTP 409 from startPendingUpload) it is fetched and returned, not
        uploaded again: name the version after the content (``FoundryBackend`` uses a hash of ``data``).

        startPendingUpload → blob PUT to the SAS URL (no bearer token: the SAS is the credential) → PATCH the
        version with the blob's URL.
        """
        params = {"api-version": self.datasets_api_version}
        body: dict[str, Any] = {"pendingUploadType": "BlobReference"}
        if connection_name:
            body["connectionName"] = connection_name
        response = self._request(
            "POST",
            self._datasets_url(name, version, "/startPendingUpload"),
            json=body,
            params=params,
            accept_statuses=frozenset({409}),
            retry_conflict=False,
        )
        if response.status_code == 409:
            # the version exists already: callers derive the version from the content, so it holds these bytes
            logger.info("dataset %s version %s exists already: reusing it", name, version)
            return self.get_dataset(name, version)
        pending = self._parse(PendingUpload, response)
        sas = pending.blob_reference.sas_uri
        if not sas:
            raise http_error(response, note="startPendingUpload returned no SAS URI")
        blob_url = self._put_blob(sas, filename, data)
        response = self._request(
            "PATCH",
            self._datasets_url(name, version),
            content=orjson.dumps({"dataUri": blob_url, "type": "uri_file"}),
            headers={"Content-Type": "application/merge-patch+json"},
            params=params,
        )
        return self._parse(DatasetVersion, response)

    def _put_blob(self, sas: str, filename: str, data: bytes) -> str:
        """PUT ``data`` as ``filename`` into the SAS container (no bearer token: the SAS is the credential); the
        blob's URL without the SAS query."""
        container, _, query = sas.partition("?")
        blob_url = f"{container.rstrip('/')}/{quote(filename)}"
        self._request(
            "PUT",
            blob_url + (f"?{query}" if query else ""),
            content=data,
            headers={
                "x-ms-blob-type": "BlockBlob",
                "x-ms-version": "2025-01-05",
                "If-None-Match": "*",
                "Content-Type": "application/octet-stream",
            },
            authenticated=False,
            accept_statuses=frozenset({409}),  # already uploaded (same name, same content): fine
            retry_conflict=False,
        )
        return blob_url

    def get_dataset(self, name: str, version: str) -> DatasetVersion:
        params = {"api-version": self.datasets_api_version}
        response = self._request("GET", self._datasets_url(name, version), params=params)
        return self._parse(DatasetVersion, response)
