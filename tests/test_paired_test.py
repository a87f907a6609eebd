"""The paired randomisation test, against brute-force enumeration, exact integer arithmetic and the
Cochran-Mantel-Haenszel statistic (computed here from hypergeometric moments, a different formula)."""

import itertools
import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import chi2

from hermit_tui.core.stats.paired import EXACT_WORK, paired_randomisation_test


def run(a_lists: Sequence[Sequence[float]], b_lists: Sequence[Sequence[float]], **kw):
    a = [np.asarray(x, dtype=float) for x in a_lists]
    b = [np.asarray(x, dtype=float) for x in b_lists]
    ka = np.array([len(x) for x in a])
    kb = np.array([len(x) for x in b])
    sd = lambda xs: np.array([x.std(ddof=1) if len(x) > 1 else np.nan for x in xs])  # noqa: E731
    return paired_randomisation_test(
        ka,
        np.array([x.mean() for x in a]),
        sd(a),
        kb,
        np.array([x.mean() for x in b]),
        sd(b),
        lambda i: (a[i], b[i]),
        **kw,
    )


def brute_force_p(a: Sequence[Sequence[float]], b: Sequence[Sequence[float]]) -> Fraction:
    """Every combination of per-task randomisations, enumerated: sign flips where repeats are equal, every choice of
    b's attempts among the pooled ones where they are not; exact rational arithmetic."""
    per_task: list[list[Fraction]] = []
    for xa, xb in zip(a, b):
        fa = [Fraction(x).limit_denominator(10**6) for x in xa]
        fb = [Fraction(x).limit_denominator(10**6) for x in xb]
        d = sum(fb, Fraction(0)) / len(fb) - sum(fa, Fraction(0)) / len(fa)
        if len(fa) == len(fb):
            per_task.append([d, -d])
        else:
            pooled = fa + fb
            outs = []
            for chosen in itertools.combinations(range(len(pooled)), len(fb)):
                bs = [pooled[i] for i in chosen]
                rest = [pooled[i] for i in range(len(pooled)) if i not in chosen]
                outs.append(sum(bs, Fraction(0)) / len(bs) - sum(rest, Fraction(0)) / len(rest))
            per_task.append(outs)
    observed = abs(
        sum(
            (
                sum((Fraction(x).limit_denominator(10**6) for x in xb), Fraction(0)) / len(xb)
                - sum((Fraction(x).limit_denominator(10**6) for x in xa), Fraction(0)) / len(xa)
                for xa, xb in zip(a, b)
            ),
            Fraction(0),
        )
    )
    hits = total = 0
    for combo in itertools.product(*per_task):
        total += 1
        hits += abs(sum(combo, Fraction(0))) >= observed
    return Fraction(hits, total)


def test_sign_flips_agree_with_brute_force():
    a: list[list[float]] = [[0, 0], [0.5, 0.5], [0, 0], [1, 1], [1, 0], [0, 1]]
    b: list[list[float]] = [[1, 0], [1, 1], [1, 1], [1, 0], [0, 1], [1, 1]]
    got = run(a, b)
    assert got.exact and got.flipped_tasks == 6 and got.redealt_tasks == 0
    assert got.p_value == pytest.approx(float(brute_force_p(a, b))) == pytest.approx(20 / 64)


def test_unequal_repeats_redeal_agrees_with_brute_force():
    rng = np.random.default_rng(4)
    a = [list(rng.uniform(size=k)) for k in (3, 1, 2, 4)]
    b = [list(rng.uniform(size=k)) for k in (1, 3, 2, 1)]  # task 3 has equal repeats: sign flips there
    got = run(a, b)
    assert got.exact and got.flipped_tasks == 1 and got.redealt_tasks == 3
    assert got.p_value == pytest.approx(float(brute_force_p(a, b)), abs=1e-12)
    assert "re-dealt attempts on 3 tasks" in got.description and "sign flips on 1 task " in got.description


def test_twenty_tasks_with_distinct_differences_are_enumerated_exactly():
    rng = np.random.default_rng(3)
    d = rng.normal(0.1, 0.3, size=20)
    got = run([[0.0]] * 20, [[x] for x in d])
    assert got.exact
    # every one of the 2^20 sign patterns, here by meet in the middle
    halves = [np.array([np.dot(s, part) for s in itertools.product((1, -1), repeat=10)]) for part in (d[:10], d[10:])]
    sums = (halves[0][:, None] + halves[1][None, :]).ravel()
    assert got.p_value == pytest.approx(np.mean(np.abs(sums) >= abs(d.sum()) - 1e-9), abs=1e-12)
    more = run([[0.0]] * 21, [[x] for x in rng.normal(0.1, 0.3, size=21)])
    assert not more.exact and "normal approximation" in more.description


def exact_integer_flip_p(m: list[int]) -> float:
    """The sign-flip p-value of integer differences by polynomial multiplication in exact integers."""
    counts = {0: 1}
    for x in m:
        nxt: dict[int, int] = {}
        for s, c in counts.items():
            for v in (s + x, s - x):
                nxt[v] = nxt.get(v, 0) + c
        counts = nxt
    obs = abs(sum(m))
    return sum(c for s, c in counts.items() if abs(s) >= obs) / 2 ** len(m)


@pytest.mark.parametrize("g", [40, 150])
def test_large_sample_method_agrees_with_the_exact_test_where_both_run(g):
    # pass/fail, 3 repeats each: differences are thirds, so the exact test runs on hundreds of tasks
    rng = np.random.default_rng(g)
    worst = 0.0
    for _ in range(40):
        p = rng.uniform(0.2, 0.8, size=g)
        a = (rng.random((g, 3)) < p[:, None]).astype(float)
        b = (rng.random((g, 3)) < np.clip(p + rng.choice([0.0, 0.05, 0.1]), 0, 1)[:, None]).astype(float)
        exact = run(list(a), list(b))
        approx = run(list(a), list(b), exact_work=0)
        assert exact.exact and not approx.exact
        m = [int(round(3 * (y.mean() - x.mean()))) for x, y in zip(a, b)]
        assert exact.p_value == pytest.approx(exact_integer_flip_p(m), abs=1e-9)
        if 0.005 < exact.p_value < 0.2:
            worst = max(worst, abs(exact.p_value - approx.p_value))
    assert worst < 0.005  # with the continuity correction; without it up to 0.04 at 40 tasks


def cmh_chi2(a_success: np.ndarray, b_success: np.ndarray, ka: int, kb: int) -> float:
    """The Cochran-Mantel-Haenszel statistic (no continuity correction) of K 2x2 tables (selector x pass/fail), from
    the hypergeometric mean and variance of b's successes in each table."""
    n = ka + kb
    total = a_success + b_success
    expected = total * kb / n
    var = ka * kb * total * (n - total) / (n * n * (n - 1))
    return float((b_success.sum() - expected.sum()) ** 2 / var.sum())


def test_redeal_large_sample_equals_cmh_for_pass_fail_with_fixed_repeats():
    rng = np.random.default_rng(9)
    g, ka, kb = 300, 3, 2
    p = rng.uniform(0.1, 0.9, size=g)
    a = (rng.random((g, ka)) < p[:, None]).astype(float)
    b = (rng.random((g, kb)) < np.clip(p + 0.04, 0, 1)[:, None]).astype(float)
    got = run(list(a), list(b), exact_work=0)
    assert not got.exact and got.redealt_tasks == g
    want = chi2.sf(cmh_chi2(a.sum(axis=1), b.sum(axis=1), ka, kb), 1)
    assert got.p_value == pytest.approx(want, rel=1e-9)


def test_ties_and_degenerate_cases():
    assert run([[1.0], [0.0]], [[1.0], [0.0]]).p_value == 1.0  # no task differs
    one = run([[0.0]], [[1.0]])
    assert one.p_value == 1.0 and one.exact  # one task: both signs equally extreme
    # unequal repeats, constant within each task: re-dealing can change nothing on a task where all scores agree
    assert run([[1.0, 1.0]], [[1.0]]).p_value == 1.0
    assert EXACT_WORK >= 2**21 - 2  # 20 sign flips always fit


def test_unequal_repeats_keep_their_size_where_sign_flips_do_not():
    # the case: 10 repeats against 1, no effect. Computed exactly: P(p <= .05) over every outcome would be
    # costly, so estimate it with 400 seeded data sets; the re-deal test is exact, so its rate is at most 5%
    # (binomial error ~1.1%), while sign flips on the same data reject far more often.
    rng = np.random.default_rng(21)
    redeal = flips = 0
    reps = 400
    for _ in range(reps):
        p = rng.beta(0.5, 2.0, size=12)
        a = [list((rng.random(10) < q).astype(float)) for q in p]
        b = [list((rng.random(1) < q).astype(float)) for q in p]
        redeal += run(a, b).p_value <= 0.05
        da = np.array([np.mean(x) for x in a])
        db = np.array([np.mean(x) for x in b])
        flips += run([[x] for x in da], [[y] for y in db]).p_value <= 0.05  # sign flips of the same differences
    assert redeal / reps <= 0.05 + 2.5 * math.sqrt(0.05 * 0.95 / reps)
    assert flips / reps > redeal / reps


def test_distinct_is_numpys_unique_without_its_import_of_numpy_ma():
    from hermit_tui.core.stats.paired import _distinct

    rng = np.random.default_rng(5)
    for n in (0, 1, 2, 3, 10, 200):
        for _ in range(30):
            values = np.round(rng.integers(-6, 7, n) / rng.integers(1, 7), 9)
            got, want = _distinct(values), np.unique(values)
            assert got.dtype == want.dtype and got.tolist() == want.tolist()
