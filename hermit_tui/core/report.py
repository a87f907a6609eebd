"""The evaluation report: what the seed says to report, with error bars, paired comparisons and the protocol checks.

``build_report`` reads the current evaluations of a run from disk (hermit-tui's, or ones ``hermit eval`` wrote,
which carry no fingerprint and no extra keys) and computes everything from their results.jsonl; nothing is re-run.
Three renderers: Markdown (warnings first), JSON (the model, with stable keys) and CSV (the per-task table).
Training scores from ``steps.jsonl`` are kept apart and labelled as training evidence: they are never test figures.
"""
from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel

from hermit_tui.core import column_taxonomy
from hermit_tui.core.annotations import DEFAULT_LABEL_SET, Annotation, FailureTaxonomy, read_annotations
from hermit_tui.core.columns import OK, AttemptTable
from hermit_tui.core.config import Config
from hermit_tui.core.errors import InputError
from hermit_tui.core.evalstore import StoredEvaluation, eval_folder, eval_root, list_evaluations
from hermit_tui.core.fingerprint import FIELD_NAMES, Fingerprint, differences
from hermit_tui.core.intervals import method_note
from hermit_tui.core.present import caveats, cost_cell, fixed, interval_text, p_value
from hermit_tui.core.protocol import Check, TestReuse, protocol_checks, score_scale_check, test_reuse
from hermit_tui.core.records import SOLVED_THRESHOLD, SUMMARY_KEYS, AttemptRecord, SequentialEntry
from hermit_tui.core.scores import TaskTable, tabulate
from hermit_tui.core.stats import (
    ESTIMAND,
    SE_METHOD,
    VERDICT_RULE,
    PairStats,
    SelectorStats,
    default_pairs,
    pair_stats,
    selector_stats,
)
from hermit_tui.core.stopping import SEQUENTIAL_RULE, Records, boundary_text, pair_look, sequential_pair
from hermit_tui.core.tasks import TaskSet
from hermit_tui.core.tree import AdapterTree
from hermit_tui.core.version import __version__

FORMAT = "hermit-tui report 1"
NOT_RECORDED = "not recorded"
UNKNOWN = "unknown:"
TRAINING_LABEL = ("TRAINING evidence: rollout scores on the train split while the adapter was being trained. Not test "
                  "evidence, and not comparable with the test figures above.")
_CHECKPOINT = re.compile(r"_(?:ckpt-(step|epoch)-(\d+)|bootstrap)$")


class SelectorReport(BaseModel):
    """One evaluated selector: hermit's summary, the statistics and what to be careful about."""

    label: str
    folder: str
    adapter: str | None  # the selector as typed
    commit: str | None  # the commit measured (null for none and directories)
    content_hash: str | None  # a directory selector's content
    written_by: str  # "hermit-tui", "hermit eval" (no extras), or "unknown" (no summary.json)
    summary: dict[str, Any] | None  # hermit's ten keys
    fingerprint: Fingerprint | None
    stats: SelectorStats
    errors: int  # error + judge_error attempts
    known_cost_usd: float
    unknown_cost_attempts: int
    smoke_limit: int | None
    complete: bool
    retries: int
    flags: list[str]
    sequential: SequentialEntry | None = None  # summary.json's entry of a --stop-when-decided launch


class Difference(BaseModel):
    a: str
    b: str
    differences: list[str]


class TrainingStep(BaseModel):
    step: int | None
    epoch: int | None
    tasks: int | None
    mean_score: float | None
    bootstrap: bool = False


class TrainingEvidence(BaseModel):
    label: str = TRAINING_LABEL
    source: str
    steps: list[TrainingStep]
    skipped_lines: int = 0


class Report(BaseModel):
    format: str = FORMAT
    hermit_tui_version: str
    config: str
    run_name: str
    run_dir: str
    demo: bool
    threshold: float
    dataset_revision: str
    splits: dict[str, int]  # tasks, train, val, test
    comparable: bool
    differences: list[Difference]
    warnings: list[str]
    selectors: list[SelectorReport]
    pairs: list[PairStats]
    checks: list[Check]
    test_reuse: TestReuse
    training: TrainingEvidence | None
    test_ids: list[str]
    taxonomy: FailureTaxonomy | None = None  # hand labels from the triage (core/annotations.py)


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


def _selector(stored: StoredEvaluation, records: list[AttemptRecord] | AttemptTable, skipped: list[str],
              test_ids: list[str], threshold: float, table: TaskTable | None = None) -> SelectorReport:
    s = stored.summary
    grouped = (table if table is not None else records.attempt_columns(test_ids) if isinstance(records, AttemptTable)
               else records)
    stats = selector_stats(stored.label, grouped, test_ids, threshold)
    known, unknown = _costs(records)
    errors = (records.n - records.count_status(OK) if isinstance(records, AttemptTable)
              else sum(r.status != "ok" for r in records))
    flags = list(skipped)
    if s is None:
        written_by, complete = "unknown", False
        flags.append(f"{stored.label}: {stored.problem or 'no summary.json'}")
    else:
        written_by = "hermit eval" if s.written_by_hermit else "hermit-tui"
        expected = s.expected_attempts or s.tasks * s.repeats
        complete = s.is_complete and len(records) >= expected and not s.cancelled
        flags += [f"{stored.label}: {caveat}" for caveat in caveats(
            smoke=s.is_smoke, smoke_limit=s.smoke_limit, done=len(records), expected=expected, complete=complete,
            cancelled=bool(s.cancelled), retries=s.retries)]
    if stats.n_missing and (s is None or not s.is_smoke):
        flags.append(f"{stored.label}: {stats.n_missing} test tasks have no attempt")
    if stats.nonfinite_scores:
        flags.append(f"{stored.label}: {stats.nonfinite_scores} attempts have a score that is not a finite number "
                     "(NaN or infinity), counted as 0")
    if stats.n_ignored:
        flags.append(f"{stored.label}: {stats.n_ignored} attempts ignored (ids outside the test split, or "
                     "repeated)")
    return SelectorReport(
        label=stored.label, folder=str(stored.folder), adapter=s.adapter if s else None,
        commit=s.commit if s else None, content_hash=s.content_hash if s else None, written_by=written_by,
        summary={k: getattr(s, k) for k in SUMMARY_KEYS} if s else None,
        fingerprint=s.fingerprint if s else None, stats=stats,
        errors=errors, known_cost_usd=known, unknown_cost_attempts=unknown,
        smoke_limit=s.smoke_limit if s else None, complete=complete, retries=(s.retries or 0) if s else 0,
        flags=flags, sequential=s.sequential if s else None)


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


def _sequential(pair: PairStats, stored: dict[str, StoredEvaluation], records: Mapping[str, Records],
                test_ids: list[str]) -> PairStats:
    """A candidate and its baseline of a --stop-when-decided launch: the sequential test's interval and decision
    (recomputed from the records, core.stopping); other pairs as they are, with a note when the launch compared
    them only with the baseline."""
    a, b = pair.a, pair.b
    look, notes = pair_look(a, stored[a].summary, records[a], b, stored[b].summary, records[b], test_ids)
    if look is not None:
        pair = sequential_pair(pair, look)
    return pair.model_copy(update=dict(warnings=[*pair.warnings, *notes])) if notes else pair


def _differences(selectors: list[SelectorReport]) -> list[Difference]:
    out = []
    for i, a in enumerate(selectors):
        for b in selectors[i + 1:]:
            found = differences(a.fingerprint, b.fingerprint)
            if a.fingerprint is None or b.fingerprint is None:
                missing = [x.label for x in (a, b) if x.fingerprint is None]
                found = [f"{UNKNOWN} the protocol fingerprint is missing for {' and '.join(missing)} (written by "
                         "hermit eval?), so the protocol cannot be checked"]
                if a.summary and b.summary:
                    found += [f"the {key} ({a.summary[key]} vs {b.summary[key]})" for key in ("tasks", "repeats")
                              if a.summary[key] != b.summary[key]]
            if found:
                out.append(Difference(a=a.label, b=b.label, differences=found))
    return out


def _dataset_revision(selectors: list[SelectorReport]) -> str:
    found = {s.fingerprint.dataset_revision for s in selectors
             if s.fingerprint and s.fingerprint.dataset_revision is not None}
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
            steps.append(TrainingStep(
                step=rec.get("step"), epoch=rec.get("epoch"),
                tasks=len(tasks) if isinstance(tasks, list) else tasks if isinstance(tasks, int) else None,
                mean_score=float(mean) if isinstance(mean, (int, float)) and math.isfinite(mean) else None,
                bootstrap=bool(rec.get("bootstrap"))))
        except (ValueError, AttributeError, TypeError):
            skipped += 1
    return TrainingEvidence(source=str(path), steps=steps, skipped_lines=skipped)


def _open_tree(config: Config) -> AdapterTree | None:
    try:
        return AdapterTree(config.tree_dir)
    except InputError:
        return None


def _taxonomy(stored: dict[str, StoredEvaluation], tables: dict[str, AttemptTable], labels: list[str],
              test_ids: list[str], threshold: float, label_set: Sequence[str]) -> FailureTaxonomy:
    """Attempts per label per selector, and per default pair the tasks fixed or introduced, from each evaluation's
    annotations.jsonl (an unreadable one is a warning, not a failure of the report), computed from the columns
    (``core.column_taxonomy``)."""
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
    selectors = [column_taxonomy.selector_taxonomy(label, tables[label], notes[label], threshold, label_set, test_ids,
                                                   live=live[label])
                 for label in labels]
    for t in selectors:
        if t.stale:
            warnings.append(f"{t.label}: {t.stale} annotations were made on earlier attempts, re-run since; they are "
                            "not counted")
    pairs = [column_taxonomy.pair_taxonomy(a, tables[a], notes[a], b, tables[b], notes[b], label_set, test_ids,
                                           threshold, live_a=live[a], live_b=live[b])
             for a, b in default_pairs(labels)]
    return FailureTaxonomy(threshold=threshold, label_set=list(label_set), selectors=selectors, pairs=pairs,
                           warnings=warnings)


def build_report(config: Config, taskset: TaskSet, labels: list[str] | None, threshold: float = SOLVED_THRESHOLD,
                 label_set: Sequence[str] | None = None, *, smoke: bool = False, demo: bool = False) -> Report:
    """The report over the current evaluations ``labels`` (eval folder names; None: all of them, in report order).
    ``label_set``: the run's triage labels (hermit-tui's settings), used to order the taxonomy. Smoke subsets
    (``eval/<label>/smoke/``) are never among them, unless ``smoke``: then only they are. ``demo``: the run is the
    built-in teaching demonstration (the caller knows: ``hermit_tui.demo.is_demo_config``), which the report says
    first."""

    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not math.isfinite(threshold):
        raise InputError(f"--threshold must be a finite number, got {threshold!r}")
    threshold = float(threshold)
    run_dir = config.run_dir
    stored = {s.label: s for s in list_evaluations(run_dir, include_archived=False,
                                                   which="smoke" if smoke else "full")}
    kind = "smoke subset" if smoke else "evaluation"
    if not stored:
        raise InputError(f"{eval_root(run_dir)}: no {kind}s to report (run `hermit-tui eval"
                         f"{' --limit N' if smoke else ''}` first)")
    if labels is None:
        labels = default_labels(list(stored.values()), config.run_name)
    labels = list(dict.fromkeys(labels))
    for label in labels:
        if label not in stored:
            raise InputError(f"{eval_folder(run_dir, label, smoke=smoke)}: no {kind} of '{label}' "
                             f"(evaluated: {', '.join(sorted(stored))})")
    if not labels:
        raise InputError("no selector to report")
    test_ids = taskset.test_ids
    read: dict[str, AttemptTable] = {}
    try:
        return _build(config, taskset, labels, threshold, label_set, stored, read, test_ids, demo)
    finally:
        for table in read.values():
            table.close()


def _build(config: Config, taskset: TaskSet, labels: list[str], threshold: float, label_set: Sequence[str] | None,
           stored: dict[str, StoredEvaluation], read: dict[str, AttemptTable], test_ids: list[str], demo: bool
           ) -> Report:
    """build_report's figures from the evaluations' columns (``read`` collects the tables, for the caller to
    close)."""
    run_dir = config.run_dir
    tables = {}
    selectors = []
    for label in labels:
        read[label] = table = stored[label].load_table()
        tables[label] = tabulate(table.attempt_columns(test_ids), test_ids, threshold)  # grouped once
        selectors.append(_selector(stored[label], table, table.skipped, test_ids, threshold, tables[label]))
    pairs = [pair_stats(a, tables[a], b, tables[b], test_ids, threshold)
             for a, b in [*default_pairs(labels), *_monitored_pairs(labels, stored)]]
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
        warnings.append("Teaching demonstration: the built-in demo's simulated agent. Nothing here is evidence of "
                        "a real model's performance.")
    missing = [s.label for s in selectors if s.fingerprint is None]
    if missing and len(selectors) > 1:
        warnings.append(f"NOT COMPARABLE (cannot be checked): the protocol fingerprint is missing for "
                        f"{', '.join(missing)} (written by hermit eval?); only the task count and repeats can be "
                        "compared")
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
        warnings.append("The selectors were measured on different sets of test tasks: their means in the results "
                        "table are not comparable with each other; the paired comparisons use the tasks both "
                        "attempted")
    return Report(
        hermit_tui_version=__version__, config=str(config.path), run_name=config.run_name, run_dir=str(run_dir),
        demo=demo, threshold=threshold, dataset_revision=_dataset_revision(selectors),
        splits={"tasks": len(taskset.tasks), **{k: len(taskset.splits.get(k, [])) for k in ("train", "val", "test")}},
        comparable=not diffs, differences=diffs, warnings=warnings, selectors=selectors, pairs=pairs, checks=checks,
        test_reuse=reuse, training=_training(run_dir), test_ids=list(test_ids),
        taxonomy=_taxonomy(stored, read, labels, list(test_ids), threshold,
                           list(label_set) if label_set is not None else list(DEFAULT_LABEL_SET)))


def _extremes(scores: np.ndarray) -> list[float]:
    """The lowest and highest finite score: all that the score-scale check needs to see of a selector's scores."""
    finite = scores[np.isfinite(scores)]
    return [float(finite.min()), float(finite.max())] if len(finite) else []


# ---------------------------------------------------------------------------------------------------- rendering


def _f(x: float | None, digits: int = 4) -> str:
    return fixed(x, digits)


def _ci(lo: float | None, hi: float | None, digits: int = 4) -> str:
    return interval_text(lo, hi, digits)


def _g(x: float) -> str:
    return f"{x:.1f}" if float(x).is_integer() else f"{x:g}"


_p = p_value  # 3 decimals; 4 around 0.05, so that a p-value above 0.05 never reads as 0.050


def _cell(value: Any) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    out = ["| " + " | ".join(map(_cell, header)) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(map(_cell, row)) + " |" for row in rows]
    return out


_cost = cost_cell  # an unknown cost reads "unknown", never 0


def to_markdown(report: Report) -> str:
    """The report as Markdown: warnings first, then the protocol, the results, the comparisons and the checks."""
    r = report
    out = [f"# Evaluation report: {r.run_name}", "",
           f"Config `{r.config}`; run folder `{r.run_dir}`; hermit-tui {r.hermit_tui_version}. Every figure below is "
           "measured on the test split unless labelled otherwise.", "", "## Warnings", ""]
    out += [f"- {w}" for w in r.warnings] or ["None."]
    out += ["", "## Protocol", ""]
    repeats = sorted({s.summary["repeats"] for s in r.selectors if s.summary})
    out += _table(["", ""], [
        ["dataset revision", r.dataset_revision],
        ["split sizes", f"test {r.splits['test']}, train {r.splits['train']}, val {r.splits['val']} "
                        f"(task file: {r.splits['tasks']} tasks)"],
        ["repeats", ", ".join(map(str, repeats)) or "—"],
        ["success threshold", _g(r.threshold) + (" (hermit's)" if r.threshold == SOLVED_THRESHOLD
                                                     else " (set for this report; the files keep hermit's 1.0)")],
        ["comparable", "yes: every selector shares one protocol fingerprint" if r.comparable
                       else "NO: see Comparability"],
        *([["stop when decided", text] for text in [sequential_protocol(r)] if text]),
    ])
    out += ["", "## Results on the test split", ""]
    rows = []
    unequal = any(s.stats.repeats is None and s.stats.n_tasks for s in r.selectors)
    for s in r.selectors:
        st = s.stats
        k = st.repeats if st.repeats is not None else f"{st.repeats_min}-{st.repeats_max}"
        commit = (s.commit or "")[:12] or (f"dir {s.content_hash[:12]}" if s.content_hash else "—")
        row = [s.label, s.adapter or "—", commit, st.n_tasks, k, _f(st.mean), _ci(st.ci_low, st.ci_high),
               st.ci_method or "—"]
        if unequal:
            row.append(_f(st.attempt_mean))
        once_low, once_high = st.solved_once_ci or (None, None)
        rows.append(row + [_f(st.solved_once, 3), _ci(once_low, once_high, digits=3),
                           _f(st.pass_k, 3), s.errors, f"{s.known_cost_usd:.4f}", s.unknown_cost_attempts,
                           s.written_by])
    out += _table(["selector", "adapter", "commit measured", "tasks", "repeats", "mean score", "95% CI",
                   "CI method", *(["hermit's mean_score (over attempts)"] if unequal else []),
                   f"solved once (>= {_g(r.threshold)})", "Wilson 95% CI", "pass^k", "errors", "known cost (USD)",
                   "unknown-cost attempts", "written by"], rows)
    notes = [f"- {s.label}: {text}" for s in r.selectors for text in (s.stats.rule_of_three, s.stats.lever_note)
             if text]
    if notes:
        out += ["", *notes]
    methods = method_note([s.stats.ci_method for s in r.selectors])
    out += ["", f"Mean score: {ESTIMAND}. 95% CI ({_methods_by_selector(r.selectors)}): {methods}; "
            f"{SE_METHOD}. Solved once and pass^k: shares of all {r.splits['test']} test tasks (hermit's "
            "denominator), Wilson 95% intervals.", "",
            "### hermit's summaries", ""]
    out += _table(["selector", *SUMMARY_KEYS], [
        [s.label, *(("—" if s.summary[k] is None else s.summary[k]) for k in SUMMARY_KEYS)] if s.summary
        else [s.label, *(["(no summary.json)"] + ["—"] * (len(SUMMARY_KEYS) - 1))] for s in r.selectors])
    out += ["", "## Paired comparisons (test split)", ""]
    if not r.pairs:
        out += ["One selector: nothing to compare.", ""]
    if r.pairs:
        out += [f"Verdict rule: {VERDICT_RULE}. Differences are b - a of task means, on the tasks both attempted.",
                ""]
        if any(p.sequential for p in r.pairs):
            out += [f"Verdict rule for a candidate and its baseline: {SEQUENTIAL_RULE}.", ""]
    for p in r.pairs:
        counts = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in p.transition_counts.items())
        out += [f"### {p.b} vs {p.a}", "", f"**Verdict:** {p.verdict}", ""]
        sign = (_p(p.sign_test_p) if p.sign_test_p is not None or not p.unequal_repeats
                else "— (not valid with unequal repeats)")
        out += _table(["", ""], [
            ["paired tasks", p.n_paired],
            ["mean difference", _f(p.mean_diff)],
            ["95% CI", _ci(p.ci_low, p.ci_high) + (f" ({p.method})" if p.ci_method else "")],
            ["p-value", f"{_p(p.p_value)} ({p.test})"],
            ["sign test p", sign],
            ["wins / losses / ties", f"{p.wins} / {p.losses} / {p.ties}"],
            ["transitions", counts],
            ["minimum detectable difference", f"{_f(p.mde)} ({p.mde_method})" if p.mde is not None else "—"],
            *([["sequential boundary", boundary_text(p.sequential)]] if p.sequential else []),
        ])
        if p.n_unpaired:
            out += ["", f"Left out (attempted by only one of the two): {', '.join(p.unpaired)}"]
        out.append("")
    out += _taxonomy_markdown(r)
    out += ["## Comparability", ""]
    if r.comparable:
        out.append("Every selector shares one protocol fingerprint (test ids and rows, judge, pipeline, params, model, "
                   "repeats).")
    else:
        out += [f"- **{d.a} vs {d.b}**: {'; '.join(d.differences)}" for d in r.differences]
    fields = list(FIELD_NAMES)
    out += ["", *_table(["selector", *fields], [
        [s.label, *(_short(s.fingerprint.field(f)) for f in fields)] if s.fingerprint
        else [s.label, "missing (written by hermit eval)" if s.written_by == "hermit eval" else "missing",
              *["—"] * (len(fields) - 1)] for s in r.selectors])]
    out += ["", "## Protocol checks", ""]
    out += [f"- **{c.level}** ({c.code}): {c.message}" for c in r.checks] or ["No finding."]
    out += ["", "## Test reuse", ""]
    reuse = r.test_reuse
    out.append(f"{reuse.adapters} different adapter{'s' * (reuse.adapters != 1)} of this run "
               f"({reuse.non_final} besides final) were evaluated on this test split, in {reuse.evaluations} "
               f"evaluation{'s' * (reuse.evaluations != 1)} (archived ones included).")
    if reuse.note:
        out += ["", f"**{reuse.note}.**"]
    out += ["", "## Training evidence (TRAINING, not test)", ""]
    if r.training is None or not r.training.steps:
        out.append("No steps.jsonl with training scores in the run folder.")
    else:
        out += [r.training.label, "", *_table(["step", "epoch", "train tasks", "training mean score"], [
            [t.step, t.epoch, t.tasks, _f(t.mean_score)] for t in r.training.steps])]
    return "\n".join(out).rstrip() + "\n"


def _tasks(ids: list[str], most: int = 12) -> str:
    return ", ".join(ids[:most]) + (f", … ({len(ids) - most} more)" if len(ids) > most else "") if ids else "—"


def _taxonomy_markdown(r: Report) -> list[str]:
    """The "Failure taxonomy" section: attempts per label per selector, then per pair the tasks fixed/introduced."""
    t = r.taxonomy
    out = ["## Failure taxonomy", ""]
    if t is None:
        return out + ["Not computed.", ""]
    labels = [s.label for s in t.selectors]
    out += [f"Labels assigned by hand in hermit-tui's triage ({t.source}); counts are attempts. A failure is "
            f"{t.failure} ({_g(t.threshold)}).", ""]
    out += [f"- {w}" for w in t.warnings] + ([""] if t.warnings else [])
    names: dict[str, int] = {}
    for s in t.selectors:
        for name, n in s.counts.items():
            names[name] = names.get(name, 0) + n
    rank = {name: i for i, name in enumerate(t.label_set)}
    ordered = sorted(names, key=lambda name: (-names[name], rank.get(name, len(rank)), name))
    rows = [[name, *(s.counts.get(name, 0) for s in t.selectors)] for name in ordered]
    rows += [["*failures*", *(s.failures for s in t.selectors)],
             ["*failures with a label*", *(s.labelled_failures for s in t.selectors)],
             ["*failures without a label*", *(s.failures - s.labelled_failures for s in t.selectors)]]
    if any(s.corrected for s in t.selectors):
        rows.append(["*corrected scores*", *(s.corrected for s in t.selectors)])
    out += _table(["label", *labels], rows)
    if not ordered:
        out += ["", "No attempt carries a label yet (`hermit-tui annotate`, or 1-9 in the dashboard)."]
    corrected = [s for s in t.selectors if s.corrected_mean is not None]
    if corrected:
        out += ["", "With the corrected scores in place of the judge's (the files and every figure above keep the "
                "judge's):", ""]
        out += [f"- {s.label}: mean {_f(s.corrected_mean)} with {s.corrected} corrected score"
                f"{'s' * (s.corrected != 1)} (recorded {_f(s.recorded_mean)})" for s in corrected]
    for p in t.pairs:
        if not p.labels:
            continue
        out += ["", f"### Labels: {p.b} vs {p.a}", "",
                f"Per label, on the tasks both attempted (a task carries a label when one of its attempts does): "
                f"fixed = under {p.a}, not under {p.b}; introduced = under {p.b}, not under {p.a}; not triaged = on "
                "one side only while the other side's failures on the task carry no label yet.", ""]
        out += _table(["label", f"tasks ({p.a})", f"tasks ({p.b})", "fixed", "introduced", "not triaged",
                       "fixed tasks", "introduced tasks"],
                      [[c.label, c.a_tasks, c.b_tasks, len(c.fixed), len(c.introduced), len(c.untriaged),
                        _tasks(c.fixed), _tasks(c.introduced)] for c in p.labels])
    return out + [""]


def sequential_protocol(r: Report) -> str:
    """The protocol row of a --stop-when-decided launch: baseline, rounds run of the maximum, method."""
    entries = [(s.label, s.sequential) for s in r.selectors if s.sequential is not None]
    if not entries:
        return ""
    launches: dict[tuple[str, int, int, float | None], list[str]] = {}
    for label, e in entries:
        launches.setdefault((e.baseline, e.rounds, e.max_rounds, e.margin), []).append(label)
    parts = []
    for (baseline, rounds, most, margin), labels in launches.items():
        run = "stopped when decided" if rounds < most else "ran every round"
        parts.append(f"{', '.join(x for x in labels if x != baseline) or 'no candidate'} against baseline "
                     f"{baseline}: {rounds} of at most {most} rounds ({run})"
                     + (f", equivalence margin ±{margin:g}" if margin is not None else ""))
    return "; ".join(parts) + f". Method: {entries[0][1].method}, alpha {entries[0][1].alpha:g}."


def _methods_by_selector(selectors: list[SelectorReport]) -> str:
    """Which interval method each selector's row used, e.g. ``none, root: score; final: no-spread``."""
    by: dict[str, list[str]] = {}
    for s in selectors:
        by.setdefault(s.stats.ci_method or "none", []).append(s.label)
    return "; ".join(f"{', '.join(labels)}: {m}" for m, labels in by.items())


def _short(value: Any) -> str:
    if value is None:
        return "—"
    text = str(value)
    return text[:12] if re.fullmatch(r"[0-9a-f]{64}", text) else text


def to_json(report: Report) -> str:
    """The whole report as JSON; the keys are the model's fields, in a fixed order."""
    return report.model_dump_json(indent=1) + "\n"


def _num(x: float | None) -> str:
    return "" if x is None else repr(float(x))


def _text_cell(value: Any) -> str:
    """A text cell a spreadsheet will not run as a formula: one starting with = + - @ (or a tab or carriage return
    before one) gets a leading apostrophe."""
    text = str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def to_csv(report: Report) -> str:
    """The per-task table: task id, then per selector mean, sd, n, solved_once, then per default pair b - a."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    header = ["task_id"]
    for s in report.selectors:
        header += [f"{s.label}_mean", f"{s.label}_sd", f"{s.label}_n", f"{s.label}_solved_once"]
    header += [f"{p.b}_minus_{p.a}" for p in report.pairs]
    writer.writerow([_text_cell(h) for h in header])
    per = {s.label: s.stats.per_task for s in report.selectors}
    for tid in report.test_ids:
        row: list[str] = [_text_cell(tid)]
        for s in report.selectors:
            ts = per[s.label].get(tid)
            row += ["", "", "0", ""] if ts is None else [_num(ts.mean), _num(ts.sd), str(ts.n), str(int(ts.solved > 0))]
        for p in report.pairs:
            a, b = per[p.a].get(tid), per[p.b].get(tid)
            row.append("" if a is None or b is None else _num(b.mean - a.mean))
        writer.writerow(row)
    return buf.getvalue()


__all__ = ["Report", "SelectorReport", "TrainingEvidence", "build_report", "default_labels", "sequential_protocol",
           "to_csv", "to_json", "to_markdown"]
