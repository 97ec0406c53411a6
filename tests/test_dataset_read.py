"""read_records: JSONL through field paths, TREC joined and ordered as trec_eval, kind derivation, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from foundry_bridge.dataset import QueryRecord, read_records
from foundry_bridge.errors import DatasetError
from foundry_bridge.mapping import load_mapping
from foundry_bridge.mapping.model import Mapping

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"
MAPPINGS = ROOT / "mappings"


def _jsonl(tmp_path: Path, rows: list[object], name: str = "d.jsonl") -> Path:
    p = tmp_path / name
    p.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return p


def _benefits() -> list[QueryRecord]:
    return list(read_records(SAMPLES / "benefits" / "rag_eval.jsonl", load_mapping(None)))


def test_benefits_sample_reads_with_kinds_and_sources() -> None:
    records = _benefits()
    assert [r.query_id for r in records] == [
        "q01",
        "q02",
        "q03",
        "q04",
        "q05",
        "q06",
        "q07",
        "q08",
        "q09",
        "q10",
        "q11",
        "n01",
        "n02",
        "n03",
    ]
    kinds = {r.query_id: (r.kind, r.kind_source) for r in records}
    assert kinds["q01"] == ("positive", "declared")
    assert kinds["q10"] == ("positive", "labels")
    assert kinds["n02"] == ("negative", "declared")
    assert kinds["n03"] == ("negative", "labels")
    q09 = records[8]
    assert [d.document_id for d in q09.retrieved_documents] == [
        "pol-wellness-01",
        "pol-remote-01",
        "pol-holiday-01",
        "pol-commute-01",
        "pol-eap-01",
    ]
    assert q09.retrieved_documents[0].relevance_score == 0.71
    assert q09.retrieved_documents[0].content is not None  # records keep the text
    assert records[2].extra == {"canary": "wrong_number"}
    assert (records[0].line, records[13].line) == (1, 14)


def test_custom_field_names_give_the_same_records() -> None:
    custom = list(
        read_records(SAMPLES / "custom_fields" / "rag_eval.jsonl", load_mapping(MAPPINGS / "custom_fields.yaml"))
    )
    for a, b in zip(_benefits(), custom, strict=True):
        assert a.model_dump(exclude={"source"}) == b.model_dump(exclude={"source"})


def test_trec_sample_gives_the_same_records_without_document_text() -> None:
    trec = list(read_records(SAMPLES / "trec", load_mapping(MAPPINGS / "trec.yaml")))
    for a, b in zip(_benefits(), trec, strict=True):
        da = a.model_dump(exclude={"source", "line"})
        for d in da["retrieved_documents"]:
            d["content"] = d["title"] = None
        assert da == b.model_dump(exclude={"source", "line"})


def _trec_mapping(**trec: object) -> Mapping:
    return Mapping.model_validate({"dataset": {"format": "trec", "trec": trec}})


def test_trec_order_is_score_desc_then_docid_desc_and_rank_is_ignored(tmp_path: Path) -> None:
    (tmp_path / "run.txt").write_text(
        "1 Q0 d1 1 0.5 t\n1 Q0 d3 2 0.5 t\n1 Q0 d2 3 0.9 t\n1 Q0 d10 4 0.5 t\n2 Q0 x 1 1 t\n"
    )
    (tmp_path / "qrels.txt").write_text("1 0 d1 2\n1 0 d2 0\n2 0 x 0\n")
    (tmp_path / "queries.tsv").write_text("1\tfirst query\n2\tsecond\n3\tnothing retrieved\n")
    records = list(read_records(tmp_path, _trec_mapping(responses=None)))
    # hand-ordered: d2 (0.9) first; the 0.5 tie broken by id descending as strings: d3 > d10 > d1
    assert [d.document_id for d in records[0].retrieved_documents] == ["d2", "d3", "d10", "d1"]
    assert [r.query_id for r in records] == ["1", "2", "3"]
    assert (records[0].kind, records[0].kind_source) == ("positive", "labels")
    assert (records[1].kind, records[1].kind_source) == ("negative", "labels")
    assert (records[2].kind_source, records[2].retrieved_documents, records[2].query) == (
        "unknown",
        [],
        "nothing retrieved",
    )
    assert records[0].line == 1 and records[1].line == 5


def test_trec_without_qrels_has_unknown_kind(tmp_path: Path) -> None:
    (tmp_path / "run.txt").write_text("a Q0 d 1 2.0 t\n")
    rec = next(read_records(tmp_path, _trec_mapping(qrels=None, queries=None)))
    assert (rec.kind, rec.kind_source, rec.retrieval_ground_truth) == ("positive", "unknown", None)


def test_trec_bad_lines_raise_with_location(tmp_path: Path) -> None:
    (tmp_path / "run.txt").write_text("a Q0 d 1 2.0 t\na Q0 d 1\n")
    with pytest.raises(DatasetError) as info:
        list(read_records(tmp_path, _trec_mapping(qrels=None, queries=None)))
    assert str(info.value) == f"{tmp_path / 'run.txt'}:2: expected 6 columns `qid Q0 docid rank score tag`, got 4"
    (tmp_path / "run.txt").write_text("a Q0 d 1 2.0 t\n")
    (tmp_path / "qrels.txt").write_text("a 0 d 0.87\n")
    with pytest.raises(DatasetError, match=r"qrels.txt:1: label: label '0.87' is not an integer; a fractional"):
        list(read_records(tmp_path, _trec_mapping(queries=None)))


def test_relevance_threshold_override_changes_derived_kind(tmp_path: Path) -> None:
    row = {"query_id": "a", "query": "q", "retrieval_ground_truth": [{"document_id": "d", "query_relevance_label": 1}]}
    p = _jsonl(tmp_path, [row])
    assert next(read_records(p, Mapping())).kind == "positive"
    assert next(read_records(p, Mapping(), relevance_threshold=2)).kind == "negative"
    no_labels = _jsonl(tmp_path, [{"query_id": "b", "query": "q"}], "b.jsonl")
    assert next(read_records(no_labels, Mapping())).kind_source == "unknown"


def test_integer_ids_are_read_as_strings(tmp_path: Path) -> None:
    row = {"query_id": 7, "retrieved_documents": [{"document_id": 1, "relevance_score": 1}]}
    rec = next(read_records(_jsonl(tmp_path, [row]), Mapping()))
    assert rec.query_id == "7" and rec.retrieved_documents[0].document_id == "1"


def test_nested_paths_and_list_element_keys(tmp_path: Path) -> None:
    m = Mapping.model_validate(
        {
            "dataset": {
                "fields": {
                    "query_id": "meta.id",
                    "query": "turns.0.text",
                    "response": "out.answer",
                    "retrieved_documents": {"path": "search.hits[]", "document_id": "doc.id", "relevance_score": "s"},
                    "retrieval_ground_truth": None,
                }
            }
        }
    )
    row = {
        "meta": {"id": "x"},
        "turns": [{"text": "hi"}],
        "out": {"answer": "yes"},
        "search": {"hits": [{"doc": {"id": "d9"}, "s": 0.3}]},
    }
    rec = next(read_records(_jsonl(tmp_path, [row]), m))
    assert (rec.query_id, rec.query, rec.response) == ("x", "hi", "yes")
    assert rec.retrieved_documents[0].model_dump() == {
        "document_id": "d9",
        "relevance_score": 0.3,
        "content": None,
        "title": None,
    }


def test_rebuilt_context_is_explicit_and_labelled(tmp_path: Path) -> None:
    m = Mapping.model_validate({"context": {"source": "rebuilt_from_documents", "top_k": 2, "separator": " | "}})
    row = {
        "query_id": "a",
        "context": "ignored",
        "retrieved_documents": [
            {"document_id": "1", "relevance_score": 3, "content": "one"},
            {"document_id": "2", "relevance_score": 2, "content": "two"},
            {"document_id": "3", "relevance_score": 1, "content": "three"},
        ],
    }
    rec = next(read_records(_jsonl(tmp_path, [row]), m))
    assert rec.context == "one | two"
    assert rec.extra["context_source"] == "rebuilt_from_documents"


def test_first_bad_row_raises_with_file_line_field(tmp_path: Path) -> None:
    p = _jsonl(tmp_path, [{"query_id": "a"}, "{not json", {"query_id": "c"}])
    with pytest.raises(DatasetError) as info:
        list(read_records(p, Mapping()))
    assert info.value.line == 2 and "malformed JSON line" in str(info.value)
    p = _jsonl(tmp_path, [{"query_id": "a", "context": ["c1", "c2"]}], "ctx.jsonl")
    with pytest.raises(DatasetError) as info:
        list(read_records(p, Mapping()))
    assert str(info.value) == (
        f"{p}:1: context: context is a list of 2 chunks, not a string "
        '(fix: join the chunks with two newlines ("\\n\\n".join(chunks)), exactly as sent to the model)'
    )


def test_missing_dataset_file(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="dataset file not found"):
        list(read_records(tmp_path / "none.jsonl", Mapping()))


def test_reading_is_lazy(tmp_path: Path) -> None:
    p = _jsonl(tmp_path, [{"query_id": "a"}, "{broken"])
    it = read_records(p, Mapping())
    assert next(it).query_id == "a"  # the broken second line is not read yet
    with pytest.raises(DatasetError):
        next(it)


def test_scores_from_rank_replaces_scores_with_monotone_ones(tmp_path: Path) -> None:
    m = Mapping.model_validate({"dataset": {"fields": {"retrieved_documents": {"scores_from_rank": True}}}})
    row = {
        "query_id": "a",
        "retrieved_documents": [
            {"document_id": "x", "relevance_score": 0.1},
            {"document_id": "y", "relevance_score": 0.9},
            {"document_id": "z"},
        ],
    }
    rec = next(read_records(_jsonl(tmp_path, [row]), m))
    assert [(d.document_id, d.relevance_score) for d in rec.retrieved_documents] == [("x", 3.0), ("y", 2.0), ("z", 1.0)]


def test_trec_responses_join_and_context_type(tmp_path: Path) -> None:
    (tmp_path / "run.txt").write_text("7 Q0 a 1 1.5 t\n")
    (tmp_path / "responses.jsonl").write_text(
        json.dumps({"query_id": 7, "kind": "negative", "context": "c", "response": "r", "note": "n"}) + "\n"
    )
    m = Mapping.model_validate(
        {
            "dataset": {
                "format": "trec",
                "fields": {"extra": {"note": "note"}},
                "trec": {"qrels": None, "queries": None, "responses": "responses.jsonl"},
            }
        }
    )
    rec = next(read_records(tmp_path, m))
    assert (rec.query_id, rec.kind, rec.kind_source, rec.context, rec.response, rec.extra) == (
        "7",
        "negative",
        "declared",
        "c",
        "r",
        {"note": "n"},
    )
    (tmp_path / "responses.jsonl").write_text(json.dumps({"query_id": "7", "context": ["a", "b"]}) + "\n")
    with pytest.raises(DatasetError, match=r"responses.jsonl:1: context: context must be a string, got list"):
        list(read_records(tmp_path, m))


def test_trec_keeps_queries_only_in_qrels_or_only_in_responses(tmp_path: Path) -> None:
    (tmp_path / "run.txt").write_text("1 Q0 a 1 2.0 t\n")
    (tmp_path / "qrels.txt").write_text("1 0 a 1\nj 0 b 2\n")  # j: judged, nothing retrieved
    (tmp_path / "responses.jsonl").write_text(json.dumps({"query_id": "r", "response": "only here"}) + "\n")
    m = Mapping.model_validate(
        {"dataset": {"format": "trec", "trec": {"queries": None, "responses": "responses.jsonl"}}}
    )
    records = {r.query_id: r for r in read_records(tmp_path, m)}
    assert list(records) == ["1", "j", "r"]
    j = records["j"]
    assert (j.retrieved_documents, j.kind, j.kind_source, j.line) == ([], "positive", "labels", None)
    assert [(g.document_id, g.query_relevance_label) for g in j.retrieval_ground_truth] == [("b", 2)]
    r = records["r"]
    assert (r.response, r.retrieved_documents, r.retrieval_ground_truth) == ("only here", [], None)
