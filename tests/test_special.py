"""core/stats/special.py against scipy.special (computed independently) on a grid of the arguments the report, the
gate and the paired test call them with, and beyond."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special as sp

from hermit_tui.core.stats import special

DFS = [1, 2, 3, 4, 5, 7, 10, 11.3, 15, 29, 30, 50, 99, 100, 213, 500, 1000, 1e4, 2.5]
PS = [1e-10, 1e-6, 1e-3, 0.01, 0.025, 0.05, 0.1, 0.2, 0.49, 0.5, 0.51, 0.8, 0.9, 0.95, 0.975, 0.99, 0.999, 1 - 1e-9]


@pytest.mark.parametrize("df", DFS)
def test_t_quantile_and_cdf_match_scipy(df):
    for p in PS:
        assert special.stdtrit(df, p) == pytest.approx(sp.stdtrit(df, p), rel=1e-9, abs=1e-12)
    for t in [-40, -5, -2, -1, -0.1, 0, 0.3, 1, 1.96, 2.5, 6, 40]:
        assert special.stdtr(df, t) == pytest.approx(sp.stdtr(df, t), rel=1e-9, abs=1e-300)


def test_t_quantile_broadcasts_like_a_ufunc():
    dfs = np.array([1, 2, 5, 40, 1000])
    got = special.stdtrit(dfs, 0.975)
    assert got.shape == (5,)
    np.testing.assert_allclose(got, sp.stdtrit(dfs, 0.975), rtol=1e-12)
    assert np.ndim(special.stdtrit(5, 0.975)) == 0
    assert special.stdtrit(5, 0.5) == 0.0 and special.stdtrit(5, 1.0) == np.inf and special.stdtrit(5, 0.0) == -np.inf


def test_normal_cdf_and_quantile_match_scipy():
    for x in np.linspace(-30, 30, 121):
        assert special.ndtr(x) == pytest.approx(sp.ndtr(x), rel=1e-12, abs=1e-300)
    for p in [1e-300, 1e-20, 1e-8, 0.01, 0.02425, 0.3, 0.5, 0.8, 0.97575, 0.99, 1 - 1e-10]:
        assert special.ndtri(p) == pytest.approx(sp.ndtri(p), rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("n", [1, 2, 5, 10, 31, 100, 1000, 10000])
def test_binomial_cdf_matches_scipy(n):
    for k in [-1, *range(0, n + 1, max(1, n // 25)), n, n + 3]:
        for p in [0.5, 0.1, 0.9, 0.0, 1.0]:
            assert special.bdtr(k, n, p) == pytest.approx(sp.bdtr(k, n, p), rel=1e-9, abs=1e-300, nan_ok=True), (
                k,
                n,
                p,
            )
