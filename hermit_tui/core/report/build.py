"""The evaluation report: what the seed says to report, with error bars, paired comparisons and the protocol checks.

``build_report`` reads the current evaluations of a run from disk (hermit-tui's, or ones ``hermit eval`` wrote,
which carry no fingerprint and no extra keys) and computes everything from their results.jsonl; nothing is re-run.
The model is ``core.report.model``; the renderers are ``core.report.text`` (Markdown, JSON, CSV) and
``core.report.html``; their names are re-exported here, where callers have always found them.
Training scores from ``steps.jsonl`` are kept apart and labelled as training evidence: they are never test figures.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hermit_tui.core.errors import InputError
from hermit_tui.core.present import caveats
from hermit_tui.core.records import taxonomy as column_taxonomy
from hermit_tui.core.records.annotations import DEFAULT_LABEL_SET, Annotation, FailureTaxonomy, read_annotations
from hermit_tui.core.records.columns import OK, AttemptTable
from hermit_tui.core.records.folders import StoredEvaluation, eval_folder, eval_root, list_evaluations
from hermit_tui.core.records.results import SOLVED_THRESHOLD, SUMMARY_KEYS, AttemptRecord
from hermit_tui.core.records.scores import TaskTable, tabulate
from hermit_tui.core.report.formatting import not_run_note, sequential_protocol
from hermit_tui.core.report.model import (
    NOT_RECORDED,
    UNKNOWN,
    Difference,
    Report,
    SelectorReport,
    TrainingEvidence,
    TrainingStep,
)
from hermit_tui.core.report.protocol import protocol_checks, score_scale_check, test_reuse
from hermit_tui.core.report.text import to_csv, to_json, to_markdown
from hermit_tui.core.stats.bounds import ErrorBounds
from hermit_tui.core.stats.clusters import Clustering, resolve_clustering, unclustered_note
from hermit_tui.core.stats.figures import PairStats, default_pairs, pair_stats
from hermit_tui.core.stats.noise import NoiseBudget
from hermit_tui.core.stats.selector import selector_stats
from hermit_tui.core.stats.sequential.replay import pair_look
from hermit_tui.core.stats.sequential.text import sequential_pair
from hermit_tui.core.stats.sequential.tracker import Records
from hermit_tui.core.version import __version__
from hermit_tui.core.why.pair import pairs_why
from hermit_tui.core.why.versions import CheckpointCurve, CurvePoint, curve_of, kind_of
from hermit_tui.core.workspace.config import Config
from hermit_tui.core.workspace.fingerprint import differences
from hermit_tui.core.workspace.tasks import TaskSet
from hermit_tui.core.workspace.tree import AdapterTree, one_tree_per_path, open_tree

_CHECKPOINT = re.compile(r"_(?:ckpt-(step|epoch)-(\d+)|bootstrap)$")


# ---------------------------------------------------------------------------------------------------- building


def default_labels(stored: Sequence[StoredEvaluation], run_name: str) -> list[str]:
    """The current evaluations in report order: none, root, checkpoints (bootstrap, steps, epochs), final, others."""
    labels = [s.label for s in stored if not s.archived]
    prefix = run_name.replace("/", "_")

    def key(label: str) -> tuple[Any, ...]:
        if label == "none":
            return (0,)
        if label == "root":
            return (1,)
        m = _CHECKPOINT.search(label)
        if m and label.startswith(prefix + "_"):
            what, number = m.groups()
            return (2, 0 if what is None else 1 if what == "step" else 2, int(number or 0), label)
        if label == "final":
            return (3,)
        return (4, label)

    return sorted(dict.fromkeys(labels), key=key)


def _costs(records: list[AttemptRecord] | AttemptTable) -> tuple[float, int]:
    """Known cost and unknown-cost attempts (an unknown cost, or one that is not a finite number, is never $0)."""
    if isinstance(records, AttemptTable):
        return records.known_cost(), records.unknown_costs()
    known = [r.cost_usd for r in records if r.cost_usd is not None and math.isfinite(r.cost_usd)]
    return float(sum(known)), len(records) - len(known)


def _selector(
    stored: StoredEvaluation,
    records: list[AttemptRecord] | AttemptTable,
    skipped: list[str],
    test_ids: list[str],
    threshold: float,
    table: TaskTable | None = None,
    clusters: Clustering | None = None,
) -> SelectorReport:
    s = stored.summary
    grouped = (
        table
        if table is not None
        else records.attempt_columns(test_ids)
        if isinstance(records, AttemptTable)
        else records
    )
    stats = selector_stats(stored.label, grouped, test_ids, threshold, clusters=clusters)
    known, unknown = _costs(records)
    errors = (
        records.n - records.count_status(OK)
        if isinstance(records, AttemptTable)
        else sum(r.status != "ok" for r in records)
    )
    flags = list(skipped)
    if s is None:
        written_by, complete = "unknown", False
        flags.append(f"{stored.label}: {stored.problem or 'no summary.json'}")
    else:
        written_by = "hermit eval" if s.written_by_hermit else "hermit-tui"
        expected = s.expected_attempts or s.tasks * s.repeats
        complete = s.is_complete and len(records) >= expected and not s.cancelled
        flags += [
            f"{stored.label}: {caveat}"
            for caveat in caveats(
                smoke=s.is_smoke,
                smoke_limit=s.smoke_limit,
                done=len(records),
                expected=expected,
                complete=complete,
                cancelled=bool(s.cancelled),
                retries=s.retries,
            )
        ]
    if stats.n_missing and (s is None or not s.is_smoke):
        flags.append(f"{stored.label}: {stats.n_missing} test tasks have no attempt{not_run_note(s, stats.n_missing)}")
    if stats.nonfinite_scores:
        flags.append(
            f"{stored.label}: {stats.nonfinite_scores} attempts have a score that is not a finite number "
            "(NaN or infinity), counted as 0"
        )
    if stats.n_ignored:
        flags.append(f"{stored.label}: {stats.n_ignored} attempts ignored (ids outside the test split, or repeated)")
    return SelectorReport(
        label=stored.label,
        folder=str(stored.folder),
        adapter=s.adapter if s else None,
        commit=s.commit if s else None,
        content_hash=s.content_hash if s else None,
        written_by=written_by,
        summary={k: getattr(s, k) for k in SUMMARY_KEYS} if s else None,
        fingerprint=s.fingerprint if s else None,
        stats=stats,
        errors=errors,
        known_cost_usd=known,
        unknown_cost_attempts=unknown,
        smoke_limit=s.smoke_limit if s else None,
        complete=complete,
        retries=(s.retries or 0) if s else 0,
        flags=flags,
        sequential=s.sequential if s else None,
    )


def _monitored_pairs(labels: list[str], stored: dict[str, StoredEvaluation]) -> list[tuple[str, str]]:
    """(baseline, candidate) of every --stop-when-decided decision among ``labels`` that the default pairs leave
    out: the report shows each decision."""
    shown = {frozenset(p) for p in default_pairs(labels)}
    out = []
    for label in labels:
        s = stored[label].summary
        entry = s.sequential if s is not None else None
        if entry is None or entry.decision is None or entry.baseline not in labels:
            continue
        if frozenset((entry.baseline, label)) not in shown:
            shown.add(frozenset((entry.baseline, label)))
            out.append((entry.baseline, label))
    return out


def _sequential(
    pair: PairStats, stored: dict[str, StoredEvaluation], records: Mapping[str, Records], test_ids: list[str]
) -> PairStats:
    """A candidate and its baseline of a --stop-when-decided launch: the sequential test's interval and decision
    (recomputed from the records, core.stats.sequential.replay); other pairs as they are, with a note when the launch
    compared them only with the baseline."""
    a, b = pair.a, pair.b
    look, notes = pair_look(a, stored[a].summary, records[a], b, stored[b].summary, records[b], test_ids)
    if look is not None:
        pair = sequential_pair(pair, look)
    return pair.model_copy(update=dict(warnings=[*pair.warnings, *notes])) if notes else pair


def _differences(selectors: list[SelectorReport]) -> list[Difference]:
    out = []
    for i, a in enumerate(selectors):
        for b in selectors[i + 1 :]:
            found = differences(a.fingerprint, b.fingerprint)
            if a.fingerprint is None or b.fingerprint is None:
                missing = [x.label for x in (a, b) if x.fingerprint is None]
                found = [
                    f"{UNKNOWN} the protocol fingerprint is missing for {' and '.join(missing)} (written by "
                    "hermit eval?), so the protocol cannot be checked"
                ]
                if a.summary and b.summary:
                    found += [
                        f"the {key} ({a.summary[key]} vs {b.summary[key]})"
                        for key in ("tasks", "repeats")
                        if a.summary[key] != b.summary[key]
                    ]
            if found:
                out.append(Difference(a=a.label, b=b.label, differences=found))
    return out


def _dataset_revision(selectors: list[SelectorReport]) -> str:
    found = {
        s.fingerprint.dataset_revision
        for s in selectors
        if s.fingerprint and s.fingerprint.dataset_revision is not None
    }
    if not found:
        return NOT_RECORDED
    return found.pop() if len(found) == 1 else "differs between selectors: " + ", ".join(sorted(map(str, found)))


def _training(run_dir: Path) -> TrainingEvidence | None:
    path = run_dir / "steps.jsonl"
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    steps, skipped = [], 0
    for line in lines:
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            rollout = rec.get("rollout") or {}
            mean = rollout.get("mean_score")
            tasks = rec.get("tasks")
            steps.append(
                TrainingStep(
                    step=rec.get("step"),
                    epoch=rec.get("epoch"),
                    tasks=len(tasks) if isinstance(tasks, list) else tasks if isinstance(tasks, int) else None,
                    mean_score=float(mean) if isinstance(mean, (int, float)) and math.isfinite(mean) else None,
                    bootstrap=bool(rec.get("bootstrap")),
                )
            )
        except (ValueError, AttributeError, TypeError):
            skipped += 1
    return TrainingEvidence(source=str(path), steps=steps, skipped_lines=skipped)


def _open_tree(config: Config) -> AdapterTree | None:
    try:
        return open_tree(config.tree_dir)
    except InputError:
        return None


def _taxonomy(
    stored: dict[str, StoredEvaluation],
    tables: dict[str, AttemptTable],
    labels: list[str],
    test_ids: list[str],
    threshold: float,
    label_set: Sequence[str],
) -> FailureTaxonomy:
    """Attempts per label per selector, and per default pair the tasks fixed or introduced, from each evaluation's
    annotations.jsonl (an unreadable one is a warning, not a failure of the report), computed from the columns
    (``core.records.taxonomy``)."""
    notes: dict[str, dict[tuple[str, int], Annotation]] = {}
    warnings: list[str] = []
    for label in labels:
        try:
            read = read_annotations(stored[label].folder)
        except InputError as exc:
            warnings.append(str(exc))
            notes[label] = {}
            continue
        warnings += read.skipped
        notes[label] = read.entries
    live = {label: column_taxonomy.live_annotations(tables[label], notes[label]) for label in labels}
    selectors = [
        column_taxonomy.selector_taxonomy(
            label, tables[label], notes[label], threshold, label_set, test_ids, live=live[label]
        )
        for label in labels
    ]
    for t in selectors:
        if t.stale:
            warnings.append(
                f"{t.label}: {t.stale} annotations were made on earlier attempts, re-run since; they are not counted"
            )
    pairs = [
        column_taxonomy.pair_taxonomy(
            a,
            tables[a],
            notes[a],
            b,
            tables[b],
            notes[b],
            label_set,
            test_ids,
            threshold,
            live_a=live[a],
            live_b=live[b],
        )
        for a, b in default_pairs(labels)
    ]
    return FailureTaxonomy(
        threshold=threshold, label_set=list(label_set), selectors=selectors, pairs=pairs, warnings=warnings
    )


@one_tree_per_path()  # the adapter tree opened once for every selector, version and reuse count read
def build_report(
    config: Config,
    taskset: TaskSet,
    labels: list[str] | None,
    threshold: float = SOLVED_THRESHOLD,
    label_set: Sequence[str] | None = None,
    *,
    smoke: bool = False,
    demo: bool = False,
    slice_by: str | None = None,
    harmed: bool = False,
    passk: bool = False,
    error_bounds: bool = False,
    noise_at: float | None = None,
    cluster_by: str | None = None,
) -> Report:
    """The report over the current evaluations ``labels`` (eval folder names; None: all of them, in report order).
    ``label_set``: the run's triage labels (hermit-tui's settings), used to order the taxonomy. Smoke subsets
    (``eval/<label>/smoke/``) are never among them, unless ``smoke``: then only they are. ``demo``: the run is the
    built-in teaching demonstration (the caller knows: ``hermit_tui.demo.is_demo_config``), which the report says
    first. ``slice_by``: a field of the task rows; each pair's figures per slice (``core.stats.slices``).
    ``harmed``: per pair, the tasks worse with evidence (``core.stats.harm``); both off by default, since they look
    at every task again. ``cluster_by``: a field of the task rows whose values cluster the tasks (standard errors,
    intervals, tests and power clustered; ``core.stats.clusters``); None: the field the evaluations were launched
    with (``eval --cluster-by``, recorded in their fingerprints), if they all agree, else no clustering.
    ``noise_at``: the difference each pair's noise budget is computed for (default
    ``core.stats.noise.DEFAULT_DELTA``)."""

    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not math.isfinite(threshold):
        raise InputError(f"--threshold must be a finite number, got {threshold!r}")
    threshold = float(threshold)
    run_dir = config.run_dir
    stored = {s.label: s for s in list_evaluations(run_dir, include_archived=False, which="smoke" if smoke else "full")}
    kind = "smoke subset" if smoke else "evaluation"
    if not stored:
        raise InputError(
            f"{eval_root(run_dir)}: no {kind}s to report (run `hermit-tui eval{' --limit N' if smoke else ''}` first)"
        )
    if labels is None:
        labels = default_labels(list(stored.values()), config.run_name)
    labels = list(dict.fromkeys(labels))
    for label in labels:
        if label not in stored:
            raise InputError(
                f"{eval_folder(run_dir, label, smoke=smoke)}: no {kind} of '{label}' "
                f"(evaluated: {', '.join(sorted(stored))})"
            )
    if not labels:
        raise InputError("no selector to report")
    test_ids = taskset.test_ids
    summaries = [stored[label].summary for label in labels]
    fingerprints = [s.fingerprint if s is not None else None for s in summaries]
    recorded = [fp.cluster_by if fp is not None else None for fp in fingerprints]
    digests = [fp.clusters_sha256 if fp is not None else None for fp in fingerprints]
    clusters = resolve_clustering(taskset.tasks, test_ids, cluster_by, recorded, digests)
    read: dict[str, AttemptTable] = {}
    try:
        report, tables = _build(config, taskset, labels, threshold, label_set, stored, read, test_ids, demo, clusters)
        note = unclustered_note(labels, recorded) if clusters is None and len(labels) > 1 else None
        if note is not None:
            report.warnings.append(note)
        if error_bounds:
            report.error_bounds = _error_bounds(report, read, threshold)
        report.noise = _noise(report, noise_at)
    finally:
        for table in read.values():
            table.close()
    return _where(report, taskset, tables, slice_by, harmed, passk)


def _noise(report: Report, delta: float | None) -> list[NoiseBudget]:
    """Per fixed-design pair, its noise budget at ``delta``, priced at the two selectors' known cost per attempt."""
    from hermit_tui.core.stats.noise import DEFAULT_DELTA, CostRate, check_delta, noise_budget

    delta = DEFAULT_DELTA if delta is None else check_delta(delta)
    by = {s.label: s for s in report.selectors}

    def rate(s: SelectorReport) -> CostRate:
        known = s.stats.n_attempts - s.unknown_cost_attempts
        return CostRate(
            known_usd=s.known_cost_usd, known_attempts=max(known, 0), unknown_attempts=s.unknown_cost_attempts
        )

    return [
        noise_budget(p, by[p.a].stats.repeats_max, by[p.b].stats.repeats_max, rate(by[p.a]) + rate(by[p.b]), delta)
        for p in report.pairs
        if p.sequential is None and p.a in by and p.b in by
    ]


def _error_bounds(report: Report, read: dict[str, AttemptTable], threshold: float) -> list[ErrorBounds]:
    """Per pair, its figures with the errored attempts counted as failures, as successes and left out."""
    from hermit_tui.core.stats.bounds import error_bounds

    cols = {label: t.attempt_columns(report.test_ids) for label, t in read.items()}
    errored = {label: t.status != OK for label, t in read.items()}
    return [
        error_bounds(p.a, cols[p.a], errored[p.a], p.b, cols[p.b], errored[p.b], report.test_ids, threshold)
        for p in report.pairs
        if p.sequential is None
    ]


def _where(
    report: Report,
    taskset: TaskSet,
    tables: dict[str, TaskTable],
    slice_by: str | None,
    harmed: bool,
    passk: bool = False,
) -> Report:
    """The report with where it helps and hurts, when asked: slices by a field, the harmed tasks per pair, pass@k."""
    from hermit_tui.core.stats.harm import harmed_tasks
    from hermit_tui.core.stats.passk import pass_k
    from hermit_tui.core.stats.slices import groups_by_field, slice_report

    pairs = [(p.a, p.b) for p in report.pairs if p.sequential is None]
    if slice_by is not None:
        groups = groups_by_field(taskset.tasks, report.test_ids, slice_by)
        report.slices = slice_report(groups, tables, pairs, report.test_ids, by=slice_by)
    if harmed:
        report.harm = [harmed_tasks(a, tables[a], b, tables[b]) for a, b in pairs]
    if passk:
        report.pass_k = pass_k(tables, pairs, report.threshold)
    return report


def _build(
    config: Config,
    taskset: TaskSet,
    labels: list[str],
    threshold: float,
    label_set: Sequence[str] | None,
    stored: dict[str, StoredEvaluation],
    read: dict[str, AttemptTable],
    test_ids: list[str],
    demo: bool,
    clusters: Clustering | None = None,
) -> tuple[Report, dict[str, TaskTable]]:
    """build_report's figures from the evaluations' columns (``read`` collects the tables, for the caller to
    close), and each selector's scores by task."""
    run_dir = config.run_dir
    tables = {}
    selectors = []
    for label in labels:
        read[label] = table = stored[label].load_table()
        tables[label] = tabulate(table.attempt_columns(test_ids), test_ids, threshold)  # grouped once
        selectors.append(_selector(stored[label], table, table.skipped, test_ids, threshold, tables[label], clusters))
    pairs = [
        pair_stats(a, tables[a], b, tables[b], test_ids, threshold, clusters=clusters)
        for a, b in [*default_pairs(labels), *_monitored_pairs(labels, stored)]
    ]
    keyed = {label: table.keyed(light=True) for label, table in read.items()}  # built only for a monitored pair
    pairs = [_sequential(p, stored, keyed, test_ids) for p in pairs]

    checks = protocol_checks(config, taskset)
    scale = score_scale_check({label: _extremes(table.score) for label, table in read.items()}, threshold)
    if scale is not None:
        checks.append(scale)
    tree = _open_tree(config)
    try:
        reuse = test_reuse(run_dir, tree, test_ids)
    finally:
        if tree is not None:
            tree.close()
    diffs = _differences(selectors)

    warnings = []
    if demo:
        warnings.append(
            "Teaching demonstration: the built-in demo's simulated agent. Nothing here is evidence of "
            "a real model's performance."
        )
    missing = [s.label for s in selectors if s.fingerprint is None]
    if missing and len(selectors) > 1:
        warnings.append(
            f"NOT COMPARABLE (cannot be checked): the protocol fingerprint is missing for "
            f"{', '.join(missing)} (written by hermit eval?); only the task count and repeats can be "
            "compared"
        )
    for d in diffs:
        named = [x for x in d.differences if not x.startswith(UNKNOWN)]
        if named:
            warnings.append(f"NOT COMPARABLE: {d.a} and {d.b} differ in {'; '.join(named)}")
    warnings += [f"{c.level.upper()} ({c.code}): {c.message}" for c in checks if c.level != "info"]
    if reuse.note:
        warnings.append(f"Test reuse: {reuse.note}")
    for s in selectors:
        warnings += s.flags
    warnings += [w for s in selectors for w in s.stats.warnings if "no attempt" not in w]  # flags say that already
    warnings += [w for p in pairs for w in p.warnings]
    attempted = {frozenset(s.stats.per_task) for s in selectors if s.stats.n_tasks}
    if len(attempted) > 1:
        warnings.append(
            "The selectors were measured on different sets of test tasks: their means in the results "
            "table are not comparable with each other; the paired comparisons use the tasks both "
            "attempted"
        )
    report = Report(
        hermit_tui_version=__version__,
        config=str(config.path),
        run_name=config.run_name,
        run_dir=str(run_dir),
        demo=demo,
        threshold=threshold,
        dataset_revision=_dataset_revision(selectors),
        splits={"tasks": len(taskset.tasks), **{k: len(taskset.splits.get(k, [])) for k in ("train", "val", "test")}},
        comparable=not diffs,
        differences=diffs,
        warnings=warnings,
        selectors=selectors,
        pairs=pairs,
        checks=checks,
        test_reuse=reuse,
        training=_training(run_dir),
        test_ids=list(test_ids),
        cluster_by=clusters.by if clusters is not None else None,
        n_clusters=clusters.count(test_ids) if clusters is not None else None,
        taxonomy=_taxonomy(
            stored,
            read,
            labels,
            list(test_ids),
            threshold,
            list(label_set) if label_set is not None else list(DEFAULT_LABEL_SET),
        ),
        why=pairs_why(config, _selector_texts(stored, labels), default_pairs(labels), test_ids),
    )
    report.checkpoints = _checkpoints(report.selectors)
    return report, tables


def _checkpoints(selectors: list[SelectorReport]) -> CheckpointCurve | None:
    """The checkpoint curve from the selectors the report measured (no file read again); None without one."""
    points = []
    for s in selectors:
        kind, step = kind_of(s.adapter or s.label)
        points.append(
            CurvePoint(
                label=s.label,
                selector=s.adapter or s.label,
                kind=kind,
                step=0 if kind == "root" else step,
                commit=s.commit,
                mean=s.stats.mean,
                ci_low=s.stats.ci_low,
                ci_high=s.stats.ci_high,
                n_tasks=s.stats.n_tasks,
            )
        )
    return curve_of(points)


def _selector_texts(stored: dict[str, StoredEvaluation], labels: list[str]) -> dict[str, str]:
    """The selector each evaluation was made with (its summary's ``adapter``), else its label."""
    out = {}
    for label in labels:
        summary = stored[label].summary
        out[label] = summary.adapter if summary is not None and summary.adapter else label
    return out


def _extremes(scores: np.ndarray) -> list[float]:
    """The lowest and highest finite score: all that the score-scale check needs to see of a selector's scores."""
    finite = scores[np.isfinite(scores)]
    return [float(finite.min()), float(finite.max())] if len(finite) else []


__all__ = [
    "Report",
    "SelectorReport",
    "TrainingEvidence",
    "build_report",
    "default_labels",
    "sequential_protocol",
    "to_csv",
    "to_json",
    "to_markdown",
]
