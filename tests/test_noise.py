"""The noise budget (core/stats/noise.py): the variance split of a pair, the two levers (more tasks, more repeats),
the attempts and known cost of each, and where it is shown (report, JSON, CLI). Expected values are computed here
from the scores directly (a one-way split of the task differences by hand) or from the arithmetic of the levers."""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pytest
from demo_copies import repair_worktree

from hermit_tui.core.run.runner import EvalRun
from hermit_tui.core.stats.figures import pair_stats
from hermit_tui.core.stats.noise import FIXED_SPLIT_NOTE, JUDGE_NOTE, CostRate, noise_budget, variance_text
from hermit_tui.core.workspace.config import load_config


def records(scores: Mapping[str, Sequence[float]]) -> list[tuple[str, int, float]]:
    return [(tid, r, float(s)) for tid, ss in scores.items() for r, s in enumerate(ss)]


def pair_of(a: Mapping[str, Sequence[float]], b: Mapping[str, Sequence[float]]):
    ids = list(a)
    return pair_stats("a", records(a), "b", records(b), ids)


# 8 tasks x 3 repeats, pass/fail: the adapter helps some tasks a lot, others not at all; repeats disagree
A = {
    f"t{i}": s
    for i, s in enumerate([[0, 0, 1], [0, 0, 0], [1, 1, 0], [0, 1, 0], [0, 0, 0], [1, 0, 0], [0, 0, 1], [1, 1, 1]])
}
B = {
    f"t{i}": s
    for i, s in enumerate([[1, 1, 1], [0, 1, 0], [1, 1, 1], [1, 1, 0], [0, 0, 1], [1, 1, 1], [0, 1, 1], [1, 1, 1]])
}


# 8 tasks x 3 repeats where the tasks, not the repeats, carry most of the variance: helped a lot, or hurt a little
A2 = {f"t{i}": [0.0] * 3 if i < 4 else [1.0] * 3 for i in range(8)}
B2 = {f"t{i}": [1.0] * 3 if i < 4 else [1.0, 1.0, 0.0] for i in range(8)}


@pytest.mark.parametrize(("A", "B"), [(A, B), (A2, B2)], ids=["repeats-dominate", "tasks-dominate"])
def test_the_variance_split_matches_a_hand_computed_one_way_split(A, B):
    p = pair_of(A, B)
    diffs = np.array([np.mean(B[t]) - np.mean(A[t]) for t in A])
    total = diffs.var(ddof=1)
    # run-to-run part of a task's difference at k = 3: (s_a^2 + s_b^2) / 3, the per-task variances averaged
    within = np.mean([np.var(A[t], ddof=1) + np.var(B[t], ddof=1) for t in A])
    budget = noise_budget(p, 3, 3, CostRate())
    assert budget.total_var == pytest.approx(total, abs=1e-12)
    noise = min(within / 3, total)  # capped at the observed variance, as PairStats documents
    assert budget.noise_var == pytest.approx(noise, abs=1e-12)
    assert budget.within_var == pytest.approx(within * noise / (within / 3), abs=1e-12)  # rescaled with the cap
    assert budget.between_var == pytest.approx(total - noise, abs=1e-12)
    assert budget.between_share == pytest.approx((total - noise) / total, abs=1e-12)
    assert JUDGE_NOTE in variance_text(budget)


def test_a_between_task_variance_truncated_at_zero_is_not_printed_as_a_measured_zero():
    # repeats disagree (within variance 0.75 per attempt, 0.375 at 2 repeats) far more than the task differences
    # spread (0.5 or 0: variance 0.0714), so the run-to-run part takes all of it and the between part is cut at 0
    a = {f"t{i}": [0.0, 1.0] for i in range(8)}
    b = {f"t{i}": [1.0, 1.0] if i < 4 else [0.0, 1.0] for i in range(8)}
    budget = noise_budget(pair_of(a, b), 2, 2, CostRate())
    assert budget.total_var == pytest.approx(0.5 / 7, abs=1e-12)
    assert budget.between_var == 0.0
    text = variance_text(budget)
    assert "between tasks 0 (estimated at 0" in text and "between tasks 0.0000" not in text


def test_each_lever_adds_the_attempts_its_figure_implies_priced_at_the_known_rate():
    p = pair_of(A, B)
    delta = 0.1
    t, r = p.tasks_needed(delta), p.repeats_needed(delta)
    assert t is not None and t > 8
    # 40 attempts reported $0.02 each in all ($0.80), 8 reported nothing
    cost = CostRate(known_usd=0.5, known_attempts=25, unknown_attempts=3) + CostRate(
        known_usd=0.3, known_attempts=15, unknown_attempts=5
    )
    budget = noise_budget(p, 3, 3, cost, delta)
    assert budget.cost_per_attempt_usd == pytest.approx(0.8 / 40)
    assert budget.cost_unknown_attempts == 8
    assert budget.tasks.needed == t and budget.tasks.attempts_added == (t - 8) * 6
    assert budget.tasks.cost_added_usd == pytest.approx((t - 8) * 6 * 0.02)
    assert f"{t:,} paired tasks at 3 repeats (+{(t - 8) * 6:,} attempts, ≈ ${(t - 8) * 6 * 0.02:.2f})" in budget.advice
    assert "8 attempts reported no cost" in budget.advice and FIXED_SPLIT_NOTE in budget.advice
    if r is None:
        assert budget.repeats.needed is None and budget.repeats.cannot_suffice
        assert (
            "or more repeats would not do it: the between-task variance alone is too large for 8 tasks" in budget.advice
        )
    else:
        assert budget.repeats.needed == r and budget.repeats.attempts_added == 8 * 2 * max(r - 3, 0)


def test_unequal_repeats_price_a_new_task_at_both_selectors_repeats():
    p = pair_of(A, B)
    budget = noise_budget(p, 5, 2, CostRate(known_usd=1.0, known_attempts=10), 0.1)
    t = p.tasks_needed(0.1)
    assert t is not None and budget.tasks.attempts_added == (t - 8) * 7
    assert f"{t:,} paired tasks at 5 and 2 repeats" in budget.advice
    r = p.repeats_needed(0.1)
    if r is not None:
        assert budget.repeats.attempts_added == 8 * (max(r - 5, 0) + max(r - 2, 0))


def test_a_cost_nobody_reported_stays_unknown_never_zero():
    budget = noise_budget(pair_of(A, B), 3, 3, CostRate(unknown_attempts=48), 0.1)
    assert budget.cost_per_attempt_usd is None and budget.tasks.cost_added_usd is None
    assert "cost unknown" in budget.advice and "$0" not in budget.advice
    assert ". No attempt reported a cost, so the cost stays unknown" in budget.advice  # a sentence of its own


def test_a_large_difference_is_already_within_reach():
    p = pair_of(A, B)
    budget = noise_budget(p, 3, 3, CostRate(), 0.55)
    t = p.tasks_needed(0.55)
    assert t is not None and t <= 8
    assert budget.tasks.enough_already and budget.tasks.attempts_added == 0
    assert f"{t} paired tasks would do: 8 already" in budget.advice
    assert FIXED_SPLIT_NOTE not in budget.advice  # no new tasks asked for


def test_a_difference_beyond_the_room_is_named_not_projected():
    # a's mean is 9 / 24 = 0.375: a pass/fail b can be at most 0.625 higher, whatever the tasks or repeats
    p = pair_of(A, B)
    budget = noise_budget(p, 3, 3, CostRate(), 0.9)
    assert budget.tasks.needed is None and budget.repeats.needed is None
    assert budget.tasks.why_not == budget.repeats.why_not
    why = budget.tasks.why_not or ""
    assert "more than the scores allow" in why and "at most 0.625" in why


def test_no_spread_and_one_repeat_say_what_cannot_be_projected():
    same = {f"t{i}": [0.0] for i in range(6)}
    up = {f"t{i}": [1.0] for i in range(6)}
    budget = noise_budget(pair_of(same, up), 1, 1, CostRate())
    assert budget.tasks.needed is None and budget.tasks.why_not == "no spread to project from"
    assert budget.repeats.needed is None
    mixed = {f"t{i}": [float(i % 2)] for i in range(6)}
    one = noise_budget(pair_of(same, mixed), 1, 1, CostRate())
    assert one.tasks.needed is not None
    assert one.repeats.why_not == "the run-to-run variance needs 2+ repeats per task"
    assert "not split" in variance_text(one)


@pytest.mark.parametrize("delta", [0, -0.1, math.nan, math.inf])
def test_a_difference_that_is_not_above_zero_is_refused(delta):
    with pytest.raises(ValueError):
        noise_budget(pair_of(A, B), 3, 3, CostRate(), delta)


@pytest.fixture(scope="module")
def demo(demo_template, tmp_path_factory) -> Path:
    """The demo with none, root and final evaluated (one repeat, so some pair may stay unclear)."""
    dest = tmp_path_factory.mktemp("noise") / "demo"
    shutil.copytree(demo_template, dest, symlinks=True)
    repair_worktree(demo_template, dest)
    EvalRun(
        load_config(dest / "run.yaml", ["eval.repeats=2", "agent.params.latency_scale=0"]),
        ["none", "root", "final"],
        update_card=False,
    ).run_sync()
    return dest / "run.yaml"


def test_the_report_carries_a_budget_per_pair_and_the_advice_under_an_unclear_verdict(demo, capsys):
    from hermit_tui.cli import main

    assert main(["report", "--config", str(demo), "--format", "json", "--noise-at", "0.1"]) == 0
    report = json.loads(capsys.readouterr().out)
    pairs = {(p["a"], p["b"]): p for p in report["pairs"] if p.get("sequential") is None}
    assert {(n["a"], n["b"]) for n in report["noise"]} == set(pairs)
    by = {s["label"]: s for s in report["selectors"]}
    for n in report["noise"]:
        p = pairs[(n["a"], n["b"])]
        assert n["delta"] == 0.1 and n["total_var"] == pytest.approx(p["sd_diff"] ** 2)
        known = sum(by[x]["known_cost_usd"] for x in (n["a"], n["b"]))
        counted = sum(by[x]["stats"]["n_attempts"] - by[x]["unknown_cost_attempts"] for x in (n["a"], n["b"]))
        assert n["cost_per_attempt_usd"] == pytest.approx(known / counted)
    assert main(["report", "--config", str(demo), "--noise-at", "0.1"]) == 0
    md = capsys.readouterr().out
    assert md.count("\nNoise: variance of a task's difference") == len(report["noise"])
    unclear = [p for p in pairs.values() if p["decision"] == "unclear"]
    assert md.count("**What it would take:** To detect a difference of 0.1") == len(unclear)


@pytest.mark.parametrize("value", ["0", "-0.2", "nan"])
def test_report_refuses_a_noise_difference_not_above_zero_in_one_line(demo, capsys, value):
    from hermit_tui.cli import main

    assert main(["report", "--config", str(demo), "--noise-at", value]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--noise-at must be a difference above 0" in err


def test_clustered_pairs_say_the_need_is_in_clusters():
    from hermit_tui.core.stats.clusters import Clustering

    clusters = Clustering(by="template", of={f"t{i}": f"c{i // 2}" for i in range(8)})
    p = pair_stats("a", records(A), "b", records(B), list(A), clusters=clusters)
    assert p.n_clusters == 4
    budget = noise_budget(p, 3, 3, CostRate(), 0.1)
    assert budget.tasks.needed is None and budget.repeats.needed is None
    assert "clustered by template: the need is in clusters" in budget.advice


# ---------------------------------------------------------------------------------------------------- before a launch


def test_the_round_projection_is_the_first_round_whose_boundary_the_difference_clears():
    from scipy.stats import norm

    from hermit_tui.core.stats.noise import round_projection
    from hermit_tui.core.stats.sequential.schedule import round_boundaries

    p = pair_of(A2, B2)
    assert p.between_var is not None and p.within_var is not None
    spend, rounds, tasks = 0.045, 6, 40
    c = round_boundaries(rounds, spend)

    def clears(r: int, delta: float) -> bool:  # (c_r + z_0.8) x sd of the mean difference after r repeats each
        sd = math.sqrt((p.between_var + p.within_var / r) / tasks)
        return (c[r - 1] + norm.ppf(0.8)) * sd <= delta

    for delta in (0.2, 0.3, 0.5):
        proj = round_projection(p, tasks, rounds, spend, CostRate(known_usd=1.0, known_attempts=100), delta)
        assert proj is not None
        expected = next((r for r in range(1, rounds + 1) if clears(r, delta)), None)
        assert proj.round == expected
        assert proj.max_attempts == 2 * tasks * rounds and proj.max_cost_usd == pytest.approx(2 * tasks * rounds / 100)
        if expected is not None:
            assert proj.attempts == 2 * tasks * expected
            assert f"be decided by about round {expected} of {rounds}" in proj.text
        else:
            assert "not be decided within the 6 rounds" in proj.text
    one = pair_of({k: v[:1] for k, v in A2.items()}, {k: v[:1] for k, v in B2.items()})
    assert round_projection(one, tasks, rounds, spend, CostRate()) is None  # one repeat: no split to project from


def test_the_projection_of_a_design_looking_within_round_1_names_the_batch():
    """200 tasks, 4 looks in round 1 (50, 100, 150, 200 tasks): the first look whose boundary (c + z_0.8) x
    sqrt((between + within / r) / n) clears the difference, by hand over the look schedule."""
    from scipy.stats import norm

    from hermit_tui.core.stats.noise import round_projection
    from hermit_tui.core.stats.sequential.schedule import look_boundaries

    p = pair_of(A2, B2)
    assert p.between_var is not None and p.within_var is not None
    spend, rounds, tasks = 0.045, 4, 200
    c = look_boundaries(tasks, rounds, 4, spend, "power")
    schedule = [(1, 50), (1, 100), (1, 150), (1, 200), (2, 200), (3, 200), (4, 200)]
    seen = set()
    for delta in (0.1, 0.2, 0.3, 0.6):
        proj = round_projection(p, tasks, rounds, spend, CostRate(), delta, batches=4)
        assert proj is not None
        hit = next(
            (
                (r, n)
                for (r, n), cj in zip(schedule, c)
                if (cj + norm.ppf(0.8)) * math.sqrt((p.between_var + p.within_var / r) / n) <= delta
            ),
            None,
        )
        if hit is None:
            assert proj.round is None and "not be decided within the 4 rounds" in proj.text
            continue
        r, n = hit
        seen.add(n < tasks)
        assert proj.round == r and proj.attempts == 2 * (tasks * (r - 1) + n)
        if r == 1 and n < tasks:
            assert f"be decided after about {n} of the 200 tasks of round 1 (of 4)" in proj.text
    assert True in seen  # some difference is projected to stop within round 1


def test_a_sequential_launch_prints_its_projection_first(tmp_path, demo_template, capsys):
    from hermit_tui.cli import main

    shutil.copytree(demo_template, tmp_path / "demo", symlinks=True)
    repair_worktree(demo_template, tmp_path / "demo")
    config = str(tmp_path / "demo" / "run.yaml")
    fast = "agent.params.latency_scale=0"
    args = ["eval", "--config", config, "--adapter", "none", "--adapter", "final", fast]
    assert main([*args, "--stop-when-decided"]) == 0
    first = capsys.readouterr().err
    no_earlier = "no earlier evaluation of both to project from; all 3 rounds: 96 attempts of the pair"  # 16 x 2 x 3
    assert f"projection: final vs none: {no_earlier}" in first
    # with those evaluations on disk (3 repeats each), the next launch projects from them
    assert main([*args, "--stop-when-decided"]) == 0
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("projection: final vs none: a true difference of 0.05")]
    assert len(lines) == 1 and "(projected from the earlier evaluations' variance" in lines[0]


def test_repeats_that_cannot_reach_a_small_difference_say_the_tasks_are_the_limit():
    # 8 pass/fail tasks: however many repeats, the interval on 8 tasks stays wider than 0.05 (its floors are per task)
    p = pair_of(A, B)
    assert p.power_model is not None
    budget = noise_budget(p, 3, 3, CostRate(), 0.05)
    assert budget.repeats.needed is None and budget.repeats.cannot_suffice
    at_most = budget.repeats.power_at_most
    assert at_most is not None and 0 <= at_most < 0.8
    assert at_most == p.power_model.power(p.power_model.side * 0.05, repeats=1024)  # the figure the lever searched
    assert budget.repeats.why_not == (
        f"even 1,024 repeats per task give {at_most:.0%} power on 8 tasks: the interval's width there comes from how "
        "few tasks there are, not from the run-to-run noise"
    )
    assert f"or more repeats would not do it: even 1,024 repeats per task give {at_most:.0%} power" in budget.advice
    assert budget.tasks.needed is not None and budget.tasks.needed > 8
