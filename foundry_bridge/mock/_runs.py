"""Runs: create (inline rows, an uploaded dataset or a target), poll to completion, list, cancel, delete."""

from __future__ import annotations

import time
import uuid
from typing import Any

import httpx

from .._io import dumps
from ..catalog import CATALOG
from ._common import MOCK_USER, EmulatorBase, _account, _bad, _copy, _HttpError, _json_response, _RunState
from ._datasets import rows_from_dataset
from ._scoring import RowScore, Verdict, errored_results, render_mapping, result_metrics, score_row, tally

__all__ = ["RunRoutes"]


_EMPTY_ITEM_SAMPLE: dict[str, Any] = {
    "error": None,
    "finish_reason": "",
    "input": [],
    "max_completion_tokens": None,
    "model": "",
    "output": [],
    "seed": None,
    "temperature": None,
    "top_p": None,
    "usage": None,
}
_RUN_STATUSES = ("queued", "in_progress", "completed", "canceled", "failed")
_SUPPORTED_DATA_SOURCES = ("jsonl", "azure_ai_target_completions")


class RunRoutes(EmulatorBase):
    """The run handlers: a run finishes on the poll after ``polls_to_complete``, and is scored then."""

    def _target_samples(self, ds: dict[str, Any], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Deterministic stand-in outputs for a model/agent target (no model is called)."""
        target = ds.get("target")
        if not isinstance(target, dict) or target.get("type") not in ("azure_ai_model", "azure_ai_agent"):
            raise _bad("data_source.target must be {type: azure_ai_model|azure_ai_agent, ...}.", "data_source.target")
        template = (ds.get("input_messages") or {}).get("template") or []
        samples = []
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
        return samples

    def _create_run(self, request: httpx.Request, eval_id: str, v1: str | None = None, **_: Any) -> httpx.Response:
        legacy = self._check_api_version(request, v1)
        ev = self._eval(eval_id)
        body = self._object_body(request)
        ds = _data_source(body)
        rows, samples = self._rows_and_samples(ds["source"])
        _check_required(ev, rows)
        datasource_items = [dict(r) for r in rows]
        if ds["type"] == "azure_ai_target_completions":
            outputs = self._target_samples(ds, rows)
            samples = list(outputs)
            agent = ds["target"]["type"] == "azure_ai_agent"
            _add_target_outputs(datasource_items, outputs, agent=agent)
            if agent:
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
            datasource_items=datasource_items,
            account=_account(request),
            project=self._project(request),
        )
        run = _new_run(run_id, eval_id, ds, metadata, body.get("name"), now)
        created_view = _copy(run)
        self._serve(request, run, ds, rows, metadata, now)
        self.store.runs[run_id] = run
        self.store.run_state[run_id] = state
        return _json_response(201, created_view)

    def _rows_and_samples(self, source: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any] | None]]:
        """The rows of ``data_source.source`` (inline ``file_content`` or an uploaded ``file_id``) and the
        sample each inline row carries (None elsewhere)."""
        if source.get("type") == "file_content":
            content = source.get("content")
            if not isinstance(content, list) or not content:
                raise _bad("data_source.source.content must be a non-empty array.", "data_source.source.content")
            rows, samples = [], []
            for i, entry in enumerate(content):
                if not isinstance(entry, dict) or not isinstance(entry.get("item"), dict):
                    raise _bad(
                        f"data_source.source.content[{i}] must be an object with an 'item' object.",
                        f"data_source.source.content[{i}]",
                    )
                rows.append(entry["item"])
                samples.append(entry.get("sample") if isinstance(entry.get("sample"), dict) else None)
            return rows, samples
        if source.get("type") == "file_id":
            if not isinstance(source.get("id"), str):
                raise _bad("data_source.source.id is required (a dataset version id).", "data_source.source.id")
            rows = rows_from_dataset(self.store, source["id"])
            if not rows:
                raise _bad(f"dataset '{source['id']}' holds no rows.", "data_source.source.id")
            return rows, [None] * len(rows)
        raise _bad(
            f"data_source.source.type {source.get('type')!r} is not supported (file_content or file_id).",
            "data_source.source.type",
        )

    def _serve(
        self,
        request: httpx.Request,
        run: dict[str, Any],
        ds: dict[str, Any],
        rows: list[dict[str, Any]],
        metadata: dict[str, Any] | None,
        now: int,
    ) -> None:
        """Turn the created run into what later GETs show: rows unwrapped (or, for targets, turned into a
        dataset), created_by, trigger_type, the evaluation-run properties."""
        served_ds = _copy(ds)
        if ds["type"] == "azure_ai_target_completions":
            stamp = time.strftime("%Y-%m-%d_%H%M%S", time.gmtime(now))
            inline_name = f"eval-data-{stamp}_{uuid.uuid4().hex[:5]}_UTC"
            served_ds["source"] = {"type": "file_id", "id": self._dataset_id(request, inline_name, "1")}
            metadata = {"is_inline_dataset": "true", "has_nested_data": "False", **(metadata or {})}
        elif ds["source"].get("type") == "file_content":
            served_ds["source"]["content"] = [_copy(r) for r in rows]
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
            self.store.output_items[run_id] = []
            return
        self._complete(run_id, run, state, now)

    def _complete(self, run_id: str, run: dict[str, Any], state: _RunState, now: int) -> None:
        """Score every row, then show the run completed with its counts, usage, report URL and output items."""
        criteria = self.store.evals[state.eval_id]["testing_criteria"]
        usage: dict[str, dict[str, int]] = {}
        verdict_rows: list[list[tuple[str, Verdict]]] = []
        items = []
        for i, (row, sample) in enumerate(zip(state.rows, state.samples, strict=True)):
            results, verdicts = self._score(i, row, sample, state, criteria, usage)
            verdict_rows.append(verdicts)
            items.append(
                {
                    "object": "eval.run.output_item",
                    "id": str(i + 1),
                    "run_id": run_id,
                    "eval_id": state.eval_id,
                    "created_at": now,
                    "status": "completed",
                    "datasource_item_id": i,
                    "datasource_item": state.datasource_items[i],
                    "results": results,
                    "sample": dict(_EMPTY_ITEM_SAMPLE),
                }
            )
            state.passed_rows.append(all(v == "passed" for _, v in verdicts))
        host = {"account": state.account, "project": state.project}
        run["status"] = "completed"
        run["properties"]["job_logs"] = (
            f"azureai://accounts/{host['account']}/projects/{host['project']}/evaluationresults/"
            f"eval-result-{run_id}-MOCK/versions/1"
        )
        run["report_url"] = (
            f"https://ai.azure.com/nextgen/r/mock,mock-rg,,{host['account']},{host['project']}"
            f"/build/evaluations/{state.eval_id}/run/{run_id}"
        )
        totals, per_criteria = tally(verdict_rows, [c["name"] for c in criteria])
        run["result_counts"] = totals
        run["per_model_usage"] = [{"model_name": model, **u, "cached_tokens": 0} for model, u in sorted(usage.items())]
        run["per_testing_criteria_results"] = per_criteria
        self.store.output_items[run_id] = items

    def _score(
        self,
        i: int,
        row: dict[str, Any],
        sample: dict[str, Any] | None,
        state: _RunState,
        criteria: list[dict[str, Any]],
        usage: dict[str, dict[str, int]],
    ) -> tuple[list[dict[str, Any]], list[tuple[str, Verdict]]]:
        """Row ``i`` under every criterion (an injected errored row fails as the service does); the judges' token
        usage is added to ``usage`` per model."""
        only = set(self.faults.errored_criteria)
        results: list[dict[str, Any]] = []
        verdicts: list[tuple[str, Verdict]] = []
        for crit in criteria:
            spec = CATALOG.get(crit["evaluator_name"])
            if i in state.errored_rows and (not only or crit["name"] in only):
                metrics = result_metrics(spec, crit["evaluator_name"], self.docret_shape)
                message = (
                    "(SystemError) 100% of the batch run failed. (UserError) evaluator execution failed "
                    "(fault injected by the foundry_bridge emulator)"
                )
                scored = RowScore(errored_results(crit["name"], metrics, message), "errored")
            else:
                scored = score_row(crit, spec, row, sample, docret_shape=self.docret_shape)
            results.extend(scored.results)
            verdicts.append((crit["name"], scored.verdict))
            if scored.model:
                u = usage.setdefault(
                    scored.model, {"invocation_count": 0, "total_tokens": 0, "prompt_tokens": 0, "completion_tokens": 0}
                )
                u["invocation_count"] += 1
                for key in ("total_tokens", "prompt_tokens", "completion_tokens"):
                    u[key] += scored.usage.get(key, 0)
        return results, verdicts

    def _get_run(
        self, request: httpx.Request, eval_id: str, run_id: str, v1: str | None = None, **_: Any
    ) -> httpx.Response:
        self._check_api_version(request, v1)
        run, state = self._run(eval_id, run_id)
        state.polls += 1
        self._advance(run_id)
        return _json_response(200, run)

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
        return _json_response(200, self._page(request, runs))

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
            self.store.output_items[run_id] = []
        return _json_response(200, run)

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


def _check_required(ev: dict[str, Any], rows: list[dict[str, Any]]) -> None:
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


def _add_target_outputs(items: list[dict[str, Any]], samples: list[dict[str, Any]], *, agent: bool) -> None:
    """A target's stand-in outputs, flattened into each datasource item as the service shows them."""
    for item, sample in zip(items, samples, strict=True):
        item["sample.output_text"] = sample["output_text"]
        item["sample.output_status"] = sample["output_status"]
        item["sample.output_status.status"] = "success"
        item["sample.output_status.message"] = ""
        if agent:
            item["sample.output_items"] = sample["output_items"]


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
        "result_counts": {"total": 0, "passed": 0, "failed": 0, "errored": 0, "skipped": 0},
        "per_model_usage": [],
        "per_testing_criteria_results": [],
        "error": {"code": None, "message": None, "correlation_id": None, "inner_error": None},
    }
