"""Stage attribution without human labels: `report RUN --qrels judged.qrels` decides "search" / "assembly" from the
judge's labels, marked judge-based in every output, with a circularity warning when the mapping names the judge as
the system's reranker or generator. Expected stages are worked out here from the qrels file and the dataset."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from trec_sweep_helpers import read_trec_qrels

from foundry_bridge.cli import cli, main

ROOT = Path(__file__).resolve().parents[1]
BENEFITS = ROOT / "samples" / "benefits" / "rag_eval.jsonl"
DEFAULT_MAPPING = ROOT / "foundry_bridge" / "resources" / "mappings" / "default.yaml"
OFF_TOPIC = "What is the capital city of Mongolia?"  # no document of the sample is about it: every grade 0


def invoke(*args: Any) -> str:
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result.output


def _setup(tmp: Path, mapping_extra: str = "", labels: bool = False) -> tuple[Path, Path, list[dict[str, Any]]]:
    """The sample without labels (q03's query off topic), a mapping without document_retrieval, an emulator run of
    it and judge-docs' qrels of it (the emulator's stand-in)."""
    rows = [json.loads(line) for line in BENEFITS.read_text().splitlines()]
    data = tmp / "data.jsonl"
    with data.open("w") as fh:
        for row in rows:
            if not labels:
                row.pop("retrieval_ground_truth", None)
            if row["query_id"] == "q03":
                row["query"] = OFF_TOPIC
            fh.write(json.dumps(row) + "\n")
    mapping = tmp / "m.yaml"
    kept = [ln for ln in DEFAULT_MAPPING.read_text().splitlines() if "builtin.document_retrieval" not in ln]
    mapping.write_text("\n".join(kept) + "\n" + mapping_extra)
    invoke("run", data, "--mapping", mapping, "--backend", "mock", "--out", tmp / "run", "--quiet")
    invoke("judge-docs", data, "--out", tmp / "j.qrels", "--quiet")
    return data, mapping, [json.loads(line) for line in data.read_text().splitlines()]


def _expected(rows: list[dict[str, Any]], qrels: dict[str, dict[str, int]], k: int) -> dict[str, str]:
    """By hand, rules 2 and 4 on the judge's labels (relevant ⇔ grade ≥ 1): no relevant document in the top k, every
    one graded → search; a relevant top-k document whose text is not in the context → assembly; else later."""
    out = {}
    for row in rows:
        if row.get("kind") == "negative":
            continue
        labels = qrels.get(row["query_id"], {})
        top = list(dict.fromkeys(d["document_id"] for d in row["retrieved_documents"]))[:k]
        text = {d["document_id"]: d["content"] for d in row["retrieved_documents"]}
        relevant = [d for d in top if labels.get(d, 0) >= 1]
        context = " ".join(row["context"].split())
        if not relevant and all(d in labels for d in top):
            out[row["query_id"]] = "search"
        elif any(" ".join(text[d].split()) not in context for d in relevant):
            out[row["query_id"]] = "assembly"
        else:
            out[row["query_id"]] = "later"
    return out


def _report(tmp: Path, *extra: Any) -> tuple[dict[str, Any], dict[str, dict[str, Any]], str]:
    out = tmp / f"r{len(list(tmp.glob('r*.json')))}.json"
    queries = out.with_suffix(".jsonl")
    invoke(
        "report", tmp / "run", "--format", "json", "--out", out, "--queries", queries, "--per-query", "jsonl", *extra
    )
    rows = {r["query_id"]: r for r in map(json.loads, queries.read_text().splitlines())}
    md = tmp / "r.md"
    invoke("report", tmp / "run", "--out", md, "--queries", tmp / "md.parquet", *extra)
    return json.loads(out.read_text()), rows, md.read_text()


def test_judged_labels_decide_search_and_assembly_marked_judge_based(tmp_path: Path) -> None:
    _, _, rows = _setup(tmp_path)
    plain, plain_rows, _ = _report(tmp_path)
    assert plain_rows["q03"]["stage"] == "unknown"  # no human label: search cannot be checked
    report, per_query, md = _report(tmp_path, "--qrels", tmp_path / "j.qrels")
    expected = _expected(rows, read_trec_qrels(tmp_path / "j.qrels"), report["params"]["stage_k"])
    assert expected["q03"] == "search" and "assembly" in expected.values()
    for qid, stage in expected.items():
        got = per_query[qid]["stage"]
        assert got == stage if stage != "later" else got not in ("search", "assembly"), (qid, got, stage)
        assert per_query[qid]["stage_reason"].endswith("(judge-based: relevance from judge-labelled qrels)")
    assert report["stages"]["counts"]["search"] == sum(s == "search" for s in expected.values())
    assert any(r.startswith("Judge-based (report --qrels)") for r in report["stages"]["rules"])
    note = [w for w in report["warnings"] if w.startswith("relevance labels are judge-labelled")]
    assert note and "judge-based" in note[0]
    assert "relevance labels are judge-labelled" in md and "judge-based" in md
    assert not any("circularity" in w for w in report["warnings"])
    assert not any("judge-labelled" in w for w in plain["warnings"])


def test_the_judge_as_the_systems_generator_is_warned_as_circular(tmp_path: Path) -> None:
    _setup(tmp_path, "judge_docs: {model: Judge-X, generator: judge-x, reranker: bm25}\n")
    report, _, md = _report(tmp_path, "--qrels", tmp_path / "j.qrels")
    [warning] = [w for w in report["warnings"] if w.startswith("circularity")]
    assert "'judge-x' is also the system's generator" in warning and "reranker" not in warning.split("(")[0]
    assert "circularity" in md


def _refused(args: list[Any], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exc:
        main([str(a) for a in args])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return int(exc.value.code or 0), err


def test_a_run_with_human_labels_or_human_qrels_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _setup(tmp_path, labels=True)
    code, err = _refused(["report", tmp_path / "run", "--qrels", tmp_path / "j.qrels"], capsys)
    assert code == 1 and "query 'q01' of the run has relevance labels of its own" in err
    human = tmp_path / "human.qrels"
    human.write_text("q01 0 pol-leave-01 3\n")
    code, err = _refused(["report", tmp_path / "run", "--qrels", human], capsys)
    assert code == 2 and "takes judge-labelled qrels" in err
