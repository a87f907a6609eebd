"""The anytime-valid sequence with clusters above the task (issue 25, items 4 and 5; ``core.stats.sequential.anytime.
clustered_confidence_sequence``): time-uniform coverage of the task-weighted mean difference ``mu``, false claims
with one and three candidates, and decisions and tasks used at an effect of 0.2, on clustered data, beside the
unclustered sequence on the same data (tasks in the look order, as a launch without ``--cluster-by`` takes them).

The data: ``C`` clusters of unequal sizes (``1 + Multinomial(N - C, Dirichlet(a, ..., a))``: 50 tasks in 10
clusters, 200 in 30, 600 in 200, and the nulls on 200 in 10; *skewed* sizes with ``a = 1``, *similar* with
``a = 20``); a cluster's baseline success ``q_c ~ U(0.4, 0.6)``, a task's ``p = q_c + U(-0.05, 0.05)``; the
candidate's ``p + delta_c`` with a cluster shift ``delta_c = effect + h U(-1, 1)`` (so ``mu = effect`` exactly,
every probability in [0, 1]); pass/fail scores, R repeats (a task's difference: the mean of its R minus the mean of
the baseline's R). Two nulls: *A/A* (``delta_c = 0``: the candidate is the baseline) and *mean-zero shifts*
(``effect = 0``, ``h = 0.35``: better on some clusters, worse on others, ``mu = 0``); and an effect of 0.2
(``h = 0.15``). Three candidates: each its own shifts and attempts, alpha split over them. Every sequence is looked at
after each of its observations (a cluster, or a task for the unclustered one) and a claim is its first exclusion of 0.

``nice -n 10 python benchmarks/explore_anytime_clusters.py`` (2,000 launches per row); ``--streams 100`` to try it;
``--tracker 200`` adds 200 launches per row through the launch's ``AnytimeTracker`` with the futility rule on.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from hermit_tui.core.stats.sequential.anytime import _covers, clustered_confidence_sequence, paired_confidence_sequence

CHUNK = 100  # streams per call (the grid of the inversion is streams x 257 x clusters)
INVERTED = 30  # up to this many clusters the rows run the launch's inverted sequence (beyond: the tests at mu and 0)
WEIGHT: list[float] = []  # mean n / K of each call
DISAGREE = [0, 0]  # (streams where the two disagree on coverage or a look's decision, streams compared)


def launches(rng, streams: int, tasks: int, clusters: int, effect: float, h: float, reps: int, spread: float):
    """(task differences (streams, tasks) in a random order of tasks, cluster of each task, cluster sizes)."""
    shares = rng.dirichlet(np.full(clusters, spread), streams)
    sizes = 1 + np.array([rng.multinomial(tasks - clusters, s) for s in shares])
    of = np.array([np.repeat(np.arange(clusters), s) for s in sizes])  # (streams, tasks): task -> cluster
    q = rng.uniform(0.4, 0.6, (streams, clusters))
    p = np.take_along_axis(q, of, axis=1) + rng.uniform(-0.05, 0.05, (streams, tasks))
    shift = effect + h * rng.uniform(-1, 1, (streams, clusters))
    pb = p + np.take_along_axis(shift, of, axis=1)
    d = (rng.binomial(reps, pb) - rng.binomial(reps, p)) / reps
    return d, of, sizes


def one_candidate(rng, streams, tasks, clusters, effect, h, reps, alpha, spread):
    """Per stream, for the clustered and the unclustered sequence: (covered mu at every look, claimed, tasks used)."""
    d, of, sizes = launches(rng, streams, tasks, clusters, effect, h, reps, spread)
    mu = effect
    # clustered: the clusters in a random order (the sha256 of their keys), each its mean difference
    perm = np.argsort(rng.random((streams, clusters)), axis=1)
    sums = np.zeros((streams, clusters))
    np.add.at(sums, (np.arange(streams)[:, None], of), d)
    dbar = np.take_along_axis(sums / sizes, perm, axis=1)
    n = np.take_along_axis(sizes, perm, axis=1)
    cap = sizes.max(axis=1, keepdims=True)
    w = n / cap
    # the tests at m = mu and m = 0 themselves (each look's set is one interval of m: tests/test_anytime_clusters.py)
    at_mu = _covers(dbar, w, np.full((streams, 1), mu), alpha)[:, 0]
    at_0 = _covers(dbar, w, np.zeros((streams, 1)), alpha)[:, 0]
    if clusters <= INVERTED:  # and the sequence of the launch, inverted, which must agree with them
        low = np.empty_like(dbar)
        high = np.empty_like(dbar)
        for s in range(0, streams, CHUNK):
            low[s : s + CHUNK], high[s : s + CHUNK] = clustered_confidence_sequence(
                dbar[s : s + CHUNK], n[s : s + CHUNK], cap[s : s + CHUNK], alpha
            )
        c_cover = np.all((low <= mu) & (mu <= high), axis=1)
        c_decided = (low > 0) | (high < 0)
        DISAGREE[0] += int(
            np.sum(c_cover != at_mu.all(axis=1)) + np.sum(c_decided != ~np.minimum.accumulate(at_0, axis=1))
        )
        DISAGREE[1] += streams
    else:
        c_cover = at_mu.all(axis=1)
        c_decided = ~np.minimum.accumulate(at_0, axis=1)
    c_claim = c_decided.any(axis=1)
    first = np.where(c_claim, np.argmax(c_decided, axis=1), clusters - 1)
    c_used = np.take_along_axis(np.cumsum(n, axis=1), first[:, None], axis=1)[:, 0]
    # unclustered: the tasks in a random order (the sha256 of their ids), each one observation
    order = np.argsort(rng.random((streams, tasks)), axis=1)
    u_low, u_high = paired_confidence_sequence(np.take_along_axis(d, order, axis=1), alpha)
    u_cover = np.all((u_low <= mu) & (mu <= u_high), axis=1)
    u_decided = (u_low > 0) | (u_high < 0)
    u_claim = u_decided.any(axis=1)
    u_used = np.where(u_claim, np.argmax(u_decided, axis=1) + 1, tasks)
    WEIGHT.append(float(np.mean(w)))
    return (c_cover, c_claim, c_used), (u_cover, u_claim, u_used)


def row(streams, tasks, clusters, effect, h, reps, candidates, seed, spread):
    rng = np.random.default_rng(seed)
    alpha = 0.05 / candidates
    per = [one_candidate(rng, streams, tasks, clusters, effect, h, reps, alpha, spread) for _ in range(candidates)]
    out = {}
    for i, name in enumerate(("clustered", "unclustered")):
        cover = np.mean(per[0][i][0])
        claims = np.any([p[i][1] for p in per], axis=0).mean()  # any candidate: family-wise
        used = np.mean(per[0][i][2])
        out[name] = (cover, claims, used)
    return out


class _Record:
    def __init__(self, score: float):
        self.judge = type("Judge", (), {"score": score})()


def through_the_tracker(tasks, clusters, effect, h, launches_n, seed):
    """(mean tasks looked at, decisions) of launches through the launch's own ``AnytimeTracker`` with clusters and
    the futility rule on, looks of at least 4 tasks, skewed sizes, one repeat (a pass/fail difference d as the
    baseline scoring d < 0 and the candidate d > 0)."""
    from hermit_tui.core.stats.sequential.anytime_plan import AnytimePlan, with_clusters
    from hermit_tui.core.stats.sequential.anytime_tracker import AnytimeTracker

    rng = np.random.default_rng(seed)
    d, of, _ = launches(rng, launches_n, tasks, clusters, effect, h, 1, 1.0)
    ids = [f"t{i}" for i in range(tasks)]
    used: list[int] = []
    decisions: dict[str, int] = {}
    for s in range(launches_n):
        records = {
            "a": {(t, 1): _Record(float(d[s, i] < 0)) for i, t in enumerate(ids)},
            "b": {(t, 1): _Record(float(d[s, i] > 0)) for i, t in enumerate(ids)},
        }
        plan = AnytimePlan(baseline="a", candidates=["b"], max_rounds=1, tasks_per_look=4, out_of_reach=True)
        tracker = AnytimeTracker(with_clusters(plan, "g", {t: f"g{of[s, i]}" for i, t in enumerate(ids)}, ids), ids)
        while not tracker.finished:
            tracker.check(records)
        used.append(tracker.tasks_looked)
        last = tracker.last("b")
        decision = last.decision if last is not None else "undecided"
        decisions[decision] = decisions.get(decision, 0) + 1
    return float(np.mean(used)), dict(sorted(decisions.items()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=2000, help="launches per row (default 2000)")
    parser.add_argument("--tracker", type=int, default=0, help="also N launches per row through the tracker")
    args = parser.parse_args(argv)
    se = math.sqrt(0.05 * 0.95 / args.streams)
    print(f"Monte-Carlo error near 0.05: +/-{2 * se:.3f} (2 se); near 0.95 the same")
    print(
        "| tasks | clusters | sizes (mean n/K) | data | repeats | candidates | coverage of mu, clustered | unclustered "
        "| any claim, clustered | unclustered | mean tasks used, clustered | unclustered |\n" + "|---" * 12 + "|"
    )
    start = time.process_time()
    seed = 0
    rows = (
        ("A/A", 0.0, 0.0, 1, 1, 1.0),
        ("A/A", 0.0, 0.0, 1, 3, 1.0),
        ("mean-zero shifts", 0.0, 0.35, 10, 1, 1.0),
        ("mean-zero shifts", 0.0, 0.35, 10, 3, 1.0),
        ("mean-zero shifts", 0.0, 0.35, 10, 1, 20.0),
        ("effect 0.2", 0.2, 0.15, 1, 1, 1.0),
        ("effect 0.2", 0.2, 0.15, 10, 1, 1.0),
        ("effect 0.2", 0.2, 0.15, 10, 1, 20.0),
    )
    for tasks, clusters, which in ((50, 10, rows), (200, 30, rows), (600, 200, rows), (200, 10, rows[2:5])):
        for data, effect, h, reps, candidates, spread in which:
            seed += 1
            WEIGHT.clear()
            r = row(args.streams, tasks, clusters, effect, h, reps, candidates, seed, spread)
            sizes = f"{'skewed' if spread < 5 else 'similar'} ({np.mean(WEIGHT):.2f})"
            (cc, ck, cu), (uc, uk, uu) = r["clustered"], r["unclustered"]
            print(
                f"| {tasks} | {clusters} | {sizes} | {data} | {reps} | {candidates} | {cc:.3f} | {uc:.3f} | {ck:.3f} "
                f"| {uk:.3f} | {cu:.1f} | {uu:.1f} |",
                flush=True,
            )
    print(f"inverted sequence vs the tests at mu and 0: {DISAGREE[0]} disagreements in {DISAGREE[1]} streams")
    if args.tracker:
        print("through the launch's tracker, futility rule on (skewed sizes, one repeat):")
        for tasks, clusters, effect, h in ((200, 30, 0.0, 0.35), (200, 30, 0.2, 0.15), (600, 200, 0.2, 0.15)):
            mean, decisions = through_the_tracker(tasks, clusters, effect, h, args.tracker, 7)
            print(f"  {tasks} tasks in {clusters} clusters, effect {effect:g}: {mean:.1f} tasks looked at, {decisions}")
    print(f"{time.process_time() - start:.0f} s of CPU")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
