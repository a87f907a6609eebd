"""Publish the final card: a deliberate, guarded, reversible step.

:func:`plan_publish` (in ``publish_plan.py``) works out, without changing anything, what the card will say, its
diff, the warnings to read and the refusals. :func:`publish` re-checks all of it, then writes only the Evaluation
section, commits ``CARD.md`` alone on the run's branch, moves ``<run>/final`` to that commit and records both commits
in final's summary.json and in a publish log; any failure puts everything back. :func:`undo_publish` moves the tag
back to where the last publish found it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

import git
from pydantic import BaseModel

from hermit_tui.core.errors import InputError
from hermit_tui.core.publish import card as cardmod
from hermit_tui.core.publish.card import CARD_NAME, CardChange, crash_point
from hermit_tui.core.publish.checks import is_sha, short_sha
from hermit_tui.core.publish.plan import (
    CONFIRM_WORD,
    DEFAULT_LABELS,
    PUBLISH_LOG,
    UNDO_WORD,
    EvalRow,
    PublishPlan,
    plan_publish,
    render_publish_table,
    same_adapter,
    unified_diff,
)
from hermit_tui.core.publish.recovery import PublishJournal, recover
from hermit_tui.core.records.folders import SUMMARY, check_no_links, eval_root, list_evaluations
from hermit_tui.core.records.journal import now_iso
from hermit_tui.core.records.results import read_summary, write_atomic
from hermit_tui.core.workspace.config import Config
from hermit_tui.core.workspace.gitrepo import open_repo
from hermit_tui.core.workspace.tree import AdapterTree


class PublishResult(BaseModel):
    tag: str
    branch: str
    committed: bool  # False: the card already held this evaluation (the tag may still have moved)
    card_commit: str | None = None
    measured_commit: str | None = None
    previous_tag_target: str | None = None
    message: str


class UndoResult(BaseModel):
    tag: str
    restored_to: str
    card_commit: str
    branch_restored: bool = False  # the card commit was taken off the branch and CARD.md put back
    message: str


# ---------------------------------------------------------------------------------------------------- publishing


def publish_log_path(run_dir: Path) -> Path:
    return eval_root(run_dir) / PUBLISH_LOG


def _snapshot(path: Path) -> bytes | None:
    return path.read_bytes() if path.exists() else None


def _put_back(path: Path, data: bytes | None) -> None:
    try:
        if data is None:
            path.unlink(missing_ok=True)
        else:
            cardmod.write_card(path, data)
    except OSError:
        pass


def record_in_summary(path: Path, key: str, value: dict[str, Any]) -> None:
    """Add ``key`` to a summary.json, keeping every other key and its order (the file is replaced atomically)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    data[key] = value
    write_atomic(path, json.dumps(data, indent=1, allow_nan=False))


def append_log(path: Path, entry: dict[str, Any]) -> None:
    """Add one line to the publish log (the whole file is replaced atomically)."""
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    if old and not old.endswith("\n"):
        old += "\n"
    write_atomic(path, old + json.dumps(entry, sort_keys=False) + "\n")


def check_publish_links(config: Config, summary: Path | None) -> None:
    """What a publish or an undo writes (final's summary.json, the publish log, CARD.md) never goes through a
    symbolic link: refused, naming the link, before anything is changed."""
    run_dir = Path(config.run_dir)
    check_no_links(run_dir, eval_root(run_dir), [PUBLISH_LOG])
    check_no_links(run_dir, run_dir / "checkout", [CARD_NAME])
    if summary is not None:
        check_no_links(run_dir, summary.parent, [SUMMARY])


def _open(config: Config) -> tuple[AdapterTree, git.Repo]:
    tree = AdapterTree(Path(config.tree_dir))
    try:
        return tree, open_repo(Path(config.run_dir) / "checkout")
    except Exception:
        tree.close()
        raise


def publish(plan_or_config: PublishPlan | Config, labels: Sequence[str] | None = None) -> PublishResult:
    """Publish final's card after re-checking every refusal.

    Given a reviewed :class:`PublishPlan`, refuses when anything it showed has changed since. Writes only the
    Evaluation section of CARD.md, commits it alone on the run's branch, moves ``<run>/final`` to that commit and
    records ``published`` in final's summary.json and a line in ``eval/.hermit-tui-publish.jsonl``. When a step
    fails, CARD.md, the branch, the index, the tag, summary.json and the log are put back before the error is raised.
    """
    if isinstance(plan_or_config, PublishPlan):
        reviewed = plan_or_config
        plan = plan_publish(reviewed.config, reviewed.labels, reviewed.taxonomy)
        if plan.reviewed_state() != reviewed.reviewed_state():
            raise InputError(
                "the card, the checkout, the tag or the evaluations changed since the review: "
                "review again before publishing"
            )
    else:
        plan = plan_publish(plan_or_config, labels)
    if plan.refusals:
        raise InputError("cannot publish: " + "; ".join(plan.refusals))
    if not plan.can_publish:
        raise InputError("cannot publish: there is no card to write")
    if plan.up_to_date:
        return PublishResult(
            tag=plan.tag,
            branch=plan.run,
            committed=False,
            card_commit=plan.head,
            measured_commit=plan.measured_commit,
            previous_tag_target=plan.tag_target,
            message=f"{CARD_NAME} already holds this evaluation and {plan.tag} points at it: nothing to publish",
        )
    summary, head, current, new, message = (
        plan.final_summary,
        plan.head,
        plan.current_card,
        plan.new_card,
        plan.message,
    )
    if summary is None or head is None or current is None or new is None or message is None:
        raise InputError("cannot publish: the review found no final summary, checkout head or card to write")
    check_publish_links(plan.config, summary)
    tree, repo = _open(plan.config)
    log = publish_log_path(plan.config.run_dir)
    summary_bytes, log_bytes = _snapshot(summary), _snapshot(log)
    original = plan.card_path.read_bytes()
    try:
        if original != current.encode("utf-8"):
            raise InputError(f"{plan.card_path} changed since the review: review again before publishing")
        change = CardChange(
            repo,
            tree,
            plan.card_path,
            branch=plan.branch,
            head=head,
            tag=plan.tag,
            tag_before=plan.tag_target,
            original=original,
        )
        journal = PublishJournal.begin(
            plan.config,
            "publish",
            tag=plan.tag,
            tag_raw=change.tag_raw,
            branch=plan.branch,
            head=head,
            commit=None if plan.changes_card else head,
            card=plan.card_path,
            summary=summary,
        )
        try:
            commit = change.apply(new.encode("utf-8") if plan.changes_card else None, message, journal.committed)
            at = now_iso()
            record = {
                "measured_commit": plan.measured_commit,
                "card_commit": commit,
                "previous_tag_target": plan.tag_target,
                "branch_before": head if plan.changes_card else None,
                "at": at,
            }
            record_in_summary(summary, "published", record)
            crash_point("summary-recorded")
            append_log(
                log,
                {
                    "action": "publish",
                    "run": plan.run,
                    "tag": plan.tag,
                    **record,
                    "message": plan.message if plan.changes_card else None,
                    "summary": str(summary),
                },
            )
            crash_point("logged")
            journal.end()
        except Exception as exc:
            change.rollback()
            _put_back(summary, summary_bytes)
            _put_back(log, log_bytes)
            journal.end()
            if isinstance(exc, (git.GitCommandError, OSError, ValueError, InputError)):
                raise InputError(
                    f"publishing failed ({' '.join(str(exc).split())[:300]}); the card, branch "
                    f"'{plan.run}', tag {plan.tag} and final's summary are as before"
                ) from None
            raise
    finally:
        repo.close()
        tree.close()
    what = (
        f"{CARD_NAME} committed as {commit[:12]} on branch '{plan.run}'"
        if plan.changes_card
        else f"{CARD_NAME} already held this evaluation at {commit[:12]}"
    )
    return PublishResult(
        tag=plan.tag,
        branch=plan.run,
        committed=plan.changes_card,
        card_commit=commit,
        measured_commit=plan.measured_commit,
        previous_tag_target=plan.tag_target,
        message=f"{what}; {plan.tag} moved from {short_sha(plan.tag_target)} to it",
    )


# ---------------------------------------------------------------------------------------------------- undo


def read_publish_log(run_dir: Path) -> list[dict[str, Any]]:
    """The publish log's entries (unreadable lines are skipped)."""
    path = publish_log_path(run_dir)
    if not path.is_file():
        return []
    entries = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            entries.append(entry)
    return entries


def last_publish(run_dir: Path) -> dict[str, Any] | None:
    """The latest publish that no undo has reverted (publishes and undos pair up like a stack)."""
    stack: list[dict[str, Any]] = []
    for entry in read_publish_log(run_dir):
        if entry.get("action") == "publish":
            stack.append(entry)
        elif entry.get("action") == "undo" and stack and stack[-1].get("card_commit") == entry.get("card_commit"):
            stack.pop()
    return stack[-1] if stack else None


def undo_check(config: Config) -> tuple[dict[str, Any] | None, str | None]:
    """(the publish an undo would revert, None), or (None, why there is nothing to undo)."""
    entry = last_publish(config.run_dir)
    if entry is None:
        return None, f"nothing to undo: no publish by hermit-tui is recorded in {publish_log_path(config.run_dir)}"
    tag, card_commit, previous = entry.get("tag"), entry.get("card_commit"), entry.get("previous_tag_target")
    if tag != f"{config.run_name}/final" or not (is_sha(card_commit) and is_sha(previous)):
        return None, f"the last publish log entry is not usable: {json.dumps(entry)[:200]}"
    tree = AdapterTree(Path(config.tree_dir))
    try:
        now = tree.tag_target(tag)
    finally:
        tree.close()
    if now != card_commit:
        return None, (
            f"{tag} has moved since the last publish (it points at {short_sha(now)}, the publish left it at "
            f"{card_commit[:12]}): nothing is undone"
        )
    return entry, None


def _card_commit_parent(entry: dict[str, Any], repo: git.Repo) -> str | None:
    """The branch head the publish found, when it committed a card (None when it only moved the tag). Entries
    written before ``branch_before`` was recorded committed when they carry a commit message."""
    if "branch_before" in entry:
        before = entry["branch_before"]
        return before if is_sha(before) else None
    if entry.get("message") is None:
        return None
    try:
        return str(repo.git.rev_parse("--verify", "--end-of-options", f"{entry['card_commit']}^{{commit}}^"))
    except git.GitCommandError:
        return None


def _blob(repo: git.Repo, commit: str) -> bytes | None:
    """CARD.md's bytes at ``commit`` (None when it has none)."""
    try:
        blob = repo.commit(commit).tree / CARD_NAME
    except (KeyError, ValueError, git.BadName):
        return None
    return bytes(blob.data_stream.read())


def branch_undo_problem(config: Config, entry: dict[str, Any]) -> tuple[str | None, str | None]:
    """(the head to put the run's branch back to, None) when the undo can also take the card commit off the branch
    and put CARD.md back; (None, why not) when the branch and the card stay as they are."""
    branch = f"refs/heads/{config.run_name}"
    card_commit = entry["card_commit"]
    repo = open_repo(Path(config.run_dir) / "checkout")
    try:
        before = _card_commit_parent(entry, repo)
        if before is None:
            return None, None  # the publish only moved the tag: nothing on the branch to undo
        try:
            head = str(repo.git.rev_parse("--verify", branch))
        except git.GitCommandError:
            return None, f"branch '{config.run_name}' is gone: it stays so"
        if head != card_commit:
            return None, (
                f"branch '{config.run_name}' has commits after the card commit {card_commit[:12]}: the commit and "
                f"{CARD_NAME} stay"
            )
        card = Path(config.run_dir) / "checkout" / CARD_NAME
        published = _blob(repo, card_commit)
        if published is None or not card.is_file() or card.read_bytes() != published:
            return None, f"{CARD_NAME} in the checkout has changed since the publish: the branch and the card stay"
        if repo.git.status("--porcelain", "--", CARD_NAME):
            return None, f"{CARD_NAME} is staged with changes in the checkout: the branch and the card stay"
        return before, None
    finally:
        repo.close()


def undo_text(config: Config, entry: dict[str, Any]) -> str:
    """What an undo of ``entry`` would do, in one sentence (the CLI and the Review screen say it before asking)."""
    branch_to, problem = branch_undo_problem(config, entry)
    what = f"move {entry['tag']} back from {entry['card_commit'][:12]} to {entry['previous_tag_target'][:12]}"
    if branch_to is not None:
        what += (
            f", put branch '{config.run_name}' back to {branch_to[:12]} and {CARD_NAME} in the checkout back to "
            "its text there"
        )
    elif problem is not None:
        what += f"; {problem}"
    return what


def undo_publish(config: Config) -> UndoResult:
    """Point ``<run>/final`` back where the last hermit-tui publish found it; when that publish committed the card
    and the branch's head is still that commit with the card untouched, put the branch back to the head it found
    and CARD.md (file and index) back to its text there; mark the undo in the log and in final's summary.json.
    Atomic like :func:`publish`: a failed step puts back what the earlier ones did."""
    entry, problem = undo_check(config)
    if entry is None:
        raise InputError(f"cannot undo: {problem}")
    tag, card_commit, previous = entry["tag"], entry["card_commit"], entry["previous_tag_target"]
    branch_to, branch_problem = branch_undo_problem(config, entry)
    log = publish_log_path(config.run_dir)
    summary = Path(entry["summary"]) if isinstance(entry.get("summary"), str) else None
    if summary is not None and (
        summary.name != "summary.json" or summary.resolve().parent.parent != eval_root(config.run_dir).resolve()
    ):
        summary = None  # the log names a summary outside this run: leave it alone
    check_publish_links(config, summary)
    summary_bytes, log_bytes = (_snapshot(summary) if summary else None), _snapshot(log)
    tree, repo = _open(config)
    card = Path(config.run_dir) / "checkout" / CARD_NAME
    branch = f"refs/heads/{config.run_name}"
    card_bytes = card.read_bytes() if card.is_file() else None
    index_path = Path(repo.git_dir) / "index"
    index_bytes = index_path.read_bytes() if index_path.exists() else None
    try:
        tag_raw = tree.ref_value(f"refs/tags/{tag}")
        journal = PublishJournal.begin(
            config,
            "undo",
            tag=tag,
            tag_raw=tag_raw,
            commit=card_commit,
            previous=previous,
            branch=branch if branch_to is not None else None,
            head=card_commit,
            branch_to=branch_to,
            card=card if branch_to is not None else None,
            summary=summary,
        )
        try:
            if tree.tag_target(tag) != card_commit:
                raise InputError(f"{tag} moved since it was read")
            tree.move_tag(tag, previous, expected=tag_raw)
            crash_point("tag-moved")
            if branch_to is not None:
                earlier = _blob(repo, branch_to)
                if earlier is None:
                    card.unlink()
                    repo.git.update_index("--force-remove", "--", CARD_NAME)
                else:
                    cardmod.write_card(card, earlier)
                cardmod.move_branch(repo, branch, branch_to, card_commit, f"hermit-tui: undo the publish of {tag}")
                if earlier is not None:
                    cardmod.stage_card(repo)
                crash_point("branch-moved")
            at = now_iso()
            if summary is not None and summary.is_file():
                published = read_summary(summary).published
                if published is not None and published.card_commit == card_commit:
                    record_in_summary(summary, "published", {**published.model_dump(), "undone_at": at})
            crash_point("summary-recorded")
            append_log(
                log,
                {
                    "action": "undo",
                    "run": config.run_name,
                    "tag": tag,
                    "card_commit": card_commit,
                    "restored_to": previous,
                    "branch_restored_to": branch_to,
                    "at": at,
                },
            )
            crash_point("logged")
            journal.end()
        except Exception as exc:
            journal.end()
            steps: list[Callable[[], object]] = [
                # each only if it is still where the undo left it
                lambda: tree.swap_ref(f"refs/tags/{tag}", tag_raw, previous),
                lambda: (
                    cardmod.move_branch(repo, branch, card_commit, branch_to, "hermit-tui: undo failed, put back")
                    if branch_to is not None
                    else None
                ),
                lambda: cardmod.write_card(card, card_bytes) if card_bytes is not None else None,
                lambda: index_path.write_bytes(index_bytes) if index_bytes is not None else None,
            ]
            for step in steps:
                try:
                    step()
                except Exception:
                    pass
            if summary is not None:
                _put_back(summary, summary_bytes)
            _put_back(log, log_bytes)
            if isinstance(exc, (git.GitCommandError, OSError, ValueError, InputError)):
                raise InputError(
                    f"undo failed ({' '.join(str(exc).split())[:300]}); {tag}, the branch, {CARD_NAME} and the log "
                    "are as before"
                ) from None
            raise
    finally:
        repo.close()
        tree.close()
    if branch_to is not None:
        rest = (
            f"branch '{config.run_name}' back to {branch_to[:12]} and {CARD_NAME} back to its text there (the card "
            f"commit {card_commit[:12]} is off the branch)"
        )
    elif branch_problem is not None:
        rest = branch_problem
    else:
        rest = "the publish had committed nothing"
    return UndoResult(
        tag=tag,
        restored_to=previous,
        card_commit=card_commit,
        branch_restored=branch_to is not None,
        message=f"{tag} moved back to {previous[:12]}; {rest}",
    )


# ---------------------------------------------------------------------------------------------------- the review


class Review(BaseModel):
    """Everything the Review & publish screen shows before anything happens: the plan, the publish an undo would
    revert (or why there is none), and the current evaluations not on the card unless ticked."""

    plan: PublishPlan
    undo_entry: dict[str, Any] | None = None
    undo_problem: str | None = None
    undo_text: str | None = None  # what the undo would do (``undo_text``)
    others: list[str] = []


def review(config: Config, labels: Sequence[str] | None = None, taxonomy: bool = False) -> Review:
    """The plan (:func:`plan_publish`), the undo check and the other evaluations, at once (git calls and file reads:
    call it off the UI thread). Changes nothing."""
    plan = plan_publish(config, labels, taxonomy)
    entry, problem = undo_check(config)
    others = sorted({e.label for e in list_evaluations(config.run_dir, include_archived=False)} - set(DEFAULT_LABELS))
    text = undo_text(config, entry) if entry is not None else None
    return Review(plan=plan, undo_entry=entry, undo_problem=problem, undo_text=text, others=others)


def carry_out(action: Literal["publish", "undo"], review: Review, config: Config) -> str:
    """Publish the reviewed plan, or undo the last publish; the one-line message to show. Both restore everything
    before raising."""
    recovered = recover(config)
    if recovered is not None:  # what was reviewed is not what is on disk any more: review again
        return recovered + "; review again"
    return publish(review.plan).message if action == "publish" else undo_publish(config).message


__all__ = [
    "CONFIRM_WORD",
    "DEFAULT_LABELS",
    "PUBLISH_LOG",
    "UNDO_WORD",
    "EvalRow",
    "PublishPlan",
    "PublishResult",
    "Review",
    "UndoResult",
    "branch_undo_problem",
    "carry_out",
    "last_publish",
    "plan_publish",
    "publish",
    "publish_log_path",
    "read_publish_log",
    "render_publish_table",
    "review",
    "same_adapter",
    "undo_check",
    "undo_publish",
    "undo_text",
    "unified_diff",
]
