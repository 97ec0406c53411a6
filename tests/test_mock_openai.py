"""The official openai SDK (3.x, httpx2: respx cannot patch it) against the emulator on a loopback port."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import openai
import pytest
from mock_helpers import eval_body, inline_source, sample_rows

from foundry_bridge.mock import FoundryEmulator, MockServer, serve


@pytest.fixture
def server() -> Iterator[MockServer]:
    with serve(FoundryEmulator(polls_to_complete=2)) as running:
        yield running


@pytest.fixture
def client(server: MockServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.openai_base_url, api_key="not-a-key", max_retries=0)


def test_server_binds_loopback_and_reports_urls(server: MockServer) -> None:
    assert server.url.startswith("http://127.0.0.1:") and server.port > 0
    assert server.openai_base_url == f"{server.url}/api/projects/mock-project/openai/v1"


def test_full_rag_flow_through_the_openai_sdk(server: MockServer, client: openai.OpenAI) -> None:
    rows = sample_rows()
    ev = client.evals.create(**eval_body())
    assert ev.id.startswith("eval_") and len(ev.testing_criteria) == 4
    names = [tc.model_dump()["evaluator_name"] for tc in ev.testing_criteria]
    assert names == [c["evaluator_name"] for c in eval_body()["testing_criteria"]]
    assert ev.data_source_config.schema_["item"]["properties"]["query"] == {"type": "string"}

    run = client.evals.runs.create(ev.id, name="inline", data_source=inline_source(rows), metadata={"k": "v"})
    assert run.status == "in_progress" and run.id.startswith("evalrun_")
    polls = []
    while run.status == "in_progress":
        run = client.evals.runs.retrieve(run.id, eval_id=ev.id)
        polls.append(run.status)
    assert polls == ["in_progress", "in_progress", "completed"]
    assert run.result_counts.total == len(rows)
    assert run.result_counts.passed + run.result_counts.failed + run.result_counts.errored >= len(rows)
    assert run.report_url and {r.testing_criteria for r in run.per_testing_criteria_results} == {
        "document_retrieval",
        "retrieval",
        "groundedness",
        "relevance",
    }

    items = list(client.evals.runs.output_items.list(run.id, eval_id=ev.id, limit=4))
    assert [it.id for it in items] == [str(i) for i in range(1, len(rows) + 1)]
    afters = [
        call.request.url.params.get("after")
        for call in server.emulator.router.calls
        if call.request.url.path.endswith("/output_items")
    ]
    assert afters == [None, "4", "8", "12"]  # four pages of at most 4
    first = items[0]
    assert first.datasource_item["query_id"] == rows[0]["query_id"]
    result = first.results[0].model_dump()
    assert {"name", "metric", "score", "label", "reason", "threshold", "passed", "status"} <= set(result)
    judged = next(r for r in first.results if r.name == "groundedness")
    assert judged.reason.startswith("Mock score") and 1 <= judged.score <= 5

    one = client.evals.runs.output_items.retrieve("7", eval_id=ev.id, run_id=run.id)
    assert one.id == "7" and one.datasource_item_id == 6

    other = client.evals.runs.create(ev.id, data_source=inline_source(rows[:2]))
    canceled = client.evals.runs.cancel(other.id, eval_id=ev.id)
    assert canceled.status == "canceled"
    listed = client.evals.runs.list(ev.id, status="canceled")
    assert [r.id for r in listed.data] == [other.id]

    deleted = client.evals.delete(ev.id)
    assert deleted.eval_id == ev.id and deleted.object == "eval.deleted"
    with pytest.raises(openai.NotFoundError) as info:
        client.evals.retrieve(ev.id)
    assert info.value.code == "NotFound"


def test_validation_errors_reach_the_sdk_as_bad_request(client: openai.OpenAI) -> None:
    body = eval_body()
    body["testing_criteria"][1]["initialization_parameters"].pop("deployment_name")
    with pytest.raises(openai.BadRequestError) as info:
        client.evals.create(**body)
    assert info.value.code == "UserError" and "deployment_name is required" in info.value.message


def test_dataset_upload_on_loopback_then_run_by_file_id(server: MockServer, client: openai.OpenAI) -> None:
    project = httpx.Client(base_url=server.endpoint, params={"api-version": "v1"})
    pending = project.post("/datasets/rag/versions/1/startPendingUpload", json={"pendingUploadType": "BlobReference"})
    sas = pending.json()["blobReference"]["credential"]["sasUri"]
    container, query = sas.split("?", 1)
    assert container.startswith(f"{server.url}/_blob/")  # the SAS URL points back at this server
    data = "".join(json.dumps({"item": r}) + "\n" for r in sample_rows()[:5]).encode()
    put = httpx.put(f"{container}/rag.jsonl?{query}", content=data, headers={"x-ms-blob-type": "BlockBlob"})
    assert put.status_code == 201
    version = project.patch("/datasets/rag/versions/1", json={"dataUri": f"{container}/rag.jsonl", "type": "uri_file"})
    dataset_id = version.json()["id"]

    ev = client.evals.create(**eval_body())
    run = client.evals.runs.create(
        ev.id, data_source={"type": "jsonl", "source": {"type": "file_id", "id": dataset_id}}
    )
    while run.status == "in_progress":
        run = client.evals.runs.retrieve(run.id, eval_id=ev.id)
    assert run.status == "completed" and run.result_counts.total == 5


def test_openai_sdk_in_process_through_the_httpx2_transport() -> None:
    import httpx2

    emu = FoundryEmulator(polls_to_complete=0)
    http_client = httpx2.Client(transport=emu.httpx2_transport())
    client = openai.OpenAI(
        base_url="https://acct.services.ai.azure.com/api/projects/p/openai/v1", api_key="x", http_client=http_client
    )
    ev = client.evals.create(**eval_body())
    run = client.evals.runs.create(ev.id, data_source=inline_source(sample_rows()[:3]))
    assert client.evals.runs.retrieve(run.id, eval_id=ev.id).status == "completed"
    assert [it.id for it in client.evals.runs.output_items.list(run.id, eval_id=ev.id, limit=2)] == ["1", "2", "3"]
    assert set(emu.store.evals) == {ev.id}


def test_loopback_accepts_chunked_request_bodies(server: MockServer) -> None:
    def chunks() -> Iterator[bytes]:
        yield json.dumps(eval_body())[:50].encode()
        yield json.dumps(eval_body())[50:].encode()

    r = httpx.post(f"{server.openai_base_url}/evals", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 201 and r.json()["name"] == "rag-eval"
