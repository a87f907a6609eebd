"""Error bars for evaluations: per-selector intervals, paired comparisons, variance split and power.

The approach follows Miller (2024), "Adding Error Bars to Evals": repeats are nested inside tasks, so standard errors
are clustered by task; two selectors are compared on paired per-task differences; the variance of a task's mean is
split into a between-task part and a within-task (run-to-run) part, ``Var(task mean) = between + within / k``, which
tells whether more repeats can narrow an interval; and power analysis gives the smallest difference a sample can
reliably detect.

Input is, per selector, the attempts as ``AttemptRecord`` objects or ``(task_id, repeat, score)`` tuples, plus the
test task ids. Failed attempts are already recorded with score 0 and count as such. numpy and scipy are imported
inside the functions so that importing this module stays cheap.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Literal

from pydantic import BaseModel

from hermit_tui.core.records import SOLVED_THRESHOLD, AttemptRecord

Attempt = AttemptRecord | tuple[str, int, float]

ALPHA = 0.05
POWER = 0.8
TIE_TOL = 1e-9
EXACT_LIMIT = 200_000  # enumerate every sign flip when 2**n is at most this
RANDOM_FLIPS = 100_000
SEED = 20241101
TRANSITIONS = ("fixed", "broken", "stable_pass", "stable_fail", "flaky")
PERMUTATION_TEST = ("paired permutation test on per-task mean differences, two-sided, exact when 2^n <= 2e5 "
                    f"else {RANDOM_FLIPS:,} seeded random sign flips")
SE_METHOD = "t interval, n_tasks - 1 df"
CLUSTERED_SE = ("clustered by task (cluster-robust CR1: sqrt(G/(G-1) * sum over tasks of (sum of residuals)^2 / N^2); "
                "with equal repeats this is sd(task means) / sqrt(G))")


class TaskStat(BaseModel):
    """One task's attempts: mean and spread across repeats (``sd`` is None with a single repeat)."""

    mean: float
    sd: float | None
    n: int
    solved: int  # repeats scoring at least the threshold


class SelectorStats(BaseModel):
    """One selector's score with its clustered 95% interval, solved rates and variance split.

    Figures are None when they cannot be computed (no attempt, or one task for an interval).
    """

    label: str
    threshold: float
    n_tasks: int  # test tasks with at least one attempt
    n_missing: int  # test tasks with no attempt
    n_attempts: int
    n_ignored: int = 0  # attempts on ids outside the test tasks, or duplicates of a (task, repeat) seen again
    repeats: int | None  # k when every task has the same number of repeats
    repeats_min: int
    repeats_max: int
    mean: float | None  # over attempts, as hermit's mean_score
    se: float | None
    ci_low: float | None
    ci_high: float | None
    method: str = f"{SE_METHOD}; se {CLUSTERED_SE}"
    per_task: dict[str, TaskStat]
    solved_once: float | None
    solved_once_ci: tuple[float, float] | None  # Wilson 95%
    pass_k: float | None  # share of tasks whose every repeat is solved; None with fewer than 2 repeats
    pass_k_ci: tuple[float, float] | None
    rule_of_three: str | None  # when every task or no task is solved
    # Variance split of the task means: Var(task mean) = between + within / k (method of moments: the within part
    # is capped at the observed variance of the task means, so between >= 0 and the two parts add up to it).
    between_var: float | None
    within_var: float | None  # mean per-task variance across repeats; None with one repeat everywhere
    within_share: float | None  # (within / k) / Var(task mean): the share that is run-to-run noise
    se_more_tasks: float | None  # projected standard error with twice the tasks
    se_more_repeats: float | None  # projected standard error with twice the repeats
    se_repeats_floor: float | None  # no number of repeats brings the standard error below this
    lever: Literal["tasks", "either"] | None  # "either": doubling repeats gives >= 90% of the gain of doubling tasks
    lever_note: str | None
    scores_outside_unit: bool
    nonfinite_scores: int = 0  # NaN or infinite scores, counted as 0


class PairStats(BaseModel):
    """Selector ``b`` against selector ``a`` on the tasks both attempted; differences are ``b - a``."""

    a: str
    b: str
    threshold: float
    n_paired: int
    n_unpaired: int  # test tasks attempted by only one of the two: left out of every figure below
    unpaired: list[str]
    repeats_min: int
    repeats_max: int
    mean_diff: float | None
    sd_diff: float | None
    se: float | None
    ci_low: float | None
    ci_high: float | None
    method: str = SE_METHOD
    p_value: float | None
    test: str = PERMUTATION_TEST
    sign_test_p: float | None  # exact binomial sign test on wins vs losses
    wins: int  # tasks where b's mean is higher
    losses: int
    ties: int
    transitions: dict[str, list[str]]
    transition_counts: dict[str, int]
    # Var(task diff) = between + within / k, with within = within_a + within_b (per-attempt variances across repeats),
    # the within part capped at the observed sd_diff^2 and rescaled accordingly; None with one repeat per task.
    between_var: float | None
    within_var: float | None
    noise_var: float | None  # the within part at the current repeats; between_var + noise_var == sd_diff^2
    mde: float | None  # minimum detectable difference, alpha 0.05 two-sided, power 0.8 (normal approximation)
    verdict: str

    def tasks_needed(self, delta: float) -> int | None:
        """Paired tasks needed to detect a difference of ``delta`` (at the current repeats), or None if unknown."""
        if self.sd_diff is None or not delta:
            return None
        return max(2, math.ceil((_z_sum() * self.sd_diff / abs(delta)) ** 2 - 1e-9))

    def repeats_needed(self, delta: float) -> int | None:
        """Repeats per task needed to detect ``delta`` with the current paired tasks.

        Uses ``Var(task diff) = between + within / k``; None when the within-task variance is unknown
        or when no number of repeats suffices (the between-task part alone is too large).
        """
        if self.within_var is None or self.between_var is None or not delta:
            return None
        room = self.n_paired * delta ** 2 / _z_sum() ** 2 - self.between_var
        if room <= 0:
            return None
        return max(1, math.ceil(self.within_var / room - 1e-9))


def wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval for a proportion (no continuity correction); (0, 1) when ``n`` is 0."""
    if n <= 0:
        return (0.0, 1.0)
    from scipy.stats import binomtest, norm

    ci = binomtest(int(successes), int(n)).proportion_ci(confidence_level=2 * norm.cdf(z) - 1, method="wilson")
    return (float(ci.low), float(ci.high))


def default_pairs(labels: Sequence[str]) -> list[tuple[str, str]]:
    """(none, final), (root, final), (none, root) where both are present, in that order; else consecutive pairs."""
    present = set(labels)
    pairs = [p for p in (("none", "final"), ("root", "final"), ("none", "root")) if set(p) <= present]
    return pairs or list(zip(labels, labels[1:]))


# ---------------------------------------------------------------------------------------------------- collecting


class _Scores:
    """Scores per test task (in task order), with counts of what was left out."""

    def __init__(self, records: Iterable[Attempt], task_ids: Sequence[str] | None):
        by_key: dict[tuple[str, int], float] = {}
        self.n_ignored = self.nonfinite = 0
        seen: list[str] = []
        for rec in records:
            tid, rep, score = (rec.id, rec.repeat, rec.judge.score) if isinstance(rec, AttemptRecord) else rec
            tid, rep = str(tid), int(rep)
            if not math.isfinite(score):
                self.nonfinite += 1
                score = 0.0
            if (tid, rep) in by_key:
                self.n_ignored += 1  # the later record of a (task, repeat) replaces the earlier one
            by_key[(tid, rep)] = float(score)
            seen.append(tid)
        order = list(dict.fromkeys(task_ids if task_ids is not None else seen))
        wanted = set(order)
        per_task: dict[str, list[float]] = {t: [] for t in order}
        for (tid, _rep), score in sorted(by_key.items(), key=lambda kv: kv[0][1]):
            if tid in wanted:
                per_task[tid].append(score)
            else:
                self.n_ignored += 1
        self.order = order
        self.tasks = {t: s for t, s in per_task.items() if s}
        self.missing = [t for t in order if not per_task[t]]


def _task_stat(scores: list[float], threshold: float) -> TaskStat:
    import numpy as np

    arr = np.asarray(scores, dtype=float)
    return TaskStat(mean=float(arr.mean()), sd=float(arr.std(ddof=1)) if len(arr) > 1 else None, n=len(arr),
                    solved=int((arr >= threshold).sum()))


def _z_sum() -> float:
    from scipy.stats import norm

    return float(norm.ppf(1 - ALPHA / 2) + norm.ppf(POWER))


def _t_interval(mean: float, se: float | None, df: int) -> tuple[float | None, float | None]:
    if se is None or df < 1:
        return (None, None)
    from scipy.stats import t

    half = float(t.ppf(1 - ALPHA / 2, df)) * se
    return (mean - half, mean + half)


# ---------------------------------------------------------------------------------------------------- one selector


def selector_stats(label: str, records: Iterable[Attempt], task_ids: Sequence[str] | None,
                   threshold: float = SOLVED_THRESHOLD) -> SelectorStats:
    """Mean with a clustered 95% interval, per-task figures, solved rates and the variance split of one selector.

    ``task_ids`` are the test task ids (None: the ids in the records). Attempts on other ids are ignored and counted.
    """
    import numpy as np

    data = _Scores(records, task_ids)
    per_task = {t: _task_stat(s, threshold) for t, s in data.tasks.items()}
    counts = [ts.n for ts in per_task.values()]
    g = len(per_task)
    flat = [x for s in data.tasks.values() for x in s]
    outside = any(x < 0 or x > 1 for x in flat)
    common = dict(label=label, threshold=threshold, n_tasks=g, n_missing=len(data.missing), n_attempts=len(flat),
                  n_ignored=data.n_ignored, repeats=counts[0] if counts and min(counts) == max(counts) else None,
                  repeats_min=min(counts, default=0), repeats_max=max(counts, default=0), per_task=per_task,
                  scores_outside_unit=outside, nonfinite_scores=data.nonfinite)
    if not g:
        return SelectorStats(**common, mean=None, se=None, ci_low=None, ci_high=None, solved_once=None,
                             solved_once_ci=None, pass_k=None, pass_k_ci=None, rule_of_three=None, between_var=None,
                             within_var=None, within_share=None, se_more_tasks=None, se_more_repeats=None,
                             se_repeats_floor=None, lever=None, lever_note=None)

    mean = float(np.mean(flat))
    se = None
    if g > 1:  # CR1 cluster-robust variance of the attempt mean
        cluster_sums = np.array([np.sum(np.asarray(s) - mean) for s in data.tasks.values()])
        se = float(math.sqrt(g / (g - 1) * np.sum(cluster_sums ** 2) / len(flat) ** 2))
    ci_low, ci_high = _t_interval(mean, se, g - 1)

    solved = sum(ts.solved > 0 for ts in per_task.values())
    all_solved = sum(ts.solved == ts.n for ts in per_task.values())
    has_pass_k = min(counts) >= 2
    split = _split(per_task)
    return SelectorStats(
        **common, mean=mean, se=se, ci_low=ci_low, ci_high=ci_high,
        solved_once=solved / g, solved_once_ci=wilson(solved, g),
        pass_k=all_solved / g if has_pass_k else None, pass_k_ci=wilson(all_solved, g) if has_pass_k else None,
        rule_of_three=_rule_of_three(solved, all_solved if has_pass_k else None, g, threshold),
        **split,
    )


def _split(per_task: dict[str, TaskStat]) -> dict:
    """Between/within variance split of the task means and what more tasks or repeats would do to the se."""
    import numpy as np

    g = len(per_task)
    means = np.array([ts.mean for ts in per_task.values()])
    inv_k = float(np.mean([1 / ts.n for ts in per_task.values()]))  # 1/k, or its average with unequal repeats
    sds = [ts.sd for ts in per_task.values() if ts.sd is not None]
    none = dict(between_var=None, within_var=None, within_share=None, se_more_tasks=None, se_more_repeats=None,
                se_repeats_floor=None, lever=None, lever_note=None)
    if g < 2:
        return none | dict(lever_note="One task: the between-task variance cannot be estimated.")
    var_means = float(means.var(ddof=1))
    if not sds:
        return none | dict(between_var=var_means, lever_note=(
            "One attempt per task: the run-to-run variance cannot be separated from the between-task variance; "
            "more tasks narrow the interval, repeats may too."))
    within = float(np.mean(np.square(sds)))
    noise = min(within * inv_k, var_means)  # the within part cannot exceed what was observed
    between = var_means - noise
    share = noise / var_means if var_means > 0 else None
    se_tasks = math.sqrt(var_means / (2 * g))
    se_reps = math.sqrt((between + noise / 2) / g)
    floor = math.sqrt(between / g)
    lever = "either" if share is not None and share >= 0.9 else "tasks"
    if var_means == 0:
        note = "Every task has the same mean score: the standard error is 0 and neither lever changes it."
    else:
        note = (f"Run-to-run noise is {share:.0%} of the variance of a task's mean. Doubling the tasks would bring "
                f"the standard error to {se_tasks:.3g}, doubling the repeats to {se_reps:.3g}; no number of repeats "
                f"brings it below {floor:.3g}.")
    return dict(between_var=between, within_var=within, within_share=share, se_more_tasks=se_tasks,
                se_more_repeats=se_reps, se_repeats_floor=floor, lever=lever, lever_note=note)


def _rule_of_three(solved: int, all_solved: int | None, g: int, threshold: float) -> str | None:
    bound = min(1.0, 3 / g)
    what = f"a score of at least {threshold:g}"
    if solved == 0:
        return (f"No task of {g} reached {what}: the true solved rate is below {bound:.2g} "
                "(rule of three, 95%).")
    if all_solved == g:
        return (f"Every repeat of all {g} tasks reached {what}: the true pass^k rate is above {1 - bound:.2g} "
                "(rule of three, 95%).")
    if solved == g:
        return (f"All {g} tasks reached {what} at least once: the true solved rate is above {1 - bound:.2g} "
                "(rule of three, 95%).")
    return None


# ---------------------------------------------------------------------------------------------------- pairs


def _permutation_p(diffs) -> float:
    import numpy as np
    from scipy.stats import permutation_test

    n = len(diffs)
    if n < 2 or not np.any(np.abs(diffs) > TIE_TOL):
        return 1.0  # one task: both sign flips are equally extreme
    exact = 2 ** n <= EXACT_LIMIT
    res = permutation_test((diffs,), np.mean, permutation_type="samples", vectorized=True, axis=-1,
                           n_resamples=2 ** n if exact else RANDOM_FLIPS, batch=max(1, 2_000_000 // n),
                           rng=np.random.default_rng(SEED))
    return float(min(1.0, res.pvalue))


def _transition(a: TaskStat, b: TaskStat) -> str:
    a_all, a_none = a.solved == a.n, a.solved == 0
    b_all, b_none = b.solved == b.n, b.solved == 0
    if a_none and b_all:
        return "fixed"
    if a_all and b_none:
        return "broken"
    if a_all and b_all:
        return "stable_pass"
    if a_none and b_none:
        return "stable_fail"
    return "flaky"


def pair_stats(a_label: str, a_records: Iterable[Attempt], b_label: str, b_records: Iterable[Attempt],
               task_ids: Sequence[str] | None, threshold: float = SOLVED_THRESHOLD) -> PairStats:
    """Paired comparison of ``b`` against ``a`` over the test tasks both attempted (differences are b - a)."""
    import numpy as np

    sa, sb = _Scores(a_records, task_ids), _Scores(b_records, task_ids)
    order = list(dict.fromkeys(sa.order + sb.order))
    paired = [t for t in order if t in sa.tasks and t in sb.tasks]
    unpaired = [t for t in order if (t in sa.tasks) != (t in sb.tasks)]
    ta = {t: _task_stat(sa.tasks[t], threshold) for t in paired}
    tb = {t: _task_stat(sb.tasks[t], threshold) for t in paired}
    n = len(paired)
    counts = [ts.n for ts in ta.values()] + [ts.n for ts in tb.values()]
    diffs = np.array([tb[t].mean - ta[t].mean for t in paired], dtype=float)

    transitions: dict[str, list[str]] = {k: [] for k in TRANSITIONS}
    for t in paired:
        transitions[_transition(ta[t], tb[t])].append(t)

    mean_diff = float(diffs.mean()) if n else None
    sd = float(diffs.std(ddof=1)) if n > 1 else None
    se = sd / math.sqrt(n) if sd is not None else None
    ci_low, ci_high = _t_interval(mean_diff, se, n - 1) if n else (None, None)
    wins, losses = int((diffs > TIE_TOL).sum()), int((diffs < -TIE_TOL).sum())
    sign_p = None
    if wins + losses:
        from scipy.stats import binomtest

        sign_p = float(binomtest(wins, wins + losses).pvalue)

    between = within = noise = None
    if n > 1:
        sds_a = [ts.sd for ts in ta.values() if ts.sd is not None]
        sds_b = [ts.sd for ts in tb.values() if ts.sd is not None]
        between = sd ** 2
        if sds_a and sds_b:
            wa, wb = float(np.mean(np.square(sds_a))), float(np.mean(np.square(sds_b)))
            raw = (wa * float(np.mean([1 / ts.n for ts in ta.values()]))
                   + wb * float(np.mean([1 / ts.n for ts in tb.values()])))
            noise = min(raw, sd ** 2)
            within = (wa + wb) * (noise / raw if raw > 0 else 1.0)
            between = sd ** 2 - noise
    mde = _z_sum() * se if se is not None else None
    p = _permutation_p(diffs) if n else None

    fields = dict(a=a_label, b=b_label, threshold=threshold, n_paired=n, n_unpaired=len(unpaired),
                  unpaired=unpaired, repeats_min=min(counts, default=0), repeats_max=max(counts, default=0),
                  mean_diff=mean_diff, sd_diff=sd, se=se, ci_low=ci_low, ci_high=ci_high, p_value=p,
                  sign_test_p=sign_p, wins=wins, losses=losses, ties=n - wins - losses, transitions=transitions,
                  transition_counts={k: len(v) for k, v in transitions.items()}, between_var=between,
                  within_var=within, noise_var=noise, mde=mde)
    return PairStats(**fields, verdict=_verdict(fields))


def _num(x: float) -> str:
    return f"{x:.2g}" if 0 < abs(x) < 0.01 else f"{x:.2f}"


def _p(p: float) -> str:
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}" if p < 0.01 else f"p = {p:.2f}"


def _verdict(f: dict) -> str:
    """One or two plain sentences; an improvement or regression only when the interval excludes 0 and p < 0.05."""
    a, b, n = f["a"], f["b"], f["n_paired"]
    if not n:
        return f"No task has attempts from both {a} and {b}: nothing to compare."
    lo, hi, diff, mde, p = f["ci_low"], f["ci_high"], f["mean_diff"], f["mde"], f["p_value"]
    k = (f"{f['repeats_min']}" if f["repeats_min"] == f["repeats_max"]
         else f"{f['repeats_min']}-{f['repeats_max']}")
    sample = f"{n} task{'s' * (n != 1)} x {k} repeat{'s' * (k != '1')}"
    if f["n_unpaired"]:
        sample += f"; {f['n_unpaired']} unpaired left out"
    if f["sd_diff"] == 0 and abs(diff) <= TIE_TOL:
        return f"No difference: {b} and {a} have the same mean score on every task ({sample})."
    figures = f"{sample}, {_p(p)}" if lo is None else f"95% CI {_num(lo)} to {_num(hi)}, {_p(p)}, {sample}"
    if abs(diff) > TIE_TOL:
        headline = f"{b} scores {_num(abs(diff))} {'higher' if diff > 0 else 'lower'} than {a} ({figures})"
    else:
        headline = f"{b} scores the same as {a} on average ({figures})"
    excludes_zero = lo is not None and (lo > 0 or hi < 0)
    too_small = n < 10 or mde is None or mde > abs(diff)
    if mde is None:
        detect = "at least 2 paired tasks are needed"
    elif mde > abs(diff):
        detect = f"with {n} tasks the smallest difference this sample can reliably detect is {_num(mde)}"
    else:
        detect = f"{n} paired tasks are fewer than 10"
    if excludes_zero and p < ALPHA and not too_small:
        return f"{headline}: {'an improvement' if diff > 0 else 'a regression'}."
    if excludes_zero and p < ALPHA:
        return f"{headline}, but the sample is too small to tell: {detect}."
    reason = ("one paired task gives no interval" if lo is None else "the interval includes 0" if not excludes_zero
              else f"the permutation test gives {_p(p)}")
    if too_small:
        return f"No clear difference: {headline}; {reason}. The sample is too small to tell: {detect}."
    return f"No clear difference: {headline}; {reason}."
