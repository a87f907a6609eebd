"""The attempts section of the HTML report: every test attempt's output, judge feedback, error and transcript,
folded per task and per attempt, so that a drill-down can be shared as one file without ``serve``.

It is carried when the text it would add stays within a size the user sets (``report --details-max-mb``, default
:data:`DEFAULT_MAX_MB`); beyond that the section says how large it would be and how to ask for it. Every string
from the data is escaped; nothing is fetched. The figures (scores, statuses) are the records' own.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermit_tui.core.records.columns import OK, read_table
from hermit_tui.core.records.folders import RESULTS
from hermit_tui.core.records.results import AttemptRecord
from hermit_tui.core.records.transcripts import load_transcript, transcript_lines, turns_of
from hermit_tui.core.report.html import to_html
from hermit_tui.core.report.model import Report
from hermit_tui.core.report.svg import esc

DEFAULT_MAX_MB = 5.0
MB = 1_000_000


@dataclass
class Attempt:
    """What the section shows of one attempt (texts already whole; escaping happens on rendering)."""

    label: str
    repeat: int
    status: str
    score: float
    output: str
    feedback: str
    error: str
    transcript: list[str]
    transcript_note: str

    @property
    def size(self) -> int:
        texts = (self.output, self.feedback, self.error, *self.transcript, self.transcript_note)
        return sum(len(t.encode("utf-8", "replace")) for t in texts)


@dataclass
class AttemptDetails:
    """Per test task (in test-split order), its attempts per selector; ``size`` the text's bytes, ``complete``
    False when gathering stopped at the limit."""

    tasks: dict[str, list[Attempt]] = field(default_factory=dict)
    size: int = 0
    complete: bool = True


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, indent=1, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


def _attempt(label: str, folder: Path, rec: AttemptRecord) -> Attempt:
    transcript = load_transcript(folder, rec)
    lines = transcript_lines(turns_of(transcript.messages)) if transcript.messages else []
    error = "\n\n".join(t for t in (rec.error or "", rec.traceback or "") if t)
    return Attempt(
        label=label,
        repeat=rec.repeat,
        status=rec.status,
        score=rec.judge.score,
        output=_text(rec.output),
        feedback=_text(rec.judge.feedback),
        error=error,
        transcript=lines,
        transcript_note="" if lines else (transcript.note or "no transcript was recorded"),
    )


def gather_details(report: Report, max_bytes: int) -> AttemptDetails:
    """The attempts of the report's selectors on its test tasks (the latest of each task and repeat), stopping
    as soon as their text passes ``max_bytes`` (``complete`` is then False and nothing is shown)."""
    found = AttemptDetails(tasks={tid: [] for tid in report.test_ids})
    for s in report.selectors:
        folder = Path(s.folder)
        table = read_table(folder / RESULTS)
        try:
            rows = table.latest()
            for row in rows.tolist():
                rec = table.record(row)
                if rec.id not in found.tasks:
                    continue
                one = _attempt(s.label, folder, rec)
                found.size += one.size
                if found.size > max_bytes:
                    found.complete = False
                    return found
                found.tasks[rec.id].append(one)
        finally:
            table.close()
    order = {s.label: i for i, s in enumerate(report.selectors)}
    for attempts in found.tasks.values():
        attempts.sort(key=lambda a: (order[a.label], a.repeat))
    return found


def error_counts(report: Report) -> dict[str, dict[str, int]]:
    """Per selector, per test task: its latest attempts that ended in a pipeline or judge error (read from the
    columns; only the failed rows are looked at one by one)."""
    test = set(report.test_ids)
    out: dict[str, dict[str, int]] = {}
    for s in report.selectors:
        table = read_table(Path(s.folder) / RESULTS)
        try:
            rows = table.latest()
            counts: dict[str, int] = {}
            for row in rows[table.status[rows] != OK].tolist():
                tid = table.task_id(row)
                if tid in test:
                    counts[tid] = counts.get(tid, 0) + 1
            out[s.label] = counts
        finally:
            table.close()
    return out


def report_html(report: Report, details_max_mb: float = DEFAULT_MAX_MB) -> str:
    """The HTML report with what only the files hold: the errors marked in the per-task table and the folded
    attempts section (within ``details_max_mb``)."""
    return to_html(report, errors=error_counts(report), attempts=details_section(report, details_max_mb))


def _block(title: str, text: str) -> str:
    return f"<h4>{esc(title)}</h4><pre>{esc(text)}</pre>" if text else ""


def _attempt_html(a: Attempt) -> str:
    state = "ok" if a.status == "ok" else a.status.replace("_", " ")
    summary = f"{a.label} · repeat {a.repeat} · {state} · score {a.score:.3f}"
    transcript = (
        f"<h4>Transcript ({len(a.transcript):,} lines)</h4><pre>{esc(chr(10).join(a.transcript))}</pre>"
        if a.transcript
        else f'<p class="note">Transcript: {esc(a.transcript_note)}</p>'
    )
    body = _block("Output", a.output) + _block("Judge feedback", a.feedback) + _block("Error", a.error) + transcript
    return (
        f'<details class="attempt" data-selector="{esc(a.label)}" data-repeat="{a.repeat}" '
        f'data-status="{esc(a.status)}"><summary>{esc(summary)}</summary>{body}</details>'
    )


def details_section(report: Report, max_mb: float = DEFAULT_MAX_MB) -> str:
    """The section (``id="attempts"``): folded per task, then per attempt; or a note when it would pass
    ``max_mb`` megabytes of text (0: never carried)."""
    head = '<section id="attempts"><h2>Attempts</h2>'
    if max_mb <= 0:
        return (
            f'{head}<p class="note">The outputs and transcripts are not carried (<code>--details-max-mb 0</code>).'
            "</p></section>"
        )
    found = gather_details(report, int(max_mb * MB))
    if not found.complete:
        return (
            f'{head}<p class="note">The outputs, feedback, errors and transcripts come to more than {max_mb:g} MB: '
            "they are not carried. <code>hermit-tui report --format html --details-max-mb N</code> carries them "
            "up to N MB; <code>hermit-tui show</code> prints one task's.</p></section>"
        )
    parts = [
        f'{head}<p class="note">Every test attempt, folded: a task, then its attempts per selector and repeat, with '
        f"the output, the judge's feedback, the error and traceback, and the transcript ({found.size / MB:.2f} MB "
        "of text). The browser's find opens what it finds.</p>"
    ]
    for tid, attempts in found.tasks.items():
        if not attempts:
            continue
        scores = ", ".join(f"{a.label} r{a.repeat} {a.score:.2f}" for a in attempts)
        parts.append(
            f'<details class="task" data-task="{esc(tid)}"><summary><code>{esc(tid)}</code> '
            f'<span class="note">{esc(scores)}</span></summary>{"".join(_attempt_html(a) for a in attempts)}'
            "</details>"
        )
    parts.append("</section>")
    return "".join(parts)


__all__ = ["DEFAULT_MAX_MB", "AttemptDetails", "details_section", "error_counts", "gather_details", "report_html"]
