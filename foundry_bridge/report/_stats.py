"""Paired statistics over per-query differences: the sign-flip randomization test (numpy, seeded). The interval of
the mean difference is Student's t (``metrics.intervals.mean_t_interval``)."""

from __future__ import annotations

import zlib
from typing import Any

__all__ = ["paired_generator", "sign_flip_test"]

_CHUNK_CELLS = 4_000_000  # resamples × queries per sign-flip draw call: part of the random stream, keep it
_WORK_CELLS = 262_144  # resamples × queries processed at once (cache-sized; does not change the random stream)


def paired_generator(seed: int, key: str) -> Any:
    """A ``numpy.random.Generator`` seeded from ``(seed, key)``: one metric's p-value never depends on which
    other metrics were compared, or in which order. compare's key names the two runs as an unordered pair, so
    swapping baseline and candidate draws the same numbers."""
    import numpy as np

    return np.random.default_rng(np.random.SeedSequence([int(seed), zlib.crc32(key.encode())]))


def sign_flip_test(diffs: Any, *, n_resamples: int = 10_000, rng: Any) -> tuple[float, str]:
    """Two-sided paired randomization (sign-flip) test of mean(diffs) = 0.

    Under the null each per-query difference is as likely positive as negative. Exact over all 2^m sign
    assignments of the m non-zero differences when 2^m ≤ ``n_resamples``; otherwise Monte Carlo with
    p = (hits + 1) / (n_resamples + 1). Returns ``(p, method)``.

    The flips are applied to the sorted |d|: with s uniform on {±1}^m, s·sgn(d) is uniform too, so
    |Σ sᵢdᵢ| and |Σ sᵢ|dᵢ|| have the same null distribution (the exact count is the same number). p then depends
    only on the multiset of |d| and on |Σ d|: negating every difference (swapping baseline and candidate) or
    listing the queries in another order gives the same p from the same generator.
    """
    import numpy as np

    d = np.asarray(diffs, dtype=np.float64)
    nonzero = d != 0
    n, m = d.size, int(np.count_nonzero(nonzero))
    if n == 0:
        return float("nan"), "none (no paired queries)"
    if m == 0:
        return 1.0, "exact (all differences are 0)"
    observed = abs(d.sum()) / n  # the zeros add nothing
    nz = np.sort(np.abs(d[nonzero]))  # the order and signs the flips see: none of the runs' (see above)
    del nonzero
    tol = 1e-12 * max(1.0, float(nz.sum()))  # the sums' rounding (the flips add in another order)
    if m <= 30 and 2**m <= n_resamples:
        total = 2**m
        hits = 0
        step = max(1, _CHUNK_CELLS // m)
        for start in range(0, total, step):
            codes = np.arange(start, min(total, start + step), dtype=np.int64)
            bits = (codes[:, None] >> np.arange(m, dtype=np.int64)) & 1
            stats = np.abs((1 - 2 * bits) @ nz) / n
            hits += int(np.count_nonzero(stats >= observed - tol))
        return hits / total, f"exact sign-flip over {total} assignments"
    # The signs are drawn in calls of ``_CHUNK_CELLS // m`` resamples (as always: numpy discards the unused bytes
    # of its last 32-bit draw at the end of each call, so the call sizes are part of the stream). Each call's
    # resamples are drawn and tested in cache-sized pieces of a multiple of 4 resamples: the same bytes, in order.
    hits = 0
    step = max(1, _CHUNK_CELLS // m)
    piece = max(4, _WORK_CELLS // m // 4 * 4)
    done = 0
    while done < n_resamples:
        size = min(step, n_resamples - done)
        for start in range(0, size, piece):
            signs = rng.integers(0, 2, size=(min(piece, size - start), m), dtype=np.int8) * 2 - 1
            stats = np.abs(signs @ nz) / n
            hits += int(np.count_nonzero(stats >= observed - tol))
        done += size
    return (hits + 1) / (n_resamples + 1), f"Monte Carlo sign-flip, {n_resamples} resamples"
