"""Exports of a report for machines: one CSV row per attempt, and JUnit XML for CI test reporters.

Both start from a :class:`~hermit_tui.core.report.build.Report` (which selectors, in which order, the test tasks and the
success threshold) and the attempts of its selectors read back from their folders (:func:`read_attempts`): on the
test tasks only, one record per (task, repeat) (a later line replaces an earlier one, as every statistic counts
them), in the order of the test split then the repeat.

JUnit: one ``<testsuite>`` per selector, one ``<testcase>`` per test task (``classname`` the selector's label,
``name`` the task id): an ``<error>`` when every attempt of the task failed (pipeline or judge errors), a
``<failure>`` when no attempt reached the success threshold, ``<skipped>`` when the task has no attempt, and a pass
otherwise; ``tests``/``failures``/``errors``/``skipped``/``time`` counts on every suite and on ``<testsuites>``.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from hermit_tui.core.records.columns import AttemptRow, read_table
from hermit_tui.core.records.folders import RESULTS
from hermit_tui.core.records.results import AttemptRecord
from hermit_tui.core.report.formatting import spreadsheet_text
from hermit_tui.core.report.model import Report
from hermit_tui.core.safe import xml as safe_xml

#: an attempt as the exports read it: a record, or its figures from the columns
AnyAttempt = AttemptRecord | AttemptRow

ATTEMPT_COLUMNS = ("selector", "task", "repeat", "status", "score", "error_kind", "cost_usd", "tokens", "wall_s")
MESSAGE_CHARS = 300
_KIND = re.compile(r"\s*([A-Za-z_][\w.]*)\s*:")


def read_attempts(report: Report) -> dict[str, list[AttemptRow]]:
    """Per selector of the report, its attempts on the test tasks, one per (task, repeat), in test-split order: rows
    of the columns (``core.records.columns.AttemptRow``: an AttemptRecord's figures, without building one)."""
    out: dict[str, list[AttemptRow]] = {}
    for s in report.selectors:
        table = read_table(Path(s.folder) / RESULTS)
        table.close()  # the exports need the figures only, never a record read back
        rows = table.latest()
        where = table.positions(report.test_ids)[table.task[rows]] if len(rows) else np.zeros(0, np.int64)
        rows, where = rows[where >= 0], where[where >= 0]
        order = np.lexsort((table.repeat[rows], where))
        out[s.label] = table.rows_of(rows[order])
    return out


def error_kind(rec: AnyAttempt) -> str:
    """What kind of failure an attempt had: the exception type its error names (``ValueError: ...``), "unknown"
    when it names none, "" for an attempt that did not fail."""
    if rec.status == "ok":
        return ""
    m = _KIND.match(rec.error or "")
    return m.group(1) if m else "unknown"


def _number(x: object) -> str:
    if x is None or isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        return ""
    return str(x) if isinstance(x, int) else repr(float(x))


def _tokens(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return _number(value)
    return json.dumps(value, sort_keys=True, default=str)


def to_attempts_csv(report: Report, attempts: Mapping[str, Sequence[AnyAttempt]]) -> str:
    """One row per attempt: selector, task, repeat, status, score, error kind, cost (empty when unknown), tokens,
    wall time. Text cells are neutralised against spreadsheet formulas, as the per-task CSV's are."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(ATTEMPT_COLUMNS)
    for s in report.selectors:
        for rec in attempts.get(s.label, ()):
            writer.writerow(
                [
                    spreadsheet_text(s.label),
                    spreadsheet_text(rec.id),
                    rec.repeat,
                    rec.status,
                    _number(rec.judge.score),
                    spreadsheet_text(error_kind(rec)),
                    _number(rec.cost_usd),
                    spreadsheet_text(_tokens(rec.tokens)),
                    _number(rec.wall_s),
                ]
            )
    return buf.getvalue()


# ---------------------------------------------------------------------------------------------------- JUnit


def _xml_text(value: object, limit: int | None = MESSAGE_CHARS) -> str:
    """Text that XML 1.0 can hold (``core.safe.xml``: control characters shown as their escape), cut to ``limit``
    characters."""
    text = safe_xml(value)
    return text if limit is None or len(text) <= limit else text[: limit - 1] + "…"


def _seconds(records: Sequence[AnyAttempt]) -> float:
    return float(sum(r.wall_s for r in records if isinstance(r.wall_s, (int, float)) and math.isfinite(r.wall_s)))


def _score(x: float) -> str:
    return f"{x:g}" if math.isfinite(x) else str(x)


def _attempt_line(rec: AnyAttempt) -> str:
    line = f"repeat {rec.repeat}: {rec.status}, score {_score(rec.judge.score)}"
    if rec.status != "ok" and rec.error:
        line += f": {rec.error}"
    return _xml_text(line)


def _testcase(suite: ET.Element, classname: str, task_id: str, records: Sequence[AnyAttempt], threshold: float) -> str:
    """Add the task's testcase; returns its outcome: "pass", "failure", "error" or "skipped"."""
    case = ET.SubElement(
        suite,
        "testcase",
        classname=_xml_text(classname, None),
        name=_xml_text(task_id, None),
        time=f"{_seconds(records):.3f}",
    )
    if not records:
        ET.SubElement(case, "skipped", message="no attempt recorded on this task")
        return "skipped"
    body = "\n".join(_attempt_line(r) for r in records)
    n = len(records)
    if all(r.status != "ok" for r in records):
        pipeline = sum(r.status == "error" for r in records)
        judge = n - pipeline
        parts = [f"{k} {what} error{'s' * (k != 1)}" for k, what in ((pipeline, "pipeline"), (judge, "judge")) if k]
        first = next((r.error for r in records if r.error), "")
        message = f"every attempt failed ({' + '.join(parts)} in {n})" + (f": {first}" if first else "")
        kinds = sorted({error_kind(r) for r in records})
        ET.SubElement(case, "error", message=_xml_text(message), type=_xml_text(", ".join(kinds))).text = body
        return "error"
    scores = [r.judge.score for r in records]
    solved = sum(1 for x in scores if math.isfinite(x) and x >= threshold)
    if not solved:
        best = max((x for x in scores if math.isfinite(x)), default=float("nan"))
        message = (
            f"no attempt reached the success threshold {threshold:g}: best score {_score(best)} in {n} "
            f"attempt{'s' * (n != 1)}"
        )
        ET.SubElement(case, "failure", message=_xml_text(message), type="below-threshold").text = body
        return "failure"
    ET.SubElement(case, "system-out").text = _xml_text(f"{solved} of {n} attempts reached {threshold:g}\n{body}", None)
    return "pass"


def to_junit(report: Report, attempts: Mapping[str, Sequence[AnyAttempt]]) -> str:
    """JUnit XML: a suite per selector, a testcase per (selector, test task); see the module's docstring."""
    root = ET.Element("testsuites", name=_xml_text(f"hermit-tui evaluation: {report.run_name}", None))
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    total_time = 0.0
    for s in report.selectors:
        records = attempts.get(s.label, [])
        by_task: dict[str, list[AnyAttempt]] = {}
        for rec in records:
            by_task.setdefault(rec.id, []).append(rec)
        suite = ET.SubElement(root, "testsuite", name=_xml_text(f"{report.run_name}: {s.label}", None))
        props = ET.SubElement(suite, "properties")
        for name, value in (
            ("selector", s.label),
            ("adapter", s.adapter),
            ("commit", s.commit),
            ("mean_score", None if s.stats.mean is None else f"{s.stats.mean:.6f}"),
            ("success_threshold", f"{report.threshold:g}"),
            ("written_by", s.written_by),
            ("smoke_limit", s.smoke_limit),
            ("complete", str(s.complete).lower()),
            ("demo", str(report.demo).lower()),
        ):
            if value is not None:
                ET.SubElement(props, "property", name=name, value=_xml_text(value, None))
        counts = {"pass": 0, "failure": 0, "error": 0, "skipped": 0}
        for tid in report.test_ids:
            counts[_testcase(suite, s.label, tid, by_task.get(tid, []), report.threshold)] += 1
        seconds = _seconds(records)
        suite.set("tests", str(len(report.test_ids)))
        suite.set("failures", str(counts["failure"]))
        suite.set("errors", str(counts["error"]))
        suite.set("skipped", str(counts["skipped"]))
        suite.set("time", f"{seconds:.3f}")
        totals["tests"] += len(report.test_ids)
        totals["failures"] += counts["failure"]
        totals["errors"] += counts["error"]
        totals["skipped"] += counts["skipped"]
        total_time += seconds
    for key, value in totals.items():
        root.set(key, str(value))
    root.set("time", f"{total_time:.3f}")
    ET.indent(root, space=" ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


__all__ = ["ATTEMPT_COLUMNS", "error_kind", "read_attempts", "to_attempts_csv", "to_junit"]
