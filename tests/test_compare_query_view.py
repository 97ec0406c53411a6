"""The compare page's per-query view (issue #36 item 3): the queries that changed most, each run side by side with
its ranked documents and labels, context, answer and each judge's score and reason, read from the run folders."""

from __future__ import annotations

import copy
import re
from pathlib import Path

from report_helpers import JUDGE_SCORES, NDCG3, sample_records, write_run

from foundry_bridge.comparison import compare_runs, render_comparison_html
from foundry_bridge.comparison._query_view import changed_queries

WORSE_NDCG = ("q01", "q02", "q03", "q04", "q05", "q08", "q10", "q11")
WORSE_GROUNDED = ("q01", "q03", "q05", "q06", "q08", "q10", "q11")
INJECTED = "<script>alert(1)</script> & more"


def _pair(tmp_path: Path) -> tuple[Path, Path]:
    worse = copy.deepcopy(JUDGE_SCORES)
    worse["groundedness"].update(dict.fromkeys(WORSE_GROUNDED, 1))

    def answer(records):  # b answers q05 with markup: shown as text
        return [r.model_copy(update={"response": INJECTED}) if r.query_id == "q05" else r for r in records]

    a = write_run(tmp_path / "a")
    b = write_run(tmp_path / "b", scores=worse, ndcg3={**NDCG3, **dict.fromkeys(WORSE_NDCG, 0.0)}, edit_records=answer)
    return a, b


def test_the_most_changed_queries_are_those_worse_on_most_metrics(tmp_path: Path) -> None:
    comparison = compare_runs(list(_pair(tmp_path)))
    changed = changed_queries(comparison, "b")
    # worse on ndcg@3, on groundedness and on groundedness/pass: the queries in all three sets, by hand
    assert {q for q, _ in changed} == set(WORSE_NDCG) & set(WORSE_GROUNDED) - {"q03"}  # q03 stays a fail (2→1)
    assert [q for q, _ in changed] == ["q01", "q05", "q08", "q10", "q11"]
    assert dict(changed)["q08"] == ["document_retrieval/ndcg@3 1→0", "groundedness 4→1", "groundedness/pass 1→0"]


def test_the_page_shows_each_run_side_by_side(tmp_path: Path) -> None:
    page = render_comparison_html(compare_runs(list(_pair(tmp_path))))
    view = page[page.index("The queries that changed most: b vs a") :]
    cards = re.findall(r'<details class="query" open><summary><strong>(\w+)</strong>', view)
    assert cards == ["q01", "q05", "q08", "q10", "q11"]
    q05 = view[view.index("<strong>q05</strong>") : view.index("<strong>q08</strong>")]
    record = next(r for r in sample_records() if r.query_id == "q05")
    a_col, b_col = q05.split('<div class="run">')[1:]
    for col in (a_col, b_col):  # every ranked document with its label, and the context as the run sent it
        for rank, doc in enumerate(record.retrieved_documents, 1):
            assert f"<td class=n>{rank}</td><td>{doc.document_id}</td>" in col
        assert (record.context or "")[:40] in col
    assert "<td>pol-dental-01</td><td class=n>0.870</td><td>3</td><td>in the context</td>" in a_col
    assert "groundedness: <strong>5</strong> (pass) — hand-chosen 5" in a_col
    assert "groundedness: <strong>1</strong> (fail) — hand-chosen 1" in b_col
    assert (record.response or "") in a_col and "&lt;script&gt;alert(1)&lt;/script&gt; &amp; more" in b_col
    assert "<script>" not in page
