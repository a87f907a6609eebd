"""--stop-when-decided end to end on small synthetic projects (tests/sequential_project.py: pass/fail tasks with a
known success probability, adapters that add a known boost; every draw a hash, so each launch is reproducible).

A/B (boost 0.4 on 30 tasks, at most 6 rounds): stops after round 2 with an improvement. A/A (no boost): runs all 6
rounds and stays undecided; with a margin of 0.2 it stops as equivalent. The files are checked independently of the
runner: attempts run = rounds x tasks x selectors, nothing run twice, the round barrier held, summaries complete with
repeats = rounds run, and each summary's sequential entry."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import multivariate_normal
from sequential_project import build

from hermit_tui.cli import main
from hermit_tui.core.errors import InputError
from hermit_tui.core.run import events as ev
from hermit_tui.core.run.runner import EvalRun
from hermit_tui.core.stats.sequential.look import METHOD, OLD_METHOD
from hermit_tui.core.stats.sequential.repeated import sequential_look
from hermit_tui.core.workspace.config import load_config

TASKS, ROUNDS = 30, 6


@pytest.fixture
def project(tmp_path) -> Path:
    # "clone" draws independently of none with the same probabilities (an A/A pair); "good" adds 0.4; "worse"
    # takes 0.6 away (always fails)
    return build(
        tmp_path / "p", tasks=TASKS, repeats=ROUNDS, seed=5, adapters={"good": 0.3, "clone": 0.0, "worse": -0.6}
    )


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def launch(project: Path, selectors: list[str], **kw) -> tuple[dict, list]:
    seen: list = []
    summaries = EvalRun(load_config(project), selectors, stop_when_decided=True, on_event=seen.append, **kw).run_sync()
    return summaries, seen


def check_files(project: Path, labels: list[str], rounds: int) -> dict[str, list[dict]]:
    """Every selector's results hold each (task, repeat) of rounds 1..rounds exactly once, and its summary says it
    is a complete evaluation of ``rounds`` repeats."""
    out = {}
    ids = [f"t{i:03d}" for i in range(TASKS)]
    for label in labels:
        folder = project.parent / "runs" / "seq" / "eval" / label
        rows = lines(folder / "results.jsonl")
        keys = Counter((r["id"], r["repeat"]) for r in rows)
        assert max(keys.values()) == 1, f"{label}: an attempt ran twice"
        assert set(keys) == {(t, r) for t in ids for r in range(1, rounds + 1)}
        summary = json.loads((folder / "summary.json").read_text())
        assert (summary["repeats"], summary["attempts"], summary["expected_attempts"], summary["complete"]) == (
            rounds,
            TASKS * rounds,
            TASKS * rounds,
            True,
        )
        assert summary["fingerprint"]["repeats"] == rounds
        scores = [r["judge"]["score"] for r in rows]
        assert summary["mean_score"] == pytest.approx(sum(scores) / len(scores))
        out[label] = rows
    return out


def matrix(rows: list[dict], rounds: int) -> np.ndarray:
    """Scores as tasks x rounds, from the file rows."""
    ids = sorted({r["id"] for r in rows})
    at = {(r["id"], r["repeat"]): r["judge"]["score"] for r in rows}
    return np.array([[at[(t, k)] for k in range(1, rounds + 1)] for t in ids])


def barrier_held(seen: list) -> None:
    """No attempt of round r + 1 started before every attempt of round r finished (and was checked)."""
    finished: Counter = Counter()
    per_round = None
    checked = 0
    for e in seen:
        if isinstance(e, ev.RunStarted):
            per_round = len(e.labels) * len(e.task_ids)
        elif isinstance(e, ev.AttemptFinished):
            finished[e.record.repeat] += 1
        elif isinstance(e, ev.RoundChecked):
            assert finished[e.round] == per_round
            checked = e.round
        elif isinstance(e, ev.AttemptStarted) and e.repeat > 1:
            assert finished[e.repeat - 1] == per_round and checked >= e.repeat - 1, e


def test_ab_stops_early_with_an_improvement(project):
    summaries, seen = launch(project, ["none", "adapters/good"], concurrency=4)
    rows = check_files(project, ["none", "good"], rounds=2)
    started = [e for e in seen if isinstance(e, ev.AttemptStarted)]
    assert len(started) == 2 * TASKS * 2  # rounds x tasks x selectors: round 3 never started
    barrier_held(seen)
    checks = [e for e in seen if isinstance(e, ev.RoundChecked)]
    assert [(e.round, e.stopped) for e in checks] == [(1, False), (2, True)]

    good = json.loads((project.parent / "runs/seq/eval/good/summary.json").read_text())["sequential"]
    assert {
        k: good[k] for k in ("baseline", "decision", "rounds", "max_rounds", "method", "alpha", "decided_at", "margin")
    } == {
        "baseline": "none",
        "decision": "improvement",
        "rounds": 2,
        "max_rounds": ROUNDS,
        "method": METHOD,
        "alpha": 0.05,
        "decided_at": 2,
        "margin": None,
    }
    base = json.loads((project.parent / "runs/seq/eval/none/summary.json").read_text())["sequential"]
    assert base["candidates"] == {"good": "improvement"} and base["rounds"] == 2 and base["decision"] is None
    assert summaries["good"].sequential.decision == "improvement"

    # the decision from the files: the mean difference of task means, and the round-2 interval (the one the
    # unit-tested core.stats.sequential.repeated computes on these matrices) lies above 0 while round 1's did not decide
    a, b = matrix(rows["none"], 2), matrix(rows["good"], 2)
    diff = float((b.mean(axis=1) - a.mean(axis=1)).mean())
    assert good["mean_diff"] == pytest.approx(diff) and diff > 0.3
    round1 = sequential_look("none", "good", a[:, :1], b[:, :1], ROUNDS)
    round2 = sequential_look("none", "good", a, b, ROUNDS)
    assert round1.decision == "undecided" and round2.decision == "improvement"
    low, high = good["interval"]
    assert 0 < low < diff < high <= 1
    assert round1.ci_low is not None and round2.ci_low is not None
    assert round1.ci_high is not None and round2.ci_high is not None
    assert (low, high) == pytest.approx((max(round1.ci_low, round2.ci_low), min(round1.ci_high, round2.ci_high)))
    # round 2's boundary spends what Hwang-Shih-DeCani's function (gamma -2) allows by t = 2/6 of the candidate's
    # 0.9 x 0.05 (an independent two-look multivariate normal computation, correlation sqrt(1/2))
    c1, c2 = round1.boundary_z, round2.boundary_z
    assert c1 is not None and c2 is not None
    stay = multivariate_normal(mean=[0, 0], cov=[[1, math.sqrt(0.5)], [math.sqrt(0.5), 1]]).cdf(
        [c1, c2], lower_limit=[-c1, -c2], rng=1
    )
    assert 1 - stay == pytest.approx(0.045 * (1 - math.exp(2 * 2 / ROUNDS)) / (1 - math.exp(2)), abs=2e-5)
    assert good["spend"] == pytest.approx(0.045) and good["split_over"] == 1


def test_aa_runs_every_round_and_stays_undecided(project):
    summaries, seen = launch(project, ["none", "adapters/clone"], concurrency=3, futility=False)
    check_files(project, ["none", "clone"], rounds=ROUNDS)
    assert sum(isinstance(e, ev.AttemptStarted) for e in seen) == 2 * TASKS * ROUNDS
    barrier_held(seen)
    entry = summaries["clone"].sequential
    assert (entry.decision, entry.rounds, entry.decided_at) == ("undecided", ROUNDS, None)
    assert entry.interval[0] < 0 < entry.interval[1]


def test_aa_stops_for_futility_and_the_report_and_gate_say_so(project, capsys):
    # the default design (no margin) has the non-binding futility rule: an A/A launch stops once a decision is out of
    # reach (conditional power under the current estimate below 0.02, at looks of 50+ attempts: round 2 on 30 tasks)
    code = main(["eval", "--config", str(project), "--adapter", "none", "--adapter", "adapters/clone",
                 "--stop-when-decided", "--no-card"])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    entry = json.loads(out)["clone"]["sequential"]
    r = entry["rounds"]
    assert 2 <= r < ROUNDS and entry["decision"] == "futile" and entry["decided_at"] == r
    assert entry["futility"] == 0.02 and 0 <= entry["conditional_power"] < 0.02
    assert f"the candidate is stopped for futility after round {r} of {ROUNDS}" in err
    rows = check_files(project, ["none", "clone"], rounds=r)
    # from the files, independently of the runner: no round's repeated interval decided (each holds 0), so the stop
    # was the futility rule's; the launch's adjusted estimate lies in its interval, and at the first look
    # the adjusted estimate is the observed one (nothing was looked at before)
    a, b = matrix(rows["none"], r), matrix(rows["clone"], r)
    for k in range(1, r + 1):
        look = sequential_look("none", "clone", a[:, :k], b[:, :k], ROUNDS)
        assert look.ci_low is not None and look.ci_high is not None
        assert look.decision == "undecided" and look.ci_low < 0 < look.ci_high
    diff = float((b.mean(axis=1) - a.mean(axis=1)).mean())
    assert entry["mean_diff"] == pytest.approx(diff)
    low, high = entry["estimate_interval"]
    assert low < entry["estimate"] < high and low < 0 < high and entry["p_value"] > 0.05
    # a futility stop is ordered among the design's outcomes by its mean difference (the sample-mean ordering, the
    # futility stops included): the design is symmetric, so under no difference a larger mean difference than the
    # observed one has probability under 1/2, and the median-unbiased estimate has the observed difference's sign
    assert diff != 0 and entry["estimate"] * diff > 0
    # the report and the gate
    assert main(["report", "--config", str(project)]) == 0
    md = capsys.readouterr().out
    assert f"Stopped for futility at round {r} of {ROUNDS}: clone − none = {entry['estimate']:+.3f}" in md
    assert "| adjusted for stopping |" in md and "median-unbiased for the stopping rule" in md
    assert main(["report", "--config", str(project), "--format", "html"]) == 0
    assert "stopped for futility" in capsys.readouterr().out
    code = main(["gate", "--config", str(project), "--baseline", "none", "--candidate", "clone", "--require",
                 "complete", "--require", "improvement"])  # fmt: skip
    out, err = capsys.readouterr()
    text = out + err
    assert code == 3 and f"PASS complete clone: {TASKS * r} of {TASKS * r} expected attempts" in text
    assert "FAIL improvement: clone - none 95% CI" in text
    assert (
        f"after {r} rounds, stopped for futility; adjusted for the stopping rule: median-unbiased estimate "
        f"{entry['estimate']:+.3f}, 95% CI {low:+.3f} to {high:+.3f}, p {entry['p_value']:.3f}"
    ) in text


def test_aa_with_a_margin_stops_as_equivalent(project):
    summaries, seen = launch(project, ["none", "adapters/clone"], margin=0.2)
    check_files(project, ["none", "clone"], rounds=5)
    entry = summaries["clone"].sequential
    assert (entry.decision, entry.rounds, entry.decided_at, entry.margin) == ("equivalent", 5, 5, 0.2)
    assert -0.2 < entry.interval[0] < 0 < entry.interval[1] < 0.2


def test_whole_rounds_go_on_until_every_candidate_is_decided(project):
    # good is decided after round 2, worse by round 3 (three candidates: each spends a third of 0.9 x 0.05), clone
    # never: every round runs for every selector, and the earlier decisions are kept
    summaries, seen = launch(project, ["adapters/good", "none", "adapters/clone", "adapters/worse"], futility=False)
    check_files(project, ["good", "none", "clone", "worse"], rounds=ROUNDS)
    assert summaries["none"].sequential.candidates == {
        "good": "improvement",
        "clone": "undecided",
        "worse": "regression",
    }
    good, worse = summaries["good"].sequential, summaries["worse"].sequential
    assert (good.decision, good.decided_at, good.rounds) == ("improvement", 2, ROUNDS)
    assert worse.decision == "regression" and worse.interval[1] < 0 and worse.decided_at <= 3
    assert good.spend == worse.spend == pytest.approx(0.015) and good.split_over == 3


def test_a_cancelled_launch_resumes_round_by_round_and_reaches_the_same_decision(project, tmp_path):
    config = load_config(project)
    stop_after = 3 * TASKS + 17  # in round 2 (3 selectors)
    holder: dict[str, EvalRun] = {}
    finished = [0]

    def sink(event):
        if isinstance(event, ev.AttemptFinished):
            finished[0] += 1
            if finished[0] == stop_after:
                holder["run"].cancel()

    run = holder["run"] = EvalRun(
        config,
        ["none", "adapters/good", "adapters/clone"],
        stop_when_decided=True,
        concurrency=2,
        on_event=sink,
        futility=False,
    )
    cut = run.run_sync()
    assert run.cancelled and all(s.complete is False and s.repeats == ROUNDS for s in cut.values())
    assert cut["good"].sequential is not None
    assert cut["good"].sequential.rounds == 1 and cut["good"].sequential.decision == "undecided"
    recorded = sum(len(lines(project.parent / "runs/seq/eval" / k / "results.jsonl")) for k in cut)

    for kwargs in (
        dict(),
        dict(stop_when_decided=True, margin=0.1),
        dict(stop_when_decided=True, baseline="adapters/clone"),
    ):
        with pytest.raises(InputError, match="cannot resume"):
            EvalRun(config, ["none", "adapters/good", "adapters/clone"], resume=True, **kwargs)
    # a launch begun under the former design (O'Brien-Fleming-type spending, no split) does not continue under this one
    path = project.parent / "runs/seq/eval/good/summary.json"
    kept = path.read_text()
    old = json.loads(kept)
    old["sequential"] = {k: v for k, v in old["sequential"].items() if k not in ("spend", "split_over")}
    path.write_text(json.dumps(old | {"sequential": old["sequential"] | {"method": OLD_METHOD}}))
    with pytest.raises(InputError, match="the sequential design .* of an earlier hermit-tui version"):
        EvalRun(
            config, ["none", "adapters/good", "adapters/clone"], stop_when_decided=True, resume=True, futility=False
        )
    path.write_text(kept)
    # nor under another futility rule
    with pytest.raises(InputError, match="futility rule none -> 0.02"):
        EvalRun(config, ["none", "adapters/good", "adapters/clone"], stop_when_decided=True, resume=True)

    seen: list = []
    resumed = EvalRun(
        config,
        ["none", "adapters/good", "adapters/clone"],
        stop_when_decided=True,
        resume=True,
        on_event=seen.append,
        futility=False,
    ).run_sync()
    assert sum(isinstance(e, ev.AttemptStarted) for e in seen) == 3 * TASKS * ROUNDS - recorded
    check_files(project, ["none", "good", "clone"], rounds=ROUNDS)
    # the same as an uninterrupted launch of the same project
    other = build(tmp_path / "q", tasks=TASKS, repeats=ROUNDS, seed=5, adapters={"good": 0.3, "clone": 0.0})
    whole, _ = launch(other, ["none", "adapters/good", "adapters/clone"], futility=False)
    for label in ("good", "clone"):
        assert resumed[label].sequential == whole[label].sequential

    # resuming a launch that stopped when decided runs nothing and keeps its decision
    launch(project, ["none", "adapters/good"])
    seen = []
    again = EvalRun(
        config, ["none", "adapters/good"], stop_when_decided=True, resume=True, on_event=seen.append
    ).run_sync()
    assert not any(isinstance(e, ev.AttemptStarted) for e in seen)
    assert again["good"].sequential is not None
    assert again["good"].repeats == 2 and again["good"].sequential.decision == "improvement"


@pytest.mark.parametrize(
    "selectors, kwargs, message",
    [
        (["none"], {}, "at least two --adapter"),
        (["none", "adapters/good"], dict(baseline="root"), "--baseline 'root' is not among the selectors"),
        (["none", "adapters/good"], dict(limit=3), "--stop-when-decided with --limit"),
        (["none", "adapters/good"], dict(margin=0.0), "--margin must be a positive number"),
        (["none", "adapters/good"], dict(margin=float("nan")), "--margin must be a positive number"),
    ],
)
def test_bad_combinations_are_refused_before_anything_is_written(project, selectors, kwargs, message):
    with pytest.raises(InputError, match=message):
        EvalRun(load_config(project), selectors, stop_when_decided=True, **kwargs)
    with pytest.raises(InputError, match="is for --stop-when-decided"):
        EvalRun(load_config(project), ["none", "adapters/good"], margin=0.1)
    assert not (project.parent / "runs").exists()


def test_cli_flags_and_bad_input(project, capsys):
    code = main(
        [
            "eval",
            "--config",
            str(project),
            "--adapter",
            "adapters/good",
            "--adapter",
            "none",
            "--stop-when-decided",
            "--baseline",
            "none",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0
    payload = json.loads(out)
    assert payload["good"]["sequential"]["decision"] == "improvement" and payload["good"]["repeats"] == 2
    assert payload["none"]["sequential"]["candidates"] == {"good": "improvement"}
    assert "round 2 of 6: good vs none: improvement" in err
    assert "every candidate is decided after round 2 of 6" in err
    # the baseline can be given as typed or by its label; the default is none
    code = main(
        [
            "eval",
            "--config",
            str(project),
            "--adapter",
            "adapters/good",
            "--adapter",
            "adapters/clone",
            "--stop-when-decided",
            "--baseline",
            "clone",
            "--margin",
            "0.5",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0 and json.loads(out)["good"]["sequential"]["baseline"] == "clone"
    before = sorted(p.name for p in (project.parent / "runs/seq/eval").iterdir())
    for argv, message in [
        (["--adapter", "none", "--stop-when-decided"], "at least two --adapter"),
        (
            ["--adapter", "none", "--adapter", "adapters/good", "--stop-when-decided", "--baseline", "final"],
            "--baseline 'final' is not among the selectors (none, good)",
        ),
        (
            ["--adapter", "none", "--adapter", "adapters/good", "--stop-when-decided", "--margin", "-1"],
            "--margin must be a positive number",
        ),
        (
            ["--adapter", "none", "--adapter", "adapters/good", "--stop-when-decided", "--margin", "x"],
            "argument --margin: invalid float value",
        ),
        (
            ["--adapter", "none", "--adapter", "adapters/good", "--stop-when-decided", "--limit", "2"],
            "--stop-when-decided with --limit",
        ),
        (
            ["--adapter", "none", "--adapter", "adapters/good", "--no-futility"],
            "--no-futility is for --stop-when-decided",
        ),
    ]:
        code = main(["eval", "--config", str(project), *argv])
        out, err = capsys.readouterr()
        assert code == 2 and out == "" and message in err and err.count("\n") == 1, (argv, err)
    assert sorted(p.name for p in (project.parent / "runs/seq/eval").iterdir()) == before
    # without --stop-when-decided, --baseline and --margin are the gate's: the launch runs its fixed design, then gates
    code = main(
        [
            "eval",
            "--config",
            str(project),
            "--adapter",
            "none",
            "--adapter",
            "adapters/good",
            "--baseline",
            "none",
            "--margin",
            "0.1",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0 and "sequential" not in json.loads(out)["good"] and "verdict: PASS" in err


def test_the_report_uses_the_sequential_interval_and_says_so(project, capsys):
    summaries, _ = launch(project, ["none", "adapters/good", "adapters/clone"], futility=False)
    entry = summaries["good"].sequential
    assert main(["report", "--config", str(project), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    pairs = {(p["a"], p["b"]): p for p in report["pairs"]}
    good = pairs[("none", "good")]
    assert (good["ci_low"], good["ci_high"]) == pytest.approx(tuple(entry.interval))
    assert good["decision"] == "improvement" and good["sequential"]["decided_at"] == 2
    assert good["verdict"].startswith("Stopped when decided: good scores") and "repeated 95% CI" in good["verdict"]
    assert METHOD in good["method"] and "adjusted for the stopping rule" in good["test"]
    assert good["p_value"] == pytest.approx(entry.p_value) and good["p_value"] < 0.05
    assert "than none (median-unbiased for the stopping rule, 95% CI" in good["verdict"]
    # decided at round 2 while clone went on to round 6: the adjusted figures are those of its stop at round 2,
    # and the observed difference beside them is round 6's
    assert f"observed {entry.mean_diff:+.3f} at round 6, not adjusted; repeated 95% CI" in good["verdict"]
    low_a, high_a = entry.estimate_interval
    assert 0 < low_a < entry.estimate < high_a
    clone = pairs[("none", "clone")]
    assert clone["decision"] == "unclear" and clone["verdict"].startswith(f"Undecided after all {ROUNDS} rounds")
    assert clone["sequential"]["ci_low"] == pytest.approx(summaries["clone"].sequential.interval[0])
    # two candidates were not compared with each other: fixed-design figures, with a warning
    between = pairs[("good", "clone")] if ("good", "clone") in pairs else pairs[("clone", "good")]
    assert between["sequential"] is None
    assert any("not with each other" in w for w in between["warnings"])
    assert main(["report", "--config", str(project)]) == 0
    md = capsys.readouterr().out
    assert "| stop when decided | clone, good against baseline none: 6 of at most 6 rounds (ran every round)" in md
    assert "| sequential boundary | round 6 of 6: boundary |z| ≥" in md.replace("\\|", "|")
    assert "Verdict rule for a candidate and its baseline: after each look of a stop-when-decided launch" in md
    assert main(["report", "--config", str(project), "--format", "html"]) == 0
    html = capsys.readouterr().out
    assert "repeated 95% CI" in html and "sequential boundary" in html and "stop when decided" in html


def test_the_card_carries_the_decisions_with_their_intervals(demo_config, capsys):
    from hermit_tui.core.publish.plan import plan_publish

    code = main(
        [
            "eval",
            "--config",
            str(demo_config),
            "--adapter",
            "none",
            "--adapter",
            "root",
            "--adapter",
            "final",
            "--stop-when-decided",
            "--no-card",
            "agent.params.latency_scale=0.01",
            "eval.repeats=8",
        ]
    )
    payload = json.loads(capsys.readouterr().out)
    assert code == 0
    rounds = payload["final"]["repeats"]
    assert rounds == payload["final"]["sequential"]["rounds"] < 8
    assert payload["final"]["sequential"]["decision"] == "improvement"
    plan = plan_publish(load_config(demo_config, ["eval.repeats=8"]))
    assert not plan.refusals and f"| final | {payload['final']['commit'][:7]} | 16 | {rounds} |" in plan.table
    entry = payload["final"]["sequential"]
    low, high = entry["interval"]
    est, (est_low, est_high) = entry["estimate"], entry["estimate_interval"]
    assert (
        f"final − none {est:+.3f} [{est_low:.3f}, {est_high:.3f}] (median-unbiased for the stopping rule; observed "
        f"{entry['mean_diff']:+.3f}; repeated CI [{low:.3f}, {high:.3f}]): an improvement (after {rounds} of at "
        "most 8 rounds)"
    ) in plan.table
    assert "Stop when decided (group-sequential repeated confidence intervals" in plan.table


def test_a_launch_on_many_tasks_stops_within_the_first_round(tmp_path, capsys):
    """100 tasks: eval looks after 25, 50, 75 and 100 of round 1's tasks, in the order of their ids' sha256. A
    clear improvement (boost 0.45) stops after a batch: only those tasks ran, each once per selector, no attempt
    of a later batch started before the earlier batch was checked, and the decision is the one computed directly
    from the files' first tasks in that order; the report recomputes it."""
    import hashlib

    from hermit_tui.core.stats.sequential.look import BATCH_METHOD
    from hermit_tui.core.stats.sequential.schedule import look_boundaries

    project = build(tmp_path / "p", tasks=100, repeats=4, seed=7, adapters={"good": 0.45})
    summaries, seen = launch(project, ["none", "adapters/good"], concurrency=3)
    ids = [f"t{i:03d}" for i in range(100)]
    order = sorted(ids, key=lambda t: hashlib.sha256(t.encode()).hexdigest())
    checks = [e for e in seen if isinstance(e, ev.RoundChecked)]
    assert checks and checks[-1].stopped and all(e.round == 1 for e in checks)
    n = checks[-1].tasks
    assert n is not None and n < 100 and [e.tasks for e in checks] == [25 * (k + 1) for k in range(len(checks))]
    rows = {}
    for label in ("none", "good"):
        folder = project.parent / "runs" / "seq" / "eval" / label
        rows[label] = lines(folder / "results.jsonl")
        assert sorted((r["id"], r["repeat"]) for r in rows[label]) == sorted((t, 1) for t in order[:n])
        summary = json.loads((folder / "summary.json").read_text())
        assert (summary["repeats"], summary["attempts"], summary["expected_attempts"]) == (1, n, n)
    # the barrier: an attempt of batch k + 1 starts only after batch k is checked
    position = {t: i for i, t in enumerate(order)}
    checked = 0
    for e in seen:
        if isinstance(e, ev.RoundChecked):
            checked = e.tasks or 0
        elif isinstance(e, ev.AttemptStarted):
            assert position[e.task_id] < checked + 25, e
    good = json.loads((project.parent / "runs/seq/eval/good/summary.json").read_text())["sequential"]
    assert (good["decision"], good["batches"], good["tasks_looked"], good["total_tasks"]) == ("improvement", 4, n, 100)
    assert good["method"] == BATCH_METHOD and good["rounds"] == 1 and good["decided_at"] == 1
    # the decision from the files: the first n tasks in the look order, at the last look's boundary
    at = {lab: {r["id"]: r["judge"]["score"] for r in rows[lab]} for lab in rows}
    a = np.array([[at["none"][t]] for t in order[:n]])
    b = np.array([[at["good"][t]] for t in order[:n]])
    direct = sequential_look("none", "good", a, b, 4, batches=4, total_tasks=100, spending="power")
    assert direct.decision == "improvement" and good["mean_diff"] == pytest.approx(float((b - a).mean()))
    assert direct.boundary_z == pytest.approx(look_boundaries(100, 4, 4, 0.045, "power")[n // 25 - 1])
    assert good["interval"][0] > 0
    assert main(["report", "--config", str(project), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    pair = next(p for p in report["pairs"] if (p["a"], p["b"]) == ("none", "good"))
    assert pair["decision"] == "improvement" and pair["sequential"]["decided_tasks"] == n
    assert f"decided after {n} of the 100 tasks of round 1 of 4" in pair["verdict"]
    assert (pair["ci_low"], pair["ci_high"]) == pytest.approx(tuple(good["interval"]))
    assert main(["report", "--config", str(project)]) == 0
    md = capsys.readouterr().out
    assert f"good against baseline none: {n} of the 100 tasks of round 1, 1 of at most 4 rounds (stopped" in md
    # the gate counts the attempts the stop left out as not expected, and names the look its interval is from
    code = main(["gate", "--config", str(project), "--baseline", "none", "--candidate", "good"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert (
        f"PASS complete good: {n} of {n} expected attempts ({n} tasks x 1 repeat) (stopped when decided after " in out
    )
    assert f"after {n} of the 100 tasks of round 1; adjusted for the stopping rule: median-unbiased estimate" in out
    assert ") excludes any drop" in out


def test_first_round_looks_is_checked_before_anything_runs(project, capsys):
    with pytest.raises(InputError, match="first-round-looks is for --stop-when-decided"):
        EvalRun(load_config(project), ["none", "adapters/good"], first_round_looks=2)
    with pytest.raises(InputError, match="30 test tasks give fewer than 5 tasks per look"):
        EvalRun(load_config(project), ["none", "adapters/good"], stop_when_decided=True, first_round_looks=8)
    run = EvalRun(load_config(project), ["none", "adapters/good"], stop_when_decided=True, first_round_looks=3)
    assert run.plan.sequential is not None and run.plan.sequential.batches == 3
    assert run.plan.sequential.spending == "power"
    assert main(["eval", "--config", str(project), "--adapter", "none", "--first-round-looks", "2"]) == 2
    assert "--first-round-looks is for --stop-when-decided" in capsys.readouterr().err


def test_a_launch_cancelled_within_round_1_resumes_look_by_look_to_the_same_decision(tmp_path):
    """100 tasks, looks after 25, 50, 75, 100 of round 1: cancelled after 60 attempts (in the second batch), the
    resume checks the recorded first look, runs on in the look order and ends as an uninterrupted launch does;
    resuming with another number of looks is refused."""
    project = build(tmp_path / "p", tasks=100, repeats=3, seed=3, adapters={"good": 0.15})
    config = load_config(project)
    holder: dict[str, EvalRun] = {}
    finished = [0]

    def sink(event):
        if isinstance(event, ev.AttemptFinished):
            finished[0] += 1
            if finished[0] == 60:
                holder["run"].cancel()

    run = holder["run"] = EvalRun(
        config, ["none", "adapters/good"], stop_when_decided=True, concurrency=2, on_event=sink
    )
    cut = run.run_sync()
    assert run.cancelled and cut["good"].sequential is not None and cut["good"].sequential.tasks_looked == 25
    with pytest.raises(InputError, match="looks within the first round 4 -> 2"):
        EvalRun(config, ["none", "adapters/good"], stop_when_decided=True, resume=True, first_round_looks=2)
    seen: list = []
    resumed = EvalRun(
        config, ["none", "adapters/good"], stop_when_decided=True, resume=True, on_event=seen.append
    ).run_sync()
    checks = [e for e in seen if isinstance(e, ev.RoundChecked)]
    assert checks and checks[0].tasks == 25  # the recorded look is checked first, as in the launch
    other = build(tmp_path / "q", tasks=100, repeats=3, seed=3, adapters={"good": 0.15})
    whole, _ = launch(other, ["none", "adapters/good"])
    assert resumed["good"].sequential == whole["good"].sequential
    assert resumed["good"].attempts == whole["good"].attempts and resumed["good"].repeats == whole["good"].repeats


def test_a_launch_stopped_with_every_candidate_futile_says_so():
    """The run screen and the finished notice say how the launch stopped: for futility only when every candidate's
    last decision was futile (one futile and one decided: the launch stopped because the last one was decided)."""
    from hermit_tui.core.stats.sequential.look import stopped_how

    assert stopped_how(["futile"]) == "stopped for futility"
    assert stopped_how(["futile", "futile"]) == "stopped for futility"
    assert stopped_how(["futile", "improvement"]) == "stopped when decided"
    assert stopped_how(["regression"]) == "stopped when decided"
    assert stopped_how([]) == "stopped when decided"
