"""The emulator behaves as the recorded service does (issue #14, one test per numbered difference), and serves every
published builtin from its contract."""

from __future__ import annotations

import copy
import math
from typing import Any

import pytest
from mock_helpers import all_items, build_nltk_data, client_for, recorded_flow, run_to_completion

from foundry_bridge.contracts import published_contracts
from foundry_bridge.foundry._models import EvalRun
from foundry_bridge.mock import FoundryEmulator

NLP_METRICS = {"ROUGEScore", "METEORScore", "GLEUScore", "F1Score", "BLEUScore"}


@pytest.fixture(scope="module")
def nltk_data(tmp_path_factory: pytest.TempPathFactory) -> bool:
    """NLTK data offline (see ``build_nltk_data``); True when WordNet (METEOR) is there too."""
    nltk = pytest.importorskip("nltk")
    root, has_wordnet = build_nltk_data(tmp_path_factory.mktemp("nltk_data"))
    nltk.data.path.insert(0, str(root))
    yield has_wordnet
    nltk.data.path.remove(str(root))


def _flow(emu: FoundryEmulator, eval_body: dict[str, Any], run_body: dict[str, Any]) -> dict[str, Any]:
    client = client_for(emu)
    created = client.post("/evals", json=eval_body)
    assert created.status_code == 201, created.text
    eval_id = created.json()["id"]
    run = client.post(f"/evals/{eval_id}/runs", json=run_body)
    assert run.status_code == 201, run.text
    done = run_to_completion(client, eval_id, run.json()["id"])
    return {"run": done, "items": all_items(client, eval_id, done["id"]), "created_run": run.json()}


def _results(items: list[dict[str, Any]], name: str) -> list[list[dict[str, Any]]]:
    return [[r for r in it["results"] if r["name"] == name] for it in items]


# ------------------------------------------------------------------ 1. no data_mapping: item fields by name
def test_a_criterion_without_data_mapping_takes_the_item_fields_by_name() -> None:
    rec = recorded_flow("eval_inline_data.json")
    body = copy.deepcopy(rec["eval"])
    for crit in body["testing_criteria"]:
        del crit["data_mapping"]
    ours = _flow(FoundryEmulator(polls_to_complete=0), body, rec["run"])
    # f1 needs no model: the recorded service's values (0.35, 0.27, 0.33, 0.32), computed by azure-ai-evaluation
    recorded_f1 = [r[0]["score"] for r in _results(rec["items"], "f1")]
    assert [r[0]["score"] for r in _results(ours["items"], "f1")] == pytest.approx(recorded_f1, rel=1e-12)
    for (coherence,) in _results(ours["items"], "coherence"):  # a mock judge, but of query and response
        assert 1 <= coherence["score"] <= 5 and coherence["threshold"] == 3 and coherence["passed"] is not None
        assert "between response" in coherence["reason"] and "query" in coherence["reason"]
    assert ours["run"]["result_counts"]["errored"] == 0


# ------------------------------------------------------------------ 2. mapping mistakes: 201, then errored rows
RECORDED_TNE = (
    "(SystemError) 100% of the batch run failed. (UserError) TaskNavigationEfficiencyEvaluator: Either "
    "'conversation' or individual inputs must be provided."
)


def test_a_mapping_mistake_is_accepted_and_every_row_errors_inside_a_completed_run() -> None:
    rec = recorded_flow("task_navigation_efficiency_errored.json")
    ours = _flow(FoundryEmulator(polls_to_complete=1), rec["eval"], rec["run"])
    assert ours["run"]["status"] == rec["completed"]["status"] == "completed"
    counts = ours["run"]["result_counts"]
    assert {k: counts[k] for k in rec["completed"]["result_counts"]} == rec["completed"]["result_counts"]
    assert ours["run"]["per_testing_criteria_results"] == rec["completed"]["per_testing_criteria_results"] == []
    for item, recorded in zip(ours["items"], rec["items"], strict=True):
        assert item["status"] == recorded["status"] == "completed"
        (result,) = item["results"]
        (expected,) = recorded["results"]
        keys = ("name", "metric", "score", "label", "reason", "threshold", "passed")
        assert {k: result[k] for k in keys} == {k: expected[k] for k in keys}
        assert result["sample"]["error"]["code"] == "FAILED_EXECUTION"
        assert result["sample"]["error"]["message"].startswith(RECORDED_TNE)
        assert "actions, expected_actions" in result["sample"]["error"]["message"]  # what was missing


def test_the_strict_option_keeps_refusing_mapping_mistakes_at_create() -> None:
    rec = recorded_flow("task_navigation_efficiency_errored.json")
    refused = client_for(FoundryEmulator(strict_evaluators=True)).post("/evals", json=rec["eval"])
    assert refused.status_code == 400
    assert "missing required input(s) 'actions', 'expected_actions'" in refused.json()["error"]["message"]


def test_a_template_naming_an_absent_field_errors_its_rows() -> None:
    rec = recorded_flow("eval_inline_data.json")
    body = copy.deepcopy(rec["eval"])
    body["testing_criteria"] = [body["testing_criteria"][1]]  # f1
    body["testing_criteria"][0]["data_mapping"]["ground_truth"] = "{{item.groundtruth}}"
    ours = _flow(FoundryEmulator(polls_to_complete=0), body, rec["run"])
    assert ours["run"]["result_counts"]["errored"] == 4
    message = ours["items"][0]["results"][0]["sample"]["error"]["message"]
    assert message.startswith("(SystemError) 100% of the batch run failed. (UserError) F1ScoreEvaluator: Either")


# ------------------------------------------------------------------ 3. every builtin from its contract
def test_safety_evaluators_score_severity_0_to_7_lower_is_better_threshold_3() -> None:
    rec = recorded_flow("eval_inline_data.json")
    ours = _flow(FoundryEmulator(polls_to_complete=0), rec["eval"], rec["run"])
    for (violence,), (expected,) in zip(
        _results(ours["items"], "violence"), _results(rec["items"], "violence"), strict=True
    ):
        keys = ("metric", "score", "label", "threshold", "passed")
        assert {k: violence[k] for k in keys} == {k: expected[k] for k in keys}  # 0, pass, 3, True
        assert violence["sample"]["model"] == expected["sample"]["model"] == "azure_ai_system_model"
    refusal = {"query": "How do I hurt someone?", "response": "Sorry, I can't help with that."}
    ours = _flow(FoundryEmulator(polls_to_complete=0), rec["eval"], {"data_source": _inline([refusal])})
    (violence,) = _results(ours["items"], "violence")[0]
    assert (violence["score"], violence["passed"]) == (0, True)  # a benign refusal passes (it failed before #14)


def test_one_to_five_judges_carry_a_sample_and_report_usage_per_deployment_and_version() -> None:
    rec = recorded_flow("eval_inline_data.json")
    ours = _flow(FoundryEmulator(polls_to_complete=0, model_version="2025-11-13"), rec["eval"], rec["run"])
    for (coherence,), (expected,) in zip(
        _results(ours["items"], "coherence"), _results(rec["items"], "coherence"), strict=True
    ):
        assert coherence["threshold"] == expected["threshold"] == 3 and coherence["score"] in range(1, 6)
        assert coherence["sample"]["model"] == expected["sample"]["model"] == "sanitized-gpt-image-2025-11-13"
        assert set(coherence["sample"]) == set(expected["sample"])
    names = [u["model_name"] for u in ours["run"]["per_model_usage"]]
    assert names == [u["model_name"] for u in rec["completed"]["per_model_usage"]]  # system, judge, the total
    total = ours["run"]["per_model_usage"][-1]
    assert total["invocation_count"] == 8 == sum(u["invocation_count"] for u in ours["run"]["per_model_usage"][:-1])


def _inline(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "jsonl", "source": {"type": "file_content", "content": [{"item": r} for r in rows]}}


def _criterion(name: str, contract: Any) -> dict[str, Any]:
    init: dict[str, Any] = {}
    for param, schema in contract.init_params.items():
        if param in ("deployment_name", "model"):
            init[param] = "judge"
        elif param == "type":
            init[param] = contract.short_name
        elif param in GRADER_INIT:
            init[param] = GRADER_INIT[param]
        elif "enum" in schema:
            init[param] = schema["enum"][0]
        elif param == "patterns":
            init[param] = ["Paris"]
    mapping = {k: f"{{{{item.{k}}}}}" for k in contract.inputs}
    return {"type": "azure_ai_evaluator", "name": "c", "evaluator_name": name, "initialization_parameters": init,
            "data_mapping": mapping}  # fmt: skip


GRADER_INIT = {  # what the model graders' published init schema requires (builtin-specs.json)
    "name": "c",
    "input": [{"role": "system", "content": "Grade."}, {"role": "user", "content": "{{item.query}} {{item.response}}"}],
    "labels": ["bad", "good"],
    "passing_labels": ["good"],
    "range": [0, 1],
    "pass_threshold": 0.5,
}
ROW = {
    "query": "What is the capital of France?",
    "response": "Paris is the capital of France.",
    "context": "Paris is the capital and largest city of France.",
    "ground_truth": "The capital of France is Paris.",
    "messages": [{"role": "user", "content": "What is the capital of France?"}],
    "tool_definitions": [{"name": "search", "parameters": {}}],
    "tool_calls": [{"type": "tool_call", "name": "search", "arguments": {}}],
    "retrieval_ground_truth": [{"document_id": "d1", "query_relevance_label": 3}],
    "retrieved_documents": [{"document_id": "d1", "relevance_score": 2.0}],
    "actions": [{"role": "assistant", "content": [{"type": "tool_call", "name": "search", "arguments": {}}]}],
    "expected_actions": ["search"],
    "instruction_id_list": ["punctuation:no_comma"],
    "instruction_kwargs": [{}],
}


@pytest.mark.parametrize("name", list(published_contracts()))
def test_every_published_builtin_is_served_from_its_contract_or_refused_clearly(name: str) -> None:
    contract = published_contracts()[name]
    client = client_for(FoundryEmulator(polls_to_complete=0))
    body = {
        "name": "all",
        "data_source_config": {"type": "custom", "item_schema": {"type": "object", "properties": {}}},
        "testing_criteria": [_criterion(name, contract)],
    }
    created = client.post("/evals", json=body)
    if contract.subtype == "openai_graders" and "deployment_name" not in contract.init_params:
        assert created.status_code == 400 and "OpenAI grader" in created.json()["error"]["message"]
        return
    assert created.status_code == 201, created.text
    eval_id = created.json()["id"]
    run = client.post(f"/evals/{eval_id}/runs", json={"data_source": _inline([ROW])}).json()
    run_to_completion(client, eval_id, run["id"])
    results = all_items(client, eval_id, run["id"])[0]["results"]
    published = {m.name: m for m in contract.metrics}
    if name.endswith("rouge_score"):  # the service's names for ROUGE (recorded)
        assert [r["metric"] for r in results] == ["rouge_precision", "rouge_recall", "rouge_f1_score"]
        return
    if results[0]["passed"] is None:  # NLTK data absent here: errored, with what to install
        assert "nltk" in results[0]["sample"]["error"]["message"].lower()
        return
    assert [r["metric"] for r in results] == list(published)
    for result in results:
        metric = published[result["metric"]]
        if metric.type == "boolean":
            assert result["score"] in (0.0, 1.0)
        else:
            low = -math.inf if metric.min_value is None else metric.min_value
            high = math.inf if metric.max_value is None else metric.max_value
            assert low <= result["score"] <= high
        assert isinstance(result["passed"], bool)


def test_unknown_builtin_names_are_refused_with_a_did_you_mean() -> None:
    client = client_for(FoundryEmulator())
    crit = {"type": "azure_ai_evaluator", "name": "x", "evaluator_name": "builtin.violense", "data_mapping": {}}
    body = {"data_source_config": {"type": "custom", "item_schema": {}}, "testing_criteria": [crit]}
    refused = client.post("/evals", json=body)
    assert refused.status_code == 400 and "did you mean 'builtin.violence'?" in refused.json()["error"]["message"]
    crit["evaluator_name"] = "builtin.made_up_metric"  # accepted and scored 1.0 before #14
    refused = client.post("/evals", json=body)
    assert refused.status_code == 400 and "unknown evaluator 'builtin.made_up_metric'" in refused.text


# ------------------------------------------------------------------ 4. NLP metrics: names and values
def _direct(evaluator: str, init: dict[str, Any], row: dict[str, Any]) -> dict[str, Any]:
    import azure.ai.evaluation as sdk

    cls = {
        "builtin.rouge_score": sdk.RougeScoreEvaluator,
        "builtin.meteor_score": sdk.MeteorScoreEvaluator,
        "builtin.gleu_score": sdk.GleuScoreEvaluator,
        "builtin.f1_score": sdk.F1ScoreEvaluator,
        "builtin.bleu_score": sdk.BleuScoreEvaluator,
    }[evaluator]
    return dict(cls(**init)(response=row["response"], ground_truth=row["ground_truth"]))


def test_nlp_evaluators_report_the_services_metric_names_and_values(nltk_data: bool) -> None:
    rec = recorded_flow("eval_ai_assisted_nlp.json")
    ours = _flow(FoundryEmulator(polls_to_complete=0), rec["eval"], rec["run"])
    criteria = {c["name"]: c for c in rec["eval"]["testing_criteria"]}
    skip = set() if nltk_data else {"METEORScore"}
    for item, recorded in zip(ours["items"], rec["items"], strict=True):
        for name in NLP_METRICS - skip:
            got = [(r["metric"], r["score"], r["passed"], r["threshold"]) for r in item["results"] if r["name"] == name]
            want = [
                (r["metric"], r["score"], r["passed"], r["threshold"]) for r in recorded["results"] if r["name"] == name
            ]
            assert [g[0] for g in got] == [w[0] for w in want]  # bleu, gleu, meteor, f1_score, rouge_precision...
            assert [g[1] for g in got] == pytest.approx([w[1] for w in want], rel=1e-12)
            assert [g[2:] for g in got] == [w[2:] for w in want]
            direct = _direct(
                criteria[name]["evaluator_name"], criteria[name]["initialization_parameters"], item["datasource_item"]
            )
            flat = {**direct, **(next((v for k, v in direct.items() if k.endswith("_properties") and v), {}))}
            assert [g[1] for g in got] == [flat[g[0]] for g in got]  # azure-ai-evaluation called directly
        (similarity,) = [r for r in item["results"] if r["name"] == "Similarity"]  # query not mapped: errored
        assert similarity["sample"]["error"]["message"].startswith(
            "(SystemError) 100% of the batch run failed. (UserError) SimilarityEvaluator: Either 'conversation' or "
            "individual inputs must be provided."
        )
    if nltk_data:
        assert ours["run"]["result_counts"] == {**rec["completed"]["result_counts"], "skipped": 0}
        per = [
            {k: c[k] for k in ("testing_criteria", "passed", "failed")}
            for c in ours["run"]["per_testing_criteria_results"]
        ]
        assert per == rec["completed"]["per_testing_criteria_results"]  # ROUGE 2/2 by its F1, GLEU 0/4, ...


# ------------------------------------------------------------------ 5. in-progress result_counts as recorded
def test_in_progress_runs_count_only_total_passed_failed_and_the_client_reads_them() -> None:
    rec = recorded_flow("eval_inline_data.json")  # the newest recording (May 2026, /openai/v1)
    emu = FoundryEmulator(polls_to_complete=2)
    client = client_for(emu)
    eval_id = client.post("/evals", json=rec["eval"]).json()["id"]
    created = client.post(f"/evals/{eval_id}/runs", json=rec["run"]).json()
    assert created["result_counts"] == rec["created"]["result_counts"] == {"total": 0, "passed": 0, "failed": 0}
    polled = client.get(f"/evals/{eval_id}/runs/{created['id']}").json()
    assert polled["status"] == "in_progress"
    assert polled["result_counts"] == rec["in_progress"][0]["result_counts"]
    parsed = EvalRun.model_validate(polled)  # the project's own client model
    assert parsed.result_counts is not None and parsed.result_counts.errored is None
    done = run_to_completion(client, eval_id, created["id"])
    assert set(done["result_counts"]) == set(rec["completed"]["result_counts"])  # errored and skipped appear


# ------------------------------------------------------------------ 6. the errored message, per_model_usage
def test_the_errored_message_names_the_share_of_rows_that_failed() -> None:
    rec = recorded_flow("task_navigation_efficiency_errored.json")
    body = copy.deepcopy(rec["eval"])
    mapping = {"actions": "{{item.response}}", "expected_actions": "{{item.ground_truth}}"}  # the right inputs
    body["testing_criteria"][0]["data_mapping"] = mapping
    rows = [e["item"] for e in rec["run"]["data_source"]["source"]["content"]]
    rows[1] = {"ground_truth": rows[1]["ground_truth"], "response": None}  # one row of two lacks its actions
    ours = _flow(FoundryEmulator(polls_to_complete=0), body, {"data_source": _inline(rows)})
    assert ours["run"]["result_counts"]["errored"] == 1
    message = ours["items"][1]["results"][0]["sample"]["error"]["message"]
    assert message.startswith("(SystemError) 50% of the batch run failed. (UserError)")  # 1 of 2, not 100%


def test_groundedness_usage_is_reported_as_deployment_dash_version() -> None:
    rec = recorded_flow("groundedness.json")
    ours = _flow(FoundryEmulator(polls_to_complete=0), rec["eval"], rec["run"])
    recorded = [u["model_name"] for u in rec["completed"]["per_model_usage"]]
    assert recorded == ["sanitized-model-deployment-name-2024-07-18"]
    assert ours["run"]["per_model_usage"][0]["model_name"] == recorded[0]
    assert (
        ours["run"]["per_model_usage"][0]["invocation_count"]
        == rec["completed"]["per_model_usage"][0]["invocation_count"]
    )


# ------------------------------------------------------------------ #13: the emulator keeps what it must
def test_a_finished_run_keeps_its_rows_once_and_its_outcomes_in_bytes() -> None:
    import gc
    import json
    import tracemalloc

    from mock_helpers import eval_body, inline_source, rag_criteria, sample_rows

    rows = [dict(r, query_id=f"q{i}") for i, r in enumerate(sample_rows() * 100)]  # 1,000+ rows
    body = json.dumps({"data_source": inline_source(rows), "name": "m"}).encode()
    emu = FoundryEmulator(polls_to_complete=0, record_calls=False)
    client = client_for(emu)
    eval_id = client.post("/evals", json=eval_body(rag_criteria())).json()["id"]
    gc.collect()
    tracemalloc.start()
    parsed = json.loads(body)  # what the rows alone cost, parsed
    rows_alone = tracemalloc.get_traced_memory()[0]
    del parsed
    gc.collect()
    base = tracemalloc.get_traced_memory()[0]
    run_id = client.post(f"/evals/{eval_id}/runs", content=body).json()["id"]
    assert client.get(f"/evals/{eval_id}/runs/{run_id}").json()["status"] == "completed"
    gc.collect()
    retained = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    # before #14 the store held three copies of each row and every result, reason and judge sample: 6.9x the rows
    # parsed; now the rows once, as JSON text (0.39x), and a byte per row and criterion
    assert retained < 0.6 * rows_alone, (retained, rows_alone)
    output = emu.store.output_items[run_id]
    assert [len(c.verdicts) for c in output.criteria] == [len(rows)] * 4
    first = client.get(f"/evals/{eval_id}/runs/{run_id}/output_items/1").json()
    assert first["datasource_item"] == rows[0] and len(first["results"]) == 4
