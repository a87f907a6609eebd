"""Why it changed, as plain text lines: the adapter's diff with the flips beside it and the pair's summary
(``hermit-tui diff``, the report's Markdown section), and an alignment of trajectories (``hermit-tui show
--align``). Markdown-compatible: headings with ``#``, diffs in fenced blocks."""

from __future__ import annotations

import re
from collections import Counter

from pydantic import BaseModel

from hermit_tui.core.present import plural
from hermit_tui.core.why.adapter_diff import AdapterDiff
from hermit_tui.core.why.align import Alignment, row_status
from hermit_tui.core.why.pair import PairWhy
from hermit_tui.core.why.versions import CheckpointCurve, CurvePoint, TaskVersions

_TICKS = re.compile(r"`+")  # a fence longer than any run of backticks in a file's diff keeps the diff inside it
FOLD = 200  # a step's text is folded past this many characters (``full`` shows it whole)
MARK = {"same": " ", "changed": "~", "inserted": "+", "removed": "-", "absent": " "}
DIVERGENCE_NOTE = (
    "Steps are aligned on the agent's messages, tool calls and tool results; the system prompt and the user's "
    "messages are its inputs and are not counted (the system prompt holds ADAPTER.md)."
)


def divergence_cell(steps: list[int | None]) -> str:
    """A task's first divergence over its paired repeats, for a table cell: how many repeats parted at each step,
    earliest first, then those where the agents did the same: ``step 3 ×2``, ``never``, ``step 1 ×2, never``;
    ``-`` without a paired repeat."""
    if not steps:
        return "-"
    counts = Counter(steps)
    order: list[int | None] = [*sorted(s for s in counts if s is not None), *([None] if None in counts else [])]
    return ", ".join(
        ("never" if s is None else f"step {s}") + (f" ×{counts[s]}" if counts[s] > 1 else "") for s in order
    )


def _names(diff: AdapterDiff) -> list[str]:
    out = []
    for change in ("added", "removed", "changed"):
        items = [f"{e.kind} {e.name}" for e in diff.exports if e.change == change]
        if items:
            out.append(f"- {change}: {', '.join(items)}")
    return out


def diff_lines(diff: AdapterDiff, heading: str = "##") -> list[str]:
    """The adapter's diff: the two versions, exports added, removed and changed, then each file."""
    a, b = diff.a, diff.b
    lines = [f"{heading} Adapter: {a.label} -> {b.label}", ""]
    lines += [f"- {v.label}: {v.source}" + (f" (adapter.yaml: {v.problem})" if v.problem else "") for v in (a, b)]
    lines += [f"- note: {n}" for n in diff.notes]
    if diff.same:
        lines += ["", f"The two versions have the same files ({plural(diff.unchanged_files, 'file')})."]
        return lines
    lines += ["", f"{heading}# Exports"]
    names = _names(diff)
    lines += names or ["- no tool, skill or subagent added, removed or changed"]
    lines += ["", f"{heading}# Files ({len(diff.files)} changed, {diff.unchanged_files} the same)"]
    for f in diff.files:
        counts = f"+{f.added_lines} -{f.removed_lines}" if f.kind == "text" else f.kind
        size = f"{f.size_a if f.size_a is not None else '-'} -> {f.size_b if f.size_b is not None else '-'} bytes"
        lines.append(f"- {f.path}: {f.change} ({counts}; {size})" + (f": {f.note}" if f.note else ""))
    for f in diff.files:
        if f.diff:
            fence = "`" * max(3, 1 + max((len(run) for line in f.diff for run in _TICKS.findall(line)), default=0))
            lines += ["", f"`{f.path}`", f"{fence}diff", *f.diff, fence]
    return lines


def pair_lines(pair: PairWhy, heading: str = "##") -> list[str]:
    """A compared pair: the adapter's diff, the tasks it fixed, broke or made flaky, the first divergence, tool use
    and usage."""
    lines = [f"{heading} Why it changed: {pair.a} -> {pair.b}", ""]
    lines += [f"- {n}" for n in pair.notes] + ([""] if pair.notes else [])
    lines.append(f"{heading}# Tasks")
    for kind in ("fixed", "broken", "flaky"):
        tasks = pair.flips.get(kind, [])
        lines.append(f"- {kind} ({len(tasks)}): {', '.join(tasks) if tasks else '-'}")
    if pair.diff is not None:
        lines += [""] + diff_lines(pair.diff, heading + "#")
    if pair.paired_attempts:
        lines += ["", f"{heading}# First divergence ({plural(pair.paired_attempts, 'paired attempt')})", ""]
        lines.append(DIVERGENCE_NOTE)
        lines.append("")
        for step, n in pair.divergence.items():
            what = "never (the agents did the same)" if step == "never" else f"step {step}"
            lines.append(f"- {what}: {n}")
        lines.append("- behaviour changed, score did not: " + (", ".join(pair.behaviour_changed_score_not) or "-"))
        lines.append("- score changed, behaviour did not: " + (", ".join(pair.score_changed_behaviour_not) or "-"))
    if pair.use:
        lines += ["", f"{heading}# Tool use"]
        for use in pair.use:
            head = f"- {use.label}: {plural(use.with_transcript, 'attempt')} with a trajectory of {use.attempts}"
            lines.append(head + ("" if use.tools else "; no tool calls"))
            for t in use.tools:
                lines.append(
                    f"  - {t.tool}: {t.calls_per_attempt:g} calls per attempt, in {t.share_of_attempts:.0%} of "
                    f"attempts, {plural(t.errors, 'error')}"
                )
        lines += ["", f"{heading}# Was the adapter used?"]
        for use in pair.use:
            if not use.has_adapter:
                lines.append(f"- {use.label}: exports no tool, skill or subagent (its context alone): not counted")
                continue
            known = use.used + use.not_used
            rate = f"{use.used / known:.0%}" if known else "-"
            by = ", ".join(f"{k} {v}" for k, v in sorted(use.usage_by_export.items())) or "nothing exported used"
            lines.append(
                f"- {use.label}: used in {use.used} of {known} attempts ({rate}); unknown {use.unknown}; {by}; "
                f"read ADAPTER.md in {use.context_read}"
            )
        split = pair.usage_split
        if split is not None:
            lines.append(f"- {split.label} against {pair.a}, by usage ({split.note}):")
            for g in split.groups:
                diff = "-" if g.mean_diff is None else f"{g.mean_diff:+.3f}"
                score = "-" if g.mean_score is None else f"{g.mean_score:.3f}"
                lines.append(
                    f"  - {g.group}: {plural(g.attempts, 'attempt')} over {plural(g.tasks, 'task')}, "
                    f"mean score {score}, mean difference {diff}"
                )
    return lines


def _fold(text: str, full: bool) -> str:
    flat = " ".join(text.split())
    return flat if full or len(flat) <= FOLD else flat[:FOLD] + f"… (+{len(flat) - FOLD} chars)"


def alignment_lines(al: Alignment, full: bool = False) -> list[str]:
    """An alignment, one block per row: the mark (``~`` changed, ``+`` inserted, ``-`` removed), then each
    trajectory's step; the first divergence is marked ``>>``."""
    labels = ", ".join(f"[{i + 1}] {label}" for i, label in enumerate(al.labels))
    lines = [f"Aligned: {labels}"]
    if al.first_divergence is None:
        lines.append("The agents' steps are the same" + (" (their inputs differ)" if al.inputs_differ else "") + ".")
    else:
        lines.append(
            f"First divergence: agent step {al.divergence_step} (row {al.first_divergence + 1})"
            + ("; their inputs differ too" if al.inputs_differ else "")
        )
    counts = ", ".join(f"{k} {v}" for k, v in al.counts.items())
    lines.append(f"Rows: {len(al.rows)} ({counts or 'none'})")
    for r, row in enumerate(al.rows):
        status = row_status(row)
        lead = ">>" if r == al.first_divergence else "  "
        lines.append(f"{lead}{MARK.get(status, ' ')} row {r + 1} {status}" + ("" if row.agent else " (input)"))
        if row.same and row.cells[0].step is not None:
            step = al.steps[0][row.cells[0].step]
            text = _fold(step.text, full)
            lines.append(f"      [all] {step.title}: {text}" if text else f"      [all] {step.title}")
            continue
        for i, cell in enumerate(row.cells):
            if cell.step is None:
                if cell.status == "removed":
                    lines.append(f"      [{i + 1}] (no step)")
                continue
            step = al.steps[i][cell.step]
            sim = f" · similarity {cell.similarity:.2f}" if cell.similarity is not None else ""
            text = _fold(step.text, full)
            lines.append(f"      [{i + 1}] {step.title}{sim}: {text}" if text else f"      [{i + 1}] {step.title}")
    return lines


BAR = 20  # characters of a curve point's bar (the score range 0-1)


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def point_name(p: CurvePoint) -> str:
    """A curve point's place in training: root, step N, final."""
    return {"root": "root", "final": "final"}.get(p.kind, f"step {p.step}")


def bar(value: float | None, width: int = BAR) -> str:
    if value is None:
        return " " * width
    filled = round(max(0.0, min(1.0, value)) * width)
    return "#" * filled + "." * (width - filled)


def curve_lines(curve: CheckpointCurve, task: str = "", bars: bool = True) -> list[str]:
    """The checkpoint curve: one line per version of the run in training order, its test mean (as a bar too, with
    ``bars``), marked as description only."""
    lines = [f"Checkpoints on test ({curve.note})"]
    if not curve.points:
        return lines + ["  no version of the run (root, a checkpoint, final) is evaluated on this test split"]
    for p in curve.points:
        ci = f"[{_num(p.ci_low)}, {_num(p.ci_high)}]" if p.ci_low is not None else ""
        here = f"  {task} {_num(p.task_mean)}" if task else ""
        same = f"  (the commit of {curve.same_as[p.label]})" if p.label in curve.same_as else ""
        shown = f" |{bar(p.mean)}|" if bars else ""
        lines.append(f"  {point_name(p):<8} {p.selector[:28]:<28} {_num(p.mean)} {ci:<16}{shown}{here}{same}")
    return lines


def versions_lines(tv: TaskVersions) -> list[str]:
    """A task through every evaluation of the run: its marks and mean in each, as one row, then one line per
    evaluation, then the checkpoint curve."""
    row = " · ".join(
        f"{r.name} {r.glyphs or '-'} {_num(r.task_mean)}" for r in tv.rows if r.problem is None and r.on_test
    )
    lines = [f"Task {tv.task} through every evaluation of the run ({len(tv.rows)})", f"Marks: {tv.legend}", ""]
    lines += [f"Row: {row or '-'}", ""]
    width = max((len(r.name) for r in tv.rows), default=4)
    lines.append(f"  {'evaluation':<{width}}  {'marks':<8} {'task':>5}  {'eval':>5}  by          commit")
    for r in tv.rows:
        if r.problem is not None:
            lines.append(f"  {r.name:<{width}}  unreadable: {r.problem}")
            continue
        by = r.written_by or "-"
        commit = r.commit[:7] if r.commit else "-"
        split = "" if r.on_test else "  (another split)"
        lines.append(
            f"  {r.name:<{width}}  {r.glyphs or '-':<8} {_num(r.task_mean):>5}  {_num(r.eval_mean):>5}  {by:<11} "
            f"{commit}{split}"
        )
    lines += ["", *curve_lines(tv.curve, tv.task)]
    lines += [f"- {n}" for n in tv.notes]
    return lines


def as_json(model: BaseModel) -> str:
    return model.model_dump_json(indent=1) + "\n"


__all__ = [
    "DIVERGENCE_NOTE",
    "alignment_lines",
    "as_json",
    "bar",
    "curve_lines",
    "diff_lines",
    "pair_lines",
    "point_name",
    "versions_lines",
]
