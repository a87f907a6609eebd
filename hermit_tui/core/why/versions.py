"""One task through every version: its outcomes in every evaluation of the run, and the run's checkpoints on test.

Every evaluation under ``<run dir>/eval`` counts (``core.records.folders.list_evaluations``): the current one of each
label and its archived ones, written by hermit-tui or by ``hermit eval``; smoke subsets are left out. They are
ordered as a launch orders its columns: none, root, the checkpoints by step, other versions, final; each label's
archived evaluations after its current one, newest first. For one task, each evaluation gives a row of marks (one
per repeat: solved, not solved, pipeline error, judge error) with the task's mean there and the evaluation's own
mean on the test split.

The checkpoint curve is the current evaluations of root, each ``<run>/ckpt-step-N`` and final on this test split,
in training order, each with its task mean and 95% interval (``core.stats.selector.selector_stats``). It describes:
choosing a checkpoint by its test score is what the protocol forbids (checkpoints are chosen on validation), and an
evaluation of a checkpoint on test counts in the test-reuse accounting (``core.report.protocol.test_reuse``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from hermit_tui.core.errors import InputError
from hermit_tui.core.records.folders import StoredEvaluation, eval_root, list_evaluations
from hermit_tui.core.records.results import SOLVED_THRESHOLD
from hermit_tui.core.records.table import ERROR, JUDGE_ERROR
from hermit_tui.core.stats.selector import SelectorStats, selector_stats
from hermit_tui.core.workspace.config import Config
from hermit_tui.core.workspace.fingerprint import _digest
from hermit_tui.core.workspace.tree import AdapterTree

Kind = Literal["none", "root", "checkpoint", "other", "final"]
MarkKind = Literal["solved", "unsolved", "error", "judge_error"]
#: One glyph per attempt (the grid's ✗ and J for the failures).
GLYPH: dict[str, str] = {"solved": "✓", "unsolved": "○", "error": "✗", "judge_error": "J"}
MARKS_LEGEND = "✓ solved · ○ not solved · ✗ pipeline error · J judge error"
MARKS_SHORT = "✓ solved ○ not ✗ J errors"
CURVE_NOTE = (
    "description only: choosing a checkpoint by its test score is what the protocol forbids (choose on "
    "validation); evaluating or publishing a checkpoint picked here counts as test reuse"
)
_STEP = re.compile(r"ckpt-step-(\d+)$")


class Mark(BaseModel):
    repeat: int
    score: float
    status: str  # ok, error or judge_error
    mark: MarkKind


class VersionRow(BaseModel):
    """One evaluation's view of the task."""

    label: str  # the evaluation's folder under eval/
    name: str  # the label, with " @ <archive time>" for an archived one
    folder: str = ""  # where it is on disk
    selector: str  # what was evaluated (summary.json's adapter), else the label
    kind: Kind
    step: int | None = None  # a checkpoint's step
    archived_at: str | None = None
    written_by: Literal["hermit", "hermit-tui"] | None = None
    commit: str | None = None
    marks: list[Mark] = Field(default_factory=list)
    task_mean: float | None = None  # the task's mean over its repeats here (None: not attempted here)
    eval_mean: float | None = None  # the evaluation's task mean over the test split
    on_test: bool = True  # evaluated on this test split (its fingerprint's test ids, else its task count)
    problem: str | None = None  # why the evaluation could not be read

    @property
    def glyphs(self) -> str:
        return "".join(GLYPH[m.mark] for m in self.marks)


class CurvePoint(BaseModel):
    """A version of the run on the checkpoint curve: root (step 0), a checkpoint (its step), final (last)."""

    label: str
    selector: str
    kind: Kind
    step: int | None
    commit: str | None = None
    mean: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    n_tasks: int = 0
    task_mean: float | None = None  # the chosen task's mean at this version, when a task is given


class CheckpointCurve(BaseModel):
    points: list[CurvePoint]
    note: str = CURVE_NOTE
    same_as: dict[str, str] = Field(default_factory=dict)  # final's label -> the checkpoint it is the same commit as


class TaskVersions(BaseModel):
    task: str
    threshold: float
    rows: list[VersionRow]
    curve: CheckpointCurve
    legend: str = MARKS_LEGEND
    notes: list[str] = Field(default_factory=list)


def kind_of(selector: str) -> tuple[Kind, int | None]:
    """Where a selector sits among a run's versions: none, root, a checkpoint (with its step), final, other."""
    step = _STEP.search(selector)
    if selector == "none":
        return "none", None
    if selector == "root":
        return "root", None
    if step:
        return "checkpoint", int(step.group(1))
    if selector == "final" or selector.endswith("/final"):
        return "final", None
    return "other", None


_RANK = {"none": 0, "root": 1, "checkpoint": 2, "other": 3, "final": 4}


def _placed(selector: str, commit: str | None, checkpoints: dict[str, int]) -> tuple[Kind, int | None]:
    """kind_of, with a commit selector that is a checkpoint's commit placed as that checkpoint."""
    kind, step = kind_of(selector)
    if kind == "other" and commit in checkpoints:
        return "checkpoint", checkpoints[commit or ""]
    return kind, step


def ordered(found: list[StoredEvaluation], checkpoints: dict[str, int] | None = None) -> list[StoredEvaluation]:
    """Evaluations as a launch orders its columns; within a label, list_evaluations' order (current, then archived
    newest first)."""
    rank = {id(e): i for i, e in enumerate(found)}

    def key(e: StoredEvaluation) -> tuple[int, int, int]:
        s = e.summary
        kind, step = _placed(s.adapter if s else e.label, s.commit if s else None, checkpoints or {})
        return (_RANK[kind], step or 0, rank[id(e)])

    return sorted(found, key=key)


def _mark(status: int, score: float, threshold: float) -> MarkKind:
    if status == ERROR:
        return "error"
    if status == JUDGE_ERROR:
        return "judge_error"
    return "solved" if score >= threshold else "unsolved"


def _on_test(stored: StoredEvaluation, wanted: str, n_test: int) -> bool:
    s = stored.summary
    if s is None:
        return False
    fp = s.fingerprint
    return fp.test_ids_sha256 == wanted if fp is not None else s.tasks == n_test


def _read(
    stored: StoredEvaluation, task: str | None, test_ids: list[str], threshold: float
) -> tuple[list[Mark], float | None, SelectorStats, bool]:
    """The task's marks and mean in one evaluation, and the evaluation's figures on test; the bool says whether the
    task was seen in it."""
    table = stored.load_table()
    try:
        marks: list[Mark] = []
        seen = task is not None and task in table.index
        if seen:
            rows = table.latest()
            local = table.index[task or ""]
            task_col, rep, score, status = table.columns("task", "repeat", "score", "status")
            mine = sorted((int(rep[r]), int(r)) for r in rows[task_col[rows] == local])
            for repeat, r in mine:
                value = float(score[r])  # as written (hermit scores a failed attempt 0), as the figures take it
                marks.append(
                    Mark(
                        repeat=repeat,
                        score=value,
                        status=("ok", "error", "judge_error")[int(status[r])],
                        mark=_mark(int(status[r]), value, threshold),
                    )
                )
        stats = selector_stats(stored.label, table.attempt_columns(test_ids), test_ids, threshold)
    finally:
        table.close()
    task_mean = sum(m.score for m in marks) / len(marks) if marks else None
    return marks, task_mean, stats, seen


def checkpoint_steps(config: Config) -> dict[str, int]:
    """The commit of each ``<run>/ckpt-step-N`` tag of the run's tree -> N (empty when the tree cannot be read), so
    that a checkpoint evaluated by its commit sits on the curve too."""
    try:
        versions = AdapterTree(config.tree_dir).versions(config.run_name)
    except Exception:  # no tree, or an unreadable one: checkpoints are then known by their tags' names only
        return {}
    out: dict[str, int] = {}
    for v in versions:
        kind, step = kind_of(v.name)
        if v.kind == "checkpoint" and kind == "checkpoint" and step is not None:
            out.setdefault(v.commit, step)
    return out


def task_versions(
    run_dir: Path,
    task: str | None,
    test_ids: list[str],
    threshold: float = SOLVED_THRESHOLD,
    checkpoints: dict[str, int] | None = None,
) -> TaskVersions:
    """``task`` (None: the curve alone) through every evaluation of the run, with the checkpoint curve;
    ``checkpoints`` (``checkpoint_steps``) places an evaluation of a checkpoint's commit as that checkpoint.
    InputError (one line) when the run has no evaluation, or the task is neither a test task nor in any
    evaluation."""
    steps_of_commit = checkpoints or {}
    found = ordered(list_evaluations(run_dir), steps_of_commit)
    if not found:
        raise InputError(f"{eval_root(run_dir)}: no evaluation of this run yet; evaluate some versions first")
    wanted, n_test = _digest([str(t) for t in test_ids]), len(test_ids)
    rows: list[VersionRow] = []
    points: list[CurvePoint] = []
    seen_anywhere = False
    for stored in found:
        s = stored.summary
        selector = s.adapter if s is not None else stored.label
        kind, step = _placed(selector, None if s is None else s.commit, steps_of_commit)
        row = VersionRow(
            label=stored.label,
            name=stored.name,
            folder=str(stored.folder),
            selector=selector,
            kind=kind,
            step=step,
            archived_at=stored.archived_at,
            written_by=None if s is None else ("hermit" if s.written_by_hermit else "hermit-tui"),
            commit=None if s is None else s.commit,
            on_test=_on_test(stored, wanted, n_test),
            problem=stored.problem if s is None else None,
        )
        try:
            marks, task_mean, stats, seen = _read(stored, task, test_ids, threshold)
        except InputError as exc:
            row.problem = str(exc)
            rows.append(row)
            continue
        seen_anywhere = seen_anywhere or seen
        row.marks, row.task_mean, row.eval_mean = marks, task_mean, stats.mean
        rows.append(row)
        if not stored.archived and row.on_test and kind in ("root", "checkpoint", "final"):
            points.append(
                CurvePoint(
                    label=stored.label,
                    selector=selector,
                    kind=kind,
                    step=0 if kind == "root" else step,
                    commit=row.commit,
                    mean=stats.mean,
                    ci_low=stats.ci_low,
                    ci_high=stats.ci_high,
                    n_tasks=stats.n_tasks,
                    task_mean=task_mean,
                )
            )
    if task is not None and not seen_anywhere and task not in set(test_ids):
        raise InputError(f"--task {task}: unknown task (not a test task, and in no evaluation of this run)")
    curve = CheckpointCurve(points=points)
    by_commit = {p.commit: p.selector for p in points if p.kind == "checkpoint" and p.commit}
    for p in points:
        if p.kind == "final" and p.commit in by_commit:
            curve.same_as[p.label] = by_commit[p.commit]
    notes = []
    if not any(p.kind == "checkpoint" for p in points):
        notes.append("no checkpoint of the run is evaluated on this test split: the curve has no checkpoint")
    off = [r.name for r in rows if not r.on_test and r.problem is None]
    if off:
        notes.append(f"evaluated on another split (or a subset), not on the curve: {', '.join(off)}")
    return TaskVersions(task=task or "", threshold=threshold, rows=rows, curve=curve, notes=notes)


def curve_of(points: list[CurvePoint]) -> CheckpointCurve | None:
    """The checkpoint curve from versions already measured (the report's selectors): root first, the checkpoints by
    step, final last; None without a checkpoint among them (no curve to draw)."""
    order = {"root": 0, "checkpoint": 1, "final": 2}
    kept = sorted((p for p in points if p.kind in order), key=lambda p: (order[p.kind], p.step or 0))
    if not any(p.kind == "checkpoint" for p in kept):
        return None
    curve = CheckpointCurve(points=kept)
    by_commit = {p.commit: p.selector for p in kept if p.kind == "checkpoint" and p.commit}
    for p in kept:
        if p.kind == "final" and p.commit in by_commit:
            curve.same_as[p.label] = by_commit[p.commit]
    return curve


__all__ = [
    "CURVE_NOTE",
    "curve_of",
    "GLYPH",
    "MARKS_LEGEND",
    "MARKS_SHORT",
    "CheckpointCurve",
    "CurvePoint",
    "Mark",
    "TaskVersions",
    "VersionRow",
    "checkpoint_steps",
    "kind_of",
    "ordered",
    "task_versions",
]
