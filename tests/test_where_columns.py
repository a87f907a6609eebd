"""The vectorised paths of slices and harmed tasks (issue 28's scale: 111k tasks in under 2 s) give the figures the
per-slice, per-task scalar path gives, and those figures match an independent computation: the MOVER formula and
the selector interval written out by hand (tests/stats_by_hand.py) with scipy's t quantiles and root finder,
statsmodels' Holm and Benjamini-Hochberg, scipy's Fisher exact test and brute-force permutation counts."""

from __future__ import annotations

import itertools
import math
import statistics

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.stats import fisher_exact, hypergeom
from stats_by_hand import mover_by_hand, selector_interval_by_hand
from statsmodels.stats.multitest import multipletests

from hermit_tui.core.records.scores import score_range, tabulate
from hermit_tui.core.stats import intervals as iv
from hermit_tui.core.stats.harm import FISHER_TABLE, MAX_ENUMERATION, _hypergeom_lower, columns_p, harmed_tasks, task_p
from hermit_tui.core.stats.selector import selector_stats
from hermit_tui.core.stats.slices import HURT_ALPHA, restrict, slice_report

# ---------------------------------------------------------------------------------------------------- intervals


def _data_sets(count: int, seed: int) -> list[tuple[np.ndarray, np.ndarray, float, float]]:
    """Paired task means of unequal sizes (2 to 40 tasks; some with one difference everywhere, some pass/fail
    capped), each with its caps."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        g = int(rng.integers(2, 41)) if i % 5 else int(rng.integers(2, 4))  # some below SMALL_PAIR
        ma = rng.beta(3, 2, g)
        mb = np.clip(ma + float(rng.choice([-0.25, 0.0, 0.1])) + rng.normal(0, 0.1, g), 0, 1)
        if i % 9 == 0:
            mb = np.clip(ma + 0.1, 0, 1) if i % 2 else ma.copy()  # no spread of the differences (or none at all)
        cap = 3.0 * g if i % 3 == 0 else math.inf
        out.append((ma, mb, cap, math.inf if i % 4 else 2.0 * g))
    return out


@pytest.mark.parametrize("count", [30, 150])  # below and above SCIPY_BATCH: core.stats.special's quantiles, scipy's
def test_summaries_give_the_scalar_bounds_and_p_values(count):
    sets = _data_sets(count, seed=count)
    assert (count >= iv.SCIPY_BATCH) == (count == 150)
    s = iv.stack_summaries([iv.pair_summary(a, b) for a, b, _, _ in sets])
    caps_a, caps_b = np.array([c for _, _, c, _ in sets]), np.array([c for *_, c in sets])
    for level in (0.95, 0.5):
        low, high, flat = iv.summary_bounds(s, caps_a, caps_b, level)
        for k, (a, b, ca, cb) in enumerate(sets):
            one = iv.pair_bounds(a, b, ca, cb, level)
            assert (low[k], high[k], bool(flat[k])) == (
                pytest.approx(float(one[0]), abs=1e-13),
                pytest.approx(float(one[1]), abs=1e-13),
                bool(one[2]),
            )
    nulls = np.where(np.arange(count) % 2, 0.0, -0.05)
    p = iv.summary_p_values(s, caps_a, caps_b, nulls)
    expected = [float(iv.pair_p_values(a, b, ca, cb, null)) for (a, b, ca, cb), null in zip(sets, nulls)]
    assert p.tolist() == pytest.approx(expected, rel=1e-7)
    assert (p < 0.05).sum() > 3 and (p > 0.5).sum() > 3  # both kinds of data set are there


def test_the_vectorised_selector_interval_is_mean_interval():
    rng = np.random.default_rng(5)
    rows = []
    for i in range(80):
        g = int(rng.integers(1, 30))
        means = rng.beta(2, 2, g) if i % 7 else np.full(g, 0.25)  # some without spread
        lo, hi = (0.0, 1.0) if i % 5 else (-0.5, 2.0)
        cap = 2.5 * g if i % 3 == 0 else math.inf
        sd = float(np.std(means, ddof=1)) if g > 1 else math.nan
        rows.append((float(np.mean(means)), sd, g, lo, hi, cap))
    low, high = iv.mean_bounds(*(np.array(x) for x in zip(*rows)))
    for k, (mean, sd, g, lo, hi, cap) in enumerate(rows):
        one = iv.mean_interval(mean, sd, g, lo, hi, max_n_eff=None if math.isinf(cap) else cap)
        if one is None:
            assert math.isnan(low[k]) and math.isnan(high[k]) and g < 2
        else:
            assert (low[k], high[k]) == (pytest.approx(one.low, abs=1e-13), pytest.approx(one.high, abs=1e-13))


# ---------------------------------------------------------------------------------------------------- slices


def _tables(seed: int, n_tasks: int = 400, top: float = 1.0):
    """Three selectors over ``n_tasks`` tasks: graded scores in [0, 1] with 3 repeats (none), pass/fail (0 or
    ``top``) with 2-4 repeats (root), graded in [0, ``top``] with 1-3 repeats and a tenth of the tasks never attempted
    (final)."""
    rng = np.random.default_rng(seed)
    ids = [f"t{i:03d}" for i in range(n_tasks)]
    quality = rng.beta(4, 3, n_tasks)
    attempts: dict[str, list[tuple[str, int, float]]] = {"none": [], "root": [], "final": []}
    for i, t in enumerate(ids):
        for r in (1, 2, 3):
            attempts["none"].append((t, r, float(rng.beta(quality[i] * 8 + 0.1, (1 - quality[i]) * 8 + 0.1))))
        for r in range(1, int(rng.integers(2, 5)) + 1):
            attempts["root"].append((t, r, top * float(rng.random() < quality[i])))
        if rng.random() > 0.1:
            drop = 0.35 if i % 10 == 0 else 0.0  # slice "s0" (below) is hurt
            for r in range(1, int(rng.integers(1, 4)) + 1):
                attempts["final"].append((t, r, top * float(np.clip(rng.normal(quality[i] - drop, 0.15), 0, 1))))
    return ids, {label: tabulate(att, ids, 0.5) for label, att in attempts.items()}


def _groups(ids: list[str], count: int) -> dict[str, list[str]]:
    """``count`` slices by task number modulo ``count``, plus a one-task, a two-task and a three-task slice."""
    groups = {f"s{j}": [t for i, t in enumerate(ids) if i % count == j] for j in range(count)}
    groups |= {"one": ids[:1], "two": ids[5:7], "three": ids[11:14]}
    return groups


PAIRS = [("none", "root"), ("none", "final"), ("root", "final")]


@pytest.mark.parametrize(
    ("count", "top"),
    [
        (4, 1.0),
        (30, 1.0),
        (6, 1.5),
    ],  # 4 slices: core.stats.special's quantiles; 30: scipy's; 1.5: pass/fail is 0 or 1.5
)
def test_slices_give_what_the_scalar_functions_give_slice_by_slice(count, top):
    ids, tables = _tables(seed=count, top=top)
    groups = _groups(ids, count)
    margin = 0.05
    report = slice_report(groups, tables, PAIRS, ids, by="mod", margin=margin)
    assert [s.name for s in report.slices] == list(groups)
    for s in report.slices:
        sub = {label: restrict(t, s.task_ids) for label, t in tables.items()}
        for sel in s.selectors:
            st = selector_stats(sel.label, sub[sel.label], s.task_ids, 0.5)
            assert (sel.n_tasks, sel.mean) == (st.n_tasks, pytest.approx(st.mean, abs=1e-15))
            assert (sel.ci_low, sel.ci_high) == (
                pytest.approx(st.ci_low, abs=1e-13),
                pytest.approx(st.ci_high, abs=1e-13),
            )
        for p in s.pairs:
            ta, tb = sub[p.a], sub[p.b]
            lo, hi = score_range(ta, tb)
            _, ia, ib = np.intersect1d(ta.index, tb.index, assume_unique=True, return_indices=True)
            args = (ta.mean[ia], tb.mean[ib], ta.n[ia], tb.n[ib])
            bins = (
                bool(np.all((ta.scores == lo) | (ta.scores == hi))),
                bool(np.all((tb.scores == lo) | (tb.scores == hi))),
            )
            one = iv.pair_interval(*args, *bins, lo, hi)
            if len(s.task_ids) >= 10:  # root's scores are pass/fail (0 or top) on every scale, the others graded
                assert bins == (p.a == "root", p.b == "root")
            assert p.n_paired == len(ia)
            if one is None:
                assert p.ci_low is None and p.p_value is None
                continue
            assert (p.ci_low, p.ci_high) == (pytest.approx(one.low, abs=1e-13), pytest.approx(one.high, abs=1e-13))
            assert p.p_value == pytest.approx(iv.pair_p_value(*args, *bins, lo, hi), rel=1e-7)
            if p.too_small:
                assert p.p_hurt is None
            else:
                two = iv.pair_p_value(*args, *bins, lo, hi, null=-margin)
                assert two is not None and p.mean_diff is not None
                expected = two / 2 if p.mean_diff < -margin else 1 - two / 2
                assert p.p_hurt == pytest.approx(expected, rel=1e-7)
    # the adjustments over the slices, per pair, are statsmodels' on the raw values
    for k in range(len(PAIRS)):
        row = [s.pairs[k] for s in report.slices]
        raw = [p.p_value for p in row if p.p_value is not None]
        assert [p.p_bh for p in row if p.p_value is not None] == pytest.approx(
            list(multipletests(raw, method="fdr_bh")[1]), abs=1e-12
        )
        hurt = [p.p_hurt for p in row if p.p_hurt is not None]
        assert [p.p_hurt_holm for p in row if p.p_hurt is not None] == pytest.approx(
            list(multipletests(hurt, method="holm")[1]), abs=1e-12
        )
    named = {(s.name, p.a, p.b) for s, p in report.hurt()}
    assert ("s0", "none", "final") in named or count != 30  # the hurt slice is found when it is a slice of its own


def _p_by_hand(a: list[float], b: list[float], null: float, max_a: float | None, max_b: float | None) -> float:
    """The smallest alpha whose 1 - alpha MOVER interval (written out by hand) excludes ``null``: scipy's root
    finder on the end of the interval that reaches it."""
    side = 0 if statistics.fmean(b) - statistics.fmean(a) > null else 1

    def end(alpha: float) -> float:
        return mover_by_hand(a, b, 1 - alpha, max_a, max_b)[side] - null

    if (end(1e-12) > 0) == (side == 0):
        return 1e-12  # excluded even at the widest level tried
    if (end(1 - 1e-9) > 0) != (side == 0):
        return 1.0  # held even by the narrowest interval (its no-spread floor)
    return float(brentq(end, 1e-12, 1 - 1e-9, xtol=1e-14, rtol=1e-12))


def test_slices_match_the_interval_and_test_computed_by_hand():
    """40 slices of 8 tasks (80 p-values, so the batch takes scipy's quantiles), the first two hurt: every selector
    interval, and on six slices the pair interval and both p-values, recomputed from the formulas."""
    rng = np.random.default_rng(11)
    ids = [f"t{i:03d}" for i in range(320)]
    q = rng.beta(5, 3, len(ids))
    none = [(t, r, float(rng.beta(q[i] * 10, (1 - q[i]) * 10))) for i, t in enumerate(ids) for r in (1, 2, 3)]
    final = [
        (t, r, float(rng.beta(max(q[i] - (0.5 if i < 16 else 0.0), 0.02) * 10, (1 - q[i]) * 10)))
        for i, t in enumerate(ids)
        for r in (1, 2, 3)
    ]
    tables = {"none": tabulate(none, ids, 0.5), "final": tabulate(final, ids, 0.5)}
    groups = {f"s{j}": ids[8 * j : 8 * j + 8] for j in range(40)}
    report = slice_report(groups, tables, [("none", "final")], ids, by="block")
    assert sum(p.p_value is not None for s in report.slices for p in s.pairs) * 2 >= iv.SCIPY_BATCH
    means = {label: dict(zip(ids, t.mean.tolist())) for label, t in tables.items()}
    for s in report.slices:
        for sel in s.selectors:
            low, high = selector_interval_by_hand([means[sel.label][t] for t in s.task_ids], 0.0, 1.0)
            assert (sel.ci_low, sel.ci_high) == (pytest.approx(low, abs=1e-9), pytest.approx(high, abs=1e-9))
    for s in report.slices[:3] + report.slices[-3:]:
        (p,) = s.pairs
        a = [means["none"][t] for t in s.task_ids]
        b = [means["final"][t] for t in s.task_ids]
        low, high = mover_by_hand(a, b)
        assert (p.ci_low, p.ci_high) == (pytest.approx(low, abs=1e-9), pytest.approx(high, abs=1e-9))
        assert p.p_value == pytest.approx(_p_by_hand(a, b, 0.0, None, None), rel=1e-6)
        assert p.mean_diff is not None and not p.too_small
        two = _p_by_hand(a, b, 0.0, None, None)
        assert p.p_hurt == pytest.approx(two / 2 if p.mean_diff < 0 else 1 - two / 2, rel=1e-6)
    hurt = [p.p_hurt for s in report.slices for p in s.pairs]
    holm_sm = multipletests(hurt, method="holm")[1]
    assert [p.p_hurt_holm for s in report.slices for p in s.pairs] == pytest.approx(list(holm_sm), abs=1e-12)
    assert {s.name for s, _ in report.hurt()} == {f"s{j}" for j, h in enumerate(holm_sm) if h <= HURT_ALPHA}
    assert {"s0", "s1"} <= {s.name for s, _ in report.hurt()}


# ---------------------------------------------------------------------------------------------------- harmed tasks


def _perm_p(a: list[float], b: list[float]) -> float:
    """The one-sided exact permutation p by brute force: the share of ways to give len(b) of the pooled attempts to
    the candidate whose sum is at most the candidate's."""
    pooled = a + b
    splits = list(itertools.combinations(range(len(pooled)), len(b)))
    return sum(sum(pooled[i] for i in s) <= sum(b) + 1e-9 for s in splits) / len(splits)


def test_harmed_tasks_from_the_columns_match_fisher_brute_force_and_statsmodels():
    rng = np.random.default_rng(2)
    ids = [f"t{i:02d}" for i in range(90)]
    base, cand = [], []
    expected: dict[str, float] = {}
    for i, t in enumerate(ids):
        m, n = int(rng.integers(1, 6)), int(rng.integers(1, 6))
        graded = i % 3 == 0
        harmed = i % 4 == 0
        if graded:
            a = [round(float(rng.uniform(0.5, 1.0)), 2) for _ in range(m)]
            b = [round(float(rng.uniform(0.0, 0.6 if harmed else 1.0)), 2) for _ in range(n)]
        else:
            a = [float(rng.random() < 0.9) for _ in range(m)]
            b = [float(rng.random() < (0.1 if harmed else 0.9)) for _ in range(n)]
        if i % 17 == 5:
            a = []  # never attempted by the baseline: not tested
        base += [(t, r + 1, x) for r, x in enumerate(a)]
        cand += [(t, r + 1, x) for r, x in enumerate(b)]
        if a and b:
            if graded:
                expected[t] = _perm_p(a, b)
            else:  # the candidate's row first: "less" asks whether its odds of success are lower
                table = [[int(sum(b)), n - int(sum(b))], [int(sum(a)), m - int(sum(a))]]
                expected[t] = float(fisher_exact(table, alternative="less")[1])
    report = harmed_tasks("none", tabulate(base, ids, 0.5), "final", tabulate(cand, ids, 0.5), q=0.3)
    tested = list(expected)
    assert report.tested == len(tested)
    q_sm = dict(zip(tested, multipletests([expected[t] for t in tested], method="fdr_bh")[1]))
    listed = {h.task: h for h in report.harmed}
    assert set(listed) == {t for t in tested if q_sm[t] <= 0.3} and len(listed) >= 3
    for t, h in listed.items():
        assert (h.p_value, h.q_value) == (pytest.approx(expected[t], abs=1e-12), pytest.approx(q_sm[t], abs=1e-12))
    assert [h.task for h in report.harmed] == sorted(
        listed, key=lambda t: (listed[t].q_value, listed[t].p_value, listed[t].difference)
    )


def test_the_exact_test_for_many_repeats_and_large_graded_shapes():
    """Beyond FISHER_TABLE cells the pass/fail test is scipy's hypergeometric distribution, and beyond
    MAX_ENUMERATION splits a graded task is tested pass/fail at the threshold: both as task_p and Fisher's test."""
    assert (161 * 81) > FISHER_TABLE and math.comb(24, 12) > MAX_ENUMERATION
    rng = np.random.default_rng(4)
    pairs = [
        ((rng.random(80) < 0.8).astype(float), (rng.random(80) < 0.6).astype(float)),  # large pass/fail
        (rng.random(12).round(2), rng.random(12).round(2) * 0.7),  # large graded
        (np.array([1.0, 1.0, 0.0]), np.array([0.0, 0.0])),  # small pass/fail (tabulated)
    ]
    a_scores = np.concatenate([a for a, _ in pairs])
    b_scores = np.concatenate([b for _, b in pairs])
    m, n = np.array([len(a) for a, _ in pairs]), np.array([len(b) for _, b in pairs])
    starts = np.concatenate([[0], np.cumsum(m)[:-1]]), np.concatenate([[0], np.cumsum(n)[:-1]])
    got = columns_p(a_scores, starts[0], m, b_scores, starts[1], n, 0.5)
    for k, (a, b) in enumerate(pairs):
        sa, sb = int((a >= 0.5).sum()), int((b >= 0.5).sum())
        fisher = float(fisher_exact([[sb, len(b) - sb], [sa, len(a) - sa]], alternative="less")[1])
        assert got[k] == pytest.approx(fisher, rel=1e-9) and got[k] == pytest.approx(task_p(a, b, 0.5), rel=1e-9)
    # the tabulated Fisher test against scipy's hypergeometric distribution, every margin of a few shapes
    for mm, nn in [(3, 3), (1, 5), (10, 10), (7, 2)]:
        cells = [(total, b_s) for total in range(mm + nn + 1) for b_s in range(max(0, total - mm), min(nn, total) + 1)]
        b_s, total = np.array([c[1] for c in cells]), np.array([c[0] for c in cells])
        ours = _hypergeom_lower(b_s, np.full(len(cells), mm), np.full(len(cells), nn), total)
        assert ours == pytest.approx(hypergeom.cdf(b_s, mm + nn, total, nn), abs=1e-12)
