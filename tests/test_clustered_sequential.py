"""The clustered group-sequential design (``--stop-when-decided`` with ``--cluster-by``; issue 25, items 4 and 5):
its look order and schedule (whole clusters, in the order of their names' sha256), its information against
statsmodels' cluster-robust fit, its boundaries against an independent multivariate-normal computation and its
intervals against Student t on C - 1 df, the replay from the records, and the resume's check of the clusters."""

from __future__ import annotations

import hashlib
import math
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import statsmodels.api as sm
from scipy.stats import multivariate_normal, norm
from scipy.stats import t as student_t

from hermit_tui.core.stats.clusters import OWN
from hermit_tui.core.stats.sequential.clustered import ClusteredMonitor, clustered_method
from hermit_tui.core.stats.sequential.replay import replay
from hermit_tui.core.stats.sequential.schedule import (
    MIN_CLUSTERS_PER_LOOK,
    cluster_codes,
    cluster_look_order,
    cluster_schedule,
    clustered_batches,
)
from hermit_tui.core.stats.sequential.spending import candidate_spend, power_spending
from hermit_tui.core.stats.sequential.tracker import RoundTracker, SequentialPlan


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def world(seed: int, tasks: int = 60, clusters: int = 12):
    """Task ids, their clusters (unequal sizes; a few tasks with none: clusters of their own), rates."""
    rng = np.random.default_rng(seed)
    ids = [f"task-{i:03d}" for i in range(tasks)]
    weights = rng.gamma(2.0, size=clusters)
    sizes = 1 + rng.multinomial(tasks - clusters - 3, weights / weights.sum())
    names = np.repeat([f"tpl-{c}" for c in range(clusters)], sizes)
    rng.shuffle(names)
    of = {t: str(c) for t, c in zip(ids, names)}  # the last 3 tasks: no cluster named
    return ids, of, rng


def test_the_look_order_takes_whole_clusters_by_the_sha256_of_their_names():
    ids = ["a", "b", "c", "d", "e", "f"]
    of = {"a": "x", "b": "y", "c": "x", "d": "z", "e": "y"}  # f: a cluster of its own
    got = cluster_look_order(ids, of)
    # by hand: clusters sorted by sha256 of their name, then each cluster's tasks by the sha256 of their ids
    clusters = {"x": ["a", "c"], "y": ["b", "e"], "z": ["d"], OWN + "f": ["f"]}
    want = [t for name in sorted(clusters, key=sha) for t in sorted(clusters[name], key=sha)]
    assert got == want
    assert cluster_look_order(list(reversed(ids)), of) == want  # the order of the file does not matter
    codes = cluster_codes(got, of)
    assert codes.tolist() == [sorted(clusters, key=sha).index(next(k for k, v in clusters.items() if t in v))
                              for t in got]  # fmt: skip


@pytest.mark.parametrize("seed", range(6))
def test_a_look_never_splits_a_cluster_and_the_schedule_is_its_own_fixed_point(seed):
    ids, of, _ = world(seed, tasks=200, clusters=30)
    order = cluster_look_order(ids, of)
    codes = cluster_codes(order, of)
    c = int(codes.max()) + 1
    batches = clustered_batches(200, c)
    assert batches == min(8, c // MIN_CLUSTERS_PER_LOOK)
    schedule = cluster_schedule(codes, 5, batches)
    first = [n for r, n in schedule if r == 1]
    assert [r for r, _ in schedule] == [1] * len(first) + [2, 3, 4, 5] and first[-1] == 200
    before = 0
    for n in first:
        seen, later = set(codes[:n].tolist()), set(codes[n:].tolist())
        assert not seen & later  # no cluster has tasks on both sides of a look
        assert len(set(codes[before:n].tolist())) >= MIN_CLUSTERS_PER_LOOK  # each look adds 4 clusters or more
        before = n
    assert cluster_schedule(codes, 5, len(first)) == schedule  # replayed from the recorded number of looks


def cluster_fit(values, groups):
    return sm.OLS(np.asarray(values, dtype=float), np.ones(len(values))).fit(
        cov_type="cluster", cov_kwds={"groups": np.asarray(groups)}, use_t=True
    )


def cr2_by_hand(values, groups) -> tuple[float, float]:
    """Bell & McCaffrey's CR2 variance of the intercept and its Satterthwaite df, from the general matrices: the
    residuals of cluster c adjusted by (I - H_cc)^(-1/2) (a matrix square root), the df (sum of g_c'g_c)^2 / sum of
    (g_c'g_d)^2 with g_c = M E_c A_c X_c (X'X)^-1 (tasks independent with equal variance)."""
    from scipy.linalg import sqrtm

    y = np.asarray(values, dtype=float)
    groups = np.asarray(groups)
    n = len(y)
    x = np.ones((n, 1))
    h = x @ np.linalg.inv(x.T @ x) @ x.T
    m = np.eye(n) - h
    e = m @ y
    meat, gs = 0.0, []
    for c in np.unique(groups):
        idx = np.flatnonzero(groups == c)
        a_c = np.real(sqrtm(np.linalg.inv(np.eye(len(idx)) - h[np.ix_(idx, idx)])))
        u = (x[idx].T @ a_c @ e[idx]).item() / n
        meat += u * u
        g = np.zeros(n)
        g[idx] = (a_c.T @ x[idx]).ravel() / n
        gs.append(m @ g)
    gram = np.array([[gc @ gd for gd in gs] for gc in gs])
    return meat, float(np.trace(gram) ** 2 / np.sum(gram * gram))


@pytest.mark.parametrize("seed", range(3))
def test_the_bias_reduced_variance_and_its_df_match_the_general_matrix_formulas(seed):
    from hermit_tui.core.stats.clusters import bell_mccaffrey_df, bias_reduced_var, clustered_var

    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 9, 10)
    groups = np.repeat(np.arange(10), sizes)
    y = rng.normal(0, 1, len(groups)) + rng.normal(0, 0.5, 10)[groups]
    v, df = cr2_by_hand(y, groups)
    assert bias_reduced_var(y, groups) == pytest.approx(v, rel=1e-10)
    assert bell_mccaffrey_df(sizes) == pytest.approx(df, rel=1e-10) and df < 9
    # equal sizes: CR2 is statsmodels' CR1, on C - 1 df
    eq = np.repeat(np.arange(8), 5)
    y = rng.normal(0, 1, 40) + rng.normal(0, 0.5, 8)[eq]
    assert bias_reduced_var(y, eq) == pytest.approx(float(clustered_var(y, eq)), rel=1e-12)
    assert bias_reduced_var(y, eq) == pytest.approx(cluster_fit(y, eq).bse[0] ** 2, rel=1e-10)
    assert bell_mccaffrey_df([5] * 8) == pytest.approx(7.0)


def run_looks(seed: int, rounds: int = 4, shift: float = 0.0, futility=None):
    """A clustered monitor fed round 1 look by look, then later rounds; with the data it saw."""
    ids, of, rng = world(seed)
    order = cluster_look_order(ids, of)
    codes = cluster_codes(order, of)
    p = rng.uniform(0.2, 0.8, len(ids))
    pb = np.clip(p + shift + rng.normal(0, 0.15, int(codes.max()) + 1)[codes], 0, 1)
    a_all = (rng.random((len(ids), rounds)) < p[:, None]).astype(float)
    b_all = (rng.random((len(ids), rounds)) < pb[:, None]).astype(float)
    m = ClusteredMonitor("a", "b", rounds, codes, batches=clustered_batches(len(ids), int(codes.max()) + 1),
                         futility=futility)  # fmt: skip
    looks, done = [], 0
    for r, n in m.schedule:
        if r == 1:
            looks.append(m.add_look(a_all[done:n, 0], b_all[done:n, 0]))
            done = n
        else:
            looks.append(m.add_look(a_all[:, r - 1], b_all[:, r - 1]))
    return m, looks, a_all, b_all, codes


@pytest.mark.parametrize("seed", range(3))
def test_each_looks_information_and_interval_are_the_bias_reduced_cluster_robust_t(seed):
    m, looks, a_all, b_all, codes = run_looks(seed, futility=None)
    assert m.batches == sum(1 for r, _ in m.schedule if r == 1) == 2  # 60 tasks: 60 // 25 looks in round 1
    for look, (r, n) in zip(looks, m.schedule):
        d = (b_all[:n, :r] - a_all[:n, :r]).mean(axis=1)
        var, df = cr2_by_hand(d, codes[:n])
        assert look.clusters == len(set(codes[:n].tolist())) and look.cluster_df == pytest.approx(df, rel=1e-9)
        assert look.mean_diff == pytest.approx(float(d.mean()), abs=1e-15)
        if var < 1e-20:  # every cluster's differences sum to its share of the mean: no spread between clusters
            assert look.information is None and look.ci_method == "no-spread"
            continue
        assert look.information == pytest.approx(1 / var, rel=1e-8)
        assert look.z == pytest.approx(float(d.mean()) / math.sqrt(var), rel=1e-8)
        if not math.isfinite(look.boundary_z):  # nothing left to spend at this look (the information stalled)
            assert look.ci_method is None
            continue
        assert look.ci_method == "t"
        # its method line names the t on the clusters' df, not the unclustered design's tasks - 1
        from hermit_tui.core.stats.sequential.text import sequential_method

        words = sequential_method(look)
        assert "Bell-McCaffrey degrees of freedom" in words and "(CR2)" in words and "tasks - 1 df" not in words
        # this look's own interval: the t interval on the df at the nominal level of its normal boundary
        level = 2 * norm.cdf(look.boundary_z) - 1
        half = student_t.ppf(1 - (1 - level) / 2, df) * math.sqrt(var)
        lo, hi = float(d.mean()) - half, float(d.mean()) + half
        lo, hi = max(-1.0, lo), min(1.0, hi)
        if look.look == 1:  # the first look's interval is its own; later ones intersect it with the earlier ones'
            assert (look.ci_low, look.ci_high) == pytest.approx((lo, hi), abs=1e-10)
        assert look.ci_low >= lo - 1e-10 and look.ci_high <= hi + 1e-10
    assert looks[-1].method == clustered_method(2) and "Kim-DeMets" in looks[-1].method


def test_the_boundaries_spend_as_promised_on_the_information_observed():
    """The first two looks' critical values: the first spends the power function's alpha(t1) alone; the two together
    leave with alpha(t2), the correlation being sqrt(I1 / I2) of the cluster-robust information (it grew faster
    than the attempts here) or the attempts' share (where it grew more slowly)."""
    spend = candidate_spend()
    for seed in range(6):
        m, looks, *_ = run_looks(seed, futility=None)
        u = m.units
        t1, t2 = u[0] / m.max_rounds, u[1] / m.max_rounds
        c1, c2 = looks[0].boundary_z, looks[1].boundary_z
        assert 2 * norm.sf(c1) == pytest.approx(power_spending(t1, spend), rel=1e-6)
        i1, i2 = looks[0].information, looks[1].information
        ratio = u[0] / u[1] if i1 is None or i2 is None else min(i1 / i2, u[0] / u[1])  # (grows at least as attempts)
        rho = math.sqrt(ratio)
        stay = multivariate_normal(mean=[0, 0], cov=[[1, rho], [rho, 1]]).cdf([c1, c2], lower_limit=[-c1, -c2], rng=1)
        assert 1 - stay == pytest.approx(power_spending(t2, spend), abs=3e-5)


def test_a_clear_difference_is_decided_and_adjusted_and_no_difference_is_not_claimed():
    m, looks, *_ = run_looks(1, shift=0.45, futility=0.02)
    decided = next(lk for lk in looks if lk.decision != "undecided")
    assert decided.decision == "improvement" and decided.ci_low > 0 and decided.adjusted
    assert decided.adjusted_low <= decided.adjusted_estimate <= decided.adjusted_high
    assert decided.adjusted_estimate < decided.mean_diff  # the stopping rule's pull is taken out
    t_crit = student_t.ppf(1 - (1 - decided.nominal_level) / 2, decided.cluster_df)
    assert decided.cluster_df < decided.clusters - 1  # clusters of unequal sizes: fewer df than C - 1
    assert decided.z >= t_crit  # it crossed the t boundary on its df, not only the normal one
    assert t_crit > decided.boundary_z


def records_of(scores: np.ndarray, ids: list[str]) -> dict:
    return {
        (t, r + 1): SimpleNamespace(id=t, repeat=r + 1, judge=SimpleNamespace(score=float(scores[i, r])))
        for i, t in enumerate(ids)
        for r in range(scores.shape[1])
    }


def test_replay_from_the_records_gives_the_launchs_looks_and_a_changed_clustering_is_refused_on_resume():
    ids, of, rng = world(4, tasks=80, clusters=16)
    p = rng.uniform(0.2, 0.8, len(ids))
    a = (rng.random((80, 3)) < p[:, None]).astype(float)
    b = (rng.random((80, 3)) < np.clip(p + 0.1, 0, 1)[:, None]).astype(float)
    records = {"none": records_of(a, ids), "good": records_of(b, ids)}
    from hermit_tui.core.stats.clusters import Clustering

    digest = Clustering(by="tpl", of=of).digest()
    order = cluster_look_order(ids, of)
    batches = sum(1 for r, _ in cluster_schedule(cluster_codes(order, of), 3, 3) if r == 1)
    plan = SequentialPlan(baseline="none", candidates=["good"], max_rounds=3, batches=batches, spending="power",
                          method=clustered_method(batches), futility=0.02, cluster_by="tpl", clusters_sha256=digest,
                          cluster_of=of)  # fmt: skip
    tracker = RoundTracker(plan, ids)
    assert tracker.task_ids == order
    while not tracker.finished:
        tracker.check(records)
    entry = tracker.entry("good")
    assert entry.cluster_of == of and entry.clusters == 16 + 3 and entry.clusters_sha256 == digest
    last = tracker.last("good")
    assert last is not None and entry.clusters_looked == last.clusters
    again = replay(entry, records["none"], records["good"], "good", list(reversed(ids)))
    assert again is not None and again == tracker.pairs["good"].looks
    edited = entry.model_copy(update=dict(cluster_of={**of, ids[0]: "elsewhere"}))
    assert replay(edited, records["none"], records["good"], "good", ids) is None  # not the mapping its sha256 names
    # a resume with other clusters (or none) is a changed design
    assert any("clusters" in c for c in plan.model_copy(update=dict(clusters_sha256="0" * 64)).same_design(entry))
    assert any("clusters" in c for c in plan.model_copy(update=dict(clusters_sha256=None)).same_design(entry))
    assert plan.same_design(entry) == []
    # the unclustered plan's entry has none of the clustered keys
    plain = SequentialPlan(baseline="none", candidates=["good"], max_rounds=3)
    t2 = RoundTracker(plain, ids)
    t2.check(records)
    dumped = t2.entry("good").model_dump()
    assert not {"cluster_by", "clusters_sha256", "clusters", "cluster_of", "clusters_looked"} & set(dumped)
    plain_look = t2.last("good")
    assert plain_look is not None and not {"clusters", "cluster_df", "design_bounds"} & set(plain_look.model_dump())


@pytest.mark.parametrize("seed", range(3))
def test_from_round_2_the_error_is_spent_at_the_information_fraction_of_the_variance_components(seed):
    """Within round 1 the spending time is the attempts' share; from round 2 it is I_k / I_max with I_max
    projected from the variance components of the look (by hand: the run-to-run part W from each task's variance
    over its rounds, the rest B = V - W, and V(R) = B + W r / R), never below the look before; the last look
    spends what is left."""
    m, looks, a_all, b_all, codes = run_looks(seed, rounds=4, futility=None)
    times: list[float] = []
    for look, (r, n) in zip(looks, m.schedule):
        if r == 1:
            want = n / len(codes) / 4
        else:
            diffs = b_all[:, :r] - a_all[:, :r]
            v, _ = cr2_by_hand(diffs.mean(axis=1), codes)
            w = float(np.sum(np.var(diffs, axis=1, ddof=1))) / (r * len(codes) ** 2)
            b = max(0.0, v - w)
            want = min(1.0, (b + w * r / 4) / (b + w))
        want = 1.0 if look.look == len(m.schedule) else max(want, *times, 0.0)
        assert look.spending_time == pytest.approx(want, rel=1e-9)
        times.append(want)
    assert looks[-1].alpha_spent == pytest.approx(candidate_spend())  # the last look: the whole share spent


# -- end to end: eval --stop-when-decided --cluster-by on a small synthetic project -------------------------------


def clustered_project(root, tasks: int = 100, clusters: int = 20, boost: float = 0.45, seed: int = 11):
    """tests/sequential_project.py's project with a cluster field ``tpl`` (unequal sizes) and a second one,
    ``tpl2``, that groups the tasks otherwise."""
    import json
    import random

    from sequential_project import build

    config = build(root, tasks=tasks, repeats=3, seed=seed, adapters={"good": boost})
    rng = random.Random(seed)
    rows = [json.loads(x) for x in (root / "tasks.jsonl").read_text().splitlines()]
    weights = [rng.random() + 0.3 for _ in range(clusters)]
    for r in rows:
        r["tpl"] = f"tpl-{rng.choices(range(clusters), weights)[0]}"
        r["tpl2"] = f"other-{rng.randrange(clusters)}"
    (root / "tasks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return config, {r["id"]: r["tpl"] for r in rows}


def test_eval_stops_on_whole_clusters_and_report_and_gate_replay_it(tmp_path, capsys):
    import json

    from hermit_tui.cli import main
    from hermit_tui.core.run import events as ev
    from hermit_tui.core.run.runner import EvalRun
    from hermit_tui.core.workspace.config import load_config

    config, tpl = clustered_project(tmp_path / "p")
    seen: list = []
    summaries = EvalRun(load_config(config), ["none", "adapters/good"], stop_when_decided=True, cluster_by="tpl",
                        concurrency=3, on_event=seen.append).run_sync()  # fmt: skip
    ids = sorted(tpl)
    # the look order by hand: clusters by the sha256 of their names, each cluster's tasks by their ids' sha256
    names = sorted(set(tpl.values()), key=sha)
    order = [t for name in names for t in sorted((t for t in ids if tpl[t] == name), key=sha)]
    checks = [e for e in seen if isinstance(e, ev.RoundChecked)]
    assert checks and checks[-1].stopped
    n = checks[-1].tasks
    assert n is not None and n < 100 and all(e.round == 1 for e in checks)  # stopped within round 1
    run = {(r["id"], r["repeat"]) for r in
           map(json.loads, (config.parent / "runs/seq/eval/good/results.jsonl").read_text().splitlines())}  # fmt: skip
    assert run == {(t, 1) for t in order[:n]}
    assert not {tpl[t] for t in order[:n]} & {tpl[t] for t in order[n:]}  # the looks took whole clusters
    ends = [e.tasks or 0 for e in checks]
    for end in ends:  # each look ended at a cluster's end
        assert end == 100 or tpl[order[end - 1]] != tpl[order[end]]
    # the barrier: no attempt of a later look started before the look before it was checked
    position, checked = {t: i for i, t in enumerate(order)}, 0
    for e in seen:
        if isinstance(e, ev.RoundChecked):
            checked = e.tasks or 0
        elif isinstance(e, ev.AttemptStarted):
            nxt = next(x for x in [*ends, 100] if x > checked)
            assert position[e.task_id] < nxt, e
    summary = json.loads((config.parent / "runs/seq/eval/good/summary.json").read_text())
    entry = summary["sequential"]
    assert entry["decision"] == "improvement" and entry["tasks_looked"] == n and entry["total_tasks"] == 100
    assert entry["cluster_by"] == "tpl" and entry["clusters_sha256"] == summary["fingerprint"]["clusters_sha256"]
    assert entry["cluster_of"] == tpl and entry["clusters"] == len(names)
    assert entry["clusters_looked"] == len({tpl[t] for t in order[:n]})
    assert entry["method"] == clustered_method(entry["batches"]) and entry["batches"] > 1
    assert summaries["good"].sequential is not None and summaries["good"].sequential.decision == "improvement"
    # the deciding look from the files by hand: CR2 on the clusters seen, t on its df, above 0
    at = {r["id"]: r["judge"]["score"] for r in
          map(json.loads, (config.parent / "runs/seq/eval/none/results.jsonl").read_text().splitlines())}  # fmt: skip
    good = {r["id"]: r["judge"]["score"] for r in
            map(json.loads, (config.parent / "runs/seq/eval/good/results.jsonl").read_text().splitlines())}  # fmt: skip
    d = np.array([good[t] - at[t] for t in order[:n]])
    groups = np.array([names.index(tpl[t]) for t in order[:n]])
    var, df = cr2_by_hand(d, groups)
    assert entry["mean_diff"] == pytest.approx(float(d.mean()))
    assert float(d.mean()) / math.sqrt(var) > student_t.ppf(0.975, df) and entry["interval"][0] > 0
    # report and gate replay the launch's looks from results.jsonl and the recorded clusters
    assert main(["report", "--config", str(config), "--format", "json"]) == 0
    pair = next(p for p in json.loads(capsys.readouterr().out)["pairs"] if (p["a"], p["b"]) == ("none", "good"))
    assert pair["decision"] == "improvement" and pair["sequential"]["decided_tasks"] == n
    assert (pair["ci_low"], pair["ci_high"]) == pytest.approx(tuple(entry["interval"]))
    assert pair["sequential"]["clusters"] == entry["clusters_looked"]
    code = main(["gate", "--config", str(config), "--baseline", "none", "--candidate", "good"])
    out = capsys.readouterr().out
    assert code == 0 and f"after {n} of the 100 tasks of round 1" in out, out
    # the card's phrase says where within round 1 it stopped and on how many of the clusters
    from hermit_tui.core.publish.table import sequential_lines
    from hermit_tui.core.records.folders import list_evaluations

    chosen = {s.label: s for s in list_evaluations(config.parent / "runs/seq", include_archived=False)}
    rows: Any = [SimpleNamespace(label=x, adapter=x) for x in ("none", "good")]  # the card's rows: their names
    (line,) = sequential_lines(chosen, rows, ids)
    assert line.endswith(
        f": an improvement (after {n} of the 100 tasks of round 1, of at most 3 rounds; clustered by tpl: "
        f"{entry['clusters_looked']} of its {len(names)} clusters)"
    ), line
    # the CLI takes the combination (it refused it before)
    other, _ = clustered_project(tmp_path / "q")
    assert main(["eval", "--config", str(other), "--adapter", "none", "--adapter", "adapters/good",
                 "--stop-when-decided", "--cluster-by", "tpl"]) == 0  # fmt: skip
    err = capsys.readouterr().err
    assert "projection: good vs none: no projection for the clustered design" in err
    again = json.loads((other.parent / "runs/seq/eval/good/summary.json").read_text())["sequential"]
    assert again == entry  # the same draws, the same design: the same decision at the same look


def test_a_cancelled_clustered_launch_resumes_only_with_the_same_clusters(tmp_path):
    from hermit_tui.core.errors import InputError
    from hermit_tui.core.run import events as ev
    from hermit_tui.core.run.runner import EvalRun
    from hermit_tui.core.workspace.config import load_config

    config, _ = clustered_project(tmp_path / "p", boost=0.15)
    holder: dict = {}
    finished = [0]

    def sink(event):
        if isinstance(event, ev.AttemptFinished):
            finished[0] += 1
            if finished[0] == 50:
                holder["run"].cancel()

    cfg = load_config(config)
    holder["run"] = EvalRun(cfg, ["none", "adapters/good"], stop_when_decided=True, cluster_by="tpl", concurrency=2,
                            on_event=sink)  # fmt: skip
    holder["run"].run_sync()
    assert holder["run"].cancelled
    others: list[dict] = [{"cluster_by": "tpl2"}, {}]
    for other in others:
        with pytest.raises(InputError, match=r"clusters \(--cluster-by / --cluster-file\) sha256"):
            EvalRun(cfg, ["none", "adapters/good"], stop_when_decided=True, resume=True, **other)
    resumed = EvalRun(cfg, ["none", "adapters/good"], stop_when_decided=True, resume=True, cluster_by="tpl").run_sync()
    whole_config, _ = clustered_project(tmp_path / "q", boost=0.15)
    whole = EvalRun(load_config(whole_config), ["none", "adapters/good"], stop_when_decided=True,
                    cluster_by="tpl").run_sync()  # fmt: skip
    assert resumed["good"].sequential == whole["good"].sequential
    assert resumed["good"].attempts == whole["good"].attempts


@pytest.mark.parametrize("seed", range(3))
def test_the_boundary_plot_draws_the_boundaries_each_look_applied_and_the_last_looks_projection(seed):
    """The clustered design recomputes its boundaries at each look: the dashboard's plot draws, for the looks made,
    the critical value each of them applied, and for the others the last look's projection (the first look's
    projection differs once the information observed departs from the attempts' share)."""
    from hermit_tui.dashboard.widgets.boundary import SequentialView, series

    _, looks, *_ = run_looks(seed, rounds=4, shift=0.1)
    for k in range(1, len(looks) + 1):
        seen = tuple(looks[:k])
        drawn = series(SequentialView("a", "b", seen, 4, 0.05)).boundaries
        assert len(drawn) == len(looks[0].design_bounds)
        assert drawn[:k] == pytest.approx([lk.boundary_z for lk in seen], rel=1e-9)
        assert drawn[k:] == pytest.approx(list(seen[-1].design_bounds[k:]), rel=1e-9)
    assert looks[-1].design_bounds != looks[0].design_bounds  # the case the plot must follow


def test_the_card_of_a_clustered_launch_on_the_demo_names_the_clusters(demo_config, capsys):
    """The demo's 16 test tasks in their categories, 8 repeats at most: the clustered design decides after whole
    rounds; the card recomputes the decision from the records and says it was clustered, by what, on how many."""
    import json

    from hermit_tui.cli import main
    from hermit_tui.core.publish.plan import plan_publish
    from hermit_tui.core.workspace.config import load_config

    args = ["--adapter", "none", "--adapter", "final", "--stop-when-decided", "--cluster-by", "category", "--no-card"]
    assert main(["eval", "--config", str(demo_config), *args, "agent.params.latency_scale=0.01", "eval.repeats=8"]) == 0
    entry = json.loads(capsys.readouterr().out)["final"]["sequential"]
    rows = {json.loads(x)["id"]: json.loads(x) for x in (demo_config.parent / "tasks.jsonl").read_text().splitlines()}
    categories = {rows[t]["category"] for t in (demo_config.parent / "test.txt").read_text().split()}
    assert entry["decision"] == "improvement" and entry["clusters"] == len(categories)
    plan = plan_publish(load_config(demo_config, ["eval.repeats=8"]))
    assert not plan.refusals
    low, high = entry["interval"]
    est, (est_low, est_high) = entry["estimate"], entry["estimate_interval"]
    assert (
        f"final − none {est:+.3f} [{est_low:.3f}, {est_high:.3f}] (median-unbiased for the stopping rule; observed "
        f"{entry['mean_diff']:+.3f}; repeated CI [{low:.3f}, {high:.3f}]): an improvement (after {entry['rounds']} "
        f"of at most 8 rounds; clustered by category: {len(categories)} of its {len(categories)} clusters)"
    ) in plan.table
    assert "when clustered, whole clusters at each look and cluster-robust (CR2) standard errors" in plan.table
