"""The bounded interval methods and the test that belongs to the pair interval, each pinned against an independent
computation: the Wilson quadratic solved with numpy, scipy.stats' t quantiles and exact binomial bound, the MOVER
formula written out by hand (tests/stats_by_hand.py), scipy's root finder and published tables."""

import math

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.stats import binomtest, ttest_rel
from stats_by_hand import mover_by_hand, selector_interval_by_hand

from hermit_tui.core.stats.intervals import (
    mean_interval,
    no_spread_share,
    pair_interval,
    pair_p_value,
    t_quantile,
    task_mean_interval,
    wilson_bounds,
)

T3 = 3.182446305  # t(0.975, 3), published tables

#: pair_interval's and pair_p_value's positional arguments
PairArgs = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, bool, bool, float, float]


def wilson_by_quadratic(p: float, n: float, c: float) -> tuple[float, float]:
    """The set {m : (p - m)^2 <= c^2 m (1 - m) / n}: the roots of (1 + c^2/n) m^2 - (2p + c^2/n) m + p^2 = 0."""
    roots = np.roots([1 + c * c / n, -(2 * p + c * c / n), p * p])
    return float(min(roots.real)), float(max(roots.real))


def test_score_interval_is_wilson_with_an_effective_sample_size_where_the_floor_does_not_bind():
    # 40 tasks spread over the middle: n_eff = p (1 - p) / se^2; the floor (q = 0.088) lies inside Wilson's
    values = [0.2, 0.4, 0.5, 0.6, 0.3, 0.7, 0.5, 0.4, 0.6, 0.5, 0.1, 0.9, 0.35, 0.55, 0.45, 0.8, 0.25, 0.65] * 2
    values += [0.5, 0.3, 0.5, 0.3]
    got = mean_interval(float(np.mean(values)), float(np.std(values, ddof=1)), 40, 0.0, 1.0)
    p, se = np.mean(values), np.std(values, ddof=1) / math.sqrt(40)
    q = no_spread_share(40)
    assert got is not None
    assert got.low < p - q * p and got.high > p + q * (1 - p)
    assert got.method == "score" and got.n_eff == pytest.approx(p * (1 - p) / se**2)
    assert got.n_eff is not None
    assert (got.low, got.high) == pytest.approx(wilson_by_quadratic(float(p), got.n_eff, t_quantile(39)), abs=1e-9)
    assert (got.low, got.high) == pytest.approx(selector_interval_by_hand(values, 0.0, 1.0), abs=1e-9)


def test_the_no_spread_floor_widens_a_sample_that_saw_no_rare_task():
    # 64 tasks x 10 repeats, one task solved once: the score interval alone ends near 0.003 (n_eff huge); a share
    # of 5.6% of tasks solved every time could have gone unseen, so the upper bound is at least p + q (1 - p)
    values = [0.0] * 63 + [0.1]
    got = mean_interval(float(np.mean(values)), float(np.std(values, ddof=1)), 64, 0.0, 1.0)
    q = binomtest(0, 64).proportion_ci(0.95, method="exact").high  # the exact bound for 0 events in 64
    p = np.mean(values)
    assert got is not None
    assert got.high == pytest.approx(p + q * (1 - p), abs=1e-9) and got.high > 0.05
    assert (got.low, got.high) == pytest.approx(selector_interval_by_hand(values, 0.0, 1.0), abs=1e-9)


def test_effective_sample_size_is_at_least_the_tasks_and_at_most_the_attempts_for_pass_fail():
    # pass/fail scores, 16 tasks x 2 repeats: n_eff would exceed the attempts' worth G^2 / sum(1/k) = 32, held there
    means = np.array([0.5] * 10 + [1.0] * 6)
    counts = np.full(16, 2)
    capped = task_mean_interval(means, counts, True, 0.0, 1.0)
    assert capped is not None
    assert capped.n_eff == pytest.approx(32.0)
    assert (capped.low, capped.high) == pytest.approx(
        selector_interval_by_hand(list(means), 0.0, 1.0, max_n=32.0), abs=1e-9
    )
    uncapped = task_mean_interval(means, counts, False, 0.0, 1.0)
    assert uncapped is not None
    assert uncapped.n_eff is not None
    assert uncapped.n_eff > 32 and uncapped.high - uncapped.low < capped.high - capped.low


def test_no_spread_bound_is_clopper_pearson_for_all_solved_and_scales_to_the_range():
    for g in (2, 4, 16, 500):
        q = no_spread_share(g)
        assert q == pytest.approx(binomtest(0, g).proportion_ci(0.95, method="exact").high, rel=1e-9)
        all_one = mean_interval(1.0, 0.0, g, 0.0, 1.0)
        assert all_one is not None
        assert all_one.method == "no-spread" and (all_one.low, all_one.high) == pytest.approx((1 - q, 1.0))
        none = mean_interval(0.0, 0.0, g, 0.0, 1.0)
        assert none is not None
        assert (none.low, none.high) == pytest.approx((0.0, q))
    # a constant shift of .25 on 12 tasks, differences in [-1, 1]: [.25 - q * 1.25, .25 + q * .75], never zero width
    q12 = 1 - 0.025 ** (1 / 12)
    a = np.linspace(0.1, 0.6, 12)
    shift = pair_interval(a, a + 0.25, np.ones(12), np.ones(12), False, False, 0.0, 1.0)
    assert shift is not None
    assert shift.method == "no-spread"
    assert (shift.low, shift.high) == pytest.approx((0.25 - q12 * 1.25, 0.25 + q12 * 0.75))
    scaled = mean_interval(100.0, 0.0, 4, 0.0, 100.0)
    assert scaled is not None
    assert (scaled.low, scaled.high) == pytest.approx((100 * (1 - no_spread_share(4)), 100.0))


def test_pair_interval_is_the_mover_formula_and_the_paired_t_in_the_middle():
    rng = np.random.default_rng(3)
    a = rng.beta(2, 2, size=10)
    b = np.clip(a + rng.normal(0.1, 0.15, size=10), 0, 1)
    got = pair_interval(a, b, np.full(10, 3), np.full(10, 3), False, False, 0.0, 1.0)
    assert got is not None
    assert got.method == "hybrid"
    assert (got.low, got.high) == pytest.approx(mover_by_hand(list(a), list(b)), abs=1e-9)
    # 400 tasks in the middle of the range: Newcombe's hybrid is the paired t interval (to the score intervals'
    # slight asymmetry)
    a = rng.beta(20, 20, size=400)
    b = np.clip(a + rng.normal(0.02, 0.1, size=400), 0, 1)
    big = pair_interval(a, b, np.ones(400), np.ones(400), False, False, 0.0, 1.0)
    ref = ttest_rel(b, a).confidence_interval(0.95)
    assert big is not None
    assert (big.low, big.high) == pytest.approx((ref.low, ref.high), abs=2e-3)


def test_pair_interval_keeps_the_long_tail_of_a_rare_success_with_one_repeat():
    # b: 10 repeats on 8 tasks at ~5%; a: one repeat, never solved. The differences are small and positive, but a's
    # one-attempt zeros cannot exclude an unseen share of solved tasks: the interval reaches well below 0
    b = np.array([0.1, 0.0, 0.0, 0.1, 0.0, 0.0, 0.2, 0.0])
    a = np.zeros(8)
    got = pair_interval(a, b, np.ones(8), np.full(8, 10), True, True, 0.0, 1.0)
    assert got is not None
    assert got.low < -0.3 < 0 < np.mean(b) < got.high
    assert (got.low, got.high) == pytest.approx(mover_by_hand(list(a), list(b), max_a=8.0, max_b=80.0), abs=1e-9)


def test_the_p_value_inverts_the_interval_so_the_two_never_disagree():
    rng = np.random.default_rng(11)
    for trial in range(60):
        g = int(rng.integers(2, 40))
        ka, kb = int(rng.choice([1, 3, 10])), int(rng.choice([1, 3, 10]))
        pa = rng.beta(0.5, 2, size=g)
        a = rng.binomial(ka, pa) / ka
        b = rng.binomial(kb, np.clip(pa + rng.normal(0.1, 0.2, size=g), 0, 1)) / kb
        args: PairArgs = (a, b, np.full(g, ka), np.full(g, kb), True, True, 0.0, 1.0)
        p = pair_p_value(*args)
        assert p is not None
        ci = pair_interval(*args)
        assert ci is not None
        assert (p < 0.05) == (ci.low > 0 or ci.high < 0), trial
        if 1e-12 < p < 1:  # at level 1 - p, an end of the interval touches 0 (independently: scipy's brentq)

            def edge(alpha: float, args: PairArgs = args) -> float:
                iv = pair_interval(*args, level=1 - alpha)
                assert iv is not None
                return iv.low if np.mean(args[1]) > np.mean(args[0]) else -iv.high

            root = brentq(edge, 1e-14, 1 - 1e-9, xtol=1e-14)
            assert p == pytest.approx(root, rel=1e-3), trial


def test_wilson_bounds_match_published_values():
    # Newcombe (1998), Statistics in Medicine 17:857, Table I, method 3 (Wilson score, no continuity correction)
    z = 1.959963984540054
    assert wilson_bounds(81 / 263, 263, z) == pytest.approx((0.2553, 0.3662), abs=5e-5)
    assert wilson_bounds(15 / 148, 148, z) == pytest.approx((0.0624, 0.1605), abs=5e-5)
    assert wilson_bounds(0 / 20, 20, z) == pytest.approx((0.0, 0.1611), abs=5e-5)
    assert wilson_bounds(1 / 29, 29, z) == pytest.approx((0.0061, 0.1718), abs=5e-5)


def test_random_small_samples_never_leave_the_range_and_never_collapse():
    rng = np.random.default_rng(5)
    for _ in range(1000):
        g = int(rng.integers(2, 12))
        values = rng.choice([0.0, 0.25, 0.5, 1.0], size=g) if rng.random() < 0.5 else rng.beta(0.3, 0.3, size=g)
        got = mean_interval(values.mean(), values.std(ddof=1), g, 0.0, 1.0)
        assert got is not None
        assert 0.0 <= got.low < got.high <= 1.0
        assert got.low <= values.mean() <= got.high
        other = rng.choice([0.0, 0.5, 1.0], size=g)
        d = pair_interval(values, other, np.ones(g), np.ones(g), False, False, 0.0, 1.0)
        assert d is not None
        assert -1.0 <= d.low < d.high <= 1.0
        assert d.low <= np.mean(other - values) <= d.high


def test_four_tasks_stay_in_range_and_fewer_than_two_give_no_interval():
    got = mean_interval(0.375, 2 * 0.762 / T3, 4, 0.0, 1.0)
    assert got is not None
    assert 0 <= got.low < 0.375 < got.high <= 1
    assert mean_interval(0.5, 0.1, 1, 0.0, 1.0) is None
    assert pair_interval(np.array([0.3]), np.array([0.5]), np.ones(1), np.ones(1), True, True, 0, 1) is None
    assert pair_p_value(np.array([0.3]), np.array([0.5]), np.ones(1), np.ones(1), True, True, 0, 1) is None


def test_the_audits_worst_cells_now_cover():
    """Issue 25's audit: 10 vs 1 repeats at base 0.05 covered 0.774 (8 tasks, effect 0.05), and 10 repeats at base
    0.05 made the selector interval cover about 0.9 (16 tasks); the former intervals, run on seeded data sets of
    these two kinds, covered 0.76 and 0.87. 4,000 seeded data sets each (Monte-Carlo error
    +/-0.007); the intervals are computed by the same array functions the views call through pair_interval."""
    from hermit_tui.core.stats.intervals import attempts_cap, pair_bounds, unit_bounds

    rng = np.random.default_rng(25)
    n, g, mu, kappa, delta = 4000, 8, 0.05, 2.0, 0.05
    p = rng.beta(mu * kappa, (1 - mu) * kappa, size=(n, g))
    pb = p + delta * (1 - p) / (1 - mu)
    ma, mb = rng.binomial(10, p) / 10, rng.binomial(1, pb) / 1.0  # a: 10 repeats, b: 1 (the former interval: 0.76)
    low, high, _ = pair_bounds(ma, mb, attempts_cap(np.full(g, 10)), attempts_cap(np.ones(g)))
    assert np.mean((low <= delta) & (delta <= high)) >= 0.93
    g = 16
    p = rng.beta(mu * 1.0, (1 - mu) * 1.0, size=(n, g))
    m = rng.binomial(10, p) / 10  # the former interval: 0.87
    low, high, _ = unit_bounds(m.mean(1), m.var(1, ddof=1), g, attempts_cap(np.full(g, 10)))
    assert np.mean((low <= mu) & (mu <= high)) >= 0.93


EIGHT_A = [0.9, 0.1, 1.0, 0.0, 0.6, 0.3, 0.8, 0.5]  # 10 repeats: U-shaped task success, as the grid's kappa 1
EIGHT_B = [1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 1.0]  # 1 repeat


@pytest.mark.parametrize(
    ("ma", "mb"),
    [
        ([2 / 3, 1 / 3], [0.5, 1 / 3]),
        ([0.2, 0.5, 0.9], [0.4, 0.6, 0.8]),
        ([0.0, 1.0, 0.5], [0.3, 1.0, 0.9]),
        (EIGHT_A, EIGHT_B),
        (EIGHT_A + [0.7, 0.2, 0.4, 0.9, 0.0, 0.6, 0.3], EIGHT_B + [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0]),
    ],
)
def test_below_sixteen_paired_tasks_the_pair_interval_is_at_least_the_t_interval_on_the_differences(ma, mb):
    """With 2 tasks the correlation of the two selectors' task means is always +-1, which collapsed the recombined
    interval (a 2-task slice showed p < 0.001); up to 15 tasks the two sides' score intervals are narrower in the
    middle than the t interval on the differences (by 1 / sqrt(1 + t^2 / T): 0.77 at 8 tasks) while the variance
    of a difference has no known form, and the 10-vs-1 pair covered 0.925 at 8 tasks: below 16 tasks the interval
    holds the t interval on the differences (scipy's t quantile here)."""
    import numpy as np
    from scipy import stats

    from hermit_tui.core.stats.intervals import pair_interval

    a, b = np.array(ma), np.array(mb)
    k = np.full(len(a), 3)
    iv = pair_interval(a, b, k, k, False, False, 0.0, 1.0)
    assert iv is not None
    d = b - a
    half = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
    assert iv.low <= max(d.mean() - half, -1.0) + 1e-12 and iv.high >= min(d.mean() + half, 1.0) - 1e-12


def test_the_score_interval_holds_the_poisson_bound_within_three_events_of_an_end():
    """Brown, Cai & DasGupta 2001 (section 4.1.1): next to an end Wilson's interval dips (14 of 16 solved: its upper
    bound 0.968 leaves out a 0.97 success rate); within 3 events of the end the bound is the one-sided Poisson
    one, ``1 - chi2(0.05; 2 x) / (2 n)``: 1 - 0.355362 / 16 = 0.977790 (chi-square table: chi2(0.05; 4) =
    0.710723)."""
    from scipy.stats import chi2

    from hermit_tui.core.stats.special import poisson_lower

    means = np.array([1.0] * 14 + [0.0] * 2)
    got = task_mean_interval(means, np.ones(16), True, 0.0, 1.0)
    assert got is not None and got.n_eff == pytest.approx(16.0)
    assert got.high == pytest.approx(1 - 0.710723 / 2 / 16, abs=2e-6)
    assert got.high == pytest.approx(1 - chi2.ppf(0.05, 4) / 2 / 16, abs=1e-9)
    assert got.low == pytest.approx(wilson_by_quadratic(14 / 16, 16.0, t_quantile(15))[0], abs=1e-9)  # far end: Wilson
    assert (got.low, got.high) == pytest.approx(selector_interval_by_hand(list(means), 0.0, 1.0, max_n=16.0), abs=1e-9)
    # 4 events from the end: Wilson's own bound
    four = task_mean_interval(np.array([1.0] * 12 + [0.0] * 4), np.ones(16), True, 0.0, 1.0)
    assert four is not None
    assert (four.low, four.high) == pytest.approx(wilson_by_quadratic(12 / 16, 16.0, t_quantile(15)), abs=1e-9)
    # the bound on the effective-sample-size scale: a fractional count of events, scipy's chi-square quantile
    for x in (0.2, 1.0, 1.7, 2.0, 3.0):
        for alpha in (0.05, 0.01, 1e-6):
            assert poisson_lower(x, alpha) == pytest.approx(chi2.ppf(alpha, 2 * x) / 2, rel=1e-9)


@pytest.mark.parametrize("n", [8, 16, 32, 64, 128])
def test_pass_fail_with_one_attempt_covers_at_least_093_at_every_success_rate(n):
    """With one attempt per task the number solved is binomial, so the coverage at a success rate p is a sum over
    the n + 1 outcomes (scipy's binomial pmf). Wilson's interval dipped to 0.85-0.88 next to the ends (0.852 at 32
    tasks, p = 0.995); with the Poisson bound the lowest over p in [0.5, 0.999] is at least 0.93."""
    from scipy.stats import binom

    x = np.arange(n + 1)
    ends = []
    for k in x:
        iv = task_mean_interval(np.array([1.0] * k + [0.0] * (n - k)), np.ones(n), True, 0.0, 1.0)
        assert iv is not None and 0.0 <= iv.low < iv.high <= 1.0
        ends.append((iv.low, iv.high))
    low, high = np.array(ends).T
    ps = np.linspace(0.5, 0.999, 400)
    cover = np.array([np.sum(binom.pmf(x, n, p) * ((low <= p) & (p <= high))) for p in ps])
    assert cover.min() >= 0.93


def test_the_ten_versus_one_pair_at_eight_tasks_covers():
    """The grid's one miss at T >= 8 (issue 25): 8 tasks, base 0.5, concentration 1, effect 0.2, 10 vs 1 repeats
    covered 0.925 (0.932 over 40,000 data sets, the misses almost all on the upper side); with the t floor below
    16 tasks 0.956. 4,000 seeded data sets (Monte-Carlo error +/-0.007)."""
    from hermit_tui.core.stats.intervals import attempts_cap, pair_bounds

    rng = np.random.default_rng(825)
    n, g = 4000, 8
    p = rng.beta(0.5, 0.5, size=(n, g))
    pb = p + 0.2 * (1 - p) / 0.5
    ma, mb = rng.binomial(10, p) / 10, rng.binomial(1, pb) / 1.0
    low, high, _ = pair_bounds(ma, mb, attempts_cap(np.full(g, 10)), attempts_cap(np.ones(g)))
    assert np.mean((low <= 0.2) & (0.2 <= high)) >= 0.94
    assert np.all(low >= -1) and np.all(high <= 1) and np.all(high > low)
