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
from foundry_bridge.comparison import compare_runs, parse_fail_on, render_comparison_markdown
from foundry_bridge.errors import UsageError
from foundry_bridge.metrics.significance import paired_generator, sign_flip_test

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
    # differences: +2 on 7 queries, 0 on 4 → Wilcoxon (a judge's ordinal score), exact over the 2^7 sign flips of
    # the 7 tied ranks: p = 2 / 2^7 (all-plus and all-minus)
    assert rel.n_paired == 11 and (rel.wins, rel.ties, rel.losses) == (7, 4, 0)
    assert rel.delta == pytest.approx(14 / 11)
    assert rel.p_value == pytest.approx(2 / 128)
    assert rel.test.startswith("Wilcoxon signed-rank") and rel.kind == "ordinal"
    assert rel.significant and rel.verdict == "better"
    assert 0 < rel.ci_low <= rel.delta <= rel.ci_high <= 2
    assert rel.got_worse == []
    # what did not change is not reported as changed
    assert cmp.get("better", "groundedness").verdict == "no significant change"
    assert cmp.get("better", "rr@10").p_value == 1.0
    assert (cmp.gate["checked"], cmp.gate["failed"], cmp.gate["reasons"], cmp.gate["checks"]) == (False, False, [], [])


@pytest.mark.parametrize(("correction", "method"), [("holm", "holm"), ("bh", "fdr_bh")])
def test_the_two_families_are_corrected_as_statsmodels_does_and_the_gate_is_the_primary_verdict(
    runs, correction, method
):
    from statsmodels.stats.multitest import multipletests

    cmp = compare_runs([runs["base"], runs["same"], runs["better"]], correction=correction, fail_on=["relevance"])
    ran = [m for m in cmp.metrics if m.p_value is not None and m.n_paired >= 10 and m.n_informative]
    assert [m for m in cmp.metrics if m.in_family] == ran
    primary = [m for m in ran if m.family == "primary"]
    secondary = [m for m in ran if m.family == "secondary"]
    assert [(m.candidate, m.metric) for m in primary] == [("better", "relevance")]  # "same" has no informative pair
    assert (len(secondary), len(primary)) == (cmp.exploratory_tests, cmp.primary_tests)
    zeros = [m for m in cmp.metrics if m.p_value == 1.0 and m.n_paired >= 10 and not m.n_informative]
    assert len(zeros) == cmp.left_out_tests > 10 and all(m.p_adjusted == 1.0 for m in zeros)  # shown, not counted
    expected = multipletests([m.p_value for m in secondary], alpha=0.05, method=method)
    assert [m.p_adjusted for m in secondary] == pytest.approx(list(expected[1]))
    assert [m.significant for m in secondary] == [
        bool(r) and m.delta != 0 for r, m in zip(expected[0], secondary, strict=True)
    ]
    # the gated metric is its own family (Holm over the one gated test): p corrected = p, verdict "better"
    rel = cmp.get("better", "relevance")
    assert rel.p_value == pytest.approx(2 / 128) == rel.p_adjusted and rel.verdict == "better"
    assert rel.correction == "Holm over 1"
    # the gate is the gated row's verdict: worse the other way round, and so is the exit
    back = compare_runs([runs["better"], runs["base"]], correction=correction, fail_on=["relevance"], coverage_drop=1.0)
    assert back.get("base", "relevance").verdict == "worse"
    assert back.gate["failed"] and "p = 0.01562, Holm over 1 < 0.05; tolerated 0" in back.gate["reasons"][0]
    # the primary family's correction across the gated tests (2 candidates × relevance)
    three = [runs["base"], runs["same"], runs["better"]]
    gated = compare_runs(three, fail_on=["relevance"], gate_correction=correction)
    checks = gated.gate["checks"]
    assert [c["p"] for c in checks] == pytest.approx([1.0, 2 / 128])
    assert checks[1]["p_gate"] == pytest.approx(2 / 128)  # the candidate "same" has no informative pair: no family
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
    """The same queries in reverse order (paired by id, not row by row) give the aligned candidate's numbers (to
    1e-9: the engine sums in its own order)."""
    from test_report_golden import _differences

    reordered = write_run(tmp_path / "reordered", scores=_scores(5), edit_records=lambda rs: rs[::-1])
    aligned = compare_runs([runs["base"], runs["better"]], labels=["base", "cand"])
    shuffled = compare_runs([runs["base"], reordered], labels=["base", "cand"])
    assert len(aligned.metrics) == len(shuffled.metrics) > 10
    for a, b in zip(aligned.metrics, shuffled.metrics, strict=True):
        assert _differences(b.model_dump(), a.model_dump()) == [], a.metric
    assert [c.model_dump() for c in shuffled.coverage] == [c.model_dump() for c in aligned.coverage]
    assert shuffled.queries[0].only_in_baseline == shuffled.queries[0].only_in_candidate == []


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
    assert data["test"].startswith("by the metric's kind") and data["seed"] == 42
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


def test_judge_metrics_are_tested_by_their_kind_in_the_one_table(runs) -> None:
    """A judge's score by Wilcoxon and its pass/fail verdict (``<key>/pass``) by McNemar, rows of the one table."""
    from scipy.stats import binomtest, wilcoxon

    cmp = compare_runs([runs["base"], runs["better"]])
    score, passed = cmp.get("better", "relevance"), cmp.get("better", "relevance/pass")
    # relevance +2 on 7 of 11 positive queries (3 → 5), 0 on 4: scipy's Wilcoxon on the same differences
    assert score.test.startswith("Wilcoxon") and score.n_paired == 11
    assert score.p_value == pytest.approx(wilcoxon([2] * 7 + [0] * 4, zero_method="wilcox").pvalue)
    assert score.rank_biserial == 1.0
    b = passed.losses  # rows passing only in the baseline
    assert passed.test == "McNemar exact" and passed.kind == "boolean"
    discordant = b + passed.wins
    expected = binomtest(min(b, passed.wins), discordant, 0.5).pvalue if discordant else 1.0
    assert passed.p_value == pytest.approx(expected) and passed.in_family == bool(discordant)
    md = render_comparison_markdown(cmp)
    assert "Judge metrics" not in md and md.count("| section | metric | test |") == 1
    without = compare_runs([runs["base"], runs["better"]], judge_tests=False)
    assert not any(m.metric.endswith("/pass") for m in without.metrics)


def test_the_judge_noise_band_applies_to_judge_rows_in_the_one_table(runs) -> None:
    """A difference no larger than the judge's own noise (repeat runs) is not a change: score and pass rows."""
    plain = compare_runs([runs["base"], runs["better"]], correction="none")
    noisy = compare_runs(
        [runs["base"], runs["better"]], correction="none", noise={"relevance": 2.0, "relevance/pass": 1.0}
    )
    assert plain.get("better", "relevance").verdict == "better"
    assert noisy.get("better", "relevance").verdict == "within judge noise"
    assert not noisy.get("better", "relevance").significant
    if plain.get("better", "relevance/pass").verdict == "better":
        assert noisy.get("better", "relevance/pass").verdict == "within judge noise"


def test_the_old_criterion_colon_metric_spelling_is_an_alias_with_a_deprecation_note(runs) -> None:
    cmp = compare_runs([runs["base"], runs["better"]], metrics=["relevance:relevance", "relevance:relevance:pass"])
    assert {m.metric for m in cmp.metrics} == {"relevance", "relevance/pass"}
    assert any("old spelling" in w and "'relevance/pass'" in w for w in cmp.warnings)
    gated = compare_runs([runs["better"], runs["base"]], fail_on=["relevance:relevance"], correction="none")
    assert gated.gate["failed"] and "relevance regressed" in gated.gate["reasons"][0]


def _main(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(args)
    out = capsys.readouterr()
    return int(exc.value.code or 0), out.out, out.err


def test_compare_cli_prints_one_table_one_gate_line_and_none_means_none(runs, capsys) -> None:
    """#23: one table (no judge-tests table, no empty heading), one gate line, --correction none is none for
    every row (the judges' rows too), and a gate failure quotes the gate's own correction."""
    args = ["compare", str(runs["better"]), str(runs["base"]), "--fail-on", "relevance", "--correction", "none"]
    code, md, _ = _main(args, capsys)
    assert code == 3
    assert md.count("Gate:") == 1 and "worse after correction" not in md.lower()
    assert md.count("| section | metric | test |") == 1  # one table for the one candidate
    headings = [line for line in md.splitlines() if line.startswith("#")]
    assert headings == ["## foundry-bridge compare", "### Sweep (positive queries, mean and Δ vs baseline)",
                        "### base vs better"]  # fmt: skip
    code, out, _ = _main([*args, "--format", "json"], capsys)
    data = json.loads(out)
    assert "judge_tests" not in data
    rows = [m for m in data["metrics"] if m["p_value"] is not None and m["n_paired"] >= data["min_paired"]]
    assert {m["kind"] for m in rows} == {"continuous", "ordinal", "boolean"}
    assert all(m["p_adjusted"] == m["p_value"] for m in rows)
    code, _, err = _main([*args[:-2], "--gate-correction", "bh", "--correction", "holm"], capsys)
    assert code == 3 and "Benjamini–Hochberg over 1 <" in err and "Holm" not in err


def test_options_as_a_dataclass_or_as_keywords_give_one_comparison(runs) -> None:
    from foundry_bridge.comparison import CompareOptions

    chosen = {"fail_on": ["relevance"], "correction": "holm", "n_resamples": 500, "coverage_drop": 1.0}
    as_keywords = compare_runs([runs["base"], runs["better"]], **chosen)
    as_options = compare_runs([runs["base"], runs["better"]], CompareOptions(**chosen))
    from test_report_golden import _differences

    # the same numbers to 1e-9: the engine's parallel sums may differ in the last bit from one call to the next
    assert _differences(as_options.model_dump(), as_keywords.model_dump()) == []
    assert as_options.n_resamples == 500 and as_options.gate["checked"]
    with pytest.raises(TypeError, match="fail_onn"):
        compare_runs([runs["base"], runs["better"]], fail_onn=["relevance"])


def test_compare_builds_no_report_and_its_stage_counts_are_the_reports(runs, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pairing reads the runs' tables: building a report, its per-query rows or its sections would fail here; the
    sweep's stage counts are each run's report's (the one stage rule, run over the rows, none kept)."""
    from foundry_bridge.report import _build, build_report

    expected = [build_report(runs[name]).stages.counts for name in ("base", "better")]

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("compare built a report")

    for name in ("build_report", "write_rows", "fetch_rows", "_assemble"):
        monkeypatch.setattr(_build, name, refuse)
    cmp = compare_runs([runs["base"], runs["better"]], correction="none")
    assert cmp.get("better", "relevance").verdict == "better"
    assert [r.stages for r in cmp.runs] == expected
    assert sum(expected[0].values()) == cmp.runs[0].queries
