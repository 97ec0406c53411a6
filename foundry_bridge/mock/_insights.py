"""The Insights API's evaluation comparison, emulated: ``POST /insights``, ``GET /insights/{id}``, ``GET /insights``.

Wire format as azure-ai-projects 2.x's ``beta.insights`` sends and reads it. Where the service is undocumented
(docs/mock.md says so): the runs' scored rows are two independent samples, ``deltaEstimate`` the difference of
means, ``pValue`` Welch's test in its normal approximation; ``treatmentEffect`` is ``TooFewSamples`` under
``MIN_SAMPLES`` rows, else ``Improved``/``Degraded`` at p < 0.05 by the metric's direction, else ``Inconclusive``;
the runs must be of ``evalId`` (404) and completed (400); the insight is ``Running`` on creation and
``Succeeded`` from the first GET on. Scores are read through the emulator's own output-items route.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import httpx

from .._io import loads
from ..catalog import CATALOG
from ..metrics._dist import normal_sf
from ._common import EmulatorBase, _bad, _HttpError, _json_response, _not_found

__all__ = ["MIN_SAMPLES", "InsightRoutes"]

MIN_SAMPLES = 10
ALPHA = 0.05
METHOD = "Welch two-sample test, normal approximation (foundry_bridge emulator)"
_TRANSIENT_RETRIES = 20


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


class InsightRoutes(EmulatorBase):
    """Handlers of ``/insights``: insights are kept in memory beside the store, computed when created."""

    handler: Callable[[httpx.Request], httpx.Response]

    def _insight_routes(self) -> list[tuple[str, str, Callable[..., httpx.Response]]]:
        """``(method, path pattern, handler)`` rows for the emulator's route table."""
        return [
            ("POST", r"/insights", self._create_insight),
            ("GET", r"/insights", self._list_insights),
            ("GET", r"/insights/(?P<insight_id>[^/]+)", self._get_insight),
        ]

    @property
    def _insights(self) -> dict[str, dict[str, Any]]:
        store: dict[str, dict[str, Any]] | None = self.__dict__.get("_insight_store")
        if store is None:
            store = self.__dict__["_insight_store"] = {}
        return store

    def _create_insight(self, request: httpx.Request, **_: Any) -> httpx.Response:
        body = self._object_body(request)
        name = body.get("displayName")
        if not isinstance(name, str) or not name:
            raise _bad("displayName is required.", "displayName")
        req = body.get("request")
        if not isinstance(req, dict) or req.get("type") != "EvaluationComparison":
            raise _bad("request.type must be 'EvaluationComparison' (the only insight the emulator computes).", "type")
        eval_id, baseline, treatments = req.get("evalId"), req.get("baselineRunId"), req.get("treatmentRunIds")
        if not isinstance(eval_id, str) or not isinstance(baseline, str):
            raise _bad("request.evalId and request.baselineRunId are required strings.", "request")
        if not isinstance(treatments, list) or not treatments or not all(isinstance(t, str) for t in treatments):
            raise _bad("request.treatmentRunIds must be a non-empty list of run ids.", "treatmentRunIds")
        result = self._comparison(request, eval_id, baseline, treatments)
        insight: dict[str, Any] = {
            "id": str(uuid.uuid4()),
            "metadata": {"createdAt": _now()},
            "state": "Running",
            "displayName": name,
            "request": {"type": "EvaluationComparison", "evalId": eval_id, "baselineRunId": baseline}
            | {"treatmentRunIds": list(treatments)},
        }
        self._insights[insight["id"]] = {"insight": insight, "result": result}
        return _json_response(201, insight)

    def _get_insight(self, request: httpx.Request, insight_id: str, **_: Any) -> httpx.Response:
        held = self._insights.get(insight_id)
        if held is None:
            raise _not_found("Insight", insight_id)
        insight = held["insight"]
        if insight["state"] == "Running":
            insight |= {"state": "Succeeded", "result": held["result"]}
            insight["metadata"]["completedAt"] = _now()
        return _json_response(200, insight)

    def _list_insights(self, request: httpx.Request, **_: Any) -> httpx.Response:
        params = request.url.params
        chosen = [
            h["insight"]
            for h in reversed(list(self._insights.values()))  # most recent first, as documented
            if params.get("type") in (None, h["insight"]["request"]["type"])
            and params.get("evalId") in (None, h["insight"]["request"]["evalId"])
        ]
        return _json_response(200, {"value": chosen})

    # -- the comparison ------------------------------------------------------------------------------------------
    def _comparison(self, request: httpx.Request, eval_id: str, baseline: str, treatments: list[str]) -> dict[str, Any]:
        criteria = {c["name"]: c.get("evaluator_name", "") for c in self._eval(eval_id)["testing_criteria"]}
        scores = {run_id: self._run_scores(request, eval_id, run_id) for run_id in [baseline, *treatments]}
        comparisons = []
        for (criterion, metric), base_values in scores[baseline].items():
            evaluator = criteria.get(criterion, "")
            items = [
                _compare_item(t, base_values, scores[t].get((criterion, metric), []), _direction(evaluator, metric))
                for t in treatments
            ]
            comparisons.append(
                {
                    "testingCriteria": criterion,
                    "metric": metric,
                    "evaluator": evaluator,
                    "baselineRunSummary": _summary(baseline, base_values),
                    "compareItems": items,
                }
            )
        return {"type": "EvaluationComparison", "comparisons": comparisons, "method": METHOD}

    def _run_scores(self, request: httpx.Request, eval_id: str, run_id: str) -> dict[tuple[str, str], list[float]]:
        """(criterion, metric) → the run's numeric scores, paged through the output-items route."""
        run = self.store.runs.get(run_id)
        if run is None or run.get("eval_id") != eval_id:
            raise _HttpError(404, "NotFound", f"Run '{run_id}' was not found in eval '{eval_id}'.")
        if run.get("status") != "completed":
            raise _bad(f"Run '{run_id}' is {run.get('status')!r}: only completed runs can be compared.", "request")
        project = request.url.path.split("/insights", 1)[0]
        url = request.url.copy_with(path=f"{project}/openai/v1/evals/{eval_id}/runs/{run_id}/output_items", query=None)
        out: dict[tuple[str, str], list[float]] = {}
        after: str | None = None
        while True:
            page = self._page_of(url.copy_merge_params({"limit": 100} | ({"after": after} if after else {})))
            for item in page["data"]:
                for res in item.get("results") or []:
                    score = res.get("score")
                    if isinstance(score, int | float) and not isinstance(score, bool) and math.isfinite(score):
                        out.setdefault((str(res.get("name")), str(res.get("metric"))), []).append(float(score))
            if not page.get("has_more") or not page["data"]:
                return out
            after = page["data"][-1]["id"]

    def _page_of(self, url: httpx.URL) -> dict[str, Any]:
        for _ in range(_TRANSIENT_RETRIES):
            response = self.handler(httpx.Request("GET", url))
            if response.status_code == 200:
                return dict(loads(response.content))
            if response.status_code not in (408, 429) and response.status_code < 500:
                raise _HttpError(response.status_code, "UserError", f"could not read the run's output items: {url}")
        raise _HttpError(503, "ServiceUnavailable", "could not read the runs' output items; try again")


def _direction(evaluator: str, metric: str) -> bool | None:
    spec = CATALOG.get(evaluator)
    if spec is None:
        return None
    try:
        return spec.metric(metric).higher_is_better
    except KeyError:
        return None


def _summary(run_id: str, values: list[float]) -> dict[str, Any]:
    n = len(values)
    mean = sum(values) / n if n else 0.0
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
    return {"runId": run_id, "sampleCount": n, "average": mean, "standardDeviation": sd}


def _compare_item(run_id: str, base: list[float], treat: list[float], higher_is_better: bool | None) -> dict[str, Any]:
    b, t = _summary("", base), _summary(run_id, treat)
    delta = t["average"] - b["average"]
    se = math.sqrt(
        (b["standardDeviation"] ** 2 / max(1, len(base))) + (t["standardDeviation"] ** 2 / max(1, len(treat)))
    )
    p = (1.0 if delta == 0 else 0.0) if se == 0 else min(1.0, 2 * normal_sf(abs(delta) / se))
    if min(len(base), len(treat)) < MIN_SAMPLES:
        effect = "TooFewSamples"
    elif p >= ALPHA:
        effect = "Inconclusive"
    elif higher_is_better is None:
        effect = "Changed"
    else:
        effect = "Improved" if (delta > 0) == higher_is_better else "Degraded"
    return {"treatmentRunId": run_id, "treatmentRunSummary": t, "deltaEstimate": delta, "pValue": p} | {
        "treatmentEffect": effect
    }
