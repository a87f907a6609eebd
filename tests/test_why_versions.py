"""One task through every version: its marks and means in every evaluation of a run (current, archived, written by
hermit), in a launch's order, and the run's checkpoints as a curve on test; ``show --versions`` and its bad input.

The evaluations are written by hand into a copy of the demo's run folder (versions_project.py), with scores chosen
so that every figure asserted is computed from them with plain arithmetic, not by the code under test."""

from __future__ import annotations

import json
from pathlib import Path
from statistics import mean

import pytest
import versions_project as vp
from versions_project import EVALS, OTHER, TASK, scores

from hermit_tui.cli import main
from hermit_tui.core.errors import InputError
from hermit_tui.core.why.versions import CURVE_NOTE, task_versions


@pytest.fixture
def project(demo_config):
    config, test_ids = vp.write_all(demo_config)
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
    keys: dict[str, tuple[str, str | None]] = {"none": ("none", None), "root": ("root", None)}
    keys |= {"s2": ("demo_ckpt-step-2", None)}
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
        assert p.mean is not None and p.ci_low is not None and p.ci_high is not None
        assert p.ci_low <= p.mean <= p.ci_high
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
