"""The adapter card: table bytes, Evaluation section replacement, and the atomic commit + tag move."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import git
import pytest

from hermit_tui.core.errors import InputError
from hermit_tui.core.publish.card import CardRow, render_eval_table, replace_evaluation_section, update_final_card
from hermit_tui.core.records.results import Summary
from hermit_tui.core.workspace.tree import AdapterTree

IDENTITY = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@localhost",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@localhost",
}

HEADER = "| Adapter | Tasks | Repeats | Mean score | Solved at least once | Cost (USD) |\n|---|---|---|---|---|---|\n"
CARD_TOP = (
    "# Adapter card: demo\n\n- Template: `demo-tpl@1`\n- Evolver: `mwm`\n\n"
    "## What was learned\n\nGreets in Ünïcode — “politely” ✓.\n\n"
)
CARD_TAIL = "Where it has not been tested: anything but the demo tasks.\n"
CARD = CARD_TOP + "## Evaluation\n\nNot evaluated yet (`hermit eval`).\n\n" + CARD_TAIL
ROW_075 = "| final | 4 | 3 | 0.750 | 0.750 | 4.5000 |"


def row(mean=0.75, solved=0.75, cost: float | None = 4.5) -> CardRow:
    return CardRow(adapter="final", tasks=4, repeats=3, mean_score=mean, solved_once=solved, cost_usd=cost)


# ---------------------------------------------------------------- table and section


def test_render_eval_table_bytes():
    rows = [
        row(),
        CardRow(adapter="none", tasks=16, repeats=2, mean_score=2 / 3, solved_once=0.25, cost_usd=None),
        CardRow(adapter="demo_ckpt-step-1", tasks=1, repeats=1, mean_score=1, solved_once=1, cost_usd=0.00004),
    ]
    assert render_eval_table(rows) == (
        "| Adapter | Tasks | Repeats | Mean score | Solved at least once | Cost (USD) |\n"
        "|---|---|---|---|---|---|\n"
        "| final | 4 | 3 | 0.750 | 0.750 | 4.5000 |\n"
        "| none | 16 | 2 | 0.667 | 0.250 | unknown |\n"
        "| demo_ckpt-step-1 | 1 | 1 | 1.000 | 1.000 | 0.0000 |"
    )


def test_replace_section_of_a_hermit_card():
    out = replace_evaluation_section(CARD, render_eval_table([row()]))
    assert out == CARD_TOP + "## Evaluation\n\n" + HEADER + ROW_075 + "\n\n" + CARD_TAIL
    # again with other numbers: the table is replaced, not added to
    again = replace_evaluation_section(out, render_eval_table([row(0.5, 0.25, None)]))
    assert again == (
        CARD_TOP + "## Evaluation\n\n" + HEADER + "| final | 4 | 3 | 0.500 | 0.250 | unknown |\n\n" + CARD_TAIL
    )
    assert replace_evaluation_section(out, render_eval_table([row()])) == out


def test_replace_keeps_trailing_text_and_unicode():
    after = CARD_TAIL + "\n## Notes ☃\n\nMore text — kept.\n\n\n"
    card = CARD_TOP + "## Evaluation\n\nold table\n| x |\n\n" + after
    out = replace_evaluation_section(card, render_eval_table([row()]))
    assert out == CARD_TOP + "## Evaluation\n\n" + HEADER + ROW_075 + "\n\n" + after
    assert out.encode().startswith(CARD_TOP.encode()) and out.encode().endswith(after.encode())


def test_replace_without_tail_mark():
    table = render_eval_table([row()])
    card = "# c\n\n## Evaluation\nstale\n\n## Next\nkept\n"
    assert replace_evaluation_section(card, table) == (
        "# c\n\n## Evaluation\n\n" + HEADER + ROW_075 + "\n\n## Next\nkept\n"
    )
    card = "# c\n\n## Evaluation\nstale, no newline"
    assert replace_evaluation_section(card, table) == "# c\n\n## Evaluation\n\n" + HEADER + ROW_075 + "\n"
    assert replace_evaluation_section("## Evaluation", table) == "## Evaluation\n\n" + HEADER + ROW_075 + "\n"
    # a deeper heading belongs to the section
    card = "## Evaluation\n\n### Old\nx\n"
    assert replace_evaluation_section(card, table) == "## Evaluation\n\n" + HEADER + ROW_075 + "\n"


def test_replace_appends_a_missing_section():
    table = render_eval_table([row()])
    section = "## Evaluation\n\n" + HEADER + ROW_075 + "\n"
    assert replace_evaluation_section("# c\n\ntext\n", table) == "# c\n\ntext\n\n" + section
    assert replace_evaluation_section("# c\n\ntext", table) == "# c\n\ntext\n\n" + section
    assert replace_evaluation_section("", table) == section
    # "## Evaluations" or a mention inside a line is not the heading
    card = "# c\n\n## Evaluations\nsee ## Evaluation\n"
    assert replace_evaluation_section(card, table) == card + "\n" + section


def test_replace_follows_crlf():
    card = "# c\r\n\r\n## Evaluation\r\n\r\nNot yet.\r\n\r\nWhere it has not been tested: x\r\n"
    out = replace_evaluation_section(card, render_eval_table([row()]))
    assert out == (
        "# c\r\n\r\n## Evaluation\r\n\r\n"
        + HEADER.replace("\n", "\r\n")
        + ROW_075
        + "\r\n\r\nWhere it has not been tested: x\r\n"
    )


@pytest.mark.parametrize(
    "card, summary",
    [
        (CARD, {"tasks": 4, "repeats": 3, "mean_score": 0.75, "solved_once": 0.75, "cost_usd": 4.5}),
        (
            CARD + "\n## Notes ☃\n\nkept\n",
            {"tasks": 16, "repeats": 2, "mean_score": 2 / 3, "solved_once": 0.0625, "cost_usd": None},
        ),
        (
            CARD_TOP + "## Evaluation\n\n" + HEADER + "| final | 1 | 1 | 0.000 | 0.000 | unknown |\n\n" + CARD_TAIL,
            {"tasks": 4, "repeats": 3, "mean_score": 0.123456, "solved_once": 1.0, "cost_usd": 0.00012},
        ),
    ],
)
def test_same_bytes_as_hermit(tmp_path, card, summary):
    """hermit's own card rewrite (its git commit stubbed out) on a temp copy gives the same bytes as ours."""
    checkout = tmp_path / "run" / "checkout"
    checkout.mkdir(parents=True)
    (checkout / "CARD.md").write_bytes(card.encode())
    script = (
        "import json, sys\nfrom pathlib import Path\nimport hermit.evaluate as ev\n"
        "ev.Tree.commit = staticmethod(lambda checkout, message: None)\n"
        "ev._update_card(None, 'demo', Path(sys.argv[1]), json.loads(sys.argv[2]))\n"
    )
    subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "run"), json.dumps(summary)],
        check=True,
        env={"PYTHONUTF8": "1", "PATH": "/usr/bin:/bin"},
        cwd=tmp_path,
    )
    hermits = (checkout / "CARD.md").read_bytes()
    assert hermits != card.encode()
    ours = replace_evaluation_section(card, render_eval_table([CardRow(adapter="final", **summary)]))
    assert ours.encode() == hermits


# ---------------------------------------------------------------- update_final_card


class Cfg:
    def __init__(self, base: Path, run_name: str = "demo"):
        self.base = base
        self.run_name = run_name
        self.run_dir = base / "runs" / run_name
        self.tree_dir = base / "runs" / "trees" / "demo-tpl"

    def resolve_path(self, text: str) -> Path:
        return self.base / text


class Run:
    """A tree with root on trunk and a run `demo` whose checkout holds CARD.md at the final commit."""

    def __init__(self, base: Path):
        self.cfg = Cfg(base)
        self.tree = git.Repo.init(self.cfg.tree_dir, mkdir=True, initial_branch="trunk")
        (self.cfg.tree_dir / "adapter.yaml").write_text("template: {id: demo-tpl, version: '1'}\n")
        self.tree.git.add("adapter.yaml")
        self.tree.git.commit("-q", "-m", "root", env=IDENTITY)
        self.tree.git.tag("root")
        self.checkout = self.cfg.run_dir / "checkout"
        self.tree.git.worktree("add", "-q", "-b", "demo", str(self.checkout), "root")
        self.repo = git.Repo(self.checkout)
        (self.checkout / "ADAPTER.md").write_text("learned\n")
        (self.checkout / "CARD.md").write_bytes(CARD.encode())
        self.repo.git.add("ADAPTER.md", "CARD.md")
        self.repo.git.commit("-q", "-m", "final: demo", env=IDENTITY)
        self.final = self.head()
        self.tree.git.tag("demo/final", self.final)

    def head(self) -> str:
        return self.tree.git.rev_parse("refs/heads/demo")

    def tag(self) -> str:
        return self.tree.git.rev_parse("demo/final^{commit}")

    def card(self) -> bytes:
        return (self.checkout / "CARD.md").read_bytes()

    def status(self) -> str:
        return self.repo.git.status("--porcelain")


@pytest.fixture
def run(tmp_path) -> Run:
    return Run(tmp_path / "work")


def summary(commit: str, mean=0.75, solved=0.75, cost: float | None = 4.5, **extra) -> Summary:
    return Summary(
        adapter="final", commit=commit, tasks=4, repeats=3, mean_score=mean, solved_once=solved, cost_usd=cost, **extra
    )


EXPECTED_CARD = (CARD_TOP + "## Evaluation\n\n" + HEADER + ROW_075 + "\n\n" + CARD_TAIL).encode()


def test_update_commits_card_and_moves_tag(run):
    result = update_final_card(run.cfg, summary(run.final))
    assert run.card() == EXPECTED_CARD
    new = run.head()
    assert new != run.final and result.commit == new and result.moved_tag
    assert result.card_path == run.checkout / "CARD.md"
    assert run.tag() == new
    assert run.tree.git.rev_parse(f"{new}^") == run.final
    assert run.tree.git.log("-1", "--format=%B", new).strip() == "card: eval results of demo/final"
    assert run.tree.git.diff("--name-only", run.final, new).split() == ["CARD.md"]
    assert run.tree.git.show(f"{new}:CARD.md").encode() + b"\n" == EXPECTED_CARD
    assert run.repo.git.symbolic_ref("HEAD") == "refs/heads/demo"
    assert run.status() == ""
    assert run.tree.git.log("-1", "--format=%an <%ae>", new) == "hermit-tui <hermit-tui@localhost>"


def test_update_uses_the_repo_identity(run):
    run.tree.git.config("user.name", "Ada")
    run.tree.git.config("user.email", "ada@example.org")
    update_final_card(run.cfg, summary(run.final))
    assert run.tree.git.log("-1", "--format=%an <%ae>|%cn", run.head()) == "Ada <ada@example.org>|Ada"


def test_update_commits_only_the_card(run):
    (run.checkout / "ADAPTER.md").write_text("edited, not staged\n")
    (run.checkout / "scratch.txt").write_text("untracked\n")
    (run.checkout / "staged.txt").write_text("staged\n")
    run.repo.git.add("staged.txt")
    before = run.status()
    update_final_card(run.cfg, summary(run.final))
    assert run.tree.git.diff("--name-only", run.final, run.head()).split() == ["CARD.md"]
    assert run.status() == before
    assert (run.checkout / "ADAPTER.md").read_text() == "edited, not staged\n"


def test_identical_results_commit_nothing(run):
    first = update_final_card(run.cfg, summary(run.final))
    assert first.commit is not None
    result = update_final_card(run.cfg, summary(first.commit))
    assert result.commit is None and not result.moved_tag
    assert run.head() == first.commit and run.tag() == first.commit and run.card() == EXPECTED_CARD
    # new numbers: a new commit, still only the latest row
    third = update_final_card(run.cfg, summary(first.commit, mean=0.5, cost=None))
    assert third.commit == run.head() == run.tag() and run.tree.git.rev_parse(f"{third.commit}^") == first.commit
    assert run.card().count(b"| final |") == 1 and b"| final | 4 | 3 | 0.500 | 0.750 | unknown |" in run.card()


def test_missing_card_does_nothing(run):
    (run.checkout / "CARD.md").unlink()
    result = update_final_card(run.cfg, summary(run.final))
    assert result.commit is None and not result.moved_tag and result.card_path is None
    assert "CARD.md" in result.message
    assert run.head() == run.tag() == run.final


def test_smoke_or_incomplete_does_nothing(run):
    for s in (summary(run.final, smoke_limit=2), summary(run.final, complete=False)):
        assert update_final_card(run.cfg, s).commit is None
    assert run.card() == CARD.encode() and run.head() == run.tag() == run.final


def test_tag_elsewhere_is_refused(run):
    run.tree.git.tag("-f", "demo/final", "root")
    with pytest.raises(InputError, match="tag demo/final points at"):
        update_final_card(run.cfg, summary(run.final))
    assert run.card() == CARD.encode() and run.head() == run.final
    run.tree.git.tag("-f", "demo/final", run.final)
    with pytest.raises(InputError, match="not at the evaluated commit"):
        update_final_card(run.cfg, summary(run.tree.git.rev_parse("root")))
    assert run.card() == CARD.encode() and run.head() == run.tag() == run.final


@pytest.mark.parametrize(
    "error, raised", [(git.GitCommandError(["git", "update-ref"], 1), InputError), (RuntimeError("boom"), RuntimeError)]
)
def test_failed_tag_move_restores_everything(run, monkeypatch, error, raised):
    def fail(self, tag, commit, *, expected):
        raise error

    monkeypatch.setattr(AdapterTree, "move_tag", fail)
    status = run.status()
    with pytest.raises(raised):
        update_final_card(run.cfg, summary(run.final))
    assert run.card() == CARD.encode()
    assert run.head() == run.final and run.tag() == run.final
    assert run.status() == status == ""
