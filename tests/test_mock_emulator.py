"""The emulator in-process: routes, echo rules, validation, lifecycle, counts, scoring, pagination, datasets."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import pytest
import respx
from mock_helpers import (
    OPENAI_V1,
    _evaluator,
    all_items,
    client_for,
    eval_body,
    inline_source,
    rag_criteria,
    run_to_completion,
    sample_rows,
)

from foundry_bridge.mock import PROJECT_ENDPOINT, FoundryEmulator, overlap, tokens

UUID4 = r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"


@pytest.fixture
def emu() -> FoundryEmulator:
    return FoundryEmulator()


@pytest.fixture
def client(emu: FoundryEmulator) -> httpx.Client:
    return client_for(emu)


def _create_eval(client: httpx.Client, body: dict[str, Any] | None = None) -> dict[str, Any]:
    r = client.post("/evals", json=body or eval_body())
    assert r.status_code == 201, r.text
    return r.json()


def _create_run(client: httpx.Client, eval_id: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    r = client.post(f"/evals/{eval_id}/runs", json={"data_source": inline_source(rows), "name": "r"})
    assert r.status_code == 201, r.text
    return r.json()


def _relevance(threshold: float = 3) -> dict[str, Any]:
    return {
        "type": "azure_ai_evaluator",
        "name": "rel",
        "evaluator_name": _evaluator("relevance"),
        "initialization_parameters": {"deployment_name": "judge", "threshold": threshold},
        "data_mapping": {"query": "{{item.query}}", "response": "{{item.response}}"},
    }


# ---------------------------------------------------------------- interface
def test_router_transport_and_store_are_exposed(emu: FoundryEmulator) -> None:
    assert isinstance(emu.router, respx.Router)
    assert emu.router._assert_all_called is False
    assert isinstance(emu.transport(), httpx.MockTransport)
    response = emu.handler(httpx.Request("GET", OPENAI_V1 + "/evals"))
    assert response.status_code == 200
    assert {"evals", "runs", "output_items", "datasets", "blobs"} <= set(vars(emu.store))


# ---------------------------------------------------------------- evals
def test_create_eval_echoes_like_the_service(client: httpx.Client) -> None:
    sent = eval_body(metadata={"team": "x"})
    ev = _create_eval(client, sent)
    assert re.fullmatch(r"eval_[0-9a-f]{32}", ev["id"])
    assert ev["object"] == "eval" and ev["created_at"] == ev["modified_at"]
    assert ev["properties"] == {"evals_run_type": "azure_ai"}
    assert ev["metadata"] == {"team": "x"}
    dsc = ev["data_source_config"]
    assert dsc["item_schema"] == {} and dsc["schema"]["item"] == sent["data_source_config"]["item_schema"]
    assert dsc["schema"]["sample"] == {"type": "object", "properties": {"output_text": {"type": "string"}}}
    for echoed, original in zip(ev["testing_criteria"], sent["testing_criteria"], strict=True):
        assert re.fullmatch(re.escape(original["name"]) + "_" + UUID4, echoed["id"])
        assert echoed["evaluator_version"] == ""
        assert list(echoed) == [
            "type",
            "id",
            "name",
            "evaluator_name",
            "evaluator_version",
            "initialization_parameters",
            "data_mapping",
        ]
    assert client.get(f"/evals/{ev['id']}").json() == ev


def test_no_sample_schema_and_no_init_echo_when_not_sent(client: httpx.Client) -> None:
    crit = rag_criteria()[0]
    del crit["initialization_parameters"]
    body = eval_body([crit])
    body["data_source_config"]["include_sample_schema"] = False
    ev = _create_eval(client, body)
    assert set(ev["data_source_config"]["schema"]) == {"item"}
    assert "initialization_parameters" not in ev["testing_criteria"][0]


def test_update_list_and_delete_evals(client: httpx.Client) -> None:
    ids = [_create_eval(client)["id"] for _ in range(3)]
    updated = client.post(f"/evals/{ids[0]}", json={"name": "renamed", "metadata": {"a": "b"}}).json()
    assert (updated["name"], updated["metadata"]) == ("renamed", {"a": "b"})
    page = client.get("/evals", params={"limit": 2}).json()
    assert [e["id"] for e in page["data"]] == ids[:2] and page["has_more"] is True and "object" not in page
    page = client.get("/evals", params={"limit": 2, "after": ids[1]}).json()
    assert [e["id"] for e in page["data"]] == ids[2:] and page["has_more"] is False
    assert [e["id"] for e in client.get("/evals", params={"order": "desc"}).json()["data"]] == ids[::-1]
    r = client.delete(f"/evals/{ids[0]}")
    assert r.status_code == 200
    assert r.json() == {
        "object": "eval.deleted",
        "deleted": False,  # what the service answers on success (recorded)
        "eval_id": ids[0],
        "run_id": None,
        "location": f"{OPENAI_V1}/evals/{ids[0]}/{ids[0]}",
    }
    assert client.get(f"/evals/{ids[0]}").status_code == 404


def _bad(client: httpx.Client, body: Any) -> str:
    r = client.post("/evals", json=body) if not isinstance(body, bytes) else client.post("/evals", content=body)
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["code"] == "UserError"
    return error["message"]


def test_rejects_unknown_evaluators_with_a_hint(client: httpx.Client) -> None:
    crit = rag_criteria()[2]
    crit["evaluator_name"] = crit["evaluator_name"] + "x"
    assert "did you mean '" + _evaluator("groundedness") + "'" in _bad(client, eval_body([crit]))
    crit["evaluator_name"] = "my_custom_judge"
    assert "unknown evaluator 'my_custom_judge'" in _bad(client, eval_body([crit]))


def test_rejects_missing_required_mapping_key() -> None:
    client = client_for(FoundryEmulator(strict_evaluators=True))  # since #14 the default accepts it, as the service
    crit = rag_criteria()[0]
    del crit["data_mapping"]["retrieved_documents"]
    message = _bad(client, eval_body([crit]))
    assert "missing required input(s) 'retrieved_documents'" in message and "document_retrieval" in message


def test_rejects_judge_without_deployment(client: httpx.Client) -> None:
    crit = rag_criteria()[1]
    del crit["initialization_parameters"]["deployment_name"]
    assert "initialization_parameters.deployment_name is required" in _bad(client, eval_body([crit]))
    crit["initialization_parameters"]["model"] = "gpt"  # the recorded alternative spelling is accepted
    _create_eval(client, eval_body([crit]))


def test_rejects_template_naming_a_field_absent_from_the_schema() -> None:
    client = client_for(FoundryEmulator(strict_evaluators=True))  # since #14 the default accepts it, as the service
    crit = rag_criteria()[3]
    crit["data_mapping"]["response"] = "{{item.respons}}"
    message = _bad(client, eval_body([crit]))
    assert "'respons' is not a property of data_source_config.item_schema" in message
    assert "did you mean 'response'" in message


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda b: b.pop("testing_criteria"), "testing_criteria is required"),
        (lambda b: b.pop("data_source_config"), "data_source_config is required"),
        (lambda b: b["testing_criteria"][1]["initialization_parameters"].update(threshold="3"), "threshold must be"),
        (lambda b: b["testing_criteria"].append(dict(b["testing_criteria"][0])), "duplicate testing criterion"),
        (lambda b: b["testing_criteria"][0].update(type="string_check"), "not supported by the emulator"),
    ],
)
def test_rejects_bad_bodies(client: httpx.Client, mutate: Any, expected: str) -> None:
    body = eval_body()
    mutate(body)
    assert expected in _bad(client, body)


def test_rejects_invalid_json(client: httpx.Client) -> None:
    assert "not valid JSON" in _bad(client, b"{nope")


# ---------------------------------------------------------------- not found
@pytest.mark.parametrize(
    "path",
    [
        "/evals/eval_missing",
        "/evals/{eval}/runs/evalrun_missing",
        "/evals/{eval}/runs/{run}/output_items/99",
        "/evals/eval_missing/runs",
        "/nowhere",
    ],
)
def test_unknown_ids_answer_404_with_the_azure_envelope(client: httpx.Client, path: str) -> None:
    ev = _create_eval(client)
    run = _create_run(client, ev["id"], sample_rows()[:1])
    r = client.get(path.format(eval=ev["id"], run=run["id"]))
    assert r.status_code == 404
    assert r.json()["error"]["code"] == "NotFound" and r.json()["error"]["message"]


# ---------------------------------------------------------------- runs
def test_run_lifecycle_and_views(client: httpx.Client) -> None:
    ev = _create_eval(client)
    rows = sample_rows()[:3]
    created = _create_run(client, ev["id"], rows)
    assert re.fullmatch(r"evalrun_[0-9a-f]{32}", created["id"])
    assert created["status"] == "in_progress" and created["created_by"] is None and created["report_url"] is None
    assert created["error"] == {"code": None, "message": None, "correlation_id": None, "inner_error": None}
    assert created["data_source"]["source"]["content"] == [{"item": r} for r in rows]
    statuses = []
    for _ in range(3):
        run = client.get(f"/evals/{ev['id']}/runs/{created['id']}").json()
        statuses.append(run["status"])
        if run["status"] == "in_progress":
            assert run["report_url"] is None
            assert client.get(f"/evals/{ev['id']}/runs/{created['id']}/output_items").json()["data"] == []
    assert statuses == ["in_progress", "in_progress", "completed"]  # polls_to_complete=2
    assert run["data_source"]["source"]["content"] == rows  # unwrapped on GET
    assert run["metadata"]["trigger_type"] == "oneoff" and run["error"] is None
    assert run["report_url"].endswith(f"/build/evaluations/{ev['id']}/run/{created['id']}")
    assert run["result_counts"]["total"] == 3
    items = all_items(client, ev["id"], created["id"])
    assert [it["id"] for it in items] == ["1", "2", "3"]
    assert [it["datasource_item_id"] for it in items] == [0, 1, 2]
    assert all(it["status"] == "completed" and it["datasource_item"] == rows[i] for i, it in enumerate(items))


def test_polls_and_seconds_to_complete() -> None:
    client = client_for(FoundryEmulator(polls_to_complete=0))
    ev = _create_eval(client)
    run = _create_run(client, ev["id"], sample_rows()[:1])
    assert client.get(f"/evals/{ev['id']}/runs/{run['id']}").json()["status"] == "completed"

    now = [1000.0]
    client = client_for(FoundryEmulator(polls_to_complete=0, seconds_to_complete=30, clock=lambda: now[0]))
    ev = _create_eval(client)
    run = _create_run(client, ev["id"], sample_rows()[:1])
    assert client.get(f"/evals/{ev['id']}/runs/{run['id']}").json()["status"] == "in_progress"
    now[0] += 30
    assert client.get(f"/evals/{ev['id']}/runs/{run['id']}").json()["status"] == "completed"


def test_counts_are_rows_not_results(client: httpx.Client) -> None:
    # rel: query/response overlap; grounded: response/context overlap (hand-computed below).
    grounded = {
        "type": "azure_ai_evaluator",
        "name": "grounded",
        "evaluator_name": _evaluator("groundedness"),
        "initialization_parameters": {"deployment_name": "judge"},
        "data_mapping": {"context": "{{item.context}}", "response": "{{item.response}}"},
    }
    ev = _create_eval(client, eval_body([_relevance(), grounded]))
    rows = [
        # tokens: q {paris, capital, france}; r {paris, capital, france}; c {paris, capital, france}: 5 and 5
        {"query": "Paris capital France", "response": "Paris capital France", "context": "Paris capital of France"},
        # rel: q {capital, france} r {paris, capital, france} → 2/2 → 5 pass; grounded: c {berlin} → 0 → 1 fail
        {"query": "capital of France", "response": "Paris capital France", "context": "Berlin"},
        # response missing: both criteria errored
        {"query": "capital of France", "context": "Paris"},
    ]
    run = _create_run(client, ev["id"], rows)
    done = run_to_completion(client, ev["id"], run["id"])
    assert done["result_counts"] == {"total": 3, "passed": 1, "failed": 1, "errored": 1, "skipped": 0}
    assert done["per_testing_criteria_results"] == [
        {"testing_criteria": "rel", "passed": 2, "failed": 0, "errored": 1, "skipped": 0},
        {"testing_criteria": "grounded", "passed": 1, "failed": 1, "errored": 1, "skipped": 0},
    ]
    scores = [[r["score"] for r in it["results"]] for it in all_items(client, ev["id"], run["id"])]
    assert scores == [[5, 5], [5, 1], [None, None]]
    errored = all_items(client, ev["id"], run["id"])[2]["results"][0]
    assert (
        errored["sample"]["error"]["code"] == "FAILED_EXECUTION" and "response" in errored["sample"]["error"]["message"]
    )
    assert (errored["label"], errored["passed"], errored["threshold"]) == (None, None, None)
    assert done["per_model_usage"][0]["model_name"] == "judge-2024-07-18"  # <deployment>-<version>, as recorded (#14)
    assert done["per_model_usage"][0]["invocation_count"] == 4


def test_mock_judge_score_by_hand() -> None:
    # content words: query {capital, france}; response {paris, capital}; shared 1, min size 2 → 0.5 → 1 + 2 = 3
    assert tokens("What is the capital of France?") == {"capital", "france"}
    assert overlap(tokens("What is the capital of France?"), tokens("Paris is the capital.")) == 0.5
    emu = FoundryEmulator(polls_to_complete=0)
    client = client_for(emu)
    ev = _create_eval(client, eval_body([_relevance(threshold=4)]))
    run = _create_run(
        client, ev["id"], [{"query": "What is the capital of France?", "response": "Paris is the capital."}]
    )
    run_to_completion(client, ev["id"], run["id"])
    result = all_items(client, ev["id"], run["id"])[0]["results"][0]
    assert (result["score"], result["threshold"], result["passed"], result["label"]) == (3, 4, False, "fail")
    assert result["reason"].startswith("Mock score") and "not a model judgement" in result["reason"]
    assert set(result) == {
        "type",
        "name",
        "metric",
        "score",
        "label",
        "reason",
        "threshold",
        "passed",
        "status",
        "sample",
    }
    assert result["sample"]["model"] == "judge-2024-07-18"  # <deployment>-<version>, as recorded (#14)


def _reference_docret(row: dict[str, Any], **init: Any) -> dict[str, Any]:
    from azure.ai.evaluation import DocumentRetrievalEvaluator

    return DocumentRetrievalEvaluator(**init)(
        retrieval_ground_truth=row["retrieval_ground_truth"], retrieved_documents=row["retrieved_documents"]
    )


def _json_clean(value: Any) -> Any:
    return json.loads(json.dumps(value).replace("NaN", "null"))


def test_document_retrieval_single_shape_matches_azure_ai_evaluation(client: httpx.Client) -> None:
    ev = _create_eval(client, eval_body(rag_criteria()[:1]))
    rows = sample_rows()
    run = _create_run(client, ev["id"], rows)
    run_to_completion(client, ev["id"], run["id"])
    for row, item in zip(rows, all_items(client, ev["id"], run["id"]), strict=True):
        expected = _reference_docret(row, ground_truth_label_min=0, ground_truth_label_max=4)
        (result,) = item["results"]
        assert result["metric"] == "document_retrieval"
        assert result["score"] == pytest.approx(expected["document_retrieval"])
        assert result["passed"] == expected["document_retrieval_passed"]
        assert result["threshold"] == expected["document_retrieval_threshold"] == 0.5
        assert result["properties"] == pytest.approx(_json_clean(expected["document_retrieval_properties"]))


def test_document_retrieval_per_metric_shape() -> None:
    client = client_for(FoundryEmulator(docret_shape="per_metric", polls_to_complete=0))
    ev = _create_eval(client, eval_body(rag_criteria()[:1]))
    rows = sample_rows()
    run = _create_run(client, ev["id"], rows)
    done = run_to_completion(client, ev["id"], run["id"])
    passed_ndcg = 0
    for row, item in zip(rows, all_items(client, ev["id"], run["id"]), strict=True):
        props = _json_clean(_reference_docret(row)["document_retrieval_properties"])
        metrics = [r["metric"] for r in item["results"]]
        assert metrics == [
            "ndcg@3",
            "xdcg@3",
            "fidelity",
            "top1_relevance",
            "top3_max_relevance",
            "holes",
            "holes_ratio",
            "total_retrieved_documents",
            "total_ground_truth_documents",
        ]
        for r in item["results"]:
            assert r["name"] == "document_retrieval"
            assert r["score"] == pytest.approx(props[r["metric"]])
            assert r["passed"] == props[f"{r['metric']}_passed"]
        passed_ndcg += props["ndcg@3_passed"]
    # the criterion's verdict is its primary metric (ndcg@3), as the service counts multi-metric evaluators
    assert done["per_testing_criteria_results"][0]["passed"] == passed_ndcg


def test_document_retrieval_rejected_row_is_errored(client: httpx.Client) -> None:
    crit = rag_criteria()[0]
    crit["initialization_parameters"]["ground_truth_label_max"] = 2  # the sample has label 3
    ev = _create_eval(client, eval_body([crit]))
    run = _create_run(client, ev["id"], sample_rows()[:1])
    done = run_to_completion(client, ev["id"], run["id"])
    assert done["status"] == "completed" and done["result_counts"]["errored"] == 1
    assert done["per_testing_criteria_results"] == []  # a criterion that errored on every row is left out
    (result,) = all_items(client, ev["id"], run["id"])[0]["results"]
    assert result["score"] is None and result["sample"]["error"]["code"] == "FAILED_EXECUTION"


# ---------------------------------------------------------------- pagination and filters
def test_output_item_pagination_order_and_status_filter(client: httpx.Client) -> None:
    ev = _create_eval(client)
    run = _create_run(client, ev["id"], sample_rows())
    run_to_completion(client, ev["id"], run["id"])
    url = f"/evals/{ev['id']}/runs/{run['id']}/output_items"
    first = client.get(url, params={"limit": 5}).json()
    assert (first["first_id"], first["last_id"], first["has_more"]) == ("1", "5", True)
    assert [it["id"] for it in all_items(client, ev["id"], run["id"], limit=5)] == [str(i) for i in range(1, 15)]
    desc = client.get(url, params={"order": "desc", "limit": 3}).json()
    assert [it["id"] for it in desc["data"]] == ["14", "13", "12"]
    assert [it["id"] for it in client.get(url, params={"after": "12"}).json()["data"]] == ["13", "14"]
    passed = {it["id"] for it in client.get(url, params={"status": "pass"}).json()["data"]}
    failed = {it["id"] for it in client.get(url, params={"status": "fail"}).json()["data"]}
    assert passed.isdisjoint(failed) and len(passed | failed) == 14
    for bad in ({"limit": 0}, {"limit": 101}, {"order": "up"}, {"status": "ok"}, {"after": "99"}):
        assert client.get(url, params=bad).status_code == 400, bad
    one = client.get(f"{url}/3").json()
    assert one["id"] == "3" and one["datasource_item_id"] == 2


def test_runs_list_cancel_and_delete(client: httpx.Client) -> None:
    ev = _create_eval(client)
    runs = [_create_run(client, ev["id"], sample_rows()[:1])["id"] for _ in range(3)]
    run_to_completion(client, ev["id"], runs[0])
    bare = client.post(f"/evals/{ev['id']}/runs/{runs[1]}")  # the TypeSpec's cancel route
    assert bare.status_code == 200 and bare.json()["status"] == "canceled"
    suffixed = client.post(f"/evals/{ev['id']}/runs/{runs[2]}/cancel")  # what openai 3.x sends
    assert suffixed.status_code == 200 and suffixed.json()["status"] == "canceled"
    too_late = client.post(f"/evals/{ev['id']}/runs/{runs[0]}/cancel")
    assert too_late.status_code == 400 and "already completed" in too_late.json()["error"]["message"]
    listed = client.get(f"/evals/{ev['id']}/runs", params={"status": "canceled"}).json()
    assert [r["id"] for r in listed["data"]] == runs[1:]
    assert client.get(f"/evals/{ev['id']}/runs", params={"status": "nope"}).status_code == 400
    r = client.delete(f"/evals/{ev['id']}/runs/{runs[0]}")
    assert r.json() == {"object": "eval.run.deleted", "deleted": True, "run_id": runs[0]}
    assert client.get(f"/evals/{ev['id']}/runs/{runs[0]}").status_code == 404


def test_run_body_errors(client: httpx.Client) -> None:
    ev = _create_eval(client, eval_body(rag_criteria()[:1]))
    url = f"/evals/{ev['id']}/runs"
    cases = [
        ({"name": "x"}, "data_source is required"),
        ({"data_source": {"type": "csv", "source": {}}}, "not supported by the emulator"),
        ({"data_source": {"type": "jsonl", "source": {"type": "file_content", "content": [{"x": 1}]}}}, "'item'"),
        (
            {"data_source": {"type": "jsonl", "source": {"type": "file_id", "id": "azureai://x/data/n/versions/1"}}},
            "not found",
        ),
    ]
    for body, expected in cases:
        r = client.post(url, json=body)
        assert r.status_code == 400 and expected in r.json()["error"]["message"], (body, r.text)
    schema_required = eval_body(rag_criteria()[:1])
    schema_required["data_source_config"]["item_schema"]["required"] = ["query"]
    ev2 = _create_eval(client, schema_required)
    r = client.post(f"/evals/{ev2['id']}/runs", json={"data_source": inline_source([{"context": "c"}])})
    assert r.status_code == 400 and "required field 'query'" in r.json()["error"]["message"]


# ---------------------------------------------------------------- routes
def test_legacy_routes_with_api_version(emu: FoundryEmulator) -> None:
    legacy = client_for(emu, PROJECT_ENDPOINT + "/openai")
    q = {"api-version": "2025-11-15-preview"}
    r = legacy.post("/evals", params=q, json=eval_body())
    assert r.status_code == 201
    eval_id = r.json()["id"]
    assert legacy.get(f"/evals/{eval_id}", params=q).status_code == 200
    assert legacy.post("/evals", json=eval_body()).status_code == 400  # api-version is required there
    r = legacy.delete(f"/evals/{eval_id}", params=q)
    assert r.status_code == 202 and r.json()["object"] == "eval.deleted"  # as recorded on the preview route


def test_any_host_and_project_is_served(emu: FoundryEmulator) -> None:
    other = client_for(emu, "https://acct.services.ai.azure.com/api/projects/other/openai/v1")
    ev = _create_eval(other)
    assert client_for(emu).get(f"/evals/{ev['id']}").status_code == 200


def test_dataset_upload_flow_feeds_a_run(emu: FoundryEmulator, client: httpx.Client) -> None:
    project = client_for(emu, PROJECT_ENDPOINT)
    q = {"api-version": "v1"}
    pending = project.post(
        "/datasets/rag/versions/1/startPendingUpload", params=q, json={"pendingUploadType": "BlobReference"}
    )
    assert pending.status_code == 200
    sas = pending.json()["blobReference"]["credential"]["sasUri"]
    assert sas.startswith("https://mock.blob.core.windows.net/")
    container, sas_query = sas.split("?", 1)
    data = "".join(json.dumps(r) + "\n" for r in sample_rows()).encode()
    put = project.put(
        f"{container}/rag.jsonl?{sas_query}",
        content=data,
        headers={"x-ms-blob-type": "BlockBlob", "If-None-Match": "*"},
    )
    assert put.status_code == 201 and put.headers["Content-MD5"]
    again = project.put(f"{container}/rag.jsonl?{sas_query}", content=data, headers={"If-None-Match": "*"})
    assert again.status_code == 409
    version = project.patch(
        "/datasets/rag/versions/1",
        params=q,
        json={"dataUri": f"{container}/rag.jsonl", "type": "uri_file"},
        headers={"content-type": "application/merge-patch+json"},
    ).json()
    assert version["id"] == "azureai://accounts/mock/projects/mock-project/data/rag/versions/1"
    assert project.get("/datasets/rag/versions/1", params=q).json()["dataUri"] == f"{container}/rag.jsonl"
    assert emu.store.blobs[container.split("windows.net/")[1] + "/rag.jsonl"] == data
    ev = _create_eval(client)
    run = client.post(
        f"/evals/{ev['id']}/runs",
        json={"data_source": {"type": "jsonl", "source": {"type": "file_id", "id": version["id"]}}},
    )
    assert run.status_code == 201
    done = run_to_completion(client, ev["id"], run.json()["id"])
    assert done["result_counts"]["total"] == 14
    assert project.delete("/datasets/rag/versions/1", params=q).status_code == 204
    assert project.get("/datasets/rag/versions/1", params=q).status_code == 404


def test_model_target_run_exposes_sample_output_text(client: httpx.Client) -> None:
    crit = _relevance()
    crit["data_mapping"]["response"] = "{{sample.output_text}}"
    ev = _create_eval(client, eval_body([crit]))
    body = {
        "data_source": {
            "type": "azure_ai_target_completions",
            "source": {"type": "file_content", "content": [{"item": {"query": "capital of France"}}]},
            "input_messages": {
                "type": "template",
                "template": [
                    {"type": "message", "role": "user", "content": {"type": "input_text", "text": "{{item.query}}"}}
                ],
            },
            "target": {"type": "azure_ai_model", "model": "gpt"},
        }
    }
    run = client.post(f"/evals/{ev['id']}/runs", json=body).json()
    done = run_to_completion(client, ev["id"], run["id"])
    assert done["data_source"]["source"]["type"] == "file_id"  # inline rows become a dataset, as recorded
    item = all_items(client, ev["id"], run["id"])[0]
    assert "capital of France" in item["datasource_item"]["sample.output_text"]
    assert item["results"][0]["score"] == 5  # the mock output echoes the query


def test_a_large_uploaded_run_pages_from_its_spool_resumes_and_close_removes_the_files() -> None:
    """2,500 uploaded rows (about 2 MB: several of the spool's 1 MiB read blocks, 25 pages of 100): every output item
    carries its own row in order, paging resumes from a continuation token half-way, and ``close`` removes the
    files the blobs and rows were spooled to."""
    from foundry_bridge.foundry import FoundryClient, StaticTokenCredential

    base = sample_rows()
    rows = [
        {**base[i % len(base)], "query_id": f"q{i:05d}", "context": f"row {i} " + "policy text " * 60}
        for i in range(2_500)
    ]
    data = b"".join(json.dumps(r).encode() + b"\n" for r in rows)
    assert len(data) > 2 << 20
    emu = FoundryEmulator(polls_to_complete=0)
    client = FoundryClient(
        PROJECT_ENDPOINT, StaticTokenCredential("t"), transport=emu.transport(), sleep=lambda _s: None
    )
    ev = client.create_eval(eval_body())
    dataset = client.upload_dataset("big", "1", data)
    run = client.create_run(ev.id, {"type": "jsonl", "source": {"type": "file_id", "id": dataset.id}})
    counts = client.run_poller(ev.id, run.id).result().result_counts
    assert counts is not None and counts.total == 2_500
    pages = client.list_output_items_raw(ev.id, run.id, page_size=100).by_page()
    first = [item for _ in range(12) for item in next(pages)]
    token = pages.continuation_token
    rest = [item for page in client.list_output_items_raw(ev.id, run.id).by_page(token) for item in page]
    items = first + rest
    assert [it["id"] for it in items] == [str(i + 1) for i in range(2_500)]
    assert all(it["datasource_item"] == row for it, row in zip(items, rows, strict=True))
    (key,) = emu.store.blobs
    spooled = emu.store.blobs.path(key).parent
    assert spooled.is_dir() and emu.store.blobs[key] == data
    emu.close()
    assert not spooled.exists()
    assert dataset.data_uri is not None
    assert httpx.Client(transport=emu.transport()).get(dataset.data_uri).status_code == 404
