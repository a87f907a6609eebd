"""The sequential comparison (stop when decided): its boundaries against a published table and an independent
multivariate-normal computation, its decisions on clear cases, and a seeded A/A check of its false-claim rate."""

import math

import numpy as np
import pytest
from scipy.stats import multivariate_normal, norm

from hermit_tui.core.stats.sequential.look import METHOD
from hermit_tui.core.stats.sequential.monitor import SequentialMonitor
from hermit_tui.core.stats.sequential.repeated import sequential_look, variance_components
from hermit_tui.core.stats.sequential.schedule import round_boundaries
from hermit_tui.core.stats.sequential.spending import (
    SPEND_SHARE,
    candidate_spend,
    hsd_spending,
    obf_spending,
    spending_boundaries,
)


def test_boundaries_match_the_published_obrien_fleming_type_table():
    # Lan-DeMets O'Brien-Fleming-type spending, 5 equally spaced looks, 0.025 per side (Reboussin, DeMets, Kim &
    # Lan 2000, the ldbounds program; the same in gsDesign): 4.8769, 3.3569, 2.6803, 2.2898, 2.0310
    got = spending_boundaries((1, 2, 3, 4, 5), None)
    assert got == pytest.approx([4.8769, 3.3569, 2.6803, 2.2898, 2.0310], abs=2e-4)
    assert spending_boundaries((3.0,), None) == pytest.approx([norm.ppf(0.975)])  # one look: the fixed design
    assert obf_spending(1.0) == pytest.approx(0.05) and obf_spending(0.0) == 0.0


def test_boundaries_spend_as_promised_by_an_independent_multivariate_normal_computation():
    info = (1.0, 1.7, 2.2, 3.1)
    times = tuple(i / 3.1 for i in info)
    cs = spending_boundaries(info, None)
    corr = np.array([[math.sqrt(min(a, b) / max(a, b)) for b in info] for a in info])
    stay_before = 1.0
    for j in range(len(info)):
        k = j + 1
        lim = np.array(cs[:k])
        stay = multivariate_normal(mean=np.zeros(k), cov=corr[:k, :k]).cdf(lim, lower_limit=-lim, rng=1)
        exit_here = stay_before - stay
        want = obf_spending(times[j]) - (obf_spending(times[j - 1]) if j else 0.0)
        assert exit_here == pytest.approx(want, abs=2e-5)
        stay_before = stay


def test_a_clear_improvement_stops_at_once_and_identical_selectors_never_claim():
    rng = np.random.default_rng(1)
    g = 60
    p = rng.uniform(0.05, 0.35, size=g)
    a = (rng.random((g, 1)) < p[:, None]).astype(float)
    b = (rng.random((g, 1)) < (p + 0.6)[:, None]).astype(float)
    look = sequential_look("none", "final", a, b, 8)
    assert look.decided_at is not None
    assert look.ci_low is not None
    assert look.ci_high is not None
    assert look.decision == "improvement" and look.decided_at == 1 and look.ci_low > 0 and look.ci_high <= 1
    # one candidate spends 0.9 x 0.05 = 0.045; round 1 of 8 spends alpha(1/8) of it by Hwang-Shih-DeCani's function
    # with gamma -2: 0.045 (1 - e^(2/8)) / (1 - e^2), by hand -> c = 3.090
    spent = 0.045 * (1 - math.exp(2 / 8)) / (1 - math.exp(2))
    assert look.boundary_z == pytest.approx(norm.ppf(1 - spent / 2)) == pytest.approx(3.090, abs=1e-3)
    assert look.alpha_spent == pytest.approx(spent) and look.boundary_alpha == pytest.approx(0.045)
    # the former design (summaries before issue 25, item 4): O'Brien-Fleming-type over the whole alpha
    assert round_boundaries(8, 0.05, "obf") == pytest.approx(spending_boundaries(tuple(range(1, 9)), None))
    assert look.method == METHOD and look.summary() == {
        "baseline": "none",
        "decision": "improvement",
        "rounds": 1,
        "max_rounds": 8,
        "method": METHOD,
        "alpha": 0.05,
        "spend": pytest.approx(0.045),
        "split_over": 1,
        "margin": None,
        "decided_at": 1,
        "interval": [look.ci_low, look.ci_high],
        "batches": 1,
        "tasks_looked": 60,
        "total_tasks": 60,
    }
    worse = sequential_look("none", "root", b, a, 8)
    assert worse.ci_high is not None
    assert worse.ci_low is not None
    assert worse.decision == "regression" and worse.ci_high < 0 and worse.ci_low >= -1
    same = SequentialMonitor("none", "none-again", 3)
    for _ in range(3):
        look = same.add_round(a[:, 0], a[:, 0])
    assert look.ci_low is not None
    assert look.ci_high is not None
    assert look.decision == "undecided" and look.rounds == 3 and look.ci_low < 0 < look.ci_high
    with pytest.raises(ValueError):
        same.add_round(a[:, 0], a[:, 0])


def test_equivalence_within_a_margin_and_the_monitor_keeps_its_first_decision():
    rng = np.random.default_rng(2)
    g = 400
    p = rng.uniform(0.2, 0.8, size=g)
    monitor = SequentialMonitor("none", "root", 4, margin=0.1)
    looks = []
    for _ in range(4):
        a = (rng.random(g) < p).astype(float)
        b = (rng.random(g) < p).astype(float)
        looks.append(monitor.add_round(a, b))
    decided = [lk for lk in looks if lk.decision != "undecided"]
    last = decided[-1]
    assert last.ci_low is not None and last.ci_high is not None
    assert decided and decided[0].decision == "equivalent" and -0.1 < last.ci_low < last.ci_high < 0.1
    first = decided[0].decided_at
    assert all(lk.decided_at == first and lk.decision == "equivalent" for lk in decided)
    # the interval is the running intersection: never wider than before
    widths = [lk.ci_high - lk.ci_low for lk in looks if lk.ci_high is not None and lk.ci_low is not None]
    assert len(widths) == len(looks)
    assert all(w2 <= w1 + 1e-12 for w1, w2 in zip(widths, widths[1:]))
    with pytest.raises(ValueError):
        SequentialMonitor("none", "root", 4, margin=0.0)


def test_variance_components_by_hand():
    # two tasks x 2 rounds of differences: task 1 [1, 0] (mean .5, var .5), task 2 [0, 0] (mean 0, var 0)
    # within = (.5 + 0) / 2 = .25; Var(task means) = .125; between = max(0, .125 - .25/2) = 0
    between, within = variance_components(np.array([[1.0, 0.0], [0.0, 0.0]]))
    assert (between, within) == (pytest.approx(0.0), pytest.approx(0.25))
    between, within = variance_components(np.array([[1.0, 1.0], [0.0, 0.0], [0.5, 0.5]]))
    assert (between, within) == (pytest.approx(0.25), pytest.approx(0.0))
    assert variance_components(np.array([[1.0], [0.0]]))[1] is None


def test_aa_sequences_rarely_claim_a_difference():
    # 300 seeded A/A launches of 30 pass/fail tasks, up to 4 rounds, stopping when decided: false claims <= 5%
    # (the Monte-Carlo error of 300 runs at 5% is 1.3%; benchmarks/bench_stats.py runs thousands)
    rng = np.random.default_rng(7)
    claims = 0
    runs = 300
    for _ in range(runs):
        p = rng.beta(1.0, 1.0, size=30)
        monitor = SequentialMonitor("none", "root", 4)
        for _ in range(4):
            look = monitor.add_round((rng.random(30) < p).astype(float), (rng.random(30) < p).astype(float))
            if monitor.decided:
                break
        claims += look.decision in ("improvement", "regression")
    assert claims / runs <= 0.05 + 2.5 * math.sqrt(0.05 * 0.95 / runs)


def test_alpha_is_split_over_the_candidates_and_each_share_spent_as_promised():
    # Bonferroni: three candidates against one baseline spend 0.9 x 0.05 / 3 = 0.015 each, so the chance of any
    # false claim is at most 3 x 0.015 = 0.045; the boundaries of 4 rounds spend exactly that share (an independent
    # multivariate-normal computation of the chance of crossing any of them)
    assert SPEND_SHARE == 0.9 and candidate_spend() == pytest.approx(0.045)
    assert candidate_spend(0.05, 3) == pytest.approx(0.015)
    cs = round_boundaries(4, candidate_spend(0.05, 3))
    corr = np.array([[math.sqrt(min(a, b) / max(a, b)) for b in range(1, 5)] for a in range(1, 5)])
    lim = np.array(cs)
    stay = multivariate_normal(mean=np.zeros(4), cov=corr).cdf(lim, lower_limit=-lim, rng=1)
    assert 1 - stay == pytest.approx(0.015, abs=2e-5)
    rng = np.random.default_rng(3)
    g = 40
    a = (rng.random((g, 1)) < 0.4).astype(float)
    look = sequential_look("none", "c1", a, a[::-1], 4, candidates=3)
    assert look.boundary_z == pytest.approx(cs[0]) and look.summary()["split_over"] == 3
    assert look.summary()["spend"] == pytest.approx(0.015)


def test_three_candidates_without_effect_rarely_claim_anything():
    # 300 seeded launches of three A/A candidates on 30 pass/fail tasks, up to 4 rounds: any false claim <= 5%
    rng = np.random.default_rng(11)
    runs, claims = 300, 0
    for _ in range(runs):
        p = rng.beta(1.0, 1.0, size=30)
        monitors = [SequentialMonitor("none", f"c{i}", 4, candidates=3) for i in range(3)]
        for _ in range(4):
            base = (rng.random(30) < p).astype(float)
            for m in monitors:
                m.add_round(base, (rng.random(30) < p).astype(float))
            if all(m.decided for m in monitors):
                break
        claims += any(m.last is not None and m.last.decision in ("improvement", "regression") for m in monitors)
    assert claims / runs <= 0.05 + 2.5 * math.sqrt(0.05 * 0.95 / runs)


def test_hwang_shih_decani_boundaries_spend_as_promised():
    # gamma -2, 6 rounds, 0.045: the chance of first crossing at each round, by an independent multivariate-normal
    # computation, is alpha(t_j) - alpha(t_{j-1}) with alpha(t) written out by hand
    def spent(t):
        return 0.045 * (1 - math.exp(2 * t)) / (1 - math.exp(2))

    assert hsd_spending(1.0, 0.045) == pytest.approx(0.045) and hsd_spending(0.0) == 0.0
    cs = round_boundaries(6, 0.045)
    corr = np.array([[math.sqrt(min(a, b) / max(a, b)) for b in range(1, 7)] for a in range(1, 7)])
    stay_before = 1.0
    for j in range(6):
        lim = np.array(cs[: j + 1])
        stay = multivariate_normal(mean=np.zeros(j + 1), cov=corr[: j + 1, : j + 1]).cdf(lim, lower_limit=-lim, rng=1)
        assert stay_before - stay == pytest.approx(spent((j + 1) / 6) - spent(j / 6), abs=3e-5)
        stay_before = stay
    # between Pocock's flat boundary and O'Brien-Fleming's steep one
    obf = round_boundaries(6, 0.045, "obf")
    assert cs[0] < obf[0] and cs[-1] > obf[-1] and all(a > b for a, b in zip(cs, cs[1:]))


def test_a_summary_of_the_former_design_is_replayed_with_its_own_boundaries():
    # written before issue 25, item 4: O'Brien-Fleming-type spending of the whole alpha, no spend or split recorded
    from types import SimpleNamespace

    from hermit_tui.core.records.results import SequentialEntry
    from hermit_tui.core.stats.sequential.look import OLD_METHOD
    from hermit_tui.core.stats.sequential.replay import replay

    rng = np.random.default_rng(4)
    ids = [f"t{i}" for i in range(40)]

    def recs(p):
        return {
            (t, r): SimpleNamespace(judge=SimpleNamespace(score=float(rng.random() < p))) for t in ids for r in (1, 2)
        }

    base, cand = recs(0.4), recs(0.45)
    entry = SequentialEntry(
        baseline="none", decision="undecided", rounds=2, max_rounds=5, method=OLD_METHOD, alpha=0.05
    )
    looks = replay(entry, base, cand, "c", ids)
    assert looks is not None
    assert [lk.boundary_z for lk in looks] == pytest.approx(list(round_boundaries(5, 0.05, "obf")[:2]))
    assert looks[0].boundary_z == pytest.approx(4.8769, abs=2e-4)  # the published table's first look
    new = SequentialEntry(baseline="none", decision="undecided", rounds=2, max_rounds=5, method=METHOD, alpha=0.05,
                          spend=0.045, split_over=1)  # fmt: skip
    replayed = replay(new, base, cand, "c", ids)
    assert replayed is not None
    assert [lk.boundary_z for lk in replayed] == pytest.approx(list(round_boundaries(5, 0.045)[:2]))


# -- looks within the first round (issue 25, item 4: information that shrinks with tasks) ----------------------


def test_look_schedule_order_and_power_spending_by_hand():
    import hashlib

    from hermit_tui.core.stats.sequential.schedule import first_round_batches, look_order, look_schedule
    from hermit_tui.core.stats.sequential.spending import design_spending, power_spending

    assert look_schedule(100, 3, 4) == ((1, 25), (1, 50), (1, 75), (1, 100), (2, 100), (3, 100))
    assert look_schedule(10, 2, 3) == ((1, 3), (1, 7), (1, 10), (2, 10))  # round(10 k / 3)
    assert look_schedule(30, 4, 1) == ((1, 30), (2, 30), (3, 30), (4, 30))
    assert [first_round_batches(n) for n in (16, 49, 50, 99, 200, 1000)] == [1, 1, 2, 3, 8, 8]
    assert (design_spending(1), design_spending(2)) == ("hsd", "power")
    ids = ["t3", "t1", "t2", "t10"]
    by_hand = sorted(ids, key=lambda t: hashlib.sha256(t.encode()).hexdigest())
    assert look_order(ids) == by_hand and look_order(list(reversed(ids))) == by_hand
    assert power_spending(0.25, 0.045) == pytest.approx(0.045 * 0.25**0.6)
    assert power_spending(1.5, 0.045) == pytest.approx(0.045) and power_spending(0.0, 0.045) == 0.0


def test_look_boundaries_spend_the_power_function_over_looks_in_attempts():
    """Looks after 25, 50, 75, 100 of 100 tasks of round 1 and after rounds 2 and 3: information in attempts
    (0.25, 0.5, 0.75, 1, 2, 3), correlation sqrt(u_i / u_j). Each look's first-exit probability, computed
    independently from the multivariate normal, is the power function's increment at time u / 3."""
    from hermit_tui.core.stats.sequential.schedule import look_boundaries
    from hermit_tui.core.stats.sequential.spending import power_spending

    cs = look_boundaries(100, 3, 4, 0.045, "power")
    units = np.array([0.25, 0.5, 0.75, 1.0, 2.0, 3.0])
    corr = np.sqrt(np.minimum.outer(units, units) / np.maximum.outer(units, units))
    stay_before = 1.0
    for j in range(len(units)):
        lim = np.array(cs[: j + 1])
        stay = multivariate_normal(mean=np.zeros(j + 1), cov=corr[: j + 1, : j + 1]).cdf(lim, lower_limit=-lim, rng=3)
        want = power_spending(units[j] / 3, 0.045) - (power_spending(units[j - 1] / 3, 0.045) if j else 0.0)
        assert stay_before - stay == pytest.approx(want, abs=3e-5)
        stay_before = stay
    # the first look alone: by hand
    assert cs[0] == pytest.approx(norm.ppf(1 - 0.045 * (0.25 / 3) ** 0.6 / 2))
    # with one look per round the design is the rounds' one
    assert look_boundaries(100, 3, 1, 0.045, "hsd") == round_boundaries(3, 0.045, "hsd")


def test_a_monitor_looking_within_round_1_decides_on_the_first_tasks_and_keeps_the_rest():
    rng = np.random.default_rng(4)
    g = 100
    p = rng.uniform(0.1, 0.4, size=g)
    a = (rng.random(g) < p).astype(float)
    b = (rng.random(g) < p + 0.55).astype(float)
    m = SequentialMonitor("none", "good", 4, batches=4, total_tasks=g, spending="power")
    first = m.add_look(a[:25], b[:25])
    # the look is the fixed-level interval on the first 25 tasks at the look's nominal level, computed directly
    direct = sequential_look("none", "good", a[:25, None], b[:25, None], 4, batches=4, total_tasks=g, spending="power")
    assert (first.ci_low, first.ci_high, first.boundary_z) == (direct.ci_low, direct.ci_high, direct.boundary_z)
    assert first.tasks == 25 and first.total_tasks == g and first.within_first_round and first.stopped_early
    assert first.mean_diff == pytest.approx(float((b[:25] - a[:25]).mean()))
    assert first.spending_time == pytest.approx(0.25 / 4)
    look = first
    while not m.decided:
        n = look.tasks or 0
        look = m.add_look(a[n : n + 25], b[n : n + 25]) if look.rounds == 1 and n < g else m.add_round(a, b)
    assert look.decision == "improvement" and look.decided_tasks is not None and look.decided_tasks < g
    assert look.decided_at == 1 and look.ci_low is not None and look.ci_low > 0
    # a round-2 look needs all of round 1 first; a batch that is not of the schedule is refused
    with pytest.raises(ValueError):
        sequential_look("none", "good", a[:30, None], b[:30, None], 4, batches=4, total_tasks=g)
    with pytest.raises(ValueError):
        SequentialMonitor("none", "good", 4, batches=4)  # looks within round 1 need the number of tasks


# -- the inference at stopping and the futility rule (issue 25, item 4) ------------------------------------------


def test_stagewise_inference_by_hand_one_look_and_two_looks_by_bivariate_normal():
    from hermit_tui.core.stats.sequential.stopping import stagewise_inference

    # one look: nothing was looked at before, so the estimate, interval and p are the fixed design's normal ones
    est, low, high, p = stagewise_inference([100.0], [], 2.5, lo=-5, hi=5)
    assert est == pytest.approx(0.25, abs=1e-6)
    assert (low, high) == pytest.approx((0.25 - 1.959964 / 10, 0.25 + 1.959964 / 10), abs=1e-5)
    assert p == pytest.approx(2 * norm.sf(2.5), rel=1e-4)
    # two looks (information 50 and 100, boundary 2.8 at the first), stopped at the second with z = 2.3: the
    # stagewise P(theta) = P(Z1 >= 2.8) + P(|Z1| < 2.8, Z2 >= 2.3), Z1, Z2 correlated sqrt(1/2), by scipy's
    # bivariate normal
    info, c1, z2 = (50.0, 100.0), 2.8, 2.3
    est, low, high, p = stagewise_inference(info, [c1], z2, lo=-5, hi=5)
    r = math.sqrt(info[0] / info[1])

    def upper(theta: float) -> float:
        m1, m2 = theta * math.sqrt(info[0]), theta * math.sqrt(info[1])
        bvn = multivariate_normal(mean=[m1, m2], cov=[[1, r], [r, 1]])
        both_below = bvn.cdf([c1, z2], lower_limit=[-c1, -np.inf], rng=1)  # |Z1| < c1 and Z2 < z2
        stay = norm.cdf(c1 - m1) - norm.cdf(-c1 - m1)
        return norm.sf(c1 - m1) + (stay - both_below)

    assert upper(est) == pytest.approx(0.5, abs=1e-4)
    assert upper(low) == pytest.approx(0.025, abs=1e-4) and upper(high) == pytest.approx(0.975, abs=1e-4)
    assert p == pytest.approx(2 * min(upper(0.0), 1 - upper(0.0)), abs=1e-4)
    # the stop that reached the second look with a moderate z: the estimate is pulled below the observed 0.23
    assert est < z2 / math.sqrt(info[1])


def test_the_adjusted_estimate_is_median_unbiased_and_its_interval_covers_in_a_monte_carlo_of_the_design():
    # an independent simulation of the design: Brownian motion on the information scale, stopping at the first
    # look with |Z| >= c (four looks, Hwang-Shih-DeCani boundaries), true difference 0.25 on the score scale
    from hermit_tui.core.stats.sequential.stopping import stagewise_inference

    info = np.array([40.0, 80.0, 120.0, 160.0])
    cs = round_boundaries(4, 0.045)
    theta, n = 0.25, 800
    rng = np.random.default_rng(2026)
    above = covered = early = 0
    naive = []
    for _ in range(n):
        steps = np.diff(np.r_[0.0, info])
        s = np.cumsum(rng.normal(theta * steps, np.sqrt(steps)))
        z = s / np.sqrt(info)
        k = next((j for j in range(4) if abs(z[j]) >= cs[j]), 3)
        est, low, high, _ = stagewise_inference(list(info[: k + 1]), cs[:k], float(z[k]), lo=-5, hi=5)
        above += est > theta
        covered += low <= theta <= high
        early += k < 3
        naive.append(s[k] / info[k])
    se_half = 1.96 * math.sqrt(0.25 / n)
    assert early > n / 2  # most launches stopped early: the case that biases the observed estimate
    assert abs(above / n - 0.5) < se_half + 0.005  # median-unbiased
    assert abs(covered / n - 0.95) < 1.96 * math.sqrt(0.95 * 0.05 / n) + 0.005
    assert np.mean(naive) - theta > 0.02  # while the observed one overstates


def test_conditional_power_against_simulated_paths():
    from hermit_tui.core.stats.sequential.stopping import conditional_power

    info = [30.0, 60.0, 90.0, 120.0]
    cs = [3.0, 2.7, 2.5, 2.3]
    z_now, now = 0.9, 1
    got = conditional_power(info, cs, now, z_now)
    rng = np.random.default_rng(7)
    theta = z_now / math.sqrt(info[now])  # the current estimate
    s = np.full(200_000, z_now * math.sqrt(info[now]))
    crossed = np.zeros(s.size, dtype=bool)
    for j in range(now + 1, len(info)):
        step = info[j] - info[j - 1]
        s = s + rng.normal(theta * step, math.sqrt(step), size=s.size)
        crossed |= np.abs(s / math.sqrt(info[j])) >= cs[j]
    assert 0.01 < got < 0.5
    assert got == pytest.approx(crossed.mean(), abs=4 * math.sqrt(got * (1 - got) / s.size) + 1e-3)


def test_sample_mean_ordering_with_a_futility_region_by_hand_two_looks_by_bivariate_normal():
    # two looks (information 50 and 100), the first stopping for efficacy at |Z1| >= 2.8 and for futility at
    # |Z1| < 0.5. P(theta) = P(stop at 1 with Z1 / sqrt(I1) >= e) + P(continue at 1, Z2 / sqrt(I2) >= e), the
    # continuation region 0.5 <= |Z1| < 2.8 being two rectangles of scipy's bivariate normal
    from hermit_tui.core.stats.sequential.stopping import ordered_inference

    info, c1, f1 = (50.0, 100.0), 2.8, 0.5
    r = math.sqrt(info[0] / info[1])

    def upper(theta: float, e: float) -> float:
        m1, m2 = theta * math.sqrt(info[0]), theta * math.sqrt(info[1])
        t1, t2 = e * math.sqrt(info[0]), e * math.sqrt(info[1])  # the estimate e on each look's z scale
        bvn = multivariate_normal(mean=[m1, m2], cov=[[1, r], [r, 1]])

        def z1_between(lo: float, hi: float) -> float:
            return max(0.0, norm.cdf(hi - m1) - norm.cdf(lo - m1)) if hi > lo else 0.0

        stop1 = z1_between(max(c1, t1), np.inf) + z1_between(max(t1, -f1), f1) + z1_between(t1, -c1)
        cont = 0.0
        for lo, hi in ((-c1, -f1), (f1, c1)):
            cont += z1_between(lo, hi) - bvn.cdf([hi, t2], lower_limit=[lo, -np.inf], rng=1)  # ... and Z2 >= t2
        return stop1 + cont

    for e in (0.02, 0.21, -0.1):  # a futility stop, a stop near the boundary, a negative one
        est, low, high, p = ordered_inference(info, [c1, math.inf], [f1, 0.0], e, lo=-5, hi=5)
        assert upper(est, e) == pytest.approx(0.5, abs=2e-4)
        assert upper(low, e) == pytest.approx(0.025, abs=2e-4) and upper(high, e) == pytest.approx(0.975, abs=2e-4)
        assert p == pytest.approx(2 * min(upper(0.0, e), 1 - upper(0.0, e)), abs=2e-4)


def test_futility_regions_are_where_the_conditional_power_crosses_the_threshold():
    from hermit_tui.core.stats.sequential.stopping import conditional_power, futility_regions

    info, cs = [30.0, 60.0, 90.0, 120.0], [3.0, 2.7, 2.5, 2.3]
    fs = futility_regions(info, cs, 0.02, first=1)
    assert fs[0] == 0.0 and fs[-1] == 0.0 and 0 < fs[1] < cs[1] and 0 < fs[2] < cs[2]
    for j in (1, 2):
        assert conditional_power(info, cs, j, fs[j] - 0.01) < 0.02 < conditional_power(info, cs, j, fs[j] + 0.01)


def test_the_sample_mean_ordering_is_median_unbiased_with_futility_stops_in_a_monte_carlo_of_the_design():
    # an independent simulation of a design with a futility region: Brownian motion on the information scale,
    # stopping at the first look with |Z| >= c or |Z| < f; a small true difference, where most paths stop futile
    # (the case where the ordering of the looks run alone, futility left out, is pulled towards 0)
    from hermit_tui.core.stats.sequential.stopping import ordered_inference

    info = np.array([40.0, 80.0, 120.0, 160.0])
    cs = list(round_boundaries(4, 0.045))
    fs = [0.0, 1.0, 1.3, 0.0]
    theta, n = 0.08, 800
    rng = np.random.default_rng(2027)
    above = covered = futile = 0
    for _ in range(n):
        steps = np.diff(np.r_[0.0, info])
        s = np.cumsum(rng.normal(theta * steps, np.sqrt(steps)))
        z = s / np.sqrt(info)
        k = next((j for j in range(3) if abs(z[j]) >= cs[j] or abs(z[j]) < fs[j]), 3)
        futile += k < 3 and abs(z[k]) < fs[k]
        est, low, high, _ = ordered_inference(list(info), cs, fs, float(s[k] / info[k]), lo=-5, hi=5)
        above += est > theta
        covered += low <= theta <= high
    assert futile > n / 3
    assert abs(above / n - 0.5) < 1.96 * math.sqrt(0.25 / n) + 0.005
    assert abs(covered / n - 0.95) < 1.96 * math.sqrt(0.95 * 0.05 / n) + 0.005


def test_futility_never_adds_a_false_claim_and_never_adds_attempts():
    # the same A/A data fed to the design with and without the futility rule: the efficacy boundaries are the same
    # (non-binding), so a launch that claims with futility claims without it too, and stops no later
    from hermit_tui.core.stats.sequential.stopping import FUTILITY_CP

    rng = np.random.default_rng(11)
    stopped_for_futility = 0
    for _ in range(150):
        p = rng.beta(1, 1, size=50)
        a = (rng.random((50, 5)) < p[:, None]).astype(float)
        b = (rng.random((50, 5)) < p[:, None]).astype(float)
        runs = {}
        for futility in (None, FUTILITY_CP):
            m = SequentialMonitor("a", "b", 5, batches=2, total_tasks=50, spending="power", futility=futility)
            m.add_look(a[:25, 0], b[:25, 0])
            looks = 1
            if not m.decided:
                m.add_look(a[25:, 0], b[25:, 0])
                looks = 2
            for r in range(1, 5):
                if m.decided:
                    break
                m.add_look(a[:, r], b[:, r])
                looks += 1
            assert m.last is not None
            runs[futility] = (m.last.decision, looks, m.last.boundary_z)
        (plain, n_plain, _), (with_rule, n_rule, _) = runs[None], runs[FUTILITY_CP]
        if with_rule in ("improvement", "regression"):
            assert plain == with_rule
        assert n_rule <= n_plain
        stopped_for_futility += with_rule == "futile"
    assert stopped_for_futility > 75  # most A/A launches stop for futility instead of running every round


def test_a_summary_entry_without_the_new_keys_reads_as_before_and_a_new_one_round_trips():
    from hermit_tui.core.records.results import SequentialEntry

    old = {"baseline": "none", "decision": "improvement", "rounds": 2, "max_rounds": 5, "method": METHOD,
           "alpha": 0.05, "decided_at": 2, "interval": [0.1, 0.4], "mean_diff": 0.25}  # fmt: skip
    entry = SequentialEntry.model_validate(old)
    assert entry.futility is None and entry.estimate is None and entry.p_value is None
    assert entry.model_dump(exclude_none=True) == old | {"interval": (0.1, 0.4)}
    new = SequentialEntry.model_validate(
        old
        | {
            "decision": "futile",
            "futility": 0.02,
            "conditional_power": 0.004,
            "estimate": 0.01,
            "estimate_interval": [-0.1, 0.12],
            "p_value": 0.8,
        }  # fmt: skip
    )
    assert new.decision == "futile" and new.estimate_interval == (-0.1, 0.12)
