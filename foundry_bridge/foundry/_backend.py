"""``FoundryBackend``: execute a plan through a ``FoundryClient`` (cloud and emulator alike).

Flow: create the eval (once; or, with ``eval_id``, check that the existing eval's testing criteria are the
plan's: ``criteria_differences``) → split the items into runs of at most ``max_rows_per_run`` rows → for each run,
send the rows inline (``file_content``) when they serialize to at most ``inline_max_bytes``, else upload them as a
dataset and reference its id (``file_id``) → create every run → poll each to a terminal status → page through
every output item, normalizing each page as it comes and yielding the rows in row order (the runner appends
them to ``results.jsonl``: no list of a run's items or rows is kept). ``state.json`` is saved as soon as the eval
id exists and again after each run is created, so a crash or Ctrl-C never causes a second submission on
``--resume``.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Generator, Iterator, Sequence
from typing import Any

from azure.core.exceptions import ResourceNotFoundError

from .._io import dumps
from ..errors import BackendError, MappingError, UsageError
from ..mapping.plan import CriterionPlan, Plan
from ..results import ResultRow
from ..runfolder import FAILED_STATUSES, RunPart
from ..runner_protocol import Capabilities, RunContext, utc_now
from ._client import FoundryClient
from ._exceptions import RunFailedError
from ._models import Eval, EvalRun, TestingCriterion
from ._normalize import missing_rows, normalize_item

__all__ = ["INLINE_MAX_BYTES", "MAX_ROWS_PER_RUN", "FoundryBackend", "chunk_ranges", "criteria_differences"]

# Rows sent inline in the run-create body, at most this many bytes of serialized JSON (per run). The service
# echoes the whole inline content back on every GET of the run (seen in the recordings), so an inline payload
# is paid once per poll; above this size the rows go through the dataset upload flow instead.
INLINE_MAX_BYTES = 1_000_000

# Rows per run. Larger datasets are split into several runs of one eval and their results merged. A service
# failure of a run ("100% of the batch run failed") loses at most this many rows, a resume re-polls whole runs,
# and 2,000 rows keep a run's output items to 20 pages of 100.
MAX_ROWS_PER_RUN = 2_000


def chunk_ranges(n: int, size: int) -> list[tuple[int, int]]:
    """``[(offset, count), ...]`` covering ``n`` rows in runs of at most ``size``."""
    if size < 1:
        raise ValueError("max_rows_per_run must be at least 1")
    return [(start, min(size, n - start)) for start in range(0, n, size)] or [(0, 0)]


class FoundryBackend:
    """Runs a plan on Foundry, or on the emulator: the same code over another transport (``setup`` names what the
    transport is, for the reuse identity; ``capabilities`` says what a resume can expect). ``eval_id``: add the
    runs to that existing eval (so Foundry can compare them with its other runs) instead of creating one.
    ``judges_deployed``: the service runs the LLM judges on the deployments the criteria name, so a
    ``deployment_name`` the mapping only guessed (``Plan.env_defaults``) is refused; false for the emulator, which
    scores without any model."""

    def __init__(
        self,
        client: FoundryClient,
        *,
        name: str = "cloud",
        inline_max_bytes: int = INLINE_MAX_BYTES,
        max_rows_per_run: int | None = None,
        page_size: int = 100,
        run_timeout: float | None = None,
        setup: dict[str, Any] | None = None,
        capabilities: Capabilities | None = None,
        eval_id: str | None = None,
        judges_deployed: bool = True,
    ) -> None:
        self.client = client
        self.judges_deployed = judges_deployed
        self.eval_id = eval_id  # an existing eval to add the runs to (its criteria must be the plan's)
        self._checked: dict[bytes, Eval] = {}  # that eval, by the plan criteria it was found fit for
        self.name = name
        self.inline_max_bytes = inline_max_bytes
        # None: the default for a new run, and on resume whatever split state.json records
        self.max_rows_explicit = max_rows_per_run is not None
        self.max_rows_per_run = MAX_ROWS_PER_RUN if max_rows_per_run is None else max_rows_per_run
        self.page_size = page_size
        self.run_timeout = run_timeout
        self._setup = dict(setup or {})
        self._capabilities = capabilities or Capabilities()

    def __repr__(self) -> str:
        return f"FoundryBackend(name={self.name!r}, endpoint={self.client.endpoint!r})"

    def _portal(self, url: str | None) -> str | None:
        """A run's portal page, as the service gave it; none for the emulator, whose ai.azure.com link is made
        up (it would look real in the summary, the manifest, the report and the telemetry)."""
        return None if self.name == "mock" else url

    @property
    def identity(self) -> dict[str, Any]:
        """The project the run goes to, and the transport's ``setup`` (the emulator's faults and shapes): part of
        the run-reuse check."""
        chosen = {"eval_id": self.eval_id} if self.eval_id else {}
        return {"endpoint": self.client.endpoint, **self._setup, **chosen}

    @property
    def capabilities(self) -> Capabilities:
        return self._capabilities

    def preflight(self, plan: Plan) -> None:
        """A plan without rows cannot be submitted; nor one whose judge deployment is the mapping's guess (when
        ``judges_deployed``); a given ``eval_id`` must name an eval with the plan's criteria (checked once, before
        the runner writes anything)."""
        if not plan.items:
            raise BackendError("the plan has no rows to evaluate")
        if self.judges_deployed:
            _refuse_guessed_deployment(plan)
        if self.eval_id:
            self._existing_eval(plan)

    # ------------------------------------------------------------------------------------------------------------
    def execute(self, ctx: RunContext) -> Iterator[ResultRow]:
        """Submit (or resume) and wait for every run (``state.json`` holds the ids before this returns); the rows
        come as the returned iterator pages through the output items, normalized, in row order."""
        self.preflight(ctx.plan)
        state, timings = ctx.run_state, ctx.manifest.setdefault("timings", {})
        state.backend = state.backend or self.name
        state.endpoint = self.client.endpoint
        state.api_version = self.client.api_version
        t0 = time.monotonic()
        eval_id = self._ensure_eval(ctx)
        parts = self._parts(ctx)
        self._submit(ctx, eval_id, parts)
        timings["submit_seconds"] = round(time.monotonic() - t0, 3)
        t1 = time.monotonic()
        finished = [self._wait(ctx, eval_id, part) for part in parts]
        timings["wait_seconds"] = round(time.monotonic() - t1, 3)
        timings["completed_at"] = utc_now()
        return self._results(ctx, eval_id, parts, finished)

    def _results(
        self, ctx: RunContext, eval_id: str, parts: list[RunPart], finished: list[EvalRun]
    ) -> Iterator[ResultRow]:
        """The collected rows; once the last is out, the state is ``completed`` and the manifest filled."""
        state, timings = ctx.run_state, ctx.manifest.setdefault("timings", {})
        t2 = time.monotonic()
        n_items = yield from self._collect(ctx, eval_id, parts)
        timings["collect_seconds"] = round(time.monotonic() - t2, 3)
        state.status = "completed"
        state.collected_items = n_items
        ctx.save_state()
        ctx.manifest.update(
            {
                "endpoint": self.client.endpoint,
                "api_version": self.client.api_version,
                "eval_id": eval_id,
                "run_ids": [p.run_id for p in parts],
                "report_url": self._portal(finished[0].report_url) if len(finished) == 1 else None,
                "report_urls": [self._portal(r.report_url) for r in finished],
                "evaluators": state.evaluators or [],
                "data_sources": [p.source or "file_content" for p in parts],
                "result_counts": [p.result_counts for p in parts],
                "requests_sent": self.client.requests_sent,
            }
        )

    def _ensure_eval(self, ctx: RunContext) -> str:
        """The eval's id: created once (or the given one, checked), saved in ``state.json`` the moment it is known."""
        state = ctx.run_state
        if state.eval_id:
            return state.eval_id
        if self.eval_id:
            ev = self._existing_eval(ctx.plan)
            ctx.manifest["eval_given"] = True
        else:
            ev = self.client.create_eval(ctx.plan.eval_body)
        state.eval_id = ev.id
        state.evaluators = [
            {"name": c.name, "evaluator_name": c.evaluator_name, "evaluator_version": c.evaluator_version, "id": c.id}
            for c in ev.testing_criteria
        ]
        state.status = "eval_created"
        ctx.manifest.setdefault("timings", {})["eval_created_at"] = utc_now()
        if not self.eval_id:
            ctx.announce("eval", ev.id)
        ctx.save_state()
        return ev.id

    def _existing_eval(self, plan: Plan) -> Eval:
        """The eval ``eval_id`` names (``GET``), refused unless its testing criteria are the plan's: a run is
        scored by its eval's criteria, so a mismatch would not run the plan. Nothing is sent after a refusal."""
        assert self.eval_id is not None
        planned = plan.eval_body.get("testing_criteria") or []
        key = dumps(planned)
        if key in self._checked:
            return self._checked[key]
        where = f"eval {self.eval_id} on {self.client.endpoint}"
        try:
            ev = self.client.get_eval(self.eval_id)
        except ResourceNotFoundError as exc:
            hint = (
                " (the --backend mock emulator starts empty in every process: serve one with `foundry-bridge "
                "mock-server` and run with --backend cloud --endpoint http://127.0.0.1:PORT/api/projects/mock-project)"
                if not self.capabilities.resume_elsewhere
                else ""
            )
            raise UsageError(
                f"--eval-id: {where} does not exist{hint}; pass the eval_id of a run folder's manifest.json made on "
                "this endpoint, or drop --eval-id to create a new eval"
            ) from exc
        differences = criteria_differences(planned, ev.testing_criteria)
        if differences:
            raise UsageError(
                f"--eval-id: {where} has other testing criteria than this plan ({'; '.join(differences)}); runs of "
                "one eval are scored by its criteria, so run with the mapping that made that eval, or drop "
                "--eval-id to create a new eval"
            )
        self._checked[key] = ev
        return ev

    def _parts(self, ctx: RunContext) -> list[RunPart]:
        """The split of the rows into runs: on resume the recorded split wins; only an explicitly different
        ``max_rows_per_run`` is refused, and so is a recorded split that does not cover the plan."""
        state, n = ctx.run_state, len(ctx.plan.items)
        parts = state.runs or []
        recorded = [(p.offset, p.count) for p in parts]
        ranges = recorded if parts and not self.max_rows_explicit else chunk_ranges(n, self.max_rows_per_run)
        if parts and recorded != ranges:
            raise BackendError(
                "state.json splits the dataset differently from this configuration "
                f"({len(parts)} runs recorded); resume without --max-rows-per-run (or the same value) or use --force"
            )
        if parts and (sum(c for _o, c in recorded) != n or any(o < 0 for o, _c in recorded)):
            raise BackendError("state.json's runs do not cover the plan's rows; use --force to start over")
        if not parts:
            parts = [RunPart(offset=o, count=c, run_id=None, status=None) for o, c in ranges]
            state.runs = parts
        return parts

    def _submit(self, ctx: RunContext, eval_id: str, parts: list[RunPart]) -> None:
        """Create every run not yet created (and, on ``--resume``, again those that failed); each run id is saved
        the moment it exists, so a crash never causes a second submission."""
        plan, state = ctx.plan, ctx.run_state
        plan_hash = state.plan_sha256 or plan.fingerprint()
        for index, part in enumerate(parts):
            if part.run_id and not (ctx.resume and part.status in FAILED_STATUSES):
                continue
            if part.run_id:  # --resume after a failed/canceled run: submit that part again (no duplicate)
                part.replace_failed()
            data_source = self._data_source(part, index, plan_hash, ctx)
            run = self.client.create_run(
                eval_id,
                data_source,
                name=f"{plan.name}-{index + 1}of{len(parts)}" if len(parts) > 1 else plan.name,
                metadata={"tool": "foundry-bridge", "plan_sha256": plan_hash[:16], "part": str(index + 1)},
            )
            part.run_id = run.id
            part.status = run.status
            part.continuation_token = self.client.run_poller(eval_id, run.id).continuation_token()
            state.status = "submitted"
            ctx.manifest.setdefault("timings", {}).setdefault("submitted_at", utc_now())
            ctx.announce("run", run.id)
            ctx.save_state()
            ctx.progress("submitted", index + 1, len(parts))

    def _wait(self, ctx: RunContext, eval_id: str, part: RunPart) -> EvalRun:
        """Poll one run to a terminal status; a failed run's status and error go to ``state.json`` first."""
        assert part.run_id is not None
        poller = self.client.run_poller(eval_id, part.run_id, progress=ctx.progress)
        try:
            run = poller.result(timeout=self.run_timeout)
        except RunFailedError as exc:
            part.status = exc.run.status if exc.run is not None else "failed"
            ctx.run_state.status = part.status
            if exc.run is not None and exc.run.error is not None:
                part.error = exc.run.error.model_dump(exclude_none=True)
            ctx.save_state()
            raise
        except TimeoutError as exc:
            raise BackendError(f"{exc}; the run is still going: resume later with --resume {ctx.run_dir}") from exc
        part.status = run.status
        part.report_url = self._portal(run.report_url)
        part.result_counts = run.result_counts.model_dump(exclude_none=True) if run.result_counts else None
        ctx.save_state()
        return run

    # ------------------------------------------------------------------------------------------------------------
    def _data_source(self, part: RunPart, index: int, plan_hash: str, ctx: RunContext) -> dict[str, Any]:
        items = ctx.plan.items[part.offset : part.offset + part.count]
        size = sum(len(dumps(it)) + 1 for it in items)
        part.bytes = size
        if size <= self.inline_max_bytes:
            part.source = "file_content"
            return {"type": "jsonl", "source": {"type": "file_content", "content": items}}
        if not part.dataset_id:
            data = b"".join(dumps(it.get("item", it)) + b"\n" for it in items)
            name = f"foundry-bridge-{plan_hash[:16]}"
            # the version names the bytes: a re-upload of the same chunk reuses it, another split gets its own
            version = hashlib.sha256(data).hexdigest()[:16]
            ctx.progress("uploading", index + 1, None)
            dataset = self.client.upload_dataset(name, version, data, filename=f"{name}-{version}.jsonl")
            part.dataset_id = dataset.id
            ctx.announce("dataset", dataset.id)
            ctx.save_state()
        part.source = "file_id"
        return {"type": "jsonl", "source": {"type": "file_id", "id": part.dataset_id}}

    def _collect(self, ctx: RunContext, eval_id: str, parts: list[RunPart]) -> Generator[ResultRow, None, int]:
        """Page through every run's output items: raw lines streamed to ``output_items.jsonl``, normalized rows
        yielded in row order as the pages arrive (``_PartRows``); returns the number of items."""
        plan = ctx.plan
        qids = _QueryIds(plan.items)
        total = len(plan.items)
        done = 0
        with ctx.folder.output_items_writer() as fh:
            for part in parts:
                assert part.run_id is not None
                ordered = _PartRows(part.offset, part.count, plan.criteria, qids)
                pager = self.client.list_output_items_raw(eval_id, part.run_id, page_size=self.page_size)
                for page in pager.by_page():
                    for item in page:
                        fh.write(dumps(item) + b"\n")
                        yield from ordered.add(
                            normalize_item(item, offset=part.offset, criteria=plan.criteria, query_ids=qids)
                        )
                    done += len(page)
                    ctx.progress("collecting", done, total)
                yield from ordered.rest()
        return done


def _refuse_guessed_deployment(plan: Plan) -> None:
    """``MappingError`` when a criterion's ``deployment_name`` is a ``${VAR:-default}`` default taken because VAR
    was unset: Foundry would run the judge on a deployment of that name, or fail every row, so it is never guessed."""
    guessed = [d for d in plan.env_defaults if d.param == "deployment_name"]
    if not guessed:
        return
    first = guessed[0]
    names = ", ".join(d.criterion for d in guessed)
    raise MappingError(
        f"the judge deployment of {names} is {first.value!r}, the mapping's fallback for {first.variable}, which is "
        "not set; the cloud backend never guesses the judge deployment",
        file=plan.mapping_path or "the packaged default.yaml",
        field=first.field,
        hint=f"set {first.variable} to your judge deployment's name, or write it as deployment_name in the mapping",
    )


def criteria_differences(planned: Sequence[dict[str, Any]], echoed: Sequence[TestingCriterion]) -> list[str]:
    """How an eval's testing criteria (as the service echoes them) differ from the plan's: names missing on either
    side, and per shared name the evaluator, its pinned version, data mapping and initialization parameters —
    each compared only where the service echoes it (``evaluator_version`` ``""`` means unpinned)."""
    theirs = {c.name: c for c in echoed}
    ours = {str(c.get("name")): c for c in planned}
    out = [f"criterion {n!r} is not in the eval" for n in ours if n not in theirs]
    out += [f"the eval has criterion {n!r}, the plan does not" for n in theirs if n not in ours]
    for name, c in ours.items():
        ev = theirs.get(name)
        if ev is None:
            continue
        pairs = [
            ("evaluator", c.get("evaluator_name"), ev.evaluator_name),
            ("version", c.get("evaluator_version") or None, ev.evaluator_version or None),
            ("data_mapping", c.get("data_mapping") or {}, ev.data_mapping),
            ("initialization_parameters", c.get("initialization_parameters") or {}, ev.initialization_parameters),
        ]
        out += [
            f"{name}: {what} {mine!r} in the plan, {echo!r} in the eval"
            for what, mine, echo in pairs
            if echo is not None and mine != echo and not (what == "version" and mine is None)
        ]
    return out


class _QueryIds(Sequence["str | None"]):
    """The query id of each plan row, read from its item only when asked (an output item usually carries it)."""

    def __init__(self, items: Sequence[dict[str, Any]]) -> None:
        self._items = items

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, row: int) -> str | None:  # type: ignore[override]  # rows one at a time, no slices
        entry = self._items[row]
        query_id: str | None = entry.get("item", entry).get("query_id")
        return query_id


class _PartRows:
    """The result rows of one run (rows ``offset .. offset+count-1``) in row order, whatever order the output items
    come in: an item for the next row goes out at once (the usual case: memory holds one page), one ahead of it
    waits until the rows before it came (a second item for the row just written goes beside it); at the end, rows
    without an item get MISSING_ITEM rows, and items for a row outside the run (or an earlier row again) follow."""

    def __init__(
        self, offset: int, count: int, criteria: Sequence[CriterionPlan], query_ids: Sequence[str | None]
    ) -> None:
        self.start, self.next, self.end = offset, offset, offset + count
        self.criteria, self.query_ids = criteria, query_ids
        self.waiting: dict[int, list[ResultRow]] = {}
        self.strays: list[ResultRow] = []

    def add(self, rows: list[ResultRow]) -> Iterator[ResultRow]:
        """Rows of one output item (all of one dataset row), and any waiting ones now in order."""
        if not rows:
            return
        row = rows[0].row
        if row == self.next:
            yield from rows
            self.next += 1
            while self.next in self.waiting:
                yield from self.waiting.pop(self.next)
                self.next += 1
        elif self.next < row < self.end:
            self.waiting.setdefault(row, []).extend(rows)
        elif row == self.next - 1 and row >= self.start:  # the row written last: still beside its other rows
            yield from rows
        else:
            self.strays.extend(rows)

    def rest(self) -> Iterator[ResultRow]:
        """The rows still owed once every page is read."""
        for row in range(self.next, self.end):
            waiting = self.waiting.pop(row, None)
            yield from waiting or missing_rows([row], criteria=self.criteria, query_ids=self.query_ids)
        yield from self.strays
