"""Review before publishing: what the final card will say, its diff, the warnings to read and the refusals.


:func:`plan_publish` works out, without changing anything, the card as it will be (an Evaluation table with one row
per selector measured under final's protocol), the diff against the checkout's ``CARD.md``, the warnings a reader
must see first and the refusals that make publishing impossible. ``core/publish/apply.py`` carries it out.

This module chooses the rows and assembles the plan; what the card says is ``core.publish.table``, the checks that
refuse or warn are ``core.publish.checks``. Their names are re-exported here, where callers have always found them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from hermit_tui.core.errors import InputError
from hermit_tui.core.present import NO_FINGERPRINT
from hermit_tui.core.publish.card import CARD_NAME, replace_evaluation_section
from hermit_tui.core.publish.checks import collect_warnings, final_evaluation, inspect_checkout, same_adapter, short_sha
from hermit_tui.core.publish.table import (
    TABLE_HEADER,
    TABLE_RULE,
    EvalRow,
    render_publish_table,
    sequential_lines,
    taxonomy_line,
    unified_diff,
)
from hermit_tui.core.records.columns import ERROR, JUDGE_ERROR, read_table
from hermit_tui.core.records.folders import StoredEvaluation, eval_root, list_evaluations
from hermit_tui.core.stats.clusters import Clustering, resolve_clustering
from hermit_tui.core.stats.selector import selector_stats
from hermit_tui.core.workspace.config import Config
from hermit_tui.core.workspace.fingerprint import Fingerprint, differences
from hermit_tui.core.workspace.selectors import label_for, label_of
from hermit_tui.core.workspace.tasks import TaskSet, load_tasks
from hermit_tui.core.workspace.tree import AdapterTree, valid_ref_name

PUBLISH_LOG = ".hermit-tui-publish.jsonl"
DEFAULT_LABELS = ("none", "root", "final")
CONFIRM_WORD = "publish"
UNDO_WORD = "undo"


class PublishPlan(BaseModel):
    """What publishing would do now. Nothing may be published while ``refusals`` is not empty."""

    config: Any = Field(exclude=True, repr=False)
    labels: list[str] = Field(default_factory=list)  # selectors asked for beside none, root and final
    run: str
    tag: str
    branch: str
    checkout: Path
    card_path: Path
    rows: list[EvalRow] = Field(default_factory=list)
    table: str = ""
    current_card: str | None = None
    new_card: str | None = None
    diff: str = ""
    head: str | None = None
    tag_target: str | None = None
    measured_commit: str | None = None
    final_summary: Path | None = None
    message: str | None = None
    warnings: list[str] = Field(default_factory=list)
    refusals: list[str] = Field(default_factory=list)
    taxonomy: bool = False  # asked for: a line with the rows' failure labels under the table (off by default)
    taxonomy_line: str | None = None  # that line, when some row's failures carry labels
    sequential: list[str] = Field(default_factory=list)  # the card's lines on --stop-when-decided decisions

    @property
    def can_publish(self) -> bool:
        return not self.refusals and self.new_card is not None

    @property
    def changes_card(self) -> bool:
        return self.new_card is not None and self.new_card != self.current_card

    @property
    def up_to_date(self) -> bool:
        """The card already holds this evaluation and the tag already points at it: nothing to publish."""
        return (
            self.new_card is not None
            and not self.changes_card
            and self.head is not None
            and self.head == self.tag_target
        )

    def reviewed_state(self) -> tuple[Any, ...]:
        """What a reader confirmed: publishing refuses when any of it changed since."""
        return (
            self.current_card,
            self.new_card,
            self.head,
            self.tag_target,
            self.measured_commit,
            tuple(self.warnings),
            tuple(self.refusals),
        )


# ---------------------------------------------------------------------------------------------------- planning


def _stats(stored: StoredEvaluation, clusters: Clustering | None) -> tuple[Any, dict[str, int]]:
    table = read_table(stored.results_path)
    table.close()  # the figures only
    counts = {"error": table.count_status(ERROR), "judge_error": table.count_status(JUDGE_ERROR)}
    return selector_stats(stored.label, table.attempt_columns(table.ids), table.ids, clusters=clusters), counts


def _row(
    stored: StoredEvaluation, final_fp: Fingerprint | None, is_final: bool, clusters: Clustering | None = None
) -> EvalRow:
    s = stored.summary
    if s is None:  # (rows are chosen among readable evaluations)
        raise InputError(f"{stored.folder}: no readable summary.json ({stored.problem})")
    st, counts = _stats(stored, clusters)
    adapter = s.adapter if label_for(s.adapter) == stored.label else stored.label
    fp = s.fingerprint
    if is_final:
        protocol = [] if fp else [NO_FINGERPRINT]
    else:
        protocol = differences(final_fp, fp) if fp and final_fp else [NO_FINGERPRINT]
    return EvalRow(
        label=stored.label,
        adapter=adapter,
        selector=s.adapter,
        content_hash=s.content_hash,
        commit=s.commit,
        tasks=s.tasks,
        repeats=s.repeats,
        mean=st.mean if st.mean is not None else s.mean_score,
        ci_low=st.ci_low,
        ci_high=st.ci_high,
        ci_method=st.ci_method,
        cluster_by=st.cluster_by,
        n_clusters=st.n_clusters,
        mean_score=s.mean_score,
        solved_once=s.solved_once,
        attempts=st.n_attempts,
        errors=s.errors,
        pipeline_errors=counts["error"],
        judge_errors=counts["judge_error"],
        cost_usd=s.cost_usd,
        unknown_cost_attempts=s.unknown_cost_tasks,
        folder=stored.folder,
        archived_at=stored.archived_at,
        written_by="hermit" if s.written_by_hermit else "hermit-tui",
        protocol=protocol,
        complete=s.is_complete,
        cancelled=bool(s.cancelled),
        smoke_limit=s.smoke_limit,
        retries=s.retries,
    )


def _card_clusters(
    plan: PublishPlan, config: Config, final_fp: Fingerprint | None
) -> tuple[Clustering | None, TaskSet | None]:
    """The clusters of final's launch (``eval --cluster-by`` / ``--cluster-file``, in its fingerprint): the card's
    intervals are clustered as the report's are by default. A mapping that changed since the launch refuses.
    With the task set read for them (None when final was not clustered), so that it is read once."""
    if final_fp is None or final_fp.cluster_by is None:
        return None, None
    taskset = None
    try:
        taskset = load_tasks(config)
        clusters = resolve_clustering(
            taskset.tasks, taskset.test_ids, None, [final_fp.cluster_by], [final_fp.clusters_sha256]
        )
        return clusters, taskset
    except InputError as exc:
        plan.refusals.append(f"the card's intervals cannot be clustered as final was launched: {exc}")
        return None, taskset


def _usable(stored: StoredEvaluation) -> bool:
    s = stored.summary
    return s is not None and s.is_complete and not s.cancelled and not s.is_smoke


def _pick(candidates: list[StoredEvaluation], final_fp: Fingerprint | None) -> StoredEvaluation | None:
    """The current evaluation when it was measured under final's protocol, else the newest archived one that was,
    else the current one (whose mismatch is then a warning)."""
    readable = [c for c in candidates if c.summary is not None]
    if final_fp is not None:
        for c in readable:
            if _usable(c) and c.summary is not None and not differences(final_fp, c.summary.fingerprint):
                return c
    current = [c for c in readable if not c.archived]
    return current[0] if current else None


def plan_publish(config: Config, labels: Sequence[str] | None = None, taxonomy: bool = False) -> PublishPlan:
    """What publishing final's card would do now; changes nothing.

    ``labels`` adds rows for other selectors (a tag such as ``demo/ckpt-step-1`` or its label) beside none, root
    and final. An unknown one is an InputError; a missing none or root is a warning. ``taxonomy`` adds a line with
    the rows' failure labels under the table (when some failure carries one).
    """
    run = config.run_name
    extras = [lab for lab in dict.fromkeys(label_of(t, config) for t in (labels or [])) if lab not in DEFAULT_LABELS]
    run_dir = Path(config.run_dir)
    checkout = run_dir / "checkout"
    plan = PublishPlan(
        config=config,
        labels=list(labels or []),
        run=run,
        tag=f"{run}/final",
        branch=f"refs/heads/{run}",
        checkout=checkout,
        card_path=checkout / CARD_NAME,
        taxonomy=taxonomy,
    )
    if not valid_ref_name(plan.tag):
        plan.refusals.append(f"run name '{run}' cannot name a tag")
        return plan
    try:
        tree = AdapterTree(Path(config.tree_dir))
    except InputError as exc:
        plan.refusals.append(f"no adapter tree: {exc}")
        return plan
    try:
        repo = inspect_checkout(plan, tree)
        try:
            _plan_rest(plan, config, tree, run_dir, extras)
        finally:
            if repo is not None:
                repo.close()
    finally:
        tree.close()
    return plan


def _plan_rest(plan: PublishPlan, config: Config, tree: AdapterTree, run_dir: Path, extras: list[str]) -> None:
    repo = tree.repo
    plan.tag_target = tree.tag_target(plan.tag)
    if plan.tag_target is None:
        plan.refusals.append(f"no tag {plan.tag} in the adapter tree")
    elif plan.head is not None and plan.head != plan.tag_target:
        if same_adapter(repo, plan.tag_target, plan.head):
            plan.warnings.append(
                f"{plan.tag} ({plan.tag_target[:7]}) is not at the head of branch '{plan.run}' "
                f"({plan.head[:7]}), which holds the same adapter with another CARD.md (an undone "
                "publish?): the card goes on top of the branch and the tag moves there"
            )
        else:
            plan.refusals.append(
                f"the final tag is not at the checkout's HEAD: {plan.tag} points at "
                f"{short_sha(plan.tag_target)}, branch '{plan.run}' at {short_sha(plan.head)}"
            )

    if plan.card_path.is_file():
        try:
            plan.current_card = plan.card_path.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            plan.refusals.append(f"{plan.card_path}: not UTF-8 text")
    elif plan.checkout.is_dir():
        plan.refusals.append(f"no {CARD_NAME} in the checkout {plan.checkout} (hermit train writes it)")

    found = list_evaluations(run_dir)
    by_label: dict[str, list[StoredEvaluation]] = {}
    for stored in found:
        by_label.setdefault(stored.label, []).append(stored)
    for label in extras:
        if label not in by_label:
            raise InputError(f"no evaluation of '{label}' under {eval_root(run_dir)}")

    final = final_evaluation(plan, by_label.get("final", []), repo, run_dir)
    final_fp = final.summary.fingerprint if final is not None and final.summary is not None else None
    clusters, taskset = _card_clusters(plan, config, final_fp)

    rows: list[EvalRow] = []
    chosen_by_label: dict[str, StoredEvaluation] = {}
    for label in ["none", "root", *extras, "final"]:
        if label == "final":
            chosen = final
        else:
            chosen = _pick(by_label.get(label, []), final_fp)
            if chosen is None:
                if label in DEFAULT_LABELS:
                    plan.warnings.append(
                        f"no evaluation of {label}: the card has no {label} row "
                        f"{'(the no-adapter baseline)' if label == 'none' else '(the seed)'}"
                    )
                continue
        if chosen is None:
            continue
        try:
            rows.append(_row(chosen, final_fp, label == "final", clusters))
            chosen_by_label[label] = chosen
        except InputError as exc:
            (plan.refusals if label == "final" else plan.warnings).append(f"{label}: {exc}")
            continue
        if chosen.archived:
            plan.warnings.append(
                f"{label}: the current evaluation was measured under another protocol than final; "
                f"the row is the archived one of {chosen.archived_at}, which matches final's"
            )
    plan.rows = rows
    collect_warnings(plan, config, tree, rows, found, final, final_fp)

    final_row = next((r for r in rows if r.label == "final"), None)
    if plan.taxonomy:
        try:
            plan.taxonomy_line = taxonomy_line(rows)
        except InputError as exc:
            plan.warnings.append(f"the failure labels cannot be read: {exc}")
        if plan.taxonomy_line is None:
            plan.warnings.append("no failure of the card's rows carries a label: the card gets no failure-labels line")
    if final_row is not None and plan.current_card is not None:
        summaries = [chosen_by_label[r.label].summary for r in rows if r.label in chosen_by_label]
        if any(s is not None and s.sequential for s in summaries):
            try:
                plan.sequential = sequential_lines(chosen_by_label, rows, (taskset or load_tasks(config)).test_ids)
            except InputError as exc:
                plan.warnings.append(f"the stop-when-decided decisions cannot be recomputed: {exc}")
        plan.table = render_publish_table(rows, plan.taxonomy_line, plan.sequential)
        plan.new_card = replace_evaluation_section(plan.current_card, plan.table)
        plan.diff = unified_diff(plan.current_card, plan.new_card)
        plan.message = (
            f"card: evaluation of {plan.tag} ({final_row.tasks} tasks x {final_row.repeats}, "
            f"mean {final_row.mean:.3f}) [hermit-tui]"
        )


__all__ = [
    "CONFIRM_WORD",
    "DEFAULT_LABELS",
    "PUBLISH_LOG",
    "TABLE_HEADER",
    "TABLE_RULE",
    "UNDO_WORD",
    "EvalRow",
    "PublishPlan",
    "plan_publish",
    "render_publish_table",
    "same_adapter",
    "sequential_lines",
    "taxonomy_line",
    "unified_diff",
]
