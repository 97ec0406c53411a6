"""compare's gates (issue #26, item 5): each --fail-on decided at its own α, the false-alarm rate across gates
stated, correction across gates an explicit choice; the exploratory family fixed by the metrics compared; a gate
that can never fire is an error; swapping baseline and candidate negates Δ and keeps p.

The runs differ on hand-chosen judge scores (tests/report_helpers): ``good`` has relevance 5 on seven positive
queries where ``bad`` has 3, so relevance regresses by 14/11 with exact sign-flip p = 2/2^7 = 0.0156; the local
measures are the same in both runs (p = 1).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from junitparser import JUnitXml, Skipped
from report_helpers import JUDGE_SCORES, write_run

from foundry_bridge.cli import cli
from foundry_bridge.errors import FoundryBridgeError, UsageError
from foundry_bridge.report import compare_runs, render_comparison_json, render_comparison_markdown

IMPROVED = ["q01", "q03", "q04", "q06", "q07", "q09", "q10"]
RAW_P = 2 / 128  # relevance's exact sign-flip p (+-2 on 7 queries, 0 on 4)
FOUR_GATES = ["relevance", "rr@10", "recall@10", "ndcg@10"]  # the three measures do not change on any query


def _scores(relevance: float) -> dict:
    scores = copy.deepcopy(JUDGE_SCORES)
    for q in IMPROVED:
        scores["relevance"][q] = relevance
    return scores


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("gates")
    return {"good": write_run(root / "good", scores=_scores(5)), "bad": write_run(root / "bad", scores=_scores(3))}


def _compare(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["compare", *args, "--resamples", "1000"], env={"GITHUB_STEP_SUMMARY": ""})
    if isinstance(result.exception, FoundryBridgeError):  # the console script's exit code (cli.main)
        return result.exception.exit_code, result.output, str(result.exception)
    return result.exit_code, result.output, ""


def test_adding_a_gate_never_weakens_an_existing_one_without_a_gate_correction(runs) -> None:
    alone = compare_runs([runs["good"], runs["bad"]], fail_on=["relevance"], judge_tests=False, gate_correction="none")
    assert alone.gate["failed"] and f"p = {RAW_P:.4g}, none (raw p) < 0.05" in alone.gate["reasons"][0]
    more = compare_runs([runs["good"], runs["bad"]], fail_on=FOUR_GATES, judge_tests=False, gate_correction="none")
    assert more.gate["failed"], "three more gates let the relevance regression through"
    assert more.gate["reasons"] == alone.gate["reasons"]  # the same line: the same p, decided at the same α
    # Holm across the gates (the default): a gate whose every paired difference is 0 cannot err, so it is not
    # counted in the primary family and does not weaken relevance's (Holm over 1, not 4 × 2/128 = 0.0625)
    holm = compare_runs([runs["good"], runs["bad"]], fail_on=FOUR_GATES, gate_correction="holm", judge_tests=False)
    assert holm.gate["failed"] and holm.primary_tests == 1
    (check,) = [c for c in holm.gate["checks"] if c["metric"] == "relevance"]
    assert check["p"] == pytest.approx(RAW_P) and check["p_gate"] == pytest.approx(RAW_P)
    assert check["verdict"] == "worse" == holm.get("bad", "relevance").verdict  # one verdict
    # the CLI: exit 3 with one gate or four, corrected or not
    good, bad = str(runs["good"]), str(runs["bad"])
    assert _compare(good, bad, "--fail-on", "relevance")[0] == 3
    four = [arg for gate in FOUR_GATES for arg in ("--fail-on", gate)]
    assert _compare(good, bad, *four, "--gate-correction", "none")[0] == 3
    assert _compare(good, bad, *four)[0] == 3


def test_the_false_alarm_rate_across_all_gates_is_stated(runs) -> None:
    cmp = compare_runs([runs["good"], runs["bad"]], fail_on=FOUR_GATES, judge_tests=False, gate_correction="none")
    assert cmp.gate["tests"] == 4 and cmp.gate["correction"] == "none"
    assert cmp.gate["false_alarm_rate"] == pytest.approx(0.2)  # union bound: m·α = 4 × 0.05
    statement = cmp.gate["false_alarm"]
    assert "4 gated tests" in statement and "≤ 0.2" in statement and "union bound" in statement
    (line,) = [ln for ln in render_comparison_markdown(cmp).splitlines() if "Gate" in ln]
    assert line.startswith("**Gate: FAILED** — 4 gated tests") and "≤ 0.2" in line and "union bound" in line
    assert json.loads(render_comparison_json(cmp))["gate"]["false_alarm"] == statement
    holm = compare_runs([runs["good"], runs["bad"]], fail_on=FOUR_GATES, gate_correction="holm", judge_tests=False)
    assert holm.gate["false_alarm_rate"] == pytest.approx(0.05) and "Holm" in holm.gate["false_alarm"]


def test_the_comparison_has_one_gate_line(runs) -> None:
    """The judges' rows are rows of the one table; the only gate is --fail-on's."""
    cmp = compare_runs([runs["good"], runs["bad"]], fail_on=["relevance"])
    assert any(m.metric == "relevance/pass" for m in cmp.metrics)
    md = render_comparison_markdown(cmp)
    assert [ln for ln in md.splitlines() if "Gate" in ln] == [next(ln for ln in md.splitlines() if "Gate" in ln)]


def test_a_gate_with_no_comparable_pair_is_a_usage_error(runs) -> None:
    """ndcg is undefined on every negative query (no relevant label): the gate could never fire."""
    never = r"--fail-on negative:ndcg@10: bad has no negative query with ndcg@10 .* --allow-empty-gate"
    with pytest.raises(UsageError, match=never):
        compare_runs([runs["good"], runs["bad"]], fail_on=["negative:ndcg@10"], judge_tests=False)
    code, _, message = _compare(str(runs["good"]), str(runs["bad"]), "--fail-on", "negative:ndcg@10")
    assert code == 2 and "could never fire" in message
    # fewer paired queries than --min-paired: no test, so no decision either (3 negative queries)
    with pytest.raises(UsageError, match=r"bad has only 3 negative queries with distracting@10 .* --min-paired 10"):
        compare_runs([runs["good"], runs["bad"]], fail_on=["negative:distracting@10"], judge_tests=False)
    allowed = compare_runs(
        [runs["good"], runs["bad"]], fail_on=["negative:ndcg@10"], allow_empty_gate=True, judge_tests=False
    )
    assert allowed.gate["checked"] and not allowed.gate["failed"]
    (check,) = allowed.gate["checks"]
    assert check["outcome"] == "skipped" and "no negative query" in check["reason"]


def test_an_allowed_empty_gate_is_a_skipped_junit_case(runs, tmp_path: Path) -> None:
    out = tmp_path / "junit.xml"
    good, bad = str(runs["good"]), str(runs["bad"])
    code, output, _ = _compare(good, bad, "--fail-on", "negative:ndcg@10", "--allow-empty-gate", "--junit", str(out))
    assert code == 0, output
    xml = JUnitXml.fromfile(str(out))
    cases = {case.name: case for suite in xml for case in suite}
    (skipped,) = cases["negative ndcg@10"].result
    assert isinstance(skipped, Skipped) and "no negative query with ndcg@10" in skipped.message
    assert xml.skipped == 1 and xml.failures == 0


def test_swapping_baseline_and_candidate_negates_delta_and_keeps_p(runs) -> None:
    """Every test is symmetric: Wilcoxon and McNemar by their two-sided tails, the sign-flip by its random stream
    keyed by the two runs unordered (its Monte Carlo path: test_compare_engine's negated differences)."""
    forth = compare_runs([runs["good"], runs["bad"]], n_resamples=100)
    back = compare_runs([runs["bad"], runs["good"]], n_resamples=100)
    assert forth.get("bad", "relevance").n_informative == 7
    assert len(forth.metrics) == len(back.metrics) > 10
    for a in forth.metrics:
        b = back.get("good", a.metric, a.section)
        assert (a.p_value, a.p_adjusted, a.n_paired) == (b.p_value, b.p_adjusted, b.n_paired), a.metric
        assert a.delta == (None if b.delta is None else -b.delta), a.metric
        if a.ci_low is not None:
            assert (a.ci_low, a.ci_high) == pytest.approx((-b.ci_high, -b.ci_low)), a.metric


def test_the_exploratory_family_does_not_depend_on_the_columns_shown_or_the_gates(runs) -> None:
    pair = [runs["good"], runs["bad"]]
    every = compare_runs(pair, judge_tests=False).get("bad", "relevance")
    shown = compare_runs(pair, metrics=["relevance", "rr@10"], judge_tests=False)
    assert shown.get("bad", "relevance").p_adjusted == every.p_adjusted
    assert {m.metric for m in shown.metrics} == {"relevance", "rr@10"}  # --metric still chooses what is shown
    assert shown.exploratory_tests == compare_runs(pair, judge_tests=False).exploratory_tests
    gated = compare_runs(pair, fail_on=["rr@10", "groundedness"], judge_tests=False).get("bad", "relevance")
    assert gated.p_adjusted == every.p_adjusted


def test_a_float_option_without_bounds_shows_no_range() -> None:
    result = CliRunner().invoke(cli, ["metrics", "--help"], terminal_width=200)
    assert result.exit_code == 0 and "--surface-threshold" in result.output
    assert "None" not in result.output
