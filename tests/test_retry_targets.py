"""core.run.continuing.retry_targets: which failed attempts the dashboard's 'Re-run failed' launches, per eval folder,
and which evaluations it leaves out (smoke checks, archived ones, those stored outside this run's eval folder)."""

from __future__ import annotations

from hermit_tui.core.run.continuing import RetryCandidate, retry_targets
from hermit_tui.core.workspace.config import load_config


def test_current_and_live_evaluations_are_retried_the_rest_left_out(demo_config, tmp_path):
    config = load_config(demo_config)
    root = config.run_dir / "eval"
    (root / "final").mkdir(parents=True, exist_ok=True)
    candidates = [
        RetryCandidate(key="none", label="none", failed=[("t2", 1), ("t1", 3)], folder=root / "none"),
        RetryCandidate(key="root", label="root", failed=[("t1", 1)], live=True),  # launched here: written here
        RetryCandidate(key="final", label="final", failed=[("t4", 2)]),  # read from disk, folder not recorded
        RetryCandidate(key="ok", label="ok", failed=[], folder=root / "ok"),  # nothing failed: not mentioned
        RetryCandidate(key="smoke", label="none", failed=[("t9", 1)], folder=root / "none" / "smoke"),
        RetryCandidate(key="old", label="root", failed=[("t1", 2)], folder=root / "root", archived=True),
        RetryCandidate(key="elsewhere", label="x", failed=[("t1", 1)], folder=tmp_path / "other" / "x"),
        RetryCandidate(key="gone", label="gone", failed=[("t1", 1)]),  # no folder recorded, none on disk
    ]
    plan, skipped = retry_targets(candidates, config)
    assert plan == {"none": [("t1", 3), ("t2", 1)], "root": [("t1", 1)], "final": [("t4", 2)]}
    assert skipped == ["smoke", "old", "elsewhere", "gone"]


def test_two_columns_of_one_folder_are_merged_without_duplicates(demo_config):
    config = load_config(demo_config)
    folder = config.run_dir / "eval" / "root"
    plan, skipped = retry_targets(
        [
            RetryCandidate(key="root", label="root", failed=[("b", 1), ("a", 1)], live=True),
            RetryCandidate(key="root#2", label="root", failed=[("a", 1)], folder=folder),
        ],
        config,
    )
    assert plan == {"root": [("a", 1), ("b", 1)]} and skipped == []


def test_without_a_run_folder_only_live_evaluations_are_retried(tmp_path):
    live = RetryCandidate(key="root", label="root", failed=[("t1", 1)], live=True)
    disk = RetryCandidate(key="none", label="none", failed=[("t1", 1)], folder=tmp_path / "eval" / "none")
    assert retry_targets([live, disk], None) == ({"root": [("t1", 1)]}, ["none"])
