"""A tiny stateful fake of the Foundry evaluation routes for the client tests (independent of foundry_bridge.mock).

It records every request, answers the eval, run, output-item, dataset and blob routes, and can inject one-shot
faults. Scores are fixed so expectations can be written by hand.
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass, field
from typing import Any

import httpx

from foundry_bridge.catalog import DOCUMENT_RETRIEVAL

ENDPOINT = "https://mock.services.ai.azure.com/api/projects/mock-project"
TOKEN = "s3cr3t-T0KEN-abcdef0123456789"


@dataclass
class Fault:
    pattern: str  # regex on "METHOD /path"
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: dict[str, Any] = field(default_factory=lambda: {"error": {"code": "Boom", "message": "injected"}})
    times: int = 1
    connect_error: bool = False


class FakeFoundry:
    """In-memory evals service behind an ``httpx.MockTransport``."""

    def __init__(
        self,
        *,
        polls_to_complete: int = 2,
        fail_runs: bool = False,
        errored_rows: set[int] | None = None,
        docret_shape: str = "per_metric",
        max_page: int = 100,
    ) -> None:
        self.polls_to_complete = polls_to_complete
        self.fail_runs = fail_runs
        self.errored_rows = errored_rows or set()
        self.docret_shape = docret_shape
        self.max_page = max_page
        self.requests: list[httpx.Request] = []
        self.evals: dict[str, dict[str, Any]] = {}
        self.runs: dict[str, dict[str, Any]] = {}
        self.rows: dict[str, list[dict[str, Any]]] = {}
        self.polls: dict[str, int] = {}
        self.datasets: dict[str, dict[str, Any]] = {}
        self.blobs: dict[str, bytes] = {}
        self.faults: list[Fault] = []
        self._ids = itertools.count(1)
        self.stuck_cursor = False

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handler)

    # ------------------------------------------------------------------------------------------------------------
    def handler(self, request: httpx.Request) -> httpx.Response:
        request.read()
        self.requests.append(request)
        target = f"{request.method} {request.url.path}"
        for fault in self.faults:
            if fault.times > 0 and re.search(fault.pattern, target):
                fault.times -= 1
                if fault.connect_error:
                    raise httpx.ConnectError("connection refused", request=request)
                return httpx.Response(fault.status, headers=fault.headers, json=fault.body)
        if request.url.host.endswith("blob.core.windows.net"):
            return self._blob(request)
        path = request.url.path
        prefix = httpx.URL(ENDPOINT).path
        if not path.startswith(prefix):
            return _error(404, "NotFound", f"no route {path}")
        rest = path[len(prefix) :]
        body = json.loads(request.content) if request.content else None
        m = re.fullmatch(r"/openai/v1/evals", rest)
        if m and request.method == "POST":
            return self._create_eval(body)
        m = re.fullmatch(r"/openai/v1/evals/([^/]+)", rest)
        if m and request.method == "GET":
            ev = self.evals.get(m[1])
            return httpx.Response(200, json=ev) if ev else _error(404, "NotFound", f"eval {m[1]} not found")
        m = re.fullmatch(r"/openai/v1/evals/([^/]+)/runs", rest)
        if m and request.method == "POST":
            return self._create_run(m[1], body)
        m = re.fullmatch(r"/openai/v1/evals/([^/]+)/runs/([^/]+)", rest)
        if m and request.method == "GET":
            return self._get_run(m[1], m[2])
        m = re.fullmatch(r"/openai/v1/evals/([^/]+)/runs/([^/]+)/output_items", rest)
        if m and request.method == "GET":
            return self._items(m[2], request.url.params)
        m = re.fullmatch(r"/datasets/([^/]+)/versions/([^/]+)/startPendingUpload", rest)
        if m and request.method == "POST":
            sas = f"https://acct.blob.core.windows.net/container-{m[1]}?sv=2024&sr=c&sp=rcwl&sig=SIGNATURE123"
            return httpx.Response(
                200,
                json={
                    "blobReference": {
                        "blobUri": f"https://acct.blob.core.windows.net:443/container-{m[1]}",
                        "credential": {"type": "SAS", "credentialType": "SAS", "sasUri": sas},
                    },
                    "pendingUploadId": None,
                    "pendingUploadType": "BlobReference",
                    "version": m[2],
                },
            )
        m = re.fullmatch(r"/datasets/([^/]+)/versions/([^/]+)", rest)
        if m and request.method == "PATCH":
            did = f"azureai://accounts/acct/projects/mock-project/data/{m[1]}/versions/{m[2]}"
            self.datasets[did] = {"id": did, "name": m[1], "version": m[2], "type": "uri_file", **body}
            return httpx.Response(200, json=self.datasets[did])
        return _error(404, "NotFound", f"no route {request.method} {rest}")

    def _blob(self, request: httpx.Request) -> httpx.Response:
        key = request.url.path
        if request.headers.get("if-none-match") == "*" and key in self.blobs:
            return _error(409, "BlobAlreadyExists", "The specified blob already exists.")
        self.blobs[key] = request.content
        return httpx.Response(201)

    def _create_eval(self, body: dict[str, Any]) -> httpx.Response:
        eid = f"eval_{next(self._ids):032x}"
        crit = [{**c, "id": f"{c['name']}_x", "evaluator_version": ""} for c in body["testing_criteria"]]
        self.evals[eid] = {"object": "eval", "id": eid, "name": body.get("name"), "testing_criteria": crit}
        return httpx.Response(201, json=self.evals[eid])

    def _create_run(self, eval_id: str, body: dict[str, Any]) -> httpx.Response:
        if eval_id not in self.evals:
            return _error(404, "NotFound", "eval not found")
        rid = f"evalrun_{next(self._ids):032x}"
        source = body["data_source"]["source"]
        if source["type"] == "file_content":
            rows = [c["item"] for c in source["content"]]
        else:
            ds = self.datasets[source["id"]]
            blob_path = httpx.URL(ds["dataUri"]).path
            rows = [json.loads(line) for line in self.blobs[blob_path].splitlines() if line.strip()]
        self.rows[rid] = rows
        self.polls[rid] = 0
        self.runs[rid] = {
            "object": "eval.run",
            "id": rid,
            "eval_id": eval_id,
            "status": "in_progress",
            "name": body.get("name"),
            "report_url": None,
            "data_source": body["data_source"],
            "error": {"code": None, "message": None},
            "brand_new_field": {"x": 1},
        }
        return httpx.Response(201, json=self.runs[rid])

    def _get_run(self, eval_id: str, run_id: str) -> httpx.Response:
        run = self.runs.get(run_id)
        if run is None:
            return _error(404, "NotFound", "run not found")
        self.polls[run_id] += 1
        if run["status"] == "in_progress" and self.polls[run_id] >= self.polls_to_complete:
            if self.fail_runs:
                run.update(status="failed", error={"code": "QuotaExceeded", "message": "judge deployment quota"})
            else:
                n = len(self.rows[run_id])
                run.update(
                    status="completed",
                    error=None,
                    report_url=f"https://ai.azure.com/r/{run_id}",
                    result_counts={"total": n, "passed": n, "failed": 0, "errored": 0},
                )
        return httpx.Response(200, json=run)

    def _results(self, index: int, criteria: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for c in criteria:
            base = {"type": "azure_ai_evaluator", "name": c["name"]}
            if index in self.errored_rows:
                out.append(
                    {
                        **base,
                        "metric": c["name"],
                        "score": None,
                        "label": None,
                        "passed": None,
                        "threshold": None,
                        "sample": {"error": {"code": "FAILED_EXECUTION", "message": "judge returned garbage"}},
                    }
                )
            elif c["evaluator_name"] == DOCUMENT_RETRIEVAL.name and self.docret_shape == "per_metric":
                for k, metric in enumerate(DOCUMENT_RETRIEVAL.metrics):
                    out.append({**base, "metric": metric.name, "score": 0.5 + k / 20, "label": "pass", "passed": True})
            elif c["evaluator_name"] == DOCUMENT_RETRIEVAL.name:
                props: dict[str, Any] = {}
                for k, metric in enumerate(DOCUMENT_RETRIEVAL.metrics):
                    name = (
                        "total_groundtruth_documents" if metric.name == "total_ground_truth_documents" else metric.name
                    )
                    props[name] = 0.5 + k / 20  # within every metric's documented range
                    props[f"{name}_result"] = "pass"
                    props[f"{name}_passed"] = True
                    props[f"{name}_threshold"] = 0.25
                out.append(
                    {
                        **base,
                        "metric": DOCUMENT_RETRIEVAL.short_name,
                        "score": 0.5,
                        "label": "pass",
                        "passed": True,
                        "threshold": 0.5,
                        "properties": props,
                    }
                )
            else:
                short = c["evaluator_name"].split(".", 1)[-1]
                score = 4 if index % 2 == 0 else 2
                out.append(
                    {
                        **base,
                        "metric": short,
                        "score": score,
                        "label": "pass" if score >= 3 else "fail",
                        "passed": score >= 3,
                        "threshold": 3,
                        "reason": f"row {index}",
                        "status": "completed",
                    }
                )
        return out

    def _items(self, run_id: str, params: httpx.QueryParams) -> httpx.Response:
        run = self.runs[run_id]
        rows = self.rows[run_id]
        limit = min(int(params.get("limit", 20)), self.max_page)
        after = params.get("after")
        start = 0 if after is None or self.stuck_cursor else int(after)
        criteria = self.evals[run["eval_id"]]["testing_criteria"]
        data = [
            {
                "object": "eval.run.output_item",
                "id": str(i + 1),
                "run_id": run_id,
                "eval_id": run["eval_id"],
                "status": "completed",
                "datasource_item_id": i,
                "datasource_item": rows[i],
                "results": self._results(i, criteria),
            }
            for i in range(start, min(start + limit, len(rows)))
        ]
        return httpx.Response(
            200,
            json={
                "data": data,
                "first_id": data[0]["id"] if data else None,
                "last_id": data[-1]["id"] if data else None,
                "has_more": start + limit < len(rows),
            },
        )


def _error(status: int, code: str, message: str) -> httpx.Response:
    return httpx.Response(status, json={"error": {"code": code, "message": message}})


class RecordingSleep:
    """A sleep that records its delays instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
