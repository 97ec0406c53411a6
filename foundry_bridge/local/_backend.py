"""``LocalBackend``: run a plan's criteria on this machine, with a disk cache of judge answers.

Per criterion, the catalog decides how (never an evaluator name written here):

* the evaluator whose ``sdk_class`` is ``DocumentRetrievalEvaluator`` → the project's local metrics;
* an evaluator that needs a model deployment → azure-ai-evaluation's ``sdk_class`` as an LLM judge, pointed
  at ``judge_endpoint`` / ``judge_model``;
* anything else (a service-side evaluator such as groundedness_pro) → one errored row per dataset row
  (``UNSUPPORTED_LOCALLY``), so the rest of the run still happens and the gap is visible.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._text import endpoint_problem
from ..catalog import CATALOG, EvaluatorSpec
from ..errors import UsageError, redact
from ..mapping.plan import CriterionPlan, Plan, iter_rows
from ..results import ResultRow
from ..runner_protocol import Capabilities, RunContext
from ..wire import is_present, missing_inputs, render_mapping, resolve_threshold
from ._cache import CACHE_FORMAT, ResponseCache, cache_key, default_cache_dir
from ._docret import IMPLEMENTATION as DOCRET_IMPLEMENTATION
from ._docret import compute_document_retrieval, docret_rows
from ._judges import (
    JudgeConfig,
    RequestLimits,
    build_evaluator,
    call_evaluator,
    call_inputs,
    clean_output,
    describe_exception,
    evaluation_library_version,
    judge_key_parts,
    judge_rows,
    looks_like_azure,
    output_failure,
    prompt_fingerprint,
)

__all__ = ["LocalBackend"]

_LOCAL_METRICS_CLASS = "DocumentRetrievalEvaluator"
DEFAULT_LIMITS = RequestLimits()
MAX_JUDGE_TIMEOUT = 3600.0  # seconds per request
MAX_JUDGE_RETRIES = 20
MAX_REPEATS = 100  # run --repeats K: judgements of each row
_HEARTBEAT = 1.0  # seconds between progress reports while judge calls are in flight
# timeout=None: a call is cut off this long after the worst case of its request limits (which end it by then
# anyway): a backstop that lets a request's own deadline report its cause first
_CALL_SLACK = 5.0
_TRANSIENT = ("JUDGE_TIMEOUT", "JUDGE_UNREACHABLE", "JUDGE_HTTP_ERROR: HTTP 408", "JUDGE_HTTP_ERROR: HTTP 429")


def is_transient(error: str | None) -> bool:
    """A judge failure that says the judge is (maybe) down: a timeout, unreachable, 408, 429 or 5xx."""
    return error is not None and (error.startswith(_TRANSIENT) or error.startswith("JUDGE_HTTP_ERROR: HTTP 5"))


def _missing_input_error(spec: EvaluatorSpec, inputs: dict[str, Any]) -> str | None:
    """``MISSING_INPUT: ...`` when no input group of the evaluator is complete for this row (``wire.is_present``)."""
    if missing_inputs(spec, inputs) is None:
        return None
    groups = spec.input_groups or (tuple(sorted(spec.required_inputs)),)
    wanted = " or ".join("+".join(g) for g in groups)
    have = ", ".join(sorted(k for k, v in inputs.items() if is_present(v))) or "none"
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
    at once. Every wait is bounded: one HTTP request to the judge by ``judge_timeout`` seconds, a failed request
    (429, 5xx, timeout, connection error) is tried again at most ``judge_retries`` times with backoff, honouring
    ``Retry-After`` up to 120 s (``RequestLimits``); ``timeout`` caps one call, retries included (None: the
    worst case of those limits). Once ``give_up_after`` calls in a row failed that way, the judge is taken to be
    down: the remaining rows are not sent and error with ``JUDGE_NOT_CALLED`` and the last cause (None: never).
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
        judge_timeout: float = DEFAULT_LIMITS.timeout,
        judge_retries: int = DEFAULT_LIMITS.retries,
        give_up_after: int | None = 10,
        repeat: int = 1,
    ) -> None:
        if concurrency < 1:
            raise UsageError("concurrency must be at least 1")
        if timeout is not None and not 0 < timeout <= 86400:  # also refuses NaN
            raise UsageError("timeout must be a positive number of seconds, at most a day (86400)")
        if not 0 < judge_timeout <= MAX_JUDGE_TIMEOUT:  # also refuses NaN
            raise UsageError(f"judge timeout must be more than 0 and at most {MAX_JUDGE_TIMEOUT:g} seconds")
        if isinstance(judge_retries, bool) or not 0 <= judge_retries <= MAX_JUDGE_RETRIES:
            raise UsageError(f"judge retries must be between 0 and {MAX_JUDGE_RETRIES}")
        if give_up_after is not None and give_up_after < 1:
            raise UsageError("give_up_after must be at least 1 (or None: never give up)")
        problem = endpoint_problem(judge_endpoint, "the judge endpoint") if judge_endpoint else None
        if problem:
            raise UsageError(problem)
        if isinstance(repeat, bool) or not 1 <= repeat <= MAX_REPEATS:
            raise UsageError(f"repeat must be between 1 and {MAX_REPEATS}")
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
        self.limits = RequestLimits(timeout=float(judge_timeout), retries=int(judge_retries))
        self.give_up_after = give_up_after
        self.repeat = repeat
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
        } | ({"repeat": self.repeat} if self.repeat > 1 else {})

    @property
    def capabilities(self) -> Capabilities:
        """Nothing lives on a service: a resume anywhere judges again what the response cache does not hold."""
        return Capabilities(judges_here=True, caches_answers=self.use_cache)

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
            if _kind(crit) == "judge":
                self._judge_for(crit)

    # --- execution ---------------------------------------------------------------------------------------------
    def execute(self, ctx: RunContext) -> Iterator[ResultRow]:
        """Every criterion on every item; one ResultRow per (row, criterion, metric), errors included, yielded in
        row order as each batch of ``BATCH_ROWS`` rows is done (the judge configuration is checked at the call)."""
        plan = ctx.plan
        kinds = {ci: _kind(crit) for ci, crit in enumerate(plan.criteria)}
        judges = {ci: self._judge_for(plan.criteria[ci]) for ci, k in kinds.items() if k == "judge"}  # fails up front
        return self._rows(ctx, kinds, judges)

    def _rows(self, ctx: RunContext, kinds: dict[int, str], judges: dict[int, JudgeConfig]) -> Iterator[ResultRow]:
        plan, started, errored = ctx.plan, time.monotonic(), 0
        self._docret_impl = None
        run = _JudgeRun(self, ctx, judges, total_rows=len(plan.items)) if judges else None
        for start in range(0, len(plan.items), BATCH_ROWS):
            batch = _Batch.read(plan, start, BATCH_ROWS)
            for ci, crit in enumerate(plan.criteria):
                if kinds[ci] == "metrics":
                    self._run_metrics(CATALOG[crit.evaluator], crit, ci, batch)
                elif kinds[ci] in ("unknown", "unsupported"):
                    for r in range(len(batch.items)):
                        batch.cells[r][ci] = [_not_run(start + r, batch.query_ids[r], crit)]
            if run is not None:
                run.judge(batch)
            for per_row in batch.cells:
                for per_crit in per_row:
                    errored += sum(1 for row in per_crit if row.error is not None)
                    yield from per_crit
        judge_stats = run.stats if run is not None else _zero_stats()
        self._write_manifest(ctx, kinds, judges, judge_stats, errored, started)
        self.stats = dict(judge_stats)

    def _write_manifest(
        self,
        ctx: RunContext,
        kinds: dict[int, str],
        judges: dict[int, JudgeConfig],
        judge_stats: dict[str, int],
        errored: int,
        started: float,
    ) -> None:
        criteria = ctx.plan.criteria
        library = f"azure-ai-evaluation {evaluation_library_version()}"
        ctx.manifest["errored"] = errored
        ctx.manifest["retried"] = judge_stats["judge_retried"]
        ctx.manifest["evaluators"] = [
            {
                "name": c.name,
                "evaluator_name": c.evaluator,
                "local_class": CATALOG[c.evaluator].sdk_class if c.evaluator in CATALOG else None,
                "implementation": {"judge": library, "metrics": self._docret_impl}.get(kinds[ci]),
            }
            for ci, c in enumerate(criteria)
        ]
        ctx.manifest["local"] = {
            "library": library,
            "document_retrieval": self._docret_impl,
            "judges": {criteria[ci].name: judges[ci].identity() for ci in judges},
            "unsupported": [criteria[ci].name for ci, k in kinds.items() if k in ("unsupported", "unknown")],
            "concurrency": self.concurrency,
            "timeout": self.timeout,
            "judge_timeout": self.limits.timeout,
            "judge_retries": self.limits.retries,
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

    def _run_metrics(self, spec: EvaluatorSpec, crit: CriterionPlan, ci: int, batch: _Batch) -> None:
        """Document retrieval on the batch's rows, in one vectorized call; rows without its inputs error."""
        ready: list[int] = []
        payload: list[dict[str, Any]] = []
        for r, item in enumerate(batch.items):
            inputs = render_mapping(crit.data_mapping, item)
            missing = _missing_input_error(spec, inputs)
            if missing:
                batch.cells[r][ci] = docret_rows(
                    spec,
                    row=batch.start + r,
                    query_id=batch.query_ids[r],
                    criterion=crit.name,
                    output=None,
                    error=missing,
                )
                continue
            ready.append(r)
            payload.append({name: inputs[name] for name in spec.input_names if name in inputs})
        outputs: list[dict[str, Any] | str] = []
        if payload:
            outputs = compute_document_retrieval(spec, payload, dict(crit.init))
            self._docret_impl = DOCRET_IMPLEMENTATION
        for r, out in zip(ready, outputs, strict=True):
            output, error = (out, None) if isinstance(out, dict) else (None, out)
            batch.cells[r][ci] = docret_rows(
                spec, row=batch.start + r, query_id=batch.query_ids[r], criterion=crit.name, output=output, error=error
            )


# rows read, computed and written at once: bounds the memory of a run of a million rows
BATCH_ROWS = 8192


@dataclass
class _Batch:
    """Rows ``start ..`` of the plan: their items, query ids, and the result rows per (row, criterion)."""

    start: int
    items: list[dict[str, Any]]
    query_ids: list[str | None]
    cells: list[list[list[ResultRow]]]

    @classmethod
    def read(cls, plan: Plan, start: int, size: int) -> _Batch:
        items = [entry.get("item", entry) for entry in iter_rows(plan.items, start, start + size)]
        query_ids = [None if it.get("query_id") is None else str(it.get("query_id")) for it in items]
        return cls(start, items, query_ids, [[[] for _ in plan.criteria] for _ in items])


def _zero_stats() -> dict[str, int]:
    return {
        "judge_tasks": 0,
        "cache_hits": 0,
        "judge_calls": 0,
        "cache_stored": 0,
        "judge_errors": 0,
        "judge_not_called": 0,
        "judge_kept": 0,
        "judge_retried": 0,
    }


class _Earlier:
    """The result rows of the run a resumed run continues (``RunContext.earlier``), read along with the batches
    (both in row order, so memory holds one batch): a judgement that did not error is kept as it was, an errored
    one (a timeout, an outage) is asked again."""

    def __init__(self, rows: Iterator[ResultRow]) -> None:
        self._rows = rows
        self._next: ResultRow | None = None

    def pairs(self, start: int, stop: int) -> dict[tuple[int, str], list[ResultRow]]:
        """The earlier rows of dataset rows ``start`` to ``stop`` (excluded), by (row, criterion)."""
        out: dict[tuple[int, str], list[ResultRow]] = {}
        while True:
            row, self._next = (self._next if self._next is not None else next(self._rows, None)), None
            if row is None:
                return out
            if row.row >= stop:
                self._next = row
                return out
            if row.row >= start:
                out.setdefault((row.row, row.criterion), []).append(row)


class _JudgeRun:
    """The judging of one run, batch after batch: the plan's judge criteria, the cache, the counters (across
    batches, like the run of failures that makes it give up), the batch being judged."""

    def __init__(self, backend: LocalBackend, ctx: RunContext, judges: dict[int, JudgeConfig], total_rows: int) -> None:
        self.backend, self.ctx, self.judges = backend, ctx, judges
        self.rows_left, self.done, self.errored = total_rows, 0, 0
        self.batch = _Batch(0, [], [], [])
        self.criteria = ctx.plan.criteria
        self.stats = _zero_stats()
        self.cache = ResponseCache(backend.cache_dir, ttl=backend.cache_ttl) if backend.use_cache else None
        self.library = f"azure-ai-evaluation {evaluation_library_version()}"
        self.thresholds = {ci: _threshold(self.spec(ci), self.criteria[ci]) for ci in judges}
        self.lock = threading.Lock()
        self.failures_in_a_row = 0
        self.last_failure: str | None = None
        self.earlier = _Earlier(ctx.earlier) if ctx.earlier is not None else None

    def spec(self, ci: int) -> EvaluatorSpec:
        return CATALOG[self.criteria[ci].evaluator]

    def judge(self, batch: _Batch) -> None:
        """Every judge criterion on every row of ``batch``: tasks, cache look-ups, one call per distinct key, result
        rows. Progress counts tasks over the run (the total: tasks so far plus one per judge for each row left)."""
        self.batch = batch
        earlier = self.earlier.pairs(batch.start, batch.start + len(batch.items)) if self.earlier else {}
        tasks = [task for ci in self.judges for task in self.tasks_of(ci, batch.items, earlier)]
        self.rows_left -= len(batch.items)
        self.stats["judge_tasks"] += len(tasks)
        total = self.stats["judge_tasks"] + self.rows_left * len(self.judges)
        self.ctx.progress("judging", self.done, total)
        pending = self.from_cache(tasks, total)
        if pending:
            self.call(pending, done=self.done + len(tasks) - sum(len(g) for g in pending.values()), total=total)
        for task in tasks:
            self.write(task)
        self.done += len(tasks)
        self.ctx.progress("judging", self.done, total)

    def rows(self, ci: int, row: int, output: dict[str, Any] | None, error: str | None) -> list[ResultRow]:
        """The result rows of criterion ``ci`` on row ``row`` of the batch."""
        return judge_rows(
            self.spec(ci),
            row=self.batch.start + row,
            query_id=self.batch.query_ids[row],
            criterion=self.criteria[ci].name,
            threshold=self.thresholds[ci],
            output=output,
            error=error,
        )

    def tasks_of(
        self, ci: int, items: list[dict[str, Any]], earlier: dict[tuple[int, str], list[ResultRow]]
    ) -> list[_JudgeTask]:
        """The judge calls criterion ``ci`` needs; rows it cannot judge get their error rows now, rows the run this
        one continues judged without error (``earlier``) keep those rows."""
        spec, crit = self.spec(ci), self.criteria[ci]
        try:
            prompt = prompt_fingerprint(spec)
        except (ImportError, LookupError) as exc:  # the installed library lacks this evaluator class
            for r in range(len(items)):
                self.batch.cells[r][ci] = self.rows(ci, r, None, f"UNSUPPORTED_LOCALLY: {redact(str(exc))}")
            return []
        tasks = []
        for r, item in enumerate(items):
            inputs = {k: v for k, v in render_mapping(crit.data_mapping, item).items() if k in spec.input_names}
            missing = _missing_input_error(spec, inputs)
            if missing:
                self.batch.cells[r][ci] = self.rows(ci, r, None, missing)
                continue
            before = earlier.get((self.batch.start + r, crit.name))
            if before and not any(row.error is not None for row in before):
                self.batch.cells[r][ci] = before
                self.stats["judge_kept"] += 1
                continue
            self.stats["judge_retried"] += int(bool(before))
            inputs, with_query = call_inputs(spec, inputs)
            task = _JudgeTask(row=r, criterion=ci, inputs=inputs, with_query=with_query)
            task.key_parts = judge_key_parts(
                self.judges[ci], spec, self.library, prompt, self.thresholds[ci], inputs, self.backend.repeat
            )
            task.key = cache_key(task.key_parts)
            tasks.append(task)
        return tasks

    def from_cache(self, tasks: list[_JudgeTask], total: int) -> dict[str, list[_JudgeTask]]:
        """Answer tasks from the cache; the rest grouped by cache key (one call per distinct key)."""
        pending: dict[str, list[_JudgeTask]] = {}
        hits = 0
        for task in tasks:
            cached = self.cache.get(task.key) if self.cache is not None else None
            if cached is not None and output_failure(self.spec(task.criterion), cached) is None:
                task.output = cached
                hits += 1
                continue
            group_key = task.key if self.cache is not None else f"{task.key}:{id(task)}"
            pending.setdefault(group_key, []).append(task)
        self.stats["cache_hits"] += hits
        if hits:
            self.ctx.progress("judging", self.done + hits, total)
        return pending

    def evaluators(self, pending: dict[str, list[_JudgeTask]]) -> dict[tuple[int, bool], Any]:
        """One evaluator instance per (criterion, with query) the pending calls need; an exception in its place
        when the class refuses to build (e.g. a threshold it rejects): that criterion's rows error."""
        needed = sorted({(g[0].criterion, g[0].with_query) for g in pending.values()})
        credential = self.backend._credential([self.judges[ci] for ci, _ in needed])
        out: dict[tuple[int, bool], Any] = {}
        for ci, wq in needed:
            try:
                out[(ci, wq)] = build_evaluator(
                    self.spec(ci), self.judges[ci], threshold=self.thresholds[ci], with_query=wq, credential=credential
                )
            except Exception as exc:
                out[(ci, wq)] = exc
        return out

    def call(self, pending: dict[str, list[_JudgeTask]], *, done: int, total: int) -> None:
        """Run the pending calls on the backend's thread pool, reporting progress ("judging": tasks done; "errored":
        tasks errored, when it grows) after each group and every ``_HEARTBEAT`` seconds while calls are in flight."""
        evaluators = self.evaluators(pending)
        counts = {"done": done}

        def advance(group: list[_JudgeTask] | None) -> None:
            errored = sum(1 for t in group or () if t.error is not None)
            counts["done"] += len(group or ())
            self.errored += errored
            if errored:  # stage "errored": the tasks errored so far, reported when it grows
                self.ctx.progress("errored", self.errored, total)
            self.ctx.progress("judging", counts["done"], total)

        def work(group: list[_JudgeTask]) -> None:
            self.call_group(group, evaluators[(group[0].criterion, group[0].with_query)])

        _run_pool(work, list(pending.values()), self.backend.concurrency, advance)

    def call_group(self, group: list[_JudgeTask], evaluator: Any) -> None:
        """One judge call for a group of identical tasks; a usable answer is cached (a cache that cannot be
        written never fails the run); every failure becomes the group's error with its cause. After
        ``give_up_after`` transient failures in a row (no success between), no more calls are made."""
        first, backend = group[0], self.backend
        timeout = backend.timeout if backend.timeout is not None else backend.limits.worst_case + _CALL_SLACK
        output: dict[str, Any] | None = None
        error = self.given_up()
        if error is None:
            try:
                if isinstance(evaluator, Exception):
                    raise evaluator
                output = clean_output(call_evaluator(evaluator, first.inputs, timeout, backend.limits))
            except Exception as exc:
                error = describe_exception(exc, timeout=timeout, request_timeout=backend.limits.timeout)
            self.note_outcome(error)
        stored = False
        if output is not None and self.cache is not None and output_failure(self.spec(first.criterion), output) is None:
            try:
                self.cache.put(first.key, output, key_parts=first.key_parts)
                stored = True
            except OSError:
                stored = False
        with self.lock:
            self.stats["cache_stored"] += int(stored)
        for task in group:
            task.output, task.error = output, error

    def given_up(self) -> str | None:
        """``JUDGE_NOT_CALLED: ...`` once the judge failed ``give_up_after`` calls in a row, else None."""
        limit = self.backend.give_up_after
        with self.lock:
            if limit is None or self.failures_in_a_row < limit:
                return None
            self.stats["judge_not_called"] += 1
            return (
                f"JUDGE_NOT_CALLED: the judge failed {self.failures_in_a_row} calls in a row, so this row was not "
                f"sent (last cause: {self.last_failure}); fix the judge, then run again or --resume"
            )

    def note_outcome(self, error: str | None) -> None:
        """Count a call made; a transient failure (timeout, unreachable, 408/429/5xx) extends the run of failures,
        anything else ends it."""
        transient = is_transient(error)
        with self.lock:
            self.stats["judge_calls"] += 1
            self.failures_in_a_row = self.failures_in_a_row + 1 if transient else 0
            self.last_failure = error if transient else self.last_failure

    def write(self, task: _JudgeTask) -> None:
        rows = self.rows(task.criterion, task.row, task.output, task.error)
        self.stats["judge_errors"] += sum(1 for r in rows if r.error is not None)
        self.batch.cells[task.row][task.criterion] = rows


def _run_pool(
    work: Callable[[list[_JudgeTask]], None],
    groups: list[list[_JudgeTask]],
    concurrency: int,
    on_done: Callable[[list[_JudgeTask] | None], None],
) -> None:
    """Run ``work`` over ``groups`` with ``concurrency`` threads; ``on_done(group)`` after each group, and
    ``on_done(None)`` every ``_HEARTBEAT`` seconds without one (so a slow judge still shows signs of life).

    On an interruption (Ctrl-C) queued calls are cancelled and this function returns at once; the calls already in
    flight (at most one per worker, each bounded by the backend's limits) still finish before the interpreter exits
    (Python joins pool threads at exit; a second Ctrl-C stops that wait). Every answer received is in the cache,
    so the next run continues from there."""
    pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="judge")
    try:
        futures: dict[Future[None], list[_JudgeTask]] = {pool.submit(work, g): g for g in groups}
        remaining = set(futures)
        while remaining:
            finished, remaining = wait(remaining, timeout=_HEARTBEAT, return_when=FIRST_COMPLETED)
            if not finished:
                on_done(None)
            for fut in finished:
                fut.result()
                on_done(futures[fut])
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def _threshold(spec: EvaluatorSpec, crit: CriterionPlan) -> int | float | None:
    """The judge's pass threshold: ``wire.resolve_threshold`` for its primary metric."""
    return resolve_threshold(spec.metric(spec.primary_metric), crit.init)


def _kind(crit: CriterionPlan) -> str:
    """How the local backend runs a criterion, read from the catalog: metrics, judge, unsupported or unknown."""
    spec = CATALOG.get(crit.evaluator)
    if spec is None:
        return "unknown"
    if spec.sdk_class == _LOCAL_METRICS_CLASS:
        return "metrics"
    return "judge" if spec.needs_deployment and spec.sdk_class else "unsupported"


def _not_run(row: int, query_id: str | None, crit: CriterionPlan) -> ResultRow:
    """The error row of a criterion this backend cannot run (not in the catalog, or computed by a service)."""
    spec = CATALOG.get(crit.evaluator)
    if spec is None:
        metric = crit.name
        err = f"UNKNOWN_EVALUATOR: {crit.evaluator!r} is not in the catalog; the local backend cannot run it"
    else:
        metric = spec.primary_metric
        err = (
            f"UNSUPPORTED_LOCALLY: {spec.name} is computed by a Foundry service "
            f"({spec.sdk_class or 'no local class'}) and cannot run offline; use --backend cloud for it"
        )
    return ResultRow(
        row=row, query_id=query_id, criterion=crit.name, evaluator=crit.evaluator, metric=metric, error=err
    )
