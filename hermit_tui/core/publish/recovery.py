"""The publish journal: what a publish or an undo is about to change, written before it changes anything, so that a
publish killed at any point (kill -9, a power cut) is recovered by the next ``publish`` or ``publish --undo``.

``eval/.hermit-tui-publish-journal.json`` holds the state before (the card's bytes, the branch's and the tag's values,
final's summary.json, the publish log's length) and, once the card commit exists, its id. The journal is removed
as the last step. :func:`recover` finds one left behind and either finishes (the log line, the last step before
the journal's removal, is there: everything else was done) or rolls back every step that happened, each
compare-and-swap (a ref moves back only if it is still where the killed publish left it).

For the tests, ``HERMIT_TUI_CRASH_AT=<step>`` kills the process with SIGKILL right after that step
(:func:`crash_point`); the steps are :data:`PUBLISH_STEPS` and :data:`UNDO_STEPS`.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import git

from hermit_tui.core.errors import InputError
from hermit_tui.core.publish.card import CARD_NAME, CRASH_ENV, crash_point, stage_card, write_card
from hermit_tui.core.publish.plan import PUBLISH_LOG
from hermit_tui.core.records.folders import check_no_links, eval_root
from hermit_tui.core.records.journal import now_iso
from hermit_tui.core.records.results import write_atomic
from hermit_tui.core.workspace.config import Config
from hermit_tui.core.workspace.files import read_bytes
from hermit_tui.core.workspace.gitrepo import open_repo
from hermit_tui.core.workspace.tree import AdapterTree

JOURNAL = ".hermit-tui-publish-journal.json"
PUBLISH_STEPS = (
    "journal-written",
    "card-written",
    "committed",
    "branch-moved",
    "card-staged",
    "tag-moved",
    "summary-recorded",
    "logged",
)
UNDO_STEPS = ("journal-written", "tag-moved", "branch-moved", "summary-recorded", "logged")


def journal_path(run_dir: Path) -> Path:
    return eval_root(run_dir) / JOURNAL


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def _unb64(text: Any) -> bytes | None:
    return base64.b64decode(text) if isinstance(text, str) else None


def _read(path: Path) -> bytes | None:
    try:
        return read_bytes(path)
    except FileNotFoundError:
        return None


class PublishJournal:
    """The journal of one publish or undo, written before its first change and removed after its last."""

    def __init__(self, run_dir: Path, entry: dict[str, Any]):
        self.path = journal_path(run_dir)
        self.entry = entry

    @classmethod
    def begin(
        cls,
        config: Config,
        action: str,
        *,
        tag: str,
        tag_raw: str | None,
        branch: str | None = None,
        head: str | None = None,
        commit: str | None = None,
        previous: str | None = None,
        branch_to: str | None = None,
        card: Path | None = None,
        summary: Path | None = None,
    ) -> PublishJournal:
        run_dir = Path(config.run_dir)
        check_no_links(run_dir, eval_root(run_dir), [JOURNAL])
        if journal_path(run_dir).exists():
            raise InputError(
                f"{journal_path(run_dir)}: an earlier publish did not finish; run publish or publish --undo to "
                "recover it first"
            )
        log = eval_root(run_dir) / PUBLISH_LOG
        entry = {
            "action": action,
            "run": config.run_name,
            "tag": tag,
            "tag_raw": tag_raw,
            "branch": branch,
            "head": head,
            "commit": commit,
            "previous": previous,
            "branch_to": branch_to,
            "card": str(card) if card else None,
            "card_before": _b64(_read(card)) if card else None,
            "summary": str(summary) if summary else None,
            "summary_before": _b64(_read(summary)) if summary else None,
            "log_size": log.stat().st_size if log.is_file() else 0,
            "started_at": now_iso(),
        }
        journal = cls(run_dir, entry)
        journal.write()
        crash_point("journal-written")
        return journal

    def write(self) -> None:
        write_atomic(self.path, json.dumps(self.entry, indent=1))

    def committed(self, commit: str) -> None:
        """The card commit exists (no ref points at it yet): record it before the branch moves."""
        self.entry["commit"] = self.entry["branch_to"] = commit
        self.write()

    def end(self) -> None:
        self.path.unlink(missing_ok=True)


def pending(config: Config) -> dict[str, Any] | None:
    """The journal a killed publish or undo left, or None."""
    path = journal_path(Path(config.run_dir))
    try:
        data = json.loads(read_bytes(path))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: the journal of a killed publish cannot be read ({exc}); move it away") from None
    if not isinstance(data, dict) or data.get("action") not in ("publish", "undo"):
        raise InputError(f"{path}: not a publish journal; move it away")
    return data


def _finished(entry: dict[str, Any], log: Path) -> bool:
    """Whether the killed step had written its log line (the last step before the journal's removal)."""
    data = _read(log) or b""
    size = entry.get("log_size")
    if not isinstance(size, int) or len(data) <= size:
        return False
    for line in data[size:].decode("utf-8", "replace").splitlines():
        try:
            logged = json.loads(line)
        except ValueError:
            continue
        if isinstance(logged, dict) and logged.get("action") == entry["action"]:
            return logged.get("card_commit") == (entry.get("commit") or logged.get("card_commit"))
    return False


def recover(config: Config) -> str | None:
    """Finish or roll back what a killed publish or undo left (see the module's docstring); the one line saying
    what was done, or None when there was nothing to recover."""
    entry = pending(config)
    if entry is None:
        return None
    run_dir = Path(config.run_dir)
    root = eval_root(run_dir)
    log = root / PUBLISH_LOG
    path = journal_path(run_dir)
    action = entry["action"]
    if _finished(entry, log):
        path.unlink(missing_ok=True)
        return f"a {action} killed after its last step had finished: its journal {path.name} is removed"
    check_no_links(run_dir, root, [PUBLISH_LOG, JOURNAL])
    problems: list[str] = []

    def attempt(what: str, step: Any) -> None:
        try:
            step()
        except (OSError, ValueError, InputError, git.GitCommandError) as exc:
            problems.append(f"{what}: {' '.join(str(exc).split())[:160]}")

    tree = AdapterTree(Path(config.tree_dir))
    try:
        tag, tag_raw, commit = entry.get("tag"), entry.get("tag_raw"), entry.get("commit")
        tag_ref = f"refs/tags/{tag}"
        card = Path(entry["card"]) if isinstance(entry.get("card"), str) else None
        card_before = _unb64(entry.get("card_before"))
        if card is not None and card_before is not None and card.parent == run_dir / "checkout":
            check_no_links(run_dir, card.parent, [CARD_NAME])
            if _read(card) != card_before:
                attempt("CARD.md", lambda: write_card(card, card_before))
            branch, head, branch_to = entry.get("branch"), entry.get("head"), entry.get("branch_to")
            if isinstance(branch, str) and isinstance(head, str) and branch_to and tree.ref_value(branch) == branch_to:
                attempt("the branch", lambda: tree.swap_ref(branch, head, branch_to))

            def restage() -> None:
                repo = open_repo(card.parent)
                try:
                    stage_card(repo)  # the restored card is the branch head's: the checkout is clean again
                finally:
                    repo.close()

            attempt("the checkout's index", restage)
        moved_to = commit if action == "publish" else entry.get("previous")
        now = tree.ref_value(tag_ref)
        if moved_to and now == moved_to and now != tag_raw:
            attempt("the tag", lambda: tree.swap_ref(tag_ref, tag_raw, now))
        summary = Path(entry["summary"]) if isinstance(entry.get("summary"), str) else None
        summary_before = _unb64(entry.get("summary_before"))
        if summary is not None and summary_before is not None and summary.parent.parent == root:
            if _read(summary) != summary_before:
                attempt("final's summary.json", lambda: write_atomic(summary, summary_before.decode("utf-8")))
        size = entry.get("log_size")
        data = _read(log)
        if isinstance(size, int) and data is not None and len(data) > size:
            attempt("the publish log", lambda: write_atomic(log, data[:size].decode("utf-8", "replace")))
    finally:
        tree.close()
    if problems:
        raise InputError(
            f"recovering the {action} killed at {entry.get('started_at', '?')} failed ({'; '.join(problems)}); "
            f"its journal {path} is kept"
        )
    path.unlink(missing_ok=True)
    return (
        f"a {action} killed before it finished (started {entry.get('started_at', '?')}) was rolled back: the card, "
        f"the branch, tag {tag}, final's summary and the publish log are as before it"
    )


__all__ = [
    "CRASH_ENV",
    "JOURNAL",
    "PUBLISH_STEPS",
    "UNDO_STEPS",
    "PublishJournal",
    "crash_point",
    "journal_path",
    "pending",
    "recover",
]
