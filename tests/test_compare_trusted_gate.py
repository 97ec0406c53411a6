"""A gate that knows when not to decide (issue #24, item 5): with --judge-trust-floor and --human-verdicts, a
gated judge metric whose judge disagrees with the humans (κ below the floor) is "inconclusive" with what it
needs, exit 4, one gate line and a JUnit error case — never a silent pass; a trusted judge gates as before.

Two emulator runs of samples/benefits (identical: the relevance gate passes on its own). The humans either
copy the emulator's relevance score on every row (κ = 1, the humans' interval 1.15 wide < the gate's Δ 1.2) or
mirror it (6 − score: κ < 0)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from foundry_bridge.cli import cli
from foundry_bridge.errors import FoundryBridgeError
from foundry_bridge.runfolder import RunFolder

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "benefits" / "rag_eval.jsonl"
GATE = "relevance:1.2"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("trusted")
    runner = CliRunner()
    for name in ("a", "b"):
        done = runner.invoke(cli, ["run", str(SAMPLE), "--backend", "mock", "--out", str(root / name), "--quiet"])
        assert done.exit_code == 0, done.output
    ids = [json.loads(line)["query_id"] for line in (root / "a" / "records.jsonl").read_text().splitlines()]
    judge = {
        ids[r.row]: r.score
        for r in RunFolder(root / "a").iter_results()
        if r.evaluator == "builtin.relevance" and r.metric == "relevance" and r.score is not None
    }
    for name, flip in (("agree", False), ("disagree", True)):
        lines = [
            {"query_id": q, "evaluator": "relevance", "score": 6 - s if flip else s, "rater": "reviewer-a"}
            for q, s in judge.items()
        ]
        (root / f"{name}.jsonl").write_text("".join(json.dumps(v) + "\n" for v in lines))
    return {"a": root / "a", "b": root / "b", "agree": root / "agree.jsonl", "disagree": root / "disagree.jsonl"}


def _compare(runs: dict[str, Path], *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(
        cli,
        ["compare", str(runs["a"]), str(runs["b"]), "--fail-on", GATE, "--resamples", "200", *args],
        env={"GITHUB_STEP_SUMMARY": ""},
    )
    if isinstance(result.exception, FoundryBridgeError):
        return result.exception.exit_code, result.output + str(result.exception)
    return result.exit_code, result.output


def test_a_judge_below_the_trust_floor_makes_the_gate_inconclusive(runs, tmp_path: Path) -> None:
    junit = tmp_path / "gate.xml"
    code, out = _compare(
        runs, "--judge-trust-floor", "0.6", "--human-verdicts", str(runs["disagree"]), "--junit", str(junit)
    )
    assert code == 4, out
    assert "**Gate: INCONCLUSIVE**" in out and "passed" not in out.split("**Gate:")[1].split("\n")[0]
    assert "judge relevance κ = " in out and "< floor 0.6" in out and "need " in out and " labels" in out
    case = ET.parse(junit).getroot().find(".//testcase")
    assert case is not None and (error := case.find("error")) is not None
    assert error.get("type") == "inconclusive" and "need " in (error.get("message") or "")


def test_a_trusted_judge_gates_as_before(runs) -> None:
    plain, _ = _compare(runs)
    trusted, out = _compare(runs, "--judge-trust-floor", "0.6", "--human-verdicts", str(runs["agree"]))
    assert plain == trusted == 0, out
    assert "**Gate: passed**" in out and "inconclusive" not in out


def test_the_trust_floor_needs_human_verdicts(runs) -> None:
    code, out = _compare(runs, "--judge-trust-floor", "0.6")
    assert code == 2 and "--human-verdicts" in out
