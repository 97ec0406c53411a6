"""`compare --junit FILE` read back with junitparser, and the GitHub step summary of `report` and `compare`.

The runs differ on hand-chosen judge scores (tests/report_helpers): the baseline's relevance is 5 on seven
positive queries where the candidate's is 3, so relevance regresses by 14/11 with exact sign-flip p = 2/2^7; rr@10
is the same in both (p = 1). Each gate is decided at α on its own p; two gated tests: false-alarm rate ≤ 2 × 0.05.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from click.testing import CliRunner
from junitparser import Failure, JUnitXml
from report_helpers import ERROR, JUDGE_SCORES, write_run

from foundry_bridge.cli import cli
from foundry_bridge.errors import FoundryBridgeError
from foundry_bridge.integrations.summary import STEP_SUMMARY_LIMIT, append_step_summary

IMPROVED = ["q01", "q03", "q04", "q06", "q07", "q09", "q10"]


def _scores(relevance: float, **edits: dict[str, object]) -> dict:
    scores = copy.deepcopy(JUDGE_SCORES)
    for q in IMPROVED:
        scores["relevance"][q] = relevance
    for criterion, per_query in edits.items():
        scores[criterion].update(per_query)
    return scores


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("junit")
    return {
        "base": write_run(root / "base", scores=_scores(5)),
        "cand": write_run(root / "cand", scores=_scores(3)),
        "lost": write_run(root / "lost", scores=_scores(5, groundedness={"q01": ERROR})),
    }


def _compare(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["compare", *args, "--resamples", "1000"], env=env or {"GITHUB_STEP_SUMMARY": ""})
    gate = isinstance(result.exception, FoundryBridgeError)  # the console script's exit code (cli.main)
    return (result.exception.exit_code if gate else result.exit_code), result.output  # type: ignore[union-attr]


def _cases(path: Path) -> dict[str, object]:
    xml = JUnitXml.fromfile(str(path))
    return {case.name: case for suite in xml for case in suite}


def test_one_case_per_gated_metric_the_regression_fails_with_delta_ci_and_the_gates_p(runs, tmp_path: Path) -> None:
    out = tmp_path / "junit.xml"
    code, output = _compare(
        str(runs["base"]), str(runs["cand"]), "--fail-on", "relevance", "--fail-on", "rr@10", "--junit", str(out)
    )
    assert code == 3, output
    cases = _cases(out)
    coverage = [f"coverage {k}" for k in ("document_retrieval/ndcg@3", "retrieval", "groundedness", "relevance")]
    assert sorted(cases) == sorted(["positive relevance", "positive rr@10", *coverage])
    rel = cases["positive relevance"]
    (failure,) = rel.result
    assert isinstance(failure, Failure)
    assert failure.message.startswith("cand: positive relevance regressed by 1.273")  # 14/11
    assert "delta -1.273" in failure.text and "95% CI" in failure.text
    assert "p = 0.01562" in failure.text  # 2 / 2^7, exact
    assert "gate p = 0.01562 (primary: Holm over 1)" in failure.text  # rr@10 has no informative pair: no family
    assert "2 gated tests, Holm-corrected across gates: false-alarm rate across all gates ≤ α = 0.05" in failure.text
    assert "verdict worse" in failure.text
    assert cases["positive rr@10"].is_passed and all(cases[c].is_passed for c in coverage)
    xml = JUnitXml.fromfile(str(out))
    assert (xml.tests, xml.failures) == (6, 1)
    assert "1 failed (JUnit XML)" in output


def test_a_coverage_drop_is_its_own_failed_case(runs, tmp_path: Path) -> None:
    out = tmp_path / "junit.xml"
    code, _ = _compare(str(runs["base"]), str(runs["lost"]), "--coverage-drop", "0", "--junit", str(out))
    assert code == 3
    cases = _cases(out)
    (failure,) = cases["coverage groundedness"].result
    assert failure.message == "lost: coverage of groundedness dropped from 92.9% to 85.7%"  # 13/14 → 12/14
    assert cases["coverage relevance"].is_passed


def test_nothing_gated_is_one_passing_case(runs, tmp_path: Path) -> None:
    out = tmp_path / "junit.xml"
    code, _ = _compare(str(runs["base"]), str(runs["cand"]), "--junit", str(out))
    assert code == 0
    assert [c.is_passed for c in _cases(out).values()] == [True]


def test_the_gate_correction_is_the_gates_p_in_junit(runs, tmp_path: Path) -> None:
    """--gate-correction holm: the case shows the p the gate decided on, corrected over the primary family (rr@10
    does not change on any query: not counted, so Holm over 1)."""
    out = tmp_path / "junit.xml"
    gates = ["--fail-on", "relevance", "--fail-on", "rr@10", "--gate-correction", "holm"]
    code, _ = _compare(str(runs["base"]), str(runs["cand"]), *gates, "--junit", str(out))
    assert code == 3
    (failure,) = _cases(out)["positive relevance"].result
    assert "p = 0.01562, Holm over 1 < 0.05" in failure.message and "gate p = 0.01562" in failure.text


def test_report_and_compare_append_markdown_to_the_step_summary(runs, tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("# earlier step\n")
    env = {"GITHUB_STEP_SUMMARY": str(summary)}
    report = CliRunner().invoke(cli, ["report", str(runs["cand"]), "--format", "json"], env=env)
    assert report.exit_code == 0, report.output
    code, output = _compare(str(runs["base"]), str(runs["cand"]), env=env)
    assert code == 0 and f"appended the comparison to {summary}" in output
    text = summary.read_text()
    assert text.startswith("# earlier step\n")  # appended, never overwritten
    # the Markdown report (even though it printed JSON), then the comparison, each once
    assert text.count("## foundry-bridge report\n") == 1 and text.count("## foundry-bridge compare\n") == 1
    assert text.index("## foundry-bridge report") < text.index("## foundry-bridge compare")
    assert "| cand | 54/56 |" in text and "3.273 (-1.273" in text  # relevance 36/11 vs 50/11 (▼ only if significant)
    off = CliRunner().invoke(cli, ["report", str(runs["cand"])], env={**env, "FOUNDRY_BRIDGE_STEP_SUMMARY": "0"})
    assert off.exit_code == 0 and summary.read_text() == text


def test_a_step_summary_above_githubs_limit_is_cut_at_a_line(tmp_path: Path) -> None:
    summary = tmp_path / "s.md"
    line = "| q | " + "x" * 90 + " |\n"
    append_step_summary(line * (2 * STEP_SUMMARY_LIMIT // len(line)), env={"GITHUB_STEP_SUMMARY": str(summary)})
    data = summary.read_bytes()
    assert len(data) <= STEP_SUMMARY_LIMIT
    assert data.endswith(b"cut here to fit GitHub's 1 MiB step summary.\n")  # no claim where the rest is
    body = data.split(b"\n\n> foundry-bridge")[0].lstrip(b"\n")
    assert all(row == line.rstrip("\n").encode() for row in body.split(b"\n"))
    # the file is full: a second text in the same step adds nothing rather than break GitHub's limit
    append_step_summary("## more\n" * 1000, env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert summary.read_bytes() == data
    assert append_step_summary("x", env={}) is None


def test_a_cut_inside_a_details_block_closes_it_before_the_note(tmp_path: Path) -> None:
    """The cut lands among the rows of a collapsed block: the block is closed before the note, so the note and
    what later steps append render outside it."""
    summary = tmp_path / "s.md"
    env = {"GITHUB_STEP_SUMMARY": str(summary)}
    row = "| q | " + "x" * 90 + " |\n"
    rows = row * (2 * STEP_SUMMARY_LIMIT // len(row))
    append_step_summary(f"## report\n\n<details><summary>Every other metric</summary>\n\n{rows}\n</details>\n", env=env)
    data = summary.read_bytes()
    assert len(data) <= STEP_SUMMARY_LIMIT
    head, note = data.decode("utf-8").split("\n\n> foundry-bridge: cut here", 1)
    assert head.count("<details>") == head.count("</details>") == 1
    assert head.rstrip("\n").endswith("\n\n</details>")
    assert "</details>" not in note


def test_the_cut_note_says_where_the_full_report_is(runs, tmp_path: Path) -> None:
    """A summary already near GitHub's limit: the report is cut. With --out the full report is in that file (the
    job's output holds nothing of it); without, it is on the step's standard output."""
    summary = tmp_path / "s.md"
    env = {"GITHUB_STEP_SUMMARY": str(summary)}
    earlier = "# earlier step\n" + "e" * (STEP_SUMMARY_LIMIT - 3000) + "\n"
    summary.write_text(earlier)
    out = tmp_path / "r.md"
    written = CliRunner().invoke(cli, ["report", str(runs["cand"]), "--out", str(out)], env=env)
    assert written.exit_code == 0, written.output
    note = summary.read_text()[len(earlier) :].rsplit("\n\n> ", 1)[1]
    assert note.startswith("foundry-bridge: cut here") and str(out) in note and "output" not in note
    summary.write_text(earlier)
    printed = CliRunner().invoke(cli, ["report", str(runs["cand"])], env=env)
    assert printed.exit_code == 0 and printed.output.startswith("## foundry-bridge report")
    note = summary.read_text()[len(earlier) :].rsplit("\n\n> ", 1)[1]
    assert "standard output" in note and str(out) not in note


# What the junit-10 XSD (jenkinsci/xunit-plugin, model/xsd/junit-10.xsd; not vendored) allows: per element, its
# attributes (required ones first in the tuple's first set) and its child elements
_JUNIT10: dict[str, tuple[set[str], set[str], set[str]]] = {
    "testsuites": (set(), {"name", "time", "tests", "failures", "errors"}, {"testsuite"}),
    "testsuite": (
        {"name", "tests", "failures", "errors"},
        {"group", "time", "skipped", "timestamp", "hostname", "id", "package", "file", "log", "url"},
        {"testsuite", "properties", "testcase", "system-out", "system-err"},
    ),
    "testcase": (
        {"name"},
        {"time", "classname", "group"},
        {"skipped", "error", "failure", "system-out", "system-err"},
    ),
    "failure": (set(), {"type", "message"}, set()),
    "error": (set(), {"type", "message"}, set()),
    "skipped": (set(), {"type", "message"}, set()),
    "system-out": (set(), set(), set()),
}
_SUREFIRE_TIME = r"(([0-9]{0,3},)*[0-9]{3}|[0-9]{0,3})*(\.[0-9]*)?"


def _check_junit10(element, problems: list[str]) -> None:
    import re

    required, optional, children = _JUNIT10[element.tag]
    attrs = set(element.attrib)
    problems += [f"<{element.tag}> lacks {a}" for a in required - attrs]
    problems += [f"<{element.tag}> may not carry {a}" for a in attrs - required - optional]
    time = element.get("time") if element.tag in ("testsuites", "testsuite") else None
    if time is not None and not re.fullmatch(_SUREFIRE_TIME, time):
        problems.append(f"<{element.tag}> time {element.get('time')!r}")
    for child in element:
        if child.tag not in children:
            problems.append(f"<{child.tag}> inside <{element.tag}>")
        else:
            _check_junit10(child, problems)


def test_the_junit_file_is_valid_junit10_xml_whatever_the_run_folders_name(runs, tmp_path: Path) -> None:
    """A candidate folder named with control characters made the XML unparseable, and
    ``<testsuites>`` carried ``skipped``, which the junit-10 XSD allows only on ``<testsuite>``. Every case kind
    (failed, passed, skipped) is checked: the file parses and every element has only the XSD's attributes."""
    import shutil
    import xml.etree.ElementTree as ET

    cand = tmp_path / "cand\x1b]0;title\x07\x01\x9b"
    shutil.copytree(runs["cand"], cand)
    out = tmp_path / "junit.xml"
    gates = ["--fail-on", "relevance", "--fail-on", "negative:rr@10", "--allow-empty-gate", "--coverage-drop", "0"]
    code, output = _compare(str(runs["base"]), str(cand), *gates, "--min-paired", "5", "--junit", str(out))
    assert code == 3, output
    root = ET.parse(out).getroot()  # expat: a control character is not well-formed XML 1.0
    problems: list[str] = []
    _check_junit10(root, problems)
    assert problems == []
    kinds = {type(r).__name__ for case in _cases(out).values() for r in case.result}
    assert kinds >= {"Failure", "Skipped"}
    (suite,) = root
    assert "cand\\x1b]0;title\\x07\\x01\\x9b" in suite.get("name")  # the folder still named, escaped
    assert suite.get("skipped") == "1" and root.get("tests") == suite.get("tests")
