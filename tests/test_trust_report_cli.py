"""`foundry-bridge report --human-verdicts` on the bundled sample, as `make demo` runs it: the report gains the
"Can the judge be trusted?" section, and `--verdict-queue` writes blanks in the human-verdict format."""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner

from foundry_bridge.cli import cli
from foundry_bridge.dataset.verdicts import read_verdicts

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "benefits" / "rag_eval.jsonl"
VERDICTS = ROOT / "samples" / "benefits" / "human_verdicts.jsonl"


def test_the_demo_report_shows_the_trust_section_and_writes_a_verdict_queue(tmp_path: Path) -> None:
    runner = CliRunner()
    run = runner.invoke(cli, ["run", str(SAMPLE), "--backend", "mock", "--out", str(tmp_path / "r"), "--quiet"])
    assert run.exit_code == 0, run.output
    queue = tmp_path / "queue.jsonl"
    args = ["report", str(tmp_path / "r"), "--format", "md", "--human-verdicts", str(VERDICTS)]
    md = runner.invoke(cli, [*args, "--verdict-queue", str(queue), "--verdict-queue-size", "5"])
    assert md.exit_code == 0, md.output
    assert "Can the judge be trusted?" in md.output
    labelled = {(v["query_id"], v["evaluator"]) for v in map(json.loads, VERDICTS.read_text().splitlines()) if v}
    data = json.loads(
        runner.invoke(
            cli, ["report", str(tmp_path / "r"), "--human-verdicts", str(VERDICTS), "--format", "json"]
        ).output
    )
    trust = data["trust"]
    assert trust["source"]["verdicts"] == len(VERDICTS.read_text().splitlines())
    assert {j["evaluator"] for j in trust["judges"]} >= {"builtin.groundedness", "builtin.relevance"}
    lines = [json.loads(line) for line in queue.read_text().splitlines()]
    assert 0 < len(lines) <= 5 * len(trust["judges"])
    assert all(line["score"] is None and line["passed"] is None for line in lines)  # blanks: the judge's not shown
    queued = {(line["query_id"], line["evaluator"].removeprefix("builtin.")) for line in lines}
    assert {e for _, e in queued} <= {j["evaluator"].removeprefix("builtin.") for j in trust["judges"]}
    assert not queued & labelled  # none labelled already
    assert read_verdicts(queue).unfilled == len(lines)  # the file reads back as human-verdict lines to fill


def test_without_human_verdicts_the_section_says_what_is_missing(tmp_path: Path) -> None:
    runner = CliRunner()
    assert (
        runner.invoke(cli, ["run", str(SAMPLE), "--backend", "mock", "--out", str(tmp_path / "r"), "--quiet"]).exit_code
        == 0
    )
    data = json.loads(runner.invoke(cli, ["report", str(tmp_path / "r"), "--format", "json"]).output)
    assert any("no human verdicts" in m for m in data["trust"]["missing"])


def test_the_bundled_samples_trust_intervals_stay_on_their_scales(tmp_path: Path) -> None:
    """`report --human-verdicts` on the sample (7–8 labelled rows a judge): every printed interval inside [0, 1]
    for a pass rate and 1–5 for a mean score, none of zero width, no "[1, 1]"; the corrected numbers, below their
    10 labels, say so instead of printing an interval (they printed PPI 0.12 [-0.40, 0.65] and 1.96 [0.46, 3.46])."""
    runner = CliRunner()
    run = runner.invoke(cli, ["run", str(SAMPLE), "--backend", "mock", "--out", str(tmp_path / "r"), "--quiet"])
    assert run.exit_code == 0, run.output
    args = ["report", str(tmp_path / "r"), "--human-verdicts", str(VERDICTS), "--format"]
    trust = json.loads(runner.invoke(cli, [*args, "json"]).output)["trust"]
    checked = 0
    for judge in trust["judges"]:
        for quantity, (lo, hi) in (("pass_rate", (0.0, 1.0)), ("score_mean", (1.0, 5.0))):
            for kind, est in (judge["trust"][quantity] or {}).items():
                if isinstance(est, dict) and "low" in est and est["low"] is not None:  # not the raters' entry
                    assert lo <= est["low"] < est["high"] <= hi, (judge["criterion"], quantity, kind, est)
                    checked += 1
    assert checked >= 10  # judge only for three judges, human only for two, both quantities
    kappas = [
        (a["kappa"], a["kappa_interval"])
        for judge in trust["judges"]
        for a in (judge["trust"]["on_pass"], judge["trust"]["on_scale"])
        if a and a["kappa_interval"] and a["kappa_interval"][0] is not None  # null: no spread in the resamples
    ]
    assert kappas and all(lo <= k <= hi for k, (lo, hi) in kappas)  # κ with its bootstrap interval (#24 item 3)
    md = runner.invoke(cli, [*args, "md"]).output
    section = md[md.index("## Can the judge be trusted?") :]
    section = section[: section.index("\n## ")] if "\n## " in section else section
    intervals = [(float(a), float(b)) for a, b in re.findall(r"\\\[(-?[\d.]+), (-?[\d.]+)\\\]", section)]
    # pass rates in [0, 1], scores in 1–5; Krippendorff's α (with its bootstrap interval, #24 item 3) in [-1, 1]
    assert len(intervals) >= 10 and all(-1.0 <= a < b <= (1.0 if a < 0 else 5.0) for a, b in intervals), intervals
    assert "[1, 1]" not in section.replace("\\", "")
    assert section.count("too few labels \\(need 10\\)") == 8  # PPI and PPI++, pass rate and score, two judges
