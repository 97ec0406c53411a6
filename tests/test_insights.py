"""Foundry's own comparison (Insights API ``EvaluationComparison``) through the emulator: the wire shape the public
SDK reads, the numbers against statsmodels on the output items, the typed client, and the side-by-side with the
local verdicts that flags where they disagree."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from azure.core.exceptions import HttpResponseError
from mock_helpers import all_items, client_for, eval_body, inline_source, run_to_completion, sample_rows

from foundry_bridge.canaries import ABSTENTION_TEXT
from foundry_bridge.errors import BackendError
from foundry_bridge.foundry._client import FoundryClient
from foundry_bridge.foundry._insights import (
    INSIGHTS_FEATURE,
    beside_local,
    compare_on_foundry,
    generate_comparison,
)
from foundry_bridge.mock import PROJECT_ENDPOINT, FoundryEmulator
from foundry_bridge.mock._insights import METHOD, MIN_SAMPLES, InsightRoutes
from foundry_bridge.report._foundry import FoundryComparison, render_foundry_markdown

sm_weightstats = pytest.importorskip("statsmodels.stats.weightstats")


class Emulator(FoundryEmulator, InsightRoutes):
    """The emulator with the insight routes registered (what the lines in mock/_emulator.py do; harmless after)."""

    def _register_routes(self) -> None:
        for method, pattern, fn in self._insight_routes():
            self._add(method, pattern, fn)
        super()._register_routes()


class FakeCredential:
    def get_token(self, *scopes: str, **kwargs: Any) -> Any:
        from azure.core.credentials import AccessToken

        return AccessToken("fake-token", int(time.time()) + 3600)


@dataclass
class Runs:
    emulator: Emulator
    eval_id: str
    base: str
    same: str
    worse: str
    scores: Callable[[str, str], np.ndarray]


def _start(http: httpx.Client, eval_id: str, rows: list[dict[str, Any]]) -> str:
    run = http.post(f"/evals/{eval_id}/runs", json={"data_source": inline_source(rows)}).json()
    assert run_to_completion(http, eval_id, run["id"])["status"] == "completed"
    return str(run["id"])


@pytest.fixture
def runs() -> Runs:
    emu = Emulator(polls_to_complete=1)
    http = client_for(emu)
    eval_id = http.post("/evals", json=eval_body()).json()["id"]
    rows = sample_rows()
    worse = [{**r, "response": ABSTENTION_TEXT} if i % 4 != 3 and r.get("response") else r for i, r in enumerate(rows)]
    ids = _start(http, eval_id, rows), _start(http, eval_id, rows), _start(http, eval_id, worse)

    def scores(run_id: str, criterion: str) -> np.ndarray:
        items = all_items(http, eval_id, run_id)
        return np.array([r["score"] for it in items for r in it["results"] if r["name"] == criterion])

    return Runs(emu, eval_id, *ids, scores=scores)


def _client(emu: FoundryEmulator) -> FoundryClient:
    return FoundryClient(PROJECT_ENDPOINT, FakeCredential(), transport=emu.transport(), sleep=lambda _: None)


def test_the_comparison_matches_welch_on_the_output_items(runs: Runs) -> None:
    insight = compare_on_foundry(_client(runs.emulator), runs.eval_id, runs.base, [runs.same, runs.worse])
    assert insight.state == "Succeeded" and insight.result is not None and insight.result.method == METHOD
    by_metric = {(c.testing_criteria, c.metric): c for c in insight.result.comparisons}
    ground = by_metric[("groundedness", "groundedness")]
    base, worse = runs.scores(runs.base, "groundedness"), runs.scores(runs.worse, "groundedness")
    summary = ground.baseline_run_summary
    assert (summary.run_id, summary.sample_count) == (runs.base, base.size)
    assert (summary.average, summary.standard_deviation) == pytest.approx((base.mean(), base.std(ddof=1)))
    same_item, worse_item = ground.compare_items
    assert same_item.treatment_run_id == runs.same and same_item.delta_estimate == 0
    assert same_item.treatment_effect == "Inconclusive" and same_item.p_value == 1.0
    assert worse_item.delta_estimate == pytest.approx(worse.mean() - base.mean())
    _, p = sm_weightstats.CompareMeans.from_data(worse, base).ztest_ind(usevar="unequal")
    assert worse_item.p_value == pytest.approx(p)
    expected = ("Degraded" if p < 0.05 else "Inconclusive") if base.size >= MIN_SAMPLES else "TooFewSamples"
    assert worse_item.treatment_effect == expected == "Degraded"
    assert ground.evaluator == "builtin.groundedness"


def test_the_request_carries_the_preview_header_and_polls_until_succeeded(runs: Runs) -> None:
    client = _client(runs.emulator)
    first = generate_comparison(client, runs.eval_id, runs.base, [runs.worse], display_name="v1 vs v2")
    assert first.state == "Running" and first.result is None and first.display_name == "v1 vs v2"
    assert first.request == {
        "type": "EvaluationComparison",
        "evalId": runs.eval_id,
        "baselineRunId": runs.base,
        "treatmentRunIds": [runs.worse],
    }
    posted = [c.request for c in runs.emulator.router.calls if c.request.url.path.endswith("/insights")]
    assert posted[-1].headers["Foundry-Features"] == INSIGHTS_FEATURE
    assert posted[-1].url.params["api-version"] == "v1" and posted[-1].headers["Repeatability-Request-ID"]


def test_the_public_sdk_reads_the_emulated_insight(runs: Runs) -> None:
    models = pytest.importorskip("azure.ai.projects.models")
    http = httpx.Client(transport=runs.emulator.transport(), base_url=PROJECT_ENDPOINT)
    body = {
        "displayName": "cmp",
        "request": {"type": "EvaluationComparison", "evalId": runs.eval_id, "baselineRunId": runs.base}
        | {"treatmentRunIds": [runs.worse]},
    }
    created = http.post("/insights", params={"api-version": "v1"}, json=body)
    assert created.status_code == 201
    done = http.get(f"/insights/{created.json()['id']}", params={"api-version": "v1"}).json()
    insight = models.Insight(done)
    assert insight.state == models.OperationState.SUCCEEDED and insight.display_name == "cmp"
    assert isinstance(insight.result, models.EvaluationComparisonInsightResult)
    item = insight.result.comparisons[0].compare_items[0]
    assert isinstance(item, models.EvalRunResultCompareItem) and item.treatment_run_id == runs.worse
    assert item.treatment_effect in {e.value for e in models.TreatmentEffectType}
    assert isinstance(item.treatment_run_summary.standard_deviation, float)
    listed = http.get("/insights", params={"api-version": "v1", "evalId": runs.eval_id}).json()["value"]
    assert [i["id"] for i in listed] == [created.json()["id"]]


def test_runs_outside_the_eval_and_missing_names_are_refused(runs: Runs) -> None:
    client = _client(runs.emulator)
    with pytest.raises(HttpResponseError) as err:
        generate_comparison(client, runs.eval_id, runs.base, ["run_nope"])
    assert err.value.status_code == 404 and "run_nope" in str(err.value)
    http = httpx.Client(transport=runs.emulator.transport(), base_url=PROJECT_ENDPOINT)
    bad = http.post("/insights", params={"api-version": "v1"}, json={"request": {"type": "EvaluationComparison"}})
    assert bad.status_code == 400 and "displayName" in bad.json()["error"]["message"]


def test_a_comparison_that_never_finishes_is_a_backend_error(runs: Runs) -> None:
    def stuck(request: httpx.Request) -> httpx.Response:
        response = runs.emulator.handler(request)
        if request.method == "GET" and "/insights/" in request.url.path:
            return httpx.Response(200, json={**response.json(), "state": "Running", "result": None})
        return response

    client = FoundryClient(
        PROJECT_ENDPOINT, FakeCredential(), transport=httpx.MockTransport(stuck), sleep=lambda _: None
    )
    with pytest.raises(BackendError, match="not finished after 3 polls"):
        compare_on_foundry(client, runs.eval_id, runs.base, [runs.worse], max_polls=3)


@dataclass(frozen=True)
class Local:
    """A local comparison row as ``report._foundry.LocalLine`` carries it."""

    candidate: str
    criterion: str
    metric: str
    verdict: str
    test: str = "Wilcoxon signed-rank"
    delta: float | None = -1.0
    p_adjusted: float | None = 0.01

    @property
    def key(self) -> str:
        return f"{self.criterion}:{self.metric}"


def test_foundry_beside_the_local_verdicts_flags_disagreements(runs: Runs) -> None:
    insight = compare_on_foundry(_client(runs.emulator), runs.eval_id, runs.base, [runs.worse])
    local = [
        Local("v2", "groundedness", "groundedness", "worse"),  # Foundry: Degraded
        Local("v2", "relevance", "relevance", "within judge noise"),
        Local("v2", "retrieval", "retrieval", "too few paired queries"),
        Local("v2", "mystery", "score", "better"),
    ]
    rows = {(r.criterion, r.metric): r for r in beside_local(insight, local, {"v2": runs.worse})}
    effects = {(c.testing_criteria, c.metric): c.compare_items[0].treatment_effect for c in insight.result.comparisons}  # type: ignore[union-attr]
    assert rows[("groundedness", "groundedness")].agree is True
    relevance = rows[("relevance", "relevance")]
    assert effects[("relevance", "relevance")] in ("Degraded", "Inconclusive")
    assert relevance.agree is (effects[("relevance", "relevance")] == "Inconclusive")
    retrieval = rows[("retrieval", "retrieval")]
    assert retrieval.agree is False and retrieval.note == "one side had too few samples to test"
    assert rows[("mystery", "score")].agree is None and rows[("mystery", "score")].foundry_effect is None
    assert all(r.candidate == "v2" for r in rows.values())
    flagged = sum(1 for r in rows.values() if r.agree is False)
    side = {"endpoint": PROJECT_ENDPOINT, "eval_id": runs.eval_id, "insight_id": insight.id, "run_ids": {}}
    side |= {"method": insight.result.method, "rows": list(rows.values()), "disagreements": flagged, "error": None}  # type: ignore[union-attr]
    text = render_foundry_markdown(FoundryComparison.model_validate(side))
    assert text.count("⚠") == flagged and f"{flagged} disagreement(s)." in text


@pytest.fixture
def tls_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    from foundry_bridge.mock._server import loopback_certificate, serve

    tls = loopback_certificate(tmp_path / "tls")
    monkeypatch.setenv("SSL_CERT_FILE", str(tls.ca))
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(tls.ca))
    with serve(Emulator(polls_to_complete=1), tls=tls) as running:
        yield running


def test_the_official_client_compares_runs_on_the_emulator(tls_server: Any) -> None:
    projects = pytest.importorskip("azure.ai.projects")
    models = pytest.importorskip("azure.ai.projects.models")
    project = projects.AIProjectClient(endpoint=tls_server.endpoint, credential=FakeCredential())
    openai = project.get_openai_client()
    ev = openai.evals.create(**eval_body())
    run_ids = []
    for rows in (sample_rows(), sample_rows()[:12]):
        run = openai.evals.runs.create(ev.id, data_source=inline_source(rows))
        while run.status in ("queued", "in_progress"):
            run = openai.evals.runs.retrieve(run.id, eval_id=ev.id)
        run_ids.append(run.id)
    request = models.EvaluationComparisonInsightRequest(
        eval_id=ev.id, baseline_run_id=run_ids[0], treatment_run_ids=[run_ids[1]]
    )
    insight = project.beta.insights.generate(models.Insight(display_name="sdk", request=request))
    while insight.state not in (models.OperationState.SUCCEEDED, models.OperationState.FAILED):
        insight = project.beta.insights.get(insight.insight_id)
    assert insight.state == models.OperationState.SUCCEEDED
    items = [c.compare_items[0] for c in insight.result.comparisons]
    assert {i.treatment_run_id for i in items} == {run_ids[1]}
    assert json.dumps(insight.as_dict())  # the SDK's own model, round-tripped


def test_run_of_names_the_eval_and_the_one_service_run(tmp_path: Path) -> None:
    from foundry_bridge.errors import UsageError
    from foundry_bridge.foundry._insights import run_of

    def state(runs: list[dict[str, Any]]) -> Path:
        folder = tmp_path / str(len(runs))
        folder.mkdir()
        body = {"backend": "cloud", "plan_sha256": "x", "status": "completed", "eval_id": "eval_1", "runs": runs}
        (folder / "state.json").write_text(json.dumps(body))
        return folder

    assert run_of(state([{"offset": 0, "count": 5, "run_id": "run_1"}])) == ("eval_1", "run_1")
    with pytest.raises(UsageError, match="2 service runs"):
        run_of(state([{"offset": 0, "count": 5, "run_id": "a"}, {"offset": 5, "count": 5, "run_id": "b"}]))


def test_a_run_with_few_rows_is_too_few_samples(runs: Runs) -> None:
    few = _start(client_for(runs.emulator), runs.eval_id, sample_rows()[: MIN_SAMPLES - 1])
    insight = compare_on_foundry(_client(runs.emulator), runs.eval_id, runs.base, [few])
    assert insight.result is not None
    assert {c.compare_items[0].treatment_effect for c in insight.result.comparisons} == {"TooFewSamples"}
    assert all(c.compare_items[0].treatment_run_summary.sample_count < MIN_SAMPLES for c in insight.result.comparisons)
