"""The anytime-valid confidence sequence (core.stats.sequential.anytime) against a scalar transcription of Waudby-Smith
& Ramdas (2023), Theorem 2, and its time-uniform coverage by a seeded brute-force simulation that a fixed-sample
interval, looked at after every task, fails."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import t as student_t

from hermit_tui.core.stats.sequential.anytime import eb_confidence_sequence, paired_confidence_sequence


def by_the_paper(x: list[float], alpha: float = 0.05) -> list[tuple[float, float]]:
    """The PrPl-EB CS step by step, as the paper writes it (observations in [0, 1]), without intersection."""
    out, mu_prev, s2_prev = [], 0.5, 0.25
    sum_x, sum_sq, sum_lam, sum_lx, sum_vpsi = 0.0, 0.0, 0.0, 0.0, 0.0
    for t, xt in enumerate(x, start=1):
        lam = min(math.sqrt(2 * math.log(2 / alpha) / (s2_prev * t * math.log(1 + t))), 0.5)
        v = 4 * (xt - mu_prev) ** 2
        psi = (-math.log(1 - lam) - lam) / 4
        sum_lam += lam
        sum_lx += lam * xt
        sum_vpsi += v * psi
        centre = sum_lx / sum_lam
        half = (math.log(2 / alpha) + sum_vpsi) / sum_lam
        out.append((max(0.0, centre - half), min(1.0, centre + half)))
        sum_x += xt
        mu_t = (0.5 + sum_x) / (t + 1)
        sum_sq += (xt - mu_t) ** 2
        mu_prev, s2_prev = mu_t, (0.25 + sum_sq) / (t + 1)
    return out


def test_the_sequence_is_the_papers_formula_step_by_step():
    rng = np.random.default_rng(11)
    x = rng.random(60).round(3).tolist()
    low, high = eb_confidence_sequence(x, intersect=False)
    want = by_the_paper(x)
    assert low == pytest.approx([w[0] for w in want], abs=1e-12)
    assert high == pytest.approx([w[1] for w in want], abs=1e-12)
    # the running intersection, and differences in [-1, 1] mapped to [0, 1] and back
    li, hi = eb_confidence_sequence(x)
    assert li == pytest.approx(np.maximum.accumulate(low)) and hi == pytest.approx(np.minimum.accumulate(high))
    d = [2 * v - 1 for v in x]
    pl, ph = paired_confidence_sequence(d)
    assert pl == pytest.approx(2 * li - 1) and ph == pytest.approx(2 * hi - 1)
    # by hand, the first observation: lambda_1 = min(sqrt(2 log 40 / (1/4 x 1 x log 2)), 1/2) = 1/2
    lam = 0.5
    half = (math.log(40) + 4 * (x[0] - 0.5) ** 2 * (-math.log(0.5) - 0.5) / 4) / lam
    assert (low[0], high[0]) == pytest.approx((max(0, x[0] - half), min(1, x[0] + half)))
    with pytest.raises(ValueError):
        eb_confidence_sequence([0.5, 1.5])


def test_it_covers_at_every_task_at_once_where_a_fixed_interval_looked_at_each_task_does_not():
    """2,000 streams of 300 paired pass/fail tasks (p ~ Beta(1, 1), the candidate +0.2 on average): the CS misses
    the true mean at some task in at most alpha of them (plus 3 Monte-Carlo standard errors); the fixed-sample 95%
    t interval, looked at after every task from the 10th, misses in far more."""
    rng = np.random.default_rng(2025)
    streams, n, effect = 2000, 300, 0.2
    p = rng.beta(1, 1, size=(streams, n))
    pb = p + 2 * effect * (1 - p)
    d = (rng.random((streams, n)) < pb).astype(float) - (rng.random((streams, n)) < p).astype(float)
    low, high = paired_confidence_sequence(d)
    missed = np.mean(np.any((low > effect) | (high < effect), axis=1))
    assert missed <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / streams)
    k = np.arange(1, n + 1)
    mean = np.cumsum(d, axis=1) / k
    var = (np.cumsum(d**2, axis=1) - k * mean**2) / np.maximum(k - 1, 1)
    half = student_t.ppf(0.975, np.maximum(k - 1, 1)) * np.sqrt(np.maximum(var, 0) / k)
    looked = slice(9, None)
    fixed_missed = np.mean(np.any(np.abs(mean - effect)[:, looked] > half[:, looked], axis=1))
    assert fixed_missed > 0.15  # what the confidence sequence exists for
    # and it shrinks: by 300 tasks it excludes 0 in most streams
    assert np.mean(low[:, -1] > 0) > 0.8


def _first_decided_by_the_paper(x: list[float], alpha: float, margin: float | None = None) -> int | None:
    """The first n at which the paper's sequence on ``x`` (differences in [-1, 1], mapped to [0, 1]), with the
    running intersection, lies above or below 0, or within ±margin."""
    low, high = -1.0, 1.0
    for n, (lo01, hi01) in enumerate(by_the_paper([(d + 1) / 2 for d in x], alpha), start=1):
        low, high = max(low, 2 * lo01 - 1), min(high, 2 * hi01 - 1)
        if low > 0 or high < 0 or (margin is not None and -margin < low and high < margin):
            return n
    return None


@pytest.mark.parametrize("alpha", [0.05, 0.025, 0.05 / 3, 0.01])
def test_the_fewest_tasks_that_can_decide_are_those_of_the_clearest_results(alpha):
    """fewest_tasks_to_decide against the paper's sequence on a difference of +1 on every task, and no stream of
    one task fewer decides: 6,000 seeded random streams, most of them near +1, and a hill climb from +1."""
    from hermit_tui.core.stats.sequential.anytime_text import fewest_tasks_to_decide

    expected = _first_decided_by_the_paper([1.0] * 200, alpha)
    assert expected is not None and fewest_tasks_to_decide(alpha) == expected
    n = expected - 1
    rng = np.random.default_rng(5)
    streams = np.concatenate(
        [
            rng.uniform(-1, 1, (2000, n)),
            1 - rng.exponential(0.05, (2000, n)),
            np.where(rng.random((2000, n)) < 0.9, 1.0, rng.uniform(-1, 1, (2000, n))),
        ]
    ).clip(-1, 1)
    low, high = paired_confidence_sequence(np.concatenate([streams, -streams]), alpha)
    assert not np.any(low > 0) and not np.any(high < 0)
    x = np.ones(n)
    for _ in range(400):
        y = x.copy()
        i = rng.integers(n)
        y[i] = float(np.clip(y[i] - abs(rng.normal(0, 0.3)), -1, 1))
        assert paired_confidence_sequence(y, alpha)[0].max() <= paired_confidence_sequence(x, alpha)[0].max() + 1e-12


def test_with_a_margin_no_difference_on_every_task_decides_as_soon_as_the_clearest_result():
    from hermit_tui.core.stats.sequential.anytime_text import fewest_tasks_to_decide

    for margin in (0.5, 0.2, 0.1):
        zeros = _first_decided_by_the_paper([0.0] * 3000, 0.05, margin)
        ones = _first_decided_by_the_paper([1.0] * 200, 0.05)
        assert zeros is not None and ones is not None
        assert fewest_tasks_to_decide(0.05, margin) == min(zeros, ones)
