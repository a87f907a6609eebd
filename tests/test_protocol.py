"""Protocol checks on tiny hand-made configs, and test-reuse accounting over hand-made evaluation folders."""

import hashlib
import json
import subprocess
from pathlib import Path

import yaml

from hermit_tui.core.records.results import AttemptRecord, Judged
from hermit_tui.core.report import protocol
from hermit_tui.core.workspace.config import load_config
from hermit_tui.core.workspace.tasks import load_tasks
from hermit_tui.core.workspace.tree import AdapterTree

IDS = [f"t{i}" for i in range(1, 9)]


def workspace(
    tmp_path: Path, *, train=("t1", "t2", "t3"), val=("t4", "t5"), test=("t6", "t7", "t8"), rows=None, **sections
) -> Path:
    """A run.yaml with its task file and splits under data/; ``sections`` are merged into the config."""
    data = tmp_path / "data"
    data.mkdir(parents=True, exist_ok=True)
    rows = rows or {}
    (data / "tasks.jsonl").write_text(
        "".join(json.dumps({"id": t, "input": f"q {t}", **rows.get(t, {})}) + "\n" for t in IDS)
    )
    for name, ids in (("train", train), ("val", val), ("test", test)):
        (data / f"{name}.txt").write_text("".join(f"{t}\n" for t in ids))
    config = {
        "data": {
            "tasks": "data/tasks.jsonl",
            "train": "data/train.txt",
            "val": "data/val.txt",
            "test": "data/test.txt",
        },
        "agent": {"name": "pipeline.py:run"},
        "judge": {"path": "judge.py"},
        "evolver": {"name": "claude"},
        "trainer": {"run_name": "r"},
    }
    for key, value in sections.items():
        config.setdefault(key, {}).update(value)
    (tmp_path / "run.yaml").write_text(yaml.safe_dump(config))
    return tmp_path / "run.yaml"


def checks_of(path: Path) -> list[protocol.Check]:
    config = load_config(path)
    return protocol.protocol_checks(config, load_tasks(config))


def codes(checks) -> list[str]:
    return [c.code for c in checks]


def test_a_clean_config_has_no_finding(tmp_path):
    assert checks_of(workspace(tmp_path)) == []


def test_test_overlapping_train_and_val_is_an_error_naming_counts_and_ids(tmp_path):
    path = workspace(tmp_path, train=("t1", "t6", "t7"), val=("t8",))
    found = checks_of(path)
    assert [(c.level, c.code) for c in found] == [("error", "test_overlap")] * 2
    assert found[0].message.startswith("test overlaps train: 2 tasks (t6, t7)")
    assert found[1].message.startswith("test overlaps val: 1 task (t8)")


def test_answer_like_fields_in_train_or_val_rows(tmp_path):
    rows = {
        "t1": {"Expected": 42},
        "t2": {"meta": {"gold": "x"}},
        "t4": {"solution": "s"},
        "t6": {"answer": 1},
    }  # t6 is a test row: not learning material
    found = checks_of(workspace(tmp_path, rows=rows))
    assert codes(found) == ["answer_fields", "answer_fields"]
    assert all(c.level == "warning" for c in found)
    assert "2 train task rows carry answer-like fields: Expected (1), meta.gold (1)" in found[0].message
    assert "1 val task row carries answer-like fields: solution (1)" in found[1].message
    assert "judge-owned storage" in found[0].message


def test_a_read_grant_on_the_data_folder_exposes_the_tasks_file_and_the_test_split(tmp_path):
    (tmp_path / "docs").mkdir()
    found = checks_of(
        workspace(tmp_path, sandbox={"read": ["docs", "data"]}, evolver_access={"environment": ["data/test.txt"]})
    )
    assert codes(found) == ["grant_exposes_test", "grant_exposes_test"]
    assert found[0].message.startswith(
        "sandbox.read[1] grants 'data' (data), which holds the test split test.txt and the tasks file tasks.jsonl"
    )
    assert found[1].message.startswith(
        "evolver_access.environment[0] grants 'data/test.txt' (data/test.txt), which is the test split test.txt"
    )


def test_a_profile_grant_on_the_config_folder_counts_as_a_parent(tmp_path):
    found = checks_of(workspace(tmp_path, sandbox={"profiles": {"learner": {"read": ["."]}}}))
    assert codes(found) == ["grant_exposes_test"]
    assert found[0].message.startswith("sandbox.profiles.learner.read[0] grants '.'")


def test_sandbox_disabled_and_ordered_stream(tmp_path):
    found = checks_of(workspace(tmp_path, sandbox={"enabled": False}, data={"shuffle": False}))
    assert [(c.level, c.code) for c in found] == [("warning", "sandbox_disabled"), ("info", "ordered_stream")]
    assert "sandbox.enabled: false in" in found[0].message


def test_the_runs_resolved_config_is_read_before_the_current_one(tmp_path):
    """Training ran with the sandbox on: a later edit of run.yaml does not change what happened in training."""
    path = workspace(tmp_path, sandbox={"enabled": False})
    run_dir = tmp_path / "runs" / "r"
    run_dir.mkdir(parents=True)
    trained = {
        "data": {"tasks": "data/tasks.jsonl", "test": "data/test.txt"},
        "sandbox": {"enabled": True, "read": ["data"]},
    }
    (run_dir / "config.yaml").write_text(yaml.safe_dump({"config": trained, "warnings": []}))
    found = checks_of(path)
    assert codes(found) == ["grant_exposes_test"]
    assert "(runs/r/config.yaml)" in found[0].message  # named relative to the config's folder


def test_validation_handed_to_the_evolver_only_when_the_run_shows_it(tmp_path):
    path = workspace(tmp_path)
    assert checks_of(path) == []  # no training run: nothing can be told
    run_dir = tmp_path / "runs" / "r"
    run_dir.mkdir(parents=True)
    (run_dir / "config.yaml").write_text(yaml.safe_dump({"config": {"data": {"val": "data/val.txt"}}}))
    found = checks_of(path)
    assert [(c.level, c.code) for c in found] == [("info", "val_to_evolver")]
    assert found[0].message.startswith("validation data (2 tasks) was handed to the Evolver")
    # what hermit copied for the Evolver holds a test task: an error, whatever the current val split says
    access = run_dir / "access" / "validation"
    access.mkdir(parents=True)
    (access / "tasks.jsonl").write_text('{"id": "t4"}\n{"id": "t7"}\n')
    found = checks_of(path)
    assert [(c.level, c.code) for c in found] == [("error", "val_to_evolver")]
    assert "includes 1 task of the test split (t7)" in found[0].message


def rec(tid: str, score: float, repeat: int = 1) -> AttemptRecord:
    return AttemptRecord(repeat=repeat, id=tid, status="ok", judge=Judged(score=score))


def test_score_scale():
    assert protocol.score_scale_check({"none": [rec("a", 0.0), rec("b", 1.0)]}) is None
    check = protocol.score_scale_check({"none": [rec("a", 0.0)], "final": [rec("a", 37.0), rec("b", -2)]})
    assert check is not None
    assert (check.level, check.code) == ("warning", "score_scale")
    assert check.message == (
        "scores range from -2 to 37 (final), outside [0, 1]: solved-at-least-once (threshold "
        "1.0) is not a meaningful solved rate for this benchmark; set a success threshold"
    )
    info = protocol.score_scale_check({"x": [("a", 1, 50.0)]}, threshold=30)
    assert info is not None
    assert info.level == "info" and "threshold 30 you set" in info.message


# --------------------------------------------------------------------------------------------- test reuse

TEST_IDS = ["t6", "t7", "t8"]


def ids_digest(ids) -> str:
    return hashlib.sha256(json.dumps(ids).encode()).hexdigest()


def put_eval(
    run_dir: Path,
    label: str,
    adapter: str,
    commit: str | None,
    *,
    ids=TEST_IDS,
    fingerprint=True,
    archived: str | None = None,
    content_hash: str | None = None,
) -> None:
    folder = run_dir / "eval" / label
    if archived:
        folder = folder / "archive" / archived
    folder.mkdir(parents=True, exist_ok=True)
    summary: dict[str, object] = {
        "adapter": adapter,
        "commit": commit,
        "tasks": len(ids),
        "repeats": 1,
        "mean_score": 0.5,
        "solved_once": 0.5,
        "cost_usd": None,
        "unknown_cost_tasks": 0,
        "errors": 0,
        "wall_s": 1.0,
    }
    if fingerprint:
        summary.update(
            hermit_tui_version="0.1.0",
            content_hash=content_hash,
            fingerprint={"test_ids_sha256": ids_digest(ids), "repeats": 1},
        )
    (folder / "summary.json").write_text(json.dumps(summary))
    (folder / "results.jsonl").write_text("")


def test_three_checkpoints_and_final_compared_on_test_give_a_note(tmp_path):
    run_dir = tmp_path / "r"
    put_eval(run_dir, "none", "none", None)
    for n, c in enumerate("abc", start=1):
        put_eval(run_dir, f"r_ckpt-step-{n}", f"r/ckpt-step-{n}", c * 40)
    put_eval(run_dir, "final", "final", "d" * 40)
    put_eval(run_dir, "final", "final", "d" * 40, archived="20260101T000000Z")  # the same adapter again
    reuse = protocol.test_reuse(run_dir, None, TEST_IDS)
    assert (reuse.adapters, reuse.non_final, reuse.evaluations, reuse.other_split) == (4, 3, 5, 0)
    assert reuse.note == (
        "final was chosen after 4 adapters of this run were compared on the test split: the test "
        "score of final is not an untouched estimate"
    )
    final = [s for s in reuse.seen if s.is_final]
    assert [s.evaluations for s in final] == [["final", "final @ 20260101T000000Z"]]


def test_none_root_final_give_no_note(tmp_path):
    run_dir = tmp_path / "r"
    for label, commit in (("none", None), ("root", "1" * 40), ("final", "f" * 40)):
        put_eval(run_dir, label, label, commit)
    reuse = protocol.test_reuse(run_dir, None, TEST_IDS)
    assert (reuse.adapters, reuse.non_final, reuse.note) == (2, 1, None)


def test_only_evaluations_on_this_split_count(tmp_path):
    run_dir = tmp_path / "r"
    put_eval(run_dir, "final", "final", "f" * 40)
    put_eval(run_dir, "r_ckpt-step-1", "r/ckpt-step-1", "a" * 40, ids=["t6"])  # a smoke subset: another split
    put_eval(run_dir, "r_ckpt-step-2", "r/ckpt-step-2", "b" * 40, fingerprint=False)  # hermit's: 3 tasks, counts
    put_eval(run_dir, "r_ckpt-step-3", "r/ckpt-step-3", "c" * 40, ids=["t1", "t2"], fingerprint=False)  # 2 tasks
    put_eval(run_dir, "mine", "adapters/mine", None, content_hash="9" * 64)
    reuse = protocol.test_reuse(run_dir, None, TEST_IDS)
    assert (reuse.adapters, reuse.non_final, reuse.evaluations, reuse.other_split) == (3, 2, 3, 2)
    assert sorted(s.identity for s in reuse.seen) == ["commit:" + "b" * 40, "commit:" + "f" * 40, "dir:" + "9" * 64]
    assert reuse.note is not None and "after 3 adapters" in reuse.note


def test_card_only_commits_are_the_adapter_they_describe(demo_config):
    """With the tree: the demo's final commit adds only CARD.md to ckpt-step-3, so both measure one adapter."""
    run_dir = demo_config.parent / "runs" / "demo"
    tree_dir = demo_config.parent / "runs" / "trees" / "demo-notes"

    def git(*a):
        done = subprocess.run(["git", "-C", str(tree_dir), *a], capture_output=True, text=True, check=True)
        return done.stdout.split()

    ckpt = {n: git("rev-parse", f"demo/ckpt-step-{n}^{{commit}}")[0] for n in (1, 2, 3)}
    final = git("rev-parse", "demo/final^{commit}")[0]
    assert git("diff", "--name-only", ckpt[3], final) == ["CARD.md"]  # the premise, checked with git itself
    for n, sha in ckpt.items():
        put_eval(run_dir, f"demo_ckpt-step-{n}", f"demo/ckpt-step-{n}", sha)
    put_eval(run_dir, "final", "final", final)
    tree = AdapterTree(tree_dir)
    try:
        reuse = protocol.test_reuse(run_dir, tree, TEST_IDS)
    finally:
        tree.close()
    assert (reuse.adapters, reuse.non_final) == (3, 2)
    assert reuse.note is not None and "after 3 adapters" in reuse.note
    # without the tree, commits are told apart as recorded
    assert protocol.test_reuse(run_dir, None, TEST_IDS).adapters == 4
