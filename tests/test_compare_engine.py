"""The one comparison engine (metrics.significance): the test by the metric's kind against scipy, one family
corrected as statsmodels does (none meaning none), tests with no informative pair left out of it, t intervals at
small n, and the vectorised sign-flip equal to the per-metric one with the same seed."""

from __future__ import annotations

import numpy as np
import pytest

from foundry_bridge.metrics._dist import t_quantile
from foundry_bridge.metrics.significance import (
    PairedSample,
    PairedTests,
    adjust_pvalues,
    apply_family,
    paired_generator,
    paired_tests,
    sign_flip_test,
    sign_flip_tests,
    verdict,
)

stats = pytest.importorskip("scipy.stats")
multitest = pytest.importorskip("statsmodels.stats.multitest")


def _samples(seed: int, n: int) -> list[PairedSample]:
    """A pass/fail, an ordinal 1–5 and a continuous metric on the same n queries, the candidate a little better."""
    rng = np.random.default_rng(seed)
    a_pass = (rng.random(n) < 0.6).astype(float)
    b_pass = np.where(rng.random(n) < 0.25, 1 - a_pass, a_pass)
    a_ord = rng.integers(1, 6, n).astype(float)
    b_ord = np.clip(a_ord + rng.choice([-1, 0, 0, 1, 1], n), 1, 5)
    a_con = rng.random(n)
    b_con = a_con + rng.normal(0.05, 0.2, n)
    return [
        PairedSample(a_pass, b_pass, "boolean"),
        PairedSample(a_ord, b_ord, "ordinal"),
        PairedSample(a_con, b_con, "continuous"),
    ]


@pytest.mark.parametrize("seed,n", [(0, 12), (1, 40), (2, 300)])
def test_each_kind_gets_its_test_with_scipys_p(seed: int, n: int) -> None:
    boolean, ordinal, continuous = paired_tests(_samples(seed, n), rng=paired_generator(seed, "x"), n_resamples=4000)
    s = _samples(seed, n)
    b = int(np.sum((s[0].a == 1) & (s[0].b == 0)))
    c = int(np.sum((s[0].a == 0) & (s[0].b == 1)))
    assert boolean.test == "McNemar exact"
    assert boolean.p == pytest.approx(stats.binomtest(min(b, c), b + c, 0.5).pvalue if b + c else 1.0, abs=1e-12)
    assert ordinal.test.startswith("Wilcoxon signed-rank")
    assert ordinal.p == pytest.approx(stats.wilcoxon(s[1].b - s[1].a).pvalue, rel=1e-9)
    assert "sign-flip" in continuous.test
    t_p = stats.ttest_rel(s[2].b, s[2].a).pvalue  # the sign-flip's p agrees with the t test's at this n
    assert abs(continuous.p - t_p) < 0.05 + 4 * np.sqrt(t_p * (1 - t_p) / 4000)


@pytest.mark.parametrize("n", [3, 5, 10, 29, 200])
def test_the_delta_interval_is_the_t_interval_with_the_n_minus_1_divisor(n: int) -> None:
    rng = np.random.default_rng(n)
    a, b = rng.random(n), rng.random(n) + 0.1
    (test,) = paired_tests([PairedSample(a, b, "continuous")], rng=paired_generator(1, "t"), n_resamples=200)
    ci = stats.ttest_rel(b, a).confidence_interval(0.95)
    assert (test.effect.low, test.effect.high) == pytest.approx((ci.low, ci.high), rel=1e-8)


@pytest.mark.parametrize("df", [1, 2, 3, 9, 29, 30, 99, 100, 101, 1000, 100_000])
def test_t_quantiles_match_scipy(df: int) -> None:
    for p in (0.975, 0.995, 0.9, 0.5001, 0.025):
        assert t_quantile(p, df) == pytest.approx(float(stats.t.ppf(p, df)), rel=1e-8)


@pytest.mark.parametrize("method,sm", [("holm", "holm"), ("bh", "fdr_bh")])
def test_the_family_is_corrected_as_statsmodels_does_and_none_means_none(method: str, sm: str) -> None:
    tests = paired_tests(_samples(3, 80) + _samples(4, 80), rng=paired_generator(3, "f"), n_resamples=2000)
    out = apply_family(tests, method=method)  # type: ignore[arg-type]
    expected = multitest.multipletests([t.p for t in tests], method=sm)[1]
    assert [t.p_adjusted for t in out] == pytest.approx(expected.tolist(), abs=1e-12)
    raw = apply_family(tests, method="none")
    assert [t.p_adjusted for t in raw] == [t.p for t in tests]
    assert adjust_pvalues([0.2, 0.01], "none") == [0.2, 0.01]


def test_a_test_with_no_informative_pair_is_reported_but_left_out_of_the_family() -> None:
    """#24: 12 all-zero tests must not turn a raw p of 0.044 into a Holm p of 0.66."""
    rng = np.random.default_rng(5)
    a = rng.random(40)
    changed = PairedSample(a, a + rng.normal(0.08, 0.25, 40), "continuous")
    same = [PairedSample(a, a.copy(), "continuous"), PairedSample(a > 0.5, a > 0.5, "boolean")]
    same += [PairedSample(np.round(a * 4) + 1, np.round(a * 4) + 1, "ordinal")]
    tests = apply_family(paired_tests([changed, *same], rng=paired_generator(5, "z"), n_resamples=2000))
    assert tests[0].p_adjusted == tests[0].p  # a family of one
    assert tests[0].correction == "Holm over 1"
    for t in tests[1:]:
        assert t.p == 1.0 and t.p_adjusted == 1.0 and t.significant is False
        assert t.correction is not None and "left out of the family" in t.correction
        assert verdict(t, higher_is_better=True) == "no significant change"


def test_the_vectorised_sign_flip_equals_the_per_metric_one_with_the_same_seed() -> None:
    rng = np.random.default_rng(7)
    diffs = [
        rng.normal(0.02, 0.3, 500),
        np.round(rng.normal(0.1, 1, 60)),  # a lattice: exact ties of |Σ|
        np.zeros(30),
        rng.normal(0, 1, 9),  # exact
        rng.normal(0.01, 0.2, 3000) * (rng.random(3000) < 0.3),
    ]
    together = sign_flip_tests(diffs, n_resamples=3000, rng=paired_generator(11, "pair|positive"))
    alone = [sign_flip_test(d, n_resamples=3000, rng=paired_generator(11, "pair|positive")) for d in diffs]
    assert together == alone
    shuffled = sign_flip_tests(diffs[::-1], n_resamples=3000, rng=paired_generator(11, "pair|positive"))
    assert shuffled[::-1] == together  # a metric's p does not depend on the others tested beside it
    negated = sign_flip_tests([-d for d in diffs], n_resamples=3000, rng=paired_generator(11, "pair|positive"))
    assert negated == together  # swapping baseline and candidate keeps p


def test_tests_added_one_at_a_time_in_small_batches_equal_the_tests_of_all_at_once() -> None:
    """compare adds a metric at a time and lets the sign-flips wait only up to a memory budget: a batch run early
    must give every p (and leave the generator) as one call over every sample does."""
    samples = _samples(21, 400) + _samples(22, 900) + _samples(23, 50)
    at_once_rng = paired_generator(4, "pair|positive")
    at_once = paired_tests(samples, rng=at_once_rng, n_resamples=2500)
    batched_rng = paired_generator(4, "pair|positive")
    batched = PairedTests(rng=batched_rng, n_resamples=2500, held_bytes=1)  # every sign-flip runs on its own
    for s in samples:
        batched.add(s)
    assert batched.done() == at_once
    assert [t.p for t in at_once if t.test.startswith("Monte Carlo")]  # the batches did draw signs
    assert batched_rng.random() == at_once_rng.random()


def test_the_monte_carlo_sign_flip_agrees_with_the_exact_test() -> None:
    rng = np.random.default_rng(8)
    d = rng.normal(0.3, 1, 18)  # 2^18 assignments: exact with enough resamples, Monte Carlo with fewer
    exact, method = sign_flip_test(d, n_resamples=2**18, rng=paired_generator(1, "e"))
    assert method.startswith("exact")
    mc, method = sign_flip_test(d, n_resamples=20_000, rng=paired_generator(1, "e"))
    assert method.startswith("Monte Carlo")
    assert abs(mc - exact) < 4 * np.sqrt(exact * (1 - exact) / 20_000) + 1 / 20_001
    scipy_p = stats.permutation_test(
        (d,), np.mean, permutation_type="samples", n_resamples=np.inf, alternative="two-sided"
    ).pvalue
    assert exact == pytest.approx(scipy_p, abs=1e-12)


def test_monte_carlo_sign_flips_are_the_generators_bytes_one_position_at_a_time() -> None:
    """Position i of a metric's sorted |d| flips by bit r of the generator's bytes for position i (R bits rounded
    up to whole 64-bit words, first bit the highest): p = (hits + 1)/(R + 1) written out here a position at a time,
    for metrics whose |d| takes few values (summed by runs of equal |d|) and for one whose |d| are all distinct."""
    rng = np.random.default_rng(12)
    diffs = [
        np.round(rng.normal(0.05, 1.0, 4000)),  # a lattice: a few runs of equal |d|
        np.round(rng.normal(0.02, 0.5, 700) * 4) / 4,
        rng.normal(0.03, 1.0, 1500),  # every |d| distinct
        np.where(rng.random(600) < 0.5, 1.0, -1.0),  # one run
        np.concatenate([np.full(900, 0.5), rng.normal(0, 1.0, 100)]),  # a long run and single values
    ]
    resamples = 777
    got = sign_flip_tests(diffs, n_resamples=resamples, rng=paired_generator(3, "pair|positive"))
    theirs = paired_generator(3, "pair|positive")
    nz = [np.sort(np.abs(d[d != 0])) for d in diffs]
    width = 8 * -(-resamples // 64)
    sums = np.zeros((resamples, len(nz)))
    for i in range(max(v.size for v in nz)):
        bits = np.unpackbits(np.frombuffer(theirs.bytes(width), dtype=np.uint8), count=resamples)
        for j, v in enumerate(nz):
            if i < v.size:
                sums[:, j] += (1.0 - 2.0 * bits) * v[i]
    for j, d in enumerate(diffs):
        tol = 1e-9 * max(1.0, float(nz[j].sum()))
        hits = int(np.count_nonzero(np.abs(sums[:, j]) >= abs(float(d.sum())) - tol))
        assert got[j] == ((hits + 1) / (resamples + 1), f"Monte Carlo sign-flip, {resamples} resamples")
    assert len({p for p, _ in got}) > 1
