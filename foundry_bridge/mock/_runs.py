"""Runs: create (inline rows, an uploaded dataset or a target), poll to completion, list, cancel, delete."""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from typing import Any

import httpx
import orjson

from .._io import dumps
from ..mapping.plan import JsonlRows, RowSpool
from ._common import MOCK_USER, EmulatorBase, _account, _bad, _HttpError, _json_response, _RunState
from ._datasets import rows_from_dataset
from ._evaluators import served
from ._output import CriterionOutput, RunOutput
from ._scoring import Outcome, Scored, criterion_from_wire, render_mapping, score, tally

__all__ = ["RunRoutes"]


_RUN_STATUSES = ("queued", "in_progress", "completed", "canceled", "failed")
_SUPPORTED_DATA_SOURCES = ("jsonl", "azure_ai_target_completions")
_VERDICTS: tuple[Outcome, Outcome, Outcome] = ("passed", "failed", "errored")
_INJECTED = "evaluator execution failed (fault injected by the foundry_bridge emulator)"
_IN_PROGRESS_COUNTS = {"total": 0, "passed": 0, "failed": 0}  # recorded: errored/skipped appear on completion


class RunRoutes(EmulatorBase):
    """The run handlers: a run finishes on the poll after ``polls_to_complete``, and is scored then."""

    def _target_samples(self, ds: dict[str, Any], rows: JsonlRows) -> JsonlRows:
        """Deterministic stand-in outputs for a model/agent target (no model is called), spooled."""
        target = ds.get("target")
        if not isinstance(target, dict) or target.get("type") not in ("azure_ai_model", "azure_ai_agent"):
            raise _bad("data_source.target must be {type: azure_ai_model|azure_ai_agent, ...}.", "data_source.target")
        template = (ds.get("input_messages") or {}).get("template") or []
        samples = RowSpool()
        for row in rows:
            texts = []
            for message in template if isinstance(template, list) else []:
                content = message.get("content") if isinstance(message, dict) else None
                text = content.get("text") if isinstance(content, dict) else content
                if isinstance(text, str):
                    value = render_mapping({"t": text}, row).get("t")
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
        return samples.rows()

    def _create_run(self, request: httpx.Request, eval_id: str, v1: str | None = None, **_: Any) -> httpx.Response:
        legacy = self._check_api_version(request, v1)
        ev = self._eval(eval_id)
        body = self._object_body(request)
        ds = _data_source(body)
        rows, samples = self._rows_and_samples(ds["source"])
        _check_required(ev, rows)
        target = None
        if ds["type"] == "azure_ai_target_completions":
            samples = self._target_samples(ds, rows)
            target = ds["target"]["type"]
            if target == "azure_ai_agent":
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
            target=target,
            account=_account(request),
            project=self._project(request),
        )
        run = _new_run(run_id, eval_id, ds, metadata, body.get("name"), now)
        created = _json_response(201, run)  # serialized before _serve turns it into the later view: no copy
        self._serve(request, run, ds, metadata, now)
        self.store.runs[run_id] = run
        self.store.run_state[run_id] = state
        return created

    def _rows_and_samples(self, source: dict[str, Any]) -> tuple[JsonlRows, Sequence[dict[str, Any] | None]]:
        """The rows of ``data_source.source`` (inline ``file_content`` or an uploaded ``file_id``), spooled to a
        file, and the sample each inline row carries (None elsewhere; spooled only when a row carries one)."""
        rows = RowSpool()
        if source.get("type") == "file_content":
            content = source.get("content")
            if not isinstance(content, list) or not content:
                raise _bad("data_source.source.content must be a non-empty array.", "data_source.source.content")
            samples: list[dict[str, Any] | None] = []
            for i, entry in enumerate(content):
                if not isinstance(entry, dict) or not isinstance(entry.get("item"), dict):
                    raise _bad(
                        f"data_source.source.content[{i}] must be an object with an 'item' object.",
                        f"data_source.source.content[{i}]",
                    )
                rows.append(entry["item"])
                samples.append(entry.get("sample") if isinstance(entry.get("sample"), dict) else None)
            if not any(x is not None for x in samples):
                return rows.rows(), _NoSamples(len(samples))
            spooled = RowSpool()
            for x in samples:
                spooled.append(x)
            return rows.rows(), spooled.rows()
        if source.get("type") == "file_id":
            if not isinstance(source.get("id"), str):
                raise _bad("data_source.source.id is required (a dataset version id).", "data_source.source.id")
            rows_from_dataset(self.store, source["id"], rows)
            spooled_rows = rows.rows()
            if not spooled_rows:
                raise _bad(f"dataset '{source['id']}' holds no rows.", "data_source.source.id")
            return spooled_rows, _NoSamples(len(spooled_rows))
        raise _bad(
            f"data_source.source.type {source.get('type')!r} is not supported (file_content or file_id).",
            "data_source.source.type",
        )

    def _serve(
        self,
        request: httpx.Request,
        run: dict[str, Any],
        ds: dict[str, Any],
        metadata: dict[str, Any] | None,
        now: int,
    ) -> None:
        """Turn the created run into what later GETs show: rows unwrapped (or, for targets, turned into a
        dataset), created_by, trigger_type, the evaluation-run properties. The inline rows are not kept here: the
        run's spool holds them and ``_shown`` writes them into each answer."""
        served_ds = {**ds, "source": dict(ds["source"])}
        if ds["type"] == "azure_ai_target_completions":
            stamp = time.strftime("%Y-%m-%d_%H%M%S", time.gmtime(now))
            inline_name = f"eval-data-{stamp}_{uuid.uuid4().hex[:5]}_UTC"
            served_ds["source"] = {"type": "file_id", "id": self._dataset_id(request, inline_name, "1")}
            metadata = {"is_inline_dataset": "true", "has_nested_data": "False", **(metadata or {})}
        elif ds["source"].get("type") == "file_content":
            served_ds["source"]["content"] = []  # filled from the spool when served (``_shown``)
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
            return
        self._complete(run_id, run, state, now)

    def _complete(self, run_id: str, run: dict[str, Any], state: _RunState, now: int) -> None:
        """Score every row, then show the run completed with its counts, usage, report URL and output items."""
        output, usage = self._score_rows(run_id, state, now)
        run["status"] = "completed"
        run["properties"]["job_logs"] = (
            f"azureai://accounts/{state.account}/projects/{state.project}/evaluationresults/"
            f"eval-result-{run_id}-MOCK/versions/1"
        )
        run["report_url"] = (
            f"https://ai.azure.com/nextgen/r/mock,mock-rg,,{state.account},{state.project}"
            f"/build/evaluations/{state.eval_id}/run/{run_id}"
        )
        rows = ([(c.criterion.name, _VERDICTS[c.verdicts[i]]) for c in output.criteria] for i in range(len(output)))
        run["result_counts"], run["per_testing_criteria_results"] = tally(
            rows, [c.criterion.name for c in output.criteria]
        )
        run["per_model_usage"] = _model_usage(usage)
        self.store.output_items[run_id] = output

    def _score_rows(self, run_id: str, state: _RunState, now: int) -> tuple[RunOutput, dict[str, dict[str, int]]]:
        """Every row under every criterion, kept compactly (an injected errored row fails as the service does), and
        the judges' token usage summed per model."""
        wire = self.store.evals[state.eval_id]["testing_criteria"]
        criteria = [criterion_from_wire(c, _served(c), self.docret_shape, self.model_version) for c in wire]
        outs = [CriterionOutput(c) for c in criteria]
        only = set(self.faults.errored_criteria)
        unavailable: dict[str, str] = {}
        usage: dict[str, dict[str, int]] = {}
        row_passed = bytearray()
        for i, (row, sample) in enumerate(zip(state.rows, state.samples, strict=True)):
            ok = True
            for crit, out in zip(criteria, outs, strict=True):
                if i in state.errored_rows and (not only or crit.name in only):
                    scored = Scored("errored", error=_INJECTED)
                else:
                    scored = score(crit, row, sample, unavailable)
                out.add(i, scored)
                ok = ok and scored.verdict == "passed"
                if scored.usage and crit.model:
                    _add_usage(usage, crit.model, scored.usage)
            row_passed.append(ok)
        output = RunOutput(run_id, state.eval_id, now, state.rows, state.samples, state.target, outs, row_passed)
        return output, usage

    @staticmethod
    def _shown(run: dict[str, Any], state: _RunState) -> dict[str, Any]:
        """``run`` as served: an inline run's rows read back from its spool as written (never parsed)."""
        source = run["data_source"]["source"]
        if source.get("type") != "file_content":
            return run
        content = [orjson.Fragment(line) for line in state.rows.lines(0, len(state.rows))]
        return {**run, "data_source": {**run["data_source"], "source": {**source, "content": content}}}

    def _get_run(
        self, request: httpx.Request, eval_id: str, run_id: str, v1: str | None = None, **_: Any
    ) -> httpx.Response:
        self._check_api_version(request, v1)
        run, state = self._run(eval_id, run_id)
        state.polls += 1
        self._advance(run_id)
        return _json_response(200, self._shown(run, state))

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
        page = self._page(request, runs)
        page["data"] = [self._shown(run, self.store.run_state[run["id"]]) for run in page["data"]]
        return _json_response(200, page)

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
        return _json_response(200, self._shown(run, _state))

    def _delete_run(
        self, request: httpx.Request, eval_id: str, run_id: str, v1: str | None = None, **_: Any
    ) -> httpx.Response:
        self._check_api_version(request, v1)
        self._run(eval_id, run_id)
        self._forget_run(run_id)
        return _json_response(200, {"object": "eval.run.deleted", "deleted": True, "run_id": run_id})


def _data_source(body: dict[str, Any]) -> dict[str, Any]:
    """The run body's ``data_source``, checked: a supported type with a ``source`` object."""
    ds = body.get("data_source")
    if not isinstance(ds, dict):
        raise _bad("data_source is required (an object).", "data_source")
    if ds.get("type") not in _SUPPORTED_DATA_SOURCES:
        raise _bad(
            f"data_source.type {ds.get('type')!r} is not supported by the emulator "
            f"(supported: {', '.join(_SUPPORTED_DATA_SOURCES)}).",
            "data_source.type",
        )
    if not isinstance(ds.get("source"), dict):
        raise _bad("data_source.source is required (an object).", "data_source.source")
    return ds


class _NoSamples(Sequence[None]):
    """The samples of a run whose rows carry none: ``n`` Nones, kept as a number."""

    def __init__(self, n: int) -> None:
        self._n = n

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [None] * len(range(self._n)[index])
        range(self._n)[index]  # IndexError
        return None


def _check_required(ev: dict[str, Any], rows: Sequence[dict[str, Any]]) -> None:
    """Every row holds the fields the eval's item schema requires."""
    schema = ev["data_source_config"].get("schema", {}).get("item", {})
    required = schema.get("required") if isinstance(schema, dict) else None
    for i, row in enumerate(rows):
        for key in required or []:
            if key not in row:
                raise _bad(
                    f"row {i}: required field '{key}' (data_source_config.item_schema.required) is missing.",
                    f"data_source.source.content[{i}].item.{key}",
                )


def _served(wire: dict[str, Any]) -> Any:
    found = served(wire["evaluator_name"])
    if found is None:  # create refuses unserved names, so a stored criterion always resolves
        raise _HttpError(500, "InternalServerError", f"unserved evaluator {wire['evaluator_name']!r}")
    return found


def _add_usage(usage: dict[str, dict[str, int]], model: str, add: dict[str, int]) -> None:
    u = usage.setdefault(model, {"invocation_count": 0, "total_tokens": 0, "prompt_tokens": 0, "completion_tokens": 0})
    u["invocation_count"] += 1
    for key in ("total_tokens", "prompt_tokens", "completion_tokens"):
        u[key] += add.get(key, 0)


def _model_usage(usage: dict[str, dict[str, int]]) -> list[dict[str, Any]]:
    """``per_model_usage`` as recorded (May 2026): one row per model in order of first use, then the
    ``azure_ai_evaluation`` row summing them."""
    rows: list[dict[str, Any]] = [{"model_name": model, **u, "cached_tokens": 0} for model, u in usage.items()]
    if rows:
        keys = ("invocation_count", "total_tokens", "prompt_tokens", "completion_tokens")
        total = {k: sum(u[k] for u in usage.values()) for k in keys}
        rows.append({"model_name": "azure_ai_evaluation", **total, "cached_tokens": 0})
    return rows


def _new_run(
    run_id: str, eval_id: str, ds: dict[str, Any], metadata: dict[str, Any] | None, name: Any, now: int
) -> dict[str, Any]:
    """A run as the create call answers it."""
    return {
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
        "name": name or f"run-{run_id[-8:]}",
        "report_url": None,
        "result_counts": dict(_IN_PROGRESS_COUNTS),
        "per_model_usage": [],
        "per_testing_criteria_results": [],
        "error": {"code": None, "message": None, "correlation_id": None, "inner_error": None},
    }
