"""One task through every version: its marks and means in every evaluation of a run (current, archived, written by
hermit), in a launch's order, and the run's checkpoints as a curve on test; ``show --versions`` and its bad input.

The evaluations are written here by hand into a copy of the demo's run folder, with scores chosen so that every
figure asserted is computed in this file (plain arithmetic), not by the code under test."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from statistics import mean

import pytest

from hermit_tui.cli import main
from hermit_tui.core.errors import InputError
from hermit_tui.core.why.versions import CURVE_NOTE, task_versions
from hermit_tui.core.workspace.config import load_config
from hermit_tui.core.workspace.tasks import load_tasks

TASK = "unit-04"
OTHER = "arith-04"


def rec(task: str, repeat: int, status: str, score: float) -> dict:
    return {
        "repeat": repeat,
        "id": task,
        "status": status,
        "error": None if status == "ok" else "boom",
        "output": "x",
        "judge": {"score": score, "feedback": "", "extra": {}},
        "cost_usd": 0.001,
        "wall_s": 0.1,
        "api_speed": None,
        "tokens": 10,
        "log": None,
    }


EVALS = {  # (folder label, summary adapter, commit, archived, written by hermit, attempts)
    "none": ("none", "none", None, None, False, {TASK: [("ok", 0.0), ("ok", 0.5)], OTHER: [("ok", 1.0)] * 2}),
    "root": ("root", "root", "a" * 40, None, False, {TASK: [("ok", 1.0), ("error", 0.0)], OTHER: [("ok", 0.0)] * 2}),
    "s10": (
        "demo_ckpt-step-10",
        "demo/ckpt-step-10",
        "c" * 40,
        None,
        False,
        {TASK: [("ok", 1.0), ("ok", 1.0)], OTHER: [("ok", 1.0), ("ok", 0.0)]},
    ),
    "s2": (
        "demo_ckpt-step-2",
        "demo/ckpt-step-2",
        "b" * 40,
        None,
        True,  # written by hermit eval: no fingerprint, its task count says the split
        {TASK: [("judge_error", 0.0), ("ok", 1.0)], OTHER: [("ok", 0.5)] * 2},
    ),
    "final": ("final", "final", "c" * 40, None, False, {TASK: [("ok", 1.0), ("ok", 0.25)], OTHER: [("ok", 1.0)] * 2}),
    "final-old": (
        "final",
        "final",
        "9" * 40,
        "20260101T000000Z",
        False,
        {TASK: [("ok", 0.0), ("ok", 0.0)], OTHER: [("ok", 1.0)] * 2},
    ),
    "subset": ("variant", "adapters/variant", None, None, False, {TASK: [("ok", 1.0)]}),  # another split
}


def write_eval(run_dir: Path, test_ids: list[str], key: str) -> None:
    label, adapter, commit, archived, by_hermit, attempts = EVALS[key]
    folder = run_dir / "eval" / label
    if archived:
        folder = folder / "archive" / archived
    folder.mkdir(parents=True, exist_ok=True)
    lines = [rec(t, r, st, sc) for t, reps in attempts.items() for r, (st, sc) in enumerate(reps, start=1)]
    (folder / "results.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    ids = test_ids if key != "subset" else [TASK]
    summary = {
        "adapter": adapter,
        "commit": commit,
        "tasks": len(ids),
        "repeats": 2,
        "mean_score": 0.5,
        "solved_once": 0.5,
        "cost_usd": None,
        "unknown_cost_tasks": 0,
        "errors": 0,
        "wall_s": 1.0,
    }
    if not by_hermit:
        digest = hashlib.sha256(json.dumps([str(t) for t in ids], sort_keys=True).encode()).hexdigest()
        summary.update(hermit_tui_version="0.1.0", fingerprint={"test_ids_sha256": digest, "repeats": 2})
    (folder / "summary.json").write_text(json.dumps(summary))


def scores(key: str, task: str) -> list[float]:
    return [sc for _, sc in EVALS[key][5][task]]  # failed attempts score 0, as hermit writes them


@pytest.fixture
def project(demo_config):
    config = load_config(demo_config)
    test_ids = list(load_tasks(config).test_ids)
    assert TASK in test_ids and OTHER in test_ids
    for key in EVALS:
        write_eval(Path(config.run_dir), test_ids, key)
    return demo_config, config, test_ids


def test_a_task_through_every_evaluation_in_a_launchs_order(project):
    _, config, test_ids = project
    tv = task_versions(Path(config.run_dir), TASK, test_ids)
    names = [r.name for r in tv.rows]
    # none, root, checkpoints by step (2 before 10), other versions, final, then final's archive
    assert names == [
        "none",
        "root",
        "demo_ckpt-step-2",
        "demo_ckpt-step-10",
        "variant",
        "final",
        "final @ 20260101T000000Z",
    ]
    by = {(r.label, r.archived_at): r for r in tv.rows}
    keys = {"none": ("none", None), "root": ("root", None), "s2": ("demo_ckpt-step-2", None)}
    keys |= {"s10": ("demo_ckpt-step-10", None), "final": ("final", None)}
    keys |= {"final-old": ("final", "20260101T000000Z"), "subset": ("variant", None)}
    for key, where in keys.items():
        row = by[where]
        assert row.task_mean == pytest.approx(mean(scores(key, TASK))), key
        other_means = [mean(scores(key, t)) for t in EVALS[key][5]]
        assert row.eval_mean == pytest.approx(mean(other_means)), key
    assert by[("root", None)].glyphs == "✓✗"
    assert by[("demo_ckpt-step-2", None)].glyphs == "J✓"
    assert by[("none", None)].glyphs == "○○"
    assert by[("final", None)].glyphs == "✓○"
    assert by[("demo_ckpt-step-2", None)].written_by == "hermit"
    assert by[("final", None)].written_by == "hermit-tui"
    assert by[("demo_ckpt-step-2", None)].on_test  # hermit's: 16 tasks, as the split has
    assert not by[("variant", None)].on_test
    assert by[("demo_ckpt-step-10", None)].step == 10


def test_the_checkpoint_curve_is_on_test_in_training_order_and_says_it_describes(project):
    _, config, test_ids = project
    curve = task_versions(Path(config.run_dir), TASK, test_ids).curve
    assert [(p.kind, p.step) for p in curve.points] == [
        ("root", 0),
        ("checkpoint", 2),
        ("checkpoint", 10),
        ("final", None),
    ]
    assert [p.task_mean for p in curve.points] == pytest.approx(
        [mean(scores(k, TASK)) for k in ("root", "s2", "s10", "final")]
    )
    for p, key in zip(curve.points, ("root", "s2", "s10", "final")):
        assert p.mean == pytest.approx(mean(mean(scores(key, t)) for t in (TASK, OTHER)))
        assert p.n_tasks == 2
        assert p.ci_low is not None and p.ci_high is not None and p.ci_low <= p.mean <= p.ci_high
    assert curve.same_as == {"final": "demo/ckpt-step-10"}  # final's commit is checkpoint 10's
    assert "description only" in curve.note and "forbids" in curve.note and "test reuse" in curve.note


def test_an_unknown_task_and_an_empty_run_are_one_line(project, tmp_path):
    _, config, test_ids = project
    with pytest.raises(InputError, match="--task nope: unknown task"):
        task_versions(Path(config.run_dir), "nope", test_ids)
    with pytest.raises(InputError, match="no evaluation of this run yet"):
        task_versions(tmp_path / "empty-run", TASK, test_ids)
    # a test task no evaluation attempted is shown with no marks, not refused
    missing = next(t for t in test_ids if t not in (TASK, OTHER))
    tv = task_versions(Path(config.run_dir), missing, test_ids)
    assert all(r.marks == [] and r.task_mean is None for r in tv.rows)


def cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_show_versions_text_and_json(project, capsys):
    run_yaml, _, _ = project
    code, out, err = cli(capsys, "show", "--config", str(run_yaml), "--task", TASK, "--versions")
    assert code == 0, err
    assert f"Task {TASK} through every evaluation of the run (7)" in out
    assert "Row: none ○○ 0.250 · root ✓✗ 0.500 · demo_ckpt-step-2 J✓ 0.500 · demo_ckpt-step-10 ✓✓ 1.000" in out
    assert "(another split)" in out
    assert CURVE_NOTE in out
    assert "(the commit of demo/ckpt-step-10)" in out
    code, out, err = cli(capsys, "show", "--config", str(run_yaml), "--task", TASK, "--versions", "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert [r["name"] for r in data["rows"]][:2] == ["none", "root"]
    assert data["curve"]["note"] == CURVE_NOTE


@pytest.mark.parametrize(
    "extra, word",
    [
        (["--task", "nope", "--versions"], "--task nope: unknown task"),
        (["--task", TASK, "--versions", "--adapter", "root"], "--adapter does not go with --versions"),
        (["--task", TASK, "--versions", "--repeat", "1"], "--repeat does not go with --versions"),
        (["--task", TASK, "--versions", "--full"], "--full goes with --align"),
        (["--task", TASK], "--adapter is required (except with --versions)"),
    ],
)
def test_show_versions_bad_input_is_one_line(project, capsys, extra, word):
    run_yaml, _, _ = project
    code, out, err = cli(capsys, "show", "--config", str(run_yaml), *extra)
    assert code == 2 and out == ""
    assert word in err and len(err.strip().splitlines()) == 1
