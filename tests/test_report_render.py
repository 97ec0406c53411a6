"""Renderers: Markdown (PR comment), self-contained HTML (escaped, offline), and the report CLI."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from report_helpers import write_run

from foundry_bridge.cli import cli
from foundry_bridge.errors import InputError
from foundry_bridge.report import build_report, render_html, render_markdown, write_labelling_queue

INJECTED = "<script>document.documentElement.setAttribute('data-pwned','1')</script> | pipe `tick` **bold**"


def _inject(records):
    out = []
    for r in records:
        if r.query_id == "q01":
            r = r.model_copy(update={"response": INJECTED})
        if r.query_id == "q03":
            r = r.model_copy(update={"extra": {**r.extra, "canary": INJECTED}})
        out.append(r)
    return out


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_run(tmp_path_factory.mktemp("render") / "run", edit_records=_inject)


@pytest.fixture(scope="module")
def report(run_dir: Path):
    return build_report(run_dir)


def test_markdown_summary_first_then_worst_queries(report) -> None:
    md = render_markdown(report)
    pos = md.index("### Positive queries (11)")
    neg = md.index("### Negative queries (3)")
    worst = md.index("### Queries to look at")
    assert pos < neg < worst
    assert "**Coverage: 54/56 Foundry scores** (1 errored, 1 missing)" in md
    row = next(line for line in md.splitlines() if line.startswith("| groundedness |"))
    assert row.split("|")[2].strip() == "**10/11**"  # coverage first, and flagged
    assert "80% (8/10)" in row
    # worst queries: search before assembly before generation before unknown
    lines = md[worst:].split("### Label next")[0].splitlines()
    order = [line.split("|")[1].strip() for line in lines if line.startswith(("| q0", "| n0"))]
    assert order == ["q07", "q06", "q04", "q03", "q05", "n02", "q08", "q02"]  # each stage's worst first
    assert len(md) < 65_000  # GitHub's comment limit


def test_markdown_escapes_dataset_text(report) -> None:
    md = render_markdown(report)
    assert "<script>" not in md
    row = next(line for line in md.splitlines() if line.startswith("| q03 |") and "data-pwned" in line)
    assert row.count("|") - row.count("\\|") == 6  # 5 cells: the injected pipe is escaped
    assert "&lt;script&gt;" in row and "\\`tick\\`" in row and "\\*\\*bold\\*\\*" in row


def test_html_is_self_contained_and_escaped(report) -> None:
    page = render_html(report)
    assert "<script>document.documentElement.setAttribute" not in page
    assert "&lt;script&gt;document.documentElement.setAttribute(&#x27;data-pwned&#x27;,&#x27;1&#x27;)" in page
    assert len(re.findall(r"<script>", page)) == 1  # only the page's own sorter
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)  # nothing loaded from the network
    assert "default-src 'none'" in page
    assert page.count('<tr data-query-id="') == 14
    assert page.count("<svg") >= 4


def test_histogram_puts_positive_and_negative_side_by_side(report) -> None:
    d = next(d for d in report.distributions if d.key == "groundedness")
    page = render_html(report)
    svg = page[page.index('aria-label="groundedness"') :].split("</svg>")[0]
    bars = re.findall(r"<title>(positive|negative): (\d+) in \[([\d.]+)", svg)
    counts = {who: [int(n) for w, n, _ in bars if w == who] for who in ("positive", "negative")}
    assert counts == {"positive": d.positive, "negative": d.negative} and sum(d.positive) and sum(d.negative)


def test_report_cli_formats_and_queue(run_dir: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(cli, ["report", str(run_dir), "--format", "json"], catch_exceptions=False)
    assert res.exit_code == 0
    data = json.loads(res.output)
    assert data["positive"]["metrics"]["groundedness"]["errored"] == 1
    out = tmp_path / "r.html"
    queue = tmp_path / "label.txt"
    res = runner.invoke(
        cli, ["report", str(run_dir), "--out", str(out), "--labelling-queue", str(queue)], catch_exceptions=False
    )
    assert res.exit_code == 0
    assert out.read_text().startswith("<!DOCTYPE html>")
    assert queue.read_text().splitlines()[0] == "q07 0 pol-holiday-01 ?"
    res = runner.invoke(cli, ["report", str(run_dir)], catch_exceptions=False)
    assert res.output.startswith("## foundry-bridge report")
    assert not list(tmp_path.glob(".*.tmp"))  # atomic writes leave nothing behind


def test_report_cli_error_on_a_folder_that_is_not_a_run(tmp_path: Path) -> None:
    from foundry_bridge.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["report", str(tmp_path)])
    assert exc.value.code == 1


def test_markdown_negative_table_puts_local_facts_beside_foundry_scores(report) -> None:
    md = render_markdown(report)
    section = md.split("### Negative queries\n")[1]
    n02 = next(line for line in section.splitlines() if line.startswith("| n02 |"))
    cells = [c.strip() for c in n02.strip("|").split("|")]
    # query, rule, abstained, top score, surfaced, docret ndcg@3, retrieval, groundedness, relevance, stage
    assert cells == ["n02", "declared kind: negative", "**no**", "0.780", "2", "0 ✗", "4 ✓", "2 ✗", "5 ✓", "generation"]
    n03 = next(line for line in section.splitlines() if line.startswith("| n03 |"))
    assert "missing" in n03 and "no label &gt;= 1" in n03


def test_a_run_whose_judge_scores_all_errored_cannot_look_green(tmp_path: Path) -> None:
    from report_helpers import ERROR, JUDGE_SCORES

    scores = json.loads(json.dumps(JUDGE_SCORES))
    scores["relevance"] = dict.fromkeys(
        ["q01", "q02", "q03", "q04", "q05", "q06", "q07", "q08", "q09", "q10", "q11", "n01", "n02", "n03"], ERROR
    )
    rep = build_report(write_run(tmp_path / "run", scores=scores))
    agg = rep.positive.metrics["relevance"]
    assert (agg.scored, agg.errored, agg.mean, agg.pass_rate, agg.coverage) == (0, 11, None, None, 0.0)
    row = next(line for line in render_markdown(rep).splitlines() if line.startswith("| relevance |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[:6] == ["relevance", "**0/11**", "11", "0", "–", "–"]
    # with every relevance verdict missing, no positive query that reached generation can be called ok
    assert {q.stage for q in rep.queries if q.kind == "positive"} <= {"search", "assembly", "generation", "unknown"}


@pytest.mark.parametrize(
    ("url", "link"),
    [
        ("https://ai.azure.com/r/run_1", True),
        ("HTTP://example.test/a(b)", True),
        ("javascript:alert(1)", False),
        ("data:text/html,<b>x</b>", False),
        ("/relative/path", False),
        ("https://ai.azure.com/r/x y", False),
    ],
)
def test_markdown_links_only_http_report_urls(report, url: str, link: bool) -> None:
    prov = report.provenance.model_copy(update={"report_url": url})
    md = render_markdown(report.model_copy(update={"provenance": prov}))
    meta = next(line for line in md.splitlines() if "Foundry report" in line)
    assert ("[Foundry report](" in meta) is link
    if link:
        target = meta.split("[Foundry report](", 1)[1].split(")", 1)[0]
        assert target == url.replace("(", "%28").replace(")", "%29")
    else:
        assert f"Foundry report `{url}`" in meta


def test_qrels_queue_refuses_ids_with_whitespace(report, tmp_path: Path) -> None:
    hole = report.labelling_queue[0]
    bad = hole.model_copy(update={"document_id": "doc with space"})
    broken = report.model_copy(update={"labelling_queue": [bad, *report.labelling_queue[1:]]})
    queue = tmp_path / "label.txt"
    with pytest.raises(InputError, match=r"qrels line cannot hold .*document id 'doc with space'") as info:
        write_labelling_queue(broken, queue)
    assert "jsonl" in (info.value.hint or "").lower()
    assert not queue.exists()  # nothing half-written
    jsonl = tmp_path / "label.jsonl"
    assert write_labelling_queue(broken, jsonl) >= 1
    assert json.loads(jsonl.read_text().splitlines()[0])["document_id"] == "doc with space"
    # the unchanged report writes qrels lines of exactly 4 columns
    write_labelling_queue(report, queue)
    assert all(len(line.split()) == 4 for line in queue.read_text().splitlines())


# a query id that clears the screen, retitles the window, forges a hyperlink, rings the bell, and a C1 CSI
HOSTILE = "\x1b[2J\x1b]0;pwned\x07\x1b]8;;http://evil.example\x1b\\click\x1b]8;;\x1b\\\x9b31m\r"
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # C0 but tab and newline, DEL, C1


def _hostile_ids(records):
    return [r.model_copy(update={"query_id": r.query_id + HOSTILE}) for r in records]


def test_control_characters_from_data_never_reach_a_terminal_or_the_step_summary(tmp_path: Path) -> None:
    """Query ids (and a run folder's name) holding ESC/OSC/BEL/CSI reached the terminal through report and
    compare, and $GITHUB_STEP_SUMMARY. Each is shown as an inert ``\\x1b`` escape; newlines stay lines."""
    worse = {"relevance": {f"q0{i}{HOSTILE}": 2 for i in range(1, 8)}}  # the candidate's worse queries
    base = write_run(tmp_path / "base", edit_records=_hostile_ids, scores={})
    cand = write_run(tmp_path / "cand\x1b\x07\x9b", edit_records=_hostile_ids, scores=worse)
    summary = tmp_path / "summary.md"
    env = {"GITHUB_STEP_SUMMARY": str(summary)}
    outputs = {}
    for fmt in ("md", "html"):
        result = CliRunner().invoke(cli, ["report", str(cand), "--format", fmt], env=env)
        assert result.exit_code == 0, result.output
        outputs[f"report {fmt}"] = result.stdout
        args = ["compare", str(base), str(cand), "--format", fmt, "--resamples", "1000"]
        result = CliRunner().invoke(cli, args, env=env)
        assert result.exit_code == 0, result.output
        outputs[f"compare {fmt}"] = result.stdout
    outputs["step summary"] = summary.read_text()
    for where, text in outputs.items():
        assert not CONTROL.search(text), (where, CONTROL.findall(text))
        assert "\\x1b" in text and "\n" in text, where  # the id is still there, shown; lines are lines
    assert "q07\\x1b\\[2J\\x1b\\]0;pwned\\x07" in outputs["report md"]  # the worst query, named
