"""`foundry-bridge report --human-verdicts` on the bundled sample, as `make demo` runs it: the report gains the
"Can the judge be trusted?" section, and `--verdict-queue` writes blanks in the human-verdict format."""

from __future__ import annotations

import json
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
