"""The gate over the evaluations on disk (:func:`load_gate`), and the facts of one evaluation read from its summary
and its results on the test tasks (:func:`selector_facts`) (``core.report.gate``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from hermit_tui.core.errors import InputError
from hermit_tui.core.records.columns import ERROR, JUDGE_ERROR, OK, AttemptTable
from hermit_tui.core.records.folders import RESULTS, StoredEvaluation, eval_folder, eval_root, list_evaluations
from hermit_tui.core.records.results import SOLVED_THRESHOLD, AttemptRecord
from hermit_tui.core.report.gate.checks import decide
from hermit_tui.core.report.gate.model import GateResult, Role, SelectorFacts
from hermit_tui.core.report.gate.options import check_error_rate, check_margin
from hermit_tui.core.report.requirements import NEEDS_BASELINE
from hermit_tui.core.workspace.config import Config
from hermit_tui.core.workspace.tasks import TaskSet

if TYPE_CHECKING:
    from hermit_tui.core.stats.selector import SelectorStats


# ---------------------------------------------------------------------------------------------------- facts


def latest_on_test(records: Sequence[AttemptRecord], test_ids: Sequence[str]) -> dict[tuple[str, int], AttemptRecord]:
    """The records on the test tasks, one per (task, repeat): a later line replaces an earlier one."""
    wanted = set(test_ids)
    out: dict[tuple[str, int], AttemptRecord] = {}
    for rec in records:
        if rec.id in wanted and rec.repeat >= 1:
            out[rec.key] = rec
    return out


def _table_counts(table: AttemptTable, test_ids: Sequence[str], repeats: int | None) -> dict[str, Any]:
    """``latest_on_test``'s figures from columns: the latest attempt of each (test task, repeat >= 1)."""
    rows = table.latest()
    on_test = table.positions(test_ids)[table.task[rows]] >= 0 if len(rows) else np.zeros(0, bool)
    rows = rows[on_test & (table.repeat[rows] >= 1)]
    return dict(
        present=int((table.repeat[rows] <= repeats).sum()) if repeats is not None else 0,
        attempts=len(rows),
        pipeline_errors=table.count_status(ERROR, rows),
        judge_errors=table.count_status(JUDGE_ERROR, rows),
        known_cost_usd=table.known_cost(rows),
        unknown_cost_attempts=table.unknown_costs(rows),
    )


def selector_facts(
    role: Role,
    stored: StoredEvaluation,
    records: Sequence[AttemptRecord] | AttemptTable,
    test_ids: Sequence[str],
    stats: SelectorStats | None = None,
) -> SelectorFacts:
    """The facts of one evaluation; ``stats``: its ``core.stats.selector.SelectorStats`` (for the summary table), if
    any."""
    s = stored.summary
    repeats = s.repeats if s is not None else None
    if isinstance(records, AttemptTable):
        counts = _table_counts(records, test_ids, repeats)
    else:
        kept = latest_on_test(records, test_ids)
        present = sum(1 for (_, r) in kept if repeats is not None and r <= repeats)
        costs = [r.cost_usd for r in kept.values()]
        known = [c for c in costs if c is not None and math.isfinite(c)]
        counts = dict(
            present=present,
            attempts=len(kept),
            pipeline_errors=sum(r.status == "error" for r in kept.values()),
            judge_errors=sum(r.status == "judge_error" for r in kept.values()),
            known_cost_usd=float(sum(known)),
            unknown_cost_attempts=len(costs) - len(known),
        )
    return SelectorFacts(
        role=role,
        label=stored.label,
        folder=str(stored.folder),
        smoke_folder=stored.smoke,
        adapter=s.adapter if s else None,
        commit=s.commit if s else None,
        written_by="unknown" if s is None else "hermit eval" if s.written_by_hermit else "hermit-tui",
        summary_problem=None if s is not None else (stored.problem or "no summary.json"),
        smoke_limit=s.smoke_limit if s else None,
        cancelled=bool(s.cancelled) if s else False,
        summary_complete=s.complete if s else None,
        tasks=s.tasks if s else None,
        repeats=repeats,
        n_test=len(test_ids),
        expected=len(test_ids) * repeats if repeats is not None else None,
        **counts,
        mean=stats.mean if stats is not None else None,
        ci_low=stats.ci_low if stats is not None else None,
        ci_high=stats.ci_high if stats is not None else None,
        ci_method=stats.ci_method if stats is not None else None,
        fingerprint=s.fingerprint if s is not None else None,
        sequential=s.sequential if s is not None else None,
    )


# ---------------------------------------------------------------------------------------------------- reading the disk


def load_gate(
    config: Config,
    taskset: TaskSet,
    baseline: str | None,
    candidate: str,
    requirements: Sequence[str],
    *,
    margin: float = 0.0,
    max_error_rate: float | None = None,
    smoke: bool = False,
    allow_unchecked: bool = False,
    lenient: bool = False,
    baseline_optional: bool = False,
    slice_by: str | None = None,
    cluster_by: str | None = None,
) -> GateResult:
    """The gate over the current evaluations of ``baseline`` and ``candidate`` (eval folder labels) on disk; smoke
    subsets (``eval/<label>/smoke/``) only when ``smoke``. A missing evaluation is bad input (InputError), except
    the baseline's when ``baseline_optional`` and no requirement needs it (it is then left out). ``cluster_by``: the
    field whose values cluster the tasks (None: the one both evaluations were launched with, if any;
    ``core.stats.clusters``)."""
    from hermit_tui.core.records.scores import tabulate
    from hermit_tui.core.stats.clusters import resolve_clustering
    from hermit_tui.core.stats.figures import pair_stats
    from hermit_tui.core.stats.selector import selector_stats

    requirements = list(requirements)
    margin = check_margin(margin)
    max_error_rate = check_error_rate(max_error_rate)
    if baseline is not None and baseline == candidate:
        raise InputError(f"--baseline and --candidate are both '{candidate}': nothing to compare")
    run_dir = config.run_dir
    which = "smoke" if smoke else "full"
    stored = {s.label: s for s in list_evaluations(run_dir, include_archived=False, which=which)}
    kind = "smoke subset" if smoke else "evaluation"

    def missing(label: str, role: str) -> InputError:
        known = ", ".join(sorted(stored)) or "none"
        hint = ""
        if not smoke and (eval_folder(run_dir, label, smoke=True) / RESULTS).is_file():
            hint = "; only a smoke subset of it (--limit) exists: --smoke gates smoke subsets"
        return InputError(
            f"{eval_folder(run_dir, label, smoke=smoke)}: no {kind} of '{label}', the {role} "
            f"({kind}s under {eval_root(run_dir)}: {known}){hint}"
        )

    if candidate not in stored:
        raise missing(candidate, "candidate")
    if baseline is not None and baseline not in stored:
        if baseline_optional and not NEEDS_BASELINE & set(requirements):
            baseline = None
        else:
            raise missing(baseline, "baseline")
    test_ids = list(taskset.test_ids)
    summaries = [stored[label].summary for label in (baseline, candidate) if label is not None]
    fingerprints = [s.fingerprint if s is not None else None for s in summaries]
    recorded = [fp.cluster_by if fp is not None else None for fp in fingerprints]
    digests = [fp.clusters_sha256 if fp is not None else None for fp in fingerprints]
    clusters = resolve_clustering(taskset.tasks, test_ids, cluster_by, recorded, digests)
    facts: dict[str, SelectorFacts] = {}
    tables = {}
    roles: tuple[tuple[Role, str | None], ...] = (("baseline", baseline), ("candidate", candidate))
    columns = {}
    for role, label in roles:
        if label is None:
            continue
        table = stored[label].load_table()
        try:
            if "robust-to-errors" in requirements:
                columns[label] = (table.attempt_columns(test_ids), table.status != OK)
            tables[label] = tabulate(table.attempt_columns(test_ids), test_ids, SOLVED_THRESHOLD)
            stats = selector_stats(label, tables[label], test_ids, SOLVED_THRESHOLD, clusters=clusters)
            facts[label] = selector_facts(role, stored[label], table, test_ids, stats)
        finally:
            table.close()
    pair = None
    slices = None
    bounds = None
    if baseline is not None and columns:
        from hermit_tui.core.stats.bounds import error_bounds

        (ca, ea), (cb, eb) = columns[baseline], columns[candidate]
        bounds = error_bounds(baseline, ca, ea, candidate, cb, eb, test_ids, SOLVED_THRESHOLD)
    if baseline is not None:
        pair = pair_stats(  # the gate reads the interval and the verdict, not the power figures
            baseline,
            tables[baseline],
            candidate,
            tables[candidate],
            test_ids,
            SOLVED_THRESHOLD,
            clusters=clusters,
            simulate_power=False,
        )
        if slice_by is not None:
            from hermit_tui.core.stats.slices import groups_by_field, slice_report

            groups = groups_by_field(taskset.tasks, test_ids, slice_by)
            slices = slice_report(groups, tables, [(baseline, candidate)], test_ids, by=slice_by, margin=margin)
    return decide(
        facts.get(baseline) if baseline else None,
        facts[candidate],
        requirements,
        margin,
        max_error_rate,
        pair,
        allow_unchecked=allow_unchecked,
        lenient=lenient,
        smoke=smoke,
        run_name=config.run_name,
        config=str(config.path),
        slices=slices,
        bounds=bounds,
    )


__all__ = ["latest_on_test", "load_gate", "selector_facts"]
