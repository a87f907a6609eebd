"""Reviewing and publishing the final card, on real git repositories (the demo workspace): the plan (table, diff,
warnings), a clean publish, every refusal, failures injected at each step, undo, a card hermit wrote, and the CLI."""

from __future__ import annotations

import io
import json
import shutil
import statistics
from pathlib import Path

import git
import pytest
from demo_copies import copy_workspace
from stats_by_hand import score_interval_by_hand

from hermit_tui.cli import publish as cli_publish
from hermit_tui.core.errors import InputError
from hermit_tui.core.publish import apply as pub
from hermit_tui.core.publish import card as cardmod
from hermit_tui.core.publish.apply import plan_publish, publish, undo_publish
from hermit_tui.core.run.runner import EvalRun
from hermit_tui.core.workspace.config import load_config
from hermit_tui.core.workspace.tree import AdapterTree

FIXTURES = Path(__file__).parent / "fixtures" / "hermit_eval"
FAST = ["agent.params.latency_scale=0"]
IDENTITY = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@localhost",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@localhost",
}
FINAL = "40c22b79ec6057cae58bb8b1929f9de1e3a4d481"  # the demo's `final: demo` commit (fixed dates and identity)
ROOT = "4c69319e31bea360df6147a6ce17a38f305225de"
T_975_15 = 2.131449545559323  # Student t, 97.5th percentile, 15 degrees of freedom (16 test tasks)
MESSAGE = "card: evaluation of demo/final (16 tasks x 3, mean 0.731) [hermit-tui]"


class Workspace:
    """A private demo workspace: its config, tree, checkout and eval folders."""

    def __init__(self, config_path: Path, overrides=()):
        self.config = load_config(config_path, [*FAST, *overrides])
        self.run_dir = Path(self.config.run_dir)
        self.checkout = self.run_dir / "checkout"
        self.card_path = self.checkout / "CARD.md"
        self.summary_path = self.run_dir / "eval" / "final" / "summary.json"
        self.log_path = self.run_dir / "eval" / ".hermit-tui-publish.jsonl"
        self.tree = git.Repo(self.config.tree_dir)

    def evaluate(self, *selectors: str, **kw):
        return EvalRun(self.config, list(selectors), update_card=kw.pop("update_card", False), **kw).run_sync()

    def git(self, *args: str, **kw) -> str:
        return self.tree.git.execute(
            ["git", "-C", str(kw.pop("cwd", self.config.tree_dir)), *args], env={**IDENTITY}, **kw
        )

    def head(self) -> str:
        return self.tree.git.rev_parse("refs/heads/demo")

    def tag(self) -> str:
        return self.tree.git.rev_parse("demo/final^{commit}")

    def card(self) -> bytes:
        return self.card_path.read_bytes()

    def status(self) -> str:
        return git.Repo(self.checkout).git.status("--porcelain")

    def state(self) -> tuple:
        """Everything publish may touch."""
        return (
            self.card(),
            self.head(),
            self.tag(),
            self.summary_path.read_bytes() if self.summary_path.exists() else None,
            self.log_path.read_bytes() if self.log_path.exists() else None,
            self.status(),
        )


@pytest.fixture
def demo_config(demo_template, tmp_path) -> Path:
    return copy_workspace(demo_template, tmp_path / "demo")


@pytest.fixture(scope="session")
def evaluated_template(demo_template, tmp_path_factory) -> Path:
    """The demo with none, root and final evaluated (update_card=False), built once and copied by each test."""
    config = copy_workspace(demo_template, tmp_path_factory.mktemp("evaluated") / "demo")
    Workspace(config).evaluate("none", "root", "final")
    return config.parent


@pytest.fixture
def ws(evaluated_template, tmp_path) -> Workspace:
    return Workspace(copy_workspace(evaluated_template, tmp_path / "demo"))


def task_means(results: Path) -> list[float]:
    by_task: dict[str, list[float]] = {}
    for line in results.read_text().splitlines():
        rec = json.loads(line)
        by_task.setdefault(rec["id"], []).append(rec["judge"]["score"])
    assert {len(v) for v in by_task.values()} == {3}
    return [statistics.fmean(v) for v in by_task.values()]


# ---------------------------------------------------------------------------------------------------- the plan


def test_plan_rows_diff_and_nothing_changed(ws):
    before = ws.state()
    plan = plan_publish(ws.config)
    assert plan.refusals == [] and plan.can_publish and plan.changes_card
    assert ws.state() == before and not ws.log_path.exists()
    assert [r.label for r in plan.rows] == ["none", "root", "final"]
    final = plan.rows[-1]
    assert (final.commit, final.tasks, final.repeats, final.errors, final.cost_usd, final.unknown_cost_attempts) == (
        FINAL,
        16,
        3,
        6,
        None,
        9,
    )
    assert plan.rows[1].commit == ROOT and plan.rows[0].commit is None
    # 95% interval worked by hand: 16 tasks, so the score interval with an effective sample size (t(0.975, 15))
    means = task_means(ws.run_dir / "eval" / "final" / "results.jsonl")
    centre = statistics.fmean(means)
    low, high = score_interval_by_hand(means, 0.0, 1.0, T_975_15)
    assert centre == pytest.approx(0.73125) == final.mean == pytest.approx(final.mean_score)
    assert (final.ci_low, final.ci_high, final.ci_method) == (pytest.approx(low), pytest.approx(high), "score")
    row = f"| final | 40c22b7 | 16 | 3 | 0.731 [{low:.3f}, {high:.3f}] | 0.875 | 6 | unknown (9 attempts) |"
    assert row in plan.table.splitlines()
    assert "| root | 4c69319 | 16 | 3 | 0.553 [" in plan.table and "| none | — | 16 | 3 |" in plan.table
    assert "All rows share final's protocol" in plan.table
    from hermit_tui.core.stats.intervals import METHOD_TEXT

    assert f"{METHOD_TEXT['score']} for none, root, final" in plan.table
    # only the Evaluation section changes
    old, new = plan.current_card, plan.new_card
    assert old is not None
    assert old.encode() == before[0]
    head, _, _ = old.partition("## Evaluation\n")
    tail = old[old.index("Where it has not been tested") :]
    assert new is not None
    assert new.startswith(head + "## Evaluation\n\n| Adapter | Commit |") and new.endswith("\n\n" + tail)
    assert "Not evaluated yet" not in new
    assert plan.diff.startswith("--- a/CARD.md\n+++ b/CARD.md\n@@")
    assert "-Not evaluated yet (`hermit eval`).\n" in plan.diff and f"+{row}\n" in plan.diff
    assert plan.message == MESSAGE
    assert (
        "errors: none 6/48, root 6/48, final 6/48 attempts ended in an error (pipeline or judge) and count as 0: "
        "inspect them before trusting the means" in plan.warnings
    )
    assert "unknown cost: none 9, root 9, final 9 attempts report no cost (the card says so)" in plan.warnings


def test_extra_rows_test_reuse_and_unknown_label(ws):
    ws.evaluate("demo/ckpt-step-1", "demo/ckpt-step-2")
    plan = plan_publish(ws.config, ["demo/ckpt-step-1"])
    assert [r.adapter for r in plan.rows] == ["none", "root", "demo/ckpt-step-1", "final"]
    assert plan.rows[2].label == "demo_ckpt-step-1" and plan.rows[2].commit == ws.tree.git.rev_parse("demo/ckpt-step-1")
    reuse = [w for w in plan.warnings if w.startswith("test reuse")]
    assert reuse == [
        "test reuse: 3 different adapters of run demo were evaluated on this test split "
        "(demo_ckpt-step-1, demo_ckpt-step-2, final); if final was chosen by these scores, the test is "
        "no longer an untouched evaluation: say so, or measure on a fresh test split"
    ]
    assert plan.refusals == []
    with pytest.raises(InputError, match="no evaluation of 'demo_ckpt-step-3'"):
        plan_publish(ws.config, ["demo/ckpt-step-3"])


def test_single_adapter_is_not_test_reuse(ws):
    ws.evaluate("final")  # the earlier final is archived: the same adapter twice
    ws.evaluate("demo/ckpt-step-3")  # final's commit only adds CARD.md on top of it: the same adapter again
    assert not [w for w in plan_publish(ws.config).warnings if w.startswith("test reuse")]


def test_protocol_mismatch_prefers_a_matching_archived_row(ws):
    ws.evaluate("none", repeats=2)  # the 3-repeat none is archived
    plan = plan_publish(ws.config)
    none = plan.rows[0]
    assert none.repeats == 3 and none.archived_at is not None
    assert any(w.startswith("none: the current evaluation was measured under another protocol") for w in plan.warnings)
    shutil.rmtree(ws.run_dir / "eval" / "none" / "archive")
    plan = plan_publish(ws.config)
    assert plan.rows[0].repeats == 2 and plan.rows[0].protocol == ["repeats"]
    assert "protocol mismatch: none differs from final in repeats" in plan.warnings
    assert "Not shown to share final's protocol: none (repeats)." in plan.table


def test_stale_row_overlap_and_ordered_stream(ws):
    ws.git("tag", "-f", "root", "demo/ckpt-step-1")
    w = Workspace(ws.config.path, ["data.shuffle=false", "data.test=train.txt"])
    plan = plan_publish(w.config)
    step1 = ws.tree.git.rev_parse("demo/ckpt-step-1")
    assert (
        f"stale measurement: root was measured at 4c69319, but 'root' now points at {step1[:7]}, another adapter"
    ) in plan.warnings
    assert any(x.startswith("test overlap: test overlaps train: 16 tasks (arith-01, ") for x in plan.warnings)
    assert any(x.startswith("ordered stream (data.shuffle is false)") for x in plan.warnings)


# ---------------------------------------------------------------------------------------------------- publishing


def test_clean_publish(ws):
    old_head, summary_before = ws.head(), json.loads(ws.summary_path.read_text())
    plan = plan_publish(ws.config)
    result = publish(plan)
    new = ws.head()
    assert result.committed and result.card_commit == new != old_head
    assert ws.tag() == new and result.previous_tag_target == old_head == FINAL
    assert ws.tree.git.rev_parse(f"{new}^") == old_head
    assert ws.tree.git.diff("--name-only", old_head, new).split() == ["CARD.md"]
    assert ws.tree.git.log("-1", "--format=%B", new).strip() == MESSAGE
    assert ws.tree.git.log("-1", "--format=%an <%ae>", new) == "hermit-tui <hermit-tui@localhost>"
    assert plan.new_card is not None
    assert ws.card() == plan.new_card.encode()
    assert ws.tree.git.show(f"{new}:CARD.md") + "\n" == plan.new_card
    assert ws.status() == ""
    summary = json.loads(ws.summary_path.read_text())
    published = summary.pop("published")
    assert summary == summary_before
    assert {k: published[k] for k in ("measured_commit", "card_commit", "previous_tag_target")} == {
        "measured_commit": FINAL,
        "card_commit": new,
        "previous_tag_target": FINAL,
    }
    log = [json.loads(line) for line in ws.log_path.read_text().splitlines()]
    assert len(log) == 1 and log[0]["action"] == "publish" and log[0]["previous_tag_target"] == FINAL
    assert log[0]["card_commit"] == new and log[0]["message"] == MESSAGE
    # again: nothing to publish, nothing changes
    again = plan_publish(ws.config)
    assert again.up_to_date and again.refusals == [] and again.diff == ""
    state = ws.state()
    assert not publish(ws.config).committed
    assert ws.state() == state


def test_publish_refuses_a_changed_review(ws):
    plan = plan_publish(ws.config)
    ws.evaluate("demo/ckpt-step-1")  # a new measurement after the review: now a test-reuse warning
    state = ws.state()
    with pytest.raises(InputError, match="changed since the review"):
        publish(plan)
    assert ws.state() == state


# ---------------------------------------------------------------------------------------------------- refusals


def _dirty(w: Workspace):
    (w.checkout / "ADAPTER.md").write_text("edited by hand\n")


def _tag_elsewhere(w: Workspace):
    w.git("tag", "-f", "demo/final", "demo/ckpt-step-2")


def _no_final(w: Workspace):
    shutil.rmtree(w.run_dir / "eval" / "final")


def _smoke_final(w: Workspace):
    """A smoke subset where an earlier hermit-tui wrote them, in eval/final/ itself (--limit now writes
    eval/final/smoke/, which publishing never reads: test_a_smoke_check_never_changes_the_plan)."""
    data = json.loads(w.summary_path.read_text())
    w.summary_path.write_text(json.dumps({**data, "smoke_limit": 2}))


def _incomplete_final(w: Workspace):
    data = json.loads(w.summary_path.read_text())
    w.summary_path.write_text(json.dumps({**data, "complete": False, "cancelled": True}))


def _tag_to_step_1(w: Workspace):
    """final was measured, then the tag moved to ckpt-step-1."""
    w.git("tag", "-f", "demo/final", "demo/ckpt-step-1")


def _another_adapter(w: Workspace):
    """final was measured, then a new adapter was committed on the branch and tagged final."""
    (w.checkout / "ADAPTER.md").write_text("retrained\n")
    w.git("commit", "-q", "-am", "step 4", cwd=w.checkout)
    w.git("tag", "-f", "demo/final", "demo")


def _no_checkout(w: Workspace):
    shutil.rmtree(w.checkout)
    w.git("worktree", "prune")


def _detached(w: Workspace):
    w.git("checkout", "-q", "--detach", cwd=w.checkout)


@pytest.mark.parametrize(
    "damage, refusal",
    [
        (_dirty, "uncommitted changes in the checkout (1: ADAPTER.md)"),
        (_tag_elsewhere, "the final tag is not at the checkout's HEAD"),
        (_no_final, "no completed final evaluation: none under"),
        (_smoke_final, "no completed final evaluation: it is a smoke subset of 2 tasks"),
        (_incomplete_final, "no completed final evaluation: it is incomplete"),
        (_tag_to_step_1, "the final evaluation measured another adapter than the tag's: 40c22b79ec60 was measured"),
        (_another_adapter, "the final evaluation measured another adapter than the tag's: 40c22b79ec60 was measured"),
        (_no_checkout, "no checkout:"),
        (_detached, "is not on branch 'demo'"),
    ],
)
def test_refusals(ws, damage, refusal):
    damage(ws)
    plan = plan_publish(ws.config)
    assert any(r.startswith(refusal) or refusal in r for r in plan.refusals), plan.refusals
    assert not plan.can_publish
    before = {"head": ws.head(), "tag": ws.tag(), "log": ws.log_path.exists()}
    with pytest.raises(InputError, match="cannot publish: "):
        publish(ws.config)
    assert {"head": ws.head(), "tag": ws.tag(), "log": ws.log_path.exists()} == before


def test_a_smoke_check_never_changes_the_plan(ws):
    """--limit writes eval/<label>/smoke/: the plan's rows, table and warnings are those of the full evaluations."""
    before = plan_publish(ws.config)
    summary = ws.summary_path.read_bytes()
    ws.evaluate("none", "final", limit=2)
    assert (ws.run_dir / "eval/final/smoke/summary.json").is_file() and ws.summary_path.read_bytes() == summary
    after = plan_publish(ws.config)
    assert after.refusals == [] and after.can_publish
    assert [(r.label, r.tasks, r.mean) for r in after.rows] == [(r.label, r.tasks, r.mean) for r in before.rows]
    assert after.table == before.table and after.warnings == before.warnings


def test_another_adapter_is_the_only_refusal(ws):
    _another_adapter(ws)
    assert len(plan_publish(ws.config).refusals) == 1


def test_tag_on_the_same_adapter_without_the_card_is_accepted(ws):
    """final's commit only adds CARD.md to ckpt-step-3: a tag there is the measured adapter, behind the branch."""
    ws.git("tag", "-f", "demo/final", "demo/ckpt-step-3")
    plan = plan_publish(ws.config)
    assert plan.refusals == []
    assert any(
        w.startswith("demo/final (e3d733a) is not at the head of branch 'demo' (40c22b7)") for w in plan.warnings
    )
    result = publish(plan)
    assert ws.tag() == ws.head() == result.card_commit and ws.tree.git.rev_parse(f"{ws.head()}^") == FINAL


def test_untracked_files_are_a_warning(ws):
    (ws.checkout / "notes.txt").write_text("scratch\n")
    plan = plan_publish(ws.config)
    assert plan.refusals == [] and any(
        w.startswith("untracked files in the checkout (notes.txt)") for w in plan.warnings
    )


# ---------------------------------------------------------------------------------------------------- atomicity


def _failing_once(real, error):
    calls = []

    def fake(*args, **kwargs):
        calls.append(args)
        if len(calls) == 1:
            raise error
        return real(*args, **kwargs)

    return fake


def _after(real, error):
    """The step happens, then fails: what it did must be undone too."""

    def fake(*args, **kwargs):
        real(*args, **kwargs)
        raise error

    return fake


@pytest.mark.parametrize(
    "where, name, wrap",
    [
        (cardmod, "write_card", _failing_once),
        (cardmod, "commit_card", _failing_once),
        (cardmod, "move_branch", _after),
        (cardmod, "stage_card", _after),
        (AdapterTree, "move_tag", _after),
        (pub, "record_in_summary", _after),
        (pub, "append_log", _after),
    ],
)
def test_a_failing_step_leaves_everything_as_before(ws, monkeypatch, where, name, wrap):
    before = ws.state()
    monkeypatch.setattr(where, name, wrap(getattr(where, name), OSError(28, "No space left on device")))
    with pytest.raises(InputError, match="publishing failed .*are as before"):
        publish(plan_publish(ws.config))
    assert ws.state() == before


def test_an_unexpected_error_is_raised_after_restoring(ws, monkeypatch):
    before = ws.state()
    monkeypatch.setattr(pub, "append_log", _after(pub.append_log, RuntimeError("boom")))
    with pytest.raises(RuntimeError, match="boom"):
        publish(ws.config)
    assert ws.state() == before


# ---------------------------------------------------------------------------------------------------- undo


def test_undo_puts_the_tag_the_branch_and_the_card_back(ws):
    card_before, head_before, status_before = ws.card(), ws.head(), ws.status()
    card_commit = publish(ws.config).card_commit
    assert card_commit is not None
    assert ws.head() == card_commit != head_before and ws.card() != card_before
    result = undo_publish(ws.config)
    assert result.restored_to == FINAL and ws.tag() == FINAL and result.branch_restored
    # the branch is back where the publish found it, and the checkout's card (file and index) with it
    assert ws.head() == head_before and ws.card() == card_before and ws.status() == status_before
    assert f"branch 'demo' back to {head_before[:12]}" in result.message
    log = [json.loads(line) for line in ws.log_path.read_text().splitlines()]
    assert [e["action"] for e in log] == ["publish", "undo"] and log[1]["restored_to"] == FINAL
    assert log[0]["branch_before"] == head_before and log[1]["branch_restored_to"] == head_before
    assert "undone_at" in json.loads(ws.summary_path.read_text())["published"]
    with pytest.raises(InputError, match="cannot undo: nothing to undo"):
        undo_publish(ws.config)
    # nothing is left that Setup would offer as a version or that Review would warn about: publishing again
    # commits the card anew on the old head
    plan = plan_publish(ws.config)
    assert plan.refusals == [] and plan.changes_card
    assert not any("is not at the head of branch" in w for w in plan.warnings)
    again = publish(plan)
    assert again.committed and ws.tag() == ws.head() and ws.tree.git.rev_parse(f"{ws.head()}^") == head_before


def test_undo_keeps_a_branch_that_moved_on_and_says_so(ws):
    card_commit = publish(ws.config).card_commit
    assert card_commit is not None
    (ws.checkout / "NOTES.md").write_text("a later commit\n")
    ws.git("add", "NOTES.md", cwd=ws.checkout)
    ws.git("commit", "-q", "-m", "later", cwd=ws.checkout)
    later, card = ws.head(), ws.card()
    result = undo_publish(ws.config)
    assert ws.tag() == FINAL and not result.branch_restored
    assert ws.head() == later and ws.card() == card  # the branch and the card stay
    assert f"has commits after the card commit {card_commit[:12]}: the commit and CARD.md stay" in result.message


def test_undo_keeps_a_card_edited_since_the_publish(ws):
    head_before = ws.head()
    card_commit = publish(ws.config).card_commit
    assert card_commit is not None
    ws.card_path.write_bytes(ws.card() + b"\nmy own words\n")
    edited = ws.card()
    result = undo_publish(ws.config)
    assert ws.tag() == FINAL and not result.branch_restored
    assert ws.head() == card_commit != head_before and ws.card() == edited
    assert "CARD.md in the checkout has changed since the publish" in result.message


def test_a_failed_undo_puts_the_branch_and_the_card_back_too(ws, monkeypatch):
    card_commit = publish(ws.config).card_commit
    assert card_commit is not None
    before = ws.state()
    monkeypatch.setattr(pub, "append_log", _after(pub.append_log, OSError(28, "No space left on device")))
    with pytest.raises(InputError, match="undo failed"):
        undo_publish(ws.config)
    assert ws.state() == before and ws.tag() == ws.head() == card_commit


def test_undo_steps_back_through_publishes(ws):
    first = publish(ws.config).card_commit
    ws.evaluate("demo/ckpt-step-1")
    second = publish(ws.config, ["demo/ckpt-step-1"]).card_commit
    assert ws.tree.git.rev_parse(f"{second}^") == first and ws.tag() == second
    assert undo_publish(ws.config).restored_to == first and ws.tag() == first
    assert undo_publish(ws.config).restored_to == FINAL and ws.tag() == FINAL


def test_undo_refuses_a_moved_tag(ws):
    publish(ws.config)
    ws.git("tag", "-f", "demo/final", "demo/ckpt-step-3")
    with pytest.raises(InputError, match="has moved since the last publish"):
        undo_publish(ws.config)
    assert ws.tag() == ws.tree.git.rev_parse("demo/ckpt-step-3")


def test_failed_undo_leaves_the_tag(ws, monkeypatch):
    card_commit = publish(ws.config).card_commit
    assert card_commit is not None
    log, summary = ws.log_path.read_bytes(), ws.summary_path.read_bytes()
    monkeypatch.setattr(pub, "append_log", _after(pub.append_log, OSError(28, "No space left on device")))
    with pytest.raises(InputError, match="undo failed"):
        undo_publish(ws.config)
    assert ws.tag() == card_commit and ws.log_path.read_bytes() == log and ws.summary_path.read_bytes() == summary


# ---------------------------------------------------------------------------------------------------- hermit's card


def test_updates_a_card_written_by_hermit_eval(demo_config):
    """hermit's own evaluations and card commit (the fixtures), then hermit-tui's publish on top."""
    w = Workspace(demo_config)
    for label in ("none", "root", "final"):
        shutil.copytree(FIXTURES / label, w.run_dir / "eval" / label)
    hermit_card = (FIXTURES / "CARD.after-final.md").read_bytes()
    w.card_path.write_bytes(hermit_card)
    w.git("commit", "-q", "-m", "card: eval results of demo/final", "CARD.md", cwd=w.checkout)
    hermit_commit = w.head()
    w.git("tag", "-f", "demo/final", hermit_commit)

    plan = plan_publish(w.config)
    assert plan.refusals == [] and plan.measured_commit == FINAL
    assert (
        "final was measured by hermit eval (no protocol fingerprint): whether the rows share one protocol "
        "cannot be checked" in plan.warnings
    )
    assert not any(x.startswith("stale") for x in plan.warnings)  # the card commit is the same adapter
    assert "-| final | 16 | 3 | 0.731 | 0.875 | unknown |\n" in plan.diff
    assert [r.written_by for r in plan.rows] == ["hermit"] * 3
    assert "Protocols not checked: final was measured by hermit eval" in plan.table
    publish(plan)
    new = w.card()
    text = hermit_card.decode()
    head = text[: text.index("## Evaluation\n") + len("## Evaluation\n")]
    tail = text[text.index("Where it has not been tested") :]
    assert new.startswith(head.encode() + b"\n| Adapter | Commit | Tasks |")
    assert new.endswith(b"\n\n" + tail.encode())
    assert b"| final | 40c22b7 | 16 | 3 | 0.731 [" in new
    assert w.tree.git.rev_parse(f"{w.head()}^") == hermit_commit and w.tag() == w.head()
    assert json.loads(w.summary_path.read_text())["published"]["measured_commit"] == FINAL


def test_updates_the_card_the_runner_wrote(demo_config):
    w = Workspace(demo_config)
    w.evaluate("none", "root", "final", update_card=True)  # hermit's single-row card, committed, tag moved
    runner_commit = w.head()
    assert w.tag() == runner_commit != FINAL
    plan = plan_publish(w.config)
    assert plan.refusals == [] and plan.measured_commit == FINAL
    assert "-| final | 16 | 3 | 0.731 | 0.875 | unknown |\n" in plan.diff
    publish(plan)
    assert w.tree.git.rev_parse(f"{w.head()}^") == runner_commit and w.tag() == w.head()
    assert w.tree.git.diff("--name-only", FINAL, w.head()).split() == ["CARD.md"]


# ---------------------------------------------------------------------------------------------------- the CLI


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def cli(argv: list[str], stdin: io.StringIO | None = None) -> tuple[int, str, str]:
    """Parse and run like hermit-tui's main does (InputError: exit 2, one line)."""
    from hermit_tui.cli.common import Parser as _Parser

    parser = _Parser(prog="hermit-tui")
    cli_publish.add_parser(parser.add_subparsers(dest="command", parser_class=_Parser))
    out, err = io.StringIO(), io.StringIO()
    try:
        args = parser.parse_args(argv)
        code = cli_publish.run(args, stdin=stdin or io.StringIO(""), stdout=out, stderr=err)
    except InputError as exc:
        err.write(f"hermit-tui: error: {exc}\n")
        code = 2
    return code, out.getvalue(), err.getvalue()


def test_cli_dry_run_changes_nothing(ws):
    before = ws.state()
    code, out, err = cli(["publish", "--config", str(ws.config.path), "--dry-run", *FAST])
    assert code == 0 and ws.state() == before
    assert "-Not evaluated yet (`hermit eval`).\n" in out and "+| final | 40c22b7 | 16 | 3 | 0.731 [" in out
    assert "2 warnings, read before publishing:\n  ! errors: none 6/48, root 6/48" in out
    assert "dry run: nothing changed" in out


def test_cli_needs_a_terminal_or_yes(ws):
    before = ws.state()
    code, out, err = cli(["publish", "--config", str(ws.config.path), *FAST])
    assert code == 2 and ws.state() == before
    assert err.count("\n") == 1 and "needs a typed confirmation" in err


def test_cli_typed_confirmation(ws):
    before = ws.state()
    code, _, err = cli(["publish", "--config", str(ws.config.path), *FAST], stdin=Tty("yes\n"))
    assert code == 1 and "not published" in err and ws.state() == before
    code, out, _ = cli(["publish", "--config", str(ws.config.path), *FAST], stdin=Tty("publish\n"))
    assert code == 0 and ws.tag() == ws.head() != FINAL and "demo/final moved from 40c22b79ec60" in out


def test_cli_yes_then_undo(ws):
    code, _, _ = cli(["publish", "--config", str(ws.config.path), "--yes", *FAST])
    assert code == 0 and ws.tag() != FINAL
    code, out, _ = cli(["publish", "--config", str(ws.config.path), "--undo", "--dry-run", *FAST])
    assert code == 0 and "undo would move demo/final back from" in out and ws.tag() != FINAL
    assert "put branch 'demo' back to" in out and "CARD.md in the checkout back to its text there" in out
    code, _, err = cli(["publish", "--config", str(ws.config.path), "--undo", *FAST])
    assert code == 2 and ws.tag() != FINAL
    code, _, _ = cli(["publish", "--config", str(ws.config.path), "--undo", *FAST], stdin=Tty("undo\n"))
    assert code == 0 and ws.tag() == FINAL
    code, _, err = cli(["publish", "--config", str(ws.config.path), "--undo", "--yes", *FAST])
    assert code == 2 and "cannot undo: nothing to undo" in err


def test_cli_refusal_is_one_line(ws):
    _dirty(ws)
    code, out, err = cli(["publish", "--config", str(ws.config.path), "--yes", *FAST])
    assert code == 2 and err.count("\n") == 1
    assert err.startswith("hermit-tui: error: cannot publish: uncommitted changes in the checkout")
    assert "Publishing is refused:\n  x uncommitted changes" in out
    code, _, err = cli(["publish", "--config", str(ws.config.path), "--adapter", "nope", *FAST])
    assert code == 2 and "no evaluation of 'nope'" in err


# ---------------------------------------------------------------------------------------------------- failure labels


def _label(ws: Workspace, label: str, how_many: int, name: str) -> int:
    """Label the first ``how_many`` failures of an evaluation; returns how many failures it has."""
    from hermit_tui.core.records.annotations import Change, is_failure, update_annotation
    from hermit_tui.core.records.results import read_results

    folder = ws.run_dir / "eval" / label
    failed = [r for r in read_results(folder / "results.jsonl").records if is_failure(r)]
    for r in failed[:how_many]:
        update_annotation(folder, r, Change(add=[name]))
    return len(failed)


def test_the_failure_labels_line_is_off_by_default_and_on_when_asked(ws):
    plain = plan_publish(ws.config)
    assert plain.new_card is not None
    assert not plain.taxonomy and plain.taxonomy_line is None and "Failure labels" not in plain.new_card
    empty = plan_publish(ws.config, taxonomy=True)
    assert empty.taxonomy_line is None and empty.new_card == plain.new_card
    assert any("no failure of the card's rows carries a label" in w for w in empty.warnings)

    n_none = _label(ws, "none", 2, "format error")
    n_final = _label(ws, "final", 1, "timeout")
    assert plan_publish(ws.config).new_card == plain.new_card  # still off by default
    plan = plan_publish(ws.config, taxonomy=True)
    line = (
        "Failure labels (assigned by hand while reading the failures, with hermit-tui; a reading aid, not a "
        f"measurement): none 2 of {n_none} failures labelled (format error 2); final 1 of {n_final} failures "
        "labelled (timeout 1)."
    )
    assert plan.taxonomy_line == line
    assert plan.new_card is not None
    section = plan.new_card.split("## Evaluation", 1)[1]
    assert section.index(line) > section.index("Mean score: the mean over test tasks")  # under the table's note
    assert f"+{line}" in plan.diff

    _label(ws, "root", 1, "tool misuse")  # a label added after the review: publishing asks for a new review
    state = ws.state()
    with pytest.raises(InputError, match="changed since the review"):
        publish(plan)
    assert ws.state() == state
    result = publish(plan_publish(ws.config, taxonomy=True))
    assert result.committed and "tool misuse 1" in ws.card().decode()


def test_publish_cli_failure_labels_dry_run_shows_the_line(ws, capsys):
    from hermit_tui.cli import main

    _label(ws, "final", 2, "wrong reasoning")
    state = ws.state()
    code = main(
        ["publish", "--config", str(ws.config.path), "--failure-labels", "--dry-run", "agent.params.latency_scale=0"]
    )
    out = capsys.readouterr().out
    assert code == 0 and "+Failure labels (assigned by hand" in out and "final 2 of" in out
    assert ws.state() == state


# ---------------------------------------------------------------------------------------------------- the review


def test_the_review_gathers_the_plan_the_undo_and_the_other_evaluations_and_changes_nothing(ws):
    ws.evaluate("demo/ckpt-step-1")
    before = ws.state()
    found = pub.review(ws.config)
    assert ws.state() == before
    assert found.plan.can_publish and [r.label for r in found.plan.rows] == ["none", "root", "final"]
    assert found.others == ["demo_ckpt-step-1"]  # evaluated, not on the card unless ticked
    assert found.undo_problem is not None
    assert found.undo_entry is None and found.undo_problem.startswith("nothing to undo: no publish by hermit-tui")
    ticked = pub.review(ws.config, ["demo/ckpt-step-1"])
    assert [r.label for r in ticked.plan.rows] == ["none", "root", "demo_ckpt-step-1", "final"]  # final last


def test_carry_out_publishes_the_reviewed_plan_then_undoes_it(ws):
    old_tag = ws.tag()
    message = pub.carry_out("publish", pub.review(ws.config), ws.config)
    card_commit = ws.head()
    assert ws.tag() == card_commit != old_tag and "demo/final moved from" in message
    after = pub.review(ws.config)
    assert after.plan.up_to_date and after.undo_entry is not None and after.undo_problem is None
    assert (after.undo_entry["card_commit"], after.undo_entry["previous_tag_target"]) == (card_commit, old_tag)
    message = pub.carry_out("undo", after, ws.config)
    assert ws.tag() == old_tag and message.startswith(f"demo/final moved back to {old_tag[:12]}")
