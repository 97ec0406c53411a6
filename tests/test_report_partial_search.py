"""Graded labels do not hide a search miss (issue #22, item 12): a query whose highest-graded relevant document is
not in the top k, while a lower-graded relevant one is, keeps the stage the rules give it but carries a visible
`search (partial)` signal; and the report states the relevance threshold beside the stage table (JSON, Markdown,
HTML). q03 of the benefits sample has pol-401k-01 (label 3) and pol-401k-02 (label 1); here its search engine
returns only the label-1 passage, so hit@10 is 1 and the failed groundedness judge made it `generation` alone."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from report_helpers import write_run

from foundry_bridge.dataset import QueryRecord
from foundry_bridge.report import build_report, render


def _lose_the_grade_3_passage(records: list[QueryRecord]) -> list[QueryRecord]:
    out = []
    for rec in records:
        if rec.query_id == "q03":
            kept = [d for d in rec.retrieved_documents if d.document_id != "pol-401k-01"]
            rec = rec.model_copy(update={"retrieved_documents": kept})
        out.append(rec)
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("partial")
    return write_run(base / "as-is"), write_run(base / "missed", edit_records=_lose_the_grade_3_passage)


def _stage_section(text: str, start: str, end: str) -> str:
    return text.split(start, 1)[1].split(end, 1)[0]


def test_a_missed_top_grade_is_a_visible_partial_search_and_other_stages_are_unchanged(
    runs: tuple[Path, Path], tmp_path: Path
) -> None:
    as_is = build_report(runs[0])
    report = build_report(runs[1], queries_out=tmp_path / "rows.jsonl", per_query="jsonl")
    q03 = next(q for q in report.queries if q.query_id == "q03")
    assert q03.local["hit@10"] == 1.0  # the label-1 passage counts as found
    assert q03.stage == "generation" and q03.search_partial is True
    assert "search (partial)" in q03.stage_reason and "label 3" in q03.stage_reason and "label 1" in q03.stage_reason
    assert (report.stages.search_partial, report.stages.search_partial_queries) == (1, ["q03"])

    # every other query: the same stage as before, and no partial signal
    before = {q.query_id: q.stage for q in as_is.queries}
    assert {q.query_id: q.stage for q in report.queries} == before
    assert report.stages.counts == as_is.stages.counts
    assert [q.query_id for q in report.queries if q.search_partial] == ["q03"]
    assert as_is.stages.search_partial == 0  # at k = 10 the sample finds every top grade it finds anything of

    rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["query_id"] for r in rows if r["search_partial"]] == ["q03"]


def test_the_stage_table_states_the_relevance_threshold_in_every_format(runs: tuple[Path, Path]) -> None:
    report = build_report(runs[1], stage_k=3)
    data = json.loads(render(report, "json"))["stages"]
    assert (data["relevance_threshold"], data["stage_k"]) == (1, 3)
    assert data["search_partial"] == report.stages.search_partial

    md = _stage_section(render(report, "md"), "### Where queries fail", "###")
    assert "relevant ⇔ label ≥ 1" in md and "k = 3" in md
    partial_row = next(line for line in md.splitlines() if line.startswith("| **search (partial)**"))
    assert "q03" in partial_row
    assert "| q03 | positive | **generation** · search (partial) |" in render(report, "md")  # its own row, too

    page = _stage_section(render(report, "html"), "<h2>Where queries fail</h2>", "<h2>")
    assert "relevant ⇔ label ≥ 1" in page and "k = 3" in page
    assert re.search(r"search \(partial\)</td><td class=n>\d+</td><td>[^<]*</td><td>[^<]*q03", page)
