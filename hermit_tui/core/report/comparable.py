"""Whether evaluations shown or published side by side can be compared.

Two evaluations compare when they measured the same test tasks the same number of times under the same protocol
(the fingerprint: task ids and rows, judge, pipeline, agent params, model settings, smoke limit); a published row
must also have finished.
This module names what differs; it decides nothing about publishing by itself: the Review screen refuses to publish
rows that do not compare unless the user types an explicit override, and the dashboard's banners name columns that
do not compare.

An evaluation written by ``hermit eval`` records no fingerprint: only its task count and repeats can be checked, and
it is reported as *unchecked* rather than as a mismatch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field

from hermit_tui.core.present import NO_FINGERPRINT
from hermit_tui.core.workspace.fingerprint import Fingerprint, differences


class Shape(BaseModel):
    """What is compared of one evaluation."""

    label: str
    tasks: int
    repeats: int
    fingerprint: Fingerprint | None = None
    smoke_limit: int | None = None

    @classmethod
    def of_summary(cls, label: str, summary: Any) -> Shape:
        return cls(
            label=label,
            tasks=summary.tasks,
            repeats=summary.repeats,
            fingerprint=summary.fingerprint,
            smoke_limit=summary.smoke_limit,
        )


class Mismatch(BaseModel):
    """How one evaluation differs from the reference; ``reasons`` empty and ``unchecked`` True: nothing differs
    that could be checked, but the protocol could not be checked."""

    label: str
    reference: str
    reasons: list[str] = Field(default_factory=list)
    unchecked: bool = False

    @property
    def comparable(self) -> bool:
        return not self.reasons

    def text(self) -> str:
        if self.reasons:
            return f"{self.label} vs {self.reference}: " + "; ".join(self.reasons)
        return f"{self.label} vs {self.reference}: protocol not recorded (written by hermit eval), cannot be checked"


def _size(shape: Shape) -> str:
    return f"{shape.tasks} tasks × {shape.repeats} repeat{'s' if shape.repeats != 1 else ''}"


def compare_shapes(reference: Shape, other: Shape) -> Mismatch:
    """What makes ``other`` not comparable with ``reference``: task count and repeats, then the fingerprints'
    differences (when both have one; else only whether the smoke limits agree). Whether each finished is left to the
    caller (a live evaluation is unfinished until its end)."""
    reasons: list[str] = []
    if (other.tasks, other.repeats) != (reference.tasks, reference.repeats):
        reasons.append(f"{_size(other)}, {reference.label} {_size(reference)}")
    unchecked = reference.fingerprint is None or other.fingerprint is None
    if not unchecked:
        reasons += [
            name
            for name in differences(reference.fingerprint, other.fingerprint)
            if not (name == "repeats" and reasons)
        ]
    elif other.smoke_limit != reference.smoke_limit:
        reasons.append("the smoke limit")
    return Mismatch(label=other.label, reference=reference.label, reasons=reasons, unchecked=unchecked)


def reference_label(labels: Sequence[str]) -> str | None:
    """What the others are compared against: final when present, else the first."""
    if "final" in labels:
        return "final"
    return labels[0] if labels else None


def summaries_mismatches(summaries: Mapping[str, Any], reference: str | None = None) -> list[Mismatch]:
    """Every evaluation (label -> Summary) that does not compare with the reference (final, else the first), and
    the ones that cannot be checked. The reference itself is never listed."""
    labels = list(summaries)
    ref = reference if reference in summaries else reference_label(labels)
    if ref is None:
        return []
    base = Shape.of_summary(ref, summaries[ref])
    out = []
    for label in labels:
        if label == ref:
            continue
        found = compare_shapes(base, Shape.of_summary(label, summaries[label]))
        if found.reasons or found.unchecked:
            out.append(found)
    return out


def rows_mismatches(rows: Sequence[Any], reference: str = "final") -> list[Mismatch]:
    """The rows of a publish plan (``core.publish.plan.EvalRow``) that do not compare with final's: each row's
    ``protocol`` (fingerprint differences against final, computed by the plan), its tasks and repeats, and whether it
    finished. Rows without a fingerprint are listed as unchecked when nothing else differs."""
    final = next((r for r in rows if r.label == reference), None)
    if final is None:
        return []
    out = []
    for row in rows:
        if row is final:
            continue
        reasons = []
        if (row.tasks, row.repeats) != (final.tasks, final.repeats):
            reasons.append(f"{row.tasks} tasks × {row.repeats} repeats, {reference} {final.tasks} × {final.repeats}")
        unchecked = row.protocol == [NO_FINGERPRINT] or final.protocol == [NO_FINGERPRINT]
        if not unchecked:
            reasons += [p for p in row.protocol if not (p == "repeats" and reasons)]
        if not row.complete or row.cancelled:
            reasons.append(f"{row.label} is incomplete")
        if row.smoke_limit is not None:
            reasons.append(f"{row.label} is a smoke subset of {row.smoke_limit} tasks")
        if reasons or unchecked:
            out.append(Mismatch(label=row.label, reference=reference, reasons=reasons, unchecked=unchecked))
    return out


__all__ = ["Mismatch", "Shape", "compare_shapes", "reference_label", "rows_mismatches", "summaries_mismatches"]
