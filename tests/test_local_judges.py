"""Judge calls: refused and throttled requests, timeouts, Azure-style config, input templates, error texts."""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from local_helpers import benefits_plan, by_key, criterion, with_criteria

from foundry_bridge.local import LocalBackend
from foundry_bridge.local._judges import JudgeConfig, describe_exception, looks_like_azure
from foundry_bridge.local.fake_judge import FakeAnswer, FakeJudgeServer, JudgeRequest, score_answer
from foundry_bridge.runner_protocol import RunContext
from foundry_bridge.wire import render_mapping as resolve_inputs

ROOT = Path(__file__).resolve().parent.parent
REL = {"query": "{{item.query}}", "response": "{{item.response}}"}


@pytest.fixture(scope="module")
def judge() -> Iterator[FakeJudgeServer]:
    with FakeJudgeServer() as server:
        yield server


@pytest.fixture
def fresh_judge(judge: FakeJudgeServer) -> FakeJudgeServer:
    judge.rule = lambda r: score_answer(4)
    judge.reset()
    return judge


def relevance_plan(limit: int = 3):
    return with_criteria(benefits_plan(limit=limit), [criterion("rel", "builtin.relevance", REL, threshold=3)])


def execute(backend: LocalBackend, plan, tmp_path: Path) -> tuple[list, RunContext]:
    ctx = RunContext(plan=plan, run_dir=tmp_path)
    return list(backend.execute(ctx)), ctx


def backend_for(judge: FakeJudgeServer, tmp_path: Path, **kw) -> LocalBackend:
    kw.setdefault("use_cache", False)
    return LocalBackend(judge_endpoint=judge.base_url, judge_model="m", cache_dir=tmp_path / "c", **kw)


def test_throttled_request_is_retried_after_retry_after(fresh_judge: FakeJudgeServer, tmp_path: Path) -> None:
    state = {"q02": 0}

    def rule(req: JudgeRequest) -> FakeAnswer:
        if "affiliate two months" in req.data and state["q02"] == 0:
            state["q02"] += 1
            return FakeAnswer(content="slow down", status=429, headers={"Retry-After": "0.01"})
        return score_answer(4)

    fresh_judge.rule = rule
    rows, _ = execute(backend_for(fresh_judge, tmp_path), relevance_plan(), tmp_path)
    assert all(r.error is None and r.score == 4.0 for r in rows)
    assert fresh_judge.calls == 4  # 3 rows + one retry, made by the library itself


def test_refused_request_is_an_errored_row_without_retries(fresh_judge: FakeJudgeServer, tmp_path: Path) -> None:
    def rule(req: JudgeRequest) -> FakeAnswer:
        if "affiliate two months" in req.data:
            return FakeAnswer(content="content filter", status=400)
        return score_answer(4)

    fresh_judge.rule = rule
    rows, ctx = execute(backend_for(fresh_judge, tmp_path), relevance_plan(), tmp_path)
    bad = by_key(rows)[("q02", "rel", "relevance")]
    assert bad.score is None and bad.error.startswith("JUDGE_HTTP_ERROR: HTTP 400")
    assert "content filter" in bad.error
    assert fresh_judge.calls == 3  # a 400 is not retried
    assert ctx.manifest["errored"] == 1


def test_server_errors_stop_after_the_library_retries(fresh_judge: FakeJudgeServer, tmp_path: Path) -> None:
    def rule(req: JudgeRequest) -> FakeAnswer:
        if "affiliate two months" in req.data:
            return FakeAnswer(content="boom", status=503, headers={"Retry-After": "0.01"})
        return score_answer(4)

    fresh_judge.rule = rule
    rows, _ = execute(backend_for(fresh_judge, tmp_path, judge_retries=10), relevance_plan(), tmp_path)
    bad = by_key(rows)[("q02", "rel", "relevance")]
    assert bad.error.startswith("JUDGE_HTTP_ERROR: HTTP 503")
    assert fresh_judge.calls == 2 + 11  # first try + the library's 10 retries, nothing more on top


def test_timeout_is_an_errored_row(fresh_judge: FakeJudgeServer, tmp_path: Path) -> None:
    def rule(req: JudgeRequest) -> FakeAnswer:
        if "affiliate two months" in req.data:
            return FakeAnswer(content=json.dumps({"score": 5}), delay=4)
        return score_answer(4)

    fresh_judge.rule = rule
    rows, _ = execute(backend_for(fresh_judge, tmp_path, timeout=1), relevance_plan(), tmp_path)
    rows_by = by_key(rows)
    assert rows_by[("q02", "rel", "relevance")].error.startswith("JUDGE_TIMEOUT:")
    assert rows_by[("q02", "rel", "relevance")].score is None
    assert rows_by[("q01", "rel", "relevance")].score == 4.0


def test_unreachable_judge_is_an_errored_row(tmp_path: Path) -> None:
    backend = LocalBackend(judge_endpoint="http://127.0.0.1:9/v1", judge_model="m", cache_dir=None, use_cache=False)
    rows, ctx = execute(backend, relevance_plan(1), tmp_path)
    assert rows[0].error.startswith("JUDGE_UNREACHABLE:")
    assert ctx.manifest["errored"] == 1


@pytest.mark.parametrize(
    ("content", "code"),
    [
        ("<S0>thinking</S0><S1>fine</S1><S2>4</S2>", "JUDGE_UNPARSEABLE"),
        ("", "JUDGE_UNPARSEABLE"),
        ("{}", "JUDGE_NO_SCORE"),
        ('{"score": null, "reason": "?"}', "JUDGE_UNPARSEABLE"),  # Relevance raises TypeError on float(None)
        ('{"status": "skipped", "reason": "no answer", "score": null}', "JUDGE_SKIPPED"),
        ('{"score": "NaN"}', "JUDGE_NO_SCORE"),
    ],
)
def test_unusable_answers_are_errored_never_zero(
    fresh_judge: FakeJudgeServer, tmp_path: Path, content: str, code: str
) -> None:
    fresh_judge.rule = lambda r: FakeAnswer(content=content)
    rows, _ = execute(backend_for(fresh_judge, tmp_path), relevance_plan(1), tmp_path)
    (row,) = rows
    assert row.score is None and row.passed is None
    assert row.error.split(":")[0] == code, row.error


def test_response_completeness_and_string_scores(fresh_judge: FakeJudgeServer, tmp_path: Path) -> None:
    fresh_judge.rule = lambda r: FakeAnswer(content='{"score": "2", "reason": "misses half"}')
    mapping = {"response": "{{item.response}}", "ground_truth": "{{item.ground_truth}}"}

    def add_gt(items):
        items[0]["item"]["ground_truth"] = "16 weeks after 6 months of service."

    plan = with_criteria(
        benefits_plan(add_gt, limit=1), [criterion("rc", "builtin.response_completeness", mapping, threshold=2)]
    )
    rows, _ = execute(backend_for(fresh_judge, tmp_path), plan, tmp_path)
    (row,) = rows
    assert (row.metric, row.score, row.label, row.passed, row.threshold) == (
        "response_completeness",
        2.0,
        "pass",
        True,
        2.0,
    )
    assert row.reason == "misses half"
    assert fresh_judge.requests[0].kind == "response_completeness"


def test_azure_style_endpoint_with_key(fresh_judge: FakeJudgeServer, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "azure-secret-key")
    backend = LocalBackend(
        judge_endpoint=fresh_judge.root,
        judge_model="my-deployment",
        cache_dir=tmp_path / "c",
        azure=True,
        api_version="2024-10-21",
    )
    rows, ctx = execute(backend, relevance_plan(2), tmp_path)
    assert all(r.score == 4.0 for r in rows)
    req = fresh_judge.requests[0]
    assert req.path == "/openai/deployments/my-deployment/chat/completions"
    assert req.headers.get("api-key") == "azure-secret-key"
    judge = ctx.manifest["local"]["judges"]["rel"]
    assert judge == {
        "api": "azure_openai",
        "endpoint": fresh_judge.root,
        "model": "my-deployment",
        "api_version": "2024-10-21",
    }
    assert "azure-secret-key" not in json.dumps(ctx.manifest)


def test_openai_config_shape_and_azure_detection(monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    cfg = JudgeConfig(endpoint="http://localhost:8000/v1", model="llama", azure=False, api_key_env="OPENAI_API_KEY")
    assert cfg.model_config() == {
        "type": "openai",
        "base_url": "http://localhost:8000/v1",
        "model": "llama",
        "api_key": "not-needed",
    }
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    assert cfg.model_config()["api_key"] == "k"
    assert looks_like_azure("https://res.openai.azure.com/")
    assert looks_like_azure("https://x.cognitiveservices.azure.com")
    assert not looks_like_azure("http://127.0.0.1:8000/v1")
    backend = LocalBackend(judge_endpoint="https://res.openai.azure.com/", judge_model="d", cache_dir=None)
    assert backend.azure and backend.api_key_env == "AZURE_OPENAI_API_KEY"
    assert not LocalBackend(judge_endpoint="http://h/v1", judge_model="d", cache_dir=None).azure


def test_keyless_azure_uses_a_credential(fresh_judge: FakeJudgeServer, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("AZURE_OPENAI_API_KEY", raising=False)
    asked: list[tuple[str, ...]] = []

    class Token:
        token = "entra-token"
        expires_on = 2**31

    class Credential:
        def get_token(self, *scopes, **kw):
            asked.append(scopes)
            return Token()

    backend = LocalBackend(
        judge_endpoint=fresh_judge.root,
        judge_model="dep",
        cache_dir=None,
        use_cache=False,
        azure=True,
        credential=Credential(),
    )
    rows, _ = execute(backend, relevance_plan(1), tmp_path)
    assert rows[0].score == 4.0
    assert asked
    assert fresh_judge.requests[0].headers.get("authorization") == "Bearer entra-token"


def test_resolve_inputs() -> None:
    item = {"q": "hi", "docs": [{"id": 1}], "nested": {"a": {"b": "deep"}}, "none": None, "n": 3}
    mapping = {
        "query": "{{item.q}}",
        "documents": "{{ item.docs }}",
        "deep": "{{item.nested.a.b}}",
        "text": "Q: {{item.q}} / {{item.n}}",
        "absent": "{{item.missing}}",
        "null": "{{item.none}}",
        "partial": "x {{item.missing}}",
        "const": "plain",
    }
    assert resolve_inputs(mapping, item) == {
        "query": "hi",
        "documents": [{"id": 1}],
        "deep": "deep",
        "text": "Q: hi / 3",
        "const": "plain",
    }


def test_describe_exception_texts() -> None:
    assert describe_exception(TimeoutError(), timeout=2.5).startswith(
        "JUDGE_TIMEOUT: no answer from the judge within 2.5 s"
    )
    assert describe_exception(json.JSONDecodeError("Expecting value", "x", 0)).startswith("JUDGE_UNPARSEABLE:")
    text = describe_exception(RuntimeError("failed with api_key=sk-abc123 in config"))
    assert text.startswith("EVALUATOR_ERROR: RuntimeError:") and "sk-abc123" not in text


def test_local_modules_name_no_builtin_evaluator() -> None:
    """Evaluator names live in the catalog; the local backend derives everything from it."""
    for path in sorted((ROOT / "foundry_bridge" / "local").glob("*.py")):
        tree = ast.parse(path.read_text())
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                assert "builtin." not in node.value, f"{path.name}: {node.value!r}"


def test_catalog_decides_what_runs(fresh_judge: FakeJudgeServer, tmp_path: Path, monkeypatch) -> None:
    """A judge added to the catalog runs with no backend change; a class the library lacks gives errored rows."""
    import dataclasses

    from foundry_bridge.catalog import CATALOG

    base = CATALOG["builtin.relevance"]
    monkeypatch.setitem(CATALOG, "builtin.relevance_twin", dataclasses.replace(base, name="builtin.relevance_twin"))
    monkeypatch.setitem(
        CATALOG, "builtin.future_judge", dataclasses.replace(base, name="builtin.future_judge", sdk_class="NoSuchEval")
    )
    plan = with_criteria(
        benefits_plan(limit=2),
        [criterion("twin", "builtin.relevance_twin", REL), criterion("future", "builtin.future_judge", REL)],
    )
    rows, _ = execute(backend_for(fresh_judge, tmp_path), plan, tmp_path)
    twin = [r for r in rows if r.criterion == "twin"]
    future = [r for r in rows if r.criterion == "future"]
    assert [r.score for r in twin] == [4.0, 4.0] and all(r.metric == "relevance" for r in twin)
    assert len(future) == 2 and all(r.error.startswith("UNSUPPORTED_LOCALLY:") for r in future)
    assert "NoSuchEval" in future[0].error
    assert fresh_judge.calls == 2
