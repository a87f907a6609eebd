"""The statistics engine, checked against hand-worked cases and second methods (bootstrap, full enumeration).

Constants from published tables: t(0.975, 3) = 3.182446, t(0.975, 5) = 2.570582, t(0.975, 11) = 2.200985,
z(0.975) = 1.959964, z(0.80) = 0.841621.
"""
import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from hermit_tui.core.records import AttemptRecord, Judged
from hermit_tui.core.stats import default_pairs, pair_stats, selector_stats, wilson

T3, T5, T11 = 3.182446305, 2.570581836, 2.200985160
Z_SUM = 1.959963985 + 0.841621234  # z(1 - 0.05/2) + z(0.80)


def attempts(table: dict[str, list[float]]) -> list[tuple[str, int, float]]:
    return [(tid, r, s) for tid, scores in table.items() for r, s in enumerate(scores, start=1)]


# --------------------------------------------------------------------------------------------- one selector

FOUR_BY_TWO = {"t1": [1, 1], "t2": [1, 0], "t3": [0, 0], "t4": [0.5, 0.5]}


def test_selector_hand_worked_four_tasks_two_repeats():
    s = selector_stats("none", attempts(FOUR_BY_TWO), list(FOUR_BY_TWO))
    # mean over the 8 attempts: (2 + 1 + 0 + 1) / 8 = 0.5
    assert s.mean == pytest.approx(0.5)
    assert (s.n_tasks, s.n_attempts, s.repeats, s.repeats_min, s.repeats_max) == (4, 8, 2, 2, 2)
    # CR1 clustered se: residual sums per task are 1, 0, -1, 0 -> sum of squares 2;
    # V = G/(G-1) * 2 / N^2 = 4/3 * 2/64 = 1/24.
    # Same as sd(task means)/sqrt(G): task means 1, .5, 0, .5 -> var (.25+0+.25+0)/3 = 1/6 -> se^2 = 1/24.
    assert s.se == pytest.approx(math.sqrt(1 / 24))
    # t interval with 3 df: 0.5 -/+ 3.182446 * 0.204124 = 0.5 -/+ 0.649613
    assert s.ci_low == pytest.approx(0.5 - T3 * math.sqrt(1 / 24), abs=1e-7)
    assert s.ci_high == pytest.approx(0.5 + T3 * math.sqrt(1 / 24), abs=1e-7)
    assert "t interval" in s.method and "CR1" in s.method
    # per task: t2 = [1, 0] has mean .5 and sd sqrt(((1-.5)^2 + (0-.5)^2) / 1) = sqrt(.5)
    assert s.per_task["t2"].mean == 0.5 and s.per_task["t2"].sd == pytest.approx(math.sqrt(0.5))
    assert s.per_task["t1"].sd == 0 and s.per_task["t1"].solved == 2 and s.per_task["t2"].solved == 1
    # solved at least once (score >= 1): t1, t2 -> 2/4; pass^2: only t1 -> 1/4
    assert s.solved_once == 0.5 and s.pass_k == 0.25
    assert s.solved_once_ci == pytest.approx((0.1500, 0.8500), abs=5e-5)  # Wilson 2/4
    assert s.rule_of_three is None and not s.scores_outside_unit
    # variance split: per-task variances 0, .5, 0, 0 -> within .125; noise = .125/2 = .0625;
    # Var(task means) = 1/6 -> between = 1/6 - 1/16 = 5/48; share = .0625 / (1/6) = .375
    assert s.within_var == pytest.approx(0.125)
    assert s.between_var == pytest.approx(5 / 48)
    assert s.within_share == pytest.approx(0.375)
    assert s.se_more_tasks == pytest.approx(math.sqrt((1 / 6) / 8))           # twice the tasks
    assert s.se_more_repeats == pytest.approx(math.sqrt((5 / 48 + 1 / 32) / 4))  # between + noise/2, over 4 tasks
    assert s.se_repeats_floor == pytest.approx(math.sqrt((5 / 48) / 4))
    assert s.lever == "tasks" and "38%" in s.lever_note


def test_clustered_se_with_unequal_repeats_weighs_attempts():
    # t1 [1,1,1], t2 [0], t3 [0,1]: N = 6, mean 4/6 = 2/3.
    # residual sums: t1 3 * 1/3 = 1; t2 -2/3; t3 -2/3 + 1/3 = -1/3 -> squares 1 + 4/9 + 1/9 = 14/9
    # V = 3/2 * 14/9 / 36 = 7/108   (sd(task means)/sqrt(3) would give 0.5/sqrt(3): different, as it should be)
    s = selector_stats("x", attempts({"t1": [1, 1, 1], "t2": [0], "t3": [0, 1]}), ["t1", "t2", "t3"])
    assert s.mean == pytest.approx(2 / 3)
    assert s.se == pytest.approx(math.sqrt(7 / 108))
    assert s.repeats is None and (s.repeats_min, s.repeats_max) == (1, 3)
    assert s.pass_k is None and s.pass_k_ci is None  # a task with one repeat: pass^k undefined
    assert s.per_task["t2"].sd is None


def test_bootstrap_agrees_with_clustered_se():
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
    assert "below 0.15" in none_solved.rule_of_three  # 3/20
    all_once = selector_stats("x", attempts({f"t{i}": [1.0, 0.0] for i in range(10)}), None)
    assert "above 0.7" in all_once.rule_of_three and "at least once" in all_once.rule_of_three  # 1 - 3/10
    every = selector_stats("x", attempts({f"t{i}": [1.0, 1.0] for i in range(30)}), None)
    assert "pass^k" in every.rule_of_three and "above 0.9" in every.rule_of_three  # 1 - 3/30
    # zero variance: se 0, a degenerate interval, no crash in the split
    assert every.se == 0 and every.ci_low == every.ci_high == 1.0
    assert every.within_share is None and "same mean" in every.lever_note


def test_edge_cases_do_not_crash():
    one = selector_stats("x", attempts({"t1": [0.2, 0.4]}), ["t1", "t2"])
    assert one.mean == pytest.approx(0.3) and one.se is None and one.ci_low is None
    assert one.n_missing == 1 and one.between_var is None
    empty = selector_stats("x", [], ["t1"])
    assert empty.n_tasks == 0 and empty.mean is None and empty.solved_once is None
    single = selector_stats("x", attempts({"t1": [1], "t2": [0], "t3": [0.5]}), None)
    assert single.within_var is None and single.between_var == pytest.approx(0.25)  # var of 1, 0, .5
    odd = selector_stats("x", [("t1", 1, 3.0), ("t1", 2, -1.0), ("t2", 1, float("nan")), ("zz", 1, 1.0)], ["t1", "t2"])
    assert odd.scores_outside_unit and odd.nonfinite_scores == 1 and odd.n_ignored == 1  # zz is not a test task
    assert odd.mean == pytest.approx((3 - 1 + 0) / 3)  # NaN counts as 0
    dup = selector_stats("x", [("t1", 1, 0.0), ("t1", 1, 1.0)], None)
    assert dup.n_attempts == 1 and dup.mean == 1.0 and dup.n_ignored == 1  # the later record of a repeat wins


def test_attempt_records_and_tuples_agree():
    def rec(tid, repeat, score):
        return AttemptRecord(repeat=repeat, id=tid, status="ok", judge=Judged(score=score))
    records = [rec(t, r, s) for t, r, s in attempts(FOUR_BY_TWO)]
    assert selector_stats("x", records, list(FOUR_BY_TWO)) == selector_stats("x", attempts(FOUR_BY_TWO),
                                                                               list(FOUR_BY_TWO))


# --------------------------------------------------------------------------------------------- pairs

# 6 tasks x 2 repeats; task means a -> b and the difference b - a
SIX_A = {"t1": [0, 0], "t2": [.5, .5], "t3": [0, 0], "t4": [1, 1], "t5": [1, 0], "t6": [0, 1]}
SIX_B = {"t1": [1, 0], "t2": [1, 1], "t3": [1, 1], "t4": [1, 0], "t5": [0, 1], "t6": [1, 1]}
SIX_D = [Fraction(1, 2), Fraction(1, 2), Fraction(1), Fraction(-1, 2), Fraction(0), Fraction(1, 2)]


def test_pair_hand_worked_six_tasks():
    p = pair_stats("none", attempts(SIX_A), "final", attempts(SIX_B), list(SIX_A))
    assert p.n_paired == 6 and p.n_unpaired == 0
    # mean diff 2/6; deviations 1/6,1/6,2/3,-5/6,-1/3,1/6 -> squares sum 48/36 = 4/3 -> var 4/15, se^2 = 4/90
    assert p.mean_diff == pytest.approx(1 / 3)
    assert p.sd_diff == pytest.approx(math.sqrt(4 / 15))
    assert p.se == pytest.approx(math.sqrt(4 / 90))
    assert p.ci_low == pytest.approx(1 / 3 - T5 * math.sqrt(4 / 90), abs=1e-7)
    assert p.ci_high == pytest.approx(1 / 3 + T5 * math.sqrt(4 / 90), abs=1e-7)
    assert (p.wins, p.losses, p.ties) == (4, 1, 1)
    # sign test, 4 wins of 5: P(X <= 1 or X >= 4 | Bin(5, 1/2)) = (1 + 5 + 5 + 1) / 32
    assert p.sign_test_p == pytest.approx(12 / 32)

    # exact permutation p-value, all 64 sign flips enumerated here
    observed = abs(sum(SIX_D))
    extreme = sum(abs(sum(s * d for s, d in zip(signs, SIX_D))) >= observed
                  for signs in itertools.product((1, -1), repeat=6))
    # by hand: 0.5 * (sum of the four .5-signs) in {2,1,0,-1,-2} (counts 1,4,6,4,1), plus +/-1 for t3;
    # |total| >= 2 for (2,+1), (1,+1), (-1,-1), (-2,-1): 1 + 4 + 4 + 1 = 10 patterns, x2 for t5's zero -> 20
    assert extreme == 20
    assert p.p_value == pytest.approx(20 / 64)
    assert "permutation" in p.test and "exact" in p.test

    # MDE = (z.975 + z.80) * se
    assert p.mde == pytest.approx(Z_SUM * math.sqrt(4 / 90), rel=1e-6)
    # variance split of the differences: within a = mean(0,0,0,0,.5,.5) = 1/6, within b = mean(.5,0,0,.5,.5,0) = 1/4
    # noise at k = 2: (1/6 + 1/4) / 2 = 5/24 (< 4/15 observed, so not capped); between = 4/15 - 5/24 = 7/120
    assert p.noise_var == pytest.approx(5 / 24)
    assert p.within_var == pytest.approx(5 / 12)
    assert p.between_var == pytest.approx(7 / 120)


def test_power_helpers_are_consistent():
    p = pair_stats("none", attempts(SIX_A), "final", attempts(SIX_B), list(SIX_A))
    assert p.tasks_needed(p.mde) == 6       # the current sample detects exactly its own MDE
    assert p.repeats_needed(p.mde) == 2     # the current repeats, likewise
    # half the difference needs four times the tasks: ceil((Z_SUM * sd / (mde/2))^2) = 4 * 6
    assert p.tasks_needed(p.mde / 2) == 24
    # repeats for 0.4: room = 6 * 0.4^2 / Z_SUM^2 - 7/120 = 0.063978; k = (5/12) / room = 6.51 -> 7
    room = 6 * 0.4 ** 2 / Z_SUM ** 2 - 7 / 120
    assert p.repeats_needed(0.4) == math.ceil((5 / 12) / room) == 7
    # no number of repeats gets below Z_SUM * sqrt(between / n) = 0.2762: 0.25 is out of reach
    assert p.repeats_needed(0.25) is None


def test_transition_table_and_threshold():
    a = {"t1": [0, 0], "t2": [1, 1], "t3": [1, 1], "t4": [0, .5], "t5": [1, 0], "t6": [0, 0]}
    b = {"t1": [1, 1], "t2": [0, .5], "t3": [1, 1], "t4": [0, 0], "t5": [1, 1], "t6": [1, 0]}
    p = pair_stats("root", attempts(a), "final", attempts(b), list(a))
    assert p.transitions == {"fixed": ["t1"], "broken": ["t2"], "stable_pass": ["t3"], "stable_fail": ["t4"],
                             "flaky": ["t5", "t6"]}
    assert p.transition_counts == {"fixed": 1, "broken": 1, "stable_pass": 1, "stable_fail": 1, "flaky": 2}
    # threshold 0.5: t2's b [0, .5] and t4's a [0, .5] are now solved once -> both flaky
    half = pair_stats("root", attempts(a), "final", attempts(b), list(a), threshold=0.5)
    assert half.transitions["broken"] == [] and half.transitions["stable_fail"] == []
    assert half.transitions["flaky"] == ["t2", "t4", "t5", "t6"]


def test_random_sign_flips_agree_with_full_enumeration():
    # 20 tasks: 2^20 > 2e5, so the engine draws 100k random flips; enumerate all 2^20 here (meet in the middle)
    rng = np.random.default_rng(3)
    ids = [f"t{i}" for i in range(20)]
    a = {t: [0.0] for t in ids}
    b = {t: [float(x)] for t, x in zip(ids, rng.choice([-1.0, -0.5, 0.5, 1.0, 1.0], size=20))}
    p = pair_stats("a", attempts(a), "b", attempts(b), ids)
    d = np.array([b[t][0] for t in ids]) * 2  # integers
    halves = [np.array([np.dot(s, part) for s in itertools.product((1, -1), repeat=10)]) for part in (d[:10], d[10:])]
    sums = (halves[0][:, None] + halves[1][None, :]).ravel()
    exact = np.mean(np.abs(sums) >= abs(d.sum()))
    assert "random" in p.test
    assert abs(p.p_value - exact) < 4 * math.sqrt(exact * (1 - exact) / 100_000) + 1e-5


def test_pair_edge_cases():
    # zero variance, all differences 0: se 0, degenerate interval, p = 1
    same = {f"t{i}": [0.5, 0.5] for i in range(12)}
    p = pair_stats("a", attempts(same), "b", attempts(same), list(same))
    assert p.se == 0 and p.ci_low == p.ci_high == 0 and p.p_value == 1.0 and p.ties == 12
    assert p.verdict.startswith("No difference")
    # one task
    one = pair_stats("a", attempts({"t1": [0]}), "b", attempts({"t1": [1]}), ["t1"])
    assert one.mean_diff == 1 and one.se is None and one.p_value == 1.0 and one.mde is None
    assert one.tasks_needed(0.1) is None and "too small to tell" in one.verdict and "an improvement" not in one.verdict
    # a task missing from one selector is left out and counted
    miss = pair_stats("a", attempts({"t1": [0], "t2": [0], "t3": [1]}), "b", attempts({"t1": [1], "t2": [1]}),
                      ["t1", "t2", "t3"])
    assert miss.n_paired == 2 and miss.unpaired == ["t3"] and "1 unpaired left out" in miss.verdict
    assert "2 paired tasks are fewer than 10" in miss.verdict and "improvement" not in miss.verdict  # sd 0, MDE 0
    # nothing in common
    assert "nothing to compare" in pair_stats("a", [], "b", attempts({"t1": [1]}), ["t1"]).verdict


# --------------------------------------------------------------------------------------------- verdicts

TWELVE_A = {f"t{i}": [0, 0] for i in range(12)}
TWELVE_B = {f"t{i}": [1, 1] if i < 6 else [1, 0] for i in range(12)}


def test_verdict_clear_improvement_and_regression():
    # diffs: six 1s and six .5s -> mean .75, var (12 * .25^2) / 11 = .75/11, se = sqrt(.75/11/12) = 0.075378
    # CI .75 -/+ 2.200985 * 0.075378 = (0.584, 0.916); p: only no flip and all flips reach 9 -> 2/4096
    # MDE = 2.8016 * 0.075378 = 0.211 < .75
    se = math.sqrt(0.75 / 11 / 12)
    p = pair_stats("none", attempts(TWELVE_A), "final", attempts(TWELVE_B), list(TWELVE_A))
    assert p.ci_low == pytest.approx(0.75 - T11 * se, abs=1e-7) and p.p_value == pytest.approx(2 / 4096)
    assert p.verdict == ("final scores 0.75 higher than none (95% CI 0.58 to 0.92, p < 0.001, "
                         "12 tasks x 2 repeats): an improvement.")
    back = pair_stats("final", attempts(TWELVE_B), "none", attempts(TWELVE_A), list(TWELVE_A))
    assert back.verdict == ("none scores 0.75 lower than final (95% CI -0.92 to -0.58, p < 0.001, "
                            "12 tasks x 2 repeats): a regression.")


def test_verdict_interval_includes_zero():
    # the six-task case: CI 1/3 -/+ 2.570582 * 0.210819 = (-0.209, 0.875), p = 20/64, MDE 2.8016 * 0.2108 = 0.59
    p = pair_stats("none", attempts(SIX_A), "final", attempts(SIX_B), list(SIX_A))
    assert p.verdict == ("No clear difference: final scores 0.33 higher than none (95% CI -0.21 to 0.88, p = 0.31, "
                         "6 tasks x 2 repeats); the interval includes 0. The sample is too small to tell: with 6 tasks "
                         "the smallest difference this sample can reliably detect is 0.59.")
    # many tasks, a small noisy difference: still no claim
    rng = np.random.default_rng(5)
    ids = [f"t{i}" for i in range(200)]
    a = {t: list(rng.uniform(0, 1, 3)) for t in ids}
    b = {t: list(rng.uniform(0, 1, 3)) for t in ids}  # same distribution as a
    big = pair_stats("none", attempts(a), "final", attempts(b), ids)
    assert big.ci_low < 0 < big.ci_high
    assert big.verdict.startswith("No clear difference") and "improvement" not in big.verdict
    assert "regression" not in big.verdict and "with 200 tasks" in big.verdict


def test_verdict_too_small_even_when_the_interval_excludes_zero():
    # diffs 1,1,1,1,.5,.5: mean 5/6, every flip but none/all smaller -> p = 2/64 < .05, CI excludes 0, n = 6 < 10
    a = {f"t{i}": [0] for i in range(6)}
    b = {f"t{i}": [1] if i < 4 else [0.5] for i in range(6)}
    p = pair_stats("root", attempts(a), "final", attempts(b), list(a))
    assert p.ci_low > 0 and p.p_value == pytest.approx(2 / 64)
    # var = (4 * (1/6)^2 + 2 * (1/3)^2) / 5 = 1/15, se = sqrt(1/90) = 0.1054: CI 5/6 -/+ 2.5706 * 0.1054 = (0.56, 1.10)
    # MDE = 2.8016 * 0.1054 = 0.295 < 5/6: too small only because n < 10
    assert p.verdict == ("final scores 0.83 higher than root (95% CI 0.56 to 1.10, p = 0.03, 6 tasks x 1 repeat), "
                         "but the sample is too small to tell: 6 paired tasks are fewer than 10.")
    assert "improvement" not in p.verdict


def test_default_pairs():
    assert default_pairs(["none", "root", "final"]) == [("none", "final"), ("root", "final"), ("none", "root")]
    assert default_pairs(["final", "none"]) == [("none", "final")]
    assert default_pairs(["a1b2", "c3d4", "e5f6"]) == [("a1b2", "c3d4"), ("c3d4", "e5f6")]
    assert default_pairs(["final"]) == []


def test_within_noise_larger_than_observed_variance_is_capped():
    a = {"t1": [0, 1], "t2": [0, .5], "t3": [1, .5], "t4": [0, 1]}
    b = {"t1": [.5, .5], "t2": [.5, .5], "t3": [.5, .5], "t4": [1, 1]}
    # selector a: task means .5, .25, .75, .5 -> Var 0.125/3 = 1/24; within = mean(.5, .125, .125, .5) = .3125,
    # noise .3125/2 = .15625 > 1/24, so the noise is capped at 1/24: between 0, share 1, both levers equal
    s = selector_stats("a", attempts(a), list(a))
    assert s.between_var == 0 and s.within_share == 1 and s.lever == "either"
    assert s.se_more_tasks == pytest.approx(s.se_more_repeats) == pytest.approx(math.sqrt(1 / 24 / 8))
    assert s.se_repeats_floor == 0
    # pair: diffs 0, .25, -.25, .5 -> mean .125, Var = 2 * (.125^2 + .375^2) / 3 = 0.3125/3;
    # raw noise (.3125 + 0) / 2 = .15625 > .104167 -> capped: between 0, within .3125 * (.104167/.15625) = 0.208333
    p = pair_stats("a", attempts(a), "b", attempts(b), list(a))
    assert p.sd_diff ** 2 == pytest.approx(0.3125 / 3)
    assert p.between_var == 0 and p.noise_var == pytest.approx(0.3125 / 3)
    assert p.within_var == pytest.approx(0.3125 * (0.3125 / 3) / 0.15625)
    assert p.repeats_needed(p.mde) == 2  # the current repeats reproduce the current MDE
