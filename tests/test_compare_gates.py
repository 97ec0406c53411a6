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
import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from junitparser import JUnitXml, Skipped
from report_helpers import JUDGE_SCORES, write_run
from scipy import stats
from statsmodels.stats.power import TTestPower

from foundry_bridge.cli import cli
from foundry_bridge.comparison import compare_runs, render_comparison_json, render_comparison_markdown
from foundry_bridge.errors import FoundryBridgeError, UsageError

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
        assert a.delta == (None if b.delta is None else pytest.approx(-b.delta, rel=1e-9, abs=1e-12)), a.metric
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


# Gates people write (issue #36, item 2): floors, lost queries, inconclusive, a gate file. The run files: 35
# queries with one relevant document each; the baseline ranks it first, except q34 (rank 8: nothing relevant in
# its top 5); the candidate ranks it 7th on q00–q03 (LOST: out of the top 5), 3rd on q04 (still in the top 5), as
# the baseline elsewhere. By hand: lost@5 = 4 of 34 eligible; recall@5 is 1 on 30 queries, 0 on five (mean 30/35);
# recall@5's paired differences are −1 on four queries, 0 on 31.

LOST = ["q00", "q01", "q02", "q03"]
N = 35


def _files(tmp_path: Path) -> tuple[Path, Path, Path]:
    qrels, a, b = tmp_path / "qrels.txt", tmp_path / "a.trec", tmp_path / "b.trec"
    qrels.write_text("".join(f"q{i:02d} 0 rel{i} 1\n" for i in range(N)), encoding="utf-8")
    for path, rank in ((a, {34: 8}), (b, {34: 8, 0: 7, 1: 7, 2: 7, 3: 7, 4: 3})):
        lines = []
        for i in range(N):
            docs = [f"x{i}_{r}" for r in range(9)]
            docs.insert(rank.get(i, 1) - 1, f"rel{i}")
            lines += [f"q{i:02d} Q0 {d} {r + 1} {20 - r} sys\n" for r, d in enumerate(docs)]
        path.write_text("".join(lines), encoding="utf-8")
    return qrels, a, b


def _cli(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["compare", *args], env=env or {"GITHUB_STEP_SUMMARY": ""})
    if isinstance(result.exception, FoundryBridgeError):  # the console script's exit code and message (cli.main)
        return result.exception.exit_code, result.output + str(result.exception)
    return result.exit_code, result.output


def _gate(tmp_path: Path, *gates: str, **options) -> dict:
    from foundry_bridge.comparison import compare_run_files

    qrels, a, b = _files(tmp_path)
    cmp = compare_run_files(qrels, [a, b], metrics=["rr@5"], fail_on=list(gates), **options)
    return cmp.gate


def _recall5() -> np.ndarray:
    return np.array([0.0] * 4 + [1.0] * 30 + [0.0])  # q00–q03 lost, q34 never in the top 5


def test_a_floor_on_the_interval_passes_fails_or_is_inconclusive_with_the_queries_needed(tmp_path: Path) -> None:
    v = _recall5()
    mean, se = v.mean(), v.std(ddof=1) / np.sqrt(N)
    low, high = mean - stats.t.ppf(0.975, N - 1) * se, mean + stats.t.ppf(0.975, N - 1) * se
    assert low < 0.8 < mean < 0.9 < high < 0.99  # the floors below sit where the hand-computed interval puts them
    gate = _gate(tmp_path, "recall@5>=0.7", "recall@5 >= 0.9", "recall@5>=0.99", "recall@5<1")
    passed, straddles, failed, below = gate["checks"]
    assert [c["kind"] for c in gate["checks"]] == ["floor"] * 4
    assert passed["estimate"] == pytest.approx(30 / 35, rel=1e-12)
    assert (passed["low"], passed["high"]) == pytest.approx((low, high), rel=1e-9)
    assert passed["outcome"] == "passed" and "the whole interval is >= 0.7" in passed["reason"]
    assert failed["outcome"] == "failed" and "none of the interval is >= 0.99" in failed["reason"]
    assert below["outcome"] == "passed"  # a ceiling: the whole interval is < 1
    need = math.ceil(TTestPower().solve_power(effect_size=(0.9 - mean) / v.std(ddof=1), alpha=0.05, power=0.8))
    assert straddles["outcome"] == "inconclusive" and straddles["queries_needed"] == need
    assert straddles["reason"] == (
        f"b: recall@5 >= 0.9 is undecided on the 95% interval: mean {mean:.4g} [{low:.4g}, {high:.4g}] over 35 "
        f"queries; the interval straddles 0.9: too few queries to tell the mean from the floor (need {need} queries)"
    )
    assert gate["failed"] and gate["reasons"] == [failed["reason"]] and gate["inconclusive"] == [straddles["reason"]]


def test_a_floor_s_interval_is_cut_to_a_0_1_metric_s_range(tmp_path: Path) -> None:
    """a as the candidate: recall@5 is 1 on 34 queries and 0 on q34 (rank 8), so Student's interval reaches past 1."""
    from foundry_bridge.comparison import compare_run_files

    v = np.array([1.0] * 34 + [0.0])
    low, high = stats.t.interval(0.95, N - 1, loc=v.mean(), scale=v.std(ddof=1) / np.sqrt(N))
    assert 0.9 < low < 1.0 < high  # by hand: 0.9714 ± 2.032 · 0.0286
    qrels, a, b = _files(tmp_path)
    gate = compare_run_files(qrels, [b, a], metrics=["rr@5"], fail_on=["recall@5>=0.9", "recall@5<=1"]).gate
    floor, ceiling = gate["checks"]
    assert (floor["low"], floor["high"]) == (pytest.approx(low, rel=1e-9), 1.0)
    assert floor["outcome"] == "passed" and "cut to the metric's range [0, 1]" in floor["reason"]
    assert f"[{low:.4g}, 1]" in floor["reason"]
    # a ceiling at the top of the range holds: uncut, the interval would straddle 1 (inconclusive)
    assert ceiling["outcome"] == "passed" and ceiling["high"] == 1.0
    # a metric without a declared range keeps Student's interval as it is
    from foundry_bridge.comparison._gates import decide_floor, parse_condition

    spec = parse_condition("distracting@5>=0")
    assert spec is not None
    kept = decide_floor(spec, "a", v, on="interval", confidence=0.95, min_n=2)
    assert (kept["low"], kept["high"]) == pytest.approx((low, high), rel=1e-9) and "cut to" not in kept["reason"]


def test_a_floor_on_the_estimate_decides_on_the_mean_alone_and_says_so(tmp_path: Path) -> None:
    gate = _gate(tmp_path, "recall@5>=0.85", "recall@5>=0.9", floor_on="estimate")
    above, under = gate["checks"]  # 30/35 = 0.857
    assert above["outcome"] == "passed" and "holds on the point estimate: mean 0.8571" in above["reason"]
    assert under["outcome"] == "failed" and "fails on the point estimate" in under["reason"]
    assert (above["on"], under["on"]) == ("estimate", "estimate")
    on_interval = _gate(tmp_path, "recall@5>=0.85")["checks"][0]
    assert on_interval["outcome"] == "inconclusive" and on_interval["on"] == "interval"


def test_lost_queries_are_counted_by_hand_and_named(tmp_path: Path) -> None:
    gate = _gate(tmp_path, "lost@5<=0", "lost@5 <= 4", "lost@5<4", "lost@3<=0")
    none_allowed, four, under_four, at3 = gate["checks"]
    assert (none_allowed["lost"], none_allowed["eligible"], none_allowed["lost_ids"]) == (4, 34, LOST)
    assert none_allowed["outcome"] == "failed" and none_allowed["reason"] == (
        "b: lost@5 <= 0 fails: 4 of 34 queries with a relevant document in a's top 5 have none in b's "
        "(q00, q01, q02, q03)"
    )
    assert four["outcome"] == "passed" and under_four["outcome"] == "failed"
    assert at3["lost"] == 4 and at3["eligible"] == 34  # q04 at rank 3 is still in the top 3


def test_a_relative_gate_too_weak_to_see_the_change_is_inconclusive_naming_the_queries_needed(tmp_path: Path) -> None:
    d = _recall5() - np.where(np.arange(N) == 34, 0.0, 1.0)  # candidate − baseline: −1 on q00–q03, 0 elsewhere
    sd = d.std(ddof=1)
    mde = sd * TTestPower().solve_power(nobs=N, alpha=0.05, power=0.8)
    need = math.ceil(TTestPower().solve_power(effect_size=4 / 35 / sd, alpha=0.05, power=0.8))
    (check,) = _gate(tmp_path, "recall@5")["checks"]
    assert check["p"] == 2 / 2**4  # 4 informative queries: the smallest two-sided p, above α
    assert check["outcome"] == "inconclusive"
    assert f"the observed |Δ| {4 / 35:.4g} (4 queries worse) is below the |Δ| ≥ {mde:.4g}" in check["reason"]
    assert check["reason"].endswith(f"inconclusive (need {need} paired queries)")
    (unchanged,) = _gate(tmp_path, "hit@10")["checks"]  # every relevant document stays in the top 10
    assert unchanged["outcome"] == "passed" and unchanged["p"] == 1.0


def test_every_output_carries_the_gates_one_line_and_the_exit_codes(tmp_path: Path) -> None:
    qrels, a, b = _files(tmp_path)
    summary, junit, js = tmp_path / "summary.md", tmp_path / "junit.xml", tmp_path / "c.json"
    base = ["--qrels", str(qrels), str(a), str(b), "--metric", "rr@5"]
    env = {"GITHUB_STEP_SUMMARY": str(summary)}
    code, text = _cli(*base, "--fail-on", "lost@5<=0", "--fail-on", "recall@5>=0.7", "--format", "text", "--junit",
                      str(junit), env=env)  # fmt: skip
    assert code == 3
    reason = (
        "b: lost@5 <= 0 fails: 4 of 34 queries with a relevant document in a's top 5 have none in b's "
        "(q00, q01, q02, q03)"
    )
    assert f"- {reason}" in text.splitlines()
    assert f"- {reason.replace('>', '&gt;').replace('<', '&lt;')}" in summary.read_text(encoding="utf-8")
    cases = {case.name: case for suite in JUnitXml.fromfile(str(junit)) for case in suite}
    (failure,) = cases["positive lost@5 <= 0"].result
    assert failure.message == reason and not cases["positive recall@5 >= 0.7"].result
    code, _ = _cli(*base, "--fail-on", "lost@5<=0", "--format", "json", "--out", str(js))
    checks = json.loads(js.read_text(encoding="utf-8"))["gate"]["checks"]
    assert code == 3 and checks[0]["reason"] == reason and checks[0]["kind"] == "lost"
    assert _cli(*base, "--fail-on", "recall@5>=0.7")[0] == 0
    code, message = _cli(*base, "--fail-on", "recall@5>=0.9", "--junit", str(junit))
    assert code == 4 and "recall@5 >= 0.9 is undecided" in message
    (error,) = {case.name: case for s in JUnitXml.fromfile(str(junit)) for case in s}["positive recall@5 >= 0.9"].result
    assert error.message.startswith("b: recall@5 >= 0.9 is undecided") and error._tag == "error"
    assert _cli(*base, "--fail-on", "recall@5>=0.85", "--floor-on", "estimate")[0] == 0
    assert _cli(*base, "--fail-on", "recall@5")[0] == 4
    code, message = _cli(*base, "--fail-on", "lost@5>=1")
    assert code == 2 and "write lost@K<=N" in message


def test_a_gate_file_holds_several_gates_and_its_errors_are_located(tmp_path: Path) -> None:
    qrels, a, b = _files(tmp_path)
    good = tmp_path / "gates.yaml"
    good.write_text(
        "alpha: 0.05\ngates:\n  - rr@5\n  - gate: recall@5 >= 0.85\n    floor_on: estimate\n  - lost@5 <= 4\n",
        encoding="utf-8",
    )
    js = tmp_path / "c.json"
    code, _ = _cli("--qrels", str(qrels), str(a), str(b), "--gates", str(good), "--format", "json", "--out", str(js))
    checks = json.loads(js.read_text(encoding="utf-8"))["gate"]["checks"]
    assert [(c["kind"], c["gate"], c["outcome"]) for c in checks] == [
        ("relative", "rr@5", "inconclusive"),  # −1 on q00–q03, −2/3 on q04: p = 2/2^5, too few to decide
        ("floor", "recall@5 >= 0.85", "passed"),  # the estimate 30/35 = 0.857
        ("lost", "lost@5 <= 4", "passed"),
    ]
    assert checks[1]["on"] == "estimate" and code == 4
    code, message = _cli("--qrels", str(qrels), str(a), str(b), "--gates", str(good), "--alpha", "0.01")
    assert code == 2 and "--alpha 0.01 and" in message and "alpha: 0.05 differ" in message
    typo = tmp_path / "typo.yaml"
    typo.write_text("gates:\n  - rr@5\n  - gate: recall@5 >= 0.9\n    floor_onn: estimate\n", encoding="utf-8")
    code, message = _cli("--qrels", str(qrels), str(a), str(b), "--gates", str(typo))
    assert code == 1 and f"{typo}:4: gates[1].floor_onn: unknown key 'floor_onn'" in message
    assert "did you mean 'floor_on'" in message
    unknown = tmp_path / "unknown.yaml"
    unknown.write_text("gates:\n  - rr@5\n  - recal@5 >= 0.9\n", encoding="utf-8")
    code, message = _cli("--qrels", str(qrels), str(a), str(b), "--gates", str(unknown))
    assert code == 2 and f"{unknown}:3: gates[1]: gate 'recal@5' is not a metric of every run" in message
    assert "did you mean 'recall@10'" in message  # --qrels computes the measures named: recall@10 by default
    bad = tmp_path / "bad.yaml"
    bad.write_text("alpha: 2\ngates: [rr@5]\n", encoding="utf-8")
    code, message = _cli("--qrels", str(qrels), str(a), str(b), "--gates", str(bad))
    assert code == 1 and f"{bad}:1: alpha: alpha must be a number in (0, 1)" in message and "fix:" in message


def test_a_floor_on_a_run_folder_reads_the_candidates_judge_scores(runs) -> None:
    """bad's relevance on the eleven positive queries (report_helpers' JUDGE_SCORES, IMPROVED set to 3)."""
    v = np.array([3, 5, 3, 3, 2, 3, 3, 3, 3, 3, 5], dtype=float)  # q01 … q11
    low, high = stats.t.interval(0.95, v.size - 1, loc=v.mean(), scale=v.std(ddof=1) / np.sqrt(v.size))
    cmp = compare_runs([runs["good"], runs["bad"]], fail_on=["relevance>=2.5", "relevance >= 3"], judge_tests=False)
    clears, straddles = cmp.gate["checks"]
    assert clears["estimate"] == pytest.approx(36 / 11, rel=1e-12) and clears["n"] == 11
    assert (clears["low"], clears["high"]) == pytest.approx((low, high), rel=1e-9)
    assert clears["outcome"] == "passed" and straddles["outcome"] == "inconclusive"
