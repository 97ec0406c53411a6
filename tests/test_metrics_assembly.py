"""The context-assembly check: whitespace-normalized containment, tolerant of truncation at the context's end."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from foundry_bridge.cli import cli
from foundry_bridge.dataset import read_records
from foundry_bridge.dataset.records import GroundTruthLabel, QueryRecord, RetrievedDocument
from foundry_bridge.mapping import load_mapping
from foundry_bridge.metrics import assembly_check
from foundry_bridge.metrics.assembly import contains_document, normalize_ws

DOC = "The company matches 100% of the first 4% of salary you contribute to the 401(k)."


def test_sample_q06_dropped_passage(benefits_jsonl: Path) -> None:
    records = list(read_records(benefits_jsonl, load_mapping(None)))
    rows = {row["query_id"]: row for row in assembly_check(records, k=10, relevance_threshold=1)}
    assert len(rows) == len(records)
    assert rows["q06"]["dropped_relevant"] == ["pol-parttime-01"]  # rank 3, label 3, not in the context
    assert rows["q06"]["checked"] is True
    assert [q for q, row in rows.items() if row["dropped_relevant"]] == ["q06"]
    # k=2 excludes the rank-3 passage: nothing relevant was dropped within the top 2
    rows2 = {row["query_id"]: row for row in assembly_check(records, k=2, relevance_threshold=1)}
    assert rows2["q06"]["dropped_relevant"] == []


@pytest.mark.parametrize(
    ("context", "expected"),
    [
        (f"Intro.\n\n{DOC}\n\nOutro.", "contained"),
        ("Intro.\n\nThe company   matches 100% of the first\n4% of salary you contribute to the 401(k).", "contained"),
        ("Intro.\n\nThe company matches 100% of the first 4% of sal", "truncated"),  # cut inside the document
        ("Intro.\n\nThe company matches 100%", None),  # prefix shorter than 40 characters
        ("The company matches 100% of the first 4% of salary. Outro.", None),  # changed text
        ("Intro only.", None),
    ],
)
def test_contains_document(context: str, expected: str | None) -> None:
    assert contains_document(normalize_ws(context), normalize_ws(DOC)) == expected


def test_short_document_needs_full_containment() -> None:
    assert contains_document("a b c", "b c") == "contained"
    assert contains_document("x short", "short doc") is None
    assert contains_document("x short do", "short doc", min_prefix_chars=5) == "truncated"


def _rec(context: str | None, contents: dict[str, str | None], labels: dict[str, int]) -> QueryRecord:
    return QueryRecord(
        query_id="q",
        retrieved_documents=[RetrievedDocument(document_id=d, content=c) for d, c in contents.items()],
        retrieval_ground_truth=[GroundTruthLabel(document_id=d, query_relevance_label=v) for d, v in labels.items()],
        context=context,
    )


def test_checked_flags_and_thresholds() -> None:
    rec = _rec(f"{DOC}", {"a": "other text entirely", "b": DOC, "c": None}, {"a": 1, "b": 2, "c": 3})
    row = assembly_check([rec], k=10, relevance_threshold=1)[0]
    assert row["dropped_relevant"] == ["a"] and row["no_content"] == ["c"] and row["checked"] is False
    row = assembly_check([rec], k=10, relevance_threshold=2)[0]
    assert row["relevant_top_k"] == ["b", "c"] and row["dropped_relevant"] == []
    no_ctx = assembly_check([_rec(None, {"a": DOC}, {"a": 1})], k=10, relevance_threshold=1)[0]
    assert no_ctx["checked"] is False and no_ctx["dropped_relevant"] == []


def test_trec_input_without_document_text_is_not_an_all_clear() -> None:
    # issue #34 item 20: the TREC sample has contexts but no document text: "4 checked, 0 dropped" read as an
    # all-clear although 10 queries' relevant documents could not be looked up at all
    sample = Path(__file__).resolve().parent.parent / "samples" / "trec"
    mapping = sample.parent.parent / "mappings" / "trec.yaml"
    result = CliRunner().invoke(cli, ["metrics", str(sample), "--mapping", str(mapping), "--format", "text", "-q"])
    assert result.exit_code == 0, result.output
    line = next(x for x in result.output.splitlines() if x.startswith("context assembly"))
    assert line.endswith("; 10 not checked: no document text")
    assert "not checked (no document text): q01, q02" in result.output
    doc = orjson.loads(CliRunner().invoke(cli, ["metrics", str(sample), "--mapping", str(mapping), "-q"]).output)
    assert doc["assembly"]["no_document_text"] == 10
    benefits = CliRunner().invoke(
        cli, ["metrics", str(sample.parent / "benefits" / "rag_eval.jsonl"), "--format", "text"]
    )
    assert "context assembly (top 10): 14 checked, 1 dropped a relevant retrieved document\n" in benefits.output
