"""What a publish writes into the card: the rows of its Evaluation table (:class:`EvalRow`, one per selector), the
Markdown table with the paragraph that says how to read it, the failure-labels line, the phrases on the decisions of a
--stop-when-decided launch, and the diff of CARD.md before and after. ``core.publish.plan`` chooses the rows."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from hermit_tui.core.errors import InputError
from hermit_tui.core.present import fixed, partial_cost
from hermit_tui.core.publish.card import CARD_NAME, split_lines
from hermit_tui.core.records.columns import read_table
from hermit_tui.core.records.folders import StoredEvaluation
from hermit_tui.core.records.results import SOLVED_THRESHOLD
from hermit_tui.core.stats.clusters import clustered_text, spec_name, spec_parts
from hermit_tui.core.stats.intervals import METHOD_TEXT

TABLE_HEADER = (
    "| Adapter | Commit | Tasks | Repeats | Mean score [95% CI] | Solved at least once | Errors | Cost (USD) |"
)
TABLE_RULE = "|---|---|---|---|---|---|---|---|"


class EvalRow(BaseModel):
    """One row of the published Evaluation table, with where it was read from."""

    label: str
    adapter: str  # as the card names it: the selector as typed, or a directory's label
    selector: str  # as typed when it was evaluated
    content_hash: str | None = None  # an adapter directory's content when it was measured
    commit: str | None
    tasks: int
    repeats: int
    mean: float  # the task mean (core.stats.selector.ESTIMAND): hermit's mean_score when all tasks have equal repeats
    ci_low: float | None
    ci_high: float | None
    ci_method: str | None = None  # "t", "score" or "no-spread" (core.stats.intervals)
    cluster_by: str | None = None  # the interval clustered by this field (final's launch's), or None
    n_clusters: int | None = None  # its clusters: the units of the interval
    mean_score: float | None = None  # hermit's mean_score from summary.json (over attempts)
    solved_once: float
    attempts: int
    errors: int
    pipeline_errors: int
    judge_errors: int
    cost_usd: float | None
    unknown_cost_attempts: int
    folder: Path
    archived_at: str | None = None
    written_by: Literal["hermit", "hermit-tui"]
    complete: bool = True
    cancelled: bool = False
    smoke_limit: int | None = None
    retries: int | None = None
    protocol: list[str] = Field(default_factory=list)  # how it differs from final's protocol; [] = the same

    def cells(self) -> list[str]:
        ci = (
            f" [{fixed(self.ci_low)}, {fixed(self.ci_high)}]"
            if self.ci_low is not None and self.ci_high is not None
            else ""
        )
        cost = partial_cost(self.cost_usd, self.unknown_cost_attempts, dollars=False)
        return [
            self.adapter,
            self.commit[:7] if self.commit else "—",
            str(self.tasks),
            str(self.repeats),
            f"{fixed(self.mean)}{ci}",
            fixed(self.solved_once),
            str(self.errors),
            cost,
        ]


def taxonomy_line(rows: Sequence[EvalRow]) -> str | None:
    """One paragraph with each row's failure labels (from its evaluation's annotations.jsonl), or None when no
    failure of any row carries a label. Failures: error/judge_error or a score below hermit's 1.0."""
    from hermit_tui.core.records.annotations import read_annotations
    from hermit_tui.core.records.taxonomy import selector_taxonomy

    parts = []
    for row in rows:
        table = read_table(row.folder / "results.jsonl")
        try:
            t = selector_taxonomy(row.label, table, read_annotations(row.folder).entries, SOLVED_THRESHOLD)
        finally:
            table.close()
        if not t.labelled_failures:
            continue
        counts = ", ".join(f"{name} {n}" for name, n in t.failure_counts.items())
        parts.append(f"{row.adapter} {t.labelled_failures} of {t.failures} failures labelled ({counts})")
    if not parts:
        return None
    return (
        "Failure labels (assigned by hand while reading the failures, with hermit-tui; a reading aid, not a "
        "measurement): " + "; ".join(parts) + "."
    )


def render_publish_table(rows: Sequence[EvalRow], extra: str | None = None, sequential: Sequence[str] = ()) -> str:
    """The Markdown body of the Evaluation section: the table, then one paragraph saying how to read it (one on the
    decisions of a --stop-when-decided launch, ``sequential``: see :func:`sequential_lines`; and ``extra``, a
    paragraph of its own, when given)."""
    lines = [TABLE_HEADER, TABLE_RULE] + ["| " + " | ".join(r.cells()) + " |" for r in rows]
    final = next((r for r in rows if r.label == "final"), None)
    others = [r for r in rows if r.protocol and r is not final]
    if final is not None and final.protocol:
        protocol = "Protocols not checked: final was measured by hermit eval, which records no protocol fingerprint."
    elif others:
        protocol = (
            "Not shown to share final's protocol: "
            + "; ".join(f"{r.adapter} ({', '.join(r.protocol)})" for r in others)
            + "."
        )
    else:
        protocol = (
            "All rows share final's protocol (test tasks, judge, pipeline, agent params, model settings, repeats)."
        )
    by_method: dict[str, list[str]] = {}
    for r in rows:
        if r.ci_method:
            by_method.setdefault(r.ci_method, []).append(r.adapter)
    methods = "; ".join(f"{METHOD_TEXT[m]} for {', '.join(names)}" for m, names in by_method.items())
    by_clusters: dict[tuple[str, int], list[str]] = {}
    for r in rows:
        if r.cluster_by is not None and r.n_clusters is not None:
            by_clusters.setdefault((r.cluster_by, r.n_clusters), []).append(r.adapter)
    if by_clusters:
        units = "; ".join(
            f"{n} clusters" + (f" for {', '.join(names)}" if len(by_clusters) > 1 else "")
            for (_, n), names in by_clusters.items()
        )
        by = next(iter(by_clusters))[0]
        name = f"the cluster file {spec_name(by)}" if spec_parts(by)[0] == "--cluster-file" else by
        methods += f"; {clustered_text(name, units)}"
    unit = "the cluster of tasks" if by_clusters else "the task"
    differ = [
        f"{r.adapter} {r.mean_score:.3f}"
        for r in rows
        if r.mean_score is not None and abs(r.mean_score - r.mean) > 5e-4
    ]
    hermit = (
        f" With unequal repeats it differs from hermit's mean_score over attempts ({', '.join(differ)})."
        if differ
        else ""
    )
    note = (
        "Mean score: the mean over test tasks of each task's mean score, failed attempts scored 0 (hermit's "
        f"mean_score when every task has the same repeats).{hermit} 95% CI, with {unit} as the unit of "
        f"sampling and never beyond the score range: {methods or 'none'}. Solved at least once: share of test "
        f"tasks with an attempt scoring at least {SOLVED_THRESHOLD}. Commit: the adapter version measured. "
        f"{protocol}"
    )
    if sequential and all(ANYTIME in text for text in sequential):
        note += (
            "\n\nStop when decided (anytime-valid confidence sequences, predictable plug-in empirical Bernstein, "
            "task by task (cluster by cluster when clustered) in a fixed order, alpha split over the candidates; "
            "Waudby-Smith & Ramdas 2023): "
            + "; ".join(sequential)
            + ". The decisions and their intervals stay valid although the launch "
            "stopped on what it saw; the per-adapter intervals in the table are the fixed design's."
        )
    elif sequential:
        clustered = any(CLUSTERED_LOOKS in text for text in sequential)
        note += (
            "\n\nStop when decided (group-sequential repeated confidence intervals, Lan-DeMets error spending "
            "over the planned rounds, alpha split over the candidates"
            + (
                "; when clustered, whole clusters at each look and cluster-robust (CR2) standard errors on the "
                "Bell-McCaffrey df, Bell & McCaffrey 2002"
                if clustered
                else ""
            )
            + "; Jennison & Turnbull 2000): "
            + "; ".join(sequential)
            + ". The decisions and their repeated intervals stay valid although the launch stopped on what it saw, "
            "and the estimates are adjusted for it (the stagewise ordering, Jennison & Turnbull 2000, ch. 8); "
            "the per-adapter intervals in the table are the fixed design's."
        )
    return "\n".join(lines) + "\n\n" + note + (f"\n\n{extra}" if extra else "")


ANYTIME = "anytime-valid"  # marks a card phrase of the anytime-valid design
CLUSTERED_LOOKS = "clustered by"  # marks a card phrase of the clustered group-sequential design


def sequential_lines(
    chosen: dict[str, StoredEvaluation], rows: Sequence[EvalRow], task_ids: Sequence[str]
) -> list[str]:
    """One phrase per candidate on the card whose baseline is on the card too, from one --stop-when-decided
    launch: the difference with its repeated 95% interval and the decision, recomputed from the records."""
    from hermit_tui.core.stats.sequential import anytime_looks
    from hermit_tui.core.stats.sequential.replay import pair_look

    names = {r.label: r.adapter for r in rows}
    out = []
    for row in rows:
        s = chosen[row.label].summary
        entry = s.sequential if s is not None else None
        if entry is None or entry.decision is None or entry.baseline not in chosen:
            continue
        base, cand = chosen[entry.baseline], chosen[row.label]
        try:
            table_b, table_c = read_table(base.results_path), read_table(cand.results_path)
        except InputError:
            continue
        table_b.close()  # the light rows read the arrays only
        table_c.close()
        look, _ = pair_look(
            entry.baseline, base.summary, table_b.keyed(light=True), row.label, s, table_c.keyed(light=True), task_ids
        )
        if look is None or look.mean_diff is None or look.ci_low is None:
            continue
        decision = {
            "improvement": "an improvement",
            "regression": "a regression",
            "futile": "stopped for futility",
        }.get(look.decision, "undecided")
        if look.decision == "equivalent":
            decision = f"equivalent within ±{look.margin:g}"
        where = f"after {look.rounds} of at most {look.max_rounds} rounds"
        if look.within_first_round:  # stopped on part of round 1 (one repeat of the tasks looked at)
            where = (
                f"after {look.tasks} of the {look.total_tasks} tasks of round 1, of at most {look.max_rounds} rounds"
            )
        if look.clusters is not None and not anytime_looks.is_anytime(look):
            by = getattr(entry, "cluster_by", None) or "a cluster file"
            where += f"; {CLUSTERED_LOOKS} {by}: {look.clusters} of its {look.total_clusters} clusters"
        if anytime_looks.is_anytime(look):
            where = f"{ANYTIME}, after {anytime_looks.look_text(look)}"
            by = anytime_looks.clustered_by(look)
            if by is not None:
                where += f", clustered by {by}: each cluster one observation"
        if look.adjusted and look.adjusted_estimate is not None:  # the estimate adjusted for the stopping rule
            figures = (
                f"{look.adjusted_estimate:+.3f} [{look.adjusted_low:.3f}, {look.adjusted_high:.3f}] (median-unbiased "
                f"for the stopping rule; observed {look.mean_diff:+.3f}; repeated CI [{look.ci_low:.3f}, "
                f"{look.ci_high:.3f}])"
            )
        else:
            figures = f"{look.mean_diff:+.3f} [{look.ci_low:.3f}, {look.ci_high:.3f}]"
        out.append(f"{names[row.label]} − {names[entry.baseline]} {figures}: {decision} ({where})")
    return out


def unified_diff(old: str, new: str) -> str:
    """``git diff``-style text of CARD.md before and after (LF-only line splitting, as the card is written)."""
    return "".join(difflib.unified_diff(split_lines(old), split_lines(new), f"a/{CARD_NAME}", f"b/{CARD_NAME}"))


__all__ = [
    "TABLE_HEADER",
    "TABLE_RULE",
    "EvalRow",
    "render_publish_table",
    "sequential_lines",
    "taxonomy_line",
    "unified_diff",
]
