"""hermit-tui on a project trained by the real ``hermit train`` and evaluated by the real ``hermit eval``
(tests/trained_project.py builds it once for this module). Every expected value is worked out here from the files
hermit wrote (results.jsonl read with json, the tree read with git), never with hermit-tui's readers."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest
from trained_project import CLOCK_START, COMMIT_DIGITS, FILES, RUN, RUN_DIR, TREE, copy_trained_project

from hermit_tui.cli import main

INVALID = "[invalid: fails check_spec; the next commit repairs it]"  # hermit's mark on a commit it then repairs
TAGS = {"root", f"{RUN}/ckpt-step-1", f"{RUN}/ckpt-step-2", f"{RUN}/ckpt-step-3", f"{RUN}/final"}
# label -> (selector as typed, repeats); the commit's label is its first COMMIT_DIGITS hex digits, added below
HERMIT_EVALUATIONS = {
    "none": ("none", 3),
    "root": ("root", 3),
    f"{RUN}_ckpt-step-1": (f"{RUN}/ckpt-step-1", 3),
    "shouty": ("adapters/shouty", 3),
    "final": ("final", 3),
}
# The scores are deterministic: the sum of every attempt's score per label (tasks x repeats attempts), pinned.
SCORE_SUMS = {"none": 9, "root": 13, f"{RUN}_ckpt-step-1": 16, "commit": 6, "shouty": 19, "final": 19}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout.strip()


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=cwd, capture_output=True, text=True, timeout=300, env=os.environ.copy()
    )


def tree_digest(root: Path) -> dict[str, str]:
    """Every file under ``root`` (git's internals included) by its sha256: what a read-only command must not change."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def hermit_tui(capsys, project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A hermit-tui command on the project, in this process (as the command line runs it, without a second
    interpreter's start-up); it must leave every file of the project as it was."""
    before = tree_digest(project)
    capsys.readouterr()
    code = main([args[0], "--config", str(project / "run.yaml"), *args[1:]])
    out, err = capsys.readouterr()
    assert tree_digest(project) == before, f"hermit-tui {args[0]} changed the project's files"
    return subprocess.CompletedProcess([args[0]], code, out, err)


def results(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines() if line.strip()]


def by_task(rows: list[dict]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for row in rows:
        out.setdefault(row["id"], []).append(row["judge"]["score"])
    return out


@pytest.fixture(scope="module")
def project(trained_template, tmp_path_factory) -> Path:
    """This module's copy of the session's trained project (what hermit train and eval wrote, paths moved)."""
    return copy_trained_project(trained_template, tmp_path_factory.mktemp("trained") / "project").parent


@pytest.fixture(scope="module")
def commit_label(project) -> str:
    return git(project / TREE, "rev-parse", f"{RUN}/ckpt-step-2^{{commit}}")[:COMMIT_DIGITS]


@pytest.fixture(scope="module")
def expected(project, commit_label) -> dict[str, tuple[str, int]]:
    """label -> (selector, repeats) of every evaluation hermit wrote."""
    return {**HERMIT_EVALUATIONS, commit_label: (commit_label, 1)}


def test_hermit_trained_a_tree_with_checkpoints_an_invalid_commit_and_a_moved_final(project):
    tree = project / TREE
    assert set(git(tree, "tag").splitlines()) == TAGS
    log = [
        line.split(" ", 2)
        for line in git(tree, "log", "--all", "--topo-order", "--reverse", "--format=%H %ct %s").splitlines()
    ]
    # one root, three steps (step 2 committed as invalid, then repaired), the final commit, two card commits
    assert [subject.split(" [")[0].split(":")[0] for _, _, subject in log] == [
        "root",
        "step 1 (epoch 1)",
        "step 2 (epoch 1)",
        "repair step 2 (epoch 1)",
        "step 3 (epoch 1)",
        "final",
        "card",
        "card",
    ]
    assert [int(stamp) for _, stamp, _ in log] == [CLOCK_START + 60 * i for i in range(len(log))]
    invalid = [sha for sha, _, _ in log if INVALID in git(tree, "log", "-1", "--format=%B", sha)]
    assert invalid == [log[2][0]]
    assert git(tree, "rev-parse", f"{RUN}/ckpt-step-2^{{commit}}") == log[3][0]
    assert git(tree, "rev-parse", f"{RUN}/final^{{commit}}") == log[-1][0]
    # hermit measured final on the first card commit, then moved the tag past it
    summary = json.loads((project / RUN_DIR / "eval" / "final" / "summary.json").read_text())
    assert summary["commit"] == log[-2][0]
    checkout = project / RUN_DIR / "checkout"
    assert git(checkout, "rev-parse", "HEAD") == log[-1][0]
    assert "| final | 12 | 3 |" in (checkout / "CARD.md").read_text()


def test_hermit_wrote_every_evaluation_with_the_pinned_scores(project, expected, commit_label):
    evals = project / RUN_DIR / "eval"
    assert {p.name for p in evals.iterdir()} == set(expected)
    tests = (project / "test.txt").read_text().split()
    for label, (selector, repeats) in expected.items():
        rows, summary = results(evals / label), json.loads((evals / label / "summary.json").read_text())
        assert (summary["adapter"], summary["repeats"], summary["tasks"]) == (selector, repeats, len(tests))
        assert [(r["repeat"], r["id"]) for r in rows] == [(k, t) for k in range(1, repeats + 1) for t in tests]
        total = sum(Fraction(r["judge"]["score"]) for r in rows)
        assert total == SCORE_SUMS["commit" if label == commit_label else label]
        assert summary["mean_score"] == pytest.approx(float(total / len(rows)))
        # each repeat: sum-06's input makes the pipeline raise, vow-06 has no reference answer
        assert {(r["id"], r["status"]) for r in rows if r["status"] != "ok"} == {
            ("sum-06", "error"),
            ("vow-06", "judge_error"),
        }
    assert (project / "adapters" / "shouty" / "adapter.yaml").is_file()


def test_report_lists_every_evaluation_with_the_means_by_hand(capsys, project, expected):
    run = hermit_tui(capsys, project, "report", "--format", "json")
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    shown = {s["label"]: s for s in report["selectors"]}
    assert set(shown) == set(expected)
    evals = project / RUN_DIR / "eval"
    for label, (selector, repeats) in expected.items():
        rows = results(evals / label)
        tasks = by_task(rows)
        summary = json.loads((evals / label / "summary.json").read_text())
        stats = shown[label]["stats"]
        assert (shown[label]["adapter"], shown[label]["commit"]) == (selector, summary["commit"])
        assert (stats["n_attempts"], stats["repeats"], stats["n_tasks"]) == (len(rows), repeats, len(tasks))
        assert stats["mean"] == pytest.approx(sum(r["judge"]["score"] for r in rows) / len(rows), abs=1e-12)
        solved = sum(1 for scores in tasks.values() if max(scores) >= 1.0) / len(tasks)
        assert stats["solved_once"] == pytest.approx(solved, abs=1e-12)
    none, final = by_task(results(evals / "none")), by_task(results(evals / "final"))
    diffs = [sum(final[t]) / len(final[t]) - sum(none[t]) / len(none[t]) for t in none]
    pair = next(p for p in report["pairs"] if (p["a"], p["b"]) == ("none", "final"))
    assert pair["mean_diff"] == pytest.approx(sum(diffs) / len(diffs), abs=1e-12)
    assert pair["n_paired"] == len(diffs)


def test_gate_passes_final_over_none_and_refuses_the_one_repeat_commit(capsys, project, commit_label):
    evals = project / RUN_DIR / "eval"
    run = hermit_tui(capsys, project, "gate", "--allow-unchecked", "--format", "json")
    assert run.returncode == 0, run.stdout + run.stderr
    gate = json.loads(run.stdout)
    assert (gate["baseline"], gate["candidate"], gate["verdict"]) == ("none", "final", "PASS")
    for selector in gate["selectors"]:
        rows = results(evals / selector["label"])
        assert selector["mean"] == pytest.approx(sum(r["judge"]["score"] for r in rows) / len(rows), abs=1e-12)
        assert selector["attempts"] == len(rows)
    # 3 repeats against 1: not comparable, so the gate fails (exit 3) whatever the figures; strict no-regression
    # (margin 0) fails with it exactly when the interval's low end does not lie above 0, and the gate says which
    run = hermit_tui(capsys, project, "gate", "--allow-unchecked", "--candidate", commit_label, "--format", "json")
    assert run.returncode == 3, run.stdout + run.stderr
    gate = json.loads(run.stdout)
    low, high = gate["interval"]["low"], gate["interval"]["high"]
    assert not gate["passed"] and low < high
    expected = ["comparable"] + (["no-regression"] if low <= 0 else [])
    assert [c["requirement"] for c in gate["checks"] if not c["passed"]] == expected
    one = results(evals / commit_label)
    n = len({r["id"] for r in one})
    assert len(one) == n and f"{commit_label} {n} tasks × 1 repeat ({n} attempts)" in gate["evidence"]
    # without --allow-unchecked the exit code follows the checks it printed
    run = hermit_tui(capsys, project, "gate", "--format", "json")
    gate = json.loads(run.stdout)
    assert run.returncode == (0 if gate["passed"] else 3)
    assert gate["passed"] == all(c["passed"] for c in gate["checks"])


@pytest.mark.parametrize(
    ("selector", "label", "task"),
    [
        ("none", "none", "rev-04"),
        ("root", "root", "sum-06"),
        (f"{RUN}/ckpt-step-1", f"{RUN}_ckpt-step-1", "vow-06"),
        ("adapters/shouty", "shouty", "sort-05"),
        ("final", "final", "rev-05"),
        ("commit", "commit", "vow-04"),
    ],
)
def test_show_gives_each_attempt_as_hermit_wrote_it(capsys, project, commit_label, selector, label, task):
    if selector == "commit":
        selector = label = commit_label
    run = hermit_tui(capsys, project, "show", "--adapter", selector, "--task", task, "--format", "json")
    assert run.returncode == 0, run.stderr
    shown = json.loads(run.stdout)
    rows = [r for r in results(project / RUN_DIR / "eval" / label) if r["id"] == task]
    assert shown["label"] == label
    assert [(a["repeat"], a["status"], a["score"], a["output"], a["error"]) for a in shown["attempts"]] == [
        (r["repeat"], r["status"], r["judge"]["score"], r["output"], r["error"]) for r in rows
    ]
    for attempt, row in zip(shown["attempts"], rows):
        if row["log"] is None:
            continue
        messages = json.loads(Path(row["log"]).read_text())["messages"]
        assert attempt["transcript"]["messages"] == messages


def test_hermit_check_still_accepts_the_config(project):
    assert (project / "run.yaml").read_bytes() == (FILES / "run.yaml").read_bytes()
    run = cli("hermit", "check", "--config", "run.yaml", cwd=project)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "PROBLEM" not in run.stdout


def test_a_copy_has_its_own_worktree_and_logs(capsys, project, tmp_path):
    run_yaml = copy_trained_project(project, tmp_path / "copy")
    copy = run_yaml.parent
    checkout = copy / RUN_DIR / "checkout"
    assert Path(git(checkout, "rev-parse", "--show-toplevel")) == checkout
    assert git(checkout, "rev-parse", "HEAD") == git(copy / TREE, "rev-parse", f"{RUN}/final^{{commit}}")
    assert git(checkout, "status", "--porcelain") == ""
    assert f"worktree {checkout}" in git(copy / TREE, "worktree", "list", "--porcelain")
    assert f"worktree {project / RUN_DIR / 'checkout'}" in git(project / TREE, "worktree", "list", "--porcelain")
    logs = [r["log"] for r in results(copy / RUN_DIR / "eval" / "final") if r["log"]]
    assert logs and all(log.startswith(f"{copy}{os.sep}logs{os.sep}") and Path(log).is_file() for log in logs)
    original, copied = results(project / RUN_DIR / "eval" / "final"), results(copy / RUN_DIR / "eval" / "final")
    assert [{**r, "log": None} for r in copied] == [{**r, "log": None} for r in original]
    run = hermit_tui(capsys, copy, "show", "--adapter", "final", "--task", "rev-04", "--format", "json")
    assert run.returncode == 0, run.stderr
    assert all(a["log"].startswith(str(copy)) for a in json.loads(run.stdout)["attempts"])
