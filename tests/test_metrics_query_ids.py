"""Query ids come out of ``metrics`` as they went in: any text (unicode, escaped or raw; a lone surrogate or None
through the library), repeats kept, in input order, in every per-query list."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import orjson
from click.testing import CliRunner

from foundry_bridge.cli import cli
from foundry_bridge.metrics.negative import negative_query_report
from foundry_bridge.metrics.ranking import ranking_metrics


def _record(query_id: object, kind: str, labels: dict[str, int] | None) -> SimpleNamespace:
    docs = [SimpleNamespace(document_id=d, relevance_score=s) for d, s in (("a", 0.9), ("b", 0.5))]
    truth = labels and [SimpleNamespace(document_id=d, query_relevance_label=v) for d, v in labels.items()]
    return SimpleNamespace(
        query_id=query_id,
        kind=kind,
        kind_source="declared",
        retrieved_documents=docs,
        retrieval_ground_truth=truth,
        response=None,
    )


IDS = ["q1", "", None, "Zürich ✓", "\ud800lone", "😀 日本語", "q1"]


def test_library_results_keep_every_query_id_in_order() -> None:
    records = [
        _record(q, "negative" if i % 3 == 2 else "positive", {"b": 1} if i % 2 else None) for i, q in enumerate(IDS)
    ]
    result = ranking_metrics(records, ks=[1, 2])
    assert [row["query_id"] for row in result.per_query] == IDS
    assert [row["kind"] for row in result.per_query] == [r.kind for r in records]
    assert result.per_query[3]["rr@2"] == 0.5 and result.per_query[4]["rr@2"] is None  # labelled / not labelled
    report = negative_query_report(records, k=2, relevance_threshold=1)
    assert [row["query_id"] for row in report["per_query"]] == [None, "😀 日本語"]
    assert report["per_query"][1]["relevant_labelled_in_top_k"] == ["b"]


def test_metrics_command_writes_unicode_and_integer_ids_as_read(benefits_jsonl: Path, tmp_path: Path) -> None:
    rows = [orjson.loads(line) for line in benefits_jsonl.read_bytes().splitlines() if line.strip()]
    wanted = {0: "Zürich ✓", 3: 17, 6: "😀 日本語", 12: "n\u00e9g"}
    lines = []
    for i, row in enumerate(rows):
        row["query_id"] = wanted.get(i, row["query_id"])
        lines.append(json.dumps(row).encode() if i in (0, 12) else orjson.dumps(row))  # \u escapes, raw UTF-8
    data = tmp_path / "ids.jsonl"
    data.write_bytes(b"\n".join(lines) + b"\n")
    result = CliRunner().invoke(cli, ["metrics", str(data)])
    assert result.exit_code == 0, result.output
    doc = orjson.loads(result.stdout_bytes)
    expected = [str(wanted.get(i, row["query_id"])) for i, row in enumerate(rows)]
    assert [row["query_id"] for row in doc["per_query"]] == expected
    negatives = [row["query_id"] for row in doc["negative_report"]["per_query"]]
    assert negatives == [row["query_id"] for row in doc["per_query"] if row["kind"] == "negative"]
    assert "n\u00e9g" in negatives
    assembly = {row["query_id"] for row in doc["assembly"]["per_query"]}
    assert assembly <= set(expected) and "Zürich ✓" in assembly
