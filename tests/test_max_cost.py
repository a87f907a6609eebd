"""Cost control: the projection at completion, and --max-cost, which stops starting attempts once a launch's cost
reaches it, marks the summaries incomplete with the reason, and lets --resume finish the job. An unknown cost is
never counted as $0."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hermit_tui.cli import main
from hermit_tui.core.errors import InputError
from hermit_tui.core.present import cost_phrase, money, projected_cost
from hermit_tui.core.run import events as ev
from hermit_tui.core.run.costs import CostCap, check_max_cost
from hermit_tui.core.run.runner import EvalRun
from hermit_tui.core.workspace.config import load_config

FAST = ["agent.params.latency_scale=0.01"]


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# -- the figures -------------------------------------------------------------------------------------------------
def test_projection_and_the_live_phrase():
    assert projected_cost(0.84, 4, 10) == pytest.approx(2.10)
    assert projected_cost(1.0, 0, 10) is None
    assert cost_phrase(0.84, 3, 4, 10, running=True) == "$0.8400 + 3 unknown so far · ~$2.10 at the end"
    assert cost_phrase(2.5, 0, 10, 10, running=False) == "$2.50"
    assert cost_phrase(0.0, 0, 0, 10, running=True) == "no attempt finished yet"
    # every attempt so far of unknown cost: never "$0"
    assert cost_phrase(0.0, 4, 4, 10, running=True) == "unknown (4 attempts) so far"
    assert money(12345.678) == "$12,345.68" and money(0.00125) == "$0.0013"


def test_the_cap_counts_unknown_costs_at_the_mean_known_cost():
    cap = CostCap(max_usd=1.0)
    cap.add(None)
    assert cap.blind and cap.spent == 0.0 and not cap.reached  # nothing known yet: cannot be estimated
    cap.add(0.2)
    cap.add(0.3)
    # 0.5 known over 2 attempts: the unknown one counts 0.25
    assert not cap.blind and cap.spent == pytest.approx(0.75) and not cap.reached
    cap.add(0.25)
    # 0.75 known over 3 attempts: the unknown one counts 0.25, and 1.00 reaches the cap
    assert cap.spent == pytest.approx(1.0) and cap.reached
    assert cap.reason() == "max cost $1.00 reached: $0.7500 known + ~$0.2500 estimated for 1 of unknown cost"
    for bad in (0, -1, float("nan"), float("inf"), "5", True):
        with pytest.raises(ValueError):
            check_max_cost(bad)
    assert check_max_cost(None) is None and check_max_cost(2) == 2.0


# -- a launch --------------------------------------------------------------------------------------------------
def reached_after(costs: list[float | None], cap: float) -> int | None:
    """How many attempts, in finish order, it takes for the cost to reach ``cap`` when an unknown cost counts at
    the mean known cost (recomputed here, independently of hermit_tui.core.run.costs)."""
    known, unknown = 0.0, 0
    n_known = 0
    for i, cost in enumerate(costs):
        if cost is None:
            unknown += 1
        else:
            known += cost
            n_known += 1
        if known + (unknown * known / n_known if n_known else 0.0) >= cap:
            return i + 1
    return None


def test_max_cost_stops_a_launch_and_resume_finishes_it_with_nothing_run_twice(demo_config, capsys):
    cap = 0.01
    code = main(
        [
            "eval",
            "--config",
            str(demo_config),
            "--adapter",
            "none",
            "--adapter",
            "root",
            "--concurrency",
            "1",
            "--max-cost",
            str(cap),
            "--no-card",
            *FAST,
        ]
    )
    captured = capsys.readouterr()
    assert code == 1
    assert "stopped: max cost $0.0100 reached" in captured.err and "--resume" in captured.err
    config = load_config(demo_config, FAST)
    eval_dir = config.run_dir / "eval"
    first = {label: rows(eval_dir / label / "results.jsonl") for label in ("none", "root")}
    done = sum(len(v) for v in first.values())
    expected = 2 * 16 * 3
    # one at a time, attempts run repeat by repeat, task by task, none then root: replay that order
    test_ids = [
        t.strip()
        for t in (demo_config.parent / "test.txt").read_text().splitlines()
        if t.strip() and not t.startswith("#")
    ]
    by_key = {(label, r["id"], r["repeat"]): r for label, v in first.items() for r in v}
    order = [(label, t, rep) for rep in (1, 2, 3) for t in test_ids for label in ("none", "root")]
    assert set(order[:done]) == set(by_key)  # exactly the first attempts of the order ran
    reached = reached_after([by_key[k]["cost_usd"] for k in order[:done]], cap)
    assert reached is not None and done == reached < expected
    for label in ("none", "root"):
        summary = json.loads((eval_dir / label / "summary.json").read_text())
        assert summary["complete"] is False and summary["max_cost_usd"] == cap
        assert summary["stop_reason"].startswith("max cost $0.0100 reached")
        assert "cancelled" not in summary and summary["attempts"] == len(first[label])
    printed = json.loads(captured.out)
    assert printed["none"]["stop_reason"] == printed["root"]["stop_reason"]

    # --resume without a cap: only the missing attempts run, none twice
    started: list[tuple[str, str, int]] = []
    resumed = EvalRun(
        config,
        ["none", "root"],
        resume=True,
        update_card=False,
        on_event=lambda e: started.append((e.label, e.task_id, e.repeat)) if isinstance(e, ev.AttemptStarted) else None,
    )
    summaries = resumed.run_sync()
    assert not set(started) & set(by_key) and sorted(started) == sorted(order[done:])
    for label in ("none", "root"):
        after = rows(eval_dir / label / "results.jsonl")
        keys = [(r["id"], r["repeat"]) for r in after]
        assert len(keys) == len(set(keys)) == 48
        kept = {(r["id"], r["repeat"]): r for r in after}
        for old in first[label]:
            assert kept[(old["id"], old["repeat"])] == old
        summary = json.loads((eval_dir / label / "summary.json").read_text())
        assert summary["complete"] is True and "stop_reason" not in summary and "max_cost_usd" not in summary
        assert summaries[label].attempts == 48


def test_attempts_in_flight_finish_and_none_starts_after_the_cap(demo_config):
    config = load_config(demo_config, ["agent.params.latency_scale=0.05"])
    seen: list[ev.Event] = []
    run = EvalRun(
        config, ["none", "root", "final"], concurrency=4, max_cost=0.02, update_card=False, on_event=seen.append
    )
    run.run_sync()
    costs, reached_at = [], None
    for i, event in enumerate(seen):
        if isinstance(event, ev.AttemptFinished):
            costs.append(event.record.cost_usd)
            if reached_at is None and reached_after(costs, 0.02) is not None:
                reached_at = i
    assert reached_at is not None and run.stop_reason
    later = seen[reached_at + 1 :]
    assert not any(isinstance(e, ev.AttemptStarted) for e in later)
    started = sum(isinstance(e, ev.AttemptStarted) for e in seen)
    finished = sum(isinstance(e, ev.AttemptFinished) for e in seen)
    assert started == finished  # the ones in flight were finished and recorded, not dropped
    assert sum(isinstance(e, ev.AttemptFinished) for e in later) <= 3  # at most concurrency - 1 were in flight
    on_disk = sum(len(rows(config.run_dir / "eval" / label / "results.jsonl")) for label in ("none", "root", "final"))
    assert on_disk == finished < 3 * 48


def test_a_cap_that_is_never_reached_changes_nothing(demo_config):
    config = load_config(demo_config, FAST)
    seen: list[ev.Event] = []
    run = EvalRun(config, ["none"], repeats=1, max_cost=100.0, on_event=seen.append)
    summary = run.run_sync()["none"]
    assert run.stop_reason is None and summary.complete is True
    assert json.loads(summary.to_json())["max_cost_usd"] == 100.0 and "stop_reason" not in json.loads(summary.to_json())
    assert next(e for e in seen if isinstance(e, ev.RunStarted)).max_cost_usd == 100.0
    assert next(e for e in seen if isinstance(e, ev.RunFinished)).stop_reason is None


UNPRICED = """
def run(task, adapter):
    return {"output": "x", "cost_usd": None if task["id"] != "paid" else 1.0}
"""


def priced_workspace(tmp_path: Path, ids: list[str]) -> Path:
    (tmp_path / "tasks.jsonl").write_text("".join(json.dumps({"id": i}) + "\n" for i in ids))
    (tmp_path / "test.txt").write_text("\n".join(ids) + "\n")
    (tmp_path / "train.txt").write_text("")
    (tmp_path / "pipe.py").write_text(UNPRICED)
    (tmp_path / "judge.py").write_text("def score(task, output):\n    return 1.0\n")
    (tmp_path / "run.yaml").write_text(
        "data: {tasks: tasks.jsonl, train: train.txt, test: test.txt}\n"
        "agent: {name: pipe.py:run, concurrency: 1}\njudge: {path: judge.py}\ntrainer: {run_name: t, tree_dir: tree}\n"
    )
    return tmp_path / "run.yaml"


def test_unknown_costs_are_never_counted_as_zero(tmp_path):
    # three attempts of unknown cost, then one of $1: the cap of $3 cannot count the first ones until a cost is known,
    # then counts each at the mean known cost ($1): 1 + 3 * 1 >= 3 stops the launch before the last two
    config = load_config(priced_workspace(tmp_path, ["u1", "u2", "u3", "paid", "u4", "u5"]))
    seen: list[ev.Event] = []
    run = EvalRun(config, ["none"], max_cost=3.0, on_event=seen.append)
    summary = run.run_sync()["none"]
    assert summary.attempts == 4 and summary.complete is False
    assert run.stop_reason == "max cost $3.00 reached: $1.00 known + ~$3.00 estimated for 3 of unknown cost"
    assert summary.cost_usd is None and summary.unknown_cost_tasks == 3  # hermit's figures: unknown stays unknown
    warnings = [e.message for e in seen if isinstance(e, ev.RunLog) and e.level == "warning"]
    assert any("report no cost" in w for w in warnings)  # said once while it could not count them
    assert sum("report no cost" in w for w in warnings) == 1


def test_bad_max_cost_is_one_line_exit_2(demo_config, capsys):
    for value in ("0", "-2", "nan", "lots"):
        assert main(["eval", "--config", str(demo_config), "--adapter", "none", "--max-cost", value]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "max-cost" in err
    assert not (demo_config.parent / "runs" / "demo" / "eval").exists()
    with pytest.raises(InputError, match="--max-cost"):
        EvalRun(load_config(demo_config), ["none"], max_cost=-1)
