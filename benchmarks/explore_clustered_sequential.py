"""The clustered group-sequential design (``eval --stop-when-decided --cluster-by``) on clustered data (issue 25,
items 4 and 5; RESULTS.md, "Stop when decided with clusters").

Each data set: ``tasks`` pass/fail tasks in ``C`` clusters of unequal sizes (C drawn from a range, the sizes
1 + a multinomial draw on Gamma(2) weights). A cluster has its own success level (mean mu_c ~ Beta(2, 2)) and its
tasks' rates are p ~ Beta(4 mu_c, 4 (1 - mu_c)). A candidate's rate is p + 2 effect (1 - p) (the true mean
difference is the effect, as in bench_stats' sequential table), then moved by a shift shared by its cluster,
u_c min(p', 1 - p') with u_c ~ N(0, 0.5) clipped to [-1, 1], drawn per candidate: symmetric around 0 and
independent of p, so the population mean difference stays the effect while tasks of one cluster move together
(the case clustering is for). Without that shift (sd 0) the clusters leave the differences independent.

Per row, on the same data sets: the clustered design as ``eval`` runs it
(``core.stats.sequential.clustered.ClusteredMonitor`` through ``core.stats.sequential.tracker.RoundTracker``'s schedule:
whole clusters in sha256 order, CR2 information, t on the Bell-McCaffrey df, futility on), and the unclustered design
``eval`` runs without ``--cluster-by`` (tasks in sha256 order, which here is a random order, looks within round 1 every
25 tasks). False claim: an improvement or a regression of a candidate with effect 0; with three candidates, any in the
launch. At effect 0.2: the share of improvements, the attempts per selector and task (rounds) used, against the fixed
clustered design (the report's clustered pair interval, ``core.stats.intervals.pair_bounds`` with the clusters: CR2, t
on the Bell-McCaffrey df) of equal power, interpolated between fixed designs a quarter of a round apart. Then the size
of the fixed clustered test on A/A data: the report's pair interval excluding 0, and on the same data the CR2 t test on
the differences and the CR1 t test on C - 1 df the report used before.

    nice -n 10 python benchmarks/explore_clustered_sequential.py            # the table (about 8 min on 2 cores)
    python benchmarks/explore_clustered_sequential.py --quick               # a smoke run
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from multiprocessing import Pool

import bench_stats as bs  # (benchmarks/ is on the path when the script runs)
import numpy as np

SEED = 20261207
MAX_ROUNDS = 8
SHIFT_SD = 0.5


def structure(rng, tasks: int, clusters: tuple[int, int]) -> np.ndarray:
    """Cluster codes of ``tasks`` tasks in C clusters of unequal sizes (C uniform in ``clusters``), cluster by
    cluster."""
    c = int(rng.integers(clusters[0], clusters[1] + 1))
    weights = rng.gamma(2.0, size=c)
    sizes = 1 + rng.multinomial(tasks - c, weights / weights.sum())
    return np.repeat(np.arange(c), sizes)


def rates(rng, codes: np.ndarray, effects, shift_sd: float = SHIFT_SD):
    """(the baseline's task rates, each candidate's)."""
    c = int(codes.max()) + 1
    mu = rng.beta(2.0, 2.0, size=c)[codes]
    p = rng.beta(4 * mu, 4 * (1 - mu))
    out = []
    for e in effects:
        pb = p + 2 * e * (1 - p)
        u = np.clip(rng.normal(0.0, shift_sd, size=c), -1.0, 1.0)[codes] if shift_sd > 0 else 0.0
        out.append(np.clip(pb + u * np.minimum(pb, 1 - pb), 0.0, 1.0))
    return p, out


def _run(monitors, schedule, order, p, pbs, rng_a, rng_bs) -> float:
    """Feed the looks of ``schedule`` (tasks taken in ``order``) until every monitor is decided: the attempts per
    selector and task used. Each task's attempts are drawn once per round (the same draws whatever the order)."""
    done, used = 0, 0.0
    g = len(order)
    for r, n in schedule:
        part = order[done:n] if r == 1 else order
        a = (rng_a[r - 1][part] < p[part]).astype(float)
        for m, pb, draws in zip(monitors, pbs, rng_bs):
            m.add_look(a, (draws[r - 1][part] < pb[part]).astype(float))
        done, used = (n, n / g) if r == 1 else (done, float(r))
        if all(m.decided for m in monitors):
            break
    return used


def launch(args: tuple[int, int, tuple[int, int], tuple[float, ...], float]) -> dict:
    """One data set, run by the clustered design and by the unclustered one."""
    from hermit_tui.core.stats.sequential.clustered import ClusteredMonitor
    from hermit_tui.core.stats.sequential.monitor import SequentialMonitor
    from hermit_tui.core.stats.sequential.schedule import clustered_batches, first_round_batches, look_schedule
    from hermit_tui.core.stats.sequential.spending import design_spending
    from hermit_tui.core.stats.sequential.stopping import FUTILITY_CP

    seed, tasks, clusters, effects, shift_sd = args
    rng = np.random.default_rng(seed)
    codes = structure(rng, tasks, clusters)
    p, pbs = rates(rng, codes, effects, shift_sd)
    k = len(effects)
    draws_a = rng.random((MAX_ROUNDS, tasks))
    draws_b = [rng.random((MAX_ROUNDS, tasks)) for _ in effects]
    c = int(codes.max()) + 1
    # the clustered design: clusters in a random order (sha256 of their names), each cluster's tasks together
    perm = rng.permutation(c)
    order = np.concatenate([np.flatnonzero(codes == j) for j in perm])
    seen = {j: i for i, j in enumerate(perm)}
    look_codes = np.array([seen[int(codes[t])] for t in order])
    clustered = [
        ClusteredMonitor("a", f"b{i}", MAX_ROUNDS, look_codes, batches=clustered_batches(tasks, c), candidates=k,
                         futility=FUTILITY_CP)
        for i in range(k)
    ]  # fmt: skip
    used_c = _run(clustered, clustered[0].schedule, order, p, pbs, draws_a, draws_b)
    # the unclustered design on the same attempts: tasks in a random order (sha256 of their ids)
    b = first_round_batches(tasks)
    plain = [
        SequentialMonitor("a", f"b{i}", MAX_ROUNDS, candidates=k, batches=b, total_tasks=tasks,
                          spending=design_spending(b), futility=FUTILITY_CP)
        for i in range(k)
    ]  # fmt: skip
    used_u = _run(plain, look_schedule(tasks, MAX_ROUNDS, b), rng.permutation(tasks), p, pbs, draws_a, draws_b)
    lasts = [m.last for m in clustered]
    plains = [m.last for m in plain]
    assert all(x is not None for x in lasts + plains)
    return {
        "clustered": [x.decision for x in lasts if x is not None],
        "plain": [x.decision for x in plains if x is not None],
        "used_c": used_c,
        "used_u": used_u,
        "looks_c": clustered[0].batches,
        "c": c,
        "adjusted": [x.adjusted_estimate for x in lasts if x is not None],
    }


def fixed_power_curve(
    seed: int, tasks: int, clusters: tuple[int, int], effect: float, sims: int, most: int = 8
) -> list[tuple[float, float]]:
    """(rounds, power) of the fixed clustered design on all the tasks, from one round to ``most`` in quarter rounds
    (the first ``attempts % tasks`` tasks one repeat more): the clustered 95% pair interval above 0, the running
    maximum. ``sims`` data sets per design, in 40 cluster structures."""
    from hermit_tui.core.stats.intervals import pair_bounds

    rng = np.random.default_rng(seed)
    per = max(1, sims // 40)
    worlds = []
    for _ in range(40):
        codes = structure(rng, tasks, clusters)
        ps = [rates(rng, codes, [effect]) for _ in range(per)]
        worlds.append((codes, np.array([x[0] for x in ps]), np.array([x[1][0] for x in ps])))
    out, best = [], 0.0
    for attempts in range(tasks, most * tasks + 1, max(1, tasks // 4)):
        r, extra = divmod(attempts, tasks)
        hits = 0
        for codes, pa, pb in worlds:
            order = rng.permutation(tasks)  # which tasks get the extra repeat
            reps = np.full(tasks, r)
            reps[order[:extra]] += 1
            ma, mb = rng.binomial(reps, pa) / reps, rng.binomial(reps, pb) / reps
            low, _, _ = pair_bounds(ma, mb, attempts, attempts, clusters=codes)
            hits += int(np.sum(low > 0))
        best = max(best, hits / (per * len(worlds)))
        out.append((attempts / tasks, best))
    return out


def fixed_size(seed: int, tasks: int, clusters: tuple[int, int], rounds: int, sims: int) -> tuple[float, float, float]:
    """The A/A rejection rates at 5% on ``rounds`` repeats, same data: the report's clustered pair interval excluding
    0 (``pair_bounds`` with the clusters: CR2, t on the Bell-McCaffrey df), the CR2 t test on the task differences on
    those df (the clustered sequential design's looks), and the CR1 t test on C - 1 df (``C / (C - 1) sum_c S_c^2 /
    N^2``, written out here: the report's method before CR2)."""
    from hermit_tui.core.stats.clusters import cluster_df, cluster_sums, clustered_var
    from hermit_tui.core.stats.intervals import pair_bounds, t_quantile

    rng = np.random.default_rng(seed)
    per = max(1, sims // 100)
    report = cr1 = cr2 = 0
    for _ in range(100):
        codes = structure(rng, tasks, clusters)
        c = int(codes.max()) + 1
        q1, q2 = t_quantile(c - 1), t_quantile(cluster_df(codes))
        ma, mb = np.empty((per, tasks)), np.empty((per, tasks))
        for i in range(per):  # the draws in the order of the first version of this table (its figures again)
            p, (pb,) = rates(rng, codes, [0.0])
            mb[i] = rng.binomial(rounds, pb) / rounds
            ma[i] = rng.binomial(rounds, p) / rounds
        low, high, _ = pair_bounds(ma, mb, tasks * rounds, tasks * rounds, clusters=codes)
        report += int(np.sum((low > 0) | (high < 0)))
        d = mb - ma
        v1 = c / (c - 1) * np.sum(cluster_sums(d, codes) ** 2, -1) / tasks**2
        v2 = clustered_var(d, codes)
        m = np.abs(d.mean(-1))
        cr1 += int(np.sum((v1 > 0) & (m > q1 * np.sqrt(v1))))
        cr2 += int(np.sum((v2 > 0) & (m > q2 * np.sqrt(v2))))
    n = 100 * per
    return report / n, cr2 / n, cr1 / n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a smoke run: few launches per row")
    ap.add_argument("--runs", type=int, default=1000, help="launches per A/A row (A/B rows: half)")
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args(argv)
    runs = 20 if args.quick else args.runs
    rows = [  # (tasks, clusters, effect, candidates, shift sd, runs)
        (50, (8, 12), 0.0, 1, SHIFT_SD, runs),
        (50, (8, 12), 0.0, 3, SHIFT_SD, runs),
        (200, (25, 40), 0.0, 1, SHIFT_SD, runs),
        (200, (25, 40), 0.0, 3, SHIFT_SD, runs),
        (50, (8, 12), 0.0, 1, 0.0, runs // 2),
        (50, (8, 12), 0.2, 1, SHIFT_SD, runs // 2),
        (200, (25, 40), 0.2, 1, SHIFT_SD, runs // 2),
    ]
    t0 = time.perf_counter()
    lines = [
        "| tasks | clusters | effect | cluster shift sd | candidates | runs | clustered: false claim (se) "
        "| clustered: improvement | clustered: mean rounds | fixed clustered, equal power | attempts vs fixed "
        "| not clustered: false claim (se) | not clustered: improvement | not clustered: mean rounds |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    pooled: dict[int, list[int]] = {1: [], 3: []}
    with Pool(args.workers) as pool:
        for n, (tasks, clusters, effect, k, sd, nruns) in enumerate(rows):
            jobs = [(SEED + 1000 * n + i, tasks, clusters, (effect,) * k, sd) for i in range(nruns)]
            out = pool.map(launch, jobs, chunksize=8)

            def claims(key: str, out: list = out) -> float:
                return float(np.mean([any(d in ("improvement", "regression") for d in o[key]) for o in out]))

            def share(key: str, what: str, out: list = out) -> float:
                return float(np.mean([d == what for o in out for d in o[key]]))

            fc, fu = claims("clustered"), claims("plain")
            se = math.sqrt(max(fc * (1 - fc), 1e-9) / nruns)
            seu = math.sqrt(max(fu * (1 - fu), 1e-9) / nruns)
            rc = float(np.mean([o["used_c"] for o in out]))
            ru = float(np.mean([o["used_u"] for o in out]))
            fixed, vs = "—", "—"
            if effect > 0:
                sims = 400 if args.quick else 4000
                curve = fixed_power_curve(SEED + 77 + n, tasks, clusters, effect, sims)
                q = bs.equal_power_fixed(curve, share("clustered", "improvement"))
                fixed = "beyond 8 rounds" if q is None else f"{q:.2f}"
                vs = "—" if q is None else f"{rc / q:.0%}"
                claim_c, claim_u = "—", "—"
            else:
                claim_c, claim_u = f"{fc:.4f} ({se:.4f})", f"{fu:.4f} ({seu:.4f})"
                if sd > 0:
                    pooled[k] += [int(any(d in ("improvement", "regression") for d in o["clustered"])) for o in out]
            lines.append(
                f"| {tasks} | {clusters[0]}-{clusters[1]} | {effect:g} | {sd:g} | {k} | {nruns} | {claim_c} "
                f"| {share('clustered', 'improvement'):.3f} | {rc:.2f} | {fixed} | {vs} | {claim_u} "
                f"| {share('plain', 'improvement'):.3f} | {ru:.2f} |"
            )
            print(lines[-1], flush=True)
    print()
    print("\n".join(lines))
    sims = 400 if args.quick else 4000
    for n, (tasks, clusters) in enumerate(((50, (8, 12)), (200, (25, 40)))):
        for rounds in (1, 3):
            sr, s2, s1 = fixed_size(SEED + 500 + n, tasks, clusters, rounds, sims)
            where = f"{tasks} tasks in {clusters[0]}-{clusters[1]} clusters, {rounds} round(s), {sims} data sets"
            print(
                f"fixed design, A/A, {where}: the report's pair interval (CR2, Bell-McCaffrey df) rejects {sr:.4f}; "
                f"CR2 t on Bell-McCaffrey df {s2:.4f}; CR1 t on C - 1 df (before) {s1:.4f}"
            )
    for k, xs in pooled.items():
        if xs:
            m = float(np.mean(xs))
            se = math.sqrt(m * (1 - m) / len(xs))
            verdict = "holds" if m + se < 0.05 else "DOES NOT hold"
            print(f"pooled A/A false claims, {k} candidate(s), clustered design: {m:.4f} +/- {se:.4f} "
                  f"over {len(xs)} launches: at or under 5% by more than its Monte-Carlo error: {verdict}")  # fmt: skip
    print(f"{time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
