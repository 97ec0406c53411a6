"""``FoundryBackend``: execute a plan through a ``FoundryClient`` (cloud and emulator alike).

Flow: create the eval (once) → split the items into runs of at most ``max_rows_per_run`` rows → for each run,
send the rows inline (``file_content``) when they serialize to at most ``inline_max_bytes``, else upload them as a
dataset and reference its id (``file_id``) → create every run → poll each to a terminal status → page through
every output item → normalize. ``state.json`` is saved as soon as the eval id exists and again after each run is
created, so a crash or Ctrl-C never causes a second submission on ``--resume``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from typing import Any

from .._io import atomic_open, dumps
from ..errors import BackendError
from ..results import RUN_FILES, ResultRow
from ..runner_protocol import RunContext, utc_now
from ._client import FoundryClient
from ._exceptions import RunFailedError
from ._normalize import missing_rows, normalize_item

__all__ = ["INLINE_MAX_BYTES", "MAX_ROWS_PER_RUN", "FoundryBackend", "chunk_ranges"]

# Rows sent inline in the run-create body, at most this many bytes of serialized JSON (per run). The service
# echoes the whole inline content back on every GET of the run (seen in the recordings), so an inline payload
# is paid once per poll; above this size the rows go through the dataset upload flow instead.
INLINE_MAX_BYTES = 1_000_000

# Rows per run. Larger datasets are split into several runs of one eval and their results merged. A service
# failure of a run ("100% of the batch run failed") loses at most this many rows, a resume re-polls whole runs,
# and 2,000 rows keep a run's output items to 20 pages of 100.
MAX_ROWS_PER_RUN = 2_000


_FAILED = ("failed", "canceled", "cancelled")


def chunk_ranges(n: int, size: int) -> list[tuple[int, int]]:
    """``[(offset, count), ...]`` covering ``n`` rows in runs of at most ``size``."""
    if size < 1:
        raise ValueError("max_rows_per_run must be at least 1")
    return [(start, min(size, n - start)) for start in range(0, n, size)] or [(0, 0)]


class FoundryBackend:
    """Runs a plan on Foundry (or the emulator: same code, another transport)."""

    def __init__(
        self,
        client: FoundryClient,
        *,
        name: str = "cloud",
        inline_max_bytes: int = INLINE_MAX_BYTES,
        max_rows_per_run: int | None = None,
        page_size: int = 100,
        run_timeout: float | None = None,
    ) -> None:
        self.client = client
        self.name = name
        self.inline_max_bytes = inline_max_bytes
        # None: the default for a new run, and on resume whatever split state.json records
        self.max_rows_explicit = max_rows_per_run is not None
        self.max_rows_per_run = MAX_ROWS_PER_RUN if max_rows_per_run is None else max_rows_per_run
        self.emulator: Any = None  # the FoundryEmulator behind a mock backend (its setup is part of the identity)
        self.page_size = page_size
        self.run_timeout = run_timeout

    def __repr__(self) -> str:
        return f"FoundryBackend(name={self.name!r}, endpoint={self.client.endpoint!r})"

    @property
    def identity(self) -> dict[str, Any]:
        """The project the run goes to (and, for the emulator, its faults and shapes): part of the run-reuse check."""
        identity: dict[str, Any] = {"endpoint": self.client.endpoint}
        emu = self.emulator
        if emu is not None:
            faults = getattr(emu, "faults", None)
            identity["emulator"] = {
                "faults": dataclasses.asdict(faults) if dataclasses.is_dataclass(faults) else repr(faults),
                "docret_shape": getattr(emu, "docret_shape", None),
                "polls_to_complete": getattr(emu, "polls_to_complete", None),
            }
        return identity

    # ------------------------------------------------------------------------------------------------------------
    def execute(self, ctx: RunContext) -> list[ResultRow]:
        """Submit (or resume), wait, collect, normalize."""
        plan, state = ctx.plan, ctx.state
        if not plan.items:
            raise BackendError("the plan has no rows to evaluate")
        timings: dict[str, Any] = ctx.manifest.setdefault("timings", {})
        state.setdefault("backend", self.name)
        state["endpoint"] = self.client.endpoint
        state["api_version"] = self.client.api_version
        t0 = time.monotonic()

        # 1. the eval
        if not state.get("eval_id"):
            ev = self.client.create_eval(plan.eval_body)
            state["eval_id"] = ev.id
            state["evaluators"] = [
                {
                    "name": c.name,
                    "evaluator_name": c.evaluator_name,
                    "evaluator_version": c.evaluator_version,
                    "id": c.id,
                }
                for c in ev.testing_criteria
            ]
            state["status"] = "eval_created"
            timings["eval_created_at"] = utc_now()
            ctx.save_state()
        eval_id: str = state["eval_id"]

        # 2. the runs: plan them, submit those not yet submitted
        runs: list[dict[str, Any]] = state.get("runs") or []
        recorded = [(r["offset"], r["count"]) for r in runs]
        # on resume the recorded split wins; only an explicitly different max_rows_per_run is refused
        ranges = (
            recorded if runs and not self.max_rows_explicit else chunk_ranges(len(plan.items), self.max_rows_per_run)
        )
        if runs and recorded != ranges:
            raise BackendError(
                "state.json splits the dataset differently from this configuration "
                f"({len(runs)} runs recorded); resume without --max-rows-per-run (or the same value) or use --force"
            )
        if runs and (sum(c for _o, c in recorded) != len(plan.items) or any(o < 0 for o, _c in recorded)):
            raise BackendError("state.json's runs do not cover the plan's rows; use --force to start over")
        if not runs:
            runs = [{"offset": o, "count": c, "run_id": None, "status": None} for o, c in ranges]
            state["runs"] = runs
        plan_hash = state.get("plan_sha256") or plan.fingerprint()
        for index, entry in enumerate(runs):
            if entry.get("run_id") and not (ctx.resume and entry.get("status") in _FAILED):
                continue
            if entry.get("run_id"):  # --resume after a failed/canceled run: submit that part again (no duplicate)
                entry.setdefault("replaced_runs", []).append({"run_id": entry["run_id"], "status": entry["status"]})
                entry.pop("error", None)
            data_source = self._data_source(entry, index, plan_hash, ctx)
            run = self.client.create_run(
                eval_id,
                data_source,
                name=f"{plan.name}-{index + 1}of{len(runs)}" if len(runs) > 1 else plan.name,
                metadata={"tool": "foundry-bridge", "plan_sha256": plan_hash[:16], "part": str(index + 1)},
            )
            entry["run_id"] = run.id
            entry["status"] = run.status
            entry["continuation_token"] = self.client.run_poller(eval_id, run.id).continuation_token()
            state["status"] = "submitted"
            timings.setdefault("submitted_at", utc_now())
            ctx.save_state()
            ctx.progress("submitted", index + 1, len(runs))
        timings["submit_seconds"] = round(time.monotonic() - t0, 3)

        # 3. wait for every run
        t1 = time.monotonic()
        finished = []
        for entry in runs:
            poller = self.client.run_poller(eval_id, entry["run_id"], progress=ctx.progress)
            try:
                run = poller.result(timeout=self.run_timeout)
            except RunFailedError as exc:
                entry["status"] = exc.run.status if exc.run is not None else "failed"
                state["status"] = entry["status"]
                if exc.run is not None and exc.run.error is not None:
                    entry["error"] = exc.run.error.model_dump(exclude_none=True)
                ctx.save_state()
                raise
            except TimeoutError as exc:
                raise BackendError(f"{exc}; the run is still going: resume later with --resume {ctx.run_dir}") from exc
            entry["status"] = run.status
            entry["report_url"] = run.report_url
            entry["result_counts"] = run.result_counts.model_dump(exclude_none=True) if run.result_counts else None
            ctx.save_state()
            finished.append(run)
        timings["wait_seconds"] = round(time.monotonic() - t1, 3)
        timings["completed_at"] = utc_now()

        # 4. collect every output item, normalize
        t2 = time.monotonic()
        rows, n_items = self._collect(ctx, eval_id, runs)
        timings["collect_seconds"] = round(time.monotonic() - t2, 3)
        state["status"] = "completed"
        state["collected_items"] = n_items
        ctx.save_state()

        ctx.manifest.update(
            {
                "endpoint": self.client.endpoint,
                "api_version": self.client.api_version,
                "eval_id": eval_id,
                "run_ids": [r["run_id"] for r in runs],
                "report_url": finished[0].report_url if len(finished) == 1 else None,
                "report_urls": [r.report_url for r in finished],
                "evaluators": state.get("evaluators", []),
                "data_sources": [r.get("source", "file_content") for r in runs],
                "result_counts": [r.get("result_counts") for r in runs],
                "requests_sent": self.client.requests_sent,
            }
        )
        return rows

    # ------------------------------------------------------------------------------------------------------------
    def _data_source(self, entry: dict[str, Any], index: int, plan_hash: str, ctx: RunContext) -> dict[str, Any]:
        items = ctx.plan.items[entry["offset"] : entry["offset"] + entry["count"]]
        size = sum(len(dumps(it)) + 1 for it in items)
        entry["bytes"] = size
        if size <= self.inline_max_bytes:
            entry["source"] = "file_content"
            return {"type": "jsonl", "source": {"type": "file_content", "content": items}}
        if not entry.get("dataset_id"):
            data = b"".join(dumps(it.get("item", it)) + b"\n" for it in items)
            name = f"foundry-bridge-{plan_hash[:16]}"
            # the version names the bytes: a re-upload of the same chunk reuses it, another split gets its own
            version = hashlib.sha256(data).hexdigest()[:16]
            ctx.progress("uploading", index + 1, None)
            dataset = self.client.upload_dataset(name, version, data, filename=f"{name}-{version}.jsonl")
            entry["dataset_id"] = dataset.id
            ctx.save_state()
        entry["source"] = "file_id"
        return {"type": "jsonl", "source": {"type": "file_id", "id": entry["dataset_id"]}}

    def _collect(self, ctx: RunContext, eval_id: str, runs: list[dict[str, Any]]) -> tuple[list[ResultRow], int]:
        """Page through every run's output items: raw lines streamed to ``output_items.jsonl``, rows returned."""
        plan = ctx.plan
        query_ids = plan.query_ids
        total = len(plan.items)
        rows: list[ResultRow] = []
        covered: set[int] = set()
        done = 0
        with atomic_open(ctx.run_dir / RUN_FILES["output_items"]) as fh:
            for entry in runs:
                pager = self.client.list_output_items_raw(eval_id, entry["run_id"], page_size=self.page_size)
                for page in pager.by_page():
                    for item in page:
                        fh.write(dumps(item) + b"\n")
                        item_rows = normalize_item(
                            item, offset=entry["offset"], criteria=plan.criteria, query_ids=query_ids
                        )
                        if item_rows:
                            covered.add(item_rows[0].row)
                        rows.extend(item_rows)
                    done += len(page)
                    ctx.progress("collecting", done, total)
        absent = [r for r in range(total) if r not in covered]
        if absent:
            rows.extend(missing_rows(absent, criteria=plan.criteria, query_ids=query_ids))
        rows.sort(key=lambda r: r.row)
        return rows, done
