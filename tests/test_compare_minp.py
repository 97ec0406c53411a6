"""Westfall–Young step-down minP over joint sign flips (issue #36 item 1): checked against a brute-force
enumeration written here from the definition, and by simulation (family-wise error under the global null with
correlated metrics; power against Holm when the metrics are near-copies)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from foundry_bridge.metrics.significance import _flip_stats, adjust_pvalues, flip_scores, westfall_young


def _brute_minp(z: np.ndarray) -> tuple[list[float], list[float]]:
    """Every one of the 2^n sign assignments, one at a time: each test's p at each assignment, then the step-down
    of Westfall & Young (1993) with plain loops."""
    n, m = z.shape
    flips = list(itertools.product((1.0, -1.0), repeat=n))
    stats = [[abs(sum(s[i] * z[i, j] for i in range(n))) for j in range(m)] for s in flips]
    total = len(flips)

    def p_of(value: float, j: int) -> float:
        return sum(1 for row in stats if row[j] >= value - 1e-9) / total

    observed = [abs(float(z[:, j].sum())) for j in range(m)]
    raw = [p_of(observed[j], j) for j in range(m)]
    per_flip = [[p_of(row[j], j) for j in range(m)] for row in stats]
    order = sorted(range(m), key=lambda j: raw[j])
    adjusted = [0.0] * m
    previous = 0.0
    for rank, j in enumerate(order):
        rest = order[rank:]
        share = sum(1 for ps in per_flip if min(ps[k] for k in rest) <= raw[j] + 1e-12) / total
        previous = max(previous, share)
        adjusted[j] = min(1.0, previous)
    return raw, adjusted


@pytest.mark.parametrize("seed", range(6))
def test_minp_equals_a_brute_force_enumeration_of_every_flip(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(4, 9))
    base = rng.normal(0.3, 1.0, n)
    z = np.column_stack(
        [
            base,
            base + rng.normal(0, 0.3, n),  # a near-copy
            np.round(rng.normal(0, 1, n)),  # ties and zeros
            np.where(rng.random(n) < 0.5, 0.0, base),  # informative on a subset of the queries
        ]
    )
    raw, adjusted = westfall_young(z, n_resamples=1 << 12)
    want_raw, want_adjusted = _brute_minp(z)
    assert raw == pytest.approx(want_raw, abs=1e-12)
    assert adjusted == pytest.approx(want_adjusted, abs=1e-12)
    assert np.all(adjusted >= raw - 1e-12)


def test_copies_cost_nothing_and_holm_pays_for_each() -> None:
    # 8 of 35 queries worse by one step on four identical metrics: exact p = 2/2^8 for each, minP keeps it
    d = np.zeros(35)
    d[:8] = -1.0
    z = np.column_stack([d, d, d, d])
    raw, adjusted = westfall_young(z, n_resamples=10_000)
    assert raw == pytest.approx([2 / 256] * 4)
    assert adjusted == pytest.approx([2 / 256] * 4)
    assert adjust_pvalues(list(raw), "holm") == pytest.approx([8 / 256] * 4)


def test_flip_scores_are_each_tests_own_statistic() -> None:
    a = np.array([1, 2, 3, 3, np.nan, 4.0])
    b = np.array([2, 2, 1, 4, 5, 5.0])
    assert flip_scores(a, b, "continuous") == pytest.approx([1, 0, -2, 1, 0, 1])
    # Wilcoxon: ranks of |d| over the non-zero ones (1, 2, 1, 1 → average ranks 2, 4, 2, 2), signed
    assert flip_scores(a, b, "ordinal") == pytest.approx([2, 0, -4, 2, 0, 2])
    assert flip_scores([1, 0, 1, 0], [0, 0, 1, 1], "boolean") == pytest.approx([-1, 0, 0, 1])


def _correlated(rng: np.random.Generator, n: int, m: int, rho: float, shift: float = 0.0) -> np.ndarray:
    cov = np.full((m, m), rho) + np.eye(m) * (1 - rho)
    return rng.multivariate_normal(np.full(m, shift), cov, size=n)


SIMULATIONS = 400
ALPHA = 0.05


@pytest.mark.parametrize("rho", [0.0, 0.5, 0.9])
def test_family_wise_error_under_the_global_null_stays_at_alpha(rho: float) -> None:
    rng = np.random.default_rng(2026 + int(rho * 10))
    errors = 0
    for _ in range(SIMULATIONS):
        z = _correlated(rng, 20, 6, rho)
        _, adjusted = westfall_young(z, n_resamples=400, rng=rng)
        errors += bool(np.any(adjusted < ALPHA))
    rate = errors / SIMULATIONS
    monte_carlo = 3 * np.sqrt(ALPHA * (1 - ALPHA) / SIMULATIONS)
    assert rate <= ALPHA + monte_carlo, rate
    if rho == 0.9:  # not conservative either when the tests are correlated (Holm's would be ~α/m-like)
        assert rate >= ALPHA - monte_carlo, rate


def test_power_is_above_holms_when_metrics_are_near_copies() -> None:
    rng = np.random.default_rng(7)
    minp = holm = 0
    for _ in range(200):
        base = rng.normal(0.45, 1.0, 20)
        z = np.column_stack([base + rng.normal(0, 0.05, 20) for _ in range(8)])
        raw, adjusted = westfall_young(z, n_resamples=400, rng=rng)
        minp += bool(np.any(adjusted < ALPHA))
        holm += bool(np.any(np.asarray(adjust_pvalues(list(raw), "holm")) < ALPHA))
    assert minp > holm + 30, (minp, holm)


def test_monte_carlo_flips_are_the_int8_draws_of_the_generator_a_block_of_queries_at_a_time() -> None:
    """The random flips are ``Generator.integers(0, 2, (R, block), int8)`` for blocks of 2^21 // R queries (1 = −):
    the raw p from those draws written out here, over several blocks, R·block not a multiple of 4, a lattice of
    ties and a column informative on a few queries only; the generator left where those draws leave it."""
    rng = np.random.default_rng(5)
    n, resamples = 2500, 999  # blocks of 2099 queries: two of them, the last one short
    z = np.column_stack(
        [
            rng.normal(0.05, 1.0, n),
            np.round(rng.normal(0.1, 1.0, n)),
            np.where(rng.random(n) < 0.02, rng.normal(0.5, 1.0, n), 0.0),
        ]
    )
    z[0] = 1.0  # every query informative: none is dropped before the flips
    mine, theirs = np.random.default_rng(9), np.random.default_rng(9)
    raw, _ = westfall_young(z, n_resamples=resamples, rng=mine)
    again = _flip_stats([z], resamples, np.random.default_rng(9))
    step = (1 << 21) // resamples
    sums = np.zeros((resamples, z.shape[1]))
    for start in range(0, n, step):
        block = z[start : start + step]
        signs = 1.0 - 2.0 * theirs.integers(0, 2, size=(resamples, block.shape[0]), dtype=np.int8)
        sums += signs @ block
    stats = np.abs(np.vstack([z.sum(axis=0), sums]))
    tol = 1e-9 * np.maximum(1.0, np.abs(z).sum(axis=0))
    want = (stats >= stats[0] - tol).mean(axis=0)
    assert raw.tolist() == want.tolist()
    assert again == pytest.approx(stats, rel=1e-12, abs=1e-9)  # every flip's statistic, not only the p
    assert 0 < want.min() < 1  # the draws decide the p
    assert mine.random() == theirs.random()


@pytest.mark.parametrize("n_resamples", [1 << 12, 500])
def test_blocks_of_disjoint_queries_equal_the_matrix_with_its_zeros(n_resamples: int) -> None:
    """compare's sections are disjoint sets of queries: their tests held as blocks, without the zeros of the other
    section's queries, get the p of the whole block-diagonal matrix, by exact enumeration (2^10 ≤ 4,096) and by one
    Monte Carlo stream (the sign blocks straddle the sections' boundary)."""
    rng = np.random.default_rng(5)
    n = 10 if n_resamples > 1000 else 700
    top = rng.normal(0.2, 1.0, (n * 3 // 5, 3))
    top[::4] = 0.0  # uninformative queries, dropped in either form
    bottom = np.round(rng.normal(0.0, 1.0, (n - top.shape[0], 2)))
    dense = np.zeros((n, 5))
    dense[: top.shape[0], :3], dense[top.shape[0] :, 3:] = top, bottom
    want = westfall_young(dense, n_resamples=n_resamples, rng=np.random.default_rng(3))
    got = westfall_young([top, bottom], n_resamples=n_resamples, rng=np.random.default_rng(3))
    assert got[0] == pytest.approx(want[0], abs=1e-12)
    assert got[1] == pytest.approx(want[1], abs=1e-12)


def test_flip_scores_kept_in_a_file_give_the_p_of_the_matrix(tmp_path, monkeypatch) -> None:
    """compare keeps each pair's flip scores in a file (a million queries × every metric would be RAM), read back
    a window of rows at a time, with its uninformative queries and the tests outside the family skipped: the same
    p as the matrix in memory with those columns cut out, across windows and Monte Carlo blocks."""
    from foundry_bridge.comparison._join import ColumnFile
    from foundry_bridge.metrics.significance import FlipBlock

    monkeypatch.setattr(ColumnFile, "WINDOW", 64)
    rng = np.random.default_rng(11)
    z = rng.normal(0.05, 1.0, (1500, 4))
    z[rng.random(1500) < 0.3] = 0.0  # uninformative queries, not flipped
    z[:, 2] = 0.0  # a test left out of the family
    stored = ColumnFile(tmp_path / "flips.f64", *z.shape)
    for k in range(z.shape[1]):
        stored.put(k, z[:, k])
    want = westfall_young(z[:, [0, 1, 3]], n_resamples=999, rng=np.random.default_rng(4))
    got = westfall_young([FlipBlock(stored, [0, 1, 3])], n_resamples=999, rng=np.random.default_rng(4))
    assert got[0].tolist() == pytest.approx(want[0].tolist(), abs=1e-12)
    assert got[1].tolist() == pytest.approx(want[1].tolist(), abs=1e-12)
    assert 0 < want[0].min() < 1
    assert stored[100:300].tolist() == z[100:300].tolist()  # a slice across windows, as written


def test_the_flips_signs_are_numpys_int8_draw_and_leave_the_generator_where_it_does() -> None:
    """Westfall–Young's flips are ``rng.integers(0, 2, (resamples, queries), dtype=np.int8)`` and the sign-flip Monte
    Carlo's ``rng.bytes``: drawn faster, the same bits and the same stream after, whatever the block's size (an odd
    number of 32-bit words leaves half of the generator's 64-bit output for the next draw) and whatever was drawn
    before."""
    from foundry_bridge.metrics.significance import _int8_bits, _random_bytes

    ours, numpys = np.random.default_rng(11), np.random.default_rng(11)
    for rows, cols in [(10, 7), (3, 3), (4, 4), (1, 1), (10_000, 209), (5, 1), (7, 13)] * 2:
        assert np.array_equal(_int8_bits(ours, rows, cols) > 127, numpys.integers(0, 2, (rows, cols), np.int8) == 1)
        assert ours.integers(0, 2**32, 3, np.uint32).tolist() == numpys.integers(0, 2**32, 3, np.uint32).tolist()
    assert ours.random() == numpys.random()
    for size in (1, 3, 8, 100_001):  # the sign-flip Monte Carlo's bytes
        assert _random_bytes(ours, size).tobytes() == numpys.bytes(size)
    assert ours.random() == numpys.random()
