"""The statistics, proved by simulation and timed at scale.

    python benchmarks/bench_stats.py [--quick] [--only coverage,grid,test,clusters,sequential,anytime,speed] [--reps N]
                                     [--runs N] [--tasks N] [--markdown PATH]

1. **Coverage** of the 95% intervals of ``core.stats.intervals`` (the functions ``selector_stats`` and ``pair_stats``
   call): pass/fail and continuous scores, 4 to 500 tasks, 1 to 5 repeats, next to the former t interval.
2. **The paired test**: its size with unequal repeats (10 against 1), where sign flips fail, and the agreement of its
   large-sample method with the exact test where both run.
3. **Clusters**: the coverage of the pair interval clustered by a template whose tasks share a shift of the effect,
   and of the same data taken as independent tasks; with clusters of unequal sizes also the candidate's clustered
   interval and the size of the clustered pair test (CR2, t on the Bell-McCaffrey df).
4. **Sequential stopping** (``core.stats.sequential``): the false-claim rate of A/A launches with one and with three
   candidates, and on A/B launches the attempts used against the fixed design of equal power, and the estimate at
   stopping.
5. **Speed**: the statistics of 111,112 tasks x 3 repeats x 3 selectors and the 3 default pairs, from columns and
   from tuples; ``hermit-tui report --format json`` on 1,000 and 11,112 tasks written in hermit's format.

Every simulation is seeded. ``--markdown PATH`` writes the tables (RESULTS.md's statistics section).
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import synth  # noqa: E402
from stats_grid import GRID_DELTA, GRID_KAPPA, GRID_MU, GRID_REPEATS, GRID_T, SEED, grid_cell, grid_data, observed_half  # noqa: E402
from stats_power import power_section  # noqa: E402

from hermit_tui.core.stats.intervals import (  # noqa: E402
    attempts_cap,
    pair_bounds,
    pair_interval,
    pair_p_values,
    t_quantile,
    task_mean_interval,
)
from hermit_tui.core.stats.paired import paired_randomisation_test  # noqa: E402

TARGET = (0.93, 0.97)


# -- 1. coverage --------------------------------------------------------------------------------------------------


def beta_params(mu: float, kappa: float) -> tuple[float, float]:
    return mu * kappa, (1 - mu) * kappa


def scores(rng, kind: str, mu: float, kappa: float, reps: int, g: int, k: int, latent=None):
    """(task latent means, scores reps x g x k) for one scenario: "binary" tasks succeed with probability
    p ~ Beta(mu, kappa); "continuous" tasks have a quality q ~ Beta(mu, kappa) and attempts score ~ Beta(q, 10)."""
    p = rng.beta(*beta_params(mu, kappa), size=(reps, g)) if latent is None else latent
    if kind == "binary":
        return p, (rng.random((reps, g, k)) < p[..., None]).astype(float)
    c = 10.0
    q = np.clip(p, 1e-6, 1 - 1e-6)[..., None]
    return p, rng.beta(q * c * np.ones(k), (1 - q) * c * np.ones(k), size=(reps, g, k))


SELECTOR_CASES = [
    ("binary", 0.1, 2.0),
    ("binary", 0.5, 2.0),
    ("binary", 0.9, 2.0),
    ("binary", 0.97, 2.0),
    ("continuous", 0.1, 10.0),
    ("continuous", 0.5, 10.0),
    ("continuous", 0.9, 10.0),
]
STRESS_CASES = [("continuous", 0.9, 2.0), ("continuous", 0.97, 2.0)]
PAIR_CASES = [  # (kind, mu of a, kappa, shift): b's task probability or quality moves by shift * (1 - p) / (1 - mu)
    ("binary", 0.5, 2.0, 0.0),
    ("binary", 0.5, 2.0, 0.2),
    ("binary", 0.8, 2.0, -0.3),
    ("continuous", 0.5, 10.0, 0.1),
]


def selector_cell(rng, kind, mu, kappa, g, k, reps) -> dict:
    _, x = scores(rng, kind, mu, kappa, reps, g, k)
    means = x.mean(axis=2)
    counts = np.full(g, k)
    hit = outside = zero = 0
    t_hit = t_out = 0
    tq = t_quantile(g - 1)
    for r in range(reps):
        m = means[r]
        binary = bool(np.all((x[r] == 0) | (x[r] == 1)))
        iv = task_mean_interval(m, counts, binary, 0.0, 1.0)
        assert iv is not None
        hit += iv.low <= mu <= iv.high
        outside += iv.low < 0 or iv.high > 1
        zero += iv.high - iv.low <= 0
        centre, half = m.mean(), tq * m.std(ddof=1) / math.sqrt(g)
        t_hit += centre - half <= mu <= centre + half
        t_out += centre - half < 0 or centre + half > 1
    return dict(coverage=hit / reps, outside=outside, zero=zero, t_coverage=t_hit / reps, t_outside=t_out / reps)


def true_shift(mu: float, shift: float) -> float:
    """The mean difference of the pair scenarios: E[shift * (1 - p) / (1 - mu)] = shift (up) or, for a negative
    shift, E[shift * p / mu] = shift (down)."""
    return shift


def pair_cell(rng, kind, mu, kappa, shift, g, k, reps) -> dict:
    p = rng.beta(*beta_params(mu, kappa), size=(reps, g))
    pb = p + shift * (1 - p) / (1 - mu) if shift >= 0 else p + shift * p / mu
    _, xa = scores(rng, kind, mu, kappa, reps, g, k, latent=p)
    _, xb = scores(rng, kind, mu, kappa, reps, g, k, latent=np.clip(pb, 0, 1))
    ma_all, mb_all = xa.mean(axis=2), xb.mean(axis=2)
    diffs = mb_all - ma_all
    delta = true_shift(mu, shift)
    hit = outside = zero = 0
    t_hit = t_out = 0
    tq = t_quantile(g - 1)
    for r in range(reps):
        ones = np.full(g, k)
        bin_a, bin_b = bool(np.all((xa[r] == 0) | (xa[r] == 1))), bool(np.all((xb[r] == 0) | (xb[r] == 1)))
        iv = pair_interval(ma_all[r], mb_all[r], ones, ones, bin_a, bin_b, 0.0, 1.0)
        assert iv is not None
        hit += iv.low <= delta <= iv.high
        outside += iv.low < -1 or iv.high > 1
        zero += iv.high - iv.low <= 0
        centre, half = diffs[r].mean(), tq * diffs[r].std(ddof=1) / math.sqrt(g)
        t_hit += centre - half <= delta <= centre + half
        t_out += centre - half < -1 or centre + half > 1
    return dict(coverage=hit / reps, outside=outside, zero=zero, t_coverage=t_hit / reps, t_outside=t_out / reps)


def coverage(args, md: list[str]) -> None:
    rng = np.random.default_rng(SEED)
    sizes = [4, 16, 64] if args.quick else [4, 8, 16, 32, 64, 128, 500]
    repeats = [1, 3] if args.quick else [1, 2, 3, 5]
    reps = args.reps
    t0 = time.perf_counter()
    rows, all_cov, t_cov, outside, zero, t_out = [], [], [], 0, 0, []
    case: tuple[Any, ...]
    for label, cases, cell_of_case in (
        ("selector", SELECTOR_CASES, selector_cell),
        ("pair", PAIR_CASES, pair_cell),
        ("stress", [] if args.quick else STRESS_CASES, selector_cell),
    ):
        # selector_cell or pair_cell: the case's fields, then g, k, reps
        cell: Callable[..., dict] = cell_of_case
        for case in cases:
            covs = []
            for g in sizes:
                for k in repeats:
                    res = cell(rng, *case, g, k, reps)
                    covs.append((g, k, res))
                    if label != "stress":
                        all_cov.append(res["coverage"])
                        t_cov.append(res["t_coverage"])
                        t_out.append(res["t_outside"])
                    outside += res["outside"]
                    zero += res["zero"]
            rows.append((label, case, covs))
    wall = time.perf_counter() - t0
    n_cells = len(all_cov)
    in_band = sum(TARGET[0] <= c <= TARGET[1] for c in all_cov)
    mc = 1.96 * math.sqrt(0.95 * 0.05 / reps)
    synth.figure(
        "stats.coverage.min",
        min(all_cov),
        target=f">= {TARGET[0]}",
        detail=f"lowest coverage of the 95% intervals over {n_cells} cells ({reps} data sets each, "
        f"Monte-Carlo error +/-{mc:.3f}); the former t interval: {min(t_cov):.3f}; {wall:.0f} s",
    )
    synth.figure(
        "stats.coverage.max",
        max(all_cov),
        target=f"<= {TARGET[1]}",
        detail=f"highest coverage; {in_band} of {n_cells} cells within {TARGET[0]}-{TARGET[1]}, "
        f"{sum(c < TARGET[0] for c in all_cov)} below, {sum(c > TARGET[1] for c in all_cov)} above",
    )
    synth.figure(
        "stats.coverage.outside_range",
        float(outside),
        target="<= 0",
        check=True,
        detail=f"intervals leaving [0, 1] (selectors) or [-1, 1] (pairs), stress cases included; the former "
        f"t interval left the range in {100 * max(t_out):.0f}% of data sets at worst; zero-width "
        f"intervals: {zero}",
    )
    md += [
        "### Coverage of the 95% intervals",
        "",
        f"{reps} seeded data sets per cell (Monte-Carlo error of a coverage near 0.95: +/-{mc:.3f}); "
        "new = `core.stats.intervals` (what every view shows), t = the former t interval (no bounds). Scenarios: "
        "*binary*: pass/fail attempts, each task solved with probability p ~ Beta(mean mu, concentration "
        "kappa); *continuous*: each task has a quality q ~ Beta(mu, kappa) and attempts score ~ Beta(q, 10); "
        "*pair*: b's task probability (or quality) is a's moved by `shift * (1 - p) / (1 - mu)` (up) or "
        "`shift * p / mu` (down), so the true difference is `shift`. Stress: continuous scores with tasks "
        "almost all at one end (kappa 2), outside the targets.",
        "",
    ]
    header = "| case | tasks | " + " | ".join(f"k={k}: new (t)" for k in repeats) + " |"
    md += [header, "|" + "---|" * (2 + len(repeats))]
    for label, case, covs in rows:
        name = f"{label} {case[0]} mu={case[1]} kappa={case[2]:g}" + (f" shift={case[3]:+g}" if len(case) > 3 else "")
        for g in sizes:
            cells = [c for c in covs if c[0] == g]
            md.append(
                f"| {name} | {g} | "
                + " | ".join(f"{r['coverage']:.3f} ({r['t_coverage']:.3f})" for _, _, r in cells)
                + " |"
            )
    md.append("")


# -- 1b. the issue-25 grid -----------------------------------------------------------------------------------------


def grid_section(args, md: list[str]) -> None:
    rng = np.random.default_rng(SEED + 25)
    n = max(100, args.reps // 5) if args.quick else args.reps
    sizes = (4, 16, 64) if args.quick else GRID_T
    sim_sets, mde_sets = (5, 3) if args.quick else (100, 40)  # data sets whose simulated power figures are averaged
    t0 = time.perf_counter()
    cells = {}
    for g in sizes:
        for mu in GRID_MU:
            for delta in GRID_DELTA:
                for kappa in GRID_KAPPA:
                    for ka, kb in GRID_REPEATS:
                        cells[g, mu, delta, kappa, ka, kb] = grid_cell(rng, n, g, mu, kappa, delta, ka, kb, sim_sets)
    wall = time.perf_counter() - t0
    mc = 1.96 * math.sqrt(0.95 * 0.05 / n)

    def figures_of(key: str, small: bool) -> list[float]:
        return [c[key] for k, c in cells.items() if (k[0] < 8) == small]

    for what in ("sel_b", "pair"):
        big = figures_of(what, False)
        synth.figure(
            f"stats.grid.{what}.min",
            min(big),
            target=f">= {TARGET[0]}",
            detail=f"lowest coverage over {len(big)} cells with T >= 8 ({n} data sets each, Monte-Carlo error "
            f"+/-{mc:.3f}); {sum(c < TARGET[0] for c in big)} cells below {TARGET[0]}, "
            f"{sum(c > TARGET[1] for c in big)} above {TARGET[1]}; at T = 4 the lowest is "
            f"{min(figures_of(what, True)):.3f}; {wall:.0f} s for the grid",
        )
    synth.figure(
        "stats.grid.outside_or_zero",
        float(sum(c["outside"] + c["zero"] for c in cells.values())),
        target="<= 0",
        check=True,
        detail="intervals outside the range or of zero width over the whole grid",
    )
    # the test's size under a mean-zero heterogeneous null (effects that vary by task)
    size_rows, worst, agree = [], 0.0, 0
    for g in (8, 16, 64) if args.quick else (8, 16, 64, 256):
        for mu in GRID_MU:
            for kappa in GRID_KAPPA:
                for ka, kb in ((10, 1), (1, 10), (3, 3)):
                    ma, mb, _, _ = grid_data(rng, n, g, mu, kappa, 0.0, ka, kb, null_het=True)
                    cap_a, cap_b = attempts_cap(np.full(g, ka)), attempts_cap(np.full(g, kb))
                    low, high, _ = pair_bounds(ma, mb, cap_a, cap_b)
                    rate = float(np.mean((low > 0) | (high < 0)))
                    if g <= 64 and mu == 0.5:  # the p-value agrees with the interval (a subset: bisection costs)
                        p = pair_p_values(ma, mb, cap_a, cap_b)
                        agree += int(np.sum((p < 0.05) != ((low > 0) | (high < 0))))
                    if (ka, kb) != (3, 3):
                        worst = max(worst, rate)
                    size_rows.append((g, mu, kappa, f"{ka}v{kb}", rate))
    synth.figure(
        "stats.grid.size_heterogeneous_null",
        worst,
        target="<= 0.06",
        detail=f"highest rejection rate at 5% with a mean difference of 0 but effects that vary by task, 10 vs 1 "
        f"and 1 vs 10 repeats ({n} data sets per cell); data sets where p < 0.05 and the interval disagree: {agree}",
    )

    md += [
        "### Coverage over the issue-25 grid",
        "",
        f"{n} seeded data sets per cell (Monte-Carlo error of a coverage near 0.95: +/-{mc:.3f}); {wall:.0f} s. "
        "Pass/fail attempts; a's task success p ~ Beta(mean mu, concentration kappa); b's moves by delta "
        "(up by `delta (1 - p) / (1 - mu)`, or down by `delta p / mu` where mu + delta > 1). Each cell: the "
        "coverage of b's selector interval / of the pair interval for b - a; power = the share of data sets "
        "whose interval excludes 0 on the right side (the power figures against it: the next section). Cells at "
        "the discrete corners (few tasks at rare or common success) cannot "
        "come near 0.95 with any interval and cover more.",
        "",
        "| T | mu | delta | kappa | " + " | ".join(f"{a}v{b}" for a, b in GRID_REPEATS) + " | power (3v3) |",
        "|" + "---|" * (5 + len(GRID_REPEATS)),
    ]
    for g in sizes:
        for mu in GRID_MU:
            for delta in GRID_DELTA:
                for kappa in GRID_KAPPA:
                    row = [cells[g, mu, delta, kappa, a, b] for a, b in GRID_REPEATS]
                    c33 = cells[g, mu, delta, kappa, 3, 3]
                    pw = f"{c33['power']:.2f}" if "power" in c33 else "—"
                    md.append(
                        f"| {g} | {mu:g} | {delta:g} | {kappa:g} | "
                        + " | ".join(f"{c['sel_b']:.3f} / {c['pair']:.3f}" for c in row)
                        + f" | {pw} |"
                    )
    md += [
        "",
        "Size of the test (p < 0.05, i.e. the interval excludes 0) under a mean-zero heterogeneous null: b's task "
        "success drawn afresh from a's Beta, so effects vary by task but average 0.",
        "",
        "| T | mu | kappa | repeats | rejection rate |",
        "|---|---|---|---|---|",
    ]
    md += [f"| {g} | {mu:g} | {kappa:g} | {r} | {rate:.3f} |" for g, mu, kappa, r, rate in size_rows]
    md.append("")


# -- 2. the paired test -----------------------------------------------------------------------------------------


def _test(a_list, b_list, **kw):
    ka = np.array([len(x) for x in a_list])
    kb = np.array([len(x) for x in b_list])
    sd = lambda xs: np.array([x.std(ddof=1) if len(x) > 1 else np.nan for x in xs])  # noqa: E731
    return paired_randomisation_test(
        ka,
        np.array([x.mean() for x in a_list]),
        sd(a_list),
        kb,
        np.array([x.mean() for x in b_list]),
        sd(b_list),
        lambda i: (a_list[i], b_list[i]),
        **kw,
    )


def test_section(args, md: list[str]) -> None:
    rng = np.random.default_rng(SEED + 1)
    runs = max(50, args.reps // 2) if args.quick else args.reps
    md += [
        "### The secondary randomisation test (sharp null)",
        "",
        "Since issue 25 the p-value beside an interval inverts the interval (its size is in the grid section "
        "above); this randomisation test of the sharp null is shown as a labelled secondary figure.",
        "",
        f"Rejection rate at 5% with no real effect ({runs} seeded A/A data sets per row; Monte-Carlo error "
        f"+/-{1.96 * math.sqrt(0.05 * 0.95 / runs):.3f}). Pass/fail attempts, task probabilities ~ Beta(0.5, 2). "
        "Sign flips = the former test (it treats each task's difference as symmetric about 0).",
        "",
        "| tasks | repeats a vs b | this test | how | sign flips |",
        "|---|---|---|---|---|",
    ]
    worst = 0.0
    t0 = time.perf_counter()
    for g in [12] if args.quick else [12, 30, 100]:
        for ka, kb in ((10, 1), (3, 3)):
            new = flips = 0
            how = set()
            for _ in range(runs):
                p = rng.beta(0.5, 2.0, size=g)
                a = [(rng.random(ka) < q).astype(float) for q in p]
                b = [(rng.random(kb) < q).astype(float) for q in p]
                res = _test(a, b)
                how.add("exact" if res.exact else "normal")
                new += res.p_value <= 0.05
                flips += _test([np.array([x.mean()]) for x in a], [np.array([y.mean()]) for y in b]).p_value <= 0.05
            rate = new / runs
            if ka != kb:
                worst = max(worst, rate)
            md.append(f"| {g} | {ka} vs {kb} | {rate:.3f} | {'/'.join(sorted(how))} | {flips / runs:.3f} |")
    size_wall = time.perf_counter() - t0
    synth.figure(
        "stats.test.size_unequal_repeats",
        worst,
        target=f"<= {0.05 + 2 * math.sqrt(0.05 * 0.95 / runs):.3f}",
        detail=f"highest rejection rate at 5% of the paired test with 10 repeats against 1 and no effect "
        f"({runs} A/A data sets per size; sign flips on the same data in RESULTS.md); "
        f"{size_wall:.0f} s",
    )

    # agreement of the large-sample method with the exact one where both run (pass/fail, 3 repeats: thirds)
    md += [
        "",
        "Large-sample method against the exact test on the same data (pass/fail, 3 repeats each, where the "
        "exact convolution still runs): the largest |p exact - p large-sample| among data sets with "
        "0.005 < p < 0.2 (the decision range).",
        "",
        "| tasks | data sets | max abs difference | mean |",
        "|---|---|---|---|",
    ]
    agree = []
    for g in [40] if args.quick else [30, 100, 300]:
        diffs = []
        for _ in range(20 if args.quick else 100):
            p = rng.uniform(0.2, 0.8, size=g)
            shift = rng.choice([0.0, 0.03, 0.06, 0.1])
            a = list((rng.random((g, 3)) < p[:, None]).astype(float))
            b = list((rng.random((g, 3)) < np.clip(p + shift, 0, 1)[:, None]).astype(float))
            exact, approx = _test(a, b), _test(a, b, exact_work=0)
            if exact.exact and 0.005 < exact.p_value < 0.2:
                diffs.append(abs(exact.p_value - approx.p_value))
        agree += diffs
        if diffs:
            md.append(f"| {g} | {len(diffs)} | {max(diffs):.4f} | {np.mean(diffs):.4f} |")
    md.append("")
    synth.figure(
        "stats.test.exact_vs_large_sample",
        max(agree) if agree else None,
        target="<= 0.01",
        detail=f"largest |p exact - p normal| over {len(agree)} data sets with 0.005 < p < 0.2 "
        "(sign flips, continuity-corrected normal approximation)",
    )


# -- clusters -----------------------------------------------------------------------------------------------------


def cluster_section(args, md: list[str]) -> None:
    """Coverage of the pair interval when tasks share a template: the effect moves by cluster (a shift shared by the
    cluster's tasks), clustered by the template (``--cluster-by``) and not."""
    rng = np.random.default_rng(SEED + 5)
    reps = max(200, args.reps // 2) if args.quick else 2 * args.reps
    cases = [(8, 8, 0.2), (8, 8, 0.1), (16, 8, 0.15), (16, 4, 0.1), (32, 4, 0.05), (16, 4, 0.0)]
    cases = cases if not args.quick else [(16, 4, 0.1)]
    md += [
        "### Clusters above the task (`core.stats.clusters`)",
        "",
        f"Pass/fail tasks in clusters of equal size (p ~ Beta(1, 1) per task; the candidate's success moves by "
        f"0.1 plus a shift shared by the cluster, normal with sd as given, clipped to [0, 1]), 3 repeats each side, "
        f"{reps} data sets per row: coverage of the 95% pair interval of the true mean difference, clustered by the "
        "template and not (nominal 0.95).",
        "",
        "| clusters | tasks per cluster | shared shift sd | clustered | not clustered |",
        "|---|---|---|---|---|",
    ]
    worst_c, worst_u = 1.0, 1.0
    k = 3
    for c, m, sd in cases:
        g = c * m
        codes = np.repeat(np.arange(c), m)
        p = rng.beta(1.0, 1.0, size=(reps, g))
        shift = 0.1 + rng.normal(0.0, sd, size=(reps, c))[:, codes] if sd > 0 else np.full((reps, g), 0.1)
        pb = np.clip(p + shift, 0.0, 1.0)
        big_p = rng.beta(1.0, 1.0, size=(400, g))
        big_s = 0.1 + (rng.normal(0.0, sd, size=(400, c))[:, codes] if sd > 0 else 0.0)
        # the population mean difference (clipping moves it off 0.1), from a large sample of the same law
        truth = float(np.mean(np.clip(big_p + big_s, 0.0, 1.0) - big_p))
        ma, mb = rng.binomial(k, p) / k, rng.binomial(k, pb) / k
        lo_c, hi_c, _ = pair_bounds(ma, mb, g * k, g * k, clusters=codes)
        lo_u, hi_u, _ = pair_bounds(ma, mb, g * k, g * k)
        cov_c = float(np.mean((lo_c <= truth) & (truth <= hi_c)))
        cov_u = float(np.mean((lo_u <= truth) & (truth <= hi_u)))
        if sd > 0:
            worst_c, worst_u = min(worst_c, cov_c), min(worst_u, cov_u)
        md.append(f"| {c} | {m} | {sd:g} | {cov_c:.3f} | {cov_u:.3f} |")
    md.append("")
    unequal = unequal_cluster_rows(args, rng, reps, md)
    synth.figure(
        "stats.clusters.coverage_clustered",
        min(worst_c, unequal["coverage"]),
        target=">= 0.93",
        detail="lowest coverage of the clustered pair interval where the effect is shared within clusters (equal "
        f"sizes {worst_c:.3f}, unequal {unequal['coverage']:.3f}); the candidate's clustered interval, unequal "
        f"sizes: {unequal['selector']:.3f}",
    )
    synth.figure(
        "stats.clusters.coverage_unclustered",
        worst_u,
        detail="the same data sets with the tasks taken as independent (what clustering corrects)",
    )
    mde_gap = cluster_mde_rows(args, np.random.default_rng(SEED + 2506), reps, md)
    synth.figure(
        "stats.clusters.mde_power_gap",
        mde_gap,
        target="<= 0.05",
        detail="largest |simulated power - 0.80| at the median clustered MDE (RESULTS.md, the clusters section)",
    )
    synth.figure(
        "stats.clusters.size_unequal",
        unequal["size"],
        target="<= 0.06",
        detail="highest A/A rejection rate at 5% of the clustered pair test (the report's: CR2, t on the "
        "Bell-McCaffrey df) on clusters of unequal sizes sharing a shift of the difference",
    )


def cluster_mde_rows(args, rng, n: int, md: list[str]) -> float:
    """The clustered pair's MDE against its claim (80% power at it), on the cluster section's law (p ~ Beta(1, 1) per
    task, the candidate moved by delta plus a shift shared by the cluster, normal with sd as given, clipped; 3
    repeats): per case, the MDE ``PairStats.mde`` gives on 30 samples (pass/fail, clustered: the clustered
    interval's power simulated with the shared shift the sample's CR2 standard error shows, ``core.stats.power``),
    their median, and the share of ``n`` samples at that delta whose clustered interval excludes 0; beside it the
    closed form it replaced (h + t(0.80, Bell-McCaffrey df) x CR2 se). Returns the largest |power - 0.8|."""
    from scipy.special import stdtrit

    from hermit_tui.core.stats.clusters import cluster_df, clustered_cov
    from hermit_tui.core.stats.power import fit_power_model

    k, sets = 3, 8 if args.quick else 30
    cases = [(8, 8, 0.1), (16, 4, 0.1), (16, 4, 0.0), (12, 3, 0.05)] if not args.quick else [(16, 4, 0.1)]

    def sample(count: int, c: int, m: int, sd: float, delta: float):
        codes = np.repeat(np.arange(c), m)
        p = rng.beta(1.0, 1.0, size=(count, c * m))
        shift = delta + (rng.normal(0.0, sd, size=(count, c))[:, codes] if sd > 0 else 0.0)
        return codes, rng.binomial(k, p) / k, rng.binomial(k, np.clip(p + shift, 0.0, 1.0)) / k

    def power_at(c: int, m: int, sd: float, delta: float) -> float:
        codes, ma2, mb2 = sample(n, c, m, sd, delta)
        low2, _, _ = pair_bounds(ma2, mb2, c * m * k, c * m * k, clusters=codes)
        return float(np.mean(low2 > 0))

    md += [
        "",
        "The clustered pair's minimum detectable difference against its claim (`PairStats.mde`, pass/fail and "
        "clustered: the clustered interval's power, simulated with a shift shared by each cluster's tasks whose "
        f"variance the sample's CR2 standard error shows): per case the median MDE of {sets} samples of the law above "
        f"(the candidate 0.1 better), then {n} samples at that difference and the share whose clustered interval "
        "excludes 0 (the claim: 0.80); beside it the closed form it replaced (h + t(0.80, Bell-McCaffrey df) x CR2 "
        "se) on the same samples.",
        "",
        "| clusters | tasks per cluster | shared shift sd | median MDE | power at it | closed form | power at it |",
        "|---|---|---|---|---|---|---|",
    ]
    worst = 0.0
    for c, m, sd in cases:
        g = c * m
        codes, ma, mb = sample(sets, c, m, sd, 0.1)
        df = cluster_df(codes)
        low, high, _ = pair_bounds(ma, mb, g * k, g * k, clusters=codes)
        diffs = mb - ma
        dbar = diffs.mean(1)
        se = np.sqrt(np.maximum(clustered_cov(diffs, diffs, codes), 0.0))
        half = observed_half(dbar, low, high)
        closed = float(np.median(half + stdtrit(df, 0.8) * se))
        mdes = []
        for i in range(sets):
            model = fit_power_model(ma[i], mb[i], np.full(g, k), np.full(g, k), clusters=codes)
            found = model.mde() if model is not None else None
            mdes.append(math.inf if found is None else found)
        mde = float(np.median(mdes))
        power = power_at(c, m, sd, mde) if math.isfinite(mde) and mde < 0.5 else math.nan
        if math.isfinite(power):
            worst = max(worst, abs(power - 0.8))
        closed_power = power_at(c, m, sd, closed) if closed < 0.5 else math.nan
        md.append(f"| {c} | {m} | {sd:g} | {mde:.3f} | {power:.3f} | {closed:.3f} | {closed_power:.3f} |")
    md.append("")
    return worst


def unequal_sizes(rng, tasks: int, clusters: int) -> np.ndarray:
    """Cluster codes of ``tasks`` tasks in ``clusters`` clusters of unequal sizes: 1 + a multinomial draw on
    Gamma(2) weights (explore_clustered_sequential's structure)."""
    weights = rng.gamma(2.0, size=clusters)
    sizes = 1 + rng.multinomial(tasks - clusters, weights / weights.sum())
    return np.repeat(np.arange(clusters), sizes)


def unequal_cluster_rows(args, rng, reps: int, md: list[str]) -> dict[str, float]:
    """Coverage of the clustered pair and selector intervals and the size of the clustered pair test where the
    clusters' sizes differ, the case CR2 and the Bell-McCaffrey df are for (CR1 on C - 1 df was liberal there)."""
    from hermit_tui.core.stats.clusters import cluster_df

    structures = 5 if args.quick else 20
    per = max(1, reps // structures)
    cases = [(64, 8, 0.5), (64, 16, 0.5), (200, 30, 0.5), (64, 8, 0.0)]
    cases = cases if not args.quick else [(64, 8, 0.5)]
    k = 3
    md += [
        f"Clusters of unequal sizes (1 + a multinomial draw on Gamma(2) weights; {structures} structures per row, "
        f"{per} data sets each): pass/fail tasks p ~ Beta(1, 1), the candidate's p' = p + 2 effect (1 - p) moved by "
        "a shift its cluster shares, u_c min(p', 1 - p') with u_c ~ N(0, sd) clipped to [-1, 1] (mean 0: the true "
        "difference stays the effect), 3 repeats each side. Coverage of the 95% pair interval of the true "
        "difference (effect 0.1) and of the candidate's interval of its true mean (0.6), clustered (CR2, t on the "
        "Bell-McCaffrey df: the report's) and not; *A/A rejects*: the share of data sets at effect 0 whose pair "
        "interval excludes 0 (the size of the report's clustered test at 5%). *df*: the mean Bell-McCaffrey df "
        "against C - 1.",
        "",
        "| tasks | clusters | shared shift sd | df (C - 1) | pair: clustered | pair: not clustered | candidate: "
        "clustered | A/A rejects: clustered | A/A rejects: not clustered |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    worst, worst_sel, size = 1.0, 1.0, 0.0
    for tasks, c, sd in cases:
        hits = np.zeros(5)
        dfs = []
        for _ in range(structures):
            codes = unequal_sizes(rng, tasks, c)
            dfs.append(cluster_df(codes))
            for effect in (0.1, 0.0):
                p = rng.beta(1.0, 1.0, size=(per, tasks))
                pb = p + 2 * effect * (1 - p)
                if sd > 0:
                    u = np.clip(rng.normal(0.0, sd, size=(per, c)), -1.0, 1.0)[:, codes]
                    pb = np.clip(pb + u * np.minimum(pb, 1 - pb), 0.0, 1.0)
                ma, mb = rng.binomial(k, p) / k, rng.binomial(k, pb) / k
                lo_c, hi_c, _ = pair_bounds(ma, mb, tasks * k, tasks * k, clusters=codes)
                lo_u, hi_u, _ = pair_bounds(ma, mb, tasks * k, tasks * k)
                if effect > 0:
                    hits[0] += np.sum((lo_c <= effect) & (effect <= hi_c))
                    hits[1] += np.sum((lo_u <= effect) & (effect <= hi_u))
                    counts = np.full(tasks, k)
                    for row in mb:
                        iv = task_mean_interval(row, counts, True, 0.0, 1.0, clusters=codes)
                        hits[2] += int(iv is not None and iv.low <= 0.5 + effect <= iv.high)
                else:
                    hits[3] += np.sum((lo_c > 0) | (hi_c < 0))
                    hits[4] += np.sum((lo_u > 0) | (hi_u < 0))
        cov_c, cov_u, cov_s, rej_c, rej_u = hits / (structures * per)
        if sd > 0:
            worst, worst_sel, size = min(worst, cov_c), min(worst_sel, cov_s), max(size, rej_c)
        md.append(
            f"| {tasks} | {c} | {sd:g} | {np.mean(dfs):.1f} ({c - 1}) | {cov_c:.3f} | {cov_u:.3f} | {cov_s:.3f} "
            f"| {rej_c:.3f} | {rej_u:.3f} |"
        )
    md.append("")
    return {"coverage": worst, "selector": worst_sel, "size": size}


# -- 3. sequential ------------------------------------------------------------------------------------------------


def sequential_run(rng, g: int, max_rounds: int, effect: float, margin=None):
    """One launch of one candidate against the baseline, stopping once it is decided; its last look."""
    looks, _ = sequential_launch(rng, g, max_rounds, [effect], margin)
    return looks[0]


def sequential_launch(
    rng, g: int, max_rounds: int, effects, margin=None, spread: float = 0.0, batches=None, futility="default"
):
    """One launch of ``len(effects)`` candidates against one baseline (alpha split over them, as ``eval`` does),
    look by look (``batches`` looks within round 1, default ``eval``'s: one per 25 tasks, at most 8; then whole
    rounds) until every candidate is decided: (each candidate's last look, the attempts run in rounds, i.e. per
    selector and task). ``spread``: each task's effect also moves by +/- spread x min(p, 1 - p), the sign drawn per
    task (mean 0: p is symmetric). The tasks are drawn in random order, so the look order is their index.
    ``futility``: the futility rule's threshold (``eval``'s default: ``FUTILITY_CP`` without a margin, none with one;
    None: off)."""
    from hermit_tui.core.stats.sequential.monitor import SequentialMonitor
    from hermit_tui.core.stats.sequential.schedule import first_round_batches, look_schedule
    from hermit_tui.core.stats.sequential.spending import design_spending
    from hermit_tui.core.stats.sequential.stopping import FUTILITY_CP

    if futility == "default":
        futility = FUTILITY_CP if margin is None else None

    k = len(effects)
    batches = first_round_batches(g) if batches is None else batches
    p = rng.beta(1.0, 1.0, size=g)  # mean 0.5, tasks spread over the whole range
    pbs = [p + 2 * e * (1 - p) for e in effects]  # E[pb - p] = effect
    if spread:
        pbs = [pb + spread * rng.choice([-1.0, 1.0], size=g) * np.minimum(p, 1 - p) for pb in pbs]
    monitors = [
        SequentialMonitor(
            "a", f"b{i}", max_rounds, candidates=k, margin=margin, batches=batches, total_tasks=g,
            spending=design_spending(batches), futility=futility,
        )
        for i in range(k)
    ]  # fmt: skip
    used, done = 0.0, 0
    for r, n in look_schedule(g, max_rounds, batches):
        part = slice(done, n) if r == 1 else slice(0, g)
        a = (rng.random(part.stop - part.start) < p[part]).astype(float)
        for m, pb in zip(monitors, pbs):
            m.add_look(a, (rng.random(part.stop - part.start) < pb[part]).astype(float))
        done, used = (n, n / g) if r == 1 else (done, float(r))
        if all(m.decided for m in monitors):
            break
    return [m.last for m in monitors], used


def fixed_power(rng, g: int, rounds: int, effect: float, sims: int) -> float:
    """The power of the fixed design with ``rounds`` repeats on ``g`` tasks: the share of data sets whose 95% pair
    interval (the report's, ``core.stats.intervals.pair_bounds``) lies above 0."""
    p = rng.beta(1.0, 1.0, size=(sims, g))
    pb = p + 2 * effect * (1 - p)
    ma, mb = rng.binomial(rounds, p) / rounds, rng.binomial(rounds, pb) / rounds
    low, _, _ = pair_bounds(ma, mb, g * rounds, g * rounds)
    return float(np.mean(low > 0))


def equal_power_rounds(rng, g: int, max_rounds: int, effect: float, power: float, sims: int, tolerance: float = 0.0):
    """The fewest repeats of a fixed design whose power reaches ``power`` less ``tolerance`` (the Monte-Carlo error
    of the sequential power; None: not within ``max_rounds``), and the fixed designs' powers by repeats."""
    powers = [fixed_power(rng, g, n, effect, sims) for n in range(1, max_rounds + 1)]
    for n, pw in enumerate(powers, start=1):
        if pw >= power - tolerance:
            return n, powers
    return None, powers


def fixed_power_attempts(rng, g: int, attempts: int, effect: float, sims: int) -> float:
    """The power of the fixed design of ``attempts`` attempts per selector on all ``g`` tasks, spread as evenly as
    the count allows (each task ``attempts // g`` repeats, the first ``attempts % g`` one more): the report's 95%
    pair interval above 0. Whole repeats are the multiples of ``g``."""
    r, extra = divmod(attempts, g)
    reps = np.full(g, r)
    reps[:extra] += 1
    p = rng.beta(1.0, 1.0, size=(sims, g))
    pb = p + 2 * effect * (1 - p)
    ma, mb = rng.binomial(reps, p) / reps, rng.binomial(reps, pb) / reps
    low, _, _ = pair_bounds(ma, mb, attempts, attempts)
    return float(np.mean(low > 0))


def fixed_power_curve(rng, g: int, effect: float, sims: int, most: int = 8) -> list[tuple[float, float]]:
    """(rounds, power) of fixed designs on all ``g`` tasks from one round to ``most``, in steps of a quarter of a
    round (:func:`fixed_power_attempts`), the power made non-decreasing (the running maximum: a design can always
    ignore attempts it ran)."""
    step = max(1, g // 4)
    out, best = [], 0.0
    for attempts in range(g, most * g + 1, step):
        best = max(best, fixed_power_attempts(rng, g, attempts, effect, sims))
        out.append((attempts / g, best))
    return out


def equal_power_fixed(curve: list[tuple[float, float]], power: float) -> float | None:
    """The rounds (attempts per selector and task) of the fixed design on all the tasks whose power is ``power``,
    interpolated between the designs of :func:`fixed_power_curve` (uneven repeats: the fixed design between two
    whole numbers of repeats); one round when a single round already reaches it (a design on all the tasks runs
    each at least once); None beyond the curve's last design."""
    if power <= curve[0][1]:
        return curve[0][0]
    for (q0, p0), (q1, p1) in zip(curve, curve[1:]):
        if p0 < power <= p1:
            return q0 + (q1 - q0) * (power - p0) / (p1 - p0)
    return None


def wilson(x: float, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """Wilson's 95% interval for a share ``x`` of ``n``: the Monte-Carlo error of a simulated power."""
    centre, half = (x + z * z / (2 * n)) / (1 + z * z / n), z * math.sqrt(x * (1 - x) / n + z * z / (4 * n * n))
    return max(0.0, centre - half / (1 + z * z / n)), min(1.0, centre + half / (1 + z * z / n))


def band_text(band: tuple[float | None, float | None]) -> str:
    low, high = band
    return f"{f'{low:.0%}' if low else '?'}-{f'{high:.0%}' if high else '?'}"


def sequential_section(args, md: list[str]) -> None:
    from hermit_tui.core.stats.sequential.schedule import first_round_batches
    from hermit_tui.core.stats.sequential.spending import POWER_RHO, SPEND_SHARE
    from hermit_tui.core.stats.sequential.stopping import FUTILITY_CP, FUTILITY_MIN_ATTEMPTS

    rng = np.random.default_rng(SEED + 2)
    runs = args.runs
    fixed_sims = 2000 if args.quick else 10000  # data sets per fixed design of the equal-power comparison
    curves: dict[tuple[int, float], list[tuple[float, float]]] = {}  # (tasks, effect): the fixed designs' power
    max_rounds = 8
    t0 = time.perf_counter()
    md += [
        "### Sequential stopping (`core.stats.sequential`)",
        "",
        f"Launches of pass/fail tasks (task probabilities p ~ Beta(1, 1); a candidate's are p + 2 effect (1 - p), so "
        f"the true difference is the effect), at most R = {max_rounds} rounds unless said, stopping at the first "
        "look where the repeated confidence intervals decide every candidate. *B*: the looks within round 1 "
        "(`eval`'s default: one per 25 tasks, at most 8; Kim-DeMets power spending, rho "
        f"{POWER_RHO:g}, with B > 1, Hwang-Shih-DeCani gamma -2 with B = 1), then one after each whole round. alpha "
        f"0.05 is split over the candidates (Bonferroni) and {SPEND_SHARE:g} of each share is spent. False claim = "
        "improvement or "
        "regression of a candidate with effect 0; with three candidates, *any* false claim in the launch. *Fixed, "
        "equal power*: the attempts per selector and task (rounds) of the fixed design on all the tasks (the "
        "report's 95% pair interval) whose simulated power equals the sequential launches' share of improvements, "
        "interpolated between fixed designs a quarter of a round apart (uneven repeats: some tasks one repeat more; "
        f"{fixed_sims} data sets each); *mean rounds* is the attempts run per selector and task (0.40: the launch "
        "stopped after 40% of round 1's tasks); *attempts vs fixed* is that over the fixed design's (below 100%: the "
        "sequential design saves attempts), with in brackets its range when the sequential power is anywhere in its "
        "95% Monte-Carlo interval (Wilson's); *whole repeats*: the comparison before, the fewest whole repeats whose "
        "power reaches the sequential power less 1.96 Monte-Carlo standard errors (at least 0.005). *Futile*: the "
        "share stopped for futility (the non-binding rule, conditional power "
        f"under the current estimate below {FUTILITY_CP:g} at looks of {FUTILITY_MIN_ATTEMPTS} attempts per selector "
        "or more; on by default without a margin; *no futility*: off, the design before it). *Observed*: the mean "
        "of the mean difference at stopping; *adjusted*: the mean and the median of the median-unbiased estimate (the "
        "sample-mean ordering with the futility rule, the stagewise ordering without it), against the true effect; "
        "*adj. CI covers*: the share of launches whose adjusted 95% interval "
        "holds the true effect.",
        "",
        "| tasks | R | B | effect | candidates | runs | improvement | regression | futile | undecided | false claim "
        "| mean rounds | fixed, equal power | attempts vs fixed | whole repeats: fixed, vs fixed | attempts vs R "
        "| observed | adjusted (mean / median) | adj. CI covers |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]

    def row(g, rounds_max, effect, k, runs_here, margin=None, note="", spread=0.0, batches=None, futility="default"):
        out = [
            sequential_launch(rng, g, rounds_max, [effect] * k, margin, spread, batches, futility)
            for _ in range(runs_here)
        ]
        looks = [lk for lks, _ in out for lk in lks]
        rounds = np.array([r for _, r in out], dtype=float)
        kinds = ("improvement", "regression", "futile", "undecided")
        share = {d: np.mean([lk.decision == d for lk in looks]) for d in kinds}
        claims = np.mean([any(lk.decision in ("improvement", "regression") for lk in lks) for lks, _ in out])
        est = np.mean([lk.mean_diff for lk in looks])
        adj = np.array([lk.adjusted_estimate for lk in looks if lk.adjusted])
        covers = np.mean([lk.adjusted_low <= effect <= lk.adjusted_high for lk in looks if lk.adjusted])
        fixed = ratio = whole = whole_ratio = None
        band: tuple[float | None, float | None] = (None, None)
        powers: list[float] = []
        if effect > 0:
            pw = share["improvement"]
            tol = max(0.005, 1.96 * math.sqrt(pw * (1 - pw) / runs_here))
            whole, powers = equal_power_rounds(rng, g, rounds_max, effect, pw, max(400, runs_here), tol)
            whole_ratio = rounds.mean() / whole if whole else None
            if (g, effect) not in curves:
                curves[(g, effect)] = fixed_power_curve(rng, g, effect, fixed_sims, rounds_max)
            fixed = equal_power_fixed(curves[(g, effect)], pw)
            ratio = rounds.mean() / fixed if fixed else None
            low_pw, high_pw = wilson(pw, runs_here)
            f_low, f_high = (
                equal_power_fixed(curves[(g, effect)], low_pw),
                equal_power_fixed(curves[(g, effect)], high_pw),
            )
            band = (rounds.mean() / f_high if f_high else None, rounds.mean() / f_low if f_low else None)
        eff = f"{effect:g}" + (f" ({note})" if note else "")
        b_used = first_round_batches(g) if batches is None else batches
        md.append(
            f"| {g} | {rounds_max} | {b_used} | {eff} | {k} | {runs_here} | {share['improvement']:.3f} | "
            f"{share['regression']:.3f} | {share['futile']:.3f} | {share['undecided']:.3f} | "
            f"{f'{claims:.4f}' if effect == 0 and margin is None else '—'} | {rounds.mean():.2f} | "
            f"{f'{fixed:.2f}' if fixed else ('> R' if effect > 0 else '—')} | "
            f"{f'{ratio:.0%}' if ratio is not None else '—'}"
            + (f" ({band_text(band)})" if fixed else "")
            + f" | {f'{whole}: {whole_ratio:.0%}' if whole and whole_ratio else ('> R' if effect > 0 else '—')} | "
            f"{rounds.mean() / rounds_max:.0%} | {est:+.3f} | "
            f"{adj.mean():+.3f} / {np.median(adj):+.3f} | {covers:.3f} |"
        )
        out_row = dict(claims=claims, ratio=ratio, fixed=fixed, rounds=rounds.mean(), est=est, looks=looks, band=band)
        out_row |= dict(whole=whole, whole_ratio=whole_ratio)
        return out_row | dict(powers=powers, power=share["improvement"], adj=float(np.mean(adj)), covers=covers)

    sizes = [30] if args.quick else [16, 50, 200]
    aa = [row(g, max_rounds, 0.0, 1, runs)["claims"] for g in sizes]
    five = row(50, 5, 0.0, 1, runs)["claims"] if not args.quick else None
    three = three50 = row(30 if args.quick else 50, max_rounds, 0.0, 3, runs)["claims"]
    if not args.quick:  # three candidates where the first round is looked at 8 times: the figure (the most looks)
        three = row(200, max_rounds, 0.0, 3, runs)["claims"]
    het = None
    if not args.quick:  # a mean-zero effect that varies by task (+/- up to 0.4): the test's null still holds
        het = row(50, max_rounds, 0.0, 1, runs, note="varies by task, mean 0", spread=0.8)["claims"]
    ab = {}
    for g, effect in ([(30, 0.35)] if args.quick else [(16, 0.2), (50, 0.05), (50, 0.1), (50, 0.2), (50, 0.35),
                                                        (200, 0.2), (200, 0.1)]):  # fmt: skip
        # 50 tasks, 0.05: the power curves are flat there (0.03 of power per repeat), so the sequential power's
        # Monte-Carlo error moves the equal-power fixed design by a repeat at 1,000 launches: four times as many
        ab[(g, effect)] = row(g, max_rounds, effect, 1, max(50, runs * 2 if (g, effect) == (50, 0.05) else runs // 2))
    before = {}
    if not args.quick:  # the design without the futility rule (before it), on the same scenarios
        aa_before = row(50, max_rounds, 0.0, 1, max(50, runs // 2), note="no futility", futility=None)["claims"]
        for g, effect in [(16, 0.2), (50, 0.05), (50, 0.2), (200, 0.2)]:
            before[(g, effect)] = row(g, max_rounds, effect, 1, max(50, runs // 2), note="no futility", futility=None)
    if not args.quick:
        row(200, max_rounds, 0.0, 1, max(50, runs // 4), margin=0.1, note="margin 0.1")
        for g in (50, 200):  # before: looks after whole rounds only (--first-round-looks 1)
            row(g, max_rounds, 0.2, 1, max(50, runs // 4), note="whole rounds only", batches=1)
    wall = time.perf_counter() - t0
    pooled = float(np.mean(aa + ([five] if five is not None else [])))
    n_aa = runs * (len(aa) + (five is not None))
    se = math.sqrt(pooled * (1 - pooled) / n_aa) if 0 < pooled < 1 else math.sqrt(0.05 * 0.95 / n_aa)
    se3 = math.sqrt(max(three, 0.01) * (1 - max(three, 0.01)) / runs)
    md += [
        "",
        f"A/A false claims, one candidate, over all {n_aa} launches: **{pooled:.4f}** (Monte-Carlo standard error "
        f"{se:.4f}; upper 95% bound {pooled + 1.96 * se:.4f}). Three candidates with no effect, at least one false "
        f"claim: **{three:.4f}** (+/-{se3:.4f})."
        + (f" With effects that vary by task around a mean of 0 (50 tasks): **{het:.4f}**." if het is not None else "")
        + " The boundaries are exact for normal data with known variance; "
        f"spending {SPEND_SHARE:g} of the share leaves room for what they leave out (before, spending all of it, "
        "the rate sat at 4.9-5.0% at 50 and 200 tasks, and 12% with three candidates).",
        "",
        "Rounds are repeats: they shrink only the run-to-run noise, so where one round of the tasks already "
        "decides (200 tasks at effect 0.2) a design that looks only after whole rounds cannot use fewer attempts "
        "than the fixed design of equal power, which is one round (the *whole rounds only* rows). Looking within "
        "round 1, after batches of its tasks in a fixed order, is what lets it stop on part of that round.",
        "",
    ]
    synth.figure(
        "stats.sequential.aa_false_claims",
        pooled,
        target="<= 0.05",
        detail=f"false claims (improvement or regression) of A/A launches, {runs} each on "
        f"{', '.join(str(g) for g in sizes)} tasks (8 rounds)"
        + (" and 50 tasks x 5 rounds" if five else "")
        + f": {', '.join(f'{r:.4f}' for r in aa + ([five] if five is not None else []))} (standard error "
        f"{se:.4f} pooled); {wall:.0f} s",
    )
    synth.figure(
        "stats.sequential.aa_false_claims_upper",
        pooled + 1.96 * se,
        target="< 0.05",
        detail="the pooled A/A rate plus 1.96 Monte-Carlo standard errors: under 5% with the simulation's margin",
    )
    synth.figure(
        "stats.sequential.fwer_three_candidates",
        three,
        target="<= 0.05",
        detail=f"launches with three candidates and no effect that claimed any difference, {runs} launches at "
        + ("30 tasks" if args.quick else f"200 tasks (8 looks in round 1; at 50 tasks, 2 looks: {three50:.4f})")
        + f"; upper 95% bound {three + 1.96 * se3:.4f}",
    )
    for g in (50, 200):
        got = ab.get((g, 0.2))
        synth.figure(
            f"stats.sequential.attempts_vs_equal_power_fixed_{g}",
            got["band"][1] if got else None,  # the upper end: the smallest fixed design within the power's error
            target="<= 0.6",
            detail=f"{g} tasks, effect 0.2, against the smallest fixed design whose power is within the sequential "
            f"power's Monte-Carlo interval: mean rounds {got['rounds']:.2f} against the fixed design of equal power, "
            f"{got['fixed']:.2f} round(s), {got['ratio']:.0%} (range {band_text(got['band'])}; whole "
            f"repeats: {got['whole']}, {got['whole_ratio']:.0%}); sequential power {got['power']:.4f}, the fixed "
            "design's by whole repeats "
            f"{', '.join(f'{pw:.4f}' for pw in got['powers'][:6])}"
            if got
            else "skipped in --quick",
        )
    some = ab.get((50, 0.35)) or next(iter(ab.values()))
    synth.figure(
        "stats.sequential.estimate_at_stopping_bias",
        ab[(16, 0.2)]["est"] - 0.2 if (16, 0.2) in ab else some["est"] - 0.35,
        detail="observed mean difference at stopping minus the true effect (16 tasks, 0.2): biased away from 0; "
        "the verdict shows the adjusted estimate instead",
    )
    if (50, 0.2) in ab:
        got = ab[(50, 0.2)]
        synth.figure(
            "stats.sequential.adjusted_estimate_bias_50",
            got["adj"] - 0.2,
            detail=f"mean median-unbiased estimate minus the true effect, 50 tasks, 0.2 (observed: "
            f"{got['est'] - 0.2:+.4f}); its 95% interval covers {got['covers']:.3f}",
        )
    if (50, 0.05) in ab and (50, 0.05) in before:
        got, old = ab[(50, 0.05)], before[(50, 0.05)]
        synth.figure(
            "stats.sequential.attempts_vs_equal_power_fixed_50_small_effect",
            got["ratio"],
            target="<= 1",
            detail=f"50 tasks, effect 0.05, with the futility rule: mean rounds {got['rounds']:.2f}, power "
            f"{got['power']:.3f}, fixed {got['fixed']:.2f} rounds (range {band_text(got['band'])}; whole repeats "
            f"{got['whole']}: {got['whole_ratio']:.0%}); without it {old['rounds']:.2f} rounds, power "
            f"{old['power']:.3f}, {old['ratio']:.0%} of the fixed design's {old['fixed']:.2f}; A/A false claims at 50 "
            f"tasks without futility {aa_before:.4f}",
        )


# -- 3b. anytime-valid confidence sequences -------------------------------------------------------------------


def anytime_section(args, md: list[str]) -> None:
    """The confidence sequence of ``core.stats.anytime`` on streams of paired pass/fail task differences: its
    time-uniform coverage (the true mean inside the running interval after every task at once), the false claims
    of stopping once it excludes 0, the tasks that takes at an effect, and its width against the fixed 95% t."""
    from scipy.stats import t as student_t

    from hermit_tui.core.stats.sequential.anytime import paired_confidence_sequence

    rng = np.random.default_rng(SEED + 5)
    streams = max(200, args.runs // 4) if not args.quick else 100
    t0 = time.perf_counter()
    md += [
        "### Anytime-valid confidence sequences (`core.stats.anytime`)",
        "",
        f"{streams} streams per row of paired tasks in a fixed order (p ~ Beta(1, 1), the candidate's p + 2 effect "
        "(1 - p); *varies*: plus +/- 0.8 min(p, 1 - p) per task, mean 0), each task's difference of its mean over "
        "`repeats` attempts per selector. *Coverage*: the share of streams whose running interval holds the true "
        "difference after every task at once. *Claims*: stopping at the first task where the interval excludes 0 "
        "(at effect 0: a false claim). *Width vs t*: the mean width at the last task over the fixed-sample 95% t "
        "interval's on the same tasks.",
        "",
        "| tasks | repeats | effect | coverage (all tasks at once) | claims | median tasks to a claim | width vs t |",
        "|---|---|---|---|---|---|---|",
    ]
    worst, false_claims, ratio200 = 1.0, 0.0, None
    for g, reps, effect, varies in [(200, 1, 0.0, False), (200, 1, 0.2, False), (200, 3, 0.0, True),
                                    (200, 3, 0.1, False), (50, 1, 0.2, False), (1000, 1, 0.05, False)]:  # fmt: skip
        p = rng.beta(1.0, 1.0, size=(streams, g))
        pb = p + 2 * effect * (1 - p)
        if varies:
            pb = pb + 0.8 * rng.choice([-1.0, 1.0], size=(streams, g)) * np.minimum(p, 1 - p)
        truth = float(effect)  # E[pb - p] (the varying part has mean 0: p is symmetric)
        d = rng.binomial(reps, pb) / reps - rng.binomial(reps, p) / reps
        low, high = paired_confidence_sequence(d)
        cover = float(np.mean(~np.any((low > truth) | (high < truth), axis=1)))
        claim = (low > 0) | (high < 0)
        claims = float(np.mean(claim.any(axis=1)))
        first = np.where(claim.any(axis=1), claim.argmax(axis=1) + 1, g)
        mean, sd = d.mean(axis=1), d.std(axis=1, ddof=1)
        t_width = 2 * student_t.ppf(0.975, g - 1) * sd / math.sqrt(g)
        ratio = float(np.mean(high[:, -1] - low[:, -1]) / np.mean(t_width))
        worst = min(worst, cover)
        if effect == 0:
            false_claims = max(false_claims, claims)
        if g == 200 and reps == 1 and effect == 0.2:
            ratio200 = ratio
        median = f"{np.median(first[claim.any(axis=1)]):.0f}" if claim.any() else "—"
        eff = f"{effect:g}" + (" (varies)" if varies else "")
        md.append(f"| {g} | {reps} | {eff} | {cover:.4f} | {claims:.3f} | {median} | {ratio:.2f} |")
        del mean
    wall = time.perf_counter() - t0
    md += [
        "",
        "The sequence is conservative (it covers more than 95% at every task at once): the empirical-Bernstein bound "
        "holds for any bounded stream, and the price of looking after every task, and of continuing later, is its "
        "width. A fixed-sample 95% interval looked at after every task from the 10th misses in about 38% of "
        "streams (tests/test_anytime.py).",
        "",
    ]
    se = math.sqrt(0.05 * 0.95 / streams)
    synth.figure(
        "stats.anytime.coverage_min",
        worst,
        target=">= 0.95",
        detail=f"lowest time-uniform coverage of the 95% confidence sequence over the rows, {streams} streams each "
        f"(Monte-Carlo error near 0.95: +/-{1.96 * se:.3f}); {wall:.0f} s",
    )
    synth.figure(
        "stats.anytime.false_claims",
        false_claims,
        target="<= 0.05",
        detail="streams with no effect where the sequence excluded 0 at some task (stopping there: a false claim)",
    )
    synth.figure(
        "stats.anytime.width_vs_t_200",
        ratio200,
        detail="mean width after 200 tasks (one repeat, effect 0.2) over the fixed-sample 95% t interval's",
    )


class _Rec:
    """A record as the tracker reads it: ``judge.score``."""

    __slots__ = ("judge",)

    def __init__(self, score: float):
        self.judge = _Judge(score)


class _Judge:
    __slots__ = ("score",)

    def __init__(self, score: float):
        self.score = score


def anytime_launch(rng, g: int, reps: int, effects, per_look: int = 4, first: int | None = None, futility: bool = True):
    """One ``--stop-when-decided --anytime`` launch through the real tracker (``core.stats.anytime_looks``): pass/fail
    tasks, p ~ Beta(1, 1), candidate ``k``'s p + 2 effect_k (1 - p); with ``first``, a launch on the first ``first``
    tasks continued (a new tracker on the recorded stream, as ``--resume``) once more tasks are added, when it ended
    without a claim for every candidate (undecided, or stopped for futility: the rule is recomputed on the larger
    split). ``futility``: the rule that stops a candidate the remaining tasks cannot decide (``eval``'s default; off
    as ``--no-futility``). Returns (decisions per candidate, tasks looked at)."""
    from hermit_tui.core.stats.sequential.anytime_plan import AnytimePlan
    from hermit_tui.core.stats.sequential.anytime_tracker import AnytimeTracker

    ids = [f"t{i}" for i in range(g)]
    p = rng.beta(1.0, 1.0, size=g)
    labels = [f"c{k}" for k in range(len(effects))]
    probs = {"base": p, **{lab: p + 2 * e * (1 - p) for lab, e in zip(labels, effects)}}
    records = {
        lab: {(t, r + 1): _Rec(float(x)) for i, t in enumerate(ids) for r, x in enumerate(rng.random(reps) < q[i])}
        for lab, q in probs.items()
    }
    order: list[str] = []
    tracker = None
    for split in [ids[:first], ids] if first else [ids]:
        plan = AnytimePlan(
            baseline="base", candidates=labels, max_rounds=reps, tasks_per_look=per_look, order=order,
            out_of_reach=futility,
        )  # fmt: skip
        tracker = AnytimeTracker(plan, split)
        while not tracker.finished:
            tracker.check(records)
        order = tracker.task_ids[: tracker.tasks_looked]
        if all((look := tracker.last(lab)) and look.decision in ("improvement", "regression") for lab in labels):
            break
    assert tracker is not None
    return [look.decision if (look := tracker.last(lab)) else "undecided" for lab in labels], tracker.tasks_looked


def fixed_tasks_of_power(rng, reps: int, effect: float, power: float, most: int, sims: int) -> int | None:
    """The fewest tasks at which the fixed design (the 95% t interval on the paired task differences, looked at once)
    reaches ``power`` at ``effect`` on the tasks of :func:`anytime_launch` (None: not by ``most`` tasks)."""
    from scipy.stats import t as student_t

    def power_at(n: int) -> float:
        p = rng.beta(1.0, 1.0, size=(sims, n))
        pb = p + 2 * effect * (1 - p)
        d = rng.binomial(reps, pb) / reps - rng.binomial(reps, p) / reps
        se = d.std(axis=1, ddof=1) / math.sqrt(n)
        with np.errstate(divide="ignore", invalid="ignore"):
            low = d.mean(axis=1) - student_t.ppf(0.975, n - 1) * se
        return float(np.mean(low > 0))

    lo, hi = 3, most
    if power_at(hi) < power:
        return None
    while hi - lo > 1:  # power grows with the tasks: bisect
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if power_at(mid) >= power else (mid, hi)
    return hi


def anytime_launch_section(args, md: list[str]) -> None:
    """``eval --stop-when-decided --anytime`` simulated through its tracker: family-wise false claims with one and
    three candidates, a continuation after tasks were added, and the tasks a real effect takes."""
    rng = np.random.default_rng(SEED + 6)
    runs = max(200, args.runs // 2) if not args.quick else 40
    t0 = time.perf_counter()
    md += [
        "### Anytime-valid launches (`eval --stop-when-decided --anytime`, `core.stats.anytime_looks`)",
        "",
        f"{runs} launches per row through the launch's own tracker (looks after every 4 tasks, each task with all its "
        "repeats; pass/fail tasks, p ~ Beta(1, 1), a candidate's p + 2 effect (1 - p)). *Any false claim*: at "
        "effect 0, the share of launches where some candidate was declared an improvement or a regression "
        "(family-wise: alpha 0.05 split over the candidates). *continued*: a launch on the first 50 tasks which, "
        "when it ends without a claim (undecided, or stopped for futility), is continued on the recorded stream "
        "after 150 tasks were added (a new tracker, as `--resume`). The futility rule is on, as in `eval` without "
        "`--no-futility`: a candidate stops once the tasks not yet looked at could not decide it.",
        "",
        "| tasks | repeats | candidates | effect | any false claim | claims | mean tasks looked at | of the tasks "
        "| fixed design of equal power | anytime / fixed |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    worst = 0.0
    share200 = None
    ratios: list[float] = []
    for g, reps, effects, first in [(200, 1, (0.0,), None), (200, 1, (0.0, 0.0, 0.0), None),
                                    (200, 3, (0.0,), None), (200, 1, (0.0,), 50), (200, 1, (0.2,), None),
                                    (50, 3, (0.2,), None), (200, 1, (0.2,), 50)]:  # fmt: skip
        false, claims, used = 0, 0, []
        for _ in range(runs):
            decisions, looked = anytime_launch(rng, g, reps, effects, first=first)
            wrong = [d in ("improvement", "regression") for d, e in zip(decisions, effects) if e == 0]
            false += any(wrong)
            claims += sum(d == "improvement" for d, e in zip(decisions, effects) if e > 0)
            used.append(looked)
        null = all(e == 0 for e in effects)
        rate = false / runs if null else None
        if rate is not None:
            worst = max(worst, rate)
        if g == 200 and effects == (0.2,) and first is None:
            share200 = float(np.mean(used)) / g
        name = f"{g}" + (" (50, continued)" if first else "")
        fixed, versus = "—", "—"
        if not null and claims / runs > 0.5:  # the fixed design's tasks (same repeats) reaching the same power
            n_fixed = fixed_tasks_of_power(
                rng, reps, effects[0], claims / runs, g, sims=2000 if not args.quick else 200
            )
            if n_fixed is not None:
                fixed, versus = f"{n_fixed} tasks", f"{np.mean(used) / n_fixed:.2f}"
                ratios.append(np.mean(used) / n_fixed)
        md.append(
            f"| {name} | {reps} | {len(effects)} | {effects[0]:g} | "
            f"{'—' if rate is None else f'{rate:.3f}'} | {'—' if null else f'{claims / runs:.3f}'} | "
            f"{np.mean(used):.1f} | {np.mean(used) / g:.2f} | {fixed} | {versus} |"
        )
    wall = time.perf_counter() - t0
    se = math.sqrt(0.05 * 0.95 / runs)
    md += [
        "",
        f"The false claims stay under 5% with one or three candidates and across a continuation (Monte-Carlo error "
        f"near 0.05: +/-{1.96 * se:.3f}). The price is the sequence's width: against the fixed design of equal "
        "power (the fewest tasks at which the 95% t interval, looked at once, reaches the anytime launch's power, "
        "with the same repeats) the anytime launch looks at more tasks on average. What it buys is the right to "
        f"look after every task and to continue an undecided comparison without a new error budget. {wall:.0f} s.",
        "",
    ]
    synth.figure(
        "stats.anytime.launch_false_claims",
        worst,
        target="<= 0.05",
        detail=f"highest family-wise false-claim share over the null rows (1 and 3 candidates, a continuation), "
        f"{runs} launches each through core.stats.anytime_looks",
    )
    synth.figure(
        "stats.anytime.launch_vs_fixed",
        max(ratios) if ratios else None,
        detail="mean tasks an anytime launch looked at over the fixed design's of equal power (the highest row)",
    )
    synth.figure(
        "stats.anytime.launch_tasks_share_200",
        share200,
        detail="mean share of the 200 tasks an anytime launch looked at before deciding an effect of 0.2",
    )


# -- 4. speed -----------------------------------------------------------------------------------------------------


def speed_section(args, md: list[str]) -> None:
    from hermit_tui.core.records.scores import AttemptColumns, tabulate
    from hermit_tui.core.stats.figures import default_pairs, pair_stats
    from hermit_tui.core.stats.power import MAX_SIMULATED
    from hermit_tui.core.stats.selector import selector_stats

    g, k = args.tasks, 3
    rng = np.random.default_rng(SEED + 3)
    ids = [f"t{i:06d}" for i in range(g)]
    labels = ["none", "root", "final"]
    skill = {"none": 0.2, "root": 0.45, "final": 0.7}
    cols = {}
    for label in labels:
        u = rng.random(g * k)
        score = np.where(u < skill[label], 1.0, np.where(rng.random(g * k) < 0.3, 0.5, 0.0))
        cols[label] = AttemptColumns(np.tile(np.arange(g), k), np.repeat(np.arange(1, k + 1), g), score)
    tuples = {
        lb: list(zip([ids[i] for i in c.task.tolist()], c.repeat.tolist(), c.score.tolist())) for lb, c in cols.items()
    }
    selector_stats("warm", cols["none"], ids)  # imports, not timed
    walls = {}
    for name, data in (("columns", cols), ("tuples", tuples)):
        t0 = time.perf_counter()
        tables = {lb: tabulate(data[lb], ids, 1.0) for lb in labels}
        [selector_stats(lb, tables[lb], ids) for lb in labels]
        pairs = [pair_stats(a, tables[a], b, tables[b], ids) for a, b in default_pairs(labels)]
        walls[name] = time.perf_counter() - t0
    # the floor: one numpy pass over the same columns (per-task means and the three mean differences)
    t0 = time.perf_counter()
    means = {
        lb: np.bincount(c.task, weights=c.score, minlength=g) / np.bincount(c.task, minlength=g)
        for lb, c in cols.items()
    }
    [float((means[b] - means[a]).mean()) for a, b in default_pairs(labels)]
    floor = time.perf_counter() - t0
    attempts = g * k * len(labels)
    synth.figure(
        "stats.speed.columns_s",
        walls["columns"],
        unit="s",
        target="< 5",
        detail=f"{g:,} tasks x {k} repeats x 3 selectors ({attempts:,} attempts) and the 3 default pairs, "
        f"from columns: {1e6 * walls['columns'] / g:.1f} us per task (before: ~19,000 us per task); "
        f"a bare numpy pass (task means, mean differences) takes {floor:.3f} s; "
        f"tests: {pairs[0].test.split(': ', 1)[-1]}",
    )
    synth.figure(
        "stats.speed.tuples_s",
        walls["tuples"],
        unit="s",
        detail="the same from (task id, repeat, score) tuples, as the files give them today",
    )
    # pass/fail scores: the pairs' power figures are simulated (core.stats.power); against the same pairs with one
    # score of 0.5 per selector (the closed form)
    binary = {lb: AttemptColumns(c.task, c.repeat, (c.score >= 1.0).astype(float)) for lb, c in cols.items()}
    nearly = {
        lb: AttemptColumns(c.task, c.repeat, np.where(np.arange(len(c.score)) == 0, 0.5, c.score))
        for lb, c in binary.items()
    }
    pass_fail = {}
    for name, data in (("simulated", binary), ("closed", nearly)):
        tables = {lb: tabulate(data[lb], ids, 1.0) for lb in labels}
        t0 = time.perf_counter()
        found = [pair_stats(a, tables[a], b, tables[b], ids) for a, b in default_pairs(labels)]
        pass_fail[name] = time.perf_counter() - t0
        assert (found[0].power_model is not None) == (name == "simulated")
    synth.figure(
        "stats.speed.pass_fail_pair_s",
        pass_fail["simulated"] / 3,
        unit="s",
        target="<= 0.5",
        detail=f"one of the 3 default pairs of {g:,} pass/fail tasks x {k} repeats, the power figures simulated "
        f"(core.stats.power; {pass_fail['simulated'] / pass_fail['closed']:.0f}x the same pairs with one 0.5 score per "
        f"selector, whose power figures are the closed form: {pass_fail['closed']:.3f} s for the three), from "
        f"columns; at most {MAX_SIMULATED:,} tasks are simulated, beyond that the figures scale",
    )
    md += [
        "### Speed of the statistics",
        "",
        f"{g:,} tasks x {k} repeats x 3 selectors ({attempts:,} attempts) and the 3 default pairs (warm process): "
        f"**{walls['columns']:.2f} s** from columns, {walls['tuples']:.2f} s from tuples "
        f"({1e6 * walls['columns'] / g:.1f} us per task; a bare numpy pass computing only the task means and the "
        f"mean differences takes {floor:.3f} s). Before: about 19 ms per task (16.7 s for 1,000 tasks), the "
        "100,000 random sign flips of the permutation test taking nearly all of it.",
        "",
    ]
    if args.quick:
        return
    rows = []
    for tasks in (1000, 11112):
        with tempfile.TemporaryDirectory(prefix="hermit-bench-stats-") as tmp:
            project = Path(tmp) / "p"
            synth.make_project(project, tasks=tasks, tree=False)
            task_ids = synth.test_ids(project)
            for label in labels:
                synth.write_evaluation(project, label, task_ids, k)
            env = {**os.environ, "HERMIT_TUI_CONFIG_DIR": str(Path(tmp) / "cfg")}
            t0 = time.perf_counter()
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "hermit_tui",
                    "report",
                    "--config",
                    str(project / "run.yaml"),
                    "--format",
                    "json",
                    "--output",
                    str(Path(tmp) / "r.json"),
                ],
                env=env,
                capture_output=True,
                text=True,
            )
            wall = time.perf_counter() - t0
            if done.returncode:
                raise SystemExit(done.stderr[-2000:])
            rows.append((tasks, wall))
            synth.figure(
                f"stats.report_{tasks}_s",
                wall,
                unit="s",
                detail=f"`hermit-tui report --format json`, whole command, {tasks:,} tasks x 3 x 3 "
                f"written in hermit's format (before: 16.7 s at 1,000 tasks, over 300 s at 11,112)",
            )
    md += ["| `hermit-tui report --format json` (whole command) | before | now |", "|---|---|---|"]
    before = {1000: "16.7 s", 11112: "over 300 s (stopped)"}
    md += [f"| {t:,} tasks x 3 repeats x 3 selectors | {before[t]} | {w:.1f} s |" for t, w in rows]
    md += [
        "",
        "What remains of the report's time at scale is reading results.jsonl into pydantic records (issue 15, "
        "item 1: the columnar store).",
        "",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny runs (a smoke test; nothing is judged)")
    parser.add_argument(
        "--only",
        help="a comma-separated subset of coverage, grid, power, test, clusters, sequential, anytime, "
        "anytime-launch, speed",
    )
    parser.add_argument("--reps", type=int, help="data sets per coverage cell (default 1000; --quick 100)")
    parser.add_argument("--runs", type=int, help="launches per sequential scenario (default 1000; --quick 60)")
    parser.add_argument("--tasks", type=int, help="tasks of the speed case (default 111,112; --quick 2,000)")
    parser.add_argument("--markdown", metavar="PATH", help="write the tables here (Markdown)")
    args = parser.parse_args(argv)
    synth.QUICK = args.quick
    args.reps = args.reps or (100 if args.quick else 1000)
    args.runs = args.runs or (60 if args.quick else 1000)
    args.tasks = args.tasks or (2000 if args.quick else 111_112)
    parts = {
        "coverage": coverage,
        "grid": grid_section,
        "power": power_section,
        "test": test_section,
        "clusters": cluster_section,
        "sequential": sequential_section,
        "anytime": anytime_section,
        "anytime-launch": anytime_launch_section,
        "speed": speed_section,
    }
    chosen = [p.strip() for p in args.only.split(",")] if args.only else list(parts)
    unknown = [p for p in chosen if p not in parts]
    if unknown:
        parser.error(f"unknown part {', '.join(unknown)} (choose from {', '.join(parts)})")
    md: list[str] = [
        f"Produced by `python benchmarks/bench_stats.py{' --quick' if args.quick else ''}` on "
        f"{synth.machine()['date']} ({synth.machine()['nproc']} CPUs).",
        "",
    ]
    for name in chosen:
        parts[name](args, md)
    if args.markdown:
        Path(args.markdown).write_text("\n".join(md).rstrip() + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
