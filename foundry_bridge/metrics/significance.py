"""The one comparison engine: paired tests chosen by the metric's kind, effect sizes with intervals, one family
corrected as asked, and one verdict. Arrays in, typed results out; ``comparison`` pairs the runs and renders.

Pass/fail → McNemar (exact, mid-p); an ordinal judge score → Wilcoxon signed-rank (p as ``scipy.stats.wilcoxon``'s
default); a continuous metric → the paired sign-flip test of the mean difference (exact when 2^m ≤ the
resamples, else Monte Carlo, p = (hits + 1)/(R + 1)). The Monte Carlo signs are laid out position-major
(``_block_bytes``), so ``sign_flip_tests`` over many metrics gives each the p of ``sign_flip_test`` alone with a
generator of the same seed. Effect sizes: the mean difference B − A with Student's interval (pass/fail padded,
Agresti & Min), d_z, and Wilcoxon's rank-biserial r. ``apply_family``: Holm, Benjamini–Hochberg or none over the
tests with at least ``min_n`` pairs and one non-zero difference. ``verdict``: a significant change within the
judge's noise band is "within judge noise". docs/trust.md and docs/report.md state the formulas and sources.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any, Literal

import numpy as np

from ..catalog import MetricKind  # the catalog's kind of a metric: it chooses the test
from ._dist import average_ranks, binom_cdf, binom_pmf, normal_quantile, normal_sf
from .intervals import clip, padded_variance, t_interval

__all__ = [
    "CORRECTION_NAME",
    "DEFAULT_MIN_N",
    "LEFT_OUT",
    "WY_NAME",
    "Correction",
    "Effect",
    "FamilyRow",
    "FlipBlock",
    "MetricKind",
    "PairedSample",
    "PairedTest",
    "PairedTests",
    "Verdict",
    "adjust_pvalues",
    "apply_family",
    "compare_family",
    "flip_scores",
    "in_family",
    "mcnemar",
    "paired_effect",
    "paired_generator",
    "paired_test",
    "paired_tests",
    "sign_flip_test",
    "sign_flip_tests",
    "verdict",
    "westfall_young",
    "wilcoxon_signed_rank",
]

DEFAULT_MIN_N = 10
Correction = Literal["holm", "bh", "none"]
CORRECTION_NAME: dict[str, str] = {"holm": "Holm", "bh": "Benjamini–Hochberg", "none": "none"}
Verdict = Literal[
    "better",
    "worse",
    "changed",
    "no significant change",
    "within judge noise",
    "too few paired queries",
    "not comparable",
]
LEFT_OUT = "left out of the family: every paired difference is 0"


@dataclass(frozen=True)
class Effect:
    """B − A: the mean paired difference and d_z, each with its interval; rank-biserial r for Wilcoxon."""

    mean_diff: float
    low: float
    high: float
    d_z: float
    d_low: float
    d_high: float
    rank_biserial: float | None = None


@dataclass(frozen=True)
class PairedTest:
    """One paired comparison: the test used, rows paired, informative rows, statistic, p (None when not tested),
    effect, the adjusted p and decision once ``apply_family`` ran, and a line a reader can quote."""

    test: str
    n: int
    n_informative: int  # discordant pairs (McNemar) or non-zero differences (Wilcoxon, sign-flip)
    statistic: float
    p: float | None
    effect: Effect
    verdict: str
    p_adjusted: float | None = None
    correction: str | None = None
    significant: bool | None = None


_MATCHED_PAD = (np.array([0.0, 1.0, -1.0, 0.0]), np.full(4, 0.5))  # B − A in each cell of the 2×2 table, ½ each


def paired_effect(diffs: Any, *, confidence: float = 0.95, matched_proportions: bool = False) -> Effect:
    """The mean of ``diffs`` (B − A per row) with Student's interval mean ± t₍n−1₎·s/√n (s with the n − 1 divisor;
    NaN below two rows), and d_z = mean/sd (sd ddof 0) with ±z·√(1/n + d²/2n). ``matched_proportions`` (pass/fail
    differences in {−1, 0, 1}): s² padded with Agresti & Min's ½ in each cell of the 2×2 table (Statistics in
    Medicine 2005), so a table without discordant pairs still gets an interval of honest width, cut to [−1, 1].
    NaN when there are no rows; d_z is NaN when every difference is equal (sd 0)."""
    d = np.asarray(diffs, dtype=np.float64).ravel()
    n = d.size
    nan = float("nan")
    if n == 0:
        return Effect(nan, nan, nan, nan, nan, nan)
    mean, sd = float(d.mean()), float(d.std())
    low = high = nan
    if n >= 2:
        variance = padded_variance(d, *_MATCHED_PAD) if matched_proportions else float(d.var(ddof=1))
        low, high = t_interval(mean, variance / n, n - 1, confidence=confidence)
        if matched_proportions:
            low, high, _ = clip(low, high, -1.0, 1.0)
    if sd == 0:
        return Effect(mean, low, high, nan, nan, nan)
    z = normal_quantile(0.5 + confidence / 2)
    dz = mean / sd
    dz_half = z * math.sqrt(1 / n + dz * dz / (2 * n))
    return Effect(mean, low, high, dz, dz - dz_half, dz + dz_half)


def _too_few(n: int, min_n: int) -> str | None:
    return f"too few paired queries (n={n} < {min_n}): not tested" if n < min_n else None


def mcnemar(
    a_passed: Any, b_passed: Any, *, mid_p: bool = False, min_n: int = DEFAULT_MIN_N, confidence: float = 0.95
) -> PairedTest:
    """McNemar's exact (or mid-p) test of paired pass/fail verdicts; rows where either side is NaN are left out."""
    a = np.asarray(a_passed, dtype=np.float64).ravel()
    b = np.asarray(b_passed, dtype=np.float64).ravel()
    keep = ~(np.isnan(a) | np.isnan(b))
    pa, pb = a[keep] != 0, b[keep] != 0
    n = int(pa.size)
    worse, better = int(np.count_nonzero(pa & ~pb)), int(np.count_nonzero(~pa & pb))
    name = "McNemar mid-p" if mid_p else "McNemar exact"
    effect = paired_effect(pb.astype(float) - pa.astype(float), confidence=confidence, matched_proportions=True)
    refused = _too_few(n, min_n)
    if refused:
        return PairedTest(name, n, worse + better, float(min(worse, better)), None, effect, refused)
    k, m = min(worse, better), worse + better
    p = 1.0 if m == 0 else min(1.0, 2 * binom_cdf(k, m))
    if mid_p and m:
        p = min(1.0, 2 * binom_cdf(k, m) - binom_pmf(k, m))
    verdict = f"{name}: {better} rows pass only in B, {worse} only in A"
    return PairedTest(name, n, m, float(k), p, effect, verdict)


def _signed_ranks(d: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
    """Average ranks of |d| (zeros already removed), the tie-group sizes, and whether there are ties."""
    ranks, sizes = average_ranks(np.abs(d))
    return ranks, sizes, bool((sizes > 1).any())


def _exact_tail(r_plus: float, n: int) -> float:
    """2·min(P(T ≥ ⌊r⁺⌋), P(T ≤ ⌈r⁺⌉)) under the exact null of the signed-rank sum of ranks 1..n, capped at 1."""
    counts = np.zeros(n * (n + 1) // 2 + 1)
    counts[0] = 1.0
    for r in range(1, n + 1):
        counts[r:] = counts[r:] + counts[:-r].copy()
    pmf = counts / counts.sum()
    upper = float(pmf[math.floor(r_plus) :].sum())
    lower = float(pmf[: math.ceil(r_plus) + 1].sum())
    return min(1.0, 2 * min(upper, lower))


def _flip_tail(ranks: np.ndarray, signs: np.ndarray) -> float:
    """2·min(P(T ≤ t), P(T ≥ t)) over every sign flip of the (tied, average) ranks, t the observed W⁺."""
    m = ranks.size
    codes = np.arange(2**m, dtype=np.int64)
    positive = (codes[:, None] >> np.arange(m, dtype=np.int64)) & 1
    null = positive @ ranks
    observed = float(ranks[signs > 0].sum())
    tol = 1e-9 * max(1.0, float(ranks.sum()))
    return min(1.0, 2 * min(float(np.mean(null <= observed + tol)), float(np.mean(null >= observed - tol))))


def wilcoxon_signed_rank(
    a: Any, b: Any, *, min_n: int = DEFAULT_MIN_N, confidence: float = 0.95, max_exact: int = 50
) -> PairedTest:
    """Wilcoxon's signed-rank test of B − A (NaN rows left out); the method used is named in ``test``."""
    x = np.asarray(a, dtype=np.float64).ravel()
    y = np.asarray(b, dtype=np.float64).ravel()
    keep = ~(np.isnan(x) | np.isnan(y))
    diffs = y[keep] - x[keep]
    n = int(diffs.size)
    effect = paired_effect(diffs, confidence=confidence)
    d = diffs[diffs != 0]
    m = int(d.size)
    refused = _too_few(n, min_n)
    if refused or m == 0:
        verdict = refused or "Wilcoxon signed-rank: every paired difference is 0"
        return PairedTest("Wilcoxon signed-rank", n, m, 0.0, None if refused else 1.0, effect, verdict)
    ranks, sizes, ties = _signed_ranks(d)
    r_plus, r_minus = float(ranks[d > 0].sum()), float(ranks[d < 0].sum())
    effect = replace(effect, rank_biserial=(r_plus - r_minus) / (r_plus + r_minus))
    if not ties and m == n and n <= max_exact:
        name, p = "Wilcoxon signed-rank (exact)", _exact_tail(r_plus, m)
    elif n <= 13:
        name, p = "Wilcoxon signed-rank (exact over sign flips, ties)", _flip_tail(ranks, np.sign(d))
    else:
        mean = m * (m + 1) / 4
        se = math.sqrt((m * (m + 1) * (2 * m + 1) - float((sizes**3 - sizes).sum()) / 2) / 24)
        name, p = "Wilcoxon signed-rank (normal approximation)", min(1.0, 2 * normal_sf(abs(r_plus - mean) / se))
    return PairedTest(name, n, m, r_plus, p, effect, f"{name}: W+={r_plus:g}, W-={r_minus:g} over {m} pairs")


# -- the sign-flip randomization test -------------------------------------------------------------------------------

_EXACT_CELLS = 4_000_000  # assignments × positions enumerated at once (exact test)
_WORK_CELLS = 1 << 21  # queries × resamples of Westfall–Young's signs drawn at once: the shape of its random stream
_SIGN_CELLS = 1 << 23  # positions × resamples of Monte Carlo signs unpacked at once (8 MiB): not the stream
_RUNS_SHARE = 8  # a sign-flip's sorted |d| with at most one distinct value in 8 is summed by runs of equal values
_LANE_MAX = 255  # positions summed at once in a byte lane
_FLOAT_CELLS = 1 << 17  # a Monte Carlo block's signs as floats at once (1 MiB)
_PRODUCT_CELLS = 3 << 17  # multiply-adds of one matrix product of signs (OpenBLAS threads from 2^19)


def paired_generator(seed: int, key: str) -> Any:
    """A ``numpy.random.Generator`` seeded from ``(seed, key)`` (the key's UTF-8 bytes as one integer).
    compare's key names the two runs as an unordered pair and the query kind: swapping baseline and candidate
    draws the same numbers."""
    return np.random.default_rng(np.random.SeedSequence([int(seed), int.from_bytes(key.encode(), "little")]))


def _block_bytes(n_resamples: int) -> int:
    """Bytes of random stream per position: the R sign bits, rounded up to whole 64-bit words (so a draw of k
    positions is the same bytes as k draws of one: numpy's ``Generator.bytes`` discards a word's unused bytes)."""
    return 8 * math.ceil(n_resamples / 64)


@dataclass(frozen=True)
class _Flip:
    """One metric's sign-flip input: rows, the sorted non-zero |d|, the observed |Σ d| and the rounding tolerance."""

    n: int
    nz: np.ndarray
    observed: float
    tol: float


def _prepare(diffs: Any) -> _Flip:
    d = np.asarray(diffs, dtype=np.float64).ravel()
    nz = np.sort(np.abs(d[d != 0]))  # the flips see only |d|: negating every difference keeps p
    # |Σ d| is summed in another order than the flips' sums: a relative 1e-9 covers the rounding of ~10⁶ terms
    return _Flip(int(d.size), nz, abs(float(d.sum())), 1e-9 * max(1.0, float(nz.sum())))


def _exact_flip(f: _Flip) -> float:
    """The share of all 2^m sign assignments whose |Σ sᵢ|dᵢ|| reaches the observed |Σ d|."""
    m = f.nz.size
    total, hits = 2**m, 0
    step = max(1, _EXACT_CELLS // m)
    for start in range(0, total, step):
        codes = np.arange(start, min(total, start + step), dtype=np.int64)
        bits = (codes[:, None] >> np.arange(m, dtype=np.int64)) & 1
        hits += int(np.count_nonzero(np.abs((1 - 2 * bits) @ f.nz) >= f.observed - f.tol))
    return hits / total


def _add_product(out: np.ndarray, left: np.ndarray, right: np.ndarray, signs: bool = False) -> None:
    """``out += left @ right`` with ``left`` 0/1 (``signs``: bytes whose top bit is the 0/1) or counts, converted to
    floats a slice of rows at a time: each product at most ``_PRODUCT_CELLS`` multiply-adds, so the BLAS runs it on
    the calling thread and the slice stays in the cache."""
    rows = max(1, _PRODUCT_CELLS // max(1, left.shape[1] * right.shape[1]))
    for r in range(0, left.shape[0], rows):
        part = np.greater(left[r : r + rows], 127) if signs else left[r : r + rows]
        out[r : r + rows] += part.astype(np.float64) @ right


def _monte_carlo_hits(flips: Sequence[_Flip], n_resamples: int, rng: Any) -> list[int]:
    """Per metric, the resamples whose |Σ sᵢ|dᵢ|| reaches the observed |Σ d|: all metrics at once, a block of
    positions at a time (sᵢ = 1 − 2·bitᵢ, so Σ sᵢzᵢ = Σ zᵢ − 2·Σ bitᵢzᵢ). A metric whose sorted |d| has few distinct
    values (at most one in ``_RUNS_SHARE`` of its positions) is summed by runs of equal |d|: each resample's bits
    counted per segment (the union of these metrics' runs), then one product of the counts and the segments'
    |d|; every other metric sign by sign, the longest first so a block multiplies only the metrics that reach it."""
    order = sorted(range(len(flips)), key=lambda j: -flips[j].nz.size)
    sizes = np.array([flips[j].nz.size for j in order])
    # Σ zᵢ per metric, summed row after row as a (positions × metrics) matrix's column sums are
    total = np.array([flips[j].nz.reshape(-1, 1).sum(axis=0)[0] for j in order])
    runs = [c for c, j in enumerate(order) if _distinct(flips[j].nz) * _RUNS_SHARE <= flips[j].nz.size]
    dense = [c for c in range(len(order)) if c not in set(runs)]
    edges = [np.zeros(1, np.int64)]
    for c in runs:
        nz = flips[order[c]].nz
        edges += [np.flatnonzero(nz[1:] != nz[:-1]) + 1, np.array([nz.size])]
    bounds = np.unique(np.concatenate(edges))  # every segment lies inside one run of each of these metrics
    reach = int(sizes[runs].max()) if runs else 0
    width = _block_bytes(n_resamples)
    step = max(1, _SIGN_CELLS // n_resamples)
    by_runs, by_sign = np.zeros((n_resamples, len(runs))), np.zeros((n_resamples, len(dense)))
    for start in range(0, int(sizes[0]), step):
        stop = min(int(sizes[0]), start + step)
        raw = _random_bytes(rng, (stop - start) * width).reshape(stop - start, width)
        bits = np.unpackbits(raw, axis=1)  # positions × resamples (padded to whole words), 0/1
        if start < reach:
            end = min(stop, reach)
            first = np.union1d(bounds[(bounds > start) & (bounds < end)], np.arange(start, end, _LANE_MAX))
            # eight resamples' bits summed at once in the bytes of a 64-bit word (no carry: ≤ 255 positions)
            summed = np.add.reduceat(bits[: end - start].view(np.uint64), first - start, axis=0)
            w = np.zeros((first.size, len(runs)))
            for col, c in enumerate(runs):
                nz = flips[order[c]].nz
                w[:, col] = np.where(first < nz.size, nz[np.minimum(first, nz.size - 1)], 0.0)
            _add_product(by_runs, summed.view(np.uint8)[:, :n_resamples].T, w)
            del summed
        active = [c for c in dense if sizes[c] > start]
        if active:
            z = np.zeros((stop - start, len(active)))  # the block's rows of the positions × metrics matrix, zero-padded
            for col, c in enumerate(active):
                part = flips[order[c]].nz[start:stop]
                z[: part.size, col] = part
            chunk = max(1, _FLOAT_CELLS // n_resamples)
            for a in range(0, stop - start, chunk):
                _add_product(by_sign[:, : len(active)], bits[a : a + chunk, :n_resamples].T, z[a : a + chunk])
        del raw, bits  # before the next block's are made
    partial = np.zeros((n_resamples, len(order)))
    partial[:, runs], partial[:, dense] = by_runs, by_sign
    stats = np.abs(total - 2 * partial)
    observed = np.array([flips[j].observed - flips[j].tol for j in order])
    counts = np.count_nonzero(stats >= observed, axis=0)
    hits = [0] * len(flips)
    for col, j in enumerate(order):
        hits[j] = int(counts[col])
    return hits


def _distinct(sorted_values: np.ndarray) -> int:
    return 1 + int(np.count_nonzero(sorted_values[1:] != sorted_values[:-1])) if sorted_values.size else 0


def _flip_p(f: _Flip, n_resamples: int) -> tuple[float, str] | None:
    """``(p, method)`` of a sign-flip that needs no random signs (no rows, every difference 0, or few enough non-zero
    ones to enumerate); None: Monte Carlo."""
    m = f.nz.size
    if f.n == 0:
        return float("nan"), "none (no paired queries)"
    if m == 0:
        return 1.0, "exact (all differences are 0)"
    if m <= 30 and 2**m <= n_resamples:
        return _exact_flip(f), f"exact sign-flip over {2**m} assignments"
    return None


def _monte_carlo_method(n_resamples: int) -> str:
    return f"Monte Carlo sign-flip, {n_resamples} resamples"


def _monte_carlo_p(hits: int, n_resamples: int) -> tuple[float, str]:
    return (hits + 1) / (n_resamples + 1), _monte_carlo_method(n_resamples)


def sign_flip_tests(diffs: Sequence[Any], *, n_resamples: int = 10_000, rng: Any) -> list[tuple[float, str]]:
    """The two-sided paired sign-flip test of mean = 0 for each array of differences: ``(p, method)`` each.

    Under the null each per-query difference is as likely positive as negative. Exact over all 2^m assignments
    of the m non-zero differences when 2^m ≤ ``n_resamples``; otherwise Monte Carlo, p = (hits + 1)/(R + 1), every
    metric against the same signs, position-major (see the module's docstring): each metric's p equals
    ``sign_flip_test`` of it alone with a generator of the same seed, whichever other metrics are tested beside it.
    The flips act on the sorted |d|: p depends only on the multiset of |d| and on |Σ d|, so negating every
    difference (swapping baseline and candidate) or listing the queries in another order keeps p."""
    flips = [_prepare(d) for d in diffs]
    out = [_flip_p(f, n_resamples) for f in flips]
    monte_carlo = [j for j, r in enumerate(out) if r is None]
    if monte_carlo:
        hits = _monte_carlo_hits([flips[j] for j in monte_carlo], n_resamples, rng)
        for j, h in zip(monte_carlo, hits, strict=True):
            out[j] = _monte_carlo_p(h, n_resamples)
    return [r for r in out if r is not None]


def sign_flip_test(diffs: Any, *, n_resamples: int = 10_000, rng: Any) -> tuple[float, str]:
    """``sign_flip_tests`` of one metric: ``(p, method)``."""
    return sign_flip_tests([diffs], n_resamples=n_resamples, rng=rng)[0]


# -- the test by the metric's kind ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class PairedSample:
    """One metric's paired values (NaN rows are left out by each test): baseline ``a``, candidate ``b``."""

    a: Any
    b: Any
    kind: MetricKind


def _sign_flip_result(d: np.ndarray, p: float | None, method: str, confidence: float) -> PairedTest:
    effect = paired_effect(d, confidence=confidence)
    m = int(np.count_nonzero(d))
    if d.size == 0:
        return PairedTest(method, 0, 0, 0.0, None, effect, "no paired queries")
    line = f"sign-flip: Σd = {float(d.sum()):.6g} over {m} non-zero differences of {d.size}"
    return PairedTest(method, int(d.size), m, float(d.sum()), p, effect, line)


_HELD_BYTES = 64 << 20  # the sorted |d| of sign-flips waiting for their Monte Carlo, at most (then they run)


class PairedTests:
    """``paired_tests`` a sample at a time, so a caller need not hold every metric's values at once: each sample is
    tested as it is added and its arrays are not kept, but for a Monte Carlo sign-flip's sorted |d|, which wait and
    are tested together (one stream of signs for all, ``_monte_carlo_hits``) at ``done`` — or sooner, once they
    hold more than ``held_bytes``. Every batch draws from the generator's starting state, so each p equals
    ``paired_tests``' of all the samples at once (the signs are position-major: a metric reads only the blocks of
    its own positions), and the generator is left where that call leaves it (after the longest batch's draws)."""

    def __init__(
        self,
        *,
        rng: Any = None,
        n_resamples: int = 10_000,
        confidence: float = 0.95,
        mid_p: bool = False,
        held_bytes: int = _HELD_BYTES,
    ) -> None:
        self.rng = rng if rng is not None else paired_generator(0, "")
        self.n_resamples, self.confidence, self.mid_p, self.held_bytes = n_resamples, confidence, mid_p, held_bytes
        self.start = self.rng.bit_generator.state
        self.end: tuple[int, Any] | None = None  # the longest batch's positions and the generator's state after it
        self.tests: list[PairedTest] = []
        self.waiting: list[tuple[int, _Flip]] = []
        self.held = 0

    def add(self, sample: PairedSample) -> None:
        """Test ``sample`` by its kind (McNemar, Wilcoxon signed-rank, sign-flip); its p may wait (``done``)."""
        if sample.kind == "boolean":
            self.tests.append(mcnemar(sample.a, sample.b, mid_p=self.mid_p, min_n=1, confidence=self.confidence))
            return
        if sample.kind == "ordinal":
            self.tests.append(wilcoxon_signed_rank(sample.a, sample.b, min_n=1, confidence=self.confidence))
            return
        a = np.asarray(sample.a, dtype=np.float64).ravel()
        b = np.asarray(sample.b, dtype=np.float64).ravel()
        keep = ~(np.isnan(a) | np.isnan(b))
        d = b[keep] - a[keep]
        flip = _prepare(d)
        got = _flip_p(flip, self.n_resamples)
        method = got[1] if got is not None else _monte_carlo_method(self.n_resamples)
        self.tests.append(_sign_flip_result(d, None if got is None else got[0], method, self.confidence))
        if got is None:
            self.waiting.append((len(self.tests) - 1, flip))
            self.held += flip.nz.nbytes
            if self.held > self.held_bytes:
                self._flush()

    def _flush(self) -> None:
        if not self.waiting:
            return
        self.rng.bit_generator.state = self.start
        hits = _monte_carlo_hits([f for _, f in self.waiting], self.n_resamples, self.rng)
        positions = max(f.nz.size for _, f in self.waiting)
        if self.end is None or positions > self.end[0]:
            self.end = (positions, self.rng.bit_generator.state)
        for (j, _), h in zip(self.waiting, hits, strict=True):
            self.tests[j] = replace(self.tests[j], p=_monte_carlo_p(h, self.n_resamples)[0])
        self.waiting, self.held = [], 0

    def done(self) -> list[PairedTest]:
        """Every test, in the order added, each with its p."""
        self._flush()
        if self.end is not None:
            self.rng.bit_generator.state = self.end[1]
        return list(self.tests)


def paired_tests(
    samples: Sequence[PairedSample],
    *,
    rng: Any = None,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    mid_p: bool = False,
) -> list[PairedTest]:
    """Each sample's test by its kind: McNemar for ``boolean``, Wilcoxon signed-rank for ``ordinal``, the sign-flip
    for ``continuous`` (all continuous samples against one generator, ``rng``: ``sign_flip_tests``). p is computed
    whatever n (``min_n`` is the family's rule, ``apply_family``); no paired row: p None."""
    tests = PairedTests(rng=rng, n_resamples=n_resamples, confidence=confidence, mid_p=mid_p)
    for s in samples:
        tests.add(s)
    return tests.done()


def paired_test(
    a: Any,
    b: Any,
    *,
    kind: MetricKind,
    min_n: int = DEFAULT_MIN_N,
    mid_p: bool = False,
    confidence: float = 0.95,
    rng: Any = None,
    n_resamples: int = 10_000,
) -> PairedTest:
    """The test a metric's kind calls for (``paired_tests`` of one sample); fewer than ``min_n`` paired rows: not
    tested (p None, the verdict says so)."""
    test = paired_tests(
        [PairedSample(a, b, kind)], rng=rng, n_resamples=n_resamples, confidence=confidence, mid_p=mid_p
    )[0]
    refused = _too_few(test.n, min_n)
    return replace(test, p=None, verdict=refused) if refused else test


# -- one family, one verdict ----------------------------------------------------------------------------------------


def adjust_pvalues(pvalues: Sequence[float], method: Correction = "holm") -> list[float]:
    """Holm step-down or Benjamini–Hochberg adjusted p-values, in the input order, monotone and capped at 1;
    ``none``: the p-values as given.

    Holm: sorted p₍ᵢ₎ (i = 1..m) → max_{j ≤ i} (m − j + 1)·p₍ⱼ₎. BH: min_{j ≥ i} m·p₍ⱼ₎ / j.
    """
    p = np.asarray(pvalues, dtype=np.float64)
    m = p.size
    if method == "none":
        return p.tolist()
    if m == 0:
        return []
    order = np.argsort(p, kind="stable")
    ranked = p[order]
    if method == "holm":
        adj = np.maximum.accumulate((m - np.arange(m)) * ranked)
    elif method == "bh":
        adj = np.minimum.accumulate((m * ranked / np.arange(1, m + 1))[::-1])[::-1]
    else:
        raise ValueError(f"method must be 'holm', 'bh' or 'none', got {method!r}")
    out = np.empty(m)
    out[order] = np.minimum(adj, 1.0)
    return out.tolist()


def in_family(test: PairedTest, min_n: int = DEFAULT_MIN_N) -> bool:
    """A hypothesis of the family: tested (p), on at least ``min_n`` paired rows, with an informative pair."""
    return test.p is not None and test.n >= min_n and test.n_informative > 0


def apply_family(
    tests: Sequence[PairedTest], *, method: Correction = "holm", alpha: float = 0.05, min_n: int = DEFAULT_MIN_N
) -> list[PairedTest]:
    """Every test with its adjusted p and decision (adjusted p < ``alpha``). The family: the tests ``in_family``;
    a test with no informative pair (p = 1) gets p_adjusted = 1, ``significant=False`` and a correction that says
    it was left out; a test on fewer than ``min_n`` rows passes through undecided (``significant=None``)."""
    ran = [i for i, t in enumerate(tests) if in_family(t, min_n)]
    adjusted = adjust_pvalues([tests[i].p or 0.0 for i in ran], method)
    label = "none (raw p)" if method == "none" else f"{CORRECTION_NAME[method]} over {len(ran)}"
    out = list(tests)
    for i, q in zip(ran, adjusted, strict=True):
        out[i] = replace(tests[i], p_adjusted=q, correction=label, significant=q < alpha)
    for i, t in enumerate(tests):
        if t.p is not None and t.n >= min_n and t.n_informative == 0:
            out[i] = replace(t, p_adjusted=t.p, correction=LEFT_OUT, significant=False)
    return out


def verdict(
    test: PairedTest, *, higher_is_better: bool | None, min_n: int = DEFAULT_MIN_N, band: float | None = None
) -> Verdict:
    """The row's verdict once ``apply_family`` ran: not comparable (no pair), too few paired queries, no
    significant change, within judge noise (|Δ| ≤ ``band``), else better / worse by the metric's direction
    (changed when it has none)."""
    if test.n == 0:
        return "not comparable"
    if test.n < min_n or test.p is None:
        return "too few paired queries"
    if not test.significant:
        return "no significant change"
    delta = test.effect.mean_diff
    if band is not None and abs(delta) <= band:
        return "within judge noise"
    if higher_is_better is None or delta == 0:
        return "changed"
    return "better" if (delta > 0) == higher_is_better else "worse"


@dataclass(frozen=True)
class FamilyRow:
    """One (candidate, metric) of ``compare_family``: its test after the family correction and its verdict."""

    candidate: str
    metric: str
    test: PairedTest
    verdict: Verdict
    within_noise: bool | None  # None when no noise band was given for the metric

    @property
    def changed(self) -> bool:
        """Significant after correction and outside the judge's noise: what a CI gate acts on."""
        return bool(self.test.significant) and not self.within_noise


def compare_family(
    baseline: Mapping[str, Any],
    candidates: Mapping[str, Mapping[str, Any]],
    kinds: Mapping[str, MetricKind],
    *,
    method: Correction = "holm",
    alpha: float = 0.05,
    min_n: int = DEFAULT_MIN_N,
    noise: Mapping[str, float] | None = None,
    higher_is_better: Mapping[str, bool | None] | None = None,
    seed: int = 42,
    n_resamples: int = 10_000,
) -> list[FamilyRow]:
    """Every candidate against the baseline on every metric (per-query arrays aligned on the same queries, NaN =
    missing), the test by the metric's kind (``paired_tests``; one generator per candidate, seeded by ``seed`` and
    the candidate's name), corrected over the whole family of metrics × candidates (``apply_family``).
    ``noise``: metric → band (``agreement.noise_band``) inside which |Δ mean| is judge noise."""
    keys = [(c, m) for c in candidates for m in baseline if m in candidates[c]]
    tests: list[PairedTest] = []
    for cand in candidates:
        samples = [PairedSample(baseline[m], candidates[cand][m], kinds[m]) for c, m in keys if c == cand]
        rng = paired_generator(seed, cand)
        tests += paired_tests(samples, rng=rng, n_resamples=n_resamples)
    corrected = apply_family(tests, method=method, alpha=alpha, min_n=min_n)
    rows = []
    for (cand, metric), test in zip(keys, corrected, strict=True):
        band = None if noise is None else noise.get(metric)
        hib = None if higher_is_better is None else higher_is_better.get(metric)
        inside = None if band is None else bool(abs(test.effect.mean_diff) <= band)
        rows.append(FamilyRow(cand, metric, test, verdict(test, higher_is_better=hib, min_n=min_n, band=band), inside))
    return rows


# -- Westfall–Young step-down minP over joint sign flips --------------------------------------------------------------

WY_NAME = "Westfall–Young step-down minP over joint sign flips"


def flip_scores(a: Any, b: Any, kind: MetricKind) -> np.ndarray:
    """Per query, the score whose signed sum is the test's statistic under sign flips: B − A (continuous, and
    pass/fail as 0/1: |Σ d| is McNemar's |b − c|), the signed rank of |B − A| (ordinal: Wilcoxon's W⁺ − W⁻);
    0 where either side is NaN (a query a metric does not pair adds nothing to its statistic under any flip)."""
    x = np.asarray(a, dtype=np.float64).ravel()
    y = np.asarray(b, dtype=np.float64).ravel()
    d = y - x
    d[np.isnan(d)] = 0.0
    if kind == "boolean":
        return np.sign(d)
    if kind != "ordinal":
        return d
    out = np.zeros(d.size)
    nz = d != 0
    if nz.any():
        ranks, _, _ = _signed_ranks(d[nz])
        out[nz] = np.sign(d[nz]) * ranks
    return out


class FlipBlock:
    """One block of Westfall–Young's flip scores as the flips read it: the tests among the columns (``columns``: all
    when None) of a (queries × tests) matrix — an array, or anything with a ``shape`` whose row slices are arrays —
    over its informative queries (a non-zero score in one of them), a slice of rows at a time: neither the rows nor
    the columns are copied out whole."""

    def __init__(self, z: Any, columns: Sequence[int] | None = None, *, every_row: bool = False) -> None:
        self.z = z if hasattr(z, "shape") and not isinstance(z, np.ndarray) else np.asarray(z, dtype=np.float64)
        if len(self.z.shape) != 2:
            raise ValueError(f"scores must be a (queries × tests) matrix, got shape {self.z.shape}")
        whole = columns is None or list(columns) == list(range(self.z.shape[1]))
        self.columns = None if whole else np.asarray(columns, dtype=np.int64)
        self.width = self.z.shape[1] if self.columns is None else self.columns.size
        self.rows: np.ndarray | None = None  # the informative queries' rows (None: all, as they are)
        if not every_row:
            keep = np.concatenate([np.any(part != 0, axis=1) for part in self._slices(self.z.shape[0])] or [[]])
            self.rows = None if keep.all() else np.flatnonzero(keep)
        self.height = self.z.shape[0] if self.rows is None else self.rows.size

    def part(self, start: int, stop: int) -> np.ndarray:
        """Rows ``start``..``stop`` of the informative queries, in the chosen columns."""
        if self.rows is None:
            z = self.z[start:stop]
        else:
            at = self.rows[start:stop]
            z = self.z[int(at[0]) : int(at[-1]) + 1][at - at[0]] if at.size else np.zeros((0, self.z.shape[1]))
        return z if self.columns is None else z[:, self.columns]

    def _slices(self, height: int) -> Iterator[np.ndarray]:
        step = max(1, _WORK_CELLS // max(1, self.width))
        for start in range(0, height, step):
            yield self.part(start, start + step)

    @cached_property
    def sums(self) -> tuple[np.ndarray, np.ndarray]:
        """Per test, Σ z (the observed statistic's sum) and Σ |z|."""
        total, size = np.zeros(self.width), np.zeros(self.width)
        for part in self._slices(self.height):
            total += part.sum(axis=0)
            size += np.abs(part).sum(axis=0)
        return total, size


def _flip_stats(blocks: Sequence[Any], n_resamples: int, rng: Any) -> np.ndarray:
    """|Σᵢ sᵢ·zᵢⱼ| per flip (rows) and test (columns), row 0 the observed assignment (every sᵢ = +1), for the
    block-diagonal z of ``blocks`` (``FlipBlock``s, or arrays: every row; their rows stacked, their columns side by
    side, zero elsewhere): every one of the 2^n assignments when 2^n ≤ ``n_resamples`` (exact), else
    ``n_resamples`` random ones (one Monte Carlo draw for every test), drawn a block of queries at a time
    (``_WORK_CELLS`` signs held at once) and multiplied by each block's rows among them."""
    blocks = [b if isinstance(b, FlipBlock) else FlipBlock(b, every_row=True) for b in blocks]
    n = sum(b.height for b in blocks)
    widths = np.cumsum([0] + [b.width for b in blocks])
    total = np.concatenate([b.sums[0] for b in blocks])[None, :]
    if n <= 30 and 2**n <= n_resamples:
        dense = np.zeros((n, int(widths[-1])))
        top = 0
        for b, c0, c1 in zip(blocks, widths[:-1], widths[1:], strict=True):
            dense[top : top + b.height, c0:c1] = b.part(0, b.height)
            top += b.height
        codes = np.arange(2**n, dtype=np.int64)
        return np.abs((1.0 - 2.0 * ((codes[:, None] >> np.arange(n, dtype=np.int64)) & 1)) @ dense)
    partial = np.zeros((n_resamples, int(widths[-1])))
    step = max(1, _WORK_CELLS // n_resamples)
    tops = np.cumsum([0] + [b.height for b in blocks])
    for start in range(0, n, step):
        stop = min(n, start + step)
        bits = _int8_bits(rng, n_resamples, stop - start)
        for b, top, c0, c1 in zip(blocks, tops[:-1], widths[:-1], widths[1:], strict=True):
            lo, hi = max(start, top), min(stop, top + b.height)
            if lo < hi:
                _add_product(
                    partial[:, c0:c1], bits[:, lo - start : hi - start], b.part(lo - top, hi - top), signs=True
                )
    return np.abs(np.vstack([total, total - 2.0 * partial]))


def _int8_bits(rng: Any, rows: int, cols: int) -> np.ndarray:
    """The draw of ``rng.integers(0, 2, size=(rows, cols), dtype=np.int8)`` as bytes whose top bit is that draw's
    bit: numpy draws such an array as the top bit of each byte of ``ceil(rows·cols / 4)`` 32-bit words, low byte
    first, a last word's spare bytes unused; these are the same words, and the generator is left where that call
    leaves it."""
    return _random_bytes(rng, rows * cols).reshape(rows, cols)


def _random_bytes(rng: Any, size: int) -> np.ndarray:
    """``rng.bytes(size)`` as an array, at a third of its cost. numpy makes those bytes from the little-endian
    32-bit words of ``rng.integers(0, 2**32, ceil(size / 4), np.uint32)``, which it takes from the bit generator's
    64-bit outputs, low half first, keeping a spare high half (``has_uint32``, ``uinteger`` in the generator's
    state) for the next 32-bit draw; here the outputs are drawn at once and the spare half is used and kept the same
    way. A generator without that state draws through ``bytes``."""
    bg = rng.bit_generator
    state = bg.state
    count = -(-size // 4)
    if "has_uint32" not in state or count == 0:
        return np.frombuffer(rng.bytes(size), dtype=np.uint8)
    head = np.array([state["uinteger"]] if state["has_uint32"] else [], "<u4")
    if head.size:
        state["has_uint32"] = 0
        bg.state = state
    rest = count - head.size
    words = bg.random_raw(-(-rest // 2)).astype("<u8", copy=False).view("<u4")
    if rest % 2:  # the last output's high half waits for the next draw, as numpy leaves it
        state = bg.state
        state["has_uint32"], state["uinteger"] = 1, int(words[-1])
        bg.state = state
    words = np.concatenate([head, words[:rest]]) if head.size else words[:rest]
    return words.view(np.uint8)[:size]


def _resampled_p(stats: np.ndarray, tol: np.ndarray) -> np.ndarray:
    """Per column, each row's p among the rows: the share of rows whose statistic reaches it."""
    rows = stats.shape[0]
    out = np.empty_like(stats)
    for j in range(stats.shape[1]):
        ordered = np.sort(stats[:, j])
        out[:, j] = (rows - np.searchsorted(ordered, stats[:, j] - tol[j], side="left")) / rows
    return out


def westfall_young(scores: Any, *, n_resamples: int = 10_000, rng: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """Westfall & Young's step-down minP (1993, Algorithm 4.1) for m two-sided sign-flip tests sharing n queries.

    ``scores`` (n × m, ``flip_scores`` per column; or a list of such arrays, the blocks of one block-diagonal
    matrix, rows stacked and columns side by side: tests on disjoint queries held without their zeros): test j's
    statistic is |Σᵢ sᵢ·scoresᵢⱼ| under one flip vector s for all m tests at once, so correlated tests (copies of
    one metric at another k) share their flips and cost the family nothing. Only queries with a non-zero score in
    some test are flipped: exact over all 2^n' of them when 2^n' ≤ ``n_resamples``, else the observed assignment
    plus ``n_resamples`` random ones from ``rng``. Returns (the raw p of each test under these flips, the adjusted
    p): with the tests ordered by raw p, p̃₍ᵢ₎ is the share of flips whose smallest p among the tests ranked i..m
    reaches p₍ᵢ₎, made monotone; strong control of the family-wise error under subset pivotality (each test's null
    distribution is its sign-flip's alone)."""
    blocks = scores if isinstance(scores, list) else [scores]
    blocks = [b if isinstance(b, FlipBlock) else FlipBlock(b) for b in blocks]  # uninformative queries never flip
    m = sum(b.width for b in blocks)
    if m == 0:
        return np.zeros(0), np.zeros(0)
    stats = _flip_stats(blocks, n_resamples, rng if rng is not None else paired_generator(0, ""))
    tol = 1e-9 * np.maximum(1.0, np.concatenate([b.sums[1] for b in blocks]))
    p_all = _resampled_p(stats, tol)
    raw = p_all[0]
    order = np.argsort(raw, kind="stable")
    # per flip, the smallest p among the tests ranked i..m (successive minima from the least significant)
    tail_min = np.minimum.accumulate(p_all[:, order][:, ::-1], axis=1)[:, ::-1]
    adjusted_sorted = np.maximum.accumulate(np.mean(tail_min <= raw[order] + 1e-12, axis=0))
    adjusted = np.empty(m)
    adjusted[order] = np.minimum(adjusted_sorted, 1.0)
    return raw, adjusted
