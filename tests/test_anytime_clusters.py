"""The anytime-valid sequence with clusters above the task (issue 25, items 2, 4, 5): the test inversion of
core.stats.sequential.anytime.clustered_confidence_sequence against a brute grid of values m, each its own
``eb_confidence_sequence`` of ``z(m) = (n / K) (dbar - m)`` in ``[-1 - m, 1 - m]``; the reduction to the unclustered
sequence with clusters of one task; the futility rule's clearest continuation; the launch's stream of whole
clusters, its replay and its continuations; and one clustered ``eval --stop-when-decided --anytime`` end to end
(tests/sequential_project.py, a ``group`` field added to its rows)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sequential_project import build

from hermit_tui.cli import main
from hermit_tui.core.errors import InputError
from hermit_tui.core.run.runner import EvalRun
from hermit_tui.core.stats.sequential.anytime import (
    clustered_confidence_sequence,
    eb_confidence_sequence,
    paired_confidence_sequence,
)
from hermit_tui.core.stats.sequential.anytime_plan import AnytimePlan, with_clusters
from hermit_tui.core.stats.sequential.anytime_text import small_split_note
from hermit_tui.core.stats.sequential.anytime_tracker import AnytimeTracker, replay
from hermit_tui.core.workspace.config import load_config

GRID = np.linspace(-1, 1, 2001)


def brute(dbar, sizes, alpha=0.05, intersect=True):
    """(lower, upper) after each cluster: the smallest and largest m of GRID whose own sequence of z(m) (the
    library's unclustered function, with the range [-1 - m, 1 - m]) holds 0; and whether each time's accepted m
    form one run of the grid."""
    dbar, sizes = np.asarray(dbar, float), np.asarray(sizes, float)
    w = sizes / sizes.max()
    acc = []
    for m in GRID:
        low, high = eb_confidence_sequence(w * (dbar - m), alpha, lo=-1 - m, hi=1 - m, intersect=intersect)
        acc.append((low <= 0) & (0 <= high))
    a = np.array(acc)  # (grid, time)
    one_run = all(np.count_nonzero(np.diff(np.r_[0, col.astype(int), 0])) == 2 for col in a.T)
    return np.array([GRID[c].min() for c in a.T]), np.array([GRID[c].max() for c in a.T]), one_run


def streams(seed):
    rng = np.random.default_rng(seed)
    for _ in range(4):
        t = int(rng.integers(8, 40))
        sizes = rng.integers(1, int(rng.integers(2, 16)), t)
        dbar = np.clip(rng.normal(rng.uniform(-0.6, 0.6), rng.uniform(0.1, 0.8), t), -1, 1).round(3)
        yield dbar, sizes


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_inversion_is_the_grid_of_values_whose_own_sequence_holds_zero(seed):
    for dbar, sizes in streams(seed):
        low, high = clustered_confidence_sequence(dbar, sizes, int(sizes.max()))
        b_low, b_high, _ = brute(dbar, sizes)
        step = GRID[1] - GRID[0]
        assert np.all(np.abs(low - b_low) <= step + 1e-12) and np.all(np.abs(high - b_high) <= step + 1e-12)
        # each time's set (not intersected) is one interval of m: what the bisection relies on
        assert brute(dbar, sizes, intersect=False)[2]
        # at every time it holds the task-weighted mean of its clusters, the estimand, unless it is very wide
        ratio = np.cumsum(sizes * dbar) / np.cumsum(sizes)
        assert np.mean((low <= ratio) & (ratio <= high)) > 0.9


def test_with_clusters_of_one_task_it_is_the_unclustered_sequence():
    rng = np.random.default_rng(4)
    for d in (rng.choice([-1.0, 0.0, 1.0], 150, p=[0.2, 0.5, 0.3]), rng.uniform(-1, 1, 80).round(2), np.ones(30)):
        for alpha in (0.05, 0.05 / 3):
            low, high = paired_confidence_sequence(d, alpha)
            c_low, c_high = clustered_confidence_sequence(d, np.ones(len(d)), 1, alpha)
            assert np.max(np.abs(c_low - low)) < 1e-9 and np.max(np.abs(c_high - high)) < 1e-9


def test_the_clearest_continuation_is_plus_or_minus_one_on_every_cluster_left():
    """Where +1 (and -1) on every remaining cluster, of its known size, leaves 0 inside the sequence at every later
    cluster, no other continuation takes it out: 3,000 seeded continuations, most near +-1, never do."""
    from hermit_tui.core.stats.sequential.anytime import _covers

    rng = np.random.default_rng(9)
    checked = 0
    for _ in range(30):
        t = int(rng.integers(12, 30))
        sizes = rng.integers(1, 10, t)
        w = sizes / sizes.max()
        done = int(rng.integers(3, t - 2))
        past = np.clip(rng.normal(0, 0.5, done), -1, 1)

        def rejects(rest, past=past, w=w, done=done):
            return not _covers(np.concatenate([past, rest]), w, np.zeros(1), 0.05)[0, done:].all()

        if rejects(np.ones(t - done)) or rejects(-np.ones(t - done)):
            continue
        checked += 1
        tries = np.concatenate(
            [
                rng.uniform(-1, 1, (50, t - done)),
                1 - rng.exponential(0.05, (25, t - done)),
                -1 + rng.exponential(0.05, (25, t - done)),
            ]
        ).clip(-1, 1)
        acc = _covers(np.concatenate([np.broadcast_to(past, (100, done)), tries], axis=1), w, np.zeros((100, 1)), 0.05)
        assert acc[:, 0, done:].all()
    assert checked >= 10


def cluster_records(rng, clusters):
    ids: list[str] = []
    group: dict[str, str] = {}
    for c, n in enumerate(clusters):
        for j in range(n):
            tid = f"task-{c}-{j}"
            ids.append(tid)
            group[tid] = f"g{c}"
    scores = {lab: rng.random((len(ids), 2)).round(2) for lab in ("a", "b")}
    boost = {f"g{c}": rng.uniform(0, 0.6) for c in range(len(clusters))}  # a shift per cluster
    for i, t in enumerate(ids):
        scores["b"][i] = np.clip(scores["b"][i] + boost[group[t]], 0, 1)
    records = {
        lab: {(t, r + 1): Rec(float(m[i, r])) for i, t in enumerate(ids) for r in range(2)} for lab, m in scores.items()
    }
    return ids, group, scores, records


class Rec:
    def __init__(self, score: float):
        self.judge = type("J", (), {"score": score})()


def sha(x):
    return hashlib.sha256(x.encode()).hexdigest()


def test_the_stream_takes_whole_clusters_and_a_replay_decides_as_the_launch():
    rng = np.random.default_rng(12)
    sizes = [1, 5, 2, 7, 3, 3, 1, 6, 4, 2, 5, 1, 2, 3, 7, 2]
    ids, group, scores, records = cluster_records(rng, sizes)
    plan = with_clusters(
        AnytimePlan(baseline="a", candidates=["b"], max_rounds=2, tasks_per_look=4), "group", group, ids
    )
    tracker = AnytimeTracker(plan, ids)
    keys = sorted({group[t] for t in ids}, key=lambda k: (sha(k), k))
    want = [t for k in keys for t in sorted((t for t in ids if group[t] == k), key=lambda t: (sha(t), t))]
    assert tracker.task_ids == want and plan.cluster_cap == 7
    while not tracker.finished:
        tracker.check(records)
    looks = tracker.pairs["b"].looks
    bounds = set(np.cumsum([sizes[int(k[1:])] for k in keys]).tolist())
    ends = [int(look.tasks or 0) for look in looks]
    assert set(ends) <= bounds  # a look never splits a cluster
    assert all(b - a >= 4 for a, b in zip([0, *ends], ends[:-1]))  # each at least a batch of tasks
    # its interval: the clustered sequence of the clusters' mean differences, computed here
    pos = {t: i for i, t in enumerate(ids)}
    d = {t: scores["b"][pos[t]].mean() - scores["a"][pos[t]].mean() for t in ids}
    n = looks[-1].tasks
    seen = want[:n]
    dbar = [np.mean([d[t] for t in seen if group[t] == k]) for k in keys if any(group[t] == k for t in seen)]
    csize = [sum(1 for t in seen if group[t] == k) for k in keys if any(group[t] == k for t in seen)]
    low, high = clustered_confidence_sequence(dbar, csize, 7)
    assert (looks[-1].ci_low, looks[-1].ci_high) == pytest.approx((low[-1], high[-1]), abs=1e-12)
    assert looks[-1].mean_diff == pytest.approx(np.mean([d[t] for t in seen]))
    assert "clustered by group" in looks[-1].method
    # the recorded entry replays to the same decision and sequence from the records alone
    entry = tracker.entry("b")
    extra = entry.model_extra or {}
    assert extra["cluster_cap"] == 7 and sum(extra["cluster_sizes"]) == len(ids)
    again = replay(entry, records["a"], records["b"], "b")
    assert again is not None
    assert (again[-1].decision, again[-1].ci_low, again[-1].ci_high) == (
        looks[-1].decision,
        pytest.approx(looks[-1].ci_low, abs=1e-12),
        pytest.approx(looks[-1].ci_high, abs=1e-12),
    )
    assert again[-1].method == looks[-1].method


def test_a_continuation_refuses_tasks_joining_a_cluster_looked_at_or_a_cluster_larger_than_k():
    group = {f"t{i}": f"g{i % 4}" for i in range(12)}  # 4 clusters of 3
    plan = with_clusters(AnytimePlan(baseline="a", candidates=["b"], max_rounds=1), "group", group, list(group))
    stream = plan.stream(list(group))
    entry_like = type("E", (), {"cluster_by": "group", "cluster_cap": 3, "cluster_sizes": [3, 3, 3, 3]})()
    looked = stream[:6]  # two whole clusters
    grown = dict(group, t12="g9", t13="g9", t14="g8")
    again = with_clusters(AnytimePlan(baseline="a", candidates=["b"], max_rounds=1), "group", grown, list(grown))
    again.take_recorded(looked, entry_like)
    assert again.stream(list(grown))[:6] == looked  # new clusters continue the stream
    for extra, message in (
        ({"t12": group[looked[0]]}, "joins cluster"),
        ({"t12": "g7", "t13": "g7", "t14": "g7", "t15": "g7"}, "more than the 3"),
    ):
        bad = dict(group, **extra)
        plan2 = with_clusters(AnytimePlan(baseline="a", candidates=["b"], max_rounds=1), "group", bad, list(bad))
        plan2.take_recorded(looked, entry_like)
        with pytest.raises(ValueError, match=message):
            plan2.stream(list(bad))
    # other clusters of the tasks looked at than were recorded
    moved = dict(group, **{looked[0]: "elsewhere"})
    plan3 = with_clusters(AnytimePlan(baseline="a", candidates=["b"], max_rounds=1), "group", moved, list(moved))
    with pytest.raises(ValueError, match="not the ones recorded"):
        plan3.take_recorded(looked, entry_like)
    # another field, or none
    plan4 = with_clusters(AnytimePlan(baseline="a", candidates=["b"], max_rounds=1), "topic", group, list(group))
    with pytest.raises(ValueError, match="clustered by group, not topic"):
        plan4.take_recorded(looked, entry_like)
    with pytest.raises(ValueError, match="the recorded sequence was clustered"):
        AnytimePlan(baseline="a", candidates=["b"], max_rounds=1).take_recorded(looked, entry_like)


def test_the_small_split_note_counts_clusters():
    assert "in 5 clusters cannot decide" in (small_split_note(200, clusters=[40] * 5) or "")
    note = small_split_note(200, clusters=[5] * 20 + [10] * 10)  # they weigh 20 / 2 + 10 = 20 clusters of 10
    assert note is not None and "in 30 clusters rarely decides" in note and "weigh as 20 full ones" in note
    assert small_split_note(400, clusters=[2] * 200) is None  # 200 full weights
    assert small_split_note(400, clusters=[1] * 190 + [3] * 70) is None  # 260 clusters, 190 / 3 + 70 = 133
    assert small_split_note(600, clusters=[3] + [1] * 290) is not None  # 291 clusters, weigh 98


def grouped(project: Path, clusters: int) -> None:
    rows = [json.loads(x) for x in (project.parent / "tasks.jsonl").read_text().splitlines()]
    for i, r in enumerate(rows):
        r["group"] = f"g{(i * 7) % clusters}"
    (project.parent / "tasks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_eval_with_clusters_stops_on_whole_clusters_and_report_and_gate_replay_it(tmp_path, capsys):
    project = build(tmp_path / "p", tasks=120, repeats=2, seed=5, adapters={"good": 0.5})
    grouped(project, 40)
    both = ["--adapter", "none", "--adapter", "adapters/good"]
    code = main(["eval", "--config", str(project), *both, "--stop-when-decided", "--anytime", "--cluster-by", "group"])
    err = capsys.readouterr().err
    assert code == 0 and "in 40 clusters rarely decides" in err and "weigh as 40 full ones" in err
    run = project.parent / "runs" / "seq" / "eval"
    entry = json.loads((run / "good" / "summary.json").read_text())["sequential"]
    assert entry["decision"] == "improvement" and entry["cluster_by"] == "group" and entry["cluster_cap"] == 3
    order, n = entry["order"], entry["tasks_looked"]
    rows = {json.loads(x)["id"]: json.loads(x) for x in (project.parent / "tasks.jsonl").read_text().splitlines()}
    keys = [rows[t]["group"] for t in order]
    assert len(set(keys)) * 3 == n and all(keys.count(k) == 3 for k in keys)  # whole clusters, each once
    assert [k for i, k in enumerate(keys) if i == 0 or keys[i - 1] != k] == sorted(set(keys), key=sha)
    at = {
        lab: {
            (r["id"], r["repeat"]): r["judge"]["score"]
            for r in map(json.loads, (run / lab / "results.jsonl").read_text().splitlines())
        }
        for lab in ("none", "good")
    }
    d = [np.mean([at["good"][(t, k)] - at["none"][(t, k)] for k in (1, 2)]) for t in order]
    dbar = np.array(d).reshape(-1, 3).mean(axis=1)
    low, high = clustered_confidence_sequence(dbar, np.full(len(dbar), 3), 3)
    assert entry["interval"] == pytest.approx([low[-1], high[-1]], abs=1e-12) and low[-1] > 0 >= low[-2]
    assert main(["report", "--config", str(project), "--format", "json"]) == 0
    pair = {(p["a"], p["b"]): p for p in json.loads(capsys.readouterr().out)["pairs"]}[("none", "good")]
    assert pair["decision"] == "improvement" and "clustered by group" in pair["method"]
    assert (pair["ci_low"], pair["ci_high"]) == pytest.approx((low[-1], high[-1]), abs=1e-12)
    assert main(["report", "--config", str(project)]) == 0
    assert "anytime-valid stop-when-decided launch with clusters (whole clusters" in capsys.readouterr().out
    assert main(["gate", "--config", str(project), "--baseline", "none", "--candidate", "good"]) == 0
    assert "clustered by group" in capsys.readouterr().out
    # an anytime-valid launch does not resume as the group-sequential design (clustered or not)
    code = main(["eval", "--config", str(project), *both, "--stop-when-decided", "--cluster-by", "group", "--resume"])
    assert code == 2


def test_a_clustered_resume_refuses_a_task_added_to_a_cluster_looked_at(tmp_path, capsys):
    project = build(tmp_path / "p", tasks=40, repeats=1, seed=3, adapters={"clone": 0.0})
    grouped(project, 10)
    ids = [f"t{i:03d}" for i in range(40)]
    (project.parent / "test.txt").write_text("\n".join(ids[:30]) + "\n")
    both = ["none", "adapters/clone"]
    kw: dict[str, Any] = dict(stop_when_decided=True, anytime=True, futility=False, cluster_by="group")
    EvalRun(load_config(project), both, **kw).run_sync()
    (project.parent / "test.txt").write_text("\n".join(ids) + "\n")  # t030..t039 join clusters already looked at
    with pytest.raises(InputError, match="joins cluster"):
        EvalRun(load_config(project), both, resume=True, **kw)
    args = ["eval", "--config", str(project), "--adapter", "none", "--adapter", "adapters/clone", "--resume"]
    code = main([*args, "--stop-when-decided", "--anytime", "--no-futility", "--cluster-by", "group"])
    err = capsys.readouterr().err
    assert code == 2 and "joins cluster" in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_on_the_demo_the_card_names_the_clusters(demo_config, capsys):
    # the demo's 16 test tasks in their categories: too few clusters to decide (the note says so beforehand);
    # without the futility rule every cluster is looked at, and the card names the clusters beside the sequence
    from hermit_tui.core.publish.plan import plan_publish

    args = ["--adapter", "none", "--adapter", "final", "--stop-when-decided", "--anytime", "--no-futility", "--no-card"]
    extra = ["--cluster-by", "category", "agent.params.latency_scale=0.01", "eval.repeats=2"]
    code = main(["eval", "--config", str(demo_config), *args, *extra])
    captured = capsys.readouterr()
    assert code == 0 and "clusters cannot decide" in captured.err
    seq = json.loads(captured.out)["final"]["sequential"]
    rows = {json.loads(x)["id"]: json.loads(x) for x in (demo_config.parent / "tasks.jsonl").read_text().splitlines()}
    ids = (demo_config.parent / "test.txt").read_text().split()
    sizes: dict[str, int] = {}
    for t in ids:
        sizes[rows[t]["category"]] = sizes.get(rows[t]["category"], 0) + 1
    keys = sorted(sizes, key=sha)
    assert seq["cluster_sizes"] == [sizes[k] for k in keys] and seq["cluster_cap"] == max(sizes.values())
    assert [rows[t]["category"] for t in seq["order"]] == [k for k in keys for _ in range(sizes[k])]
    plan = plan_publish(load_config(demo_config, ["eval.repeats=2"]))
    assert not plan.refusals
    assert "clustered by category: each cluster one observation" in plan.table
    assert "cluster by cluster when clustered" in plan.table


def test_a_clustered_stream_continues_with_new_clusters_and_refuses_one_larger_than_k(tmp_path):
    project = build(tmp_path / "p", tasks=60, repeats=1, seed=4, adapters={"good": 0.2})
    rows = [json.loads(x) for x in (project.parent / "tasks.jsonl").read_text().splitlines()]
    for i, r in enumerate(rows):  # 10 clusters of 3, then (added later) 4 new ones of 3, and one of 18
        r["group"] = f"g{i // 3}" if i < 30 else (f"n{(i - 30) // 3}" if i < 42 else "big")
    (project.parent / "tasks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    ids = [r["id"] for r in rows]
    (project.parent / "test.txt").write_text("\n".join(ids[:30]) + "\n")
    both = ["none", "adapters/good"]
    kw: dict[str, Any] = dict(stop_when_decided=True, anytime=True, futility=False, cluster_by="group")
    first = EvalRun(load_config(project), both, **kw).run_sync()["good"].sequential
    assert first is not None and first.decision == "undecided" and first.tasks_looked == 30
    (project.parent / "test.txt").write_text("\n".join(ids[:42]) + "\n")
    more = EvalRun(load_config(project), both, resume=True, **kw).run_sync()["good"].sequential
    assert more is not None
    extra = more.model_extra or {}
    group = {r["id"]: r["group"] for r in rows}
    new = sorted({group[t] for t in ids[30:42]}, key=sha)
    want = list((first.model_extra or {})["order"]) + [
        t for k in new for t in sorted((t for t in ids[30:42] if group[t] == k), key=sha)
    ]
    assert extra["order"] == want and extra["cluster_cap"] == 3 and extra["cluster_sizes"] == [3] * 14
    run = project.parent / "runs" / "seq" / "eval"
    at = {
        lab: {
            r["id"]: r["judge"]["score"]
            for r in map(json.loads, (run / lab / "results.jsonl").read_text().split("\n")[:-1])
        }
        for lab in ("none", "good")
    }
    dbar = np.array([at["good"][t] - at["none"][t] for t in want]).reshape(-1, 3).mean(axis=1)
    low, high = clustered_confidence_sequence(dbar, [3] * 14, 3)
    assert more.interval == pytest.approx((low[-1], high[-1]), abs=1e-12)  # one stream, not a restart
    (project.parent / "test.txt").write_text("\n".join(ids) + "\n")  # a new cluster of 18 tasks: K is 3
    with pytest.raises(InputError, match="has 18 tasks, more than the 3"):
        EvalRun(load_config(project), both, resume=True, **kw)
