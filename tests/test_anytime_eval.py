"""eval --stop-when-decided --anytime end to end (tests/sequential_project.py: pass/fail tasks with a known success
probability, adapters adding a known boost, every draw a hash, so each launch is reproducible).

The tracker is pinned against ``core.stats.sequential.anytime.eb_confidence_sequence`` (itself pinned against the paper
in tests/test_anytime.py) on differences computed here from the files, in a look order computed here from hashlib;
the launch's files are checked independently of the runner; a cancelled or extended launch continues the same
stream (the same sequence as one uninterrupted launch); what would break the guarantee is refused."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sequential_project import build

from hermit_tui.cli import main
from hermit_tui.core.errors import InputError
from hermit_tui.core.run import events as ev
from hermit_tui.core.run.runner import EvalRun
from hermit_tui.core.stats.sequential.anytime import METHOD, eb_confidence_sequence
from hermit_tui.core.stats.sequential.anytime_plan import AnytimePlan
from hermit_tui.core.stats.sequential.anytime_text import small_split_note
from hermit_tui.core.stats.sequential.anytime_tracker import AnytimeTracker
from hermit_tui.core.workspace.config import load_config

REPEATS = 2


def sha_order(ids):
    return sorted(ids, key=lambda t: hashlib.sha256(t.encode()).hexdigest())


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def folder(project: Path, label: str) -> Path:
    return project.parent / "runs" / "seq" / "eval" / label


def diffs_from_files(project: Path, base: str, cand: str, order: list[str], repeats: int) -> np.ndarray:
    """Per task in ``order``: mean over its repeats of the candidate's score minus the baseline's, from the files."""
    at = {
        label: {(r["id"], r["repeat"]): r["judge"]["score"] for r in lines(folder(project, label) / "results.jsonl")}
        for label in (base, cand)
    }
    return np.array(
        [
            np.mean([at[cand][(t, k)] for k in range(1, repeats + 1)])
            - np.mean([at[base][(t, k)] for k in range(1, repeats + 1)])
            for t in order
        ]
    )


def anytime(project: Path, selectors: list[str], **kw):
    seen: list = []
    run = EvalRun(load_config(project), selectors, stop_when_decided=True, anytime=True, on_event=seen.append, **kw)
    return run.run_sync(), seen


class Rec:
    def __init__(self, score: float):
        self.judge = type("J", (), {"score": score})()


def test_the_tracker_is_the_confidence_sequence_of_the_paired_task_means():
    rng = np.random.default_rng(3)
    ids = [f"task-{i}" for i in range(40)]
    scores = {lab: rng.random((40, 3)).round(2) for lab in ("a", "b", "c")}
    scores["b"][:, 0] = np.nan  # a NaN score counts 0
    scores["c"][:5, 1] = 1.7  # outside [0, 1]: counted as 1
    records = {
        lab: {(t, r + 1): Rec(float(m[i, r])) for i, t in enumerate(ids) for r in range(3)} for lab, m in scores.items()
    }
    for per_look in (1, 7):
        plan = AnytimePlan(baseline="a", candidates=["b", "c"], max_rounds=3, tasks_per_look=per_look, margin=0.05)
        tracker = AnytimeTracker(plan, ids)
        order = sha_order(ids)
        assert tracker.task_ids == order
        while not tracker.finished:
            assert tracker.complete(records, tracker.looks + 1)
            tracker.check(records)
        assert tracker.looks == -(-40 // per_look) and tracker.tasks_looked == 40
        pos = [ids.index(t) for t in order]
        base = np.clip(np.nan_to_num(scores["a"], nan=0.0), 0, 1)[pos].mean(axis=1)
        for lab in ("b", "c"):
            d = np.clip(np.nan_to_num(scores[lab], nan=0.0), 0, 1)[pos].mean(axis=1) - base
            low, high = eb_confidence_sequence(d, 0.05 / 2, lo=-1, hi=1)  # alpha split over the two candidates
            looks = tracker.pairs[lab].looks
            ends = [int(look.tasks or 0) for look in looks]
            assert ends == sorted(set(list(range(per_look, 40, per_look)) + [40]))
            assert [look.ci_low for look in looks] == pytest.approx([low[n - 1] for n in ends], abs=1e-12)
            assert [look.ci_high for look in looks] == pytest.approx([high[n - 1] for n in ends], abs=1e-12)
            assert looks[-1].mean_diff == pytest.approx(d.mean())
            assert all(look.decision == "undecided" for look in looks)  # independent uniform scores: no claim
    # a look whose task lacks a repeat is not complete
    del records["b"][(order[0], 2)]
    tracker = AnytimeTracker(AnytimePlan(baseline="a", candidates=["b"], max_rounds=3), ids)
    assert not tracker.complete(records, 1)
    with pytest.raises(ValueError, match="not complete"):
        tracker.check(records)


def test_an_ab_launch_stops_early_and_records_the_stream(tmp_path, capsys):
    project = build(tmp_path / "p", tasks=60, repeats=REPEATS, seed=5, adapters={"good": 0.4})
    summaries, seen = anytime(project, ["none", "adapters/good"], concurrency=4)
    entry = json.loads((folder(project, "good") / "summary.json").read_text())["sequential"]
    base_entry = json.loads((folder(project, "none") / "summary.json").read_text())["sequential"]
    n = entry["tasks_looked"]
    ids = [f"t{i:03d}" for i in range(60)]
    order = sha_order(ids)
    assert 10 < n < 60 and entry["order"] == order[:n] and base_entry["order"] == order[:n]
    assert (entry["method"], entry["decision"], entry["rounds"], entry["max_rounds"]) == (
        METHOD,
        "improvement",
        REPEATS,
        REPEATS,
    )
    assert base_entry["candidates"] == {"good": "improvement"} and entry["spend"] == 0.05
    # the files: every repeat of the tasks looked at, under both selectors, nothing else, nothing twice
    for label in ("none", "good"):
        keys = Counter((r["id"], r["repeat"]) for r in lines(folder(project, label) / "results.jsonl"))
        assert set(keys) == {(t, r) for t in order[:n] for r in (1, 2)} and max(keys.values()) == 1
        summary = json.loads((folder(project, label) / "summary.json").read_text())
        assert summary["attempts"] == n * REPEATS and summary["expected_attempts"] == n * REPEATS
    # task by task in the look order: no attempt of a task started before every attempt of the earlier tasks
    started = [e.task_id for e in seen if isinstance(e, ev.AttemptStarted)]
    assert [order.index(t) for t in started] == sorted(order.index(t) for t in started)
    # the interval is the sequence computed here from the files, and it just decided at n (not at n - 1)
    d = diffs_from_files(project, "none", "good", order[:n], REPEATS)
    low, high = eb_confidence_sequence(d, 0.05, lo=-1, hi=1)
    assert entry["interval"] == pytest.approx([low[-1], high[-1]], abs=1e-12)
    assert low[-1] > 0 and low[-2] <= 0 and entry["mean_diff"] == pytest.approx(d.mean())
    assert summaries["good"].sequential is not None and summaries["good"].sequential.decision == "improvement"

    # the report and the gate read it back from the files, with the sequence's method
    assert main(["report", "--config", str(project), "--format", "json"]) == 0
    pair = {(p["a"], p["b"]): p for p in json.loads(capsys.readouterr().out)["pairs"]}[("none", "good")]
    assert (pair["ci_low"], pair["ci_high"]) == pytest.approx((low[-1], high[-1]), abs=1e-12)
    assert pair["decision"] == "improvement" and METHOD in pair["method"]
    assert "anytime-valid 95% CS" in pair["verdict"] and f"after {n} of the 60 tasks" in pair["verdict"]
    assert main(["report", "--config", str(project)]) == 0
    md = capsys.readouterr().out.replace("\\|", "|")
    assert f"against baseline none: {n} of the 60 tasks (anytime-valid; stopped when decided)" in md
    assert f"| sequential boundary | {n} of the 60 tasks (2 repeats each); anytime-valid 95% CS" in md
    assert "Verdict rule for a candidate and its baseline: after each look of an anytime-valid" in md
    assert "repeated 95% CI" not in md  # the group-sequential design's words are not used for it
    assert main(["report", "--config", str(project), "--format", "html"]) == 0
    html = capsys.readouterr().out
    assert "anytime-valid 95% CS" in html and "anytime-valid 95% confidence sequence" in html
    assert "repeated 95%" not in html
    code = main(["gate", "--config", str(project), "--baseline", "none", "--candidate", "good", "--format", "json"])
    gate = json.loads(capsys.readouterr().out)
    assert code == 0, gate
    text = json.dumps(gate)
    assert f"{n * 2} of {n * 2} expected attempts ({n} tasks x 2 repeats)" in text and METHOD in text


def test_a_continued_stream_is_one_long_launch(tmp_path):
    # an undecided comparison on 24 tasks, cancelled half-way, resumed, then continued after 36 tasks were added
    # to the test split: the stream is the recorded 24 in their order, then the new ones in the look order, and
    # its sequence is the one computed here over that stream (no restart of the error budget). Without the
    # futility rule (it would stop the 24-task launch as out of reach: the test below), so that all 24 are run
    project = build(tmp_path / "p", tasks=60, repeats=REPEATS, seed=9, adapters={"good": 0.25})
    tasks = [json.loads(x) for x in (project.parent / "tasks.jsonl").read_text().splitlines()]
    first, added = [t["id"] for t in tasks[:24]], [t["id"] for t in tasks[24:]]
    (project.parent / "test.txt").write_text("\n".join(first) + "\n")
    config = load_config(project)
    holder: dict[str, EvalRun] = {}
    count = [0]

    def sink(event):
        if isinstance(event, ev.AttemptFinished):
            count[0] += 1
            if count[0] == 40:
                holder["run"].cancel()

    def resuming(config) -> EvalRun:
        return EvalRun(
            config, ["none", "adapters/good"], stop_when_decided=True, anytime=True, futility=False, resume=True
        )

    run = holder["run"] = EvalRun(
        config,
        ["none", "adapters/good"],
        stop_when_decided=True,
        anytime=True,
        futility=False,
        concurrency=2,
        on_event=sink,
    )
    cut = run.run_sync()
    assert run.cancelled and cut["good"].sequential is not None and cut["good"].sequential.decision == "undecided"
    (project.parent / "test.txt").write_text("\n".join(first + added) + "\n")  # interrupted: not on a new split
    with pytest.raises(InputError, match="interrupted within a look"):
        resuming(load_config(project))
    (project.parent / "test.txt").write_text("\n".join(first) + "\n")
    resumed = resuming(config).run_sync()
    entry = resumed["good"].sequential
    assert entry is not None and entry.decision == "undecided" and entry.tasks_looked == 24
    # the same as one uninterrupted launch of the same 24 tasks
    other = build(tmp_path / "q", tasks=60, repeats=REPEATS, seed=9, adapters={"good": 0.25})
    (other.parent / "test.txt").write_text("\n".join(first) + "\n")
    whole, _ = anytime(other, ["none", "adapters/good"], futility=False, concurrency=3)
    assert whole["good"].sequential == entry

    # tasks added: the stream continues (an interrupted launch must first finish on its own split)
    (project.parent / "test.txt").write_text("\n".join(first + added) + "\n")
    more = resuming(load_config(project)).run_sync()
    cont = more["good"].sequential
    assert cont is not None
    stream = sha_order(first) + sha_order(added)
    order, looked = (cont.model_extra or {})["order"], int(cont.tasks_looked or 0)
    assert order == stream[:looked] and looked > 24
    d = diffs_from_files(project, "none", "good", order, REPEATS)
    low, high = eb_confidence_sequence(d, 0.05, lo=-1, hi=1)
    assert cont.interval == pytest.approx((low[-1], high[-1]), abs=1e-12)
    assert cont.decision == ("improvement" if low[-1] > 0 else "undecided")
    # a fresh look at the whole 60 in the plain look order would be another stream: it is not what was recorded
    assert order != sha_order(first + added)[: len(order)]


def test_what_would_break_the_guarantee_is_refused(tmp_path, capsys):
    project = build(tmp_path / "p", tasks=20, repeats=REPEATS, seed=5, adapters={"clone": 0.0})
    config = load_config(project)
    anytime(project, ["none", "adapters/clone"], futility=False, concurrency=2)
    both = ["none", "adapters/clone"]
    refusals: list[tuple[dict[str, Any], str]] = [
        (dict(stop_when_decided=True, anytime=True, futility=False, repeats=3), "repeats per task"),
        (dict(stop_when_decided=True, anytime=True, futility=False, margin=0.1), "margin"),
        (dict(stop_when_decided=True, anytime=True, futility=False, baseline="adapters/clone"), "baseline"),
        (dict(stop_when_decided=True), "launched with the anytime-valid design"),
        (dict(), "launched with --stop-when-decided --anytime: resume it with both"),
    ]
    for kwargs, message in refusals:
        with pytest.raises(InputError, match=message):
            EvalRun(config, both, resume=True, **kwargs)
    # a task already looked at left the split, or its row changed
    test = (project.parent / "test.txt").read_text().split()
    looked = json.loads((folder(project, "clone") / "summary.json").read_text())["sequential"]["order"]
    (project.parent / "test.txt").write_text("\n".join(t for t in test if t != looked[0]) + "\n")
    with pytest.raises(InputError, match="no longer in the test split"):
        EvalRun(load_config(project), both, stop_when_decided=True, anytime=True, futility=False, resume=True)
    (project.parent / "test.txt").write_text("\n".join(test) + "\n")
    rows = (project.parent / "tasks.jsonl").read_text()
    row = json.loads(rows.splitlines()[int(looked[1][1:])])
    changed = rows.replace(json.dumps(row), json.dumps(row | {"p": 0.99}))
    assert changed != rows
    (project.parent / "tasks.jsonl").write_text(changed)
    with pytest.raises(InputError, match="rows of the 20 tasks already looked at changed"):
        EvalRun(load_config(project), both, stop_when_decided=True, anytime=True, futility=False, resume=True)
    (project.parent / "tasks.jsonl").write_text(rows)
    # on the command line: one line, exit 2
    for extra, message in (
        (["--anytime"], "--anytime is a design of --stop-when-decided"),
        (["--stop-when-decided", "--anytime", "--first-round-looks", "2"], "--first-round-looks is for the group"),
    ):
        code = main(["eval", "--config", str(project), "--adapter", "none", "--adapter", "adapters/clone", *extra])
        err = capsys.readouterr().err
        assert code == 2 and message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert (folder(project, "clone") / "results.jsonl").is_file()  # nothing on disk lost
    # a group-sequential launch does not continue as an anytime one
    other = build(tmp_path / "q", tasks=20, repeats=REPEATS, seed=5, adapters={"clone": 0.0})
    EvalRun(load_config(other), both, stop_when_decided=True).run_sync()
    with pytest.raises(InputError, match="group-sequential design: resume it without --anytime"):
        EvalRun(load_config(other), both, stop_when_decided=True, anytime=True, futility=False, resume=True)


def test_the_compare_panel_reads_an_anytime_look_in_tasks():
    from hermit_tui.dashboard.widgets.boundary import SequentialView, view_text

    plan = AnytimePlan(baseline="a", candidates=["b"], max_rounds=2)
    ids = [f"t{i}" for i in range(30)]
    records = {
        "a": {(t, r): Rec(1.0) for t in ids for r in (1, 2)},
        "b": {(t, r): Rec(0.0) for t in ids for r in (1, 2)},
    }
    tracker = AnytimeTracker(plan, ids)
    while not tracker.finished:
        tracker.check(records)
    look = tracker.last("b")
    assert look is not None and look.decision == "regression"
    n = tracker.tasks_looked
    # every difference is -1: the sequence's upper end, computed independently, first falls below 0 at n
    low, high = eb_confidence_sequence([-1.0] * 30, 0.05, lo=-1, hi=1)
    assert high[n - 1] < 0 <= high[n - 2]
    stopped = view_text(SequentialView("a", "b", (look,), 2, 0.05, stopped=True)).plain
    assert f"a regression, decided after {n} of the 30 tasks" in stopped
    assert f"stopped after {n} of the 30 tasks (2 repeats each): every candidate was decided" in stopped
    assert "round" not in stopped
    live = view_text(SequentialView("a", "b", (look,), 2, 0.05, live=True)).plain
    assert f"{n} of the 30 tasks (2 repeats each) looked at; the next tasks are under way" in live


def test_on_the_demo_the_card_carries_the_sequence(demo_config, capsys):
    # 16 tasks are too few for the sequence to exclude 0 even at the demo's clear difference: without the futility
    # rule (which stops it as out of reach: the test below) it runs every task and ends undecided, and the card says
    # so with the sequence and its design
    from hermit_tui.core.publish.plan import plan_publish

    args = ["--adapter", "none", "--adapter", "final", "--stop-when-decided", "--anytime", "--no-futility", "--no-card"]
    code = main(["eval", "--config", str(demo_config), *args, "agent.params.latency_scale=0.01", "eval.repeats=2"])
    captured = capsys.readouterr()
    payload = json.loads(captured.out)
    assert code == 0
    seq = payload["final"]["sequential"]
    assert seq["method"] == METHOD and seq["decision"] == "undecided" and seq["tasks_looked"] == 16
    # and the launch said beforehand that a split this small rarely decides
    assert "note: anytime-valid on 16 test tasks rarely decides" in captured.err
    ids = (demo_config.parent / "test.txt").read_text().split()
    assert seq["order"] == sha_order(ids)
    rows = {
        label: {
            (r["id"], r["repeat"]): r["judge"]["score"]
            for r in lines(next((demo_config.parent / "runs").glob(f"*/eval/{label}")) / "results.jsonl")
        }
        for label in ("none", "final")
    }
    d = np.array([np.mean([rows["final"][(t, k)] - rows["none"][(t, k)] for k in (1, 2)]) for t in seq["order"]])
    low, high = eb_confidence_sequence(np.clip(d, -1, 1), 0.05, lo=-1, hi=1)
    assert seq["interval"] == pytest.approx([low[-1], high[-1]], abs=1e-12) and low[-1] < 0 < seq["mean_diff"]
    plan = plan_publish(load_config(demo_config, ["eval.repeats=2"]))
    assert not plan.refusals
    assert (
        f"final − none {seq['mean_diff']:+.3f} [{low[-1]:.3f}, {high[-1]:.3f}]: undecided (anytime-valid, after 16 "
        "of the 16 tasks (2 repeats each))"
    ) in plan.table
    assert "Stop when decided (anytime-valid confidence sequences" in plan.table


def test_batches_of_tasks_and_a_resume_of_a_decided_launch(tmp_path, capsys):
    # 12 slots, 2 selectors x 2 repeats: a look adds 3 tasks; the launch stops at the end of the first batch whose
    # sequence decides, and a resume with another batch size finds the same state and runs nothing
    project = build(tmp_path / "p", tasks=60, repeats=REPEATS, seed=5, adapters={"good": 0.4})
    summaries, seen = anytime(project, ["none", "adapters/good"], concurrency=12)
    entry = summaries["good"].sequential
    assert entry is not None and entry.decision == "improvement"
    n = int(entry.tasks_looked or 0)
    assert n % 3 == 0 and n < 60
    order = sha_order([f"t{i:03d}" for i in range(60)])[:n]
    low, high = eb_confidence_sequence(diffs_from_files(project, "none", "good", order, REPEATS), 0.05, lo=-1, hi=1)
    assert low[n - 1] > 0 and low[n - 4] <= 0  # the previous look (3 tasks before) did not decide
    assert entry.interval == pytest.approx((low[-1], high[-1]), abs=1e-12)
    checked = [e.tasks for e in seen if isinstance(e, ev.RoundChecked)]
    assert checked == list(range(3, n + 1, 3))
    again: list = []
    resumed = EvalRun(
        load_config(project), ["none", "adapters/good"], stop_when_decided=True, anytime=True, resume=True,
        concurrency=1, on_event=again.append,
    ).run_sync()  # fmt: skip
    assert not any(isinstance(e, ev.AttemptStarted) for e in again)
    assert resumed["good"].sequential == entry
    assert main(["report", "--config", str(project), "--format", "json"]) == 0
    pair = {(p["a"], p["b"]): p for p in json.loads(capsys.readouterr().out)["pairs"]}[("none", "good")]
    assert f"decided after {n} of the 60 tasks" in pair["verdict"] and not pair["warnings"]


def test_equivalence_within_the_margin_and_the_first_decision_kept():
    # the candidate scores what the baseline scores on every task: the differences are 0 and the sequence narrows
    # around 0; with margin 0.3 it is 'equivalent' at the first look whose sequence lies within -0.3..0.3
    ids = [f"q{i}" for i in range(80)]
    rng = np.random.default_rng(8)
    same = {(t, 1): Rec(float(x)) for t, x in zip(ids, rng.random(80).round(2))}
    records = {"a": same, "b": dict(same)}
    plan = AnytimePlan(baseline="a", candidates=["b"], max_rounds=1, margin=0.3, tasks_per_look=5)
    tracker = AnytimeTracker(plan, ids)
    while not tracker.finished:
        tracker.check(records)
    low, high = eb_confidence_sequence(np.zeros(80), 0.05, lo=-1, hi=1)
    first = next(n for n in range(5, 81, 5) if -0.3 < low[n - 1] and high[n - 1] < 0.3)
    assert tracker.decided and tracker.tasks_looked == first < 80
    look = tracker.last("b")
    assert look is not None and (look.decision, look.decided_tasks) == ("equivalent", first)
    entry = tracker.entry("b")
    assert entry.decision == "equivalent" and entry.interval == pytest.approx((low[first - 1], high[first - 1]))
    assert tracker.entry("a").candidates == {"b": "equivalent"} and tracker.attempts_each == first


def test_a_small_split_gets_the_anytime_warning_and_a_large_one_none():
    assert small_split_note(100) is None and small_split_note(5000) is None
    note = small_split_note(48)
    assert note is not None and note.startswith("anytime-valid on 48 test tasks rarely decides")
    assert "on 1 test task cannot decide" in (small_split_note(1) or "")


def test_a_split_too_small_for_even_the_clearest_results_is_told_it_cannot_decide():
    """Under the fewest tasks at which a difference of +1 on every task takes the sequence (at each candidate's
    share of 0.05) above 0, the warning says the launch cannot decide, and from how many tasks it could."""

    def fewest(alpha: float) -> int:
        low, _ = eb_confidence_sequence(np.ones(100), alpha, lo=-1, hi=1)
        return int(np.flatnonzero(low > 0)[0]) + 1

    one, two = fewest(0.05), fewest(0.025)
    assert (one, two) == (16, 18)  # the demo's 16 tasks: one candidate could just decide, two never
    assert "rarely decides" in (small_split_note(one) or "")
    note = small_split_note(one, candidates=2) or ""
    assert note.startswith(f"anytime-valid on {one} test tasks cannot decide: even the clearest results")
    assert f"at α 0.025 for each of 2 candidates only from {two} tasks on" in note
    assert small_split_note(two, candidates=2) == small_split_note(two)  # from there on: the "rarely" warning
    margin = small_split_note(one - 1, margin=0.5) or ""
    assert "cannot decide" in margin and "or of 0 for ±0.5" in margin


def test_eval_on_the_demo_with_two_candidates_says_beforehand_it_cannot_decide(demo_config, capsys):
    args = ["--adapter", "none", "--adapter", "root", "--adapter", "final", "--stop-when-decided", "--anytime"]
    code = main(["eval", "--config", str(demo_config), *args, "--no-card", "agent.params.latency_scale=0.01"])
    captured = capsys.readouterr()
    assert code == 0
    assert "note: anytime-valid on 16 test tasks cannot decide" in captured.err
    assert "for each of 2 candidates only from 18 tasks on" in captured.err
    # and it stops at its first look (one task: 4 slots, 3 selectors x 3 repeats): the other 15 could not decide
    # either candidate even with a difference of +1 or -1 on each (it needs 18), so nothing more is spent
    payload = json.loads(captured.out)
    for label in ("root", "final"):
        seq = payload[label]["sequential"]
        assert (seq["decision"], seq["tasks_looked"], seq["total_tasks"]) == ("futile", 1, 16)
        assert payload[label]["attempts"] == 3
    assert "the candidate" not in captured.err and "every candidate is stopped for futility" in captured.err
    report = main(["report", "--config", str(demo_config)])
    text = capsys.readouterr().out
    assert report == 0 and "Stopped for futility after 1 of the 16 tasks" in text
    assert "the other 15 tasks could not decide it even with a difference of ±1 on each" in text


def test_a_candidate_the_rest_of_the_split_cannot_decide_stops_for_futility():
    """With the rule on, a look is futile exactly when the sequence (computed here) over the differences so far and
    +1 (-1) on every task left still holds 0 at the split's last task; the first such look stops the tracker."""
    rng = np.random.default_rng(8)
    ids = [f"task-{i}" for i in range(30)]
    scores = {"a": rng.random((30, 2)).round(2), "b": rng.random((30, 2)).round(2)}
    records = {
        lab: {(t, r + 1): Rec(float(m[i, r])) for i, t in enumerate(ids) for r in range(2)} for lab, m in scores.items()
    }
    order = sha_order(ids)
    pos = [ids.index(t) for t in order]
    d = scores["b"][pos].mean(axis=1) - scores["a"][pos].mean(axis=1)

    def out_of_reach(n: int) -> bool:
        left = 30 - n
        up, _ = eb_confidence_sequence(np.concatenate([d[:n], np.ones(left)]), 0.05, lo=-1, hi=1)
        _, down = eb_confidence_sequence(np.concatenate([d[:n], -np.ones(left)]), 0.05, lo=-1, hi=1)
        return left > 0 and up[-1] <= 0 and down[-1] >= 0

    first = next(n for n in range(3, 31, 3) if out_of_reach(n))
    assert first < 30  # (these uniform scores leave it out of reach before the end)
    tracker = AnytimeTracker(
        AnytimePlan(baseline="a", candidates=["b"], max_rounds=2, tasks_per_look=3, out_of_reach=True), ids
    )
    while not tracker.finished:
        tracker.check(records)
    look = tracker.last("b")
    assert look is not None and (look.decision, look.tasks, look.decided_tasks) == ("futile", first, first)
    assert tracker.decided and tracker.tasks_looked == first
    # the same looks without the rule run to the end, undecided
    plain = AnytimeTracker(AnytimePlan(baseline="a", candidates=["b"], max_rounds=2, tasks_per_look=3), ids)
    while not plain.finished:
        plain.check(records)
    last = plain.last("b")
    assert plain.tasks_looked == 30 and last is not None and last.decision == "undecided"


def test_a_futile_stream_runs_nothing_more_on_its_split_and_continues_when_tasks_are_added(tmp_path, capsys):
    project = build(tmp_path / "p", tasks=200, repeats=REPEATS, seed=5, adapters={"clone": 0.0})
    ids = [f"t{i:03d}" for i in range(200)]
    (project.parent / "test.txt").write_text("\n".join(ids[:20]) + "\n")
    both = ["none", "adapters/clone"]
    anytime(project, both, concurrency=4)
    entry = json.loads((folder(project, "clone") / "summary.json").read_text())["sequential"]
    n = entry["tasks_looked"]
    assert entry["decision"] == "futile" and 0 < n < 20 and entry["order"] == sha_order(ids[:20])[:n]
    attempts = len(lines(folder(project, "clone") / "results.jsonl"))
    assert attempts == n * REPEATS
    # the gate counts the attempts of the tasks looked at as the whole evaluation, and says why
    code = main(["gate", "--config", str(project), "--candidate", "clone", "--baseline", "none"])
    out = capsys.readouterr().out
    assert code == 3  # (no-regression cannot pass on an interval this wide)
    assert f"PASS complete clone: {attempts} of {attempts} expected attempts" in out
    assert f"(stopped for futility after {n} of the 20 tasks ({REPEATS} repeats each), anytime-valid)" in out
    assert main(["report", "--config", str(project)]) == 0
    report = capsys.readouterr().out
    assert f"{n} of the 20 tasks (anytime-valid; stopped for futility)" in report
    missing = (
        f"{20 - n} test tasks have no attempt (not run: the launch stopped for futility after {n} of the 20 tasks)"
    )
    assert f"clone: {missing}" in report and f"none: {missing}" in report
    # resumed on the same split: still out of reach, nothing runs
    EvalRun(load_config(project), both, stop_when_decided=True, anytime=True, resume=True).run_sync()
    assert len(lines(folder(project, "clone") / "results.jsonl")) == attempts
    # 180 tasks added: the stream goes on from the recorded tasks (no restart of the error budget)
    (project.parent / "test.txt").write_text("\n".join(ids) + "\n")
    more = EvalRun(load_config(project), both, stop_when_decided=True, anytime=True, resume=True).run_sync()
    cont = more["clone"].sequential
    assert cont is not None and int(cont.tasks_looked or 0) > n
    order = (cont.model_extra or {})["order"]
    assert (
        order[:n] == entry["order"]
        and order == (sha_order(ids[:20])[:n] + sha_order([t for t in ids if t not in entry["order"]]))[: len(order)]
    )
