"""``hermit-tui diff`` and ``hermit-tui show --align``: on a project made in the test (why_project), and on a
project trained by the real ``hermit train`` and evaluated by the real ``hermit eval`` (trained_project); bad input
is one line and exit code 2."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import git
import pytest
import why_project as wp
from trained_project import RUN_DIR, TREE, copy_trained_project

from hermit_tui.cli import main


@pytest.fixture
def run_yaml(tmp_path):
    return str(wp.build(tmp_path / "p"))


@pytest.fixture(scope="module")
def trained(trained_template, tmp_path_factory) -> Path:
    """This module's copy of the session's trained project; its run.yaml."""
    return copy_trained_project(trained_template, tmp_path_factory.mktemp("trained") / "project")


def cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_diff_text_names_exports_files_tasks_and_usage(run_yaml, capsys):
    code, out, err = cli(capsys, "diff", "--config", run_yaml, "--a", "v1", "--b", "v2")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == "# Why it changed: v1 -> v2"
    assert "- fixed (1): t1" in lines and "- broken (0): -" in lines and "- flaky (2): t3, t4" in lines
    assert "- added: tool new_tool, skill plan, subagent critic" in lines
    assert "- removed: tool old_tool, skill gone" in lines
    assert "- changed: tool lookup, skill summarise" in lines
    assert any(line.startswith("- logo.bin: changed (binary") for line in lines)
    assert any(line.startswith("- big.txt: changed (large") for line in lines)
    assert "+- three" in lines
    assert "- step 1: 4" in lines and "- step 3: 1" in lines and "- never (the agents did the same): 3" in lines
    assert "- v2: used in 5 of 8 attempts (62%); unknown 0; tool new_tool 5; read ADAPTER.md in 0" in lines
    assert any("not a causal effect" in line for line in lines)
    # the exports come before the file diffs
    assert lines.index("- added: tool new_tool, skill plan, subagent critic") < lines.index("+- three")


def test_diff_json(run_yaml, capsys):
    code, out, _ = cli(capsys, "diff", "--config", run_yaml, "--a", "v1", "--b", "v2", "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["flips"]["fixed"] == ["t1"]
    assert {(e["kind"], e["name"], e["change"]) for e in data["diff"]["exports"]} >= {("tool", "new_tool", "added")}
    assert data["divergence"] == {"1": 4, "3": 1, "never": 3}


def test_diff_usage_hook_from_a_file_and_from_the_environment(run_yaml, tmp_path, capsys, monkeypatch):
    hook = tmp_path / "p" / "hook.py"
    hook.write_text("def used(messages, exports):\n    return ['lookup']\n")
    code, out, _ = cli(capsys, "diff", "--config", run_yaml, "--a", "v1", "--b", "v2", "--usage-hook", "hook.py:used")
    assert code == 0
    assert "- v2: used in 8 of 8 attempts (100%); unknown 0; tool lookup 8; read ADAPTER.md in 0" in out.splitlines()
    monkeypatch.setenv("HERMIT_TUI_USAGE_HOOK", "hook.py:nothing")
    code, out, err = cli(capsys, "diff", "--config", run_yaml, "--a", "v1", "--b", "v2")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "nothing" in err


@pytest.mark.parametrize(
    "args, word",
    [
        (["--a", "v1", "--b", "nosuch"], "nosuch"),
        (["--a", "--b", "v2"], "--a"),
        (["--a", "v1"], "--b"),
        (["--a", "v1", "--b", "v2", "--format", "xml"], "xml"),
    ],
)
def test_diff_bad_input_is_one_line(run_yaml, capsys, args, word):
    code, out, err = cli(capsys, "diff", "--config", run_yaml, *args)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and word in err and "Traceback" not in err


def test_show_align_marks_the_first_divergence(run_yaml, capsys):
    code, out, err = cli(capsys, "show", "--config", run_yaml, "--adapter", "v1", "--align", "v2", "--task", "t3")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == "Task t3: v1 | v2"
    assert "── repeat 1 ──" in lines and "── repeat 2 ──" in lines
    assert "First divergence: agent step 3 (row 5)" in lines
    assert lines[lines.index(">>+ row 5 inserted") + 1] == '      [2] call new_tool: { "task": "t3" }'
    assert "The agents' steps are the same." in lines  # repeat 2


def test_show_align_json_and_three_way(run_yaml, capsys):
    code, out, _ = cli(
        capsys,
        "show",
        "--config",
        run_yaml,
        "--adapter",
        "v1",
        "--align",
        "v2",
        "--task",
        "t1",
        "--repeat",
        "2",
        "--format",
        "json",
    )
    data = json.loads(out)
    assert code == 0 and data["repeats"] == [2] and data["alignments"][0]["divergence_step"] == 1
    # a third evaluation: a copy of v1's under another label
    root = wp.Path(run_yaml).parent / "runs" / "r" / "eval"
    (root / "root").mkdir()
    for name in ("results.jsonl", "transcripts.jsonl", "summary.json"):
        (root / "root" / name).write_bytes((root / "v1" / name).read_bytes())
    code, out, _ = cli(
        capsys,
        "show",
        "--config",
        run_yaml,
        "--adapter",
        "v1",
        "--align",
        "v2",
        "--align",
        "root",
        "--task",
        "t1",
        "--repeat",
        "1",
    )
    assert code == 0 and "Aligned: [1] v1, [2] v2, [3] root" in out


@pytest.mark.parametrize(
    "args, word",
    [
        (["--adapter", "v1", "--align", "v2", "--task", "nope"], "nope"),
        (["--adapter", "v1", "--align", "v2", "--task", "t1", "--repeat", "9"], "--repeat 9"),
        (["--adapter", "v1", "--align", "nosuch", "--task", "t1"], "nosuch"),
        (["--adapter", "v1", "--align", "v1", "--task", "t1"], "twice"),
        (["--adapter", "v1", "--task", "t1", "--full"], "--full"),
    ],
)
def test_show_align_bad_input_is_one_line(run_yaml, capsys, args, word):
    code, out, err = cli(capsys, "show", "--config", run_yaml, *args)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and word in err


def test_diff_on_a_project_trained_by_real_hermit(trained, capsys):
    project = trained.parent
    tree = project / TREE
    status_before = subprocess.run(["git", "-C", str(tree), "status", "--porcelain"], capture_output=True).stdout
    head_before = git.Repo(tree).head.commit.hexsha
    code, out, err = cli(capsys, "diff", "--config", str(trained), "--a", "root", "--b", "final", "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    repo = git.Repo(tree)
    measured = json.loads((project / RUN_DIR / "eval" / "final" / "summary.json").read_text())["commit"]
    assert data["diff"]["b"]["commit"] == measured
    # what git itself says changed between the two commits, by name
    names = set(repo.git.diff("--name-only", repo.commit("root").hexsha, measured).split())
    assert {f["path"] for f in data["diff"]["files"]} == names
    md = next(f for f in data["diff"]["files"] if f["path"] == "ADAPTER.md")
    numstat = repo.git.diff("--numstat", repo.commit("root").hexsha, measured, "--", "ADAPTER.md").split()
    assert (md["added_lines"], md["removed_lines"]) == (int(numstat[0]), int(numstat[1]))
    # hermit's react-format logs are the trajectories: every paired attempt with a log on both sides is aligned
    assert data["paired_attempts"] > 0 and sum(data["divergence"].values()) == data["paired_attempts"]
    assert subprocess.run(["git", "-C", str(tree), "status", "--porcelain"], capture_output=True).stdout == (
        status_before
    )
    assert git.Repo(tree).head.commit.hexsha == head_before
    code, out, _ = cli(capsys, "diff", "--config", str(trained), "--a", "none", "--b", "adapters/shouty")
    assert code == 0 and "none has no adapter" in out


def test_the_report_has_a_section_per_compared_pair(run_yaml, capsys):
    code, md, _ = cli(capsys, "report", "--config", run_yaml)
    assert code == 0
    lines = md.splitlines()
    assert "## Why it changed" in lines and "### Why it changed: v1 -> v2" in lines
    start = lines.index("### Why it changed: v1 -> v2")
    assert "- fixed (1): t1" in lines[start:] and "- added: tool new_tool, skill plan, subagent critic" in lines
    code, out, _ = cli(capsys, "report", "--config", run_yaml, "--format", "json")
    why = json.loads(out)["why"]
    assert [(p["a"], p["b"]) for p in why] == [("v1", "v2")] and why[0]["divergence"] == {"1": 4, "3": 1, "never": 3}
    code, page, _ = cli(capsys, "report", "--config", run_yaml, "--format", "html")
    assert code == 0 and '<section id="why">' in page and "tool new_tool" in page


def test_show_versions_on_evaluations_hermit_wrote(trained, capsys):
    """Every evaluation of the trained project was written by the real ``hermit eval``: the task's marks and mean in
    each are read back from its results.jsonl here, by hand."""
    from statistics import mean

    project = trained.parent
    eval_dir = project / RUN_DIR / "eval"
    first = json.loads((eval_dir / "root" / "results.jsonl").read_text().splitlines()[0])
    task = str(first["id"])
    code, out, err = cli(capsys, "show", "--config", str(trained), "--task", task, "--versions", "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    rows = {r["name"]: r for r in data["rows"]}
    folders = sorted(p.name for p in eval_dir.iterdir() if (p / "results.jsonl").is_file())
    assert sorted(r["label"] for r in data["rows"] if r["archived_at"] is None) == folders
    assert [r["name"] for r in data["rows"]][:2] == ["none", "root"]
    for label in folders:
        lines = [json.loads(x) for x in (eval_dir / label / "results.jsonl").read_text().splitlines() if x.strip()]
        mine = {int(x["repeat"]): float(x["judge"]["score"]) for x in lines if str(x["id"]) == task}
        row = rows[label]
        assert row["written_by"] == "hermit", label
        assert [m["repeat"] for m in row["marks"]] == sorted(mine), label
        assert row["task_mean"] == pytest.approx(mean(mine.values())), label
    kinds = [(p["kind"], p["step"]) for p in data["curve"]["points"]]
    # checkpoint 2 was evaluated by its commit id: the tree's tag places it on the curve as step 2
    assert kinds == [("root", 0), ("checkpoint", 1), ("checkpoint", 2), ("final", None)]
    step2 = git.Repo(project / TREE).commit("demo/ckpt-step-2").hexsha
    assert next(p for p in data["curve"]["points"] if p["step"] == 2)["commit"] == step2


def test_the_reports_why_section_says_when_a_version_cannot_be_read(run_yaml, capsys):
    """An evaluation whose recorded commit is not in the tree (a rewritten history) is read at its tag, with a note;
    once the tag is gone too, the report still exits 0 and the pair's section is a one-line note, while ``diff`` on
    that pair is bad input: one line, exit 2."""
    from pathlib import Path

    summary_path = next(Path(run_yaml).parent.rglob("eval/v2/summary.json"))
    summary = json.loads(summary_path.read_text())
    summary["commit"] = "f" * 40
    summary_path.write_text(json.dumps(summary))
    code, md, err = cli(capsys, "report", "--config", run_yaml)
    assert code == 0, err
    assert "- note: v2: the evaluated commit fffffff is not in the tree; read " in md
    tree = next(p.parent for p in Path(run_yaml).parent.rglob(".git") if p.parent.name != "checkout")
    git.Repo(tree).git.tag("-d", "v2")
    code, md, err = cli(capsys, "report", "--config", run_yaml)
    assert code == 0, err
    lines = md.splitlines()
    start = lines.index("### Why it changed: v1 -> v2")
    notes = [ln for ln in lines[start + 1 : start + 4] if ln.startswith("- ") and "v2" in ln]
    assert len(notes) == 1, lines[start : start + 6]
    code, out, err = cli(capsys, "diff", "--config", run_yaml, "--a", "v1", "--b", "v2")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "v2" in err
