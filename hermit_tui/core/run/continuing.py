"""What a launch continues from: a retry (re-run chosen attempts of finished evaluations) or a resume (run only the
missing attempts of interrupted ones). Both run under the protocol the earlier attempts were measured with, and
refuse, before anything is written, when it changed.

``ContinuePlan`` reads the earlier summaries and results, checks them against the launch, and opens each selector's
journal from the records kept. A fresh launch has an empty plan: every journal starts empty.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from hermit_tui.core.errors import InputError
from hermit_tui.core.records.folders import RESULTS, SMOKE, SUMMARY, archive_existing, eval_root
from hermit_tui.core.records.journal import SelectorJournal
from hermit_tui.core.records.results import AttemptRecord, ResultsFile, Summary, read_results, read_summary
from hermit_tui.core.run.events import Level
from hermit_tui.core.run.launch import RetryKeys
from hermit_tui.core.workspace.config import Config
from hermit_tui.core.workspace.fingerprint import Fingerprint, differences
from hermit_tui.core.workspace.selectors import Selector

if TYPE_CHECKING:
    from hermit_tui.core.stats.sequential.tracker import SequentialPlan

#: label -> the folder of its evaluation (eval/<label>/, or its smoke/ folder)
FolderOf = Callable[[str], Path]


class ContinuePlan:
    """The earlier evaluations a launch continues, by label: their summaries and what their results.jsonl held."""

    def __init__(self, retry: RetryKeys | None = None, resume: bool = False):
        self.retry: RetryKeys = dict(retry or {})
        self.resume = resume
        self.earlier: dict[str, Summary] = {}
        self.recorded: dict[str, ResultsFile] = {}  # read before any write
        self.archived: dict[str, Path] = {}  # label -> where open_journal archived its earlier evaluation

    # -- building it -----------------------------------------------------------------------------------------
    @classmethod
    def for_retry(cls, retry: RetryKeys, folder_of: FolderOf) -> tuple[ContinuePlan, list[str], int, int | None]:
        """The plan of a retry, and the selectors, repeats and limit of the evaluations it re-runs, read from their
        summaries: a retry runs under the protocol they were measured with."""
        plan = cls(retry=retry)
        texts, repeats, limits = [], set(), set()
        for label in retry:
            path = folder_of(label) / SUMMARY
            if not path.is_file():
                raise InputError(f"{path}: no summary to continue from (run the whole evaluation)")
            summary = read_summary(path)
            plan.earlier[label] = summary
            plan.recorded[label] = read_results(path.parent / RESULTS)
            texts.append(summary.adapter)
            repeats.add(summary.repeats)
            limits.add(summary.smoke_limit)
        if len(repeats) > 1 or len(limits) > 1:
            raise InputError(
                "the evaluations were measured with different repeats or limits; continue them one at a time"
            )
        return plan, texts, repeats.pop(), limits.pop()

    @classmethod
    def for_resume(
        cls,
        selectors: Sequence[Selector],
        folder_of: FolderOf,
        *,
        repeats: int,
        limit: int | None,
        fingerprint: Fingerprint,
        sequential: SequentialPlan | None,
        task_ids: Sequence[str] = (),
    ) -> ContinuePlan:
        """The plan of a resume: refused, saying what changed, when the protocol differs from the one recorded. An
        anytime-valid launch (``core.stats.sequential.anytime_plan``) continues its recorded stream of tasks, also when
        tasks were added to the test split (``task_ids``); ``sequential`` learns that stream."""
        plan = cls(resume=True)
        grown = _anytime_stream(selectors, folder_of, sequential, task_ids)
        for sel in selectors:
            path = folder_of(sel.label) / SUMMARY
            if not (path.parent / RESULTS).is_file():
                continue  # nothing recorded yet: it simply starts
            if not path.is_file():
                raise InputError(
                    f"{path.parent}: results without a summary (written by another tool?): "
                    "cannot check the protocol, re-run instead"
                )
            old = read_summary(path)
            changed = _sequential_changes(old, sequential)
            if old.adapter != sel.text:
                changed.append(f"selector {old.adapter!r} -> {sel.text!r}")
            if old.commit != sel.commit:
                changed.append(f"commit {str(old.commit)[:12]} -> {str(sel.commit)[:12]}")
            if old.content_hash != sel.content_hash:
                changed.append("adapter directory content")
            stopped = sequential and old.sequential and old.repeats == old.sequential.rounds
            if old.repeats != repeats and not stopped:  # a launch that stopped when decided ran fewer rounds
                changed.append(f"repeats {old.repeats} -> {repeats}")
            if old.smoke_limit != limit:
                changed.append(f"limit {old.smoke_limit} -> {limit}")
            split = ("the test task ids", "the test task rows")
            if grown and old.complete is not True and set(split) & set(differences(old.fingerprint, fingerprint)):
                raise InputError(
                    f"{sel.label}: cannot resume the anytime-valid comparison on a changed test split: it was "
                    "interrupted within a look (its attempts of the tasks not yet looked at were run on the old "
                    "rows); resume it on the test split it had first, then add the tasks"
                )
            if old.fingerprint is not None:
                changed += [
                    name
                    for name in differences(old.fingerprint, fingerprint)
                    if name not in ("repeats", "the smoke limit")
                    and not (grown and name in ("the test task ids", "the test task rows"))
                ]
            if changed:
                raise InputError(
                    f"{sel.label}: cannot resume, the protocol changed since it was recorded: " + "; ".join(changed)
                )
            plan.earlier[sel.label] = old
            plan.recorded[sel.label] = read_results(path.parent / RESULTS)  # every selector's, before any write
        return plan

    # -- checks --------------------------------------------------------------------------------------------------
    def check_commits(self, selectors: Sequence[Selector]) -> None:
        """A selector that now names another commit than the one measured is refused."""
        for sel in selectors:
            old = self.earlier.get(sel.label)
            if old is not None and old.commit != sel.commit:
                raise InputError(
                    f"{sel.label}: '{sel.text}' now resolves to {str(sel.commit)[:12]}, not the "
                    f"{str(old.commit)[:12]} that was measured: re-run the whole evaluation instead"
                )

    def reread(self, folder_of: FolderOf) -> None:
        """Under the locks and before anything is written: read again what the launch starts from (it may have
        changed since the launch was built); a file that cannot be read refuses the whole launch."""
        for label in list(self.recorded):
            self.recorded[label] = read_results(folder_of(label) / RESULTS)

    # -- the journals ----------------------------------------------------------------------------------------------
    def continues(self, label: str) -> bool:
        return label in self.retry or (self.resume and label in self.earlier)

    def open_journal(
        self, sel: Selector, folder: Path, task_ids: Sequence[str], repeats: int, log: Callable[[Level, str], None]
    ) -> SelectorJournal:
        """Selector ``sel``'s journal, opened for appending: a retry's earlier pair is archived (copied) first, a
        fresh launch archives (moves) an earlier evaluation; ``log(level, message)`` says what happened."""
        total = len(task_ids) * repeats
        if not self.continues(sel.label):
            kept = archive_existing(folder)
            journal = SelectorJournal(sel, folder, total)
        else:
            kept = archive_existing(folder, copy=True) if sel.label in self.retry else None
            read = self.recorded[sel.label]
            for warning in read.skipped:
                log("warning", warning)
            wanted = set(task_ids)
            earlier: dict[tuple[str, int], AttemptRecord] = {}
            foreign: list[AttemptRecord] = []
            for r in read.records:
                if r.id in wanted and 1 <= r.repeat <= repeats:
                    earlier[r.key] = r
                else:
                    foreign.append(r)
            if foreign:
                log(
                    "warning",
                    f"{sel.label}: {len(foreign)} recorded attempts are outside this evaluation (task ids "
                    f"not in the test split, or repeats beyond {repeats}): ignored, and kept in {RESULTS}",
                )
            old = self.earlier[sel.label]
            retries = (old.retries or 0) + len(self.retry.get(sel.label, ()))
            journal = SelectorJournal(sel, folder, total, earlier, retries)
            journal.foreign = foreign
            journal.started_at = old.started_at or journal.started_at
        if kept is not None:
            self.archived[sel.label] = kept
            log("info", f"{sel.label}: the earlier evaluation was archived in {kept}")
        journal.open()
        return journal


def _anytime_stream(
    selectors: Sequence[Selector], folder_of: FolderOf, sequential: SequentialPlan | None, task_ids: Sequence[str]
) -> bool:
    """An anytime-valid resume: give ``sequential`` the stream its evaluations recorded (InputError when they
    disagree, or when a task looked at left the test split); True when the test split grew since (the recorded
    fingerprint's task ids and rows then differ; the tasks looked at are still there)."""
    from hermit_tui.core.stats.sequential.anytime_looks import is_anytime, recorded_order
    from hermit_tui.core.stats.sequential.anytime_plan import AnytimePlan

    if not isinstance(sequential, AnytimePlan):
        return False
    orders, digests, entries = {}, {}, {}
    for sel in selectors:
        path = folder_of(sel.label) / SUMMARY
        if (path.parent / RESULTS).is_file() and path.is_file():
            entry = read_summary(path).sequential
            if is_anytime(entry):
                orders[sel.label] = recorded_order(entry)
                entries[sel.label] = entry
                digests[sel.label] = getattr(entry, "order_rows_sha256", None)
    if not orders:
        return False
    label = max(orders, key=lambda k: len(orders[k]))
    longest = orders[label]
    for other, order in orders.items():
        if order != longest[: len(order)]:
            raise InputError(
                f"{other}: cannot resume, its recorded stream of tasks is not the other selectors' (summary.json "
                "sequential.order): re-run the whole evaluation instead"
            )
    try:
        sequential.take_recorded(longest, entries[label])  # (and, clustered, the recorded K and clusters)
        sequential.stream(task_ids)
    except ValueError as exc:
        raise InputError(f"cannot resume the anytime-valid comparison: {exc}") from None
    if digests[label] is None or sequential.order_digest(longest) != digests[label]:
        raise InputError(
            f"{label}: cannot resume the anytime-valid comparison: the rows of the {len(longest)} tasks already "
            "looked at changed since (or were not recorded): re-run the whole evaluation instead"
        )
    return True


def _sequential_changes(old: Summary, sequential: SequentialPlan | None) -> list[str]:
    """A stop-when-decided launch resumes only as one, with the same design."""
    if old.sequential is None:
        return ["it was not launched with --stop-when-decided"] if sequential else []
    from hermit_tui.core.stats.sequential.anytime_looks import is_anytime
    from hermit_tui.core.stats.sequential.anytime_plan import AnytimePlan

    if not sequential and is_anytime(old.sequential):
        return [
            "it was launched with --stop-when-decided --anytime: resume it with both (the dashboard's stop early: "
            "anytime-valid) and the same baseline and margin"
        ]
    if not sequential:
        return [
            "it was launched with --stop-when-decided: resume it with --stop-when-decided (the dashboard's "
            "stop early: when decided) and the same baseline and margin"
        ]

    if is_anytime(old.sequential) and not isinstance(sequential, AnytimePlan):
        return ["it was launched with the anytime-valid design: resume it with --stop-when-decided --anytime"]
    return sequential.same_design(old.sequential)


__all__ = ["ContinuePlan", "RetryCandidate", "retry_targets"]


# ---------------------------------------------------------------------------------------------------- retry targets


@dataclass(frozen=True)
class RetryCandidate:
    """An evaluation the dashboard shows with failed attempts: could re-running them write to where it lives?"""

    key: str  # its name in the views
    label: str  # the eval folder it belongs to (eval/<label>/)
    failed: Sequence[tuple[str, int]]  # (task id, repeat) of the attempts that did not finish ok
    folder: Path | None = None  # where it was read from (a live one: where it is written), None when not known
    live: bool = False  # launched in this session
    archived: bool = False  # an earlier evaluation moved aside: history, never re-run


def retry_targets(candidates: Iterable[RetryCandidate], config: Config | None) -> tuple[RetryKeys, list[str]]:
    """The failed attempts to re-run per eval folder label, and the keys of the candidates left out: a smoke check
    (eval/<label>/smoke/: launched again, never retried), an archived evaluation, or one stored anywhere but the
    config's eval folder (no config, or one naming no run folder: only live evaluations can be retried)."""
    root: Path | None = None
    if config is not None:
        try:
            root = eval_root(config.run_dir)
        except InputError:  # a config that names no run folder (trainer.output_dir unset)
            root = None
    plan: dict[str, set[tuple[str, int]]] = {}
    skipped: list[str] = []
    for c in candidates:
        if not c.failed:
            continue
        folder = c.folder
        current = root is not None and folder is not None and folder == root / c.label
        unplaced_here = root is not None and folder is None and (root / c.label).is_dir()
        if folder is not None and folder.name == SMOKE and folder.parent.name == c.label:
            skipped.append(c.key)
        elif c.live or (not c.archived and (current or unplaced_here)):
            plan.setdefault(c.label, set()).update(c.failed)
        else:
            skipped.append(c.key)
    return {label: sorted(keys) for label, keys in plan.items()}, skipped
