"""An independent reference for the cross-fitted PPI++ (#24 item 2): ppi-python's own PPI++ on each fold's
complement, combined by hand."""

from __future__ import annotations

import numpy as np


def cross_fitted_by_hand(y: np.ndarray, f: np.ndarray, f_u: np.ndarray) -> float:
    """Cross-fitted PPI++ from ppi-python: five folds (``default_rng(0).permutation`` dealt round-robin, labelled
    and unlabelled rows each; fewer than five labels: one fold per label), λ_k ppi-python's own power-tuning
    (``_calc_lam_glm``, called as ``ppi_mean_pointestimate`` calls it) on the rows outside fold k,
    θ = mean(λ_k·f_u) + mean(y − λ_k·f)."""
    from ppi_py.ppi import _calc_lam_glm

    k = min(5, max(2, y.size))
    fy = np.random.default_rng(0).permutation(y.size) % k
    fu = np.random.default_rng(0).permutation(f_u.size) % k
    lam = np.zeros(k)
    for i in range(k):
        yk, fk, uk = (a[:, None] for a in (y[fy != i], f[fy != i], f_u[fu != i]))
        if yk.shape[0] < 2 or np.var(np.concatenate([fk, uk])) == 0:
            continue  # nothing to tune on: λ = 0 (ppi-python divides by zero here)
        theta = uk.mean(0) + (yk - fk).mean(0)
        lam[i] = float(_calc_lam_glm(yk - theta, fk - theta, uk - theta, np.eye(1), clip=True))
    return float((lam[fu] * f_u).mean() + (y - lam[fy] * f).mean())
