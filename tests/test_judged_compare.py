"""compare on judge-labelled qrels (issue #37, item 6): two systems' rankings of the bundled sample (its human qrels
hidden), each system's documents graded by judge-docs separately, compared on the merged labels like any metric; the
outputs say "judge-labelled" with the judge and rubric; a different judge or rubric between the files is refused, or
flagged "the judge changed" with --allow-judge-change; human and judge labels are never mixed.

pytrec_eval on the qrels files concatenated (trec_eval's reading: a pair labelled twice keeps its last label) is the
reference for the per-topic values and the means."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval
from click.testing import CliRunner
from test_judged_docs import BENEFITS, hidden
from trec_sweep_helpers import read_trec_qrels, read_trec_run

from foundry_bridge.cli import cli
from foundry_bridge.comparison._files import score_run_files
from foundry_bridge.errors import FoundryBridgeError


def invoke(args: list[object]) -> tuple[int, str, bytes]:
    """The console script's exit code and message (``cli.main``: a ``FoundryBridgeError`` exits with its code)."""
    result = CliRunner().invoke(cli, [str(a) for a in args], env={"GITHUB_STEP_SUMMARY": ""})
    if isinstance(result.exception, FoundryBridgeError):
        return result.exception.exit_code, result.output + str(result.exception), result.stdout_bytes
    return result.exit_code, result.output, result.stdout_bytes


def _system_b(tmp: Path) -> tuple[Path, Path]:
    """A second system: the sample's rankings reversed under a new document, as JSONL (to judge) and as a TREC run
    (to compare)."""
    data, run = tmp / "b.jsonl", tmp / "b.trec"
    with data.open("w") as d, run.open("w") as r:
        for line in BENEFITS.read_text().splitlines():
            row = json.loads(line)
            row.pop("retrieval_ground_truth", None)
            row["query_id"] = f"{row['query_id']}-0"  # hidden()'s ids
            extra = {"document_id": f"new-{row['query_id']}", "title": "New", "content": row["query"]}
            docs = row["retrieved_documents"] = [extra, *row["retrieved_documents"][::-1]]  # one a never retrieved
            for rank, doc in enumerate(docs, 1):
                doc["relevance_score"] = float(len(docs) - rank + 1)
                r.write(f"{row['query_id']} Q0 {doc['document_id']} {rank} {doc['relevance_score']} b\n")
            d.write(json.dumps(row) + "\n")
    return data, run


@pytest.fixture
def judged(tmp_path: Path) -> dict[str, Path]:
    """System a (the sample as stored) and b (reversed), each judged to depth 3 on its own: different documents."""
    data_a, human, run_a = hidden(tmp_path)
    data_b, run_b = _system_b(tmp_path)
    qrels_a, qrels_b = tmp_path / "a.qrels", tmp_path / "b.qrels"
    for data, out in ((data_a, qrels_a), (data_b, qrels_b)):
        code, text, _ = invoke(["judge-docs", data, "--backend", "mock", "--k", "3", "--out", out])
        assert code == 0, text
    return {"run_a": run_a, "run_b": run_b, "qrels_a": qrels_a, "qrels_b": qrels_b, "human": human}


def _compare(f: dict[str, Path], *extra: object, fmt: str = "json") -> tuple[int, str]:
    args = ["compare", "--qrels", f["qrels_a"], "--qrels", f["qrels_b"], f["run_a"], f["run_b"], "--metric"]
    code, text, _ = invoke([*args, "ndcg@10", "--metric", "rr@10", "--format", fmt, "--resamples", "200", *extra])
    return code, text


def _set_judge(qrels: Path, model: str | None = None, rubric: str | None = None) -> None:
    """Edit the provenance beside ``qrels`` (the qrels file itself unchanged, so its SHA-256 still holds)."""
    path = qrels.with_name(qrels.name + ".json")
    prov = json.loads(path.read_text())
    if model is not None:
        prov["judge"]["model"] = model
    if rubric is not None:
        prov["rubric"]["sha256"] = rubric
    path.write_text(json.dumps(prov))


def test_two_judged_qrels_merge_and_compare_equal_pytrec_eval(judged: dict[str, Path], tmp_path: Path) -> None:
    a, b = read_trec_qrels(judged["qrels_a"]), read_trec_qrels(judged["qrels_b"])
    assert any(set(b[q]) - set(a.get(q, {})) for q in b)  # b's judging labelled documents a's did not
    both = tmp_path / "both.qrels"
    both.write_text(judged["qrels_a"].read_text() + judged["qrels_b"].read_text())
    qrels = read_trec_qrels(both)
    code, text = _compare(judged)
    assert code == 0, text
    doc = json.loads(text)
    means = {row["label"]: row["means"] for row in doc["runs"]}
    for name in ("run_a", "run_b"):
        got = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recip_rank"}).evaluate(read_trec_run(judged[name]))
        label = judged[name].stem
        for ours, theirs in (("ndcg@10", "ndcg_cut_10"), ("rr@10", "recip_rank")):
            expected = np.mean([got.get(q, {}).get(theirs, 0.0) for q in qrels])
            assert means[label][f"positive:{ours}"] == pytest.approx(expected, rel=1e-9, abs=1e-12)
    assert doc["qrels"]["topics"] == len(qrels)
    assert doc["qrels"]["qrels"] == f"{judged['qrels_a']}, {judged['qrels_b']}"
    labels = doc["qrels"]["labels"]
    assert labels["source"] == "judge-labelled"
    assert [j["file"] for j in labels["judges"]] == [str(judged["qrels_a"]), str(judged["qrels_b"])]
    assert {j["judge"]["model"] for j in labels["judges"]} == {"mock stand-in (lexical overlap)"}
    assert any(w.startswith("relevance labels: judge-labelled (") for w in doc["warnings"])
    assert not any("judge changed" in w for w in doc["warnings"])


@pytest.mark.parametrize("fmt", ["text", "md", "html", "json"])
def test_every_output_says_judge_labelled_with_the_judge_and_rubric(judged: dict[str, Path], fmt: str) -> None:
    args = ["compare", "--qrels", judged["qrels_a"], judged["run_a"], judged["run_b"], "--format", fmt]
    code, text, _ = invoke([*args, "--resamples", "200"])
    assert code == 0, text
    rubric = json.loads(judged["qrels_a"].with_name("a.qrels.json").read_text())["rubric"]["sha256"][:12]
    assert "judge-labelled" in text and "mock judge mock stand-in (lexical overlap)" in text
    assert f"rubric 1 {rubric}" in text


def test_human_qrels_are_not_marked(judged: dict[str, Path]) -> None:
    code, text, _ = invoke(
        ["compare", "--qrels", judged["human"], judged["run_a"], judged["run_b"], "--format", "json"]
    )
    assert code == 0, text
    doc = json.loads(text)
    assert doc["qrels"]["labels"] == {"source": "human"} and "judge-labelled" not in text


@pytest.mark.parametrize(("model", "rubric"), [("gpt-judge", None), (None, "0" * 64)])
def test_a_different_judge_or_rubric_is_refused_or_flagged(
    judged: dict[str, Path], model: str | None, rubric: str | None
) -> None:
    _set_judge(judged["qrels_b"], model, rubric)
    code, text = _compare(judged)
    assert code == 2, text
    assert "the judge changed between the qrels files" in text and "--allow-judge-change" in text
    assert f"{judged['qrels_a']}: mock judge mock stand-in (lexical overlap)" in text
    new = f"mock judge {model or 'mock stand-in (lexical overlap)'}, rubric 1 {(rubric or '')[:12]}"
    assert f"{judged['qrels_b']}: {new}" in text
    assert "Judge every run's documents with one judge and rubric" in text and "Traceback" not in text
    code, text = _compare(judged, "--allow-judge-change")
    assert code == 0, text
    flagged = [w for w in json.loads(text)["warnings"] if w.startswith("the judge changed: ")]
    assert len(flagged) == 1 and f"→ {new}" in flagged[0]
    code, text = _compare(judged, "--allow-judge-change", fmt="text")
    assert "the judge changed: mock judge mock stand-in (lexical overlap)" in text


def test_human_and_judged_qrels_are_never_mixed(judged: dict[str, Path]) -> None:
    args = ["compare", "--qrels", judged["human"], "--qrels", judged["qrels_a"], judged["run_a"], judged["run_b"]]
    code, text, _ = invoke(args)
    assert code == 2
    assert f"human labels ({judged['human']}: no judge-docs provenance" in text
    assert f"judge labels ({judged['qrels_a']}: written by judge-docs)" in text
    code, text, _ = invoke(["compare", "--qrels", judged["human"], "--qrels", judged["human"], judged["run_a"], "x"])
    assert code == 2
    code, text, _ = invoke(["compare", judged["run_a"], judged["run_b"], "--allow-judge-change"])
    assert code == 2 and "--allow-judge-change goes with" in text


def test_a_pair_labelled_twice_keeps_the_later_label_as_trec_eval_reads_the_files_concatenated(
    tmp_path: Path,
) -> None:
    first, second, run = tmp_path / "1.qrels", tmp_path / "2.qrels", tmp_path / "r.trec"
    first.write_text("q1 0 d1 0\nq1 0 d2 1\nq2 0 d3 1\n")
    second.write_text("q1 0 d1 2\nq3 0 d4 1\n")  # d1 relabelled 0 → 2; a new topic
    run.write_text("q1 Q0 d1 1 3 r\nq1 Q0 d2 2 2 r\nq2 Q0 d9 1 1 r\nq3 Q0 d4 1 1 r\n")
    scored = score_run_files([first, second], [run], ["ndcg@10"])
    assert scored.topics == ["q1", "q2", "q3"]
    assert any("1 (query, document) pair(s) labelled differently" in w and "q1/d1" in w for w in scored.warnings)
    both = tmp_path / "both.qrels"
    both.write_text(first.read_text() + second.read_text())
    got = pytrec_eval.RelevanceEvaluator(read_trec_qrels(both), {"ndcg_cut.10"}).evaluate(read_trec_run(run))
    expected = [got[q]["ndcg_cut_10"] for q in scored.topics]
    assert expected[0] == pytest.approx(1.0) and expected[1] == 0  # d1 (2) then d2 (1): ideal only with d1's 2
    np.testing.assert_allclose(scored.values[0]["ndcg@10"], expected, rtol=1e-9, atol=1e-12)
