"""compare: paired tests over queries, CI, got-worse lists, queries in one run only, the CI gate (exit 3)."""

from __future__ import annotations

import copy
import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from report_helpers import ERROR, JUDGE_SCORES, write_run

from foundry_bridge.cli import cli, main
from foundry_bridge.errors import UsageError
from foundry_bridge.report import compare_runs, parse_fail_on, render_comparison_markdown
from foundry_bridge.report._stats import paired_generator, sign_flip_test

IMPROVED = ["q01", "q03", "q04", "q06", "q07", "q09", "q10"]  # 7 positive queries


def _scores(relevance_on_improved: float) -> dict:
    scores = copy.deepcopy(JUDGE_SCORES)
    for q in IMPROVED:
        scores["relevance"][q] = relevance_on_improved
    return scores


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("compare")
    return {
        "base": write_run(root / "base", scores=_scores(3)),
        "same": write_run(root / "same", scores=_scores(3)),
        "better": write_run(root / "better", scores=_scores(5)),
    }


def test_a_candidate_better_on_a_subset_is_significantly_better(runs) -> None:
    cmp = compare_runs([runs["base"], runs["better"]], correction="none")  # the raw test's decision
    rel = cmp.get("better", "relevance")
    # differences: +2 on 7 queries, 0 on 4 → exact sign-flip p = 2 / 2^7 (all-plus and all-minus)
    assert rel.n_paired == 11 and (rel.wins, rel.ties, rel.losses) == (7, 4, 0)
    assert rel.delta == pytest.approx(14 / 11)
    assert rel.p_value == pytest.approx(2 / 128)
    assert rel.test.startswith("exact")
    assert rel.significant and rel.verdict == "better"
    assert 0 < rel.ci_low <= rel.delta <= rel.ci_high <= 2
    assert rel.got_worse == []
    # what did not change is not reported as changed
    assert cmp.get("better", "groundedness").verdict == "no significant change"
    assert cmp.get("better", "rr@10").p_value == 1.0
    assert (cmp.gate["checked"], cmp.gate["failed"], cmp.gate["reasons"], cmp.gate["checks"]) == (False, False, [], [])


@pytest.mark.parametrize(("correction", "method"), [("holm", "holm"), ("bh", "fdr_bh")])
def test_the_family_is_corrected_as_statsmodels_does_and_the_gate_decides_apart(runs, correction, method):
    from statsmodels.stats.multitest import multipletests

    cmp = compare_runs([runs["base"], runs["same"], runs["better"]], correction=correction, fail_on=["relevance"])
    ran = [m for m in cmp.metrics if m.p_value is not None and m.n_paired >= 10]
    assert len(ran) == cmp.exploratory_tests > 10  # one family: every test, gated or not
    expected = multipletests([m.p_value for m in ran], alpha=0.05, method=method)
    assert [m.p_adjusted for m in ran] == pytest.approx(list(expected[1]))
    assert [m.significant for m in ran] == [bool(r) and m.delta != 0 for r, m in zip(expected[0], ran, strict=True)]
    # the raw p is under α, the corrected one is not: no significant change among all these tests
    rel = cmp.get("better", "relevance")
    assert rel.p_value == pytest.approx(2 / 128) and rel.p_adjusted > 0.05
    assert rel.verdict == "no significant change"
    # the gate decides each --fail-on at α on its own p: relevance regressed, and so does the exit
    back = compare_runs([runs["better"], runs["base"]], correction=correction, fail_on=["relevance"], coverage_drop=1.0)
    assert back.gate["failed"] and "p = 0.01562 < 0.05; tolerated 0" in back.gate["reasons"][0]
    # ... or on its p corrected across the gate's tests (2 candidates × relevance) when asked to
    three = [runs["base"], runs["same"], runs["better"]]
    gated = compare_runs(three, fail_on=["relevance"], gate_correction=correction)
    checks = gated.gate["checks"]
    assert [c["p"] for c in checks] == pytest.approx([1.0, 2 / 128])
    assert [c["p_gate"] for c in checks] == pytest.approx(list(multipletests([1.0, 2 / 128], method=method)[1]))
    small = [m for m in cmp.metrics if 0 < m.n_paired < 10]
    assert small and all(m.verdict == "too few paired queries" and m.p_adjusted is None for m in small)


def test_the_reverse_direction_is_worse_and_lists_the_queries(runs) -> None:
    cmp = compare_runs([runs["better"], runs["base"]], fail_on=["relevance"], correction="none")
    rel = cmp.get("base", "relevance")
    assert rel.verdict == "worse" and rel.delta == pytest.approx(-14 / 11)
    assert sorted(g["query_id"] for g in rel.got_worse) == sorted(IMPROVED)
    assert rel.got_worse[0] == {"query_id": rel.got_worse[0]["query_id"], "baseline": 5.0, "candidate": 3.0}
    assert cmp.gate["failed"] and "relevance regressed" in cmp.gate["reasons"][0]
    tolerant = compare_runs([runs["better"], runs["base"]], fail_on=["relevance:1.5"])
    assert not tolerant.gate["failed"]


def test_identical_runs_show_no_difference(runs) -> None:
    cmp = compare_runs([runs["base"], runs["same"]], fail_on=["relevance", "rr@10"])
    assert cmp.metrics
    for m in cmp.metrics:
        assert m.verdict in ("no significant change", "too few paired queries", "not comparable"), m
        assert m.losses == 0 and m.wins == 0
        if m.n_paired:
            assert m.p_value == 1.0 and m.delta == 0
    assert cmp.gate["checked"] and not cmp.gate["failed"]


def test_a_query_in_one_run_only_is_reported(runs, tmp_path: Path) -> None:
    fewer = write_run(
        tmp_path / "fewer", scores=_scores(3), edit_records=lambda rs: [r for r in rs if r.query_id != "q11"]
    )
    cmp = compare_runs([runs["base"], fewer])
    q = cmp.queries[0]
    assert q.only_in_baseline == ["q11"] and q.only_in_candidate == []
    assert cmp.get("fewer", "relevance").n_paired == 10
    md = render_comparison_markdown(cmp)
    assert "Only in base: q11" in md
    assert any("only in base" in w for w in cmp.warnings)
    # coverage is measured over the baseline's queries: the lost query counts as not scored
    gated = compare_runs([runs["base"], fewer], coverage_drop=0.0)
    change = next(c for c in gated.coverage if c.metric == "groundedness")
    assert change.baseline == pytest.approx(13 / 14) and change.candidate_coverage == pytest.approx(12 / 14)
    assert gated.gate["failed"]
    assert not compare_runs([runs["base"], runs["same"]], coverage_drop=0.0).gate["failed"]


def test_a_candidate_in_another_order_pairs_by_query_id(runs, tmp_path: Path) -> None:
    """The same queries in reverse order (paired by id, not row by row) give the aligned candidate's numbers."""
    reordered = write_run(tmp_path / "reordered", scores=_scores(5), edit_records=lambda rs: rs[::-1])
    aligned = compare_runs([runs["base"], runs["better"]], labels=["base", "cand"])
    shuffled = compare_runs([runs["base"], reordered], labels=["base", "cand"])
    assert len(aligned.metrics) == len(shuffled.metrics) > 10
    for a, b in zip(aligned.metrics, shuffled.metrics, strict=True):
        assert a.model_dump() == b.model_dump(), a.metric
    assert [c.model_dump() for c in shuffled.coverage] == [c.model_dump() for c in aligned.coverage]
    assert shuffled.queries[0].only_in_baseline == shuffled.queries[0].only_in_candidate == []
    assert aligned.judge_tests is not None and shuffled.judge_tests is not None
    assert shuffled.judge_tests.rows == aligned.judge_tests.rows


def test_a_repeated_query_id_pairs_by_its_last_row(runs, tmp_path: Path) -> None:
    """A candidate holding one query twice is paired on its last copy, as a dict built in row order would be."""

    def repeat_q01(rs: list) -> list:
        first = next(r for r in rs if r.query_id == "q01")
        return [first.model_copy(update={"response": "an older answer"}), *rs]

    twice = write_run(tmp_path / "twice", scores=_scores(5), edit_records=repeat_q01)
    once = compare_runs([runs["base"], runs["better"]], labels=["base", "cand"])
    repeated = compare_runs([runs["base"], twice], labels=["base", "cand"])
    for a, b in zip(once.metrics, repeated.metrics, strict=True):
        assert (a.n_paired, a.delta, a.p_value, a.wins, a.losses) == (b.n_paired, b.delta, b.p_value, b.wins, b.losses)


def test_errored_scores_are_excluded_from_pairs_and_coverage_drop_fails_the_gate(runs, tmp_path: Path) -> None:
    scores = _scores(3)
    scores["relevance"]["q01"] = ERROR
    worse_cov = write_run(tmp_path / "cov", scores=scores)
    cmp = compare_runs([runs["base"], worse_cov], coverage_drop=0.0)
    rel = cmp.get("cov", "relevance")
    assert (rel.n_paired, rel.n_excluded) == (10, 1)  # q01 errored in the candidate: left out, counted
    change = next(c for c in cmp.coverage if c.metric == "relevance")
    assert change.baseline == pytest.approx(13 / 14) and change.candidate_coverage == pytest.approx(12 / 14)
    assert cmp.gate["failed"] and "coverage of relevance dropped" in cmp.gate["reasons"][0]
    assert not compare_runs([runs["base"], worse_cov], coverage_drop=0.1).gate["failed"]


def test_sweep_table_for_several_candidates(runs) -> None:
    cmp = compare_runs([runs["base"], runs["same"], runs["better"]], correction="none")
    md = render_comparison_markdown(cmp)
    sweep = md.split("### Sweep")[1].split("\n\n")[1].splitlines()
    assert [row.split("|")[1].strip() for row in sweep[2:]] == ["base", "same", "better"]
    better_row = sweep[4]
    assert "(+1.273 ▲)" in better_row  # relevance mean delta, significant
    assert cmp.candidates == ["same", "better"]


def test_compare_cli_exit_codes(runs) -> None:
    runner = CliRunner()
    ok = runner.invoke(
        cli, ["compare", str(runs["base"]), str(runs["better"]), "--format", "json"], catch_exceptions=False
    )
    assert ok.exit_code == 0
    data = json.loads(ok.output)
    assert data["test"].startswith("paired sign-flip randomization") and data["seed"] == 42
    with pytest.raises(SystemExit) as exc:
        main(["compare", str(runs["better"]), str(runs["base"]), "--fail-on", "relevance", "--correction", "none"])
    assert exc.value.code == 3
    with pytest.raises(SystemExit) as exc:  # one metric shown: the gate's p is the raw p
        main(["compare", str(runs["better"]), str(runs["base"]), "--metric", "relevance", "--fail-on", "relevance"])
    assert exc.value.code == 3
    with pytest.raises(SystemExit) as exc:  # every metric shown: the same gate, the same p
        main(["compare", str(runs["better"]), str(runs["base"]), "--fail-on", "relevance", "--coverage-drop", "1"])
    assert exc.value.code == 3
    with pytest.raises(SystemExit) as exc:
        main(["compare", str(runs["base"]), str(runs["better"]), "--fail-on", "relevance"])
    assert exc.value.code == 0
    with pytest.raises(SystemExit) as exc:
        main(["compare", str(runs["base"]), str(runs["better"]), "--fail-on", "relevanse"])
    assert exc.value.code == 2


def test_unknown_metric_has_a_did_you_mean(runs) -> None:
    with pytest.raises(UsageError, match="did you mean 'relevance'"):
        compare_runs([runs["base"], runs["same"]], metrics=["Relevance"])


def test_parse_fail_on() -> None:
    assert parse_fail_on("rr@10") == ("positive", "rr@10", 0.0)
    assert parse_fail_on("groundedness:0.2") == ("positive", "groundedness", 0.2)
    assert parse_fail_on("negative:document_retrieval/ndcg@3:0.1") == ("negative", "document_retrieval/ndcg@3", 0.1)


# -- the statistics, against independent computations ------------------------------------------------------------
def _exact_by_enumeration(d: list[float]) -> float:
    obs = abs(sum(d) / len(d))
    hits = total = 0
    for signs in itertools.product((1, -1), repeat=len(d)):
        total += 1
        hits += abs(sum(s * x for s, x in zip(signs, d, strict=True)) / len(d)) >= obs - 1e-12
    return hits / total


def test_exact_sign_flip_matches_brute_force_enumeration() -> None:
    d = [0.5, -0.25, 1.0, 0.0, 0.75, 0.5, -0.1, 0.3]
    p, method = sign_flip_test(d, rng=paired_generator(1, "x"))
    assert method.startswith("exact")
    assert p == pytest.approx(_exact_by_enumeration(d))


def test_exact_sign_flip_matches_scipy() -> None:
    stats = pytest.importorskip("scipy.stats")
    d = np.array([0.3, 0.1, -0.2, 0.4, 0.25, 0.05, 0.6, -0.05, 0.2])
    ref = stats.permutation_test((d,), np.mean, permutation_type="samples", n_resamples=np.inf).pvalue
    p, _ = sign_flip_test(d, rng=paired_generator(1, "x"))
    assert p == pytest.approx(ref)


def test_monte_carlo_sign_flip_is_seeded_and_close_to_exact() -> None:
    rng = np.random.default_rng(7)
    d = rng.normal(0.2, 1.0, size=16)
    exact = _exact_by_enumeration(list(d))
    p1, method = sign_flip_test(d, n_resamples=4000, rng=paired_generator(42, "m"))
    p2, _ = sign_flip_test(d, n_resamples=4000, rng=paired_generator(42, "m"))
    assert method.startswith("Monte Carlo") and p1 == p2
    assert abs(p1 - exact) < 0.03


def test_the_delta_interval_is_students_t_at_a_few_queries(runs) -> None:
    """11 paired queries: Δ ± t₁₀·s/√11 (s with the n − 1 divisor), as scipy computes it — not a percentile
    bootstrap, ≈ 18 % narrower at this n; a metric equal on every query keeps a zero-width interval (constant data)."""
    from scipy import stats

    rel = compare_runs([runs["base"], runs["better"]]).get("better", "relevance")
    d = np.array([2.0] * 7 + [0.0] * 4)
    expected = stats.t.interval(0.95, d.size - 1, loc=d.mean(), scale=stats.sem(d))
    assert (rel.ci_low, rel.ci_high) == pytest.approx(expected, rel=1e-9)
    same = compare_runs([runs["base"], runs["same"]]).get("same", "relevance")
    assert (same.ci_low, same.ci_high) == (0.0, 0.0)


def test_judge_metrics_are_also_tested_by_their_kind(runs) -> None:
    """The McNemar / Wilcoxon family (report._family, checked against statsmodels and scipy in
    test_compare_family.py) rides along in compare: pass/fail rows by McNemar, scores by Wilcoxon, named."""
    from scipy.stats import wilcoxon

    cmp = compare_runs([runs["base"], runs["better"]])
    assert cmp.judge_tests is not None
    relevance = {r.test.split()[0]: r for r in cmp.judge_tests.rows if r.metric == "relevance"}
    assert set(relevance) == {"Wilcoxon", "McNemar"}  # the score, and the pass/fail verdict
    # relevance +2 on 7 of 11 positive queries, 0 on 4: scipy's Wilcoxon on the same differences
    expected = wilcoxon([2] * 7 + [0] * 4, zero_method="wilcox").pvalue
    assert relevance["Wilcoxon"].p == pytest.approx(expected) and relevance["Wilcoxon"].n == 11
    assert "Judge metrics by their kind's test" in render_comparison_markdown(cmp)
    assert compare_runs([runs["base"], runs["better"]], judge_tests=False).judge_tests is None
