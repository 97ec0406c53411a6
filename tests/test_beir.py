"""BEIR's layout (corpus.jsonl, queries.jsonl, qrels/test.tsv) plus a TREC run: the same records as the JSONL the
collection was written from, through the same gate, problems located at file and line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from foundry_bridge.cli import cli
from foundry_bridge.dataset import read_records
from foundry_bridge.errors import DatasetError
from foundry_bridge.mapping.loader import load_mapping
from foundry_bridge.validate import validate

ROOT = Path(__file__).resolve().parents[1]
BENEFITS = ROOT / "samples" / "benefits" / "rag_eval.jsonl"
EXTRA = "  fields: {extra: {canary: canary}}\n"
BEIR_MAPPING = "dataset:\n  format: beir\n  beir: {responses: responses.jsonl}\n" + EXTRA
JSONL_MAPPING = "dataset:\n" + EXTRA


def _rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in BENEFITS.read_text().splitlines() if line.strip()]


def _lines(rows: list[Any]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def _beir(tmp_path: Path, rows: list[dict[str, Any]]) -> Path:
    """Write ``rows`` in BEIR's layout, as BEIR's GenericDataLoader reads it and its save_runfile writes a run."""
    base = tmp_path / "beir"
    (base / "qrels").mkdir(parents=True)
    corpus = {d["document_id"]: d for r in rows for d in r["retrieved_documents"]}
    corpus["unretrieved"] = {"document_id": "unretrieved", "title": "x", "content": "never retrieved"}
    (base / "corpus.jsonl").write_text(
        _lines([{"_id": i, "title": d.get("title"), "text": d.get("content")} for i, d in corpus.items()])
    )
    queries = [{"_id": r["query_id"], "text": r["query"], "metadata": {}} for r in rows]
    (base / "queries.jsonl").write_text(_lines([*queries, {"_id": "train-1", "text": "another split's query"}]))
    qrels = ["query-id\tcorpus-id\tscore"]
    qrels += [
        f"{r['query_id']}\t{g['document_id']}\t{g['query_relevance_label']}"
        for r in rows
        for g in r["retrieval_ground_truth"]
    ]
    (base / "qrels" / "test.tsv").write_text("\n".join(qrels) + "\n")
    run = [
        f"{r['query_id']} Q0 {d['document_id']} {rank} {d['relevance_score']} bm25"
        for r in rows
        for rank, d in enumerate(r["retrieved_documents"], 1)
    ]
    (base / "run.txt").write_text("\n".join(run) + "\n")
    keep = ("query_id", "kind", "context", "response", "ground_truth", "canary")
    (base / "responses.jsonl").write_text(_lines([{k: r[k] for k in keep if k in r} for r in rows]))
    return base


def _mapping(tmp_path: Path, text: str, name: str) -> Path:
    path = tmp_path / name
    path.write_text(text + "evaluators:\n  - evaluator: builtin.document_retrieval\n")
    return path


def test_a_beir_collection_gives_the_records_of_the_jsonl_it_was_written_from(tmp_path: Path) -> None:
    base = _beir(tmp_path, _rows())
    beir = list(read_records(base, load_mapping(_mapping(tmp_path, BEIR_MAPPING, "b.yaml"))))
    jsonl = list(read_records(BENEFITS, load_mapping(_mapping(tmp_path, JSONL_MAPPING, "j.yaml"))))
    assert [r.model_dump(exclude={"source", "line"}) for r in beir] == [
        r.model_dump(exclude={"source", "line"}) for r in jsonl
    ]
    assert "train-1" not in {r.query_id for r in beir}  # queries.jsonl gives text; the split is the qrels'
    assert beir[0].source == str(base / "run.txt") and beir[0].line == 1


def test_validate_and_plan_accept_a_beir_folder(tmp_path: Path) -> None:
    base = _beir(tmp_path, _rows())
    mapping = _mapping(tmp_path, BEIR_MAPPING, "b.yaml")
    assert validate(base, mapping=mapping).errors == 0
    result = CliRunner().invoke(cli, ["plan", str(base), "--mapping", str(mapping), "--out", str(tmp_path / "p")])
    assert result.exit_code == 0, result.output
    assert len((tmp_path / "p" / "items.jsonl").read_text().splitlines()) == len(_rows())


def test_beir_problems_are_located_at_their_file_and_line(tmp_path: Path) -> None:
    base = _beir(tmp_path, _rows()[:3])
    qrels = base / "qrels" / "test.tsv"
    qrels.write_text(qrels.read_text() + "q01\tpol-leave-01\t2.5\nq02 pol-x 1\n")
    n = len(qrels.read_text().splitlines())
    report = validate(base, mapping=_mapping(tmp_path, BEIR_MAPPING, "b.yaml"))
    found = {(p.code, p.file, p.line) for p in report.problems if p.severity == "error"}
    assert found == {("label_not_integer", str(qrels), n - 1), ("bad_qrels_line", str(qrels), n)}
    with pytest.raises(DatasetError, match=rf"test.tsv:{n - 1}: score: label '2.5' is not an integer"):
        list(read_records(base, load_mapping(_mapping(tmp_path, BEIR_MAPPING, "b.yaml"))))


def test_a_missing_run_names_the_beir_setting(tmp_path: Path) -> None:
    base = _beir(tmp_path, _rows()[:2])
    (base / "run.txt").unlink()
    with pytest.raises(DatasetError, match=r"run file not found \(fix: set dataset.beir.run\)"):
        list(read_records(base, load_mapping(_mapping(tmp_path, BEIR_MAPPING, "b.yaml"))))


def test_the_shipped_beir_mapping_reads_a_small_collection(tmp_path: Path) -> None:
    base = tmp_path / "scifact-like"
    (base / "qrels").mkdir(parents=True)
    (base / "corpus.jsonl").write_text(_lines([{"_id": i, "title": f"t{i}", "text": f"doc {i}"} for i in (10, 11, 12)]))
    (base / "queries.jsonl").write_text(_lines([{"_id": 1, "text": "first?"}, {"_id": 2, "text": "second?"}]))
    (base / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n1\t10\t2\n2\t12\t1\n")
    (base / "run.txt").write_text("1 Q0 10 1 9.5 bm25\n1 Q0 11 2 3.0 bm25\n2 Q0 11 1 4.0 bm25\n2 Q0 12 2 4.0 bm25\n")
    mapping = ROOT / "mappings" / "beir.yaml"
    result = CliRunner().invoke(cli, ["validate", str(base), "--mapping", str(mapping)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    records = list(read_records(base, load_mapping(mapping)))
    assert [r.query_id for r in records] == ["1", "2"] and records[0].query == "first?"
    assert [(d.document_id, d.content) for d in records[1].retrieved_documents] == [("12", "doc 12"), ("11", "doc 11")]


def test_a_json_run_gives_the_records_of_the_trec_run(tmp_path: Path) -> None:
    base = _beir(tmp_path, _rows())
    results = {
        r["query_id"]: {d["document_id"]: d["relevance_score"] for d in r["retrieved_documents"]} for r in _rows()
    }
    (base / "run.json").write_text(json.dumps(results))
    mapping = load_mapping(_mapping(tmp_path, BEIR_MAPPING, "b.yaml"))
    json_mapping = load_mapping(
        _mapping(tmp_path, BEIR_MAPPING.replace("responses:", "run: run.json, responses:"), "j.yaml")
    )
    trec = [r.model_dump(exclude={"source", "line"}) for r in read_records(base, mapping)]
    assert [r.model_dump(exclude={"source", "line"}) for r in read_records(base, json_mapping)] == trec
    results["q01"]["pol-leave-01"] = "high"
    (base / "run.json").write_text(json.dumps(results))
    report = validate(
        base, mapping=_mapping(tmp_path, BEIR_MAPPING.replace("responses:", "run: run.json, responses:"), "j.yaml")
    )
    assert [(p.code, p.field, p.line) for p in report.problems if p.severity == "error"] == [
        ("bad_score", "q01.pol-leave-01", None)
    ]


def test_beir_json_inputs_are_held_to_the_limits_and_words_of_every_json_reader(tmp_path: Path) -> None:
    """queries.jsonl, corpus.jsonl, responses.jsonl and a JSON run are decoded by the dataset's one JSON decoder:
    a bad line is `malformed JSON line` with its fix, NaN is `non_finite_number`, a byte that is not UTF-8 is
    located in a JSON run by its line."""
    base = _beir(tmp_path, _rows()[:3])
    (base / "queries.jsonl").write_text((base / "queries.jsonl").read_text() + '{"_id": "q9", "text": \n')
    (base / "corpus.jsonl").write_text((base / "corpus.jsonl").read_text() + '{"_id": "d9", "text": NaN}\n')
    n_queries = len((base / "queries.jsonl").read_text().splitlines())
    n_corpus = len((base / "corpus.jsonl").read_text().splitlines())
    report = validate(base, mapping=_mapping(tmp_path, BEIR_MAPPING, "b.yaml"))
    found = {(p.code, Path(p.file or "").name, p.line, p.message.split(":")[0]) for p in report.problems}
    assert ("bad_json", "queries.jsonl", n_queries, "malformed JSON line") in found
    nan = [p for p in report.problems if p.code == "non_finite_number"]
    assert [(Path(p.file or "").name, p.line) for p in nan] == [("corpus.jsonl", n_corpus)] and "NaN" in nan[0].message
    (base / "run.json").write_bytes(b'{"q01":\n {"pol-leave-01": 1.0, "x\xff": 2}}')
    report = validate(
        base, mapping=_mapping(tmp_path, BEIR_MAPPING.replace("responses:", "run: run.json, responses:"), "j.yaml")
    )
    bad = [p for p in report.problems if Path(p.file or "").name == "run.json"]
    assert [(p.code, p.line) for p in bad] == [("not_utf8", 2)] and bad[0].hint and "UTF-8" in bad[0].hint
