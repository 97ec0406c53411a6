"""Every injectable fault, and what a client (httpx in-process, or the openai SDK over loopback) sees."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import openai
import pytest
from mock_helpers import all_items, client_for, eval_body, inline_source, rag_criteria, run_to_completion, sample_rows

from foundry_bridge.mock import FaultConfig, FoundryEmulator, MockServer, serve


def _eval_and_run(client: httpx.Client, rows: int = 4) -> tuple[str, str]:
    eval_id = client.post("/evals", json=eval_body()).json()["id"]
    run_id = client.post(f"/evals/{eval_id}/runs", json={"data_source": inline_source(sample_rows()[:rows])}).json()[
        "id"
    ]
    return eval_id, run_id


Loopback = Callable[..., tuple[FoundryEmulator, MockServer]]


@pytest.fixture
def loopback() -> Iterator[Loopback]:
    """A factory: ``loopback(**fault_settings)`` → (emulator, running server); servers stop after the test."""
    servers: list[MockServer] = []

    def make(**faults: Any) -> tuple[FoundryEmulator, MockServer]:
        emu = FoundryEmulator(polls_to_complete=0, faults=FaultConfig(**faults))
        servers.append(serve(emu))
        return emu, servers[-1]

    yield make
    for server in servers:
        server.shutdown()


def _openai(server: MockServer, retries: int = 2) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.openai_base_url, api_key="x", max_retries=retries)


# ---------------------------------------------------------------- 429
def test_rate_limit_every_nth_request_httpx_sees_429_with_retry_after() -> None:
    emu = FoundryEmulator(faults=FaultConfig(rate_limit_every=2, retry_after=7))
    client = client_for(emu)
    statuses = [client.get("/evals").status_code for _ in range(4)]
    assert statuses == [200, 429, 200, 429]
    r = client.get("/evals")
    r = client.get("/evals")
    assert r.status_code == 429 and r.headers["Retry-After"] == "7"
    assert r.json()["error"]["code"] == "429" and "Try again in 7 seconds" in r.json()["error"]["message"]
    assert [s for s, _ in emu.injected_faults] == [429, 429, 429]


def test_openai_client_retries_through_a_429(loopback: Loopback) -> None:
    emu, server = loopback(rate_limit_every=2, retry_after=0.01, only=r"^GET ")
    client = _openai(server)
    ev = client.evals.create(**eval_body())  # POST: not faulted
    assert client.evals.retrieve(ev.id).id == ev.id  # GET #1 passes
    assert client.evals.retrieve(ev.id).id == ev.id  # GET #2 is a 429, retried by the SDK: GET #3 passes
    assert emu.injected_faults == [(429, f"GET /api/projects/mock-project/openai/v1/evals/{ev.id}")]


def test_openai_client_gives_up_on_persistent_429(loopback: Loopback) -> None:
    emu, server = loopback(rate_limit_rate=1.0, retry_after=0.01)
    with pytest.raises(openai.RateLimitError) as info:
        _openai(server).evals.list()
    assert info.value.status_code == 429 and info.value.code == "429"
    assert len(emu.injected_faults) == 3  # 1 attempt + max_retries=2


def test_seeded_rate_is_reproducible() -> None:
    def pattern(seed: int) -> list[int]:
        client = client_for(FoundryEmulator(faults=FaultConfig(rate_limit_rate=0.5, seed=seed)))
        return [client.get("/evals").status_code for _ in range(20)]

    assert pattern(3) == pattern(3)
    assert 200 in pattern(3) and 429 in pattern(3)
    assert pattern(3) != pattern(4)


# ---------------------------------------------------------------- 5xx
@pytest.mark.parametrize(("status", "code"), [(500, "InternalServerError"), (503, "ServiceUnavailable")])
def test_server_errors_httpx_sees_the_envelope(status: int, code: str) -> None:
    emu = FoundryEmulator(faults=FaultConfig(server_error_every=1, server_error_status=status, only=r"^POST .*/evals$"))
    client = client_for(emu)
    assert client.get("/evals").status_code == 200  # not matched by `only`
    r = client.post("/evals", json=eval_body())
    assert r.status_code == status and r.json()["error"]["code"] == code
    assert emu.store.evals == {}  # the faulted request never reached the handler


def test_openai_client_raises_internal_server_error_after_retries(loopback: Loopback) -> None:
    emu, server = loopback(server_error_rate=1.0, server_error_status=503)
    with pytest.raises(openai.InternalServerError) as info:
        _openai(server, retries=1).evals.list()
    assert info.value.status_code == 503
    assert len(emu.injected_faults) == 2


# ---------------------------------------------------------------- failed run
def test_failed_run_shows_status_and_error_body() -> None:
    emu = FoundryEmulator(polls_to_complete=0, faults=FaultConfig(failed_runs=(1,)))
    client = client_for(emu)
    eval_id, first = _eval_and_run(client)
    second = client.post(f"/evals/{eval_id}/runs", json={"data_source": inline_source(sample_rows()[:2])}).json()["id"]
    assert run_to_completion(client, eval_id, first)["status"] == "completed"
    failed = run_to_completion(client, eval_id, second)
    assert failed["status"] == "failed"
    assert failed["error"] == {"code": "FAILED_EXECUTION", "message": FaultConfig().run_error_message}
    assert failed["report_url"] is None and failed["result_counts"]["total"] == 0
    assert all_items(client, eval_id, second) == []


def test_openai_client_sees_a_failed_run(loopback: Loopback) -> None:
    _emu, server = loopback(run_failure_rate=1.0, run_error_code="QuotaExceeded", run_error_message="no quota")
    client = _openai(server)
    ev = client.evals.create(**eval_body())
    run = client.evals.runs.create(ev.id, data_source=inline_source(sample_rows()[:2]))
    run = client.evals.runs.retrieve(run.id, eval_id=ev.id)
    assert run.status == "failed"
    assert (run.error.code, run.error.message) == ("QuotaExceeded", "no quota")


# ---------------------------------------------------------------- errored rows
def test_errored_rows_inside_a_completed_run() -> None:
    emu = FoundryEmulator(
        polls_to_complete=0, faults=FaultConfig(errored_rows=(0, 2), errored_criteria=("groundedness",))
    )
    client = client_for(emu)
    eval_id, run_id = _eval_and_run(client, rows=4)
    run = run_to_completion(client, eval_id, run_id)
    assert run["status"] == "completed" and run["error"] is None  # the trap: the run looks fine
    assert run["result_counts"]["errored"] == 2
    by_name = {c["testing_criteria"]: c for c in run["per_testing_criteria_results"]}
    assert by_name["groundedness"]["errored"] == 2 and by_name["relevance"]["errored"] == 0
    items = all_items(client, eval_id, run_id)
    for index, item in enumerate(items):
        assert item["status"] == "completed"
        grounded = next(r for r in item["results"] if r["name"] == "groundedness")
        if index in (0, 2):
            assert grounded["score"] is None and grounded["passed"] is None and grounded["label"] is None
            assert grounded["sample"]["error"]["code"] == "FAILED_EXECUTION"
        else:
            assert isinstance(grounded["score"], int)
        relevance = next(r for r in item["results"] if r["name"] == "relevance")
        assert relevance["score"] is not None


def test_errored_row_rate_covers_every_result_metric_and_is_seeded() -> None:
    def errored(seed: int) -> list[int]:
        emu = FoundryEmulator(
            polls_to_complete=0, docret_shape="per_metric", faults=FaultConfig(errored_row_rate=0.5, seed=seed)
        )
        client = client_for(emu)
        eval_id = client.post("/evals", json=eval_body(rag_criteria()[:1])).json()["id"]
        run_id = client.post(f"/evals/{eval_id}/runs", json={"data_source": inline_source(sample_rows())}).json()["id"]
        run_to_completion(client, eval_id, run_id)
        out = []
        for item in all_items(client, eval_id, run_id):
            scores = [r["score"] for r in item["results"]]
            assert len(scores) == 9  # one (errored or not) result per document-retrieval metric
            if all(s is None for s in scores):
                out.append(item["datasource_item_id"])
        return out

    assert errored(1) == errored(1) and 0 < len(errored(1)) < 14


def test_openai_client_reads_errored_results(loopback: Loopback) -> None:
    _emu, server = loopback(errored_rows=(1,))
    client = _openai(server)
    ev = client.evals.create(**eval_body())
    run = client.evals.runs.create(ev.id, data_source=inline_source(sample_rows()[:3]))
    run = client.evals.runs.retrieve(run.id, eval_id=ev.id)
    assert run.status == "completed" and run.result_counts.errored == 1
    item = client.evals.runs.output_items.retrieve("2", eval_id=ev.id, run_id=run.id)
    assert all(r.score is None and r.sample["error"]["code"] == "FAILED_EXECUTION" for r in item.results)


# ---------------------------------------------------------------- slow completion
def test_slow_polls_and_slow_seconds() -> None:
    now = [0.0]
    emu = FoundryEmulator(polls_to_complete=1, faults=FaultConfig(slow_polls=3, slow_seconds=60), clock=lambda: now[0])
    client = client_for(emu)
    eval_id, run_id = _eval_and_run(client, rows=1)
    statuses = [client.get(f"/evals/{eval_id}/runs/{run_id}").json()["status"] for _ in range(6)]
    assert statuses == ["in_progress"] * 6  # polls are up after 4, but 60 s have not passed
    now[0] = 60
    assert client.get(f"/evals/{eval_id}/runs/{run_id}").json()["status"] == "completed"


def test_bad_fault_settings_are_rejected() -> None:
    for bad in ({"rate_limit_rate": 1.5}, {"server_error_status": 404}, {"only": "("}, {"slow_polls": -1}):
        with pytest.raises(ValueError, match="FaultConfig"):
            FaultConfig(**bad)  # type: ignore[arg-type]
