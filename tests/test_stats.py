"""The statistics engine, checked against hand-worked cases and second methods (bootstrap, full enumeration).

Constants from published tables: t(0.975, 3) = 3.182446, t(0.975, 5) = 2.570582, t(0.975, 11) = 2.200985,
t(0.80, 5) = 0.919544, z(0.975) = 1.959964, z(0.80) = 0.841621.
"""

import itertools
import math
from collections.abc import Mapping, Sequence
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import ttest_1samp
from stats_by_hand import mover_by_hand, selector_interval_by_hand

from hermit_tui.core.records.results import AttemptRecord, Judged
from hermit_tui.core.records.scores import AttemptColumns, tabulate
from hermit_tui.core.stats.figures import default_pairs, p_text, pair_stats, pair_transitions
from hermit_tui.core.stats.selector import selector_stats, wilson

T3, T5, T11 = 3.182446305, 2.570581836, 2.200985160
T5_80 = 0.919543800
Z_SUM = 1.959963985 + 0.841621234  # z(1 - 0.05/2) + z(0.80)


def wilson_roots(p: float, n: float, c: float) -> tuple[float, float]:
    """The score interval by the quadratic (1 + c^2/n) m^2 - (2p + c^2/n) m + p^2 = 0."""
    roots = np.roots([1 + c * c / n, -(2 * p + c * c / n), p * p])
    return float(min(roots.real)), float(max(roots.real))


def attempts(table: Mapping[str, Sequence[float]]) -> list[tuple[str, int, float]]:
    return [(tid, r, s) for tid, scores in table.items() for r, s in enumerate(scores, start=1)]


# --------------------------------------------------------------------------------------------- one selector

FOUR_BY_TWO: dict[str, list[float]] = {"t1": [1, 1], "t2": [1, 0], "t3": [0, 0], "t4": [0.5, 0.5]}


def test_selector_hand_worked_four_tasks_two_repeats():
    s = selector_stats("none", attempts(FOUR_BY_TWO), list(FOUR_BY_TWO))
    # task means 1, .5, 0, .5 -> the task mean (the estimand) .5, equal to the mean over the 8 attempts
    assert s.mean == pytest.approx(0.5) and s.attempt_mean == pytest.approx(0.5)
    assert (s.n_tasks, s.n_attempts, s.repeats, s.repeats_min, s.repeats_max) == (4, 8, 2, 2, 2)
    # var of the task means (.25 + 0 + .25 + 0) / 3 = 1/6 -> se^2 = 1/24 (with equal repeats, the CR1 clustered se
    # of the attempt mean: residual sums 1, 0, -1, 0 -> 4/3 * 2 / 64 = 1/24)
    assert s.se == pytest.approx(math.sqrt(1 / 24))
    # 4 tasks: the score interval, n_eff = .25 / (1/24) = 6, t(0.975, 3): the roots of
    # (1 + c^2/6) m^2 - (1 + c^2/6) m + .25 = 0 -> m = .5 -/+ .5 sqrt(1 - 1 / (1 + c^2/6))
    half = 0.5 * math.sqrt(1 - 1 / (1 + T3**2 / 6))
    assert s.ci_method == "score" and s.n_eff == pytest.approx(6.0)
    assert (s.ci_low, s.ci_high) == (pytest.approx(0.5 - half, abs=1e-9), pytest.approx(0.5 + half, abs=1e-9))
    assert "score interval" in s.method and "effective sample size 6.0" in s.method
    assert s.per_task["t2"].mean == 0.5 and s.per_task["t2"].sd == pytest.approx(math.sqrt(0.5))
    assert s.per_task["t1"].sd == 0 and s.per_task["t1"].solved == 2 and s.per_task["t2"].solved == 1
    # solved at least once (score >= 1): t1, t2 -> 2/4; pass^2: only t1 -> 1/4
    assert s.solved_once == 0.5 and s.pass_k == 0.25
    assert s.solved_once_ci == pytest.approx((0.1500, 0.8500), abs=5e-5)  # Wilson 2/4
    assert s.rule_of_three is None and not s.scores_outside_unit and s.warnings == []
    # variance split: per-task variances 0, .5, 0, 0 -> within .125; noise = .125/2 = .0625;
    # Var(task means) = 1/6 -> between = 1/6 - 1/16 = 5/48; share = .0625 / (1/6) = .375
    assert s.within_var == pytest.approx(0.125)
    assert s.between_var == pytest.approx(5 / 48)
    assert s.within_share == pytest.approx(0.375)
    assert s.se_more_tasks == pytest.approx(math.sqrt((1 / 6) / 8))  # twice the tasks
    assert s.se_more_repeats == pytest.approx(math.sqrt((5 / 48 + 1 / 32) / 4))  # between + noise/2, over 4 tasks
    assert s.se_repeats_floor == pytest.approx(math.sqrt((5 / 48) / 4))
    assert s.lever_note is not None
    assert s.lever == "tasks" and "38%" in s.lever_note


def test_many_tasks_approach_the_t_interval_as_scipy_computes_it():
    rng = np.random.default_rng(2)
    table = {f"t{i}": list(rng.choice([0.0, 0.5, 1.0], size=3)) for i in range(80)}
    s = selector_stats("x", attempts(table), list(table))
    means = [float(np.mean(v)) for v in table.values()]
    assert s.ci_method == "score" and "score interval" in s.method
    assert (s.ci_low, s.ci_high) == pytest.approx(selector_interval_by_hand(means, 0.0, 1.0), abs=1e-9)
    ref = ttest_1samp(means, 0.5).confidence_interval(0.95)
    assert (s.ci_low, s.ci_high) == (pytest.approx(ref.low, abs=3e-3), pytest.approx(ref.high, abs=3e-3))


def test_unequal_repeats_the_task_mean_is_the_estimand_everywhere():
    # the case: final beats none by .1 on every one of 12 tasks, but the attempt means point the other way
    none = {f"t{i}": [0.8] * 10 if i < 6 else [0.0] for i in range(12)}
    final = {f"t{i}": [0.9] if i < 6 else [0.1] * 10 for i in range(12)}
    sn, sf = (selector_stats(k, attempts(v), list(none)) for k, v in (("none", none), ("final", final)))
    assert sn.attempt_mean == pytest.approx(48 / 66) and sf.attempt_mean == pytest.approx((5.4 + 6) / 66)
    assert sn.mean == pytest.approx(0.4) and sf.mean == pytest.approx(0.5)  # the table shows the task means
    assert sn.repeats is None and any("unequal repeats (1-10 per task)" in w and "0.7273" in w for w in sn.warnings)
    p = pair_stats("none", attempts(none), "final", attempts(final), list(none))
    assert sf.mean is not None
    assert sn.mean is not None
    assert p.mean_diff == pytest.approx(sf.mean - sn.mean)  # the pair compares the same estimand
    assert p.unequal_repeats == 12 and p.sign_test_p is None and p.sharp_test_exact
    assert "re-dealt attempts on 12 tasks" in p.sharp_test and any("unequal repeats" in w for w in p.warnings)
    assert "sharp null" in p.sharp_test and "interval's null" in p.test
    # a constant shift: never a zero-width interval (no-spread bound over differences in [-1, 1])
    q = 1 - 0.025 ** (1 / 12)
    assert p.ci_method == "no-spread"
    assert (p.ci_low, p.ci_high) == (pytest.approx(0.1 - q * 1.1), pytest.approx(0.1 + q * 0.9))


def test_solved_rates_divide_by_all_test_tasks_as_hermit_does():
    ids = [f"t{i}" for i in range(16)]
    s = selector_stats("x", attempts({t: [1.0, 1.0] for t in ids[:13]}), ids)
    assert s.n_tasks == 13 and s.n_missing == 3 and s.n_test == 16
    assert s.solved_once == pytest.approx(13 / 16) == 0.8125 and s.pass_k == pytest.approx(13 / 16)
    assert s.solved_once_ci == pytest.approx(wilson(13, 16))
    assert any("3 of 16 test tasks have no attempt" in w for w in s.warnings)
    assert s.rule_of_three is None  # 13 of 16 solved: not every task


def test_se_with_unequal_repeats_is_that_of_the_task_mean():
    # t1 [1,1,1], t2 [0], t3 [0,1]: task means 1, 0, .5 -> mean .5, var .25, se sqrt(.25/3); attempt mean 4/6
    s = selector_stats("x", attempts({"t1": [1, 1, 1], "t2": [0], "t3": [0, 1]}), ["t1", "t2", "t3"])
    assert s.mean == pytest.approx(0.5) and s.attempt_mean == pytest.approx(2 / 3)
    assert s.se == pytest.approx(math.sqrt(0.25 / 3))
    assert s.repeats is None and (s.repeats_min, s.repeats_max) == (1, 3)
    assert s.pass_k is None and s.pass_k_ci is None  # a task with one repeat: pass^k undefined
    assert s.per_task["t2"].sd is None


def test_bootstrap_agrees_with_the_standard_errors():
    rng = np.random.default_rng(7)
    n, k = 40, 3
    difficulty = rng.uniform(0, 1, n)
    a = (rng.uniform(size=(n, k)) < difficulty[:, None]).astype(float)
    b = (rng.uniform(size=(n, k)) < np.minimum(1, difficulty + 0.15)[:, None]).astype(float)
    ids = [f"t{i}" for i in range(n)]
    rec_a = [(ids[i], r, a[i, r]) for i in range(n) for r in range(k)]
    rec_b = [(ids[i], r, b[i, r]) for i in range(n) for r in range(k)]

    boot = np.random.default_rng(11).integers(0, n, size=(5000, n))  # resample tasks with replacement
    boot_se = a.mean(axis=1)[boot].mean(axis=1).std(ddof=1)
    s = selector_stats("a", rec_a, ids)
    assert s.mean == pytest.approx(a.mean())
    assert abs(s.se / boot_se - 1) < 0.15

    diffs = b.mean(axis=1) - a.mean(axis=1)
    boot_diff_se = diffs[boot].mean(axis=1).std(ddof=1)
    p = pair_stats("a", rec_a, "b", rec_b, ids)
    assert p.mean_diff == pytest.approx(diffs.mean())
    assert abs(p.se / boot_diff_se - 1) < 0.15


def test_wilson_matches_published_values():
    assert wilson(0, 10) == pytest.approx((0.0, 0.2775), abs=5e-5)
    assert wilson(10, 10) == pytest.approx((0.7225, 1.0), abs=5e-5)
    # Newcombe (1998), Statistics in Medicine 17:857, Table II, method 3 (Wilson score, no continuity correction)
    assert wilson(81, 263) == pytest.approx((0.2553, 0.3662), abs=5e-5)
    assert wilson(15, 148) == pytest.approx((0.0624, 0.1605), abs=5e-5)
    assert wilson(1, 29) == pytest.approx((0.0061, 0.1718), abs=5e-5)
    assert wilson(0, 0) == (0.0, 1.0)
    # z = 1 (about 68%): 0/4 -> upper z^2 / (n + z^2) = 1/5
    assert wilson(0, 4, z=1.0)[1] == pytest.approx(0.2)


def test_rule_of_three_when_nothing_or_everything_passes():
    none_solved = selector_stats("x", attempts({f"t{i}": [0.0, 0.5] for i in range(20)}), None)
    assert none_solved.solved_once == 0 and none_solved.pass_k == 0
    assert none_solved.rule_of_three is not None
    assert "below 0.15" in none_solved.rule_of_three  # 3/20
    all_once = selector_stats("x", attempts({f"t{i}": [1.0, 0.0] for i in range(10)}), None)
    assert all_once.rule_of_three is not None
    assert "above 0.7" in all_once.rule_of_three and "at least once" in all_once.rule_of_three  # 1 - 3/10
    every = selector_stats("x", attempts({f"t{i}": [1.0, 1.0] for i in range(30)}), None)
    assert every.rule_of_three is not None
    assert "pass^k" in every.rule_of_three and "above 0.9" in every.rule_of_three  # 1 - 3/30
    # zero spread: se 0 but never a zero-width interval: the no-spread bound, 1 - 0.025^(1/30) below 1
    assert every.se == 0 and every.ci_method == "no-spread" and "no-spread" in every.method
    assert (every.ci_low, every.ci_high) == (pytest.approx(0.025 ** (1 / 30)), 1.0)
    assert every.lever_note is not None
    assert every.within_share is None and "same mean" in every.lever_note


def test_edge_cases_do_not_crash():
    one = selector_stats("x", attempts({"t1": [0.2, 0.4]}), ["t1", "t2"])
    assert one.mean == pytest.approx(0.3) and one.se is None and one.ci_low is None and one.ci_method is None
    assert one.n_missing == 1 and one.between_var is None and one.solved_once == 0.0  # 0 of the 2 test tasks
    empty = selector_stats("x", [], ["t1"])
    assert empty.n_tasks == 0 and empty.mean is None and empty.solved_once is None and empty.warnings
    single = selector_stats("x", attempts({"t1": [1], "t2": [0], "t3": [0.5]}), None)
    assert single.within_var is None and single.between_var == pytest.approx(0.25)  # var of 1, 0, .5
    odd = selector_stats("x", [("t1", 1, 3.0), ("t1", 2, -1.0), ("t2", 1, float("nan")), ("zz", 1, 1.0)], ["t1", "t2"])
    assert odd.scores_outside_unit and odd.nonfinite_scores == 1 and odd.n_ignored == 1  # zz is not a test task
    assert odd.mean == pytest.approx((1 + 0) / 2)  # task means 1 (3 and -1) and 0 (NaN counts as 0)
    assert odd.attempt_mean == pytest.approx((3 - 1 + 0) / 3)
    assert odd.ci_low is not None
    assert odd.ci_high is not None
    assert odd.scale == (-1.0, 3.0) and -1.0 <= odd.ci_low and odd.ci_high <= 3.0  # the observed range
    dup = selector_stats("x", [("t1", 1, 0.0), ("t1", 1, 1.0)], None)
    assert dup.n_attempts == 1 and dup.mean == 1.0 and dup.n_ignored == 1  # the later record of a repeat wins


def test_records_tuples_columns_and_tables_agree():
    def rec(tid, repeat, score):
        return AttemptRecord(repeat=repeat, id=tid, status="ok", judge=Judged(score=score))

    ids = list(FOUR_BY_TWO)
    table = attempts(FOUR_BY_TWO) + [("t1", 1, 0.0), ("zz", 1, 1.0)]  # a later t1 repeat 1, an id outside
    records = [rec(t, r, s) for t, r, s in table]
    cols = AttemptColumns(
        np.array([ids.index(t) if t in ids else -1 for t, _, _ in table]),
        np.array([r for _, r, _ in table]),
        np.array([s for _, _, s in table]),
    )
    want = selector_stats("x", table, ids)
    assert want.n_ignored == 2 and want.per_task["t1"].mean == 0.5
    assert selector_stats("x", records, ids) == want
    assert selector_stats("x", cols, ids) == want
    assert selector_stats("x", tabulate(cols, ids, 1.0), ids) == want
    with pytest.raises(ValueError):
        selector_stats("x", tabulate(cols, ids, 0.5), ids)  # a table made for another threshold
    assert pair_stats("a", cols, "b", records, ids) == pair_stats("a", table, "b", table, ids)


# --------------------------------------------------------------------------------------------- pairs

# 6 tasks x 2 repeats; task means a -> b and the difference b - a
SIX_A: dict[str, list[float]] = {"t1": [0, 0], "t2": [0.5, 0.5], "t3": [0, 0], "t4": [1, 1], "t5": [1, 0], "t6": [0, 1]}
SIX_B: dict[str, list[float]] = {"t1": [1, 0], "t2": [1, 1], "t3": [1, 1], "t4": [1, 0], "t5": [0, 1], "t6": [1, 1]}
SIX_A_MEANS = [0.0, 0.5, 0.0, 1.0, 0.5, 0.5]
SIX_B_MEANS = [0.5, 1.0, 1.0, 0.5, 0.5, 1.0]
SIX_D = [Fraction(1, 2), Fraction(1, 2), Fraction(1), Fraction(-1, 2), Fraction(0), Fraction(1, 2)]


def test_pair_hand_worked_six_tasks():
    p = pair_stats("none", attempts(SIX_A), "final", attempts(SIX_B), list(SIX_A))
    assert p.n_paired == 6 and p.n_unpaired == 0 and p.unequal_repeats == 0
    # mean diff 2/6; deviations 1/6,1/6,2/3,-5/6,-1/3,1/6 -> squares sum 48/36 = 4/3 -> var 4/15, se^2 = 4/90
    assert p.mean_diff == pytest.approx(1 / 3)
    assert p.sd_diff == pytest.approx(math.sqrt(4 / 15))
    assert p.se == pytest.approx(math.sqrt(4 / 90))
    # Newcombe's hybrid of the two selectors' score intervals (task means below); b's scores are pass/fail, so its
    # effective sample size is capped at its attempts' worth, 6^2 / (6 / 2) = 12; a has partial credit: no cap
    lo, hi = mover_by_hand(SIX_A_MEANS, SIX_B_MEANS, max_b=12.0)
    assert p.ci_method == "hybrid"
    assert (p.ci_low, p.ci_high) == (pytest.approx(lo, abs=1e-9), pytest.approx(hi, abs=1e-9))
    assert p.ci_low is not None
    assert p.ci_high is not None
    assert -1 <= p.ci_low < 0 < p.ci_high <= 1
    # the test printed beside it inverts it: p is where the interval's lower end reaches 0 (scipy's root finder)
    from scipy.optimize import brentq

    root = brentq(lambda alpha: mover_by_hand(SIX_A_MEANS, SIX_B_MEANS, 1 - alpha, max_b=12.0)[0], 1e-9, 0.999999)
    assert p.p_value is not None
    assert p.p_value == pytest.approx(root, rel=1e-3) and p.p_value > 0.05
    assert (p.wins, p.losses, p.ties) == (4, 1, 1)
    # sign test, 4 wins of 5: P(X <= 1 or X >= 4 | Bin(5, 1/2)) = (1 + 5 + 5 + 1) / 32
    assert p.sign_test_p == pytest.approx(12 / 32)

    # exact randomisation p-value, all 64 sign flips enumerated here
    observed = abs(sum(SIX_D, Fraction(0)))
    extreme = sum(
        abs(sum((s * d for s, d in zip(signs, SIX_D)), Fraction(0))) >= observed
        for signs in itertools.product((1, -1), repeat=6)
    )
    # by hand: 0.5 * (sum of the four .5-signs) in {2,1,0,-1,-2} (counts 1,4,6,4,1), plus +/-1 for t3;
    # |total| >= 2 for (2,+1), (1,+1), (-1,-1), (-2,-1): 1 + 4 + 4 + 1 = 10 patterns, x2 for t5's zero -> 20
    assert extreme == 20
    assert p.sharp_p_value == pytest.approx(20 / 64)
    assert p.sharp_test_exact and "exact" in p.sharp_test and "sign flips on 6 tasks" in p.sharp_test

    # MDE: the interval's larger half-width plus t(.80, 5) * se
    half = max(1 / 3 - lo, hi - 1 / 3)
    assert p.mde == pytest.approx(half + T5_80 * math.sqrt(4 / 90), rel=1e-6)
    # variance split of the differences: within a = mean(0,0,0,0,.5,.5) = 1/6, within b = mean(.5,0,0,.5,.5,0) = 1/4
    # noise at k = 2: (1/6 + 1/4) / 2 = 5/24 (< 4/15 observed, so not capped); between = 4/15 - 5/24 = 7/120
    assert p.noise_var == pytest.approx(5 / 24)
    assert p.within_var == pytest.approx(5 / 12)
    assert p.between_var == pytest.approx(7 / 120)


def test_power_helpers_are_consistent():
    from scipy.stats import t

    p = pair_stats("none", attempts(SIX_A), "final", attempts(SIX_B), list(SIX_A))
    lo, hi = mover_by_hand(SIX_A_MEANS, SIX_B_MEANS, max_b=12.0)
    se = math.sqrt(4 / 90)
    ratio = max(1 / 3 - lo, hi - 1 / 3) / se  # the interval's half-width in standard errors (T5 for a t interval)
    assert p.mde is not None
    assert p.tasks_needed(p.mde) == 6  # the current sample detects exactly its own MDE
    assert p.repeats_needed(p.mde) == 2  # the current repeats, likewise
    assert p.power_at(p.mde) == pytest.approx(0.8, abs=1e-9)
    assert p.power_at(0.2) == pytest.approx(t.cdf(0.2 / se - ratio, 5), abs=1e-9)
    # half the difference: the smallest n with (ratio t(.975, n-1) / t(.975, 5) + t(.8, n-1)) sd / sqrt(n) <= mde / 2
    sd = math.sqrt(4 / 15)

    def enough(n: int) -> bool:
        assert p.mde is not None
        return (ratio * t.ppf(0.975, n - 1) / T5 + t.ppf(0.8, n - 1)) * sd / math.sqrt(n) <= p.mde / 2

    assert p.tasks_needed(p.mde / 2) == next(n for n in range(2, 1000) if enough(n))
    # repeats for 0.5: room = 6 * 0.5^2 / (ratio + T5_80)^2 - 7/120; k = (5/12) / room
    room = 6 * 0.5**2 / (ratio + T5_80) ** 2 - 7 / 120
    assert p.repeats_needed(0.5) == math.ceil((5 / 12) / room)
    # no number of repeats gets below (ratio + T5_80) * sqrt(between / 6): 0.3 is out of reach
    assert (ratio + T5_80) * math.sqrt(7 / 120 / 6) > 0.3 and p.repeats_needed(0.3) is None


def test_transition_table_and_threshold():
    a: dict[str, list[float]] = {"t1": [0, 0], "t2": [1, 1], "t3": [1, 1], "t4": [0, 0.5], "t5": [1, 0], "t6": [0, 0]}
    b: dict[str, list[float]] = {"t1": [1, 1], "t2": [0, 0.5], "t3": [1, 1], "t4": [0, 0], "t5": [1, 1], "t6": [1, 0]}
    p = pair_stats("root", attempts(a), "final", attempts(b), list(a))
    assert p.transitions == {
        "fixed": ["t1"],
        "broken": ["t2"],
        "stable_pass": ["t3"],
        "stable_fail": ["t4"],
        "flaky": ["t5", "t6"],
    }
    assert p.transition_counts == {"fixed": 1, "broken": 1, "stable_pass": 1, "stable_fail": 1, "flaky": 2}
    # threshold 0.5: t2's b [0, .5] and t4's a [0, .5] are now solved once -> both flaky
    half = pair_stats("root", attempts(a), "final", attempts(b), list(a), threshold=0.5)
    assert half.transitions["broken"] == [] and half.transitions["stable_fail"] == []
    assert half.transitions["flaky"] == ["t2", "t4", "t5", "t6"]
    # the transitions alone (the why summary's): the same hand-worked table, tasks attempted by one side left out
    only_b: dict[str, list[float]] = {**b, "t7": [1, 1]}
    assert pair_transitions(attempts(a), attempts(only_b), [*a, "t7"]) == {
        "fixed": ["t1"],
        "broken": ["t2"],
        "stable_pass": ["t3"],
        "stable_fail": ["t4"],
        "flaky": ["t5", "t6"],
    }
    assert pair_transitions(attempts(a), attempts(b), list(a), threshold=0.5)["flaky"] == ["t2", "t4", "t5", "t6"]


def test_twenty_tasks_are_enumerated_exactly():
    rng = np.random.default_rng(3)
    ids = [f"t{i}" for i in range(20)]
    a = {t: [0.0] for t in ids}
    b = {t: [float(x)] for t, x in zip(ids, rng.choice([-1.0, -0.5, 0.5, 1.0, 1.0], size=20))}
    p = pair_stats("a", attempts(a), "b", attempts(b), ids)
    d = np.array([b[t][0] for t in ids]) * 2  # integers
    halves = [np.array([np.dot(s, part) for s in itertools.product((1, -1), repeat=10)]) for part in (d[:10], d[10:])]
    sums = (halves[0][:, None] + halves[1][None, :]).ravel()
    assert p.sharp_test_exact and "exact" in p.sharp_test
    assert p.sharp_p_value == pytest.approx(np.mean(np.abs(sums) >= abs(d.sum())), abs=1e-12)


def test_pair_edge_cases():
    # zero spread, all differences 0: se 0 but a no-spread interval around 0, p = 1
    same = {f"t{i}": [0.5, 0.5] for i in range(12)}
    p = pair_stats("a", attempts(same), "b", attempts(same), list(same))
    q = 1 - 0.025 ** (1 / 12)
    assert p.se == 0 and (p.ci_low, p.ci_high) == (pytest.approx(-q), pytest.approx(q))
    assert p.p_value == 1.0 and p.sharp_p_value == 1.0 and p.ties == 12 and p.decision == "unclear"
    # no power figure from zero spread (the interval says +/- q; a minimum detectable difference of 0 would not)
    assert p.mde is None and p.tasks_needed(0.1) is None and p.power_at(0.1) is None
    assert p.verdict.startswith("No clear difference: b and a have the same mean score on each of the 12 tasks")
    # one task
    one = pair_stats("a", attempts({"t1": [0]}), "b", attempts({"t1": [1]}), ["t1"])
    assert one.mean_diff == 1 and one.se is None and one.p_value is None and one.sharp_p_value == 1.0
    assert one.mde is None
    assert one.tasks_needed(0.1) is None and "one paired task gives no interval" in one.verdict
    assert one.decision == "unclear"
    # a task missing from one selector is left out and counted
    miss = pair_stats(
        "a", attempts({"t1": [0], "t2": [0], "t3": [1]}), "b", attempts({"t1": [1], "t2": [1]}), ["t1", "t2", "t3"]
    )
    assert miss.n_paired == 2 and miss.unpaired == ["t3"] and "1 unpaired left out" in miss.verdict
    assert miss.sharp_p_value == pytest.approx(0.5) and miss.decision == "unclear" and miss.warnings
    # nothing in common
    nothing = pair_stats("a", [], "b", attempts({"t1": [1]}), ["t1"])
    assert "nothing to compare" in nothing.verdict and nothing.decision == "nothing"


# --------------------------------------------------------------------------------------------- verdicts

TWELVE_A: dict[str, list[float]] = {f"t{i}": [0, 0] for i in range(12)}
TWELVE_B: dict[str, list[float]] = {f"t{i}": [1, 1] if i < 6 else [1, 0] for i in range(12)}


def test_verdict_clear_improvement_and_regression():
    # a never solves; b solves six tasks twice and six once: pass/fail with 2 repeats, attempts cap 12^2 / 6 = 24
    lo, hi = mover_by_hand([0.0] * 12, [1.0] * 6 + [0.5] * 6, max_a=24.0, max_b=24.0)
    p = pair_stats("none", attempts(TWELVE_A), "final", attempts(TWELVE_B), list(TWELVE_A))
    assert (p.ci_low, p.ci_high) == pytest.approx((lo, hi), abs=1e-9) and lo > 0
    assert p.p_value is not None
    assert p.sharp_p_value is not None
    assert p.p_value < 0.001 and p.sharp_p_value == pytest.approx(2 / 4096)
    assert p.decision == "improvement"
    assert p.verdict == (
        f"final scores 0.75 higher than none (95% CI {lo:.2f} to {hi:.2f}, "
        "p < 0.001, 12 tasks x 2 repeats): an improvement."
    )
    back = pair_stats("final", attempts(TWELVE_B), "none", attempts(TWELVE_A), list(TWELVE_A))
    assert back.decision == "regression"
    assert back.verdict == (
        f"none scores 0.75 lower than final (95% CI {-hi:.2f} to {-lo:.2f}, p < 0.001, 12 tasks x 2 repeats): "
        "a regression."
    )


def test_verdict_interval_includes_zero():
    p = pair_stats("none", attempts(SIX_A), "final", attempts(SIX_B), list(SIX_A))
    lo, hi = mover_by_hand(SIX_A_MEANS, SIX_B_MEANS, max_b=12.0)
    mde = max(1 / 3 - lo, hi - 1 / 3) + T5_80 * math.sqrt(4 / 90)
    assert p.verdict == (
        f"No clear difference: final scores 0.33 higher than none (95% CI {lo:.2f} to "
        f"{hi:.2f}, {p_text(p.p_value)}, 6 tasks x 2 repeats); the 95% interval includes 0 (so its test's p is "
        f"not below 0.05). With 6 tasks, the smallest difference this sample detects with 80% power is {mde:.2f}."
    )
    # many tasks, a small noisy difference: still no claim
    rng = np.random.default_rng(5)
    ids = [f"t{i}" for i in range(200)]
    a = {t: list(rng.uniform(0, 1, 3)) for t in ids}
    b = {t: list(rng.uniform(0, 1, 3)) for t in ids}  # same distribution as a
    big = pair_stats("none", attempts(a), "final", attempts(b), ids)
    assert big.ci_low is not None
    assert big.ci_high is not None
    assert big.ci_method is not None
    assert big.sharp_test_exact is not None
    assert big.ci_low < 0 < big.ci_high and big.ci_method == "hybrid" and not big.sharp_test_exact
    assert big.p_value is not None
    assert big.verdict.startswith("No clear difference") and big.decision == "unclear" and big.p_value >= 0.05
    assert "with 80% power" in big.verdict and "With 200 tasks" in big.verdict


def test_small_samples_can_decide_when_the_evidence_is_there():
    # diffs 1,1,1,1,.5,.5 on 6 tasks: the interval (by hand) excludes 0: an improvement (no "fewer than 10" rule)
    a = {f"t{i}": [0] for i in range(6)}
    b = {f"t{i}": [1] if i < 4 else [0.5] for i in range(6)}
    p = pair_stats("root", attempts(a), "final", attempts(b), list(a))
    lo, _ = mover_by_hand([0.0] * 6, [1.0] * 4 + [0.5] * 2, max_a=6.0)
    assert p.ci_low == pytest.approx(lo, abs=1e-9) and lo > 0
    assert p.p_value is not None
    assert p.p_value < 0.05 and p.decision == "improvement"
    # 4 tasks, diffs 1, 1, 1, .9: conservative at 4 tasks, and the test agrees with the interval whatever it says
    four = pair_stats(
        "root",
        attempts({f"t{i}": [0] for i in range(4)}),
        "final",
        attempts({f"t{i}": [1] if i < 3 else [0.9] for i in range(4)}),
        [f"t{i}" for i in range(4)],
    )
    lo4, _ = mover_by_hand([0.0] * 4, [1.0, 1.0, 1.0, 0.9], max_a=4.0)
    assert four.ci_low == pytest.approx(lo4, abs=1e-9)
    assert four.p_value is not None
    assert (four.decision == "improvement") == (lo4 > 0) == (four.p_value < 0.05)


def test_verdict_has_no_second_rule_and_no_contradictory_p():
    from hermit_tui.core.stats.figures import _verdict

    # the 250-task case: CI 0.01 to 0.09, a difference below the MDE: an improvement
    fields = dict(
        a="none",
        b="final",
        n_paired=250,
        repeats_min=3,
        repeats_max=3,
        n_unpaired=0,
        ci_low=0.01,
        ci_high=0.09,
        mean_diff=0.05,
        mde=0.057,
        p_value=0.009,
        sd_diff=0.3,
    )
    assert _verdict(fields)[0] == "improvement"
    # p just above 0.05 is never printed as 0.05
    assert p_text(0.0502) == "p = 0.0502" and p_text(0.0498) == "p = 0.0498"
    assert p_text(0.046) == "p = 0.046" and p_text(0.31) == "p = 0.31" and p_text(0.0004) == "p < 0.001"
    # the interval includes 0: the reason names the interval and its own test, no second hypothesis
    unclear = _verdict(fields | dict(ci_low=-0.01, p_value=0.0502))
    assert unclear[0] == "unclear" and "p = 0.0502" in unclear[1]
    assert "the 95% interval includes 0 (so its test's p is not below 0.05)" in unclear[1]
    assert "differ on some tasks" not in unclear[1]


def test_default_pairs():
    assert default_pairs(["none", "root", "final"]) == [("none", "final"), ("root", "final"), ("none", "root")]
    assert default_pairs(["final", "none"]) == [("none", "final")]
    assert default_pairs(["a1b2", "c3d4", "e5f6"]) == [("a1b2", "c3d4"), ("c3d4", "e5f6")]
    assert default_pairs(["final"]) == []


def test_within_noise_larger_than_observed_variance_is_capped():
    a: dict[str, list[float]] = {"t1": [0, 1], "t2": [0, 0.5], "t3": [1, 0.5], "t4": [0, 1]}
    b: dict[str, list[float]] = {"t1": [0.5, 0.5], "t2": [0.5, 0.5], "t3": [0.5, 0.5], "t4": [1, 1]}
    # selector a: task means .5, .25, .75, .5 -> Var 0.125/3 = 1/24; within = mean(.5, .125, .125, .5) = .3125,
    # noise .3125/2 = .15625 > 1/24, so the noise is capped at 1/24: between 0, share 1, both levers equal
    s = selector_stats("a", attempts(a), list(a))
    assert s.between_var == 0 and s.within_share == 1 and s.lever == "either"
    assert s.se_more_tasks == pytest.approx(s.se_more_repeats) == pytest.approx(math.sqrt(1 / 24 / 8))
    # a between-task variance truncated to 0 says so, not "no number of repeats brings it below 0"
    assert s.se_repeats_floor is None
    assert s.lever_note is not None
    assert "estimated at 0" in s.lever_note and "below 0" not in s.lever_note
    # pair: diffs 0, .25, -.25, .5 -> mean .125, Var = 2 * (.125^2 + .375^2) / 3 = 0.3125/3;
    # raw noise (.3125 + 0) / 2 = .15625 > .104167 -> capped: between 0, within .3125 * (.104167/.15625) = 0.208333
    p = pair_stats("a", attempts(a), "b", attempts(b), list(a))
    assert p.sd_diff is not None
    assert p.sd_diff**2 == pytest.approx(0.3125 / 3)
    assert p.between_var == 0 and p.noise_var == pytest.approx(0.3125 / 3)
    assert p.within_var == pytest.approx(0.3125 * (0.3125 / 3) / 0.15625)
    assert p.mde is not None
    assert p.repeats_needed(p.mde) == 2  # the current repeats reproduce the current MDE


def test_sign_test_matches_scipy_binomtest():
    from scipy.stats import binomtest

    from hermit_tui.core.stats.figures import sign_test_p

    for wins, losses in [(4, 1), (0, 7), (10, 10), (3, 12), (50, 31), (1, 0)]:
        assert sign_test_p(wins, losses) == pytest.approx(binomtest(wins, wins + losses).pvalue, rel=1e-12)


def test_a_selectors_mean_does_not_depend_on_the_order_of_its_tasks():
    """27/80 = 0.3375 exactly: summed in one order the floats gave 0.33749999..., in another 0.33750000...1, and the
    compare screen showed 0.337 where the card showed 0.338. The mean is now that of the correctly rounded sum."""
    import random

    from hermit_tui.core.stats.selector import exact_mean

    means = [1 / 3, 2 / 3, 1.0, 0.0, 1 / 3, 0.5, 1 / 3, 2 / 3, 0.0, 1.0, 1 / 6, 1 / 3, 0.0, 2 / 3, 1 / 3, 1 / 3]
    rng = random.Random(7)
    seen, numpy_seen = set(), set()
    for _ in range(200):
        rng.shuffle(means)
        seen.add(exact_mean(np.array(means)))
        numpy_seen.add(float(np.array(means).mean()))
    assert len(numpy_seen) > 1  # the data do show the problem
    assert len(seen) == 1
    (value,) = seen
    assert abs(value - float(sum(Fraction(m) for m in means) / len(means))) <= math.ulp(value)
