"""The adapter card (``CARD.md``): its Evaluation table, and hermit's update after ``eval --adapter final``.

The pieces are separate so that a review step can show the new card before anything is committed:
:func:`render_eval_table` makes the table, :func:`replace_evaluation_section` puts it into a card's text,
:func:`update_final_card` writes, commits and re-tags as hermit does, through :class:`CardChange` (the atomic write,
commit and tag move that publishing uses too).
"""

from __future__ import annotations

import os
import signal
import stat
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import git
from pydantic import BaseModel

from hermit_tui.core.errors import InputError
from hermit_tui.core.present import cost_cell
from hermit_tui.core.records.folders import check_no_links
from hermit_tui.core.records.results import Summary
from hermit_tui.core.workspace.config import Config
from hermit_tui.core.workspace.gitrepo import open_repo
from hermit_tui.core.workspace.tree import AdapterTree, valid_ref_name

EVAL_HEADING = "## Evaluation"
TAIL_MARK = "Where it has not been tested"
CARD_NAME = "CARD.md"
TABLE_HEADER = "| Adapter | Tasks | Repeats | Mean score | Solved at least once | Cost (USD) |"
TABLE_RULE = "|---|---|---|---|---|---|"
DEFAULT_IDENTITY = {"name": "hermit-tui", "email": "hermit-tui@localhost"}
CRASH_ENV = "HERMIT_TUI_CRASH_AT"


def crash_point(step: str) -> None:
    """Die here, as kill -9 would, when ``$HERMIT_TUI_CRASH_AT`` names ``step``: the publish recovery tests kill a
    publish after each of its steps (``core.publish.recovery``)."""
    if os.environ.get(CRASH_ENV) == step:
        os.kill(os.getpid(), signal.SIGKILL)


class CardRow(BaseModel):
    """One row of the card's Evaluation table."""

    adapter: str
    tasks: int
    repeats: int
    mean_score: float
    solved_once: float
    cost_usd: float | None = None


class CardResult(BaseModel):
    """What :func:`update_final_card` did."""

    card_path: Path | None = None
    commit: str | None = None
    moved_tag: bool = False
    message: str


def render_eval_table(rows: Sequence[CardRow]) -> str:
    """The Markdown table hermit writes (scores to 3 decimals, cost to 4 or ``unknown``); no trailing newline."""
    lines = [TABLE_HEADER, TABLE_RULE]
    for r in rows:
        lines.append(
            f"| {r.adapter} | {r.tasks} | {r.repeats} | {r.mean_score:.3f} | {r.solved_once:.3f} | "
            f"{cost_cell(r.cost_usd)} |"
        )
    return "\n".join(lines)


def split_lines(text: str) -> list[str]:
    """The text split after each LF only (other Unicode line breaks stay inside their line)."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def replace_evaluation_section(card_text: str, table: str) -> str:
    """``card_text`` with the body of its Evaluation section replaced by ``table``; every other byte is kept.

    The body runs from the line after the ``## Evaluation`` heading to the line starting with
    :data:`TAIL_MARK`, or, when no such line comes first, to the next ``#``/``##`` heading or the end of the text.
    The new body is a blank line, the table and a blank line, as hermit writes it (a final blank line is left out
    at the very end of the text). The line ending (LF or CRLF) follows the heading line's.

    A card without an Evaluation section gets one appended at its end (after a blank line); it has no
    "Where it has not been tested" line, since only the card's author can say that.
    """
    lines = split_lines(card_text)
    heading = next((i for i, line in enumerate(lines) if line.rstrip() == EVAL_HEADING), None)
    if heading is None:
        body = card_text
        if body and not body.endswith("\n"):
            body += "\n"
        return body + ("\n" if body else "") + EVAL_HEADING + "\n\n" + table + "\n"
    head_line = lines[heading]
    eol = "\r\n" if head_line.endswith("\r\n") else "\n"
    end = len(lines)
    for j in range(heading + 1, len(lines)):
        if lines[j].startswith(TAIL_MARK) or lines[j].startswith(("# ", "## ")):
            end = j
            break
    before = "".join(lines[:heading]) + head_line + ("" if head_line.endswith("\n") else eol)
    new_table = table.replace("\n", eol)
    after = "".join(lines[end:])
    return before + eol + new_table + eol + (eol + after if after else "")


def final_row(summary: Summary | Mapping[str, Any]) -> CardRow:
    """The card row of an evaluation summary, labelled ``final``."""
    s = summary if isinstance(summary, Summary) else Summary.model_validate(summary)
    return CardRow(
        adapter="final",
        tasks=s.tasks,
        repeats=s.repeats,
        mean_score=s.mean_score,
        solved_once=s.solved_once,
        cost_usd=s.cost_usd,
    )


def _identity_env(repo: git.Repo) -> dict[str, str]:
    """Author/committer environment: git's configured identity when there is one, else hermit-tui's."""
    env: dict[str, str] = {}
    for key in ("name", "email"):
        try:
            repo.git.config("--get", f"user.{key}")
        except git.GitCommandError:
            env[f"GIT_AUTHOR_{key.upper()}"] = env[f"GIT_COMMITTER_{key.upper()}"] = DEFAULT_IDENTITY[key]
    return env


def commit_card(repo: git.Repo, head: str, message: str) -> str:
    """A commit object: ``head``'s tree with the working CARD.md in place of its own (no index or branch touched)."""
    fd, index = tempfile.mkstemp(prefix="hermit-tui-index-")
    os.close(fd)
    os.unlink(index)
    env = {"GIT_INDEX_FILE": index}
    try:
        repo.git.read_tree(head, env=env)
        repo.git.update_index("--add", "--", CARD_NAME, env=env)
        tree = repo.git.write_tree(env=env)
    finally:
        if os.path.exists(index):
            os.unlink(index)
    commit = str(repo.git.commit_tree(tree, "-p", head, "-m", message, env=_identity_env(repo)))
    # git's own hooks never run here (core.workspace.gitrepo): the check a pre-commit hook could have made is ours
    changed = repo.git.diff_tree("--no-ext-diff", "--no-textconv", "--name-only", "-r", "-z", head, commit)
    if [p for p in changed.split("\0") if p] not in ([CARD_NAME], []):
        raise InputError(f"the card commit would change more than {CARD_NAME}: nothing is committed")
    return commit


def write_card(path: Path, data: bytes) -> None:
    """Replace the file at ``path`` with ``data`` in one rename."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)  # publishing keeps the card's permissions
    except OSError:
        mode = None
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            if mode is not None:
                os.fchmod(fh.fileno(), mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)  # a failed publish leaves no temporary card behind
        except OSError:
            pass
        raise


def move_branch(repo: git.Repo, branch: str, new: str, old: str, message: str) -> None:
    """Point ``branch`` (a full ref name) at ``new``, only if it still points at ``old``."""
    repo.git.update_ref("-m", message, branch, new, old)


def stage_card(repo: git.Repo) -> None:
    """Put the working CARD.md in the checkout's index (so that the checkout shows no change)."""
    repo.git.update_index("--add", "--", CARD_NAME)


def checkout_branch(repo: git.Repo) -> str | None:
    """The full ref name of the branch the checkout is on, or None when its HEAD is detached."""
    try:
        return str(repo.git.symbolic_ref("-q", "HEAD"))
    except git.GitCommandError:
        return None


class CardChange:
    """One change of the card in the run's checkout: write CARD.md, commit it alone on top of ``head`` on
    ``branch``, point ``tag`` at that commit. :meth:`rollback` puts back what :meth:`apply` may have changed:
    CARD.md's bytes, the branch, the checkout's index and the tag (to what it held, an annotated tag's own object
    included; deleted when it did not exist).

    Both moves are compare-and-swap: the branch moves only if it still points at ``head`` and the tag only if it
    still holds what it held when this change was made (which must be ``tag_before``); a rollback moves each back
    only if it still points where this change left it, so that nobody else's move is ever undone."""

    def __init__(
        self,
        repo: git.Repo,
        tree: AdapterTree,
        card: Path,
        *,
        branch: str,
        head: str,
        tag: str,
        tag_before: str | None,
        original: bytes,
    ):
        self.repo, self.tree, self.card = repo, tree, card
        self.branch, self.head, self.tag, self.tag_before = branch, head, tag, tag_before
        self.original = original
        self.index_path = Path(repo.git_dir) / "index"
        self.index_bytes = self.index_path.read_bytes() if self.index_path.exists() else None
        self.tag_ref = f"refs/tags/{tag}"
        self.tag_raw = tree.ref_value(self.tag_ref)  # what the tag holds now (an annotated tag's own object)
        if tree.tag_target(tag) != tag_before:
            raise InputError(f"tag {tag} changed since it was read: nothing is changed")
        self.branch_moved_to: str | None = None
        self.tag_moved_to: str | None = None

    def apply(self, new: bytes | None, message: str, on_commit: Callable[[str], object] | None = None) -> str:
        """Write ``new`` and commit it; with ``new`` None only move the tag to ``head``. Returns the tag's commit.
        ``on_commit`` is told the card commit's id before any ref moves (the publish journal records it)."""
        commit = self.head
        if new is not None:
            write_card(self.card, new)
            crash_point("card-written")
            commit = commit_card(self.repo, self.head, message)
            if on_commit is not None:
                on_commit(commit)
            crash_point("committed")
            self.branch_moved_to = commit  # before the move: a move that fails after it happened is undone too
            move_branch(self.repo, self.branch, commit, self.head, message)
            crash_point("branch-moved")
            stage_card(self.repo)
            crash_point("card-staged")
        self.tag_moved_to = commit
        self.tree.move_tag(self.tag, commit, expected=self.tag_raw)
        crash_point("tag-moved")
        return commit

    def rollback(self) -> None:
        """Each step is tried even when another fails: restoring the rest matters more than the first failure."""
        steps: list[Callable[[], object]] = [lambda: write_card(self.card, self.original)]
        if self.branch_moved_to is not None:
            steps.append(lambda: self.repo.git.update_ref(self.branch, self.head, self.branch_moved_to))
        steps.append(
            lambda: (
                self.index_path.write_bytes(self.index_bytes)
                if self.index_bytes is not None
                else self.index_path.unlink(True)
            )
        )
        if self.tag_moved_to is not None:
            steps.append(lambda: self.tree.swap_ref(self.tag_ref, self.tag_raw, self.tag_moved_to))
        for step in steps:
            try:
                step()
            except Exception:
                pass


def update_final_card(config: Config, summary: Summary | Mapping[str, Any]) -> CardResult:
    """hermit's card update for ``eval --adapter final``, made atomic.

    Rewrites the Evaluation section of ``<run_dir>/checkout/CARD.md`` with one ``final`` row, commits only that file
    on the run's branch ("card: eval results of <run>/final") and force-moves tag ``<run>/final`` to the new commit.
    Nothing happens when the card is missing or the text would not change, or for a smoke or incomplete evaluation.
    A checkout that is not on the run's branch, or a final tag that no longer points at the measured commit (or at
    the checkout's head) is an InputError, and nothing is changed. When a git step fails, CARD.md's bytes, the
    branch, the tag and the checkout's index are put back before the error is raised.
    """
    s = summary if isinstance(summary, Summary) else Summary.model_validate(summary)
    run = config.run_name
    tag = f"{run}/final"
    checkout = Path(config.run_dir) / "checkout"
    card = checkout / CARD_NAME
    check_no_links(Path(config.run_dir), checkout, [CARD_NAME])
    if not card.is_file():
        return CardResult(message=f"no {card}: card not updated")
    if s.smoke_limit is not None or s.complete is False:
        return CardResult(card_path=card, message="a smoke subset or an incomplete evaluation does not go on the card")
    if not valid_ref_name(tag):
        raise InputError(f"run name '{run}' cannot name a tag: card not updated")

    tree = AdapterTree(Path(config.tree_dir))
    try:
        repo = open_repo(checkout)
    except git.InvalidGitRepositoryError:
        tree.close()
        raise InputError(f"run checkout {checkout} is not a git worktree: card not updated") from None
    try:
        return _update(tree, repo, card, tag, run, s)
    finally:
        repo.close()
        tree.close()


def _update(tree: AdapterTree, repo: git.Repo, card: Path, tag: str, run: str, s: Summary) -> CardResult:
    branch = f"refs/heads/{run}"
    if Path(repo.common_dir).resolve() != Path(tree.repo.common_dir).resolve():
        raise InputError(f"run checkout {card.parent} is not a worktree of tree {tree.path}: card not updated")
    if checkout_branch(repo) != branch:
        raise InputError(f"run checkout {card.parent} is not on branch '{run}': card not updated")
    head = repo.git.rev_parse("--verify", "HEAD")
    final = tree.tag_target(tag)
    if final != head or (s.commit is not None and s.commit != final):
        raise InputError(
            f"tag {tag} points at {str(final)[:12]}, not at the evaluated commit "
            f"{str(s.commit)[:12]} and the head of branch '{run}': card not updated"
        )

    original = card.read_bytes()
    try:
        text = original.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{card}: not UTF-8 text: card not updated") from None
    new = replace_evaluation_section(text, render_eval_table([final_row(s)])).encode("utf-8")
    if new == original:
        return CardResult(card_path=card, message=f"{card.name} already holds these results: nothing committed")

    change = CardChange(repo, tree, card, branch=branch, head=head, tag=tag, tag_before=final, original=original)
    try:
        commit = change.apply(new, f"card: eval results of {tag}")
    except Exception as exc:
        change.rollback()
        if isinstance(exc, (git.GitCommandError, OSError)):
            raise InputError(
                f"updating {card} failed ({' '.join(str(exc).split())[:300]}); the card, branch "
                f"'{run}' and tag {tag} are as before"
            ) from None
        raise
    return CardResult(
        card_path=card,
        commit=commit,
        moved_tag=True,
        message=f"{card.name} updated in commit {commit[:12]} on branch '{run}'; {tag} moved to it",
    )


__all__ = [
    "CARD_NAME",
    "CRASH_ENV",
    "EVAL_HEADING",
    "TAIL_MARK",
    "CardChange",
    "CardResult",
    "CardRow",
    "checkout_branch",
    "commit_card",
    "crash_point",
    "final_row",
    "render_eval_table",
    "replace_evaluation_section",
    "split_lines",
    "update_final_card",
]
