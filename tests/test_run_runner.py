"""run_evaluation + FoundryBackend end to end over a small independent fake of the service (no network)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from foundry_helpers import ENDPOINT, TOKEN, FakeFoundry, Fault, RecordingSleep

from foundry_bridge._io import loads
from foundry_bridge.catalog import DOCUMENT_RETRIEVAL
from foundry_bridge.dataset import read_records
from foundry_bridge.errors import BackendError, UsageError
from foundry_bridge.foundry import FoundryBackend, FoundryClient, RunFailedError, StaticTokenCredential
from foundry_bridge.mapping import build_plan, load_mapping
from foundry_bridge.mapping.plan import Plan
from foundry_bridge.results import RUN_FILES
from foundry_bridge.runfolder import RunFolder
from foundry_bridge.runner import get_backend, read_results, run_evaluation

N_DOCRET = len(DOCUMENT_RETRIEVAL.metrics)


@pytest.fixture
def plan(benefits_jsonl: Path) -> Plan:
    mapping = load_mapping(None)
    return build_plan(read_records(benefits_jsonl, mapping), mapping, dataset_path=benefits_jsonl)


def backend_for(fake: FakeFoundry, **kw: object) -> FoundryBackend:
    client = FoundryClient(
        ENDPOINT, StaticTokenCredential(TOKEN), transport=fake.transport(), sleep=RecordingSleep(), poll_interval=0
    )
    # a fake service behind the cloud backend: its portal link is kept (the emulator's is not: test_run_mock)
    return FoundryBackend(client, name="cloud", judges_deployed=False, **kw)  # type: ignore[arg-type]


def _lines(path: Path) -> list[dict]:
    return [loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def test_full_run_writes_every_file_and_every_row_has_every_criterion(plan: Plan, tmp_path: Path) -> None:
    fake = FakeFoundry()
    summary = run_evaluation(plan, tmp_path / "run", backend_for(fake))
    run_dir = tmp_path / "run"
    for name in RUN_FILES.values():
        assert (run_dir / name).is_file(), name
    rows = read_results(run_dir)
    n = len(plan.items)
    assert n == 14
    assert len(rows) == n * (N_DOCRET + 3)
    for r in range(n):
        assert {x.criterion for x in rows if x.row == r} == {c.name for c in plan.criteria}
    assert [x.query_id for x in rows if x.criterion == "relevance"] == plan.query_ids
    state = loads((run_dir / "state.json").read_bytes())
    assert state["eval_id"] in fake.evals and [r["run_id"] for r in state["runs"]] == list(fake.runs)
    assert state["plan_sha256"] == plan.fingerprint() and state["dataset_sha256"] == plan.dataset_sha256
    assert state["status"] == "completed"
    manifest = loads((run_dir / "manifest.json").read_bytes())
    assert manifest["eval_id"] == state["eval_id"] and manifest["report_url"].startswith("https://ai.azure.com/")
    assert {e["evaluator_name"] for e in manifest["evaluators"]} == {c.evaluator for c in plan.criteria}
    assert manifest["tool_version"] and manifest["dataset_sha256"] == plan.dataset_sha256
    assert len(_lines(run_dir / "output_items.jsonl")) == n
    assert len(_lines(run_dir / "items.jsonl")) == n and len(_lines(run_dir / "records.jsonl")) == n
    # fake scores: even rows 4 (pass), odd rows 2 (fail) for the judges; document_retrieval passes
    assert summary.per_criterion["relevance"] == {"passed": 7, "failed": 7, "errored": 0, "no_verdict": 0}
    assert summary.per_criterion["document_retrieval"]["passed"] == n
    assert summary.errored == 0 and not summary.warnings
    assert RunFolder(run_dir).read_plan().fingerprint() == plan.fingerprint()


def test_exact_requests_and_inline_body(plan: Plan, tmp_path: Path) -> None:
    fake = FakeFoundry()
    run_evaluation(plan, tmp_path / "run", backend_for(fake))
    create_eval, create_run = fake.requests[0], fake.requests[1]
    assert (create_eval.method, create_eval.url.path) == ("POST", "/api/projects/mock-project/openai/v1/evals")
    assert json.loads(create_eval.content) == plan.eval_body
    eval_id = next(iter(fake.evals))
    assert create_run.url.path == f"/api/projects/mock-project/openai/v1/evals/{eval_id}/runs"
    body = json.loads(create_run.content)
    assert body["data_source"] == {"type": "jsonl", "source": {"type": "file_content", "content": plan.items}}
    assert all(r.headers["authorization"] == f"Bearer {TOKEN}" for r in fake.requests)


def test_both_document_retrieval_shapes_give_the_same_rows(plan: Plan, tmp_path: Path) -> None:
    def docret(shape: str) -> list[tuple]:
        run_evaluation(plan, tmp_path / shape, backend_for(FakeFoundry(docret_shape=shape)))
        return [
            (r.row, r.metric, r.score, r.passed, r.label)
            for r in read_results(tmp_path / shape)
            if r.criterion == "document_retrieval"
        ]

    per_metric, single = docret("per_metric"), docret("single")
    assert per_metric == single
    assert {m for _, m, *_ in single} == {m.name for m in DOCUMENT_RETRIEVAL.metrics}


def test_errored_results_are_rows_with_their_cause(plan: Plan, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    fake = FakeFoundry(errored_rows={1, 3})
    summary = run_evaluation(plan, tmp_path / "run", backend_for(fake))
    rows = read_results(tmp_path / "run")
    errored = [r for r in rows if r.error]
    assert {r.row for r in errored} == {1, 3}
    assert len(errored) == 2 * (N_DOCRET + 3)  # an errored document_retrieval result → one error row per metric
    assert all(r.score is None and r.error == "FAILED_EXECUTION: judge returned garbage" for r in errored)
    assert summary.errored == 8 and "ERRORED" in summary.warnings[0]
    assert loads((tmp_path / "run" / "manifest.json").read_bytes())["verdicts"]["errored"] == 8


def test_failed_run_raises_with_the_service_message_and_records_it(plan: Plan, tmp_path: Path) -> None:
    fake = FakeFoundry(fail_runs=True)
    with pytest.raises(RunFailedError, match="QuotaExceeded: judge deployment quota"):
        run_evaluation(plan, tmp_path / "run", backend_for(fake))
    state = loads((tmp_path / "run" / "state.json").read_bytes())
    assert state["status"] == "failed" and state["runs"][0]["error"]["code"] == "QuotaExceeded"
    assert isinstance(RunFailedError("x"), BackendError)


def test_crash_after_submission_then_resume_submits_nothing_new(plan: Plan, tmp_path: Path) -> None:
    fake = FakeFoundry(polls_to_complete=3)
    backend = backend_for(fake)

    def crash(stage: str, done: int, total: int | None) -> None:
        if stage == "polling":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_evaluation(plan, tmp_path / "run", backend, progress=crash)
    state = loads((tmp_path / "run" / "state.json").read_bytes())
    assert state["runs"][0]["run_id"] in fake.runs and state["runs"][0]["continuation_token"]
    assert not (tmp_path / "run" / "results.jsonl").exists()
    posts_before = [r for r in fake.requests if r.method == "POST"]

    summary = run_evaluation(plan, tmp_path / "run", backend, resume=True)
    assert len(fake.evals) == 1 and len(fake.runs) == 1
    assert [r for r in fake.requests if r.method == "POST"] == posts_before
    assert summary.rows == 14 and len(read_results(tmp_path / "run")) == 14 * (N_DOCRET + 3)


def test_same_plan_again_reuses_the_finished_run_unless_forced(plan: Plan, tmp_path: Path) -> None:
    fake = FakeFoundry()
    backend = backend_for(fake)
    first = run_evaluation(plan, tmp_path / "run", backend)
    sent = len(fake.requests)
    again = run_evaluation(plan, tmp_path / "run", backend)
    assert again.reused and len(fake.requests) == sent and again.run_ids == first.run_ids
    forced = run_evaluation(plan, tmp_path / "run", backend, force=True)
    assert not forced.reused and len(fake.runs) == 2 and forced.run_ids != first.run_ids


def test_a_folder_holding_another_plan_or_nothing_to_resume_is_refused(plan: Plan, tmp_path: Path) -> None:
    fake = FakeFoundry()
    with pytest.raises(UsageError, match="nothing to resume"):
        run_evaluation(plan, tmp_path / "empty", backend_for(fake), resume=True)
    run_evaluation(plan, tmp_path / "run", backend_for(fake))
    other = plan.model_copy(update={"items": plan.items[:3]})
    with pytest.raises(UsageError, match="another plan"):
        run_evaluation(other, tmp_path / "run", backend_for(fake))


def test_large_dataset_is_split_into_runs_and_merged(plan: Plan, tmp_path: Path) -> None:
    fake = FakeFoundry()
    summary = run_evaluation(plan, tmp_path / "run", backend_for(fake, max_rows_per_run=5, page_size=2))
    assert len(fake.runs) == 3 and len(summary.run_ids) == 3
    assert [len(rows) for rows in fake.rows.values()] == [5, 5, 4]
    rows = read_results(tmp_path / "run")
    rel = [r for r in rows if r.criterion == "relevance"]
    assert [r.row for r in rel] == list(range(14)) and [r.query_id for r in rel] == plan.query_ids
    # the fake's scores depend on the position inside each run: 4 at even positions, 2 at odd ones
    assert [r.score for r in rel] == [4.0 if (i % 5) % 2 == 0 else 2.0 for i in range(14)]
    state = loads((tmp_path / "run" / "state.json").read_bytes())
    assert [(r["offset"], r["count"]) for r in state["runs"]] == [(0, 5), (5, 5), (10, 4)]


def test_rows_beyond_the_inline_limit_are_uploaded_as_a_dataset(plan: Plan, tmp_path: Path) -> None:
    fake = FakeFoundry()
    run_evaluation(plan, tmp_path / "run", backend_for(fake, inline_max_bytes=0))
    (dataset_id,) = fake.datasets
    run_body = json.loads(next(r for r in fake.requests if r.url.path.endswith("/runs")).content)
    assert run_body["data_source"] == {"type": "jsonl", "source": {"type": "file_id", "id": dataset_id}}
    (blob,) = fake.blobs.values()
    assert [json.loads(line) for line in blob.splitlines()] == [it["item"] for it in plan.items]
    put = next(r for r in fake.requests if r.method == "PUT")
    assert "authorization" not in put.headers
    assert len(read_results(tmp_path / "run")) == 14 * (N_DOCRET + 3)
    assert loads((tmp_path / "run" / "manifest.json").read_bytes())["data_sources"] == ["file_id"]


def test_injected_429_and_500_are_survived_and_no_secret_leaks(
    plan: Plan, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    fake = FakeFoundry()
    fake.faults = [
        Fault(r"POST .*/runs$", 429, headers={"retry-after-ms": "10"}),
        Fault(r"GET .*/runs/[^/]+$", 500, times=2),
        Fault(r"GET .*/output_items$", 503),
    ]
    run_evaluation(plan, tmp_path / "run", backend_for(fake))
    assert all(f.times == 0 for f in fake.faults)
    assert len(fake.runs) == 1 and len(read_results(tmp_path / "run")) == 14 * (N_DOCRET + 3)
    assert "retry" in caplog.text
    assert TOKEN not in caplog.text
    for path in (p for p in (tmp_path / "run").rglob("*") if p.is_file()):
        assert TOKEN.encode() not in path.read_bytes(), path.name


def test_get_backend_validates_names_endpoints_and_options(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AZURE_AI_PROJECT_ENDPOINT", raising=False)
    with pytest.raises(UsageError, match="unknown backend"):
        get_backend("azure")
    with pytest.raises(UsageError, match="no Foundry project endpoint"):
        get_backend("cloud")
    with pytest.raises(UsageError, match="https"):
        get_backend("cloud", endpoint="http://example.com/api/projects/p")
    with pytest.raises(UsageError, match="do not apply"):
        get_backend("cloud", endpoint=ENDPOINT, credential=StaticTokenCredential(), judge_model="x")
    monkeypatch.setenv("AZURE_AI_PROJECT_ENDPOINT", ENDPOINT + "/")
    backend = get_backend("cloud", credential=StaticTokenCredential(), max_rows_per_run=7)
    assert isinstance(backend, FoundryBackend) and backend.client.endpoint == ENDPOINT
    assert backend.name == "cloud" and backend.max_rows_per_run == 7


def test_get_backend_local_is_built_lazily_with_its_options(tmp_path: Path) -> None:
    backend = get_backend("local", judge_endpoint="http://127.0.0.1:9/v1", judge_model="m", cache_dir=tmp_path)
    assert backend.name == "local" and type(backend).__module__.startswith("foundry_bridge.local")
    with pytest.raises(UsageError, match="do not apply to the local backend"):
        get_backend("local", max_rows_per_run=3)


def test_progress_reporter_draws_and_can_be_off() -> None:
    from foundry_bridge.commands._progress import progress_reporter

    with progress_reporter(False) as off:
        assert off is None
    with progress_reporter(True) as on:
        for stage, done, total in [
            ("submitted", 1, 1),
            ("polling", 1, None),
            ("polling", 2, None),
            ("collecting", 5, 14),
        ]:
            on(stage, done, total)
