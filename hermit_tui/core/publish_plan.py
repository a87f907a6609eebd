"""Review before publishing: what the final card will say, its diff, the warnings to read and the refusals.

:func:`plan_publish` works out, without changing anything, the card as it will be (an Evaluation table with one row
per selector measured under final's protocol), the diff against the checkout's ``CARD.md``, the warnings a reader
must see first and the refusals that make publishing impossible. ``core/publish.py`` carries it out.
"""
from __future__ import annotations

import difflib
import hashlib
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, TypeGuard

import git
from pydantic import BaseModel, Field

from hermit_tui.core.card import CARD_NAME, checkout_branch, replace_evaluation_section, split_lines
from hermit_tui.core.columns import ERROR, JUDGE_ERROR, read_table
from hermit_tui.core.config import Config
from hermit_tui.core.errors import InputError
from hermit_tui.core.evalstore import StoredEvaluation, eval_root, list_evaluations
from hermit_tui.core.fingerprint import Fingerprint, differences
from hermit_tui.core.intervals import METHOD_TEXT
from hermit_tui.core.present import caveats, incomplete_caveat, partial_cost, smoke_caveat
from hermit_tui.core.records import SOLVED_THRESHOLD
from hermit_tui.core.selectors import MANIFEST, directory_hash, label_for
from hermit_tui.core.stats import selector_stats
from hermit_tui.core.tasks import load_tasks
from hermit_tui.core.tree import ROOT_TAG, AdapterTree, valid_ref_name

PUBLISH_LOG = ".hermit-tui-publish.jsonl"
DEFAULT_LABELS = ("none", "root", "final")
CONFIRM_WORD = "publish"
UNDO_WORD = "undo"
TABLE_HEADER = ("| Adapter | Commit | Tasks | Repeats | Mean score [95% CI] | Solved at least once | Errors "
                "| Cost (USD) |")
TABLE_RULE = "|---|---|---|---|---|---|---|---|"
NOT_RECORDED = "no protocol fingerprint"
_SHA = re.compile(r"[0-9a-f]{40}")


class EvalRow(BaseModel):
    """One row of the published Evaluation table, with where it was read from."""

    label: str
    adapter: str  # as the card names it: the selector as typed, or a directory's label
    selector: str  # as typed when it was evaluated
    content_hash: str | None = None  # an adapter directory's content when it was measured
    commit: str | None
    tasks: int
    repeats: int
    mean: float  # the task mean (core.stats.ESTIMAND): hermit's mean_score when every task has the same repeats
    ci_low: float | None
    ci_high: float | None
    ci_method: str | None = None  # "t", "score" or "no-spread" (core.intervals)
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
        ci = f" [{self.ci_low:.3f}, {self.ci_high:.3f}]" if self.ci_low is not None else ""
        cost = partial_cost(self.cost_usd, self.unknown_cost_attempts, dollars=False)
        return [self.adapter, self.commit[:7] if self.commit else "—", str(self.tasks), str(self.repeats),
                f"{self.mean:.3f}{ci}", f"{self.solved_once:.3f}", str(self.errors), cost]


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
        return (self.new_card is not None and not self.changes_card and self.head is not None
                and self.head == self.tag_target)

    def reviewed_state(self) -> tuple[Any, ...]:
        """What a reader confirmed: publishing refuses when any of it changed since."""
        return (self.current_card, self.new_card, self.head, self.tag_target, self.measured_commit,
                tuple(self.warnings), tuple(self.refusals))


# ---------------------------------------------------------------------------------------------------- the table

def taxonomy_line(rows: Sequence[EvalRow]) -> str | None:
    """One paragraph with each row's failure labels (from its evaluation's annotations.jsonl), or None when no
    failure of any row carries a label. Failures: error/judge_error or a score below hermit's 1.0."""
    from hermit_tui.core.annotations import read_annotations
    from hermit_tui.core.column_taxonomy import selector_taxonomy
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
    return ("Failure labels (assigned by hand while reading the failures, with hermit-tui; a reading aid, not a "
            "measurement): " + "; ".join(parts) + ".")


def render_publish_table(rows: Sequence[EvalRow], extra: str | None = None, sequential: Sequence[str] = ()) -> str:
    """The Markdown body of the Evaluation section: the table, then one paragraph saying how to read it (one on the
    decisions of a --stop-when-decided launch, ``sequential``: see :func:`sequential_lines`; and ``extra``, a
    paragraph of its own, when given)."""
    lines = [TABLE_HEADER, TABLE_RULE] + ["| " + " | ".join(r.cells()) + " |" for r in rows]
    final = next((r for r in rows if r.label == "final"), None)
    others = [r for r in rows if r.protocol and r is not final]
    if final is not None and final.protocol:
        protocol = ("Protocols not checked: final was measured by hermit eval, which records no protocol "
                    "fingerprint.")
    elif others:
        protocol = ("Not shown to share final's protocol: "
                    + "; ".join(f"{r.adapter} ({', '.join(r.protocol)})" for r in others) + ".")
    else:
        protocol = ("All rows share final's protocol (test tasks, judge, pipeline, agent params, model settings, "
                    "repeats).")
    by_method: dict[str, list[str]] = {}
    for r in rows:
        if r.ci_method:
            by_method.setdefault(r.ci_method, []).append(r.adapter)
    methods = "; ".join(f"{METHOD_TEXT[m]} for {', '.join(names)}" for m, names in by_method.items())
    differ = [f"{r.adapter} {r.mean_score:.3f}" for r in rows
              if r.mean_score is not None and abs(r.mean_score - r.mean) > 5e-4]
    hermit = (f" With unequal repeats it differs from hermit's mean_score over attempts ({', '.join(differ)})."
              if differ else "")
    note = ("Mean score: the mean over test tasks of each task's mean score, failed attempts scored 0 (hermit's "
            f"mean_score when every task has the same repeats).{hermit} 95% CI, with the task as the unit of "
            f"sampling and never beyond the score range: {methods or 'none'}. Solved at least once: share of test "
            f"tasks with an attempt scoring at least {SOLVED_THRESHOLD}. Commit: the adapter version measured. "
            f"{protocol}")
    if sequential:
        note += ("\n\nStopped when decided (group-sequential repeated confidence intervals, Lan-DeMets O'Brien-"
                 "Fleming-type alpha spending over the planned rounds; Jennison & Turnbull 2000): "
                 + "; ".join(sequential) + ". The decisions and their intervals stay valid although the launch "
                 "stopped on what it saw; the per-adapter intervals in the table are the fixed design's.")
    return "\n".join(lines) + "\n\n" + note + (f"\n\n{extra}" if extra else "")


def sequential_lines(chosen: dict[str, StoredEvaluation], rows: Sequence[EvalRow], task_ids: Sequence[str]
                     ) -> list[str]:
    """One phrase per candidate on the card whose baseline is on the card too, from one --stop-when-decided
    launch: the difference with its repeated 95% interval and the decision, recomputed from the records."""
    from hermit_tui.core.stopping import pair_look

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
        look, _ = pair_look(entry.baseline, base.summary, table_b.keyed(light=True), row.label, s,
                            table_c.keyed(light=True), task_ids)
        if look is None or look.mean_diff is None or look.ci_low is None:
            continue
        decision = {"improvement": "an improvement", "regression": "a regression"}.get(look.decision, "undecided")
        if look.decision == "equivalent":
            decision = f"equivalent within ±{look.margin:g}"
        out.append(f"{names[row.label]} − {names[entry.baseline]} {look.mean_diff:+.3f} [{look.ci_low:.3f}, "
                   f"{look.ci_high:.3f}]: {decision} (after {look.rounds} of at most {look.max_rounds} rounds)")
    return out


def unified_diff(old: str, new: str) -> str:
    """``git diff``-style text of CARD.md before and after (LF-only line splitting, as the card is written)."""
    return "".join(difflib.unified_diff(split_lines(old), split_lines(new), f"a/{CARD_NAME}", f"b/{CARD_NAME}"))


# ---------------------------------------------------------------------------------------------------- git helpers

def _is_sha(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and bool(_SHA.fullmatch(value))


def _is_ancestor(repo: git.Repo, a: str, b: str) -> bool:
    try:
        repo.git.merge_base("--is-ancestor", a, b)
    except git.GitCommandError:
        return False
    return True


def _identity(repo: git.Repo, sha: str, cache: dict[str, str] | None = None) -> str:
    """A hash of a commit's files except CARD.md: two commits that differ only in the card are one adapter."""
    cache = {} if cache is None else cache
    if sha not in cache:
        entries = [e for e in repo.git.ls_tree("-r", "-z", sha).split("\0") if e and e.split("\t", 1)[-1] != CARD_NAME]
        cache[sha] = hashlib.sha256("\0".join(entries).encode()).hexdigest()
    return cache[sha]


def same_adapter(repo: git.Repo, a: str, b: str) -> bool:
    """Whether two commits hold the same adapter: the same files, CARD.md aside (so a card commit on top of a
    measured commit is that adapter)."""
    if a == b:
        return True
    if not (_is_sha(a) and _is_sha(b)):
        return False
    try:
        return _identity(repo, a) == _identity(repo, b)
    except git.GitCommandError:
        return False


def _short(sha: str | None) -> str:
    return str(sha)[:12] if sha else "nothing"


# ---------------------------------------------------------------------------------------------------- planning

def _stats(stored: StoredEvaluation) -> tuple[Any, dict[str, int]]:
    table = read_table(stored.results_path)
    table.close()  # the figures only
    counts = {"error": table.count_status(ERROR), "judge_error": table.count_status(JUDGE_ERROR)}
    return selector_stats(stored.label, table.attempt_columns(table.ids), table.ids), counts


def _row(stored: StoredEvaluation, final_fp: Fingerprint | None, is_final: bool) -> EvalRow:
    s = stored.summary
    if s is None:  # (rows are chosen among readable evaluations)
        raise InputError(f"{stored.folder}: no readable summary.json ({stored.problem})")
    st, counts = _stats(stored)
    adapter = s.adapter if label_for(s.adapter) == stored.label else stored.label
    fp = s.fingerprint
    if is_final:
        protocol = [] if fp else [NOT_RECORDED]
    else:
        protocol = differences(final_fp, fp) if fp and final_fp else [NOT_RECORDED]
    return EvalRow(label=stored.label, adapter=adapter, selector=s.adapter, content_hash=s.content_hash,
                   commit=s.commit, tasks=s.tasks, repeats=s.repeats,
                   mean=st.mean if st.mean is not None else s.mean_score, ci_low=st.ci_low, ci_high=st.ci_high,
                   ci_method=st.ci_method, mean_score=s.mean_score, solved_once=s.solved_once,
                   attempts=st.n_attempts, errors=s.errors, pipeline_errors=counts["error"],
                   judge_errors=counts["judge_error"], cost_usd=s.cost_usd, unknown_cost_attempts=s.unknown_cost_tasks,
                   folder=stored.folder, archived_at=stored.archived_at,
                   written_by="hermit" if s.written_by_hermit else "hermit-tui", protocol=protocol,
                   complete=s.is_complete, cancelled=bool(s.cancelled), smoke_limit=s.smoke_limit, retries=s.retries)


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


def _label_of(text: str) -> str:
    label = label_for(str(text).strip())
    if not label or label in (".", "..") or "\\" in label or label.startswith("-"):
        raise InputError(f"--adapter {text!r}: not an evaluated selector")
    return label


def _inspect_checkout(plan: PublishPlan, tree: AdapterTree) -> git.Repo | None:
    """The checkout's refusals and warnings; the open repo when there is a usable one."""
    checkout = plan.checkout
    if not checkout.is_dir():
        plan.refusals.append(f"no checkout: {checkout} does not exist (the run's branch is checked out there by "
                             "hermit train)")
        return None
    try:
        repo = git.Repo(checkout)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        plan.refusals.append(f"no checkout: {checkout} is not a git worktree")
        return None
    if Path(repo.common_dir).resolve() != Path(tree.repo.common_dir).resolve():
        plan.refusals.append(f"the checkout {checkout} is not a worktree of the adapter tree {tree.path}")
        return repo
    if checkout_branch(repo) != plan.branch:
        plan.refusals.append(f"the checkout {checkout} is not on branch '{plan.run}'")
    plan.head = repo.git.rev_parse("--verify", "HEAD")
    tracked = [line[3:] for line in repo.git.status("--porcelain", "--untracked-files=no").splitlines()]
    if tracked:
        shown = ", ".join(tracked[:3]) + (", …" if len(tracked) > 3 else "")
        plan.refusals.append(f"uncommitted changes in the checkout ({len(tracked)}: {shown}): commit or discard "
                             "them first, the card commit must hold exactly the measured adapter")
    untracked = [line[3:] for line in repo.git.status("--porcelain").splitlines() if line.startswith("??")]
    if untracked:
        plan.warnings.append(f"untracked files in the checkout ({', '.join(untracked[:3])}"
                             f"{', …' if len(untracked) > 3 else ''}): they are not part of the adapter or the card "
                             "commit")
    return repo


def plan_publish(config: Config, labels: Sequence[str] | None = None, taxonomy: bool = False) -> PublishPlan:
    """What publishing final's card would do now; changes nothing.

    ``labels`` adds rows for other selectors (a tag such as ``demo/ckpt-step-1`` or its label) beside none, root
    and final. An unknown one is an InputError; a missing none or root is a warning. ``taxonomy`` adds a line with
    the rows' failure labels under the table (when some failure carries one).
    """
    run = config.run_name
    extras = [lab for lab in dict.fromkeys(_label_of(t) for t in (labels or [])) if lab not in DEFAULT_LABELS]
    run_dir = Path(config.run_dir)
    checkout = run_dir / "checkout"
    plan = PublishPlan(config=config, labels=list(labels or []), run=run, tag=f"{run}/final",
                       branch=f"refs/heads/{run}", checkout=checkout, card_path=checkout / CARD_NAME,
                       taxonomy=taxonomy)
    if not valid_ref_name(plan.tag):
        plan.refusals.append(f"run name '{run}' cannot name a tag")
        return plan
    try:
        tree = AdapterTree(Path(config.tree_dir))
    except InputError as exc:
        plan.refusals.append(f"no adapter tree: {exc}")
        return plan
    try:
        repo = _inspect_checkout(plan, tree)
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
            plan.warnings.append(f"{plan.tag} ({plan.tag_target[:7]}) is not at the head of branch '{plan.run}' "
                                 f"({plan.head[:7]}), which holds the same adapter with another CARD.md (an undone "
                                 "publish?): the card goes on top of the branch and the tag moves there")
        else:
            plan.refusals.append(f"the final tag is not at the checkout's HEAD: {plan.tag} points at "
                                 f"{_short(plan.tag_target)}, branch '{plan.run}' at {_short(plan.head)}")

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

    final = _final_evaluation(plan, by_label.get("final", []), repo, run_dir)
    final_fp = final.summary.fingerprint if final is not None and final.summary is not None else None

    rows: list[EvalRow] = []
    chosen_by_label: dict[str, StoredEvaluation] = {}
    for label in ["none", "root", *extras, "final"]:
        if label == "final":
            chosen = final
        else:
            chosen = _pick(by_label.get(label, []), final_fp)
            if chosen is None:
                if label in DEFAULT_LABELS:
                    plan.warnings.append(f"no evaluation of {label}: the card has no {label} row "
                                         f"{'(the no-adapter baseline)' if label == 'none' else '(the seed)'}")
                continue
        if chosen is None:
            continue
        try:
            rows.append(_row(chosen, final_fp, label == "final"))
            chosen_by_label[label] = chosen
        except InputError as exc:
            (plan.refusals if label == "final" else plan.warnings).append(f"{label}: {exc}")
            continue
        if chosen.archived:
            plan.warnings.append(f"{label}: the current evaluation was measured under another protocol than final; "
                                 f"the row is the archived one of {chosen.archived_at}, which matches final's")
    plan.rows = rows
    _warn(plan, config, tree, rows, found, final, final_fp)

    final_row = next((r for r in rows if r.label == "final"), None)
    if plan.taxonomy:
        try:
            plan.taxonomy_line = taxonomy_line(rows)
        except InputError as exc:
            plan.warnings.append(f"the failure labels cannot be read: {exc}")
        if plan.taxonomy_line is None:
            plan.warnings.append("no failure of the card's rows carries a label: the card gets no failure-labels "
                                 "line")
    if final_row is not None and plan.current_card is not None:
        summaries = [chosen_by_label[r.label].summary for r in rows if r.label in chosen_by_label]
        if any(s is not None and s.sequential for s in summaries):
            try:
                plan.sequential = sequential_lines(chosen_by_label, rows, load_tasks(config).test_ids)
            except InputError as exc:
                plan.warnings.append(f"the stop-when-decided decisions cannot be recomputed: {exc}")
        plan.table = render_publish_table(rows, plan.taxonomy_line, plan.sequential)
        plan.new_card = replace_evaluation_section(plan.current_card, plan.table)
        plan.diff = unified_diff(plan.current_card, plan.new_card)
        plan.message = (f"card: evaluation of {plan.tag} ({final_row.tasks} tasks x {final_row.repeats}, "
                        f"mean {final_row.mean:.3f}) [hermit-tui]")


def _final_evaluation(plan: PublishPlan, found: list[StoredEvaluation], repo: git.Repo,
                      run_dir: Path) -> StoredEvaluation | None:
    """final's current evaluation when it can be published; the refusal otherwise."""
    current = next((e for e in found if not e.archived), None)
    if current is None:
        plan.refusals.append(f"no completed final evaluation: none under {eval_root(run_dir) / 'final'} "
                             "(hermit-tui eval --adapter final)")
        return None
    s = current.summary
    if s is None:
        plan.refusals.append(f"no completed final evaluation: {current.problem}")
        return None
    if not s.is_complete or s.cancelled or s.in_progress is not None:
        plan.refusals.append("no completed final evaluation: it is "
                             + incomplete_caveat(s.attempts, s.expected_attempts, cancelled=bool(s.cancelled)))
        return None
    if s.is_smoke:
        plan.refusals.append(f"no completed final evaluation: it is a {smoke_caveat(s.smoke_limit)}")
        return None
    if not _is_sha(s.commit):
        plan.refusals.append(f"final's summary records no adapter commit ({s.commit!r})")
        return None
    plan.measured_commit = s.commit
    plan.final_summary = current.folder / "summary.json"
    if plan.tag_target is not None and not same_adapter(repo, s.commit, plan.tag_target):
        plan.refusals.append(f"the final evaluation measured another adapter than the tag's: {s.commit[:12]} was "
                             f"measured, {plan.tag} now points at {plan.tag_target[:12]}; evaluate final again")
    return current


def _warn(plan: PublishPlan, config: Config, tree: AdapterTree, rows: list[EvalRow], found: list[StoredEvaluation],
          final: StoredEvaluation | None, final_fp: Fingerprint | None) -> None:
    """Every warning a reader must see before confirming, most serious first."""
    w = plan.warnings
    for row in rows:
        if row.label != "final":
            stale = _stale(config, tree, row, plan.run)
            if stale:
                w.append(f"stale measurement: {row.label} {stale}")
    final_row = next((r for r in rows if r.label == "final"), None)
    if final_row is not None and final_fp is None:
        w.append("final was measured by hermit eval (no protocol fingerprint): whether the rows share one protocol "
                 "cannot be checked")
    for row in rows:
        if row.protocol == [NOT_RECORDED] and final_fp is not None:
            w.append(f"protocol unchecked: {row.label} was measured by hermit eval (no protocol fingerprint); it "
                     "may not share final's protocol")
        elif row.protocol and final_fp is not None:
            w.append(f"protocol mismatch: {row.label} differs from final in {', '.join(row.protocol)}")
        elif final_row is not None and row is not final_row and (row.tasks, row.repeats) != (final_row.tasks,
                                                                                             final_row.repeats):
            w.append(f"protocol mismatch: {row.label} has {row.tasks} tasks x {row.repeats}, final "
                     f"{final_row.tasks} x {final_row.repeats}")
    reuse = _test_reuse(tree, plan, found, final, final_fp)
    if reuse:
        w.append(reuse)
    try:
        overlaps = [o for o in load_tasks(config).overlaps() if o.startswith("test ")]
    except InputError as exc:
        overlaps = [f"the task splits cannot be read ({exc})"]
    w += [f"test overlap: {o}" for o in overlaps]
    for r in rows:
        w += [f"{r.label}: {caveat}" for caveat in caveats(
            smoke_limit=r.smoke_limit, done=r.attempts, expected=r.tasks * r.repeats, complete=r.complete,
            cancelled=r.cancelled, retries=r.retries)]
    failing = [r for r in rows if r.errors]
    if failing:
        w.append("errors: " + ", ".join(f"{r.label} {r.errors}/{r.attempts}" for r in failing)
                 + " attempts failed (pipeline or judge) and count as 0: inspect them before trusting the means")
    unknown = [r for r in rows if r.cost_usd is None]
    if unknown:
        w.append("unknown cost: " + ", ".join(f"{r.label} {r.unknown_cost_attempts}" for r in unknown)
                 + " attempts report no cost (the card says so)")
    if not config.shuffle:
        w.append("ordered stream (data.shuffle is false): preserve stream order and the benchmark's own protocol; "
                 "one aggregate evaluation may not be its protocol")


def _stale(config: Config, tree: AdapterTree, row: EvalRow, run: str) -> str | None:
    """Why a row's measurement no longer describes what its selector names now, or None."""
    text = row.selector
    if text == "none":
        return None
    if row.commit is None:  # an adapter directory: compare its content with what was measured
        try:
            folder = config.resolve_path(text)
        except (OSError, ValueError):
            return None
        if row.content_hash and folder is not None and (folder / MANIFEST).is_file():
            if directory_hash(folder) != row.content_hash:
                return f"(directory {text}) has changed since it was measured"
        return None
    if re.fullmatch(r"[0-9a-fA-F]{4,40}", text) and row.commit.startswith(text.lower()):
        return None  # a commit never moves
    ref = ROOT_TAG if text == "root" else f"{run}/final" if text == "final" else text
    try:
        now = tree.lookup(ref)[0]
    except InputError:
        return f"was measured at {row.commit[:7]}, but '{ref}' no longer exists"
    if not same_adapter(tree.repo, row.commit, now):
        return f"was measured at {row.commit[:7]}, but '{ref}' now points at {now[:7]}, another adapter"
    return None


def _test_reuse(tree: AdapterTree, plan: PublishPlan, found: list[StoredEvaluation],
                final: StoredEvaluation | None, final_fp: Fingerprint | None) -> str | None:
    """Several adapters of this run measured on this test split: final may have been chosen on test."""
    if final is None or final.summary is None or plan.tag_target is None:
        return None
    repo = tree.repo
    tip = plan.head if plan.head and _is_ancestor(repo, plan.tag_target, plan.head) else plan.tag_target
    cache: dict[str, str] = {}
    root = tree.tag_target(ROOT_TAG)
    root_id = _identity(repo, root, cache) if root else None
    adapters: dict[str, set[str]] = {}
    for stored in found:
        s = stored.summary
        if s is None or not _is_sha(s.commit):
            continue
        if final_fp is not None and s.fingerprint is not None:
            if s.fingerprint.test_ids_sha256 != final_fp.test_ids_sha256:
                continue
        elif s.tasks != final.summary.tasks or s.is_smoke:
            continue
        try:
            if not _is_ancestor(repo, s.commit, tip):
                continue
            ident = _identity(repo, s.commit, cache)
        except git.GitCommandError:
            continue
        if ident != root_id:
            adapters.setdefault(ident, set()).add(stored.label)
    if len(adapters) < 2:
        return None
    names = sorted({label for labels in adapters.values() for label in labels})
    return (f"test reuse: {len(adapters)} different adapters of run {plan.run} were evaluated on this test split "
            f"({', '.join(names)}); if final was chosen by these scores, the test is no longer an untouched "
            "evaluation: say so, or measure on a fresh test split")


