"""LocalBackend end to end on the benefits sample, against a fake OpenAI-compatible judge on 127.0.0.1."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest
from local_helpers import (
    benefits_plan,
    benefits_rule,
    by_key,
    clean_rule,
    criterion,
    with_criteria,
)

from foundry_bridge.catalog import CATALOG
from foundry_bridge.errors import UsageError
from foundry_bridge.local import LocalBackend
from foundry_bridge.local.fake_judge import FakeJudgeServer
from foundry_bridge.runner_protocol import Backend, RunContext

DOCRET_METRICS = [m.name for m in CATALOG["builtin.document_retrieval"].metrics]


@pytest.fixture(scope="module")
def judge() -> Iterator[FakeJudgeServer]:
    with FakeJudgeServer(benefits_rule) as server:
        yield server


@pytest.fixture
def fresh_judge(judge: FakeJudgeServer) -> FakeJudgeServer:
    judge.rule = benefits_rule
    judge.reset()
    return judge


def run(backend: LocalBackend, plan, tmp_path: Path, progress=None) -> tuple[list, RunContext]:
    ctx = RunContext(plan=plan, run_dir=tmp_path)
    if progress is not None:
        ctx.progress = progress
    return list(backend.execute(ctx)), ctx


def make_backend(judge: FakeJudgeServer, tmp_path: Path, **kw) -> LocalBackend:
    kw.setdefault("cache_dir", tmp_path / "cache")
    kw.setdefault("judge_model", "judge-model")
    return LocalBackend(judge_endpoint=judge.base_url, **kw)


def test_is_a_backend() -> None:
    backend: Backend = LocalBackend(judge_endpoint=None, judge_model=None, cache_dir=None)  # type-checks
    assert backend.name == "local"
    assert callable(backend.execute)


def test_benefits_sample_scores_labels_and_rows(fresh_judge: FakeJudgeServer, tmp_path: Path) -> None:
    plan = benefits_plan()
    seen: list[tuple[str, int, int | None]] = []
    rows, ctx = run(make_backend(fresh_judge, tmp_path), plan, tmp_path, lambda s, d, t: seen.append((s, d, t)))

    n = len(plan.items)
    assert n == 14
    # one row per (dataset row, criterion, metric): 9 document-retrieval metrics + 3 judges
    assert len(rows) == n * (len(DOCRET_METRICS) + 3)
    assert fresh_judge.calls == n * 3
    rows_by = by_key(rows)

    # the judges' verdicts, as the fake judge decided them
    g = rows_by[("q03", "groundedness", "groundedness")]
    assert (g.score, g.label, g.passed, g.threshold, g.error) == (1.0, "fail", False, 3.0, None)
    assert g.reason == "canary first 6%"
    assert rows_by[("q04", "groundedness", "groundedness")].score == 2.0
    assert rows_by[("q01", "groundedness", "groundedness")].label == "pass"
    assert rows_by[("q01", "groundedness", "groundedness")].score == 5.0
    r = rows_by[("q05", "relevance", "relevance")]
    assert (r.score, r.label, r.passed) == (2.0, "fail", False)
    assert rows_by[("q07", "retrieval", "retrieval")].score == 1.0
    assert rows_by[("q01", "retrieval", "retrieval")].score == 4.0
    props = rows_by[("q01", "retrieval", "retrieval")].properties
    assert props["status"] == "completed" and props["model"] == "judge-model"
    assert "sample_input" not in props  # the inputs are not copied into every result

    # honest failures: an unparseable answer and an answer without a score are errored rows, not 0
    bad = rows_by[("q09", "relevance", "relevance")]
    assert bad.score is None and bad.label is None and bad.passed is None
    assert bad.error.startswith("JUDGE_UNPARSEABLE:")
    none = rows_by[("n02", "retrieval", "retrieval")]
    assert none.score is None and none.error.startswith("JUDGE_NO_SCORE:")
    errored = [r for r in rows if r.error]
    assert {(r.query_id, r.criterion) for r in errored} == {("q09", "relevance"), ("n02", "retrieval")}
    assert ctx.manifest["errored"] == 2

    # document retrieval: one row per catalog metric; values by hand (exp gain, log2 discount, k=3)
    q01 = [r for r in rows if r.query_id == "q01" and r.criterion == "document_retrieval"]
    assert [r.metric for r in q01] == DOCRET_METRICS
    assert rows_by[("q01", "document_retrieval", "ndcg@3")].score == pytest.approx(1.0)
    # q02: retrieved labels 2, 3, hole(0) by score; ideal 3, 2
    dcg = 3 / math.log2(2) + 7 / math.log2(3)
    idcg = 7 / math.log2(2) + 3 / math.log2(3)
    nd = rows_by[("q02", "document_retrieval", "ndcg@3")]
    assert nd.score == pytest.approx(dcg / idcg)
    assert (nd.label, nd.passed, nd.threshold) == ("pass", True, 0.5)
    holes = rows_by[("q02", "document_retrieval", "holes")]
    assert (holes.score, holes.label, holes.passed) == (1.0, "fail", False)
    assert rows_by[("q02", "document_retrieval", "total_retrieved_documents")].score == 3.0

    # row order: by dataset row, then criterion, then metric; row indices and query ids line up
    assert [r.row for r in rows] == sorted(r.row for r in rows)
    assert {r.row: r.query_id for r in rows} == {i: it["item"]["query_id"] for i, it in enumerate(plan.items)}

    # progress: "judging", monotone, ends at the total; "errored" counts the errored tasks so far
    assert seen[-1] == ("judging", n * 3, n * 3)
    judging = [s for s in seen if s[0] == "judging"]
    assert [d for _, d, _ in judging] == sorted(d for _, d, _ in judging)
    assert {s[0] for s in seen} <= {"judging", "errored"}

    local = ctx.manifest["local"]
    assert local["judge_calls"] == n * 3 and local["cache_hits"] == 0
    evaluators = {e["name"]: e for e in ctx.manifest["evaluators"]}
    assert evaluators["groundedness"]["local_class"] == "GroundednessEvaluator"
    assert evaluators["groundedness"]["implementation"].startswith("azure-ai-evaluation ")


def test_groundedness_pro_and_unknown_evaluators_are_errored_rows(fresh_judge: FakeJudgeServer, tmp_path: Path) -> None:
    plan = benefits_plan()
    pro = next(name for name, spec in CATALOG.items() if spec.sdk_class == "GroundednessProEvaluator")
    crits = [
        criterion(
            "gpro", pro, {"query": "{{item.query}}", "context": "{{item.context}}", "response": "{{item.response}}"}
        ),
        criterion("mystery", "builtin.not_a_thing", {"query": "{{item.query}}"}),
        criterion("rel", "builtin.relevance", {"query": "{{item.query}}", "response": "{{item.response}}"}),
    ]
    rows, ctx = run(make_backend(fresh_judge, tmp_path), with_criteria(plan, crits), tmp_path)
    gpro = [r for r in rows if r.criterion == "gpro"]
    assert len(gpro) == 14
    assert all(r.error.startswith("UNSUPPORTED_LOCALLY:") and r.score is None for r in gpro)
    assert all(r.metric == "groundedness_pro" for r in gpro)
    mystery = [r for r in rows if r.criterion == "mystery"]
    assert len(mystery) == 14 and all(r.error.startswith("UNKNOWN_EVALUATOR:") for r in mystery)
    assert fresh_judge.calls == 14  # only relevance ran
    assert ctx.manifest["errored"] == 28 + 1  # + q09's unparseable relevance answer
    assert set(ctx.manifest["local"]["unsupported"]) == {"gpro", "mystery"}


def test_missing_input_is_an_errored_row(fresh_judge: FakeJudgeServer, tmp_path: Path) -> None:
    def drop(items):
        del items[0]["item"]["response"]
        items[1]["item"]["context"] = ""
        items[2]["item"]["retrieval_ground_truth"] = None

    rows, _ = run(make_backend(fresh_judge, tmp_path), benefits_plan(drop, limit=4), tmp_path)
    rows_by = by_key(rows)
    assert rows_by[("q01", "groundedness", "groundedness")].error.startswith("MISSING_INPUT:")
    assert rows_by[("q01", "relevance", "relevance")].error.startswith("MISSING_INPUT:")
    assert rows_by[("q01", "retrieval", "retrieval")].error is None
    # empty context: groundedness can still run on query+response (the agent form), retrieval cannot
    assert rows_by[("q02", "retrieval", "retrieval")].error.startswith("MISSING_INPUT:")
    docret = [r for r in rows if r.query_id == "q03" and r.criterion == "document_retrieval"]
    assert len(docret) == len(DOCRET_METRICS) and all(r.error.startswith("MISSING_INPUT:") for r in docret)
    assert fresh_judge.calls == 4 * 3 - 3


def test_groundedness_rows_with_and_without_query_use_their_own_prompt(
    fresh_judge: FakeJudgeServer, tmp_path: Path
) -> None:
    def drop_queries(items):
        for entry in items[::2]:
            entry["item"]["query"] = None

    plan = benefits_plan(drop_queries)
    crits = [c for c in plan.criteria if c.evaluator == "builtin.groundedness"]
    fresh_judge.rule = clean_rule
    rows, _ = run(make_backend(fresh_judge, tmp_path, concurrency=3), with_criteria(plan, crits), tmp_path)
    assert all(r.error is None for r in rows)
    with_query = [r for r in fresh_judge.requests if "\nQUERY:" in r.data]
    without = [r for r in fresh_judge.requests if "\nQUERY:" not in r.data]
    assert len(with_query) == 7 and len(without) == 7
    assert all("QUERY: None" not in r.data for r in fresh_judge.requests)


def test_judge_model_defaults_to_the_criterion_deployment(fresh_judge: FakeJudgeServer, tmp_path: Path) -> None:
    fresh_judge.rule = clean_rule
    backend = LocalBackend(judge_endpoint=fresh_judge.base_url, judge_model=None, cache_dir=tmp_path / "c")
    rows, _ = run(backend, benefits_plan(limit=2), tmp_path)
    assert {r.model for r in fresh_judge.requests} == {"gpt-4o-mini"}  # deployment_name in mappings/default.yaml
    assert all(r.error is None for r in rows)


def test_judges_need_an_endpoint_document_retrieval_does_not(tmp_path: Path) -> None:
    plan = benefits_plan()
    with pytest.raises(UsageError, match="judge-endpoint"):
        LocalBackend(judge_endpoint=None, judge_model="m", cache_dir=tmp_path).execute(RunContext(plan, tmp_path))
    docret_only = with_criteria(plan, [c for c in plan.criteria if c.evaluator == "builtin.document_retrieval"])
    rows = list(
        LocalBackend(judge_endpoint=None, judge_model=None, cache_dir=tmp_path).execute(
            RunContext(docret_only, tmp_path)
        )
    )
    assert len(rows) == 14 * len(DOCRET_METRICS)


def test_bad_options_are_refused() -> None:
    with pytest.raises(UsageError):
        LocalBackend(judge_endpoint="http://127.0.0.1:1/v1", judge_model="m", cache_dir=None, concurrency=0)
    with pytest.raises(UsageError):
        LocalBackend(judge_endpoint="http://127.0.0.1:1/v1", judge_model="m", cache_dir=None, cache_ttl=0)


def test_document_retrieval_rows_equal_azure_ai_evaluation(tmp_path: Path) -> None:
    from azure.ai.evaluation import DocumentRetrievalEvaluator

    def spoil(items):
        items[1]["item"]["retrieval_ground_truth"] = []  # rejected by the evaluator: an errored row per metric
        items[2]["item"]["retrieved_documents"] = []  # accepted: all metrics 0

    plan = benefits_plan(spoil)
    plan = with_criteria(plan, [c for c in plan.criteria if c.evaluator == "builtin.document_retrieval"])
    backend = LocalBackend(judge_endpoint=None, judge_model=None, cache_dir=None)
    ctx = RunContext(plan=plan, run_dir=tmp_path)
    rows = by_key(backend.execute(ctx))
    assert ctx.manifest["local"]["document_retrieval"] == "foundry_bridge.metrics.docret"
    assert len(rows) == 14 * len(DOCRET_METRICS)

    (crit,) = plan.criteria
    evaluator = DocumentRetrievalEvaluator(**crit.init)
    for it in plan.items:
        item = it["item"]
        keyed = {m: rows[(item["query_id"], crit.name, m)] for m in DOCRET_METRICS}
        if not item["retrieval_ground_truth"]:
            with pytest.raises(Exception, match="must contain at least one item"):
                evaluator(
                    retrieval_ground_truth=item["retrieval_ground_truth"],
                    retrieved_documents=item["retrieved_documents"],
                )
            assert all(r.error and r.score is None for r in keyed.values())
            continue
        expected = evaluator(
            retrieval_ground_truth=item["retrieval_ground_truth"], retrieved_documents=item["retrieved_documents"]
        )["document_retrieval_properties"]
        for m, r in keyed.items():
            assert r.error is None
            assert r.score == pytest.approx(float(expected[m]), rel=1e-12)
            assert (r.label, r.passed, r.threshold) == (
                expected[f"{m}_result"],
                expected[f"{m}_passed"],
                expected[f"{m}_threshold"],
            )
    q03 = rows[("q03", "document_retrieval", "ndcg@3")]
    assert (q03.score, q03.label) == (0.0, "fail")


def test_positional_endpoint_and_model() -> None:
    backend = LocalBackend("http://127.0.0.1:8000/v1/", "qwen", cache_dir=None)
    assert (backend.judge_endpoint, backend.judge_model, backend.azure) == ("http://127.0.0.1:8000/v1", "qwen", False)
