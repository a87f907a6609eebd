"""The simulated power figures of a pass/fail pair (core/stats/power.py): the fitted model, its power against a
simulation written here from the model's definition, the MDE's bisection, the large-sample scaling against normal
theory, and how a pair (compare screen, report, verdict) shows them."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from hermit_tui.core.stats.figures import MDE_METHOD, pair_stats
from hermit_tui.core.stats.intervals import attempts_cap, pair_bounds
from hermit_tui.core.stats.power import MAX_SIMULATED, SIMULATED_MDE_METHOD, fit_power_model


def test_the_fit_recovers_a_known_beta_by_moments():
    rng = np.random.default_rng(1)
    mu, kappa, k, n = 0.3, 5.0, 10, 20_000
    p = rng.beta(mu * kappa, (1 - mu) * kappa, n)
    ma, mb = rng.binomial(k, p) / k, rng.binomial(k, p) / k
    model = fit_power_model(ma, mb, np.full(n, k), np.full(n, k))
    assert model is not None
    assert model.mean_a == pytest.approx(mu, abs=0.005)
    assert model.between == pytest.approx(mu * (1 - mu) / (kappa + 1), rel=0.05)  # a Beta's: m (1 - m) / (k + 1)
    assert model.repeats == [(k, k, n)]
    assert model.side == (1 if mb.mean() > ma.mean() else -1)  # the observed difference's side


def test_with_one_repeat_the_between_part_is_what_the_pairing_shares():
    rng = np.random.default_rng(2)
    n = 20_000
    p = rng.beta(1.0, 1.0, n)  # variance 1 / 12
    ma, mb = rng.binomial(1, p).astype(float), rng.binomial(1, p).astype(float)
    model = fit_power_model(ma, mb, np.ones(n, int), np.ones(n, int))
    assert model is not None and model.between == pytest.approx(1 / 12, rel=0.08)


def own_power(rng, mu, between, n, ka, kb, delta, sims=4000):
    """The model's power, simulated from its definition (not through PowerModel)."""
    if between > 0:
        conc = mu * (1 - mu) / between - 1
        p = rng.beta(mu * conc, (1 - mu) * conc, size=(sims, n))
    else:
        p = np.full((sims, n), mu)
    pb = p + delta * (1 - p) / (1 - mu) if delta > 0 else p - abs(delta) * p / mu
    a, b = rng.binomial(ka, p) / ka, rng.binomial(kb, pb) / kb
    low, high, _ = pair_bounds(a, b, attempts_cap(np.full(n, ka)), attempts_cap(np.full(n, kb)))
    return float(np.mean(low > 0) if delta > 0 else np.mean(high < 0))


@pytest.mark.parametrize(
    ("mu", "between", "n", "ka", "kb", "delta"),
    [(0.5, 0.02, 16, 3, 3, 0.2), (0.1, 0.01, 40, 10, 1, 0.15), (0.9, 0.005, 64, 1, 1, -0.1)],
)
def test_the_power_is_the_models_own(mu, between, n, ka, kb, delta):
    rng = np.random.default_rng(3)
    # a sample whose fit is the model asked for: set the fitted fields directly, the power is what is tested
    model = fit_power_model(np.array([0.0, 1.0]), np.array([0.0, 1.0]), np.array([ka, ka]), np.array([kb, kb]))
    assert model is not None
    model = model.model_copy(update={"mean_a": mu, "between": between, "repeats": [(ka, kb, n)]})
    expected = own_power(rng, mu, between, n, ka, kb, delta)
    # 400 simulated data sets against 4,000: Monte-Carlo sd about 0.025 + 0.008
    assert model.power(delta) == pytest.approx(expected, abs=0.08)


def homogeneous(n: int, mu: float = 0.5, k: int = 1):
    model = fit_power_model(np.array([0.0, 1.0]), np.array([0.0, 1.0]), np.array([k, k]), np.array([k, k]))
    assert model is not None
    return model.model_copy(update={"mean_a": mu, "between": 0.0, "repeats": [(k, k, n)], "side": 1})


def test_the_mde_is_where_the_simulated_power_crosses_80_percent():
    model = homogeneous(200)
    mde = model.mde()
    assert mde is not None and 0 < mde < 0.5
    assert model.power(mde) >= 0.8 > model.power(mde - 0.5 / 2**11)  # the bisection's last step
    again = homogeneous(200).mde()
    assert again == mde  # a fixed seed: the same data give the same figure


def test_a_large_sample_scales_and_matches_normal_theory():
    n = 4 * MAX_SIMULATED
    model = homogeneous(n)
    mde = model.mde()
    assert mde is not None
    # two independent pass/fail means at 0.5 and 0.5 + d, one attempt per task: power ~ Phi(d / se - z)
    z, zp = norm.ppf(0.975), norm.ppf(0.8)

    def normal_power(d: float) -> float:
        se = math.sqrt((0.25 + (0.5 + d) * (0.5 - d)) / n)
        return float(norm.cdf(d / se - z))

    theory = next(d / 10_000 for d in range(1, 5000) if normal_power(d / 10_000) >= 0.8)
    assert mde == pytest.approx(theory, rel=0.06)
    assert theory == pytest.approx((z + zp) * math.sqrt(0.5 / n), rel=0.02)  # the familiar formula, as a check


def test_tasks_and_repeats_needed_agree_with_the_mde():
    model = homogeneous(60, mu=0.3, k=2)
    mde = model.mde()
    assert mde is not None
    need = model.tasks_needed(mde)
    assert need is not None and abs(need - 60) <= 6  # the sample detects its own MDE with about its own tasks
    smaller = model.tasks_needed(mde / 2)
    assert smaller is not None and smaller > 3 * 60  # half the difference: about four times the tasks
    assert model.repeats_needed(mde) in (1, 2, 3)
    assert model.tasks_needed(0.8) is None and model.repeats_needed(0.8) is None  # beyond the room (0.7)


def records(scores):
    return [(tid, r, float(s)) for tid, ss in scores.items() for r, s in enumerate(ss)]


def test_a_pass_fail_pair_simulates_and_a_continuous_one_keeps_the_closed_form():
    rng = np.random.default_rng(5)
    ids = [f"t{i}" for i in range(30)]
    a = {t: rng.binomial(1, 0.4, 3).tolist() for t in ids}
    b = {t: rng.binomial(1, 0.6, 3).tolist() for t in ids}
    p = pair_stats("a", records(a), "b", records(b), ids)
    assert p.power_model is not None and p.mde_method == SIMULATED_MDE_METHOD
    assert p.mde is not None and p.mde == p.power_model.mde()
    assert (p.power_at(p.mde) or 0.0) >= 0.8
    assert "power_model" in p.model_dump()
    cont = {t: (rng.random(3) * 0.9).tolist() for t in ids}
    q = pair_stats("a", records(a), "c", records(cont), ids)
    assert q.power_model is None and q.mde_method == MDE_METHOD
    assert "power_model" not in q.model_dump() and "mde_limit" not in q.model_dump()


def test_no_reachable_mde_is_said_not_hidden():
    # 8 tasks that a solves all or none of, b all: in the model a's rates sit at 0 and 1, and even b at 1 everywhere
    # leaves too few of a's unsolved tasks in many simulated samples for 80% power
    ids = [f"t{i}" for i in range(8)]
    a = {t: [0, 0, 0] if i < 4 else [1, 1, 1] for i, t in enumerate(ids)}
    b = {t: [1, 1, 1] if i < 4 else [1, 1, 0] for i, t in enumerate(ids)}
    p = pair_stats("a", records(a), "b", records(b), ids)
    assert p.power_model is not None
    assert p.mde is None and p.mde_limit == pytest.approx(0.5)
    assert p.mde_figure(lambda x: f"{x:.2f}") == "none up to 0.50"
    if p.decision.value == "unclear":
        assert "not even a difference of 0.50" in p.verdict
    from hermit_tui.dashboard.screens.compare_figures import power_text

    assert power_text(p).startswith("Minimum detectable difference: none up to 0.500 (")


def test_a_baseline_that_never_solves_moves_every_task_alike():
    # none solves nothing: its rates are 0 everywhere, so a difference d makes every task's rate d for b
    ids = [f"t{i}" for i in range(20)]
    rng = np.random.default_rng(9)
    a = {t: [0, 0] for t in ids}
    b = {t: rng.binomial(1, 0.3, 2).tolist() for t in ids}
    p = pair_stats("none", records(a), "final", records(b), ids)
    model = p.power_model
    assert model is not None and model.mean_a == 0 and model.between == 0 and model.side == 1
    assert model.room() == 1.0
    # independent: b's 40 attempts are Bernoulli(d), a's all fail; the interval excludes 0 in the share of samples
    # where it does, which the model's own power must match (its draws: 400 data sets)
    d = 0.15
    own = rng.binomial(2, d, size=(4000, 20)) / 2
    low, _, _ = pair_bounds(np.zeros((4000, 20)), own, attempts_cap(np.full(20, 2)), attempts_cap(np.full(20, 2)))
    assert model.power(d) == pytest.approx(float(np.mean(low > 0)), abs=0.07)
    assert p.mde is not None and 0 < p.mde < 1


def four_clusters(effect: float):
    """12 pass/fail tasks x 3 repeats in 4 clusters of 3, as the trained demo project's categories: task rates
    ~ Beta(1, 2), b's moved up by ``effect``; (ids, a, b, task -> cluster)."""
    rng = np.random.default_rng(5)
    ids = [f"t{i}" for i in range(12)]
    rates = rng.beta(1.0, 2.0, 12)
    a = {t_: rng.binomial(1, q, 3).tolist() for t_, q in zip(ids, rates)}
    b = {t_: rng.binomial(1, min(1.0, q + effect), 3).tolist() for t_, q in zip(ids, rates)}
    return ids, a, b, {t_: f"c{i // 3}" for i, t_ in enumerate(ids)}


def test_a_clustered_pass_fail_pair_simulates_the_shared_shift_its_clusters_show():
    from hermit_tui.core.stats.clusters import Clustering, clustered_var
    from hermit_tui.core.stats.power import SIMULATED_CLUSTERED, shared_shift_var

    ids, a, b, groups = four_clusters(0.25)
    plain = pair_stats("a", records(a), "b", records(b), ids)
    clustered = pair_stats("a", records(a), "b", records(b), ids, clusters=Clustering(by="category", of=groups))
    model = clustered.power_model
    assert model is not None and model.cluster_sizes == [3, 3, 3, 3]
    assert clustered.mde_method.endswith(SIMULATED_CLUSTERED)
    # the shared shift's variance, by hand: (CR2 variance of the mean - s^2 / N) / ((sum n_c^2 - N) / N^2)
    diffs = np.array([np.mean(b[t_]) - np.mean(a[t_]) for t_ in ids])
    codes = np.repeat(np.arange(4), 3)
    by_hand = max((float(clustered_var(diffs, codes)) - diffs.var(ddof=1) / 12) / ((4 * 9 - 12) / 144), 0.0)
    assert model.shared_var == pytest.approx(by_hand, rel=1e-9) and shared_shift_var(diffs, codes) == model.shared_var
    assert shared_shift_var(diffs, np.arange(12)) == 0.0  # every task its own cluster: nothing shared
    assert plain.mde is not None and clustered.mde is not None and clustered.mde > plain.mde
    assert clustered.power_at(clustered.mde) == pytest.approx(0.8, abs=0.03)  # the clustered interval's power


def own_clustered_power(rng, mu, between, shared, sizes, k, delta, sims=4000):
    """A clustered model's power from its definition: Beta task rates, the proportional move plus a normal shift
    shared by each cluster, clipped; the clustered pair interval."""
    codes = np.repeat(np.arange(len(sizes)), sizes)
    n = len(codes)
    conc = mu * (1 - mu) / between - 1
    p = rng.beta(mu * conc, (1 - mu) * conc, size=(sims, n))
    pb = np.clip(p + delta * (1 - p) / (1 - mu) + rng.normal(0, math.sqrt(shared), (sims, len(sizes)))[:, codes], 0, 1)
    a, b = rng.binomial(k, p) / k, rng.binomial(k, pb) / k
    low, _, _ = pair_bounds(a, b, attempts_cap(np.full(n, k)), attempts_cap(np.full(n, k)), clusters=codes)
    return float(np.mean(low > 0))


def test_the_clustered_power_is_the_models_own():
    rng = np.random.default_rng(21)
    sizes, k = [4, 2, 6, 3, 5, 4, 4, 2], 3
    model = homogeneous(sum(sizes), mu=0.4, k=k).model_copy(
        update={"between": 0.03, "cluster_sizes": sizes, "shared_var": 0.01}
    )
    assert model.power(0.2) == pytest.approx(own_clustered_power(rng, 0.4, 0.03, 0.01, sizes, k, 0.2), abs=0.08)


def test_a_clustered_verdict_names_the_clusters_its_power_rests_on():
    from hermit_tui.core.stats.clusters import Clustering

    ids, a, b, groups = four_clusters(0.05)
    p = pair_stats("a", records(a), "b", records(b), ids, clusters=Clustering(by="category", of=groups))
    assert p.decision.value == "unclear"
    assert "With 12 tasks in 4 clusters, " in p.verdict
    plain = pair_stats("a", records(a), "b", records(b), ids)
    assert plain.decision.value == "unclear" and "With 12 tasks, " in plain.verdict
