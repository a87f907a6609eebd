"""The adapter's diff between two versions, read from git objects (never the work tree) and from directories by
content; and the pair's tasks, divergence, tool use and usage over evaluations made in the test (why_project)."""

from __future__ import annotations

import json
import subprocess

import git
import pytest
import why_project as wp

from hermit_tui.core.errors import InputError
from hermit_tui.core.why.adapter_diff import diff_versions
from hermit_tui.core.why.adapter_files import read_version
from hermit_tui.core.why.pair import pair_why
from hermit_tui.core.workspace.config import load_config
from hermit_tui.core.workspace.selectors import directory_hash


@pytest.fixture
def project(tmp_path):
    return load_config(wp.build(tmp_path / "p"))


def _status(tree) -> str:
    return subprocess.run(["git", "-C", str(tree), "status", "--porcelain"], capture_output=True, text=True).stdout


def test_diff_of_two_tags_names_exports_first_then_each_file(project):
    head_before = git.Repo(project.tree_dir).head.commit.hexsha
    diff = diff_versions(read_version("v1", project), read_version("v2", project))
    got = {(e.kind, e.name, e.change) for e in diff.exports}
    assert got == {
        ("tool", "new_tool", "added"),
        ("tool", "old_tool", "removed"),
        ("tool", "lookup", "changed"),
        ("skill", "plan", "added"),
        ("skill", "gone", "removed"),
        ("skill", "summarise", "changed"),
        ("subagent", "critic", "added"),
    }
    files = {f.path: f for f in diff.files}
    assert set(files) == {
        "adapter.yaml",
        "ADAPTER.md",
        "tools.py",
        "skills/summarise/SKILL.md",
        "skills/gone/SKILL.md",
        "skills/plan/SKILL.md",
        "agents/critic.md",
        "logo.bin",
        "big.txt",
    }
    assert diff.unchanged_files == 0
    md = files["ADAPTER.md"]
    assert (md.change, md.kind, md.added_lines, md.removed_lines) == ("changed", "text", 2, 1)
    assert "+- two, revised" in md.diff and "-- two" in md.diff and "+- three" in md.diff
    assert files["skills/gone/SKILL.md"].change == "removed"
    assert files["skills/plan/SKILL.md"].change == "added"
    assert (files["logo.bin"].kind, files["logo.bin"].diff) == ("binary", [])
    big = files["big.txt"]
    assert (big.kind, big.size_a, big.size_b, big.diff) == ("large", 15, len(wp.LARGE), [])
    # read from git objects: the tree's work tree and HEAD are as they were
    assert _status(project.tree_dir) == ""
    assert git.Repo(project.tree_dir).head.commit.hexsha == head_before


def test_same_version_and_directory_compared_by_content(project):
    same = diff_versions(read_version("v1", project), read_version("root", project))
    assert same.same and same.files == [] and same.exports == []
    folder = diff_versions(read_version("v2", project), read_version("adapters/local", project))
    assert folder.same, [f.path for f in folder.files]
    assert folder.b.content_hash == directory_hash(project.base / "adapters" / "local")


def test_a_directory_changed_since_its_evaluation_says_so(project):
    folder = project.base / "adapters" / "local"
    recorded = directory_hash(folder)
    out = project.run_dir / "eval" / "local"
    out.mkdir(parents=True)
    (out / "summary.json").write_text(
        json.dumps(
            {
                "adapter": "adapters/local",
                "tasks": 4,
                "repeats": 2,
                "mean_score": 0,
                "solved_once": 0,
                "content_hash": recorded,
            }
        )
    )
    assert not read_version("adapters/local", project).notes
    (folder / "ADAPTER.md").write_text("changed after the evaluation\n")
    version = read_version("adapters/local", project)
    assert version.recorded_hash == recorded and version.content_hash != recorded
    assert any("changed since it was evaluated" in n for n in version.notes)


def test_none_has_no_adapter_and_a_bad_selector_is_one_line(project):
    none = read_version("none", project)
    assert not none.has_adapter and none.files == {}
    diff = diff_versions(none, read_version("v1", project))
    assert {f.change for f in diff.files} == {"added"}
    assert any("none has no adapter" in n for n in diff.notes)
    with pytest.raises(InputError) as exc:
        read_version("nosuch", project)
    assert "\n" not in str(exc.value) and "nosuch" in str(exc.value)
    with pytest.raises(InputError):
        read_version("--output=x", project)


def test_the_evaluated_commit_is_compared_when_the_tag_moved(project):
    repo = git.Repo(project.tree_dir)
    evaluated = repo.commit("v2").hexsha
    (project.tree_dir / "ADAPTER.md").write_text("moved on\n")
    repo.git.commit("-am", "later")
    repo.git.tag("-f", "v2")
    version = read_version("v2", project)
    assert version.commit == evaluated
    assert version.files["ADAPTER.md"].decode() == wp.V2["ADAPTER.md"]
    assert any("now points at" in n for n in version.notes)


def test_pair_summary_flips_divergence_tool_use_and_usage(project):
    pair = pair_why(project, "v1", "v2", wp.TASKS)
    assert pair.flips == {"fixed": ["t1"], "broken": [], "flaky": ["t3", "t4"]}
    assert pair.paired_attempts == 8
    assert pair.divergence == {"1": 4, "3": 1, "never": 3}
    assert pair.divergence_by_task["t3"] == [3, None]
    assert pair.behaviour_changed_score_not == ["t2"]
    assert pair.score_changed_behaviour_not == ["t4"]
    v1, v2 = pair.use
    assert {t.tool: (t.calls, t.share_of_attempts) for t in v1.tools} == {"search": (8, 1.0)}
    tools = {t.tool: t for t in v2.tools}
    assert (tools["new_tool"].calls, tools["new_tool"].calls_per_attempt, tools["new_tool"].errors) == (5, 0.625, 1)
    assert tools["search"].share_of_attempts == 1.0
    assert (v1.used, v1.not_used) == (0, 8)
    assert (v2.used, v2.not_used, v2.unknown) == (5, 3, 0)
    assert v2.usage_by_export == {"tool new_tool": 5}
    assert pair.usage_split is not None
    split = {g.group: g for g in pair.usage_split.groups}
    assert (split["used"].attempts, split["used"].tasks) == (5, 3)
    assert split["used"].mean_score == pytest.approx(0.8) and split["used"].mean_diff == pytest.approx(0.2)
    assert split["not used"].mean_score == pytest.approx(2 / 3, abs=1e-4)
    assert split["not used"].mean_diff == pytest.approx(1 / 3, abs=1e-4)
    assert "not a causal effect" in pair.usage_split.note


def test_pair_without_evaluations_still_diffs(project):
    pair = pair_why(project, "none", "adapters/local", wp.TASKS)
    assert pair.diff is not None
    assert pair.diff.files and pair.paired_attempts == 0
    assert any("not evaluated" in n for n in pair.notes)


def test_a_commits_files_read_by_plain_git_are_gitpythons_in_its_order(tmp_path):
    """The files and sizes of a commit, read with ls-tree and one cat-file batch (no GitPython on the reading path,
    issue 30), are what GitPython's tree traversal reads, in the same order (breadth first, each folder in tree
    order): symlinks as their target, a file over MAX_FILE_BYTES sized but not read, skipped names left out."""
    import os

    from hermit_tui.core.why.adapter_files import MAX_FILE_BYTES, SYMLINK_MODE, _tree_files
    from hermit_tui.core.workspace.selectors import SKIPPED_NAMES
    from hermit_tui.core.workspace.tree import AdapterTree

    repo_dir = tmp_path / "tree"
    files = {
        "z.txt": b"last at the top\n",
        "a/b/c/deep.md": b"three folders down\n",
        "a/x.txt": b"x\n",
        "a/b/y.txt": b"y\n",
        "b.txt": b"",
        "m/n/o.txt": b"o\n",
        "big.bin": b"\0" * (MAX_FILE_BYTES + 1),
        "a/b/c/__pycache__/left.txt": b"left out\n",
        "caf\udce9.txt": b"a name that is not UTF-8\n",
    }
    for rel, data in files.items():
        path = repo_dir / os.fsdecode(os.fsencode(rel))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    (repo_dir / "a" / "link").symlink_to("b/y.txt")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
    env["GIT_COMMITTER_EMAIL"] = "t@t"
    for args in (["init", "-q"], ["add", "-A", "-f"], ["commit", "-q", "-m", "files"]):
        subprocess.run(["git", *args], cwd=repo_dir, check=True, env=env)
    tree = AdapterTree(repo_dir)
    sha = tree.reader.text("rev-parse", "HEAD")

    expected_files: dict[str, bytes] = {}
    expected_sizes: dict[str, int] = {}
    with git.Repo(repo_dir) as repo:
        for item in repo.commit(sha).tree.traverse():
            if not isinstance(item, git.Blob) or any(p in SKIPPED_NAMES for p in str(item.path).split("/")):
                continue
            expected_sizes[str(item.path)] = int(item.size)
            if item.mode == SYMLINK_MODE:
                expected_files[str(item.path)] = b"symlink:" + item.data_stream.read()
            elif item.size <= MAX_FILE_BYTES:
                expected_files[str(item.path)] = item.data_stream.read()
    got_files, got_sizes = _tree_files(tree, sha)
    assert list(got_sizes.items()) == list(expected_sizes.items())
    assert list(got_files.items()) == list(expected_files.items())
    assert got_files["a/link"] == b"symlink:b/y.txt" and "big.bin" in got_sizes and "big.bin" not in got_files
    assert "a/b/c/__pycache__/left.txt" not in got_sizes and "a/b/c/deep.md" in got_files
    assert list(got_sizes)[:3] == ["b.txt", "big.bin", "caf\udce9.txt"]  # the top folder first, then a/, ...
    tree.close()
