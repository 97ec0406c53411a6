"""The LLM judges on this machine: model configuration, evaluator construction, cache keys, result rows.

The judges are azure-ai-evaluation's own evaluator classes (named by the catalog's ``sdk_class``), pointed at an
Azure OpenAI deployment or at any OpenAI-compatible ``base_url``. azure-ai-evaluation is imported only inside
the functions that build evaluators.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import importlib.util
import inspect
import json
import math
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..catalog import EvaluatorSpec
from ..errors import redact, remember_secret
from ..results import ResultRow
from ..wire import finite_number, is_present, read_metric, to_number
from ._cache import CACHE_FORMAT

__all__ = [
    "JudgeConfig",
    "JudgeTimeout",
    "RequestLimits",
    "build_evaluator",
    "call_evaluator",
    "clean_output",
    "describe_exception",
    "evaluation_library_version",
    "judge_rows",
    "looks_like_azure",
    "output_failure",
    "prompt_fingerprint",
]

_AZURE_HOST_SUFFIXES = (".openai.azure.com", ".cognitiveservices.azure.com", ".services.ai.azure.com")
_PLACEHOLDER_KEY = "not-needed"  # OpenAI-compatible servers without auth still need a non-empty key
_DROPPED_PROPERTIES = ("sample_input", "sample_output")  # the inputs again; kept out of results and the cache
_MAX_ERROR_CHARS = 600


def looks_like_azure(endpoint: str) -> bool:
    """True when the host is an Azure OpenAI / AI Services host."""
    host = (urlsplit(endpoint).hostname or "").lower()
    return host.endswith(_AZURE_HOST_SUFFIXES)


@dataclass(frozen=True)
class JudgeConfig:
    """Where the judges run: an OpenAI-compatible ``base_url`` or an Azure OpenAI endpoint + deployment.

    ``model`` is the model name (OpenAI style) or the deployment name (Azure). The API key is read from the
    environment variable ``api_key_env`` when the model config is built; it never enters a cache key,
    a log line or the manifest.
    """

    endpoint: str
    model: str
    azure: bool
    api_key_env: str
    api_version: str | None = None

    def model_config(self) -> dict[str, Any]:
        """A fresh model-config dict (the library mutates the one it is given)."""
        key = os.environ.get(self.api_key_env) or None
        remember_secret(key)  # a judge that echoes the key back (HTTP 401) must not put it in an error text
        if self.azure:
            config: dict[str, Any] = {
                "type": "azure_openai",
                "azure_endpoint": self.endpoint,
                "azure_deployment": self.model,
            }
            if self.api_version:
                config["api_version"] = self.api_version
            if key:
                config["api_key"] = key
            return config
        return {"type": "openai", "base_url": self.endpoint, "model": self.model, "api_key": key or _PLACEHOLDER_KEY}

    def needs_credential(self) -> bool:
        """Azure without a key authenticates with an azure-identity token."""
        return self.azure and not os.environ.get(self.api_key_env)

    def identity(self) -> dict[str, Any]:
        """What identifies the judge in a cache key and the manifest (never the key itself)."""
        return {
            "api": "azure_openai" if self.azure else "openai",
            "endpoint": redact(self.endpoint),
            "model": self.model,
            "api_version": self.api_version if self.azure else None,
        }


def evaluation_library_version() -> str:
    """The installed azure-ai-evaluation version (read without importing the package)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("azure-ai-evaluation")
    except PackageNotFoundError:  # pragma: no cover - a hard dependency
        return "unknown"


def _evaluator_class(spec: EvaluatorSpec) -> type:
    import azure.ai.evaluation as aie  # heavy: ~2.5 s

    if not spec.sdk_class or not hasattr(aie, spec.sdk_class):
        raise LookupError(f"azure-ai-evaluation has no class {spec.sdk_class!r} for {spec.name}")
    return getattr(aie, spec.sdk_class)


@functools.lru_cache(maxsize=32)
def _class_folder_without_import(sdk_class: str) -> Path | None:
    """The folder of the module defining ``sdk_class`` inside azure-ai-evaluation, found by reading source text
    (importing the package costs ~2.5 s, which a fully cached re-run should not pay). None if not found."""
    try:
        found = importlib.util.find_spec("azure.ai.evaluation")
    except (ImportError, ValueError):
        return None
    if found is None or not found.origin:
        return None
    needle = re.compile(rf"^class {re.escape(sdk_class)}\b", re.MULTILINE)
    for source in sorted((Path(found.origin).parent / "_evaluators").glob("*/*.py")):
        try:
            if needle.search(source.read_text(encoding="utf-8", errors="replace")):
                return source.parent
        except OSError:
            continue
    return None


def prompt_fingerprint(spec: EvaluatorSpec) -> str:
    """SHA-256 over the ``.prompty`` files shipped beside the evaluator class (its prompt texts)."""
    folder = _class_folder_without_import(spec.sdk_class) if spec.sdk_class else None
    if folder is None:
        folder = Path(inspect.getfile(_evaluator_class(spec))).parent
    h = hashlib.sha256()
    for path in sorted(folder.glob("*.prompty")):
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


@contextlib.contextmanager
def _quiet_prompty_logging() -> Iterator[None]:
    """The library's prompty layer logs every retry and failure, with tracebacks, to *stdout*; its level is read
    from ``PF_LOGGING_LEVEL`` when an evaluator is built. Causes go into the result rows instead, so build
    evaluators with that level at CRITICAL unless the user set one."""
    if "PF_LOGGING_LEVEL" in os.environ:
        yield
        return
    os.environ["PF_LOGGING_LEVEL"] = "CRITICAL"
    try:
        yield
    finally:
        os.environ.pop("PF_LOGGING_LEVEL", None)


def build_evaluator(
    spec: EvaluatorSpec, judge: JudgeConfig, *, threshold: Any, with_query: bool, credential: Any
) -> Any:
    """An evaluator instance for one criterion (one per query variant: GroundednessEvaluator switches its prompt
    for good after a call with a query, so rows with and without a query get separate instances)."""
    cls = _evaluator_class(spec)
    kwargs: dict[str, Any] = {"threshold": threshold}
    if credential is not None:
        kwargs["credential"] = credential
    with _quiet_prompty_logging():
        evaluator = cls(judge.model_config(), **kwargs)
        switch = getattr(evaluator, "_ensure_query_prompty_loaded", None)
        if with_query and callable(switch):
            switch()  # what the evaluator's own __call__ does with a query; done once, up front
    return evaluator


@dataclass(frozen=True)
class RequestLimits:
    """How long one judge HTTP request may take and how often a failed one is tried again.

    azure-ai-evaluation's prompty layer turns the OpenAI client's own retries off and runs a loop of its own:
    10 retries, waits of ``min(60, 2 + 2**n)`` s, and any ``Retry-After`` obeyed as is (a judge answering
    ``Retry-After: 86400`` would hold a row for a day), every request with the client's 600 s default. ``bound``
    sets that loop to 0 retries and hands the OpenAI client ``retries`` and a ``timeout`` per request instead: the
    client retries 408/409/429/5xx, timeouts and connection errors with exponential backoff (0.5 s doubling to
    8 s, jittered), obeys ``Retry-After`` up to 120 s and gives up at once on a longer one. One call therefore
    ends within ``(retries + 1) * timeout + retries * 120`` seconds (``worst_case``).
    """

    timeout: float = 60.0
    retries: int = 3

    @property
    def worst_case(self) -> float:
        """The longest one judge call can last, every retry and ``Retry-After`` wait included."""
        return (self.retries + 1) * self.timeout + self.retries * _MAX_RETRY_AFTER

    def bound(self, evaluator: Any) -> None:
        """Apply the limits to ``evaluator``'s current prompty flow (again after a flow is reloaded: idempotent)."""
        evaluator._LLM_CALL_TIMEOUT = self.timeout  # the per-request timeout the library hands the OpenAI client
        flow = getattr(evaluator, "_flow", None)
        send = getattr(flow, "_send_with_retries", None)
        if flow is None or not callable(send) or getattr(send, "_bounded_by", None) == self:
            return
        retries, seconds = self.retries, self.timeout

        async def send_with_client_retries(api_client: Any, params: Any, timeout: Any, **_: Any) -> Any:
            _total_deadline(getattr(api_client, "_client", None), seconds)  # the client built for this call
            return await send(api_client.with_options(max_retries=retries), params, timeout, max_retries=0)

        send_with_client_retries._bounded_by = self  # type: ignore[attr-defined]
        flow._send_with_retries = send_with_client_retries


_MAX_RETRY_AFTER = 120.0  # openai's MAX_RETRY_AFTER_DELAY: a longer Retry-After is not waited for


def _total_deadline(http: Any, seconds: float) -> None:
    """Make every request of ``http`` (the OpenAI client's ``httpx.AsyncClient``) end within ``seconds`` in all:
    connect, send and every read of the answer. httpx's timeouts bound each read alone, so a judge sending one
    byte every half second would hold a call forever. Past the deadline the request fails with
    ``httpx.ReadTimeout``, which the OpenAI client retries and reports (``APITimeoutError``) like any timeout."""
    send = getattr(http, "send", None)
    if send is None or getattr(send, "_deadline", None) == seconds:
        return
    import httpx

    async def send_by_deadline(request: Any, **kwargs: Any) -> Any:
        try:
            return await asyncio.wait_for(send(request, **kwargs), seconds)
        except TimeoutError:
            raise httpx.ReadTimeout(f"no complete answer within {seconds:g} s", request=request) from None

    send_by_deadline._deadline = seconds  # type: ignore[attr-defined]
    http.send = send_by_deadline


async def _call_async(evaluator: Any, inputs: dict[str, Any], timeout: float | None) -> dict[str, Any]:
    call = evaluator._to_async()
    if timeout is None:
        return await call(**inputs)
    return await asyncio.wait_for(call(**inputs), timeout)


def call_evaluator(
    evaluator: Any, inputs: dict[str, Any], timeout: float | None, limits: RequestLimits | None = None
) -> dict[str, Any]:
    """One evaluator call in the current (worker) thread: each request bounded by ``limits``, the whole call by
    ``timeout`` seconds (retries included). Uses the evaluator's async entry point so a deadline really cancels
    the request."""
    if limits is not None:
        limits.bound(evaluator)
    if not callable(getattr(evaluator, "_to_async", None)):  # pragma: no cover - older/newer library shapes
        return evaluator(**inputs)
    return asyncio.run(_call_async(evaluator, inputs, timeout))


class JudgeTimeout(Exception):
    """The judge call did not finish within the backend's ``timeout``."""


def _shorten(text: str) -> str:
    text = " ".join(redact(text).split())
    return text if len(text) <= _MAX_ERROR_CHARS else text[: _MAX_ERROR_CHARS - 1] + "…"


def describe_exception(
    exc: BaseException, *, timeout: float | None = None, request_timeout: float | None = None
) -> str:
    """``CODE: cause`` for an exception raised by one judge call (see docs/local.md for the codes); ``timeout``
    bounds the whole call, ``request_timeout`` each request."""
    if isinstance(exc, TimeoutError | asyncio.TimeoutError | JudgeTimeout):
        limit = f" within {timeout:g} s" if timeout is not None else ""
        return f"JUDGE_TIMEOUT: no answer from the judge{limit} (retries included)"
    if isinstance(exc, json.JSONDecodeError):
        return f"JUDGE_UNPARSEABLE: the judge's answer is not JSON ({exc.msg} at char {exc.pos})"
    chain: list[BaseException] = [exc]  # WrappedOpenAIError -> openai error -> transport error -> ...
    while chain[-1].__cause__ is not None and len(chain) < 6:
        chain.append(chain[-1].__cause__)
    for cause in chain:
        status = getattr(getattr(cause, "response", None), "status_code", None)
        name = type(cause).__name__
        if isinstance(status, int):
            return f"JUDGE_HTTP_ERROR: HTTP {status} from the judge ({name}: {_shorten(str(cause))})"
        if name == "APITimeoutError":
            limit = f": no complete answer within {request_timeout:g} s" if request_timeout is not None else ""
            return f"JUDGE_TIMEOUT: the request timed out{limit} ({_shorten(str(cause))})"
        if name == "APIConnectionError" or isinstance(cause, ConnectionError):
            detail = f"{name}: {_shorten(str(cause))}"
            if cause.__cause__ is not None:
                detail += f"; {type(cause.__cause__).__name__}: {_shorten(str(cause.__cause__))}"
            return f"JUDGE_UNREACHABLE: could not connect to the judge ({detail})"
    message = str(getattr(exc, "message", "") or exc)
    if "invalid output" in message.lower():
        return f"JUDGE_UNPARSEABLE: {_shorten(message)}"
    if isinstance(exc, TypeError | ValueError) and "float" in message:
        return f"JUDGE_UNPARSEABLE: the judge's score could not be read ({type(exc).__name__}: {_shorten(message)})"
    return f"EVALUATOR_ERROR: {type(exc).__name__}: {_shorten(message)}"


def clean_output(output: dict[str, Any]) -> dict[str, Any]:
    """The evaluator's output without the bulky ``sample_input``/``sample_output`` properties, JSON round-tripped
    (so a fresh answer and a cached one normalize to identical rows)."""
    out = dict(output)
    for key, value in output.items():
        if key.endswith("_properties") and isinstance(value, dict):
            out[key] = {k: v for k, v in value.items() if k not in _DROPPED_PROPERTIES}
    return json.loads(json.dumps(out, default=str))


def output_failure(spec: EvaluatorSpec, output: dict[str, Any]) -> str | None:
    """Why an evaluator output cannot be used (``CODE: cause``), or None when every metric has a finite score."""
    for metric in spec.metrics:
        m = metric.name
        status = output.get(f"{m}_status")
        if status == "skipped" or output.get(f"{m}_result") == "not_applicable":
            return f"JUDGE_SKIPPED: {_shorten(str(output.get(f'{m}_reason') or 'the judge marked the row skipped'))}"
        score = to_number(output.get(m))  # wire's number rule: a bool is not a score
        if score is None:
            return f"JUDGE_NO_SCORE: the judge's answer had no {m} score (result {output.get(f'{m}_result')!r})"
        if not math.isfinite(score):
            return f"JUDGE_NO_SCORE: the judge's {m} score is not a finite number ({output.get(m)!r})"
    return None


def judge_rows(
    spec: EvaluatorSpec,
    *,
    row: int,
    query_id: str | None,
    criterion: str,
    threshold: Any,
    output: dict[str, Any] | None,
    error: str | None,
) -> list[ResultRow]:
    """One ResultRow per metric of a judge (one, for the four RAG judges); ``error`` wins over ``output``."""
    rows = []
    thr = finite_number(threshold)
    for metric in spec.metrics:
        m = metric.name
        base: dict[str, Any] = {
            "row": row,
            "query_id": query_id,
            "criterion": criterion,
            "evaluator": spec.name,
            "metric": m,
            "threshold": thr,
        }
        if output is None or error is not None:
            reason = (output or {}).get(f"{m}_reason") or None
            rows.append(ResultRow(**base, reason=reason, error=error or "EVALUATOR_ERROR: no output"))
            continue
        failure = output_failure(spec, output)
        reason = output.get(f"{m}_reason") or None
        if failure is not None:
            rows.append(ResultRow(**base, reason=reason, error=failure))
            continue
        r = read_metric(output, m, metric)  # the same reading (and range) as document retrieval's and the cloud's
        if r.error is not None:
            rows.append(ResultRow(**base, reason=reason, error=r.error))
            continue
        props = output.get(f"{m}_properties")
        properties = dict(props) if isinstance(props, dict) else {}
        properties["status"] = output.get(f"{m}_status", "completed")
        base["threshold"] = r.threshold if f"{m}_threshold" in output else thr
        fields = {"score": r.score, "label": r.label, "passed": r.passed, "reason": reason}
        rows.append(ResultRow(**base, **fields, properties=properties))
    return rows


def call_inputs(spec: EvaluatorSpec, inputs: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """The inputs one judge call sends, and whether it is the with-query form: an optional ``query`` that is
    absent is dropped (groundedness is then judged from context and response only, as the library does)."""
    query_is_optional = "query" in spec.input_names and "query" not in spec.required_inputs
    with_query = query_is_optional and is_present(inputs.get("query"))
    if query_is_optional and not with_query:
        inputs = {k: v for k, v in inputs.items() if k != "query"}
    return inputs, with_query


def judge_key_parts(
    judge: JudgeConfig,
    spec: EvaluatorSpec,
    library: str,
    prompt: str,
    threshold: Any,
    inputs: dict[str, Any],
    repeat: int = 1,
) -> dict[str, Any]:
    """Everything that decides a judge's answer, hashed into its response-cache key (``_cache.cache_key``).

    ``repeat`` (``run --repeats K``: the K-th time the same row is judged) is part of the key from 2 on, so each
    repeat is its own answer and a cached re-run of all K is still free; repeat 1 keeps the plain key (caches made
    before repeats existed still answer it)."""
    parts = {
        "cache_format": CACHE_FORMAT,
        "judge": judge.identity(),
        "evaluator": spec.name,
        "sdk_class": spec.sdk_class,
        "library": library,
        "prompt_sha256": prompt,
        "params": {"threshold": threshold},
        "inputs": inputs,
    }
    if repeat > 1:
        parts["repeat"] = repeat
    return parts
