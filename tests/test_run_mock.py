"""End to end on the in-process emulator (foundry_bridge.mock): the same client code the cloud backend runs."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import httpx
import pytest

from foundry_bridge._io import loads
from foundry_bridge.catalog import DOCUMENT_RETRIEVAL
from foundry_bridge.dataset import read_records
from foundry_bridge.foundry import RunFailedError, StaticTokenCredential
from foundry_bridge.mapping import build_plan, load_mapping
from foundry_bridge.mapping.plan import Plan
from foundry_bridge.mock import FaultConfig, FoundryEmulator
from foundry_bridge.runner import MOCK_ENDPOINT, get_backend, read_results, run_evaluation

TOKEN = "eyJ0eXAiOiJKV1Q.mock-secret-token.Zm9vYmFy"
N_METRICS = len(DOCUMENT_RETRIEVAL.metrics) + 3


def _plan(path: Path) -> Plan:
    mapping = load_mapping(None)
    return build_plan(read_records(path, mapping), mapping, dataset_path=path)


@pytest.fixture
def plan(benefits_jsonl: Path) -> Plan:
    return _plan(benefits_jsonl)


def mock(emulator: FoundryEmulator, **kw: object):  # type: ignore[no-untyped-def]
    return get_backend("mock", emulator=emulator, credential=StaticTokenCredential(TOKEN), sleep=lambda s: None, **kw)


def _requests(emulator: FoundryEmulator) -> list[httpx.Request]:
    return [call.request for call in emulator.router.calls]


@pytest.mark.parametrize("shape", ["single", "per_metric"])
def test_sample_runs_to_completion_with_every_criterion_on_every_row(plan: Plan, tmp_path: Path, shape: str) -> None:
    emu = FoundryEmulator(docret_shape=shape)  # type: ignore[arg-type]
    summary = run_evaluation(plan, tmp_path / "run", mock(emu))
    rows = read_results(tmp_path / "run")
    assert len(rows) == 14 * N_METRICS
    for r in range(14):
        got = {(x.criterion, x.metric) for x in rows if x.row == r}
        assert {c for c, _ in got} == {c.name for c in plan.criteria}
        assert {m for c, m in got if c == "document_retrieval"} == {m.name for m in DOCUMENT_RETRIEVAL.metrics}
    assert all(x.error is None and x.score is not None for x in rows)
    assert len(emu.store.evals) == 1 and len(emu.store.runs) == 1
    assert summary.passed + summary.failed == 14 * 4 and summary.errored == 0
    manifest = loads((tmp_path / "run" / "manifest.json").read_bytes())
    assert manifest["backend"] == "mock"
    assert {e["evaluator_name"] for e in manifest["evaluators"]} == {c.evaluator for c in plan.criteria}


def test_exact_requests_paths_bodies_and_auth_header(plan: Plan, tmp_path: Path) -> None:
    emu = FoundryEmulator(polls_to_complete=1)
    run_evaluation(plan, tmp_path / "run", mock(emu))
    reqs = _requests(emu)
    base = httpx.URL(MOCK_ENDPOINT).path + "/openai/v1/evals"
    (eval_id,) = emu.store.evals
    (run_id,) = emu.store.runs
    assert [(r.method, r.url.path) for r in reqs] == [
        ("POST", base),
        ("POST", f"{base}/{eval_id}/runs"),
        ("GET", f"{base}/{eval_id}/runs/{run_id}"),
        ("GET", f"{base}/{eval_id}/runs/{run_id}"),
        ("GET", f"{base}/{eval_id}/runs/{run_id}/output_items"),
    ]
    assert json.loads(reqs[0].content) == plan.eval_body
    assert json.loads(reqs[1].content)["data_source"]["source"] == {"type": "file_content", "content": plan.items}
    assert all(r.headers["authorization"] == f"Bearer {TOKEN}" for r in reqs)
    assert all(not r.url.query or b"api-version" not in r.url.query for r in reqs)


def test_injected_429s_and_500s_are_survived(plan: Plan, tmp_path: Path) -> None:
    emu = FoundryEmulator(faults=FaultConfig(rate_limit_every=3, server_error_every=4, retry_after=2))
    run_evaluation(plan, tmp_path / "run", mock(emu))
    statuses = {status for status, _ in emu.injected_faults}
    assert statuses == {429, 500}
    assert len(emu.store.runs) == 1 and len(read_results(tmp_path / "run")) == 14 * N_METRICS


def test_crash_after_the_run_is_created_then_resume_creates_no_second_run(plan: Plan, tmp_path: Path) -> None:
    emu = FoundryEmulator(polls_to_complete=3)
    backend = mock(emu)

    def crash(stage: str, done: int, total: int | None) -> None:
        if stage == "polling" and done == 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_evaluation(plan, tmp_path / "run", backend, progress=crash)
    state = loads((tmp_path / "run" / "state.json").read_bytes())
    assert list(emu.store.runs) == [state["runs"][0]["run_id"]]

    summary = run_evaluation(plan, tmp_path / "run", backend, resume=True)
    assert len(emu.store.evals) == 1 and len(emu.store.runs) == 1
    assert summary.run_ids == list(emu.store.runs)
    assert len(read_results(tmp_path / "run")) == 14 * N_METRICS


def test_errored_rows_appear_as_errors(plan: Plan, tmp_path: Path) -> None:
    emu = FoundryEmulator(faults=FaultConfig(errored_rows=(0, 5), errored_criteria=("groundedness",)))
    summary = run_evaluation(plan, tmp_path / "run", mock(emu))
    errored = [r for r in read_results(tmp_path / "run") if r.error]
    assert sorted((r.row, r.criterion) for r in errored) == [(0, "groundedness"), (5, "groundedness")]
    assert all(r.score is None and r.error.startswith("FAILED_EXECUTION: ") for r in errored)
    assert summary.per_criterion["groundedness"]["errored"] == 2 and summary.warnings


def test_failed_run_raises_with_the_service_message(plan: Plan, tmp_path: Path) -> None:
    emu = FoundryEmulator(faults=FaultConfig(failed_runs=(0,), run_error_message="judge deployment not found"))
    with pytest.raises(RunFailedError, match="failed: FAILED_EXECUTION: judge deployment not found"):
        run_evaluation(plan, tmp_path / "run", mock(emu))


def test_pagination_over_many_pages(benefits_jsonl: Path, tmp_path: Path) -> None:
    lines = benefits_jsonl.read_text().splitlines()
    big = tmp_path / "big.jsonl"
    with big.open("w") as fh:
        for i in range(130):
            row = json.loads(lines[i % len(lines)])
            row["query_id"] = f"{row['query_id']}-{i}"
            fh.write(json.dumps(row) + "\n")
    plan = _plan(big)
    emu = FoundryEmulator(polls_to_complete=0)
    run_evaluation(plan, tmp_path / "run", mock(emu, page_size=25))
    pages = [r for r in _requests(emu) if r.url.path.endswith("/output_items")]
    assert [r.url.params.get("after") for r in pages] == [None, "25", "50", "75", "100", "125"]
    rel = [r for r in read_results(tmp_path / "run") if r.criterion == "relevance"]
    assert [r.row for r in rel] == list(range(130)) and [r.query_id for r in rel] == plan.query_ids


def test_split_runs_and_dataset_upload_on_the_emulator(plan: Plan, tmp_path: Path) -> None:
    emu = FoundryEmulator(polls_to_complete=0)
    run_evaluation(plan, tmp_path / "run", mock(emu, max_rows_per_run=6, inline_max_bytes=0))
    assert len(emu.store.runs) == 3 and len(emu.store.datasets) == 3 and len(emu.store.blobs) == 3
    puts = [r for r in _requests(emu) if r.method == "PUT"]
    assert len(puts) == 3 and all("authorization" not in r.headers for r in puts)
    rows = read_results(tmp_path / "run")
    assert len(rows) == 14 * N_METRICS
    assert [r.query_id for r in rows if r.criterion == "retrieval"] == plan.query_ids


def test_no_token_in_any_log_line_or_file(plan: Plan, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    emu = FoundryEmulator(faults=FaultConfig(rate_limit_every=2))
    run_evaluation(plan, tmp_path / "run", mock(emu, inline_max_bytes=0))
    assert caplog.records
    assert TOKEN not in caplog.text and "sig=" not in caplog.text.replace("sig=***", "")
    for path in (p for p in (tmp_path / "run").rglob("*") if p.is_file()):
        assert TOKEN.encode() not in path.read_bytes(), path.name


def test_resume_after_a_failed_part_resubmits_only_that_part(plan: Plan, tmp_path: Path) -> None:
    emu = FoundryEmulator(polls_to_complete=0, faults=FaultConfig(failed_runs=(1,)))
    backend = mock(emu, max_rows_per_run=5)
    with pytest.raises(RunFailedError):
        run_evaluation(plan, tmp_path / "run", backend)
    assert len(emu.store.runs) == 3  # all parts were submitted before waiting
    summary = run_evaluation(plan, tmp_path / "run", backend, resume=True)
    assert len(emu.store.runs) == 4 and len(summary.run_ids) == 3
    state = loads((tmp_path / "run" / "state.json").read_bytes())
    assert state["runs"][1]["replaced_runs"][0]["status"] == "failed"
    assert len(read_results(tmp_path / "run")) == 14 * N_METRICS


def test_cloud_backend_over_a_real_loopback_socket(
    benefits_jsonl: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    from foundry_bridge.mock import serve

    caplog.set_level(logging.DEBUG)  # httpcore's trace records too
    monkeypatch.setenv("AZURE_AI_MODEL_DEPLOYMENT_NAME", "my-judge")  # the cloud backend needs it named
    plan = _plan(benefits_jsonl)

    emu = FoundryEmulator(polls_to_complete=1)
    with serve(emu, "127.0.0.1", 0) as server:
        backend = get_backend(
            "cloud",
            endpoint=server.endpoint,
            credential=StaticTokenCredential(TOKEN),
            poll_interval=0.0,
            max_rows_per_run=10,
            inline_max_bytes=4000,  # the first part (10 rows) is uploaded, the second (4 rows) goes inline
        )
        summary = run_evaluation(plan, tmp_path / "run", backend, progress=None)
    assert summary.backend == "cloud" and len(emu.store.runs) == 2 and len(emu.store.blobs) == 1
    sources = loads((tmp_path / "run" / "manifest.json").read_bytes())["data_sources"]
    assert sources == ["file_id", "file_content"]
    assert len(read_results(tmp_path / "run")) == 14 * N_METRICS
    calls = [c.request for c in emu.router.calls]
    assert all(r.headers["authorization"] == f"Bearer {TOKEN}" for r in calls if r.method != "PUT")
    assert [r for r in calls if r.method == "PUT" and "authorization" in r.headers] == []
    assert any(r.name.startswith("httpcore") for r in caplog.records) and TOKEN not in caplog.text


def test_an_emulator_run_shows_no_portal_link_and_says_why(plan: Plan, tmp_path: Path) -> None:
    """The emulator's run printed ``report: https://ai.azure.com/...mock...``, a link that looks real and leads
    nowhere. The summary, the manifest, the state and the report say it is an emulator run with no portal page."""
    from foundry_bridge.report import build_report, render_html, render_markdown

    summary = run_evaluation(plan, tmp_path / "run", mock(FoundryEmulator()))
    text = summary.text()
    assert "https://ai.azure.com" not in text
    assert f"report: an emulator run has no Foundry portal page; `foundry-bridge report {tmp_path / 'run'}`" in text
    for name in ("manifest.json", "state.json"):
        assert "https://ai.azure.com" not in (tmp_path / "run" / name).read_text(), name
    report = build_report(tmp_path / "run")
    for page in (render_markdown(report), render_html(report)):
        assert "https://ai.azure.com" not in page and "(emulator: no Foundry portal page)" in page
