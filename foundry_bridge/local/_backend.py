"""``LocalBackend``: run a plan's criteria on this machine, with a disk cache of judge answers.

Per criterion, the catalog decides how (never an evaluator name written here):

* the evaluator whose ``sdk_class`` is ``DocumentRetrievalEvaluator`` → the project's local metrics;
* an evaluator that needs a model deployment → azure-ai-evaluation's ``sdk_class`` as an LLM judge, pointed
  at ``judge_endpoint`` / ``judge_model``;
* anything else (a service-side evaluator such as groundedness_pro) → one errored row per dataset row
  (``UNSUPPORTED_LOCALLY``), so the rest of the run still happens and the gap is visible.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..catalog import CATALOG, EvaluatorSpec
from ..errors import UsageError, redact
from ..mapping.plan import CriterionPlan, Plan
from ..results import ResultRow
from ..runner_protocol import Capabilities, RunContext
from ._cache import CACHE_FORMAT, ResponseCache, cache_key, default_cache_dir
from ._docret import IMPLEMENTATION as DOCRET_IMPLEMENTATION
from ._docret import compute_document_retrieval, docret_rows
from ._judges import (
    JudgeConfig,
    build_evaluator,
    call_evaluator,
    clean_output,
    describe_exception,
    evaluation_library_version,
    judge_rows,
    looks_like_azure,
    output_failure,
    prompt_fingerprint,
)

__all__ = ["LocalBackend", "resolve_inputs"]

_TEMPLATE = re.compile(r"\{\{\s*item\.([^{}\s]+)\s*\}\}")
_LOCAL_METRICS_CLASS = "DocumentRetrievalEvaluator"
_MISSING = object()


def _lookup(item: dict[str, Any], dotted: str) -> Any:
    value: Any = item
    for part in dotted.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return _MISSING
    return value


def resolve_inputs(data_mapping: dict[str, str], item: dict[str, Any]) -> dict[str, Any]:
    """Evaluator inputs for one run item: ``{{item.a.b}}`` alone takes the value as is (lists stay lists);
    templates inside longer text are replaced by the value's text. An input whose field is absent or null is
    left out (the caller decides whether that input was required)."""
    out: dict[str, Any] = {}
    for name, template in data_mapping.items():
        if not isinstance(template, str):
            out[name] = template
            continue
        whole = _TEMPLATE.fullmatch(template.strip())
        if whole:
            value = _lookup(item, whole.group(1))
            if value is not _MISSING and value is not None:
                out[name] = value
            continue
        missing = False

        def substitute(match: re.Match[str]) -> str:
            nonlocal missing
            value = _lookup(item, match.group(1))
            if value is _MISSING or value is None:
                missing = True
                return ""
            return value if isinstance(value, str) else str(value)

        text = _TEMPLATE.sub(substitute, template)
        if not missing:
            out[name] = text
    return out


def _present(value: Any) -> bool:
    """Null and blank text are absent; an empty list is a value (no documents retrieved is a result)."""
    return value is not None and not (isinstance(value, str) and not value.strip())


def _missing_input_error(spec: EvaluatorSpec, inputs: dict[str, Any]) -> str | None:
    """``MISSING_INPUT: ...`` when no input group of the evaluator is complete for this row."""
    groups = spec.input_groups or (tuple(spec.required_inputs),)
    for group in groups:
        if all(_present(inputs.get(name)) for name in group):
            return None
    wanted = " or ".join("+".join(g) for g in groups)
    have = ", ".join(sorted(k for k, v in inputs.items() if _present(v))) or "none"
    return f"MISSING_INPUT: {spec.name} needs {wanted}; this row has {have}"


@dataclass
class _JudgeTask:
    row: int
    criterion: int
    inputs: dict[str, Any]
    with_query: bool
    key: str = ""
    key_parts: dict[str, Any] = field(default_factory=dict)
    output: dict[str, Any] | None = None
    error: str | None = None


class LocalBackend:
    """Run the plan's evaluators locally: document retrieval with local metrics, the LLM judges through
    azure-ai-evaluation against ``judge_endpoint`` (any OpenAI-compatible base URL, or Azure OpenAI).

    ``judge_model`` is the model (OpenAI style) or deployment (Azure); None → each criterion's
    ``deployment_name`` init parameter. ``azure`` None → detected from the endpoint's host. The API key comes
    from the environment variable ``api_key_env`` (default ``AZURE_OPENAI_API_KEY`` for Azure, else
    ``OPENAI_API_KEY``); Azure without a key authenticates with ``credential`` or ``DefaultAzureCredential``.
    Judge answers are cached in ``cache_dir`` (default ``~/.cache/foundry_bridge/judge``) unless
    ``use_cache=False``; entries older than ``cache_ttl`` seconds are ignored. ``concurrency`` judge calls run
    at once; ``timeout`` bounds one call, retries included (None: the library's own limits).
    """

    name = "local"

    def __init__(
        self,
        judge_endpoint: str | None = None,
        judge_model: str | None = None,
        *,
        cache_dir: str | Path | None = None,
        use_cache: bool = True,
        cache_ttl: float | None = None,
        concurrency: int = 4,
        api_key_env: str | None = None,
        azure: bool | None = None,
        api_version: str | None = None,
        timeout: float | None = None,
        credential: Any = None,
    ) -> None:
        if concurrency < 1:
            raise UsageError("concurrency must be at least 1")
        if timeout is not None and timeout <= 0:
            raise UsageError("timeout must be a positive number of seconds")
        if cache_ttl is not None and cache_ttl <= 0:
            raise UsageError("cache TTL must be a positive number of seconds")
        self.judge_endpoint = judge_endpoint.rstrip("/") if judge_endpoint else None
        self.judge_model = judge_model
        self.azure = azure if azure is not None else bool(judge_endpoint and looks_like_azure(judge_endpoint))
        self.api_key_env = api_key_env or ("AZURE_OPENAI_API_KEY" if self.azure else "OPENAI_API_KEY")
        self.api_version = api_version
        self.use_cache = use_cache
        self.cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self.cache_ttl = cache_ttl
        self.concurrency = concurrency
        self.timeout = timeout
        self.credential = credential
        self.stats: dict[str, int] = {}
        self._docret_impl: str | None = None

    def __repr__(self) -> str:
        endpoint = redact(self.judge_endpoint) if self.judge_endpoint else None
        return (
            f"LocalBackend(judge_endpoint={endpoint!r}, judge_model={self.judge_model!r}, use_cache={self.use_cache})"
        )

    @property
    def identity(self) -> dict[str, Any]:
        """The judge that answers (endpoint and model): part of the run-reuse check, never a key."""
        return {
            "judge_endpoint": redact(self.judge_endpoint) if self.judge_endpoint else None,
            "judge_model": self.judge_model,
            "azure": self.azure,
            "api_version": self.api_version,
        }

    @property
    def capabilities(self) -> Capabilities:
        """Nothing lives on a service: a resume anywhere judges again what the response cache does not hold."""
        return Capabilities()

    # --- planning ----------------------------------------------------------------------------------------------
    def _judge_for(self, crit: CriterionPlan) -> JudgeConfig:
        model = self.judge_model or crit.init.get("deployment_name")
        if not self.judge_endpoint:
            raise UsageError(
                f"criterion {crit.name!r} ({crit.evaluator}) needs a judge model: pass --judge-endpoint "
                "(an OpenAI-compatible base URL or an Azure OpenAI endpoint)"
            )
        if not model or not isinstance(model, str):
            raise UsageError(
                f"criterion {crit.name!r} has no deployment_name and no --judge-model was given: name the judge model"
            )
        return JudgeConfig(
            endpoint=self.judge_endpoint,
            model=model,
            azure=self.azure,
            api_key_env=self.api_key_env,
            api_version=self.api_version,
        )

    def _credential(self, judges: list[JudgeConfig]) -> Any:
        if self.credential is not None or not any(j.needs_credential() for j in judges):
            return self.credential
        from azure.identity import DefaultAzureCredential  # only for keyless Azure

        self.credential = DefaultAzureCredential()
        return self.credential

    def preflight(self, plan: Plan) -> None:
        """Raise ``UsageError`` now if the plan has an LLM judge and no judge endpoint/model is known (``execute``
        does the same check; a runner may call this before it creates a run folder)."""
        for crit in plan.criteria:
            spec = CATALOG.get(crit.evaluator)
            if spec is not None and spec.sdk_class != _LOCAL_METRICS_CLASS and spec.needs_deployment:
                self._judge_for(crit)

    # --- execution ---------------------------------------------------------------------------------------------
    def execute(self, ctx: RunContext) -> list[ResultRow]:
        """Every criterion on every item; one ResultRow per (row, criterion, metric), errors included."""
        plan = ctx.plan
        items = [entry.get("item", entry) for entry in plan.items]
        query_ids = [None if it.get("query_id") is None else str(it.get("query_id")) for it in items]
        n_rows, n_crit = len(items), len(plan.criteria)
        cells: list[list[list[ResultRow]]] = [[[] for _ in range(n_crit)] for _ in range(n_rows)]
        started = time.monotonic()

        judges: dict[int, JudgeConfig] = {}
        kinds: dict[int, str] = {}
        self._docret_impl = None
        for ci, crit in enumerate(plan.criteria):
            spec = CATALOG.get(crit.evaluator)
            if spec is None:
                kinds[ci] = "unknown"
            elif spec.sdk_class == _LOCAL_METRICS_CLASS:
                kinds[ci] = "metrics"
            elif spec.needs_deployment and spec.sdk_class:
                kinds[ci] = "judge"
                judges[ci] = self._judge_for(crit)  # fails up front: nothing to run without a judge
            else:
                kinds[ci] = "unsupported"

        for ci, crit in enumerate(plan.criteria):
            spec = CATALOG.get(crit.evaluator)
            if kinds[ci] == "unknown":
                err = f"UNKNOWN_EVALUATOR: {crit.evaluator!r} is not in the catalog; the local backend cannot run it"
                for r in range(n_rows):
                    cells[r][ci] = [_plain_error(r, query_ids[r], crit, crit.name, err)]
            elif kinds[ci] == "unsupported" and spec is not None:
                err = (
                    f"UNSUPPORTED_LOCALLY: {spec.name} is computed by a Foundry service "
                    f"({spec.sdk_class or 'no local class'}) and cannot run offline; use --backend cloud for it"
                )
                for r in range(n_rows):
                    cells[r][ci] = [_plain_error(r, query_ids[r], crit, spec.primary_metric, err)]
            elif kinds[ci] == "metrics" and spec is not None:
                self._run_metrics(spec, crit, ci, items, query_ids, cells)

        judge_stats = self._run_judges(ctx, judges, items, query_ids, cells)

        rows = [row for per_row in cells for per_crit in per_row for row in per_crit]
        errored = sum(1 for r in rows if r.error is not None)
        library = f"azure-ai-evaluation {evaluation_library_version()}"
        ctx.manifest["errored"] = errored
        ctx.manifest["evaluators"] = [
            {
                "name": c.name,
                "evaluator_name": c.evaluator,
                "local_class": CATALOG[c.evaluator].sdk_class if c.evaluator in CATALOG else None,
                "implementation": {"judge": library, "metrics": self._docret_impl}.get(kinds[ci]),
            }
            for ci, c in enumerate(plan.criteria)
        ]
        ctx.manifest["local"] = {
            "library": library,
            "document_retrieval": self._docret_impl,
            "judges": {plan.criteria[ci].name: judges[ci].identity() for ci in judges},
            "unsupported": [plan.criteria[ci].name for ci, k in kinds.items() if k in ("unsupported", "unknown")],
            "concurrency": self.concurrency,
            "timeout": self.timeout,
            "cache": {
                "enabled": self.use_cache,
                "dir": str(self.cache_dir) if self.use_cache else None,
                "ttl": self.cache_ttl,
                "format": CACHE_FORMAT,
            },
            **judge_stats,
            "errored_rows": errored,
            "seconds": round(time.monotonic() - started, 3),
        }
        self.stats = dict(judge_stats)
        return rows

    def _run_metrics(
        self,
        spec: EvaluatorSpec,
        crit: CriterionPlan,
        ci: int,
        items: list[dict[str, Any]],
        query_ids: list[str | None],
        cells: list[list[list[ResultRow]]],
    ) -> None:
        ready: list[int] = []
        payload: list[dict[str, Any]] = []
        for r, item in enumerate(items):
            inputs = resolve_inputs(crit.data_mapping, item)
            missing = _missing_input_error(spec, inputs)
            if missing:
                cells[r][ci] = docret_rows(
                    spec, row=r, query_id=query_ids[r], criterion=crit.name, output=None, error=missing
                )
                continue
            ready.append(r)
            payload.append({name: inputs[name] for name in spec.input_names if name in inputs})
        outputs: list[dict[str, Any] | str] = []
        if payload:
            outputs = compute_document_retrieval(spec, payload, dict(crit.init))
            self._docret_impl = DOCRET_IMPLEMENTATION
        for r, out in zip(ready, outputs, strict=True):
            if isinstance(out, dict):
                rows = docret_rows(spec, row=r, query_id=query_ids[r], criterion=crit.name, output=out, error=None)
            else:
                rows = docret_rows(spec, row=r, query_id=query_ids[r], criterion=crit.name, output=None, error=out)
            cells[r][ci] = rows

    def _run_judges(
        self,
        ctx: RunContext,
        judges: dict[int, JudgeConfig],
        items: list[dict[str, Any]],
        query_ids: list[str | None],
        cells: list[list[list[ResultRow]]],
    ) -> dict[str, int]:
        stats = {"judge_tasks": 0, "cache_hits": 0, "judge_calls": 0, "cache_stored": 0, "judge_errors": 0}
        if not judges:
            return stats
        plan = ctx.plan
        library = evaluation_library_version()
        cache = ResponseCache(self.cache_dir, ttl=self.cache_ttl) if self.use_cache else None
        tasks: list[_JudgeTask] = []
        thresholds: dict[int, Any] = {}
        prompts: dict[int, str] = {}
        for ci, judge in judges.items():
            crit = plan.criteria[ci]
            spec = CATALOG[crit.evaluator]
            thresholds[ci] = _threshold(spec, crit)
            try:
                prompts[ci] = prompt_fingerprint(spec)
            except (ImportError, LookupError) as exc:  # the installed library lacks this evaluator class
                err = f"UNSUPPORTED_LOCALLY: {redact(str(exc))}"
                for r in range(len(items)):
                    cells[r][ci] = judge_rows(
                        spec,
                        row=r,
                        query_id=query_ids[r],
                        criterion=crit.name,
                        threshold=thresholds[ci],
                        output=None,
                        error=err,
                    )
                continue
            query_is_optional = "query" in spec.input_names and "query" not in spec.required_inputs
            for r, item in enumerate(items):
                inputs = resolve_inputs(crit.data_mapping, item)
                inputs = {k: v for k, v in inputs.items() if k in spec.input_names}
                missing = _missing_input_error(spec, inputs)
                if missing:
                    cells[r][ci] = judge_rows(
                        spec,
                        row=r,
                        query_id=query_ids[r],
                        criterion=crit.name,
                        threshold=thresholds[ci],
                        output=None,
                        error=missing,
                    )
                    continue
                with_query = bool(inputs.get("query")) if query_is_optional else False
                if query_is_optional and not with_query:
                    inputs.pop("query", None)
                task = _JudgeTask(row=r, criterion=ci, inputs=inputs, with_query=with_query)
                task.key_parts = {
                    "cache_format": CACHE_FORMAT,
                    "judge": judge.identity(),
                    "evaluator": spec.name,
                    "sdk_class": spec.sdk_class,
                    "library": f"azure-ai-evaluation {library}",
                    "prompt_sha256": prompts[ci],
                    "params": {"threshold": thresholds[ci]},
                    "inputs": inputs,
                }
                task.key = cache_key(task.key_parts)
                tasks.append(task)

        total = len(tasks)
        stats["judge_tasks"] = total
        done = 0
        ctx.progress("judging", 0, total)

        # cache look-ups, and one call per distinct key
        pending: dict[str, list[_JudgeTask]] = {}
        for task in tasks:
            cached = cache.get(task.key) if cache is not None else None
            if cached is not None and output_failure(CATALOG[plan.criteria[task.criterion].evaluator], cached) is None:
                task.output = cached
                stats["cache_hits"] += 1
                done += 1
                continue
            group_key = task.key if cache is not None else f"{task.key}:{id(task)}"
            pending.setdefault(group_key, []).append(task)
        if done:
            ctx.progress("judging", done, total)

        if pending:
            needed = {(t[0].criterion, t[0].with_query) for t in pending.values()}
            credential = self._credential([judges[ci] for ci, _ in needed])
            evaluators: dict[tuple[int, bool], Any] = {}
            for ci, wq in sorted(needed):
                try:
                    evaluators[(ci, wq)] = build_evaluator(
                        CATALOG[plan.criteria[ci].evaluator],
                        judges[ci],
                        threshold=thresholds[ci],
                        with_query=wq,
                        credential=credential,
                    )
                except Exception as exc:  # e.g. a threshold the class rejects: that criterion's rows error
                    evaluators[(ci, wq)] = exc
            lock = threading.Lock()

            def work(group: list[_JudgeTask]) -> None:
                first = group[0]
                spec = CATALOG[plan.criteria[first.criterion].evaluator]
                evaluator = evaluators[(first.criterion, first.with_query)]
                try:
                    if isinstance(evaluator, Exception):
                        raise evaluator
                    output = clean_output(call_evaluator(evaluator, first.inputs, self.timeout))
                    error = None
                except Exception as exc:  # every failure becomes an errored row with its cause
                    output, error = None, describe_exception(exc, timeout=self.timeout)
                stored = False
                if error is None and output is not None and output_failure(spec, output) is None and cache is not None:
                    try:
                        cache.put(first.key, output, key_parts=first.key_parts)
                        stored = True
                    except OSError:  # a cache that cannot be written never fails the run
                        stored = False
                with lock:
                    stats["judge_calls"] += 1
                    stats["cache_stored"] += int(stored)
                for task in group:
                    task.output, task.error = output, error

            progress_done = done

            def advance(n: int) -> None:
                nonlocal progress_done
                progress_done += n
                ctx.progress("judging", progress_done, total)

            _run_pool(work, list(pending.values()), self.concurrency, advance)

        for task in tasks:
            crit = plan.criteria[task.criterion]
            spec = CATALOG[crit.evaluator]
            rows = judge_rows(
                spec,
                row=task.row,
                query_id=query_ids[task.row],
                criterion=crit.name,
                threshold=thresholds[task.criterion],
                output=task.output,
                error=task.error,
            )
            stats["judge_errors"] += sum(1 for r in rows if r.error is not None)
            cells[task.row][task.criterion] = rows
        ctx.progress("judging", total, total)
        return stats


def _run_pool(
    work: Callable[[list[_JudgeTask]], None],
    groups: list[list[_JudgeTask]],
    concurrency: int,
    on_done: Callable[[int], None],
) -> None:
    """Run ``work`` over ``groups`` with ``concurrency`` threads; ``on_done(n_tasks)`` after each group.

    On an interruption (Ctrl-C) queued calls are cancelled and this function returns at once; the calls already in
    flight (at most one per worker) still finish before the interpreter exits (Python joins pool threads at exit;
    a second Ctrl-C stops that wait). Every answer received is in the cache, so the next run continues from
    there."""
    pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="judge")
    try:
        futures: dict[Future[None], list[_JudgeTask]] = {pool.submit(work, g): g for g in groups}
        remaining = set(futures)
        while remaining:
            finished, remaining = wait(remaining, return_when=FIRST_COMPLETED)
            for fut in finished:
                fut.result()
                on_done(len(futures[fut]))
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def _threshold(spec: EvaluatorSpec, crit: CriterionPlan) -> Any:
    """The criterion's ``threshold`` init parameter, else the catalog default."""
    if "threshold" in crit.init and crit.init["threshold"] is not None:
        return crit.init["threshold"]
    try:
        return spec.param("threshold").default
    except KeyError:
        return None


def _plain_error(row: int, query_id: str | None, crit: CriterionPlan, metric: str, error: str) -> ResultRow:
    return ResultRow(
        row=row, query_id=query_id, criterion=crit.name, evaluator=crit.evaluator, metric=metric, error=error
    )
