"""The run report answers first (issue #36 item 4): headline numbers, sub-metrics folded without a pass rate,
histograms only where the values fill a few bins, negatives coloured by what is right for a negative."""

from __future__ import annotations

import json
import re
from pathlib import Path

from report_helpers import write_run

from foundry_bridge.report import build_report, render_html, render_markdown


def _page(tmp_path: Path) -> str:
    run = write_run(tmp_path / "run")
    path = run / "results.jsonl"  # a document_retrieval sub-metric beside ndcg@3 (its primary), 0.3 on every query
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    sub = [
        {**r, "metric": "fidelity", "score": 0.3, "passed": False, "label": "fail"}
        for r in rows
        if r["metric"] == "ndcg@3"
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows + sub), encoding="utf-8")
    return render_html(build_report(run))


def test_headline_numbers_open_the_verdict(tmp_path: Path) -> None:
    page = _page(tmp_path)
    headline = re.search(r'<div class="headline" id="headline">(.*?)</div></div>', page)
    assert headline is not None and page.index('id="headline"') < page.index('id="stage-chart"')
    pairs = re.findall(r"<b>([^<]*)</b><span>([^<]*)</span>", headline.group(0))
    # by hand from the fixture: judges' scores over the 11 positive queries (absent → 5; errored/missing not counted)
    assert ("4.455", "retrieval mean") in pairs  # (9·5 + 1 + 3) / 11
    assert ("4.200", "groundedness mean") in pairs  # q02 errored: (7·5 + 2 + 1 + 4) / 10
    assert ("4.545", "relevance mean") in pairs  # (9·5 + 2 + 3) / 11
    assert ("1/3", "negative queries answered anyway") in pairs  # n02; n01 and n03 abstain


def test_sub_metrics_are_folded_without_a_pass_rate(tmp_path: Path) -> None:
    page = _page(tmp_path)
    section = page[page.index("<h2>Positive queries") : page.index("<h2>Negative queries")]
    main, _, folded = section.partition("<details>")
    assert "document_retrieval/ndcg@3" in main and "document_retrieval/fidelity" not in main
    row = re.search(r"<tr><td>document_retrieval/fidelity</td>.*?</tr>", folded)
    assert row is not None and "1 sub-metrics" in folded
    assert re.findall(r"<td class=n>([^<]*)</td>", row.group(0))[4] == "–"  # pass rate: none (all 11 "failed")


def test_histograms_only_where_values_fill_three_bins(tmp_path: Path) -> None:
    page = _page(tmp_path)
    drawn = re.findall(r'<div class="chart"><h3>([^<]*)</h3>', page)
    assert "rr@3" in drawn and "retrieval" in drawn
    for key in ("recall@3", "hit@3", "recall@10", "hit@10"):  # 0 or 1 only
        assert key not in drawn
    note = re.search(r"Not drawn \(values in fewer than 3 bins\): ([^<]*)</p>", page)
    assert note is not None and {"recall@3", "hit@3", "recall@10", "hit@10"} <= set(note.group(1).split(", "))


def test_a_negative_query_low_retrieval_score_is_right(tmp_path: Path) -> None:
    page = _page(tmp_path)
    n01 = re.search(r'<tr data-query-id="n01">.*?</tr>', page)
    assert n01 is not None  # retrieval 1 on a negative query: nothing relevant found, which is right
    assert (
        '<td class="n pass" data-v="1.0" title="hand-chosen 1 (negative query: a low score is right)">1 ✓</td>'
        in n01.group(0)
    )
    n02 = re.search(r'<tr data-query-id="n02">.*?</tr>', page)
    assert n02 is not None  # groundedness judges the answer: 2 is still a fail on a negative query
    assert '<td class="n fail" data-v="2.0" title="hand-chosen 2">2 ✗</td>' in n02.group(0)


def _emulator_run(tmp_path: Path, backend: str) -> Path:
    manifest = {"backend": backend, "eval_id": "eval_fixture", "run_id": "evalrun_fixture", "status": "completed"}
    return write_run(tmp_path / backend, manifest=manifest)


def _bar_legend(page: str) -> dict[str, int]:
    bar = page[page.index('<svg id="stage-chart"') : page.index("</svg>", page.index('<svg id="stage-chart"'))]
    return {s: int(n) for s, n in re.findall(r'fill="#222">(\w+) (\d+)</text>', bar)}


def test_emulator_stages_resting_on_the_stand_in_judge_are_apart(tmp_path: Path) -> None:
    # by hand from the fixture's stage reasons: the answer judges decide q01, q09, q10, q11 (ok: every judge
    # passed) and q03, q04, q05 (generation: a judge failed); q08 is generation by its abstention, n02 by
    # answering a negative query, n01 and n03 ok by abstaining: none of those rests on a judge
    fixture = render_html(build_report(_emulator_run(tmp_path, "fixture")))
    assert _bar_legend(fixture) == {"search": 1, "assembly": 1, "generation": 5, "unknown": 1, "ok": 6}
    assert "stand-in judge" not in fixture

    report = build_report(_emulator_run(tmp_path, "mock"))
    page = render_html(report)
    assert _bar_legend(page) == {"search": 1, "assembly": 1, "generation": 2, "unknown": 1, "ok": 2}
    verdict = page[page.index('<section id="verdict">') : page.index("</section>")]
    row = re.search(r'"stage-unknown">stand-in judge</td><td class=n>(\d+)</td><td>[^<]*</td><td>([^<]*)', verdict)
    assert row is not None and row.group(1) == "7"
    assert set(row.group(2).split(", ")) == {"q01", "q03", "q04", "q05", "q09", "q10", "q11"}
    generation = re.search(r'"stage-generation">generation</td><td class=n>2</td><td>[^<]*</td><td>([^<]*)', verdict)
    assert generation is not None and generation.group(1).strip() == "q08, n02"
    assert verdict.count('id="stand-in"') == 1 and "lexical stand-in, not a model" in verdict

    md = render_markdown(report)
    assert "| **stand-in judge** | 7 |" in md and "| **generation** | 2 |" in md and "| **ok** | 2 |" in md
    assert "lexical stand-in, not a model" in md


def test_markdown_opens_with_the_html_headline_numbers(tmp_path: Path) -> None:
    report = build_report(write_run(tmp_path / "run"))
    page, md = render_html(report), render_markdown(report)
    headline = re.search(r'<div class="headline" id="headline">(.*?)</div></div>', page)
    assert headline is not None
    pairs = re.findall(r"<b>([^<]*)</b><span>([^<]*)</span>", headline.group(0))
    line = " · ".join(f"**{value}** {what}" for value, what in pairs)
    assert line in md and md.index(line) < md.index("| stage | queries |")
    # by hand from the fixture (as in test_headline_numbers_open_the_verdict): the judges' means and the negatives
    assert "**4.455** retrieval mean" in line and "**1/3** negative queries answered anyway" in line
