"""Parity with the installed azure-ai-evaluation DocumentRetrievalEvaluator on thousands of random cases.

Every case is run through the library, ``document_retrieval`` and ``document_retrieval_batch`` (whole groups of
rows per init-parameter set, so good and bad rows mix); results must be equal dicts with exact types and key order
(floats to 1e-12, NaN == NaN), or all must reject.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest
from document_retrieval_helpers import library_outcome, make_cases, same

from foundry_bridge.metrics import DocumentRetrievalError, document_retrieval_batch
from foundry_bridge.metrics import docret as single_module

pytest.importorskip("azure.ai.evaluation")


def _single(params: dict[str, Any], gt: Any, ret: Any) -> Any:
    try:
        return single_module.document_retrieval(gt, ret, **params)
    except DocumentRetrievalError as exc:
        return exc


def _all_cases() -> list[tuple[dict[str, Any], Any, Any]]:
    cases = make_cases(20261129, 4000, invalid_rate=0.04)
    cases += make_cases(7, 3000, invalid_rate=0.0)
    cases += make_cases(11, 150, invalid_rate=0.0, long=True)
    cases += make_cases(12, 50, invalid_rate=0.01, long=True)
    many = [{"document_id": f"d{i}", "relevance_score": 1.0 / (i + 1)} for i in range(10_001)]
    labels = [{"document_id": f"d{i}", "query_relevance_label": i % 5} for i in range(10_001)]
    cases += [({}, labels[:3], many), ({}, labels, many[:5]), ({}, labels[:10_000], many[:10_000])]
    return cases


@pytest.fixture(scope="session")
def evaluators() -> dict[Any, Any]:
    """One library evaluator per init-parameter combination, shared by the session."""
    return {}


@pytest.fixture(scope="session")
def parity_cases(evaluators):
    cases = _all_cases()
    return cases, [library_outcome(evaluators, *case) for case in cases]


def _check(name: str, case: Any, lib: Any, ours: Any) -> str | None:
    if isinstance(lib, Exception):
        if not isinstance(ours, DocumentRetrievalError):
            return f"{name}: library raised {type(lib).__name__}: {lib}; we returned {ours!r}"
        message = getattr(lib, "message", None)
        if type(lib).__name__ == "EvaluationException" and message != ours.message:
            return f"{name}: message {ours.message!r} != library {message!r}"
        return None
    if isinstance(ours, Exception):
        return f"{name}: we raised {ours}; library returned {lib}"
    diff = same(ours, lib)
    return f"{name}: {diff}" if diff else None


def test_case_mix_covers_every_branch(parity_cases):
    _, outcomes = parity_cases
    kinds = defaultdict(int)
    for out in outcomes:
        if isinstance(out, Exception):
            kinds[type(out).__name__] += 1
        else:
            p = out["document_retrieval_properties"]
            kinds["empty" if p["total_retrieved_documents"] == 0 else "zero" if type(p["ndcg@3"]) is int else "ok"] += 1
            kinds["nan"] += p["fidelity"] != p["fidelity"]
    for kind in ("ok", "zero", "empty", "nan", "EvaluationException", "TypeError", "KeyError", "AttributeError"):
        assert kinds[kind] >= 10, dict(kinds)


def test_single_matches_library(parity_cases):
    cases, outcomes = parity_cases
    problems = []
    for i, (case, lib) in enumerate(zip(cases, outcomes, strict=True)):
        problem = _check(f"case {i}", case, lib, _single(*case))
        if problem:
            problems.append(f"{problem}\n    {case!r:.400}")
    assert not problems, "\n".join(problems[:10])


def test_batch_matches_library(parity_cases):
    cases, outcomes = parity_cases
    groups: dict[str, list[int]] = defaultdict(list)
    for i, (params, _, _) in enumerate(cases):
        groups[repr(sorted((k, repr(v)) for k, v in params.items()))].append(i)
    problems = []
    for idx in groups.values():
        params = cases[idx[0]][0]
        rows = [{"retrieval_ground_truth": cases[i][1], "retrieved_documents": cases[i][2]} for i in idx]
        try:
            results = document_retrieval_batch(rows, **params)
        except DocumentRetrievalError as exc:  # only a bad init parameter may raise
            results = [exc] * len(rows)
        assert len(results) == len(rows)
        for i, ours in zip(idx, results, strict=True):
            problem = _check(f"case {i}", cases[i], outcomes[i], ours)
            if problem:
                problems.append(f"{problem}\n    {cases[i]!r:.400}")
    assert not problems, "\n".join(problems[:10])


def _json_safe(case: tuple[dict[str, Any], Any, Any]) -> bool:
    import orjson

    _, gt, ret = case
    try:
        text = orjson.dumps({"retrieval_ground_truth": gt, "retrieved_documents": ret})
    except TypeError:
        return False
    return orjson.loads(text) == {"retrieval_ground_truth": gt, "retrieved_documents": ret} and b"NaN" not in text


def test_jsonl_matches_library(tmp_path, evaluators):
    """From a JSONL file (default init parameters): every line equal to the library on the parsed row."""
    import orjson

    from foundry_bridge.dataset.docret_jsonl import document_retrieval_jsonl

    cases = [c for c in make_cases(99, 1500, invalid_rate=0.02) if _json_safe(c)]
    assert len(cases) > 500
    path = tmp_path / "rows.jsonl"
    path.write_bytes(
        b"\n".join(orjson.dumps({"retrieval_ground_truth": g, "retrieved_documents": r}) for _, g, r in cases) + b"\n"
    )
    results = document_retrieval_jsonl(path)
    problems = []
    for i, ((_, g, r), ours) in enumerate(zip(cases, results, strict=True)):
        problem = _check(f"line {i + 1}", None, library_outcome(evaluators, {}, g, r), ours)
        if problem:
            problems.append(problem)
    assert not problems, "\n".join(problems[:10])
    assert sum(isinstance(x, DocumentRetrievalError) for x in results) > 10


def test_jsonl_mixed_types_and_items(tmp_path, evaluators):
    import orjson

    from foundry_bridge.dataset.docret_jsonl import document_retrieval_jsonl

    rows = [
        {"retrieval_ground_truth": [{"document_id": 1, "query_relevance_label": 2}], "retrieved_documents": []},
        {"retrieval_ground_truth": [{"document_id": "1", "query_relevance_label": 2.0}], "retrieved_documents": []},
        {"item": {"retrieval_ground_truth": [{"document_id": "a", "query_relevance_label": 3}],
                  "retrieved_documents": [{"document_id": "a", "relevance_score": 1}]}},
    ]  # fmt: skip
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b"\n".join(map(orjson.dumps, rows)))
    results = document_retrieval_jsonl(path)
    assert same(results[0], library_outcome(evaluators, {}, rows[0]["retrieval_ground_truth"], [])) is None
    assert isinstance(results[1], DocumentRetrievalError) and "integer" in str(results[1])
    item = rows[2]["item"]
    lib = library_outcome(evaluators, {}, item["retrieval_ground_truth"], item["retrieved_documents"])
    assert same(results[2], lib) is None
