"""Smoke subsets never displace evidence (issue 16): ``--limit N`` writes ``eval/<label>/smoke/`` (archived there),
leaves the full evaluation byte for byte, resumes its own folder, and is read only when asked for."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from demo_copies import repair_worktree

from hermit_tui.core.errors import InputError
from hermit_tui.core.records.folders import list_evaluations, open_evaluation
from hermit_tui.core.report.build import build_report
from hermit_tui.core.run.runner import EvalRun
from hermit_tui.core.workspace.config import load_config
from hermit_tui.core.workspace.tasks import load_tasks

FAST = ["agent.params.latency_scale=0"]


@pytest.fixture(scope="module")
def evaluated(demo_template, tmp_path_factory) -> Path:
    dest = tmp_path_factory.mktemp("smoke") / "demo"
    shutil.copytree(demo_template, dest, symlinks=True)
    repair_worktree(demo_template, dest)
    EvalRun(load_config(dest / "run.yaml", FAST), ["none", "final"], update_card=False).run_sync()
    return dest


@pytest.fixture
def ws(evaluated, tmp_path) -> Path:
    dest = tmp_path / "demo"
    shutil.copytree(evaluated, dest, symlinks=True)
    repair_worktree(evaluated, dest)
    return dest


def files(folder: Path, skip: str | None = "smoke") -> dict[str, str]:
    """Every file under ``folder`` (but ``skip``) -> sha256 of its bytes."""
    out = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if path.is_file() and (skip is None or rel.parts[0] != skip):
            out[str(rel)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "hermit_tui", *args], capture_output=True, text=True, timeout=300, env=os.environ.copy()
    )


def test_limit_leaves_the_full_evaluation_byte_for_byte(ws):
    eval_dir = ws / "runs/demo/eval"
    before = {label: files(eval_dir / label) for label in ("none", "final")}
    assert "results.jsonl" in before["none"] and "summary.json" in before["none"]
    card = (ws / "runs/demo/checkout/CARD.md").read_bytes()
    out = cli(
        "eval", "--config", str(ws / "run.yaml"), "--adapter", "none", "--adapter", "final", "--limit", "2", *FAST
    )
    assert out.returncode == 0, out.stderr
    smoke = {label: eval_dir / label / "smoke" for label in ("none", "final")}
    first = {label: files(folder, None) for label, folder in smoke.items()}
    for label in ("none", "final"):
        assert files(eval_dir / label) == before[label]  # byte for byte, nothing archived, nothing added
        assert not (eval_dir / label / "archive").exists()
        rows = [json.loads(line) for line in (smoke[label] / "results.jsonl").read_text().splitlines()]
        assert len(rows) == 2 * 3 and {r["id"] for r in rows} == set((ws / "test.txt").read_text().split()[:2])
        summary = json.loads((smoke[label] / "summary.json").read_text())
        assert summary["smoke_limit"] == 2 and summary["complete"] is True
        assert all(Path(r["log"]).is_relative_to(smoke[label] / "logs") for r in rows if r["log"])
    assert (ws / "runs/demo/checkout/CARD.md").read_bytes() == card  # a smoke run never goes on the card
    # a second smoke run archives the first one inside the smoke folder, and still leaves the evaluation alone
    out = cli("eval", "--config", str(ws / "run.yaml"), "--adapter", "none", "--limit", "2", *FAST)
    assert out.returncode == 0, out.stderr
    assert files(eval_dir / "none") == before["none"]
    archived = list((smoke["none"] / "archive").iterdir())
    assert len(archived) == 1
    kept = files(archived[0], None)
    assert kept == {
        k: v for k, v in first["none"].items() if k in ("results.jsonl", "summary.json", "transcripts.jsonl")
    }


def test_a_smoke_run_resumes_its_own_folder(ws):
    config = load_config(ws / "run.yaml", FAST)
    full = files(ws / "runs/demo/eval/none")
    EvalRun(config, ["none"], limit=3, update_card=False).run_sync()
    path = ws / "runs/demo/eval/none/smoke/results.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:4]))  # 4 of 9 attempts kept, as a killed run leaves them
    summary = EvalRun(config, ["none"], limit=3, resume=True, update_card=False).run_sync()["none"]
    assert summary.attempts == 9 and summary.complete and summary.smoke_limit == 3
    keys = [(json.loads(x)["id"], json.loads(x)["repeat"]) for x in path.read_text().splitlines()]
    assert len(keys) == len(set(keys)) == 9
    assert files(ws / "runs/demo/eval/none") == full
    # resuming without --limit continues the full evaluation (complete: nothing runs) and leaves the smoke folder
    smoke = files(ws / "runs/demo/eval/none/smoke", None)
    summary = EvalRun(config, ["none"], resume=True, update_card=False).run_sync()["none"]
    assert summary.attempts == 48 and summary.smoke_limit is None
    assert files(ws / "runs/demo/eval/none/smoke", None) == smoke


def test_listings_leave_smoke_folders_out_unless_asked(ws):
    EvalRun(load_config(ws / "run.yaml", FAST), ["none"], limit=2, update_card=False).run_sync()
    EvalRun(load_config(ws / "run.yaml", FAST), ["none"], limit=2, update_card=False).run_sync()
    run_dir = ws / "runs/demo"
    full = list_evaluations(run_dir)
    assert [(e.label, e.smoke, e.archived) for e in full] == [("final", False, False), ("none", False, False)]
    smoke = list_evaluations(run_dir, which="smoke")
    assert [(e.label, e.smoke, e.archived) for e in smoke] == [("none", True, False), ("none", True, True)]
    assert smoke[0].name == "none (smoke)" and smoke[1].name.startswith("none (smoke) @ ")
    both = list_evaluations(run_dir, which="all", include_archived=False)
    assert [(e.label, e.smoke) for e in both] == [("final", False), ("none", False), ("none", True)]
    opened = open_evaluation(run_dir / "eval/none/smoke")
    assert (opened.label, opened.smoke, opened.archived) == ("none", True, False)
    opened = open_evaluation(smoke[1].folder)
    assert (opened.label, opened.smoke, opened.archived) == ("none", True, True)
    plain = open_evaluation(run_dir / "eval/none")
    assert (plain.label, plain.smoke) == ("none", False)
    with pytest.raises(ValueError):
        list_evaluations(run_dir, which="some")


def test_the_dashboard_report_and_test_reuse_read_only_full_evaluations(ws, capsys):
    from hermit_tui.cli import main
    from hermit_tui.dashboard.app import current_evaluations

    config = load_config(ws / "run.yaml", FAST)
    before = build_report(config, load_tasks(config), None)
    EvalRun(config, ["none", "root"], limit=2, update_card=False).run_sync()  # root has only a smoke subset
    assert [e.label for e in current_evaluations(config)] == ["final", "none"]
    after = build_report(config, load_tasks(config), None)
    assert [s.label for s in after.selectors] == ["none", "final"] and after.comparable
    assert [(p.a, p.b, p.ci_low, p.ci_high) for p in after.pairs] == [
        (p.a, p.b, p.ci_low, p.ci_high) for p in before.pairs
    ]
    assert not [w for w in after.warnings if "smoke" in w]
    assert after.test_reuse == before.test_reuse
    with pytest.raises(InputError, match="no evaluation of 'root'"):
        build_report(config, load_tasks(config), ["root"])
    smoke = build_report(config, load_tasks(config), None, smoke=True)  # asked for explicitly
    assert [(s.label, s.smoke_limit, s.stats.n_tasks) for s in smoke.selectors] == [("none", 2, 2), ("root", 2, 2)]
    assert "none: smoke subset of 2 tasks: a wiring check, not an evaluation" in smoke.warnings
    assert main(["report", "--config", str(ws / "run.yaml"), "--smoke", "--adapter", "root", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["selectors"][0]["smoke_limit"] == 2
