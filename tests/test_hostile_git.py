"""Hostile adapter trees (issue 29): code the tree holds never runs, selectors mean what the user typed, tag and
branch moves are compare-and-swap, and a killed publish is recovered by the next publish or undo.

An adapter tree is learner-written material. Every case here arms a real tree (the demo's) with hooks and configured
commands that each leave a marker file outside the workspace when run, then runs hermit-tui's commands on it under
a time limit and checks that no marker appeared and nothing outside the workspace changed.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from demo_copies import copy_workspace
from hostile_util import snapshot, time_limit

from hermit_tui.cli import main
from hermit_tui.core.errors import InputError
from hermit_tui.core.publish.apply import plan_publish, publish, undo_publish
from hermit_tui.core.publish.card import CRASH_ENV
from hermit_tui.core.publish.recovery import PUBLISH_STEPS, UNDO_STEPS
from hermit_tui.core.run.runner import EvalRun
from hermit_tui.core.workspace.config import load_config
from hermit_tui.core.workspace.gitrepo import driver_overrides, open_repo, safe_env
from hermit_tui.core.workspace.selectors import resolve_selector

LIMIT_S = 120
IDENTITY = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@localhost",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@localhost",
}
FAST = ["agent.params.latency_scale=0"]
HOOKS = (
    "pre-commit",
    "prepare-commit-msg",
    "commit-msg",
    "post-commit",
    "post-checkout",
    "post-index-change",
    "reference-transaction",
    "pre-auto-gc",
    "post-rewrite",
    "pre-push",
    "fsmonitor-watchman",
)


@pytest.fixture(autouse=True)
def limited():
    with time_limit(LIMIT_S, "the case"):
        yield


@pytest.fixture(scope="session")
def evaluated(demo_template, tmp_path_factory) -> Path:
    """The demo with none, root and final evaluated, built once (copied by each test)."""
    config = copy_workspace(demo_template, tmp_path_factory.mktemp("hostile-git") / "demo")
    EvalRun(load_config(config, FAST), ["none", "root", "final"], update_card=False).run_sync()
    return config.parent


@pytest.fixture
def ws(evaluated, tmp_path) -> Path:
    return copy_workspace(evaluated, tmp_path / "demo")


def cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def tree_dir(config: Path) -> Path:
    return Path(load_config(config, FAST).tree_dir)


def arm(config: Path, markers: Path) -> None:
    """Make every hook and every configurable command of the demo's tree leave a marker in ``markers`` when run
    (written with plain file writes and ``git config -f``, which run nothing)."""
    markers.mkdir(exist_ok=True)
    common = tree_dir(config) / ".git"
    hooks_elsewhere = markers.parent / "hostile-hooks"
    hooks_elsewhere.mkdir(exist_ok=True)

    def script(name: str, then: str = "exit 0") -> str:
        path = markers.parent / "bin" / name
        path.parent.mkdir(exist_ok=True)
        path.write_text(f'#!/bin/sh\ntouch "{markers}/{name}"\n{then}\n')
        path.chmod(0o755)
        return str(path)

    for folder in (common / "hooks", hooks_elsewhere):
        folder.mkdir(exist_ok=True)
        for hook in HOOKS:
            path = folder / hook
            path.write_text(f'#!/bin/sh\ntouch "{markers}/hook-{hook}"\nexit 0\n')
            path.chmod(0o755)
    settings = {
        "core.hooksPath": str(hooks_elsewhere),
        "core.fsmonitor": script("fsmonitor"),
        "core.pager": script("pager"),
        "core.editor": script("editor"),
        "core.askPass": script("askpass"),
        "core.sshCommand": script("ssh"),
        "diff.external": script("external-diff"),
        "credential.helper": script("credential"),
        "gpg.program": script("gpg"),
        "commit.gpgSign": "true",
        "tag.gpgSign": "true",
        "filter.evil.clean": script("filter-clean", "exec cat"),
        "filter.evil.smudge": script("filter-smudge", "exec cat"),
        "filter.evil.required": "true",
        "filter.proc.process": script("filter-process"),
        "diff.evil.textconv": script("textconv", 'exec cat "$1"'),
        "diff.evil.command": script("diff-command"),
        "merge.evil.driver": script("merge-driver"),
    }
    for key, value in settings.items():
        subprocess.run(["git", "config", "-f", str(common / "config"), key, value], check=True)
    (common / "info").mkdir(exist_ok=True)
    (common / "info" / "attributes").write_text("* filter=evil diff=evil merge=evil\n*.md filter=proc\n")
    for stray in markers.iterdir():
        stray.unlink()


def ran(markers: Path) -> list[str]:
    return sorted(p.name for p in markers.iterdir())


def test_the_armed_tree_would_run_its_commands_under_plain_git(ws, tmp_path):
    """The case is real: plain git (without hermit-tui's settings) runs the tree's hooks and commands."""
    markers = tmp_path / "markers"
    arm(ws, markers)
    checkout = ws.parent / "runs" / "demo" / "checkout"
    subprocess.run(["git", "-C", str(checkout), "status", "--porcelain"], capture_output=True, stdin=subprocess.DEVNULL)
    subprocess.run(
        ["git", "-C", str(checkout), "update-index", "--add", "--", "CARD.md"],
        capture_output=True,
        stdin=subprocess.DEVNULL,
    )
    assert {"fsmonitor", "filter-process"} <= set(ran(markers))


def test_publish_undo_and_publish_again_run_nothing_from_the_tree(ws, tmp_path):
    markers = tmp_path / "markers"
    arm(ws, markers)
    outside = snapshot(tmp_path, exclude=("demo", "markers"))
    config = load_config(ws, FAST)
    plan = plan_publish(config)
    assert plan.refusals == [], plan.refusals
    result = publish(plan)
    assert result.committed
    assert ran(markers) == []
    repo = open_repo(config.tree_dir)  # plain git here would run the tree's fsmonitor itself
    changed = repo.git.diff_tree("--name-only", "-r", result.previous_tag_target, result.card_commit)
    repo.close()
    assert changed.split() == ["CARD.md"]
    undo_publish(config)
    code, out, err = cli(["publish", "--config", str(ws), "--dry-run", *FAST])
    assert code == 0, err
    code, _, err = cli(["publish", "--config", str(ws), "--yes", *FAST])
    assert code == 0, err
    assert ran(markers) == []
    assert snapshot(tmp_path, exclude=("demo", "markers")) == outside


def test_eval_of_final_with_its_card_update_runs_nothing_from_the_tree(ws, tmp_path):
    markers = tmp_path / "markers"
    arm(ws, markers)
    checkout = ws.parent / "runs" / "demo" / "checkout"
    # hermit's own card update (EvalRun's update_card), then eval --publish on a tag and final
    EvalRun(load_config(ws, FAST), ["final"], update_card=True).run_sync()
    assert ran(markers) == []
    code, _, err = cli(
        ["eval", "--config", str(ws), "--adapter", "final", "--adapter", "demo/ckpt-step-2", "--publish", *FAST]
    )
    assert code == 0, err
    assert ran(markers) == []
    repo = open_repo(checkout)
    subjects = repo.git.log("-2", "--format=%s").splitlines()
    repo.close()
    assert subjects[-1] == "card: eval results of demo/final"  # the card update happened, with no hook or signing
    assert subjects[0].startswith("card: ")


def test_show_report_and_the_setup_listing_run_nothing_from_the_tree(ws, tmp_path):
    markers = tmp_path / "markers"
    arm(ws, markers)
    from hermit_tui.core.workspace.selectors import version_choices

    choices = version_choices(load_config(ws, FAST), ["final", "root"])
    assert choices.problem is None and len(choices.versions) >= 3
    task = json.loads((ws.parent / "runs/demo/eval/final/results.jsonl").read_text().splitlines()[0])["id"]
    assert cli(["show", "--config", str(ws), "--adapter", "final", "--task", task, *FAST])[0] == 0
    assert cli(["report", "--config", str(ws), *FAST])[0] == 0
    assert ran(markers) == []


def test_every_configured_driver_is_emptied_and_required_filters_are_released():
    pairs = dict(driver_overrides(["filter.Evil.clean", "diff.x.y.textconv", "merge.m.driver", "core.editor"]))
    assert pairs["filter.Evil.clean"] == "" and pairs["filter.Evil.required"] == "false"
    assert pairs["diff.x.y.textconv"] == "" and pairs["diff.x.y.command"] == ""
    assert pairs["merge.m.driver"] == "" and not any(k.startswith("core.") for k in pairs)


def test_the_users_own_command_level_settings_are_kept_before_ours():
    env = safe_env([], base={"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "user.name", "GIT_CONFIG_VALUE_0": "me"})
    assert "GIT_CONFIG_KEY_0" not in env and env["GIT_CONFIG_KEY_1"] == "core.hooksPath"
    assert int(env["GIT_CONFIG_COUNT"]) == 1 + sum(1 for k in env if k.startswith("GIT_CONFIG_KEY_"))


def test_open_repo_is_the_only_way_hermit_tui_opens_a_repository():
    """Every git.Repo of the engine goes through open_repo (a new call site would miss the settings)."""
    root = Path(__file__).parent.parent / "hermit_tui"
    offenders = [
        str(p.relative_to(root)) for p in root.rglob("*.py") if "git.Repo(" in p.read_text() and p.name != "gitrepo.py"
    ]
    assert offenders == []
    repo = open_repo(Path(__file__).parent.parent)
    try:
        assert repo.git.config("--get", "core.hooksPath") == os.devnull
        assert repo.git.config("--get", "core.fsmonitor") == "false"
    finally:
        repo.close()


def test_the_plain_git_reader_runs_with_the_same_settings_and_opens_only_a_repository_itself(tmp_path):
    """Reading a tree (report, gate, show) runs plain git processes without GitPython (issue 30), under open_repo's
    settings, and, as git.Repo(path), takes a folder only when it is itself a repository: a folder inside another
    repository is not a tree (git would otherwise search the folders above it)."""
    from hermit_tui.core.workspace.gitrepo import GitReader, NotARepository
    from hermit_tui.core.workspace.tree import AdapterTree

    reader = GitReader(Path(__file__).parent.parent)
    assert reader.text("config", "--get", "core.hooksPath") == os.devnull
    assert reader.text("config", "--get", "core.fsmonitor") == "false"
    outer = tmp_path / "outer"
    subprocess.run(["git", "init", "-q", str(outer)], check=True)
    (outer / "inner").mkdir()
    with pytest.raises(NotARepository):
        GitReader(outer / "inner")
    with pytest.raises(InputError, match=r"adapter tree .*inner is not a git repository"):
        AdapterTree(outer / "inner")
    assert AdapterTree(outer).reader.path == outer


def test_the_readers_one_cat_file_process_reads_objects_in_turn_and_stops_when_closed(tmp_path):
    """Objects are read through one ``cat-file --batch`` kept open (as GitPython's): a missing object is None, an
    annotated tag is followed to its commit, closing stops the process and reading again starts another."""
    from hermit_tui.core.workspace.gitrepo import GitError, GitReader

    repo = tmp_path / "r"
    env = {**os.environ, **IDENTITY}
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "f.txt").write_bytes(b"one\n")
    for args in (["add", "f.txt"], ["commit", "-q", "-m", "first line\n\nbody \u00e9"], ["tag", "-a", "t", "-m", "t"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True, env=env)
    reader = GitReader(repo)
    head = reader.text("rev-parse", "HEAD")
    tag = reader.text("rev-parse", "refs/tags/t")
    blob = reader.text("rev-parse", "HEAD:f.txt")
    assert tag != head and reader.object_type(tag) == "tag" and reader.object_type(head) == "commit"
    assert reader.object_type("0" * 40) is None
    assert reader.commit_message(head) == "first line\n\nbody \u00e9\n" == reader.commit_message(tag)
    assert reader.commit(head)[0] == [] and reader.blobs([blob, blob]) == [b"one\n", b"one\n"]
    with pytest.raises(GitError):
        reader.blobs([head])  # a commit is not a blob
    batch = reader._batch
    assert batch is not None and batch.poll() is None
    reader.close()
    assert batch.poll() is not None and reader._batch is None
    assert reader.blobs([blob]) == [b"one\n"] and reader._batch is not None
    reader.close()
    # a reader dropped without close() lets its cat-file end (as GitPython's Repo does when collected)
    import gc

    from waiting import wait_until

    reader.object_type(head)
    dropped = reader._batch
    assert dropped is not None and dropped.poll() is None
    del reader
    gc.collect()
    wait_until(lambda: dropped.poll() is not None, timeout=10)


# ---------------------------------------------------------------------------------------------------- selectors


def _tree_git(config: Path, *args: str) -> str:
    run = subprocess.run(
        ["git", "-C", str(tree_dir(config)), *args],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **IDENTITY},
    )
    return run.stdout.strip()


def test_a_branch_named_like_another_commits_abbreviation_is_never_measured_instead(ws):
    config = load_config(ws, FAST)
    step1 = _tree_git(ws, "rev-parse", "demo/ckpt-step-1^{commit}")
    root = _tree_git(ws, "rev-parse", "root^{commit}")
    _tree_git(ws, "branch", step1[:7], root)  # a branch whose name abbreviates step 1, pointing at root
    sel = resolve_selector(step1[:7], config)
    assert (sel.kind, sel.commit) == ("commit", step1)
    assert sel.resolution() == f"commit {step1[:12]}"
    # the branch itself only when named as one
    branch = resolve_selector(f"refs/heads/{step1[:7]}", config)
    assert branch.commit == root and branch.resolution().startswith(f"the head of branch {step1[:7]} at commit")


def test_a_tag_named_like_another_commits_abbreviation_is_refused_as_ambiguous(ws):
    config = load_config(ws, FAST)
    step1 = _tree_git(ws, "rev-parse", "demo/ckpt-step-1^{commit}")
    root = _tree_git(ws, "rev-parse", "root^{commit}")
    _tree_git(ws, "tag", step1[:8], root)
    with pytest.raises(InputError, match=f"'{step1[:8]}' is ambiguous .* type refs/tags/{step1[:8]}") as exc:
        resolve_selector(step1[:8], config)
    assert "\n" not in str(exc.value)
    assert resolve_selector(f"refs/tags/{step1[:8]}", config).commit == root
    assert resolve_selector(step1, config).commit == step1  # the full id is the commit


def test_a_bare_branch_name_is_refused_with_the_form_that_names_it(ws):
    config = load_config(ws, FAST)
    with pytest.raises(InputError, match="'demo' is a branch .* type refs/heads/demo"):
        resolve_selector("demo", config)
    code, out, err = cli(["eval", "--config", str(ws), "--adapter", "refs/heads/demo", "--limit", "1", *FAST])
    assert code == 0, err
    head = _tree_git(ws, "rev-parse", "refs/heads/demo")
    assert f"refs/heads/demo is the head of branch demo at commit {head[:12]}" in err + out


def test_the_eval_progress_shows_what_each_selector_was_resolved_to(ws):
    code, out, err = cli(["eval", "--config", str(ws), "--adapter", "final", "--limit", "1", *FAST])
    final = _tree_git(ws, "rev-parse", "demo/final^{commit}")
    assert code == 0 and f"final is tag demo/final at commit {final[:12]}" in err + out


# ---------------------------------------------------------------------------------------------------- compare-and-swap


def test_a_tag_moved_by_someone_else_during_a_publish_is_left_where_they_put_it(ws, monkeypatch):
    from hermit_tui.core.publish import card as cardmod

    config = load_config(ws, FAST)
    root = _tree_git(ws, "rev-parse", "root^{commit}")
    head = _tree_git(ws, "rev-parse", "refs/heads/demo")
    real = cardmod.commit_card

    def racing(*args, **kwargs):
        commit = real(*args, **kwargs)
        _tree_git(ws, "update-ref", "refs/tags/demo/final", root)  # someone else moves the tag meanwhile
        return commit

    monkeypatch.setattr(cardmod, "commit_card", racing)
    plan = plan_publish(config)
    with pytest.raises(InputError, match="demo/final changed meanwhile") as exc:
        publish(plan)
    assert "\n" not in str(exc.value)
    assert _tree_git(ws, "rev-parse", "demo/final^{commit}") == root  # theirs, not clobbered
    assert _tree_git(ws, "rev-parse", "refs/heads/demo") == head  # ours, put back
    assert (ws.parent / "runs/demo/checkout/CARD.md").read_text() == plan.current_card


def test_a_rollback_never_undoes_someone_elses_branch_move_and_restores_an_annotated_tag(ws, monkeypatch):
    from hermit_tui.core.publish import apply as pub

    config = load_config(ws, FAST)
    root = _tree_git(ws, "rev-parse", "root^{commit}")
    final = _tree_git(ws, "rev-parse", "demo/final^{commit}")
    _tree_git(ws, "tag", "-f", "-a", "-m", "annotated final", "demo/final", final)
    annotated = _tree_git(ws, "rev-parse", "refs/tags/demo/final")
    assert annotated != final

    def racing(*args, **kwargs):
        _tree_git(ws, "update-ref", "refs/heads/demo", root)  # someone else moves the branch meanwhile
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pub, "record_in_summary", racing)
    with pytest.raises(InputError, match="publishing failed"):
        publish(plan_publish(config))
    assert _tree_git(ws, "rev-parse", "refs/heads/demo") == root  # their move stands
    assert _tree_git(ws, "rev-parse", "refs/tags/demo/final") == annotated  # the tag object itself is back


# ---------------------------------------------------------------------------------------------------- killed publish


def _hermit_tui(config: Path, *args: str, crash: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ}
    env.pop(CRASH_ENV, None)
    if crash:
        env[CRASH_ENV] = crash
    return subprocess.run(
        [sys.executable, "-m", "hermit_tui", "publish", "--config", str(config), *args, *FAST],
        capture_output=True,
        text=True,
        env=env,
        timeout=LIMIT_S,
        stdin=subprocess.DEVNULL,
    )


def _consistent(ws: Path) -> dict:
    """The checkout is clean, the tag is the branch head or the measured commit, and the summary's and the log's
    record of the last publish agree with where the tag is."""
    checkout = ws.parent / "runs/demo/checkout"
    repo = open_repo(checkout)
    try:
        assert repo.git.status("--porcelain", "--untracked-files=no") == ""
    finally:
        repo.close()
    head = _tree_git(ws, "rev-parse", "refs/heads/demo")
    tag = _tree_git(ws, "rev-parse", "demo/final^{commit}")
    summary = json.loads((ws.parent / "runs/demo/eval/final/summary.json").read_text())
    log_path = ws.parent / "runs/demo/eval/.hermit-tui-publish.jsonl"
    log = [json.loads(line) for line in log_path.read_text().splitlines()] if log_path.exists() else []
    published = summary.get("published")
    if published and not published.get("undone_at"):
        assert tag == head == published["card_commit"] and log and log[-1]["card_commit"] == tag
    else:
        assert tag == summary["commit"]
    assert not (ws.parent / "runs/demo/eval/.hermit-tui-publish-journal.json").exists()
    return {"head": head, "tag": tag}


@pytest.mark.parametrize("step", PUBLISH_STEPS)
def test_a_publish_killed_at_any_step_is_finished_or_rolled_back_by_the_next_publish(ws, step):
    measured = _tree_git(ws, "rev-parse", "demo/final^{commit}")
    killed = _hermit_tui(ws, "--yes", crash=step)
    assert killed.returncode == -9, killed.stderr
    code, out, err = cli(["publish", "--config", str(ws), "--yes", *FAST])  # the next publish, in-process
    assert code == 0, err + out
    state = _consistent(ws)
    assert state["tag"] == state["head"] != measured  # published, once
    assert _tree_git(ws, "rev-parse", f"{state['head']}^") == measured
    card = (ws.parent / "runs/demo/checkout/CARD.md").read_text()
    assert card.count("| final |") == 1


@pytest.mark.parametrize("step", PUBLISH_STEPS)
def test_a_publish_killed_at_any_step_is_recovered_by_undo(ws, step):
    assert _hermit_tui(ws, "--yes", crash=step).returncode == -9
    code, _, err = cli(["publish", "--config", str(ws), "--undo", "--yes", *FAST])
    assert code in (0, 2) and "Traceback" not in err and len(err.strip().splitlines()) <= 1, err
    _consistent(ws)
    assert cli(["publish", "--config", str(ws), "--yes", *FAST])[0] == 0  # and publishing works again


@pytest.mark.parametrize("step", UNDO_STEPS)
def test_an_undo_killed_at_any_step_is_recovered_by_the_next_undo(ws, step):
    assert cli(["publish", "--config", str(ws), "--yes", *FAST])[0] == 0
    published = _tree_git(ws, "rev-parse", "demo/final^{commit}")
    assert _hermit_tui(ws, "--undo", "--yes", crash=step).returncode == -9
    code, _, err = cli(["publish", "--config", str(ws), "--undo", "--yes", *FAST])
    # rolled back then undone, or (killed after its log line) finished: nothing left to undo
    assert code == 0 or (step == "logged" and "nothing to undo" in err), err
    state = _consistent(ws)
    assert state["tag"] != published and state["head"] == state["tag"]  # undone once: the branch back too
