"""The run report's per-query drill-down (issue #36 item 4): for the worst queries of each failing stage, the ranked
documents with their labels, the context as sent with the dropped passage marked, the response and each judge's
reason; each stage's "worst ↓" link lands on its worst query. Expected values by hand from the benefits sample
(``samples/benefits/rag_eval.jsonl``, read here as plain JSON) and the fixture's judge scores (``JUDGE_SCORES``)."""

from __future__ import annotations

import json
import re
from html import escape
from pathlib import Path
from typing import Any

from report_helpers import SAMPLE, write_run

from foundry_bridge.report import build_report, render_html, render_markdown


def _sample() -> dict[str, dict[str, Any]]:
    rows = (json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines() if line.strip())
    return {r["query_id"]: r for r in rows}


def _card(page: str, anchor: str) -> str:
    start = page.index(f'<details class="drill" id="{anchor}"')
    return page[start : page.index("</details>", start)]


def _links(page: str) -> dict[str, str]:
    """The verdict table's "worst ↓" links: stage → the data-query-id of the card each lands on."""
    verdict = page[page.index('<section id="verdict">') : page.index("</section>")]
    out = {}
    for stage, href in re.findall(r'<tr><td class="stage-(\w+)">\1</td>.*?<a href="#([^"]+)">worst ↓</a>', verdict):
        card = re.search(rf'<details class="drill" id="{href}" data-query-id="([^"]+)"', page)
        assert card is not None, href
        out[stage] = card.group(1)
    return out


def test_each_worst_link_lands_on_the_stage_s_lowest_scored_query(tmp_path: Path) -> None:
    report = build_report(write_run(tmp_path / "run"))
    page = render_html(report)
    # generation: q03 (groundedness 2), q04 (groundedness 1), q05 (relevance 2), n02 (groundedness 2) each fail one
    # answer judge, q08 (an abstention) none; q04's answer-judge mean (1 + 5) / 2 = 3 is the lowest of them
    assert _links(page) == {"search": "q07", "assembly": "q06", "generation": "q04"}
    drilled = [(q.stage, q.query_id) for q in report.drill]
    # per stage the worst first; ties (q03, q05, n02 at a mean of 3.5) in dataset order; q02 unknown (groundedness
    # errored)
    assert drilled == [
        ("search", "q07"),
        ("assembly", "q06"),
        *[("generation", q) for q in ("q04", "q03", "q05", "n02", "q08")],
        ("unknown", "q02"),
    ]
    assert page.index('<a href="#drill-1">worst ↓</a>') < page.index('id="drill-1"')  # the search row's link


def test_the_worst_query_shows_its_documents_labels_and_the_judge_s_reason(tmp_path: Path) -> None:
    page = render_html(build_report(write_run(tmp_path / "run")))
    q07 = _sample()["q07"]
    card = _card(page, "drill-1")
    assert 'data-query-id="q07"' in card and escape(q07["query"]) in card
    labels = {g["document_id"]: g["query_relevance_label"] for g in q07["retrieval_ground_truth"]}
    for rank, doc in enumerate(q07["retrieved_documents"], 1):
        label = labels.get(doc["document_id"])
        shown = "unjudged" if label is None else f"{label} ({'relevant' if label >= 1 else 'not relevant'})"
        cells = f"<td>{doc['document_id']}</td><td class=n>{doc['relevance_score']:.3f}</td>"
        assert f"<td class=n>{rank}</td>{cells}<td>{shown}</td>" in card
    assert "Labelled, not retrieved: pol-bereave-01 (label 3)" in card
    assert escape(q07["context"]) in card and escape(q07["response"]) in card
    assert "retrieval: <strong>1</strong> (fail) — hand-chosen 1" in card  # JUDGE_SCORES["retrieval"]["q07"]
    assert "groundedness: <strong>5</strong> (pass) — hand-chosen 5" in card


def test_the_dropped_passage_is_marked_beside_the_context_as_sent(tmp_path: Path) -> None:
    page = render_html(build_report(write_run(tmp_path / "run")))
    q06 = _sample()["q06"]
    card = _card(page, "drill-2")
    assert 'data-query-id="q06"' in card
    # pol-parttime-01 (label 3, rank 3) was retrieved and is not in the context: dropped; pol-401k-01 is in it
    assert "<tr class=dropped><td class=n>3</td><td>pol-parttime-01</td>" in card
    assert "<td>3 (relevant)</td><td>dropped: relevant, not in the context</td>" in card
    assert "<td>pol-401k-01</td><td class=n>0.850</td><td>1 (relevant)</td><td>in the context</td>" in card
    dropped = next(d for d in q06["retrieved_documents"] if d["document_id"] == "pol-parttime-01")
    assert dropped["content"] not in q06["context"]
    context_at, dropped_at = card.index(escape(q06["context"])), card.index('<div class="text dropped">')
    assert context_at < dropped_at and escape(dropped["content"]) in card[dropped_at:]
    assert card.count('<div class="text dropped">') == 1


def test_markdown_links_each_stage_to_its_worst_query_s_drill_down(tmp_path: Path) -> None:
    md = render_markdown(build_report(write_run(tmp_path / "run")))
    assert "| q07 · [worst ↓](#query-q07-search) |" in md
    assert "[worst ↓](#query-q04-generation) |" in md
    assert "#### Query q07 \\(search\\)" in md and "#### Query q04 \\(generation\\)" in md
    q06 = md[md.index("#### Query q06") : md.index("#### Query q04")]
    assert "| 3 | pol-parttime-01 | 0.770 | 3 (relevant) | **dropped: relevant, not in the context** |" in q06
    assert "> **Dropped: pol-parttime-01** (rank 3, label 3 (relevant)): Part-time employees" in q06
    q04 = md[md.index("#### Query q04") :]
    assert "- groundedness: **1** (fail) — hand-chosen 1" in q04


def test_the_emulator_s_stand_in_judge_decides_no_drilled_query(tmp_path: Path) -> None:
    manifest = {"backend": "mock", "eval_id": "e", "run_id": "r", "status": "completed"}
    run = write_run(tmp_path / "mock", manifest=manifest)
    report = build_report(run)
    # q03, q04, q05 (generation) rest on the stand-in's fail; q08 (abstained) and n02 (a negative answered) do not:
    # n02 fails groundedness, q08 none
    assert [q.query_id for q in report.drill] == ["q07", "q06", "n02", "q08", "q02"]
    assert _links(render_html(report))["generation"] == "n02"
    # kept apart even when the stage's worst (by failed judges) hold only rows the stand-in decided
    one = build_report(run, worst=1)
    assert one.stages.worst["generation"] == ["q04"]
    assert [q.query_id for q in one.drill if q.stage == "generation"] == ["n02"]


def test_a_large_report_drills_into_a_bounded_number_of_queries(tmp_path: Path) -> None:
    from foundry_bridge.report._drill import DRILL_CAP, DRILL_PER_STAGE

    report = build_report(write_run(tmp_path / "run"), worst=3, table_rows=5)  # keeps only the worst rows
    assert not report.per_query.complete
    by_stage: dict[str, int] = {}
    for q in report.drill:
        by_stage[q.stage] = by_stage.get(q.stage, 0) + 1
    assert by_stage == {"search": 1, "assembly": 1, "generation": 3, "unknown": 1}
    assert DRILL_PER_STAGE * 4 == DRILL_CAP


def test_the_drilled_records_are_read_by_row_without_parsing_the_rest(tmp_path: Path) -> None:
    from foundry_bridge.runfolder import RunFolder

    run = write_run(tmp_path / "run")
    path = run / "records.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    lines.insert(3, "")  # a blank line is no row
    lines[-1] = "{not json"  # never reached: the read stops after the last row wanted
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    folder = RunFolder(run)
    got = folder.records_at({0, 5}, folder.read_plan(items=False, records=False))
    ids = list(_sample())
    assert {row: rec.query_id for row, rec in got.items()} == {0: ids[0], 5: ids[5]}
