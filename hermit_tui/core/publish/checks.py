"""The checks behind a publish plan: whether two commits hold the same adapter (CARD.md aside), the checkout's state,
whether final's evaluation can be published, and every warning a reader must see before confirming (stale
measurements, protocol mismatches, test reuse, test overlap, caveats, errors, unknown costs, an ordered stream).
Each records what it finds in the plan's ``refusals`` or ``warnings``; ``core.publish.plan`` calls them."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import TYPE_CHECKING, TypeGuard

import git

from hermit_tui.core.errors import InputError
from hermit_tui.core.present import NO_FINGERPRINT, caveats, incomplete_caveat, smoke_caveat
from hermit_tui.core.publish.card import CARD_NAME, checkout_branch
from hermit_tui.core.publish.table import EvalRow
from hermit_tui.core.records.folders import StoredEvaluation, eval_root
from hermit_tui.core.workspace.config import Config
from hermit_tui.core.workspace.fingerprint import Fingerprint
from hermit_tui.core.workspace.gitrepo import open_repo
from hermit_tui.core.workspace.selectors import MANIFEST, directory_hash
from hermit_tui.core.workspace.tasks import load_tasks
from hermit_tui.core.workspace.tree import ROOT_TAG, AdapterTree

if TYPE_CHECKING:  # the plan these checks fill in (it calls them)
    from hermit_tui.core.publish.plan import PublishPlan

_SHA = re.compile(r"[0-9a-f]{40}")


# ---------------------------------------------------------------------------------------------------- git helpers


def is_sha(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and bool(_SHA.fullmatch(value))


def _is_ancestor(repo: git.Repo, a: str, b: str) -> bool:
    try:
        repo.git.merge_base("--is-ancestor", a, b)
    except git.GitCommandError:
        return False
    return True


def _identity(repo: git.Repo, sha: str, cache: dict[str, str] | None = None) -> str:
    """A hash of a commit's files except CARD.md: two commits that differ only in the card are one adapter."""
    cache = {} if cache is None else cache
    if sha not in cache:
        entries = [e for e in repo.git.ls_tree("-r", "-z", sha).split("\0") if e and e.split("\t", 1)[-1] != CARD_NAME]
        cache[sha] = hashlib.sha256("\0".join(entries).encode()).hexdigest()
    return cache[sha]


def same_adapter(repo: git.Repo, a: str, b: str) -> bool:
    """Whether two commits hold the same adapter: the same files, CARD.md aside (so a card commit on top of a
    measured commit is that adapter)."""
    if a == b:
        return True
    if not (is_sha(a) and is_sha(b)):
        return False
    try:
        return _identity(repo, a) == _identity(repo, b)
    except git.GitCommandError:
        return False


def short_sha(sha: str | None) -> str:
    return str(sha)[:12] if sha else "nothing"


# ---------------------------------------------------------------------------------------------------- checks


def inspect_checkout(plan: PublishPlan, tree: AdapterTree) -> git.Repo | None:
    """The checkout's refusals and warnings; the open repo when there is a usable one."""
    checkout = plan.checkout
    if not checkout.is_dir():
        plan.refusals.append(
            f"no checkout: {checkout} does not exist (the run's branch is checked out there by hermit train)"
        )
        return None
    try:
        repo = open_repo(checkout)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        plan.refusals.append(f"no checkout: {checkout} is not a git worktree")
        return None
    if Path(repo.common_dir).resolve() != Path(tree.repo.common_dir).resolve():
        plan.refusals.append(f"the checkout {checkout} is not a worktree of the adapter tree {tree.path}")
        return repo
    if checkout_branch(repo) != plan.branch:
        plan.refusals.append(f"the checkout {checkout} is not on branch '{plan.run}'")
    plan.head = repo.git.rev_parse("--verify", "HEAD")
    tracked = [
        line[3:]
        for line in repo.git.status("--porcelain", "--untracked-files=no", "--ignore-submodules=dirty").splitlines()
    ]
    if tracked:
        shown = ", ".join(tracked[:3]) + (", …" if len(tracked) > 3 else "")
        plan.refusals.append(
            f"uncommitted changes in the checkout ({len(tracked)}: {shown}): commit or discard "
            "them first, the card commit must hold exactly the measured adapter"
        )
    untracked = [
        line[3:]
        for line in repo.git.status("--porcelain", "--ignore-submodules=dirty").splitlines()
        if line.startswith("??")
    ]
    if untracked:
        plan.warnings.append(
            f"untracked files in the checkout ({', '.join(untracked[:3])}"
            f"{', …' if len(untracked) > 3 else ''}): they are not part of the adapter or the card "
            "commit"
        )
    return repo


def final_evaluation(
    plan: PublishPlan, found: list[StoredEvaluation], repo: git.Repo, run_dir: Path
) -> StoredEvaluation | None:
    """final's current evaluation when it can be published; the refusal otherwise."""
    current = next((e for e in found if not e.archived), None)
    if current is None:
        plan.refusals.append(
            f"no completed final evaluation: none under {eval_root(run_dir) / 'final'} "
            "(hermit-tui eval --adapter final)"
        )
        return None
    s = current.summary
    if s is None:
        plan.refusals.append(f"no completed final evaluation: {current.problem}")
        return None
    if not s.is_complete or s.cancelled or s.in_progress is not None:
        plan.refusals.append(
            "no completed final evaluation: it is "
            + incomplete_caveat(s.attempts, s.expected_attempts, cancelled=bool(s.cancelled))
        )
        return None
    if s.is_smoke:
        plan.refusals.append(f"no completed final evaluation: it is a {smoke_caveat(s.smoke_limit)}")
        return None
    if not is_sha(s.commit):
        plan.refusals.append(f"final's summary records no adapter commit ({s.commit!r})")
        return None
    plan.measured_commit = s.commit
    plan.final_summary = current.folder / "summary.json"
    if plan.tag_target is not None and not same_adapter(repo, s.commit, plan.tag_target):
        plan.refusals.append(
            f"the final evaluation measured another adapter than the tag's: {s.commit[:12]} was "
            f"measured, {plan.tag} now points at {plan.tag_target[:12]}; evaluate final again"
        )
    return current


def collect_warnings(
    plan: PublishPlan,
    config: Config,
    tree: AdapterTree,
    rows: list[EvalRow],
    found: list[StoredEvaluation],
    final: StoredEvaluation | None,
    final_fp: Fingerprint | None,
) -> None:
    """Every warning a reader must see before confirming, most serious first."""
    w = plan.warnings
    for row in rows:
        if row.label != "final":
            stale = _stale(config, tree, row, plan.run)
            if stale:
                w.append(f"stale measurement: {row.label} {stale}")
    final_row = next((r for r in rows if r.label == "final"), None)
    if final_row is not None and final_fp is None:
        w.append(
            "final was measured by hermit eval (no protocol fingerprint): whether the rows share one protocol "
            "cannot be checked"
        )
    for row in rows:
        if row.protocol == [NO_FINGERPRINT] and final_fp is not None:
            w.append(
                f"protocol unchecked: {row.label} was measured by hermit eval (no protocol fingerprint); it "
                "may not share final's protocol"
            )
        elif row.protocol and final_fp is not None:
            w.append(f"protocol mismatch: {row.label} differs from final in {', '.join(row.protocol)}")
        elif (
            final_row is not None
            and row is not final_row
            and (row.tasks, row.repeats) != (final_row.tasks, final_row.repeats)
        ):
            w.append(
                f"protocol mismatch: {row.label} has {row.tasks} tasks x {row.repeats}, final "
                f"{final_row.tasks} x {final_row.repeats}"
            )
    reuse = _test_reuse(tree, plan, found, final, final_fp)
    if reuse:
        w.append(reuse)
    try:
        overlaps = [o for o in load_tasks(config).overlaps() if o.startswith("test ")]
    except InputError as exc:
        overlaps = [f"the task splits cannot be read ({exc})"]
    w += [f"test overlap: {o}" for o in overlaps]
    for r in rows:
        w += [
            f"{r.label}: {caveat}"
            for caveat in caveats(
                smoke_limit=r.smoke_limit,
                done=r.attempts,
                expected=r.tasks * r.repeats,
                complete=r.complete,
                cancelled=r.cancelled,
                retries=r.retries,
            )
        ]
    failing = [r for r in rows if r.errors]
    if failing:
        w.append(
            "errors: "
            + ", ".join(f"{r.label} {r.errors}/{r.attempts}" for r in failing)
            + " attempts ended in an error (pipeline or judge) and count as 0: inspect them before trusting the means"
        )
    unknown = [r for r in rows if r.cost_usd is None]
    if unknown:
        w.append(
            "unknown cost: "
            + ", ".join(f"{r.label} {r.unknown_cost_attempts}" for r in unknown)
            + " attempts report no cost (the card says so)"
        )
    if not config.shuffle:
        w.append(
            "ordered stream (data.shuffle is false): preserve stream order and the benchmark's own protocol; "
            "one aggregate evaluation may not be its protocol"
        )


def _stale(config: Config, tree: AdapterTree, row: EvalRow, run: str) -> str | None:
    """Why a row's measurement no longer describes what its selector names now, or None."""
    text = row.selector
    if text == "none":
        return None
    if row.commit is None:  # an adapter directory: compare its content with what was measured
        try:
            folder = config.resolve_path(text)
        except (OSError, ValueError):
            return None
        if row.content_hash and folder is not None and (folder / MANIFEST).is_file():
            if directory_hash(folder) != row.content_hash:
                return f"(directory {text}) has changed since it was measured"
        return None
    if re.fullmatch(r"[0-9a-fA-F]{4,40}", text) and row.commit.startswith(text.lower()):
        return None  # a commit never moves
    ref = ROOT_TAG if text == "root" else f"{run}/final" if text == "final" else text
    try:
        now = tree.lookup(ref)[0]
    except InputError:
        return f"was measured at {row.commit[:7]}, but '{ref}' no longer exists"
    if not same_adapter(tree.repo, row.commit, now):
        return f"was measured at {row.commit[:7]}, but '{ref}' now points at {now[:7]}, another adapter"
    return None


def _test_reuse(
    tree: AdapterTree,
    plan: PublishPlan,
    found: list[StoredEvaluation],
    final: StoredEvaluation | None,
    final_fp: Fingerprint | None,
) -> str | None:
    """Several adapters of this run measured on this test split: final may have been chosen on test."""
    if final is None or final.summary is None or plan.tag_target is None:
        return None
    repo = tree.repo
    tip = plan.head if plan.head and _is_ancestor(repo, plan.tag_target, plan.head) else plan.tag_target
    cache: dict[str, str] = {}
    root = tree.tag_target(ROOT_TAG)
    root_id = _identity(repo, root, cache) if root else None
    adapters: dict[str, set[str]] = {}
    for stored in found:
        s = stored.summary
        if s is None or not is_sha(s.commit):
            continue
        if final_fp is not None and s.fingerprint is not None:
            if s.fingerprint.test_ids_sha256 != final_fp.test_ids_sha256:
                continue
        elif s.tasks != final.summary.tasks or s.is_smoke:
            continue
        try:
            if not _is_ancestor(repo, s.commit, tip):
                continue
            ident = _identity(repo, s.commit, cache)
        except git.GitCommandError:
            continue
        if ident != root_id:
            adapters.setdefault(ident, set()).add(stored.label)
    if len(adapters) < 2:
        return None
    names = sorted({label for labels in adapters.values() for label in labels})
    return (
        f"test reuse: {len(adapters)} different adapters of run {plan.run} were evaluated on this test split "
        f"({', '.join(names)}); if final was chosen by these scores, the test is no longer an untouched "
        "evaluation: say so, or measure on a fresh test split"
    )


__all__ = ["collect_warnings", "final_evaluation", "inspect_checkout", "is_sha", "same_adapter", "short_sha"]
