"""The gate: pass/fail checks over the evaluations on disk, for CI (``hermit-tui gate``, ``eval --require``).

A candidate selector is checked against a baseline (by default ``final`` against ``none``) by the requirements
asked for; each check passes or fails on one figure, which its line names:

- ``improvement``: the 95% interval for the mean difference candidate - baseline lies above ``+margin``;
- ``no-regression``: that interval does not lie entirely below ``-margin``;
- ``comparable``: both evaluations carry one protocol fingerprint (test tasks and rows, judge, pipeline, agent
  params, model, repeats, smoke limit). An evaluation written by ``hermit eval`` records no fingerprint: the check
  FAILS as "cannot be checked", unless ``allow_unchecked``, which compares only what hermit's summaries record (the
  task count and the repeats) and says so;
- ``complete`` (one check per selector): every expected attempt is present (each test task of the config's test split
  times the evaluation's repeats; an evaluation whose sequential design stopped it when decided needs the rounds it
  ran), it was not cancelled, and it is not a smoke subset;
- ``max_error_rate`` (one check per selector): pipeline errors + judge errors over the attempts recorded on the test
  tasks is at most this share.

The interval is the one the report shows (``core.stats.figures.pair_stats``: the bounded interval of
``core.stats.intervals``, on the tasks both attempted), or, when the candidate's summary carries a ``sequential`` entry
against the same baseline (``--stop-when-decided``), that entry's repeated confidence interval, which stays valid
however early the run stopped. Nothing here writes anything; :func:`load_gate` reads the disk, the rest is pure.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from pydantic import BaseModel

from hermit_tui.core.errors import InputError
from hermit_tui.core.present import p_value, partial_cost, smoke_caveat
from hermit_tui.core.records.columns import ERROR, JUDGE_ERROR, OK, AttemptTable
from hermit_tui.core.records.folders import RESULTS, StoredEvaluation, eval_folder, eval_root, list_evaluations
from hermit_tui.core.records.results import SOLVED_THRESHOLD, AttemptRecord, SequentialEntry
from hermit_tui.core.report.requirements import DEFAULT_REQUIRE, NEEDS_BASELINE, REQUIREMENTS
from hermit_tui.core.safe import line as one_line
from hermit_tui.core.safe import markdown
from hermit_tui.core.stats.sequential import anytime_looks
from hermit_tui.core.stats.sequential.look import entry_stopped_how
from hermit_tui.core.workspace.config import Config
from hermit_tui.core.workspace.fingerprint import FIELD_NAMES, Fingerprint, differences
from hermit_tui.core.workspace.tasks import TaskSet

if TYPE_CHECKING:
    from hermit_tui.core.stats.bounds import ErrorBounds
    from hermit_tui.core.stats.figures import PairStats, SelectorStats
    from hermit_tui.core.stats.slices import SliceReport

FORMAT = "hermit-tui gate 1"
LENIENT_HINT = "--lenient reads no-regression as 'no evidence of a drop'"
ERROR_RATE = "max-error-rate"
METHOD_NAMES = {
    "t": "Student t interval",
    "score": "score interval with an effective sample size",
    "no-spread": "no-spread bound",
    "hybrid": "Newcombe-style hybrid interval",
}
DECIDED = ("improvement", "regression", "equivalent")
Role = Literal["baseline", "candidate"]


class SelectorFacts(BaseModel):
    """What the gate needs of one evaluation, read from its summary and its results on the test tasks."""

    role: Role
    label: str
    folder: str
    smoke_folder: bool = False  # read from eval/<label>/smoke/
    adapter: str | None = None
    commit: str | None = None
    written_by: str  # "hermit-tui", "hermit eval", or "unknown" (no readable summary.json)
    summary_problem: str | None = None
    smoke_limit: int | None = None
    cancelled: bool = False
    summary_complete: bool | None = None
    tasks: int | None = None  # the summary's test task count
    repeats: int | None = None  # the summary's repeats
    n_test: int  # test tasks of the config's split
    present: int  # distinct (test task, repeat) attempts with repeat in 1..repeats
    expected: int | None  # n_test x repeats (None without a summary)
    attempts: int  # attempts recorded on the test tasks (a later record of a (task, repeat) replaces an earlier)
    pipeline_errors: int
    judge_errors: int
    known_cost_usd: float
    unknown_cost_attempts: int
    mean: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    ci_method: str | None = None
    fingerprint: Fingerprint | None = None
    sequential: SequentialEntry | None = None

    @property
    def errors(self) -> int:
        return self.pipeline_errors + self.judge_errors


class GateInterval(BaseModel):
    """The 95% interval for candidate - baseline that decides improvement and no-regression."""

    low: float
    high: float
    method: str  # in words
    source: Literal["paired", "sequential"]
    n_paired: int | None = None


class GateCheck(BaseModel):
    """One check: the requirement, the selector it is about (per-selector checks), PASS or FAIL, and the figure
    that decided it."""

    requirement: str
    selector: str | None = None
    passed: bool
    figure: str
    value: float | None = None

    @property
    def name(self) -> str:
        return f"{self.requirement} {self.selector}" if self.selector else self.requirement

    @property
    def line(self) -> str:
        return f"{'PASS' if self.passed else 'FAIL'} {self.name}: {self.figure}"


class GateResult(BaseModel):
    format: str = FORMAT
    run_name: str = ""
    config: str = ""
    baseline: str | None
    candidate: str
    requirements: list[str]
    margin: float
    max_error_rate: float | None
    smoke: bool = False
    allow_unchecked: bool = False
    selectors: list[SelectorFacts]
    interval: GateInterval | None = None
    pair_verdict: str | None = None  # the report's verdict on the pair, for the reader (the checks decide)
    lenient: bool = False  # no-regression read as "the interval does not lie entirely below -M"
    evidence: str = ""  # what the checks rest on, in words (``evidence_line``)
    checks: list[GateCheck]
    passed: bool

    @property
    def failed(self) -> list[GateCheck]:
        return [c for c in self.checks if not c.passed]


# ---------------------------------------------------------------------------------------------------- options


def parse_requirements(values: Sequence[str] | None) -> list[str]:
    """``--require`` values (repeatable, or comma-separated) in order, without repeats; [] when none is given."""
    out: list[str] = []
    for value in values or ():
        for part in str(value).split(","):
            part = part.strip()
            if not part:
                continue
            if part not in REQUIREMENTS:
                raise InputError(f"--require: unknown requirement {part[:40]!r} (one of {', '.join(REQUIREMENTS)})")
            if part not in out:
                out.append(part)
    return out


def requirements_for(named: Sequence[str] | None, *, only: bool = False, has_baseline: bool = True) -> list[str]:
    """The checks a gate runs: the defaults (those that need a baseline only when there is one), then each named
    requirement not among them; with ``only``, just the named ones."""
    named = list(dict.fromkeys(named or ()))
    if only:
        if not named:
            raise InputError("--only needs the requirements to check: name them with --require")
        return named
    defaults = [r for r in DEFAULT_REQUIRE if has_baseline or r not in NEEDS_BASELINE]
    return defaults + [r for r in named if r not in defaults]


def check_margin(margin: Any) -> float:
    if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not math.isfinite(margin) or margin < 0:
        raise InputError(f"--margin must be a finite number at least 0, got {str(margin)[:40]}")
    return float(margin)


def check_error_rate(rate: Any) -> float | None:
    if rate is None:
        return None
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 <= rate <= 1:
        raise InputError(f"--max-error-rate must be a share between 0 and 1, got {str(rate)[:40]}")
    return float(rate)


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
    """The facts of one evaluation; ``stats``: its ``core.stats.figures.SelectorStats`` (for the summary table), if
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


# ---------------------------------------------------------------------------------------------------- the interval


def gate_interval(
    baseline: SelectorFacts, candidate: SelectorFacts, pair: PairStats | None = None
) -> GateInterval | None:
    """The interval for candidate - baseline: the candidate's sequential interval against this baseline when its
    summary has one, else the paired interval of ``pair`` (a ``core.stats.figures.PairStats`` with a = baseline,
    b = candidate), else None."""
    seq = candidate.sequential
    if seq is not None and seq.baseline == baseline.label and seq.interval is not None:
        low, high = seq.interval
        if math.isfinite(low) and math.isfinite(high) and low <= high:
            method = seq.method or "group-sequential repeated confidence interval"
            method += (
                f", {anytime_looks.entry_where(seq)}"
                if anytime_looks.is_anytime(seq)
                else f", after {seq.tasks_looked} of the {seq.total_tasks} tasks of round 1"
                if seq.within_first_round
                else f", after {seq.rounds} round{'s' * (seq.rounds != 1)}"
            )
            if seq.decision == "futile":
                method += ", stopped for futility"
            if seq.estimate is not None and seq.estimate_interval is not None:
                lo, hi = seq.estimate_interval
                p = "" if seq.p_value is None else f", p {p_value(seq.p_value)}"
                method += (
                    f"; adjusted for the stopping rule: median-unbiased estimate {seq.estimate:+.3f}, 95% CI "
                    f"{lo:+.3f} to {hi:+.3f}{p}"
                )
            return GateInterval(low=low, high=high, method=method, source="sequential")
    if pair is None or pair.ci_low is None or pair.ci_high is None:
        return None
    if (pair.a, pair.b) != (baseline.label, candidate.label):
        raise ValueError(f"the pair is {pair.b} - {pair.a}, not {candidate.label} - {baseline.label}")
    method = METHOD_NAMES.get(pair.ci_method or "", pair.ci_method or "interval")
    if pair.cluster_by is not None:
        df = f", t on {pair.df:.3g} Bell-McCaffrey df" if pair.cluster_df is not None else ""
        method += f", clustered by {pair.cluster_by} ({pair.n_clusters} clusters; CR2 standard error{df})"
    return GateInterval(low=pair.ci_low, high=pair.ci_high, method=method, source="paired", n_paired=pair.n_paired)


# ---------------------------------------------------------------------------------------------------- the checks


def _signed(x: float) -> str:
    return f"{x:+.4f}"


def _interval_text(b: str, c: str, iv: GateInterval) -> str:
    sample = f"; {iv.n_paired} paired task{'s' * (iv.n_paired != 1)}" if iv.n_paired is not None else ""
    return f"{c} - {b} 95% CI [{_signed(iv.low)}, {_signed(iv.high)}] ({iv.method}{sample})"


def _no_interval(b: str, c: str, pair: PairStats | None) -> str:
    n = pair.n_paired if pair is not None else 0
    return f"no interval for {c} - {b}: {n} task{'s' * (n != 1)} attempted by both (at least 2 are needed)"


def check_improvement(
    b: str, c: str, iv: GateInterval | None, margin: float, pair: PairStats | None = None
) -> GateCheck:
    if iv is None:
        return GateCheck(requirement="improvement", passed=False, figure=_no_interval(b, c, pair))
    ok = iv.low > margin
    how = (
        f"lies above {_signed(margin)}"
        if ok
        else f"does not lie above {_signed(margin)}: its low end {_signed(iv.low)} <= {_signed(margin)}"
    )
    return GateCheck(requirement="improvement", passed=ok, figure=f"{_interval_text(b, c, iv)} {how}", value=iv.low)


def check_no_regression(
    b: str, c: str, iv: GateInterval | None, margin: float, pair: PairStats | None = None, *, lenient: bool = False
) -> GateCheck:
    """Strict (default): the interval must exclude a drop of more than the margin (its low end above -M), so a
    wide interval from little evidence fails. ``lenient``: it passes unless the interval lies entirely below -M."""
    if iv is None:
        return GateCheck(requirement="no-regression", passed=False, figure=_no_interval(b, c, pair))
    floor = -margin if margin else 0.0
    if lenient:
        ok = not iv.high < floor
        how = (
            f"does not lie entirely below {_signed(floor)}: its high end {_signed(iv.high)} >= {_signed(floor)} "
            "(lenient reading)"
            if ok
            else f"lies entirely below {_signed(floor)}: its high end {_signed(iv.high)} < {_signed(floor)}"
        )
        return GateCheck(
            requirement="no-regression", passed=ok, figure=f"{_interval_text(b, c, iv)} {how}", value=iv.high
        )
    ok = iv.low > floor
    drop = f"a drop of more than {margin:g}" if margin else "any drop"
    if ok:
        how = f"excludes {drop}: its low end {_signed(iv.low)} > {_signed(floor)}"
    else:
        how = f"cannot exclude {drop}: its low end {_signed(iv.low)} <= {_signed(floor)}"
        if iv.high >= floor:
            how += (
                "; more tasks or repeats narrow it"
                + ("; --margin names the drop that matters" if not margin else "")
                + f"; {LENIENT_HINT}"
            )
    return GateCheck(requirement="no-regression", passed=ok, figure=f"{_interval_text(b, c, iv)} {how}", value=iv.low)


def check_robust(bounds: ErrorBounds | None) -> GateCheck:
    """robust-to-errors: the pair's reading is the same with its errored attempts counted as failures, as successes
    and left out (``core.stats.bounds``)."""
    if bounds is None:
        return GateCheck(requirement="robust-to-errors", passed=False, figure="the bounds could not be computed")
    each = "; ".join(
        f"{r.reading} {r.mean_diff:+.4f} ({r.decision})" if r.mean_diff is not None else f"{r.reading} —"
        for r in bounds.readings
    )
    return GateCheck(requirement="robust-to-errors", passed=bounds.holds, figure=f"{bounds.sentence}: {each}")


def check_slices(b: str, c: str, slices: SliceReport) -> GateCheck:
    """no-regression per slice: fails when some slice is hurt beyond the margin after Holm's adjustment across the
    slices (``core.stats.slices``), naming it; says how many slices were too small to show anything."""
    k = next((i for i, p in enumerate(slices.slices[0].pairs) if (p.a, p.b) == (b, c)), None) if slices.slices else None
    name = f"no-regression by {slices.by}"
    if k is None:
        return GateCheck(requirement=name, passed=False, figure=f"no slice of {slices.by} pairs {c} with {b}")
    rows = [(s, s.pairs[k]) for s in slices.slices]
    hurt = [(s, p) for s, p in rows if p.hurt]
    small = sum(p.too_small for _, p in rows)
    tail = f"{len(rows)} slices, {small} too small to show anything; Holm-adjusted across the slices"
    if hurt:
        named = "; ".join(
            f"{s.name}: {c} - {b} {p.mean_diff:+.4f}, hurt p (Holm) {p.p_hurt_holm:.3g}"
            for s, p in hurt
            if p.mean_diff is not None and p.p_hurt_holm is not None
        )
        return GateCheck(requirement=name, passed=False, figure=f"hurt beyond -{slices.margin:g}: {named} ({tail})")
    return GateCheck(
        requirement=name, passed=True, figure=f"no slice shown to be hurt beyond -{slices.margin:g} ({tail})"
    )


def fingerprint_id(fp: Fingerprint) -> str:
    """A short name of a fingerprint: the protocol fields only (not the hermit-tui version)."""
    data = json.dumps({k: fp.field(k) for k in FIELD_NAMES}, sort_keys=True, default=str).encode()
    return hashlib.sha256(data).hexdigest()[:12]


def check_comparable(b: SelectorFacts, c: SelectorFacts, allow_unchecked: bool = False) -> GateCheck:
    if b.fingerprint is not None and c.fingerprint is not None:
        found = differences(b.fingerprint, c.fingerprint)
        if found:
            return GateCheck(
                requirement="comparable", passed=False, figure=f"{b.label} and {c.label} differ in {'; '.join(found)}"
            )
        return GateCheck(
            requirement="comparable",
            passed=True,
            figure=f"{b.label} and {c.label} share one protocol fingerprint ({fingerprint_id(c.fingerprint)})",
        )
    missing = [f for f in (b, c) if f.fingerprint is None]
    why = ", ".join(
        f"{f.label} ({'written by hermit eval' if f.written_by == 'hermit eval' else 'no summary'})" for f in missing
    )
    if not allow_unchecked or any(f.tasks is None for f in (b, c)):
        extra = "" if allow_unchecked else "; --allow-unchecked compares only the task count and repeats"
        return GateCheck(
            requirement="comparable",
            passed=False,
            figure=f"cannot be checked: no protocol fingerprint for {why}{extra}",
        )
    if (b.tasks, b.repeats) != (c.tasks, c.repeats):
        return GateCheck(
            requirement="comparable",
            passed=False,
            figure=f"{b.label} has {b.tasks} tasks x {b.repeats} repeats, {c.label} {c.tasks} x "
            f"{c.repeats} (no protocol fingerprint for {why})",
        )
    return GateCheck(
        requirement="comparable",
        passed=True,
        figure=f"unchecked (--allow-unchecked): no protocol fingerprint for {why}; the task count "
        f"({c.tasks}) and repeats ({c.repeats}) agree, the judge, pipeline, params and model "
        "cannot be checked",
    )


def _decided_stop(f: SelectorFacts, others: Sequence[SelectorFacts]) -> SequentialEntry | None:
    """The ``sequential`` entry by which a sequential design stopped this evaluation when decided (its own, or the
    one of a candidate that names it as baseline), or None."""
    for seq in [f.sequential] + [o.sequential for o in others if o.sequential and o.sequential.baseline == f.label]:
        if seq is None:
            continue
        if (seq.decision in DECIDED or seq.decision == "futile") and seq.rounds >= 1:
            return seq
    return None


def check_complete(f: SelectorFacts, others: Sequence[SelectorFacts] = ()) -> GateCheck:
    def fail(text: str, value: float | None = None) -> GateCheck:
        return GateCheck(requirement="complete", selector=f.label, passed=False, figure=text, value=value)

    if f.repeats is None or f.expected is None:
        return fail(
            f"no readable summary.json ({f.summary_problem}): {f.attempts} attempts recorded, how many were "
            "expected is unknown"
        )
    if f.smoke_limit is not None:
        return fail(smoke_caveat(f.smoke_limit))
    if f.tasks is not None and f.tasks != f.n_test:
        return fail(f"measured on {f.tasks} test tasks; the config's test split has {f.n_test}")
    expected, note = f.expected, ""
    stop: SequentialEntry | None = None
    if f.present < expected and f.summary_complete is True:
        stop = _decided_stop(f, others)
        if stop is not None and anytime_looks.is_anytime(stop) and stop.tasks_looked is not None:
            expected = stop.tasks_looked * stop.rounds  # every repeat of each task looked at
            note = f" ({entry_stopped_how(stop)} {anytime_looks.entry_where(stop)}, anytime-valid)"
        elif stop is not None and stop.within_first_round and stop.tasks_looked is not None:
            expected = stop.tasks_looked
            note = f" ({entry_stopped_how(stop)} after {stop.tasks_looked} of the {f.n_test} tasks of round 1)"
        elif stop is not None and stop.rounds < f.repeats:
            expected = f.n_test * stop.rounds
            note = f" ({entry_stopped_how(stop)} after {stop.rounds} of {f.repeats} rounds)"
    k = max(1, expected // f.n_test) if f.n_test and expected else 0
    size = f"{min(f.n_test, expected)} tasks x {k} repeat{'s' * (k != 1)}"
    if stop is not None and anytime_looks.is_anytime(stop) and stop.tasks_looked is not None:
        size = f"{stop.tasks_looked} tasks x {stop.rounds} repeat{'s' * (stop.rounds != 1)}"
    share = f.present / expected if expected else 1.0
    if f.cancelled and f.present < expected:
        return fail(f"cancelled: {f.present} of {expected} expected attempts ({size})", share)
    if f.present < expected:
        return fail(f"{f.present} of {expected} expected attempts ({size}): {expected - f.present} missing", share)
    return GateCheck(
        requirement="complete",
        selector=f.label,
        passed=True,
        figure=f"{f.present} of {expected} expected attempts ({size}){note}",
        value=share,
    )


def check_errors(f: SelectorFacts, most: float) -> GateCheck:
    if not f.attempts:
        return GateCheck(
            requirement=ERROR_RATE,
            selector=f.label,
            passed=False,
            figure="no attempt recorded on the test tasks: the error rate is unknown",
        )
    rate = f.errors / f.attempts
    ok = rate <= most
    return GateCheck(
        requirement=ERROR_RATE,
        selector=f.label,
        passed=ok,
        value=rate,
        figure=f"error rate {rate:.4f} ({f.pipeline_errors} pipeline + {f.judge_errors} judge errors in "
        f"{f.attempts} attempts) {'<=' if ok else '>'} {most:g}",
    )


def decide(
    baseline: SelectorFacts | None,
    candidate: SelectorFacts,
    requirements: Sequence[str],
    margin: float,
    max_error_rate: float | None,
    pair: PairStats | None = None,
    *,
    allow_unchecked: bool = False,
    lenient: bool = False,
    smoke: bool = False,
    run_name: str = "",
    config: str = "",
    slices: SliceReport | None = None,
    bounds: ErrorBounds | None = None,
) -> GateResult:
    """Every check, in the order of ``requirements`` (then the error rates); ``pair``: the ``PairStats`` of
    baseline (a) and candidate (b), needed for improvement and no-regression without a sequential interval."""
    for req in requirements:
        if req not in REQUIREMENTS:
            raise InputError(f"unknown requirement {req!r}")
        if req in NEEDS_BASELINE and baseline is None:
            raise InputError(f"--require {req} needs a baseline (--baseline SEL)")
    margin = check_margin(margin)
    max_error_rate = check_error_rate(max_error_rate)
    present = [f for f in (baseline, candidate) if f is not None]
    iv = gate_interval(baseline, candidate, pair) if baseline is not None else None
    checks: list[GateCheck] = []
    for req in requirements:
        if req in NEEDS_BASELINE and baseline is None:  # (refused above)
            continue
        if req == "improvement" and baseline is not None:
            checks.append(check_improvement(baseline.label, candidate.label, iv, margin, pair))
        elif req == "no-regression" and baseline is not None:
            checks.append(check_no_regression(baseline.label, candidate.label, iv, margin, pair, lenient=lenient))
            if slices is not None:
                checks.append(check_slices(baseline.label, candidate.label, slices))
        elif req == "comparable" and baseline is not None:
            checks.append(check_comparable(baseline, candidate, allow_unchecked))
        elif req == "robust-to-errors" and baseline is not None:
            checks.append(check_robust(bounds))
        else:
            checks += [check_complete(f, [o for o in present if o is not f]) for f in present]
    if max_error_rate is not None:
        checks += [check_errors(f, max_error_rate) for f in present]
    return GateResult(
        run_name=run_name,
        config=config,
        baseline=baseline.label if baseline else None,
        candidate=candidate.label,
        requirements=list(requirements),
        margin=margin,
        max_error_rate=max_error_rate,
        smoke=smoke,
        allow_unchecked=allow_unchecked,
        lenient=lenient,
        evidence=evidence_line(present, iv, pair),
        selectors=present,
        interval=iv,
        pair_verdict=pair.verdict if pair is not None else None,
        checks=checks,
        passed=all(c.passed for c in checks),
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
    from hermit_tui.core.stats.figures import pair_stats, selector_stats

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


# ---------------------------------------------------------------------------------------------------- rendering


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' * (n != 1)}"


def evidence_line(selectors: Sequence[SelectorFacts], iv: GateInterval | None, pair: PairStats | None = None) -> str:
    """What the checks rest on: each selector's test tasks, repeats and attempts, the paired tasks and the width of
    the interval that decides improvement and no-regression."""
    parts = []
    for f in selectors:
        shape = (
            f"{_plural(f.n_test, 'task')} × {_plural(f.repeats, 'repeat')}" if f.repeats else _plural(f.n_test, "task")
        )
        parts.append(f"{f.label} {shape} ({_plural(f.attempts, 'attempt')})")
    text = ", ".join(parts)
    if iv is not None:
        paired = f"{_plural(iv.n_paired, 'paired task')}, " if iv.n_paired is not None else ""
        text += f"; {paired}interval width {iv.high - iv.low:.4f}"
    elif pair is not None:
        text += f"; {_plural(pair.n_paired, 'paired task')}, no interval"
    return text


def verdict_detail(result: GateResult) -> str:
    failed = result.failed
    if not failed:
        return f"{len(result.checks)} check{'s' * (len(result.checks) != 1)} passed"
    return f"{len(failed)} of {len(result.checks)} checks failed: {', '.join(c.name for c in failed)}"


def verdict_line(result: GateResult) -> str:
    return f"verdict: {'PASS' if result.passed else 'FAIL'} ({verdict_detail(result)})"


def to_text(result: GateResult) -> str:
    """One line per check, PASS or FAIL with the figure that decided it, then the verdict."""
    vs = f" vs baseline {one_line(result.baseline)}" if result.baseline else ""
    head = f"gate: candidate {one_line(result.candidate)}{vs}, margin {result.margin:g}" + (
        ", smoke subsets" if result.smoke else ""
    )
    ran = "checks: " + ", ".join(dict.fromkeys(c.requirement for c in result.checks))
    lines = [head, one_line(f"evidence: {result.evidence}"), ran] if result.evidence else [head, ran]
    return "\n".join([*lines, *(one_line(c.line) for c in result.checks), one_line(verdict_line(result))]) + "\n"


def to_json(result: GateResult) -> str:
    data = result.model_dump(mode="json")
    for check, model in zip(data["checks"], result.checks):
        check["line"] = model.line
    data["verdict"] = "PASS" if result.passed else "FAIL"
    return json.dumps(data, indent=1) + "\n"  # ASCII: every control character is a \\u escape


def _md(value: Any) -> str:
    return markdown(value)


def _ci(f: SelectorFacts) -> str:
    if f.mean is None:
        return "—"
    if f.ci_low is None or f.ci_high is None:
        return f"{f.mean:.4f}"
    return f"{f.mean:.4f} ({f.ci_low:.4f} to {f.ci_high:.4f})"


def to_markdown(result: GateResult, exit_code: int | None = None) -> str:
    """The Markdown summary for a CI job page (``$GITHUB_STEP_SUMMARY``): the selectors, the checks, the verdict."""
    verdict = "PASS" if result.passed else "FAIL"
    out = [f"### hermit-tui gate: {verdict}", ""]
    out.append(
        f"Run {_md(result.run_name)}, candidate {_md(result.candidate)}"
        + (f" against baseline {_md(result.baseline)}" if result.baseline else "")
        + f", margin {result.margin:g}"
        + (", smoke subsets (`--smoke`)" if result.smoke else "")
        + (", no-regression read leniently (`--lenient`)" if result.lenient else "")
        + "."
    )
    if result.evidence:
        out += ["", f"Evidence: {_md(result.evidence)}."]
    out += [
        "",
        "| role | selector | adapter | commit | attempts | mean score (95% CI) | errors (pipeline + judge) "
        "| known cost (USD) | written by |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for f in result.selectors:
        expected = f"{f.present} of {f.expected}" if f.expected is not None else str(f.attempts)
        smoke = f" (smoke, --limit {f.smoke_limit})" if f.smoke_limit is not None else ""
        cost = partial_cost(f.known_cost_usd, f.unknown_cost_attempts, dollars=False, attempts=f.attempts)
        out.append(
            "| "
            + " | ".join(
                _md(x)
                for x in (
                    f.role,
                    f.label + smoke,
                    f.adapter or "—",
                    (f.commit or "—")[:12],
                    expected,
                    _ci(f),
                    f"{f.pipeline_errors} + {f.judge_errors}",
                    cost,
                    f.written_by,
                )
            )
            + " |"
        )
    if result.interval is not None:
        iv = result.interval
        out += [
            "",
            f"{_md(result.candidate)} - {_md(result.baseline)}: 95% CI {iv.low:+.4f} to {iv.high:+.4f} "
            f"({_md(iv.method)}).",
        ]
    out += ["", "| check | result | figure |", "|---|---|---|"]
    out += [f"| {_md(c.name)} | {'PASS' if c.passed else '**FAIL**'} | {_md(c.figure)} |" for c in result.checks]
    code = f" (exit {exit_code})" if exit_code is not None else ""
    out += ["", f"**Verdict: {verdict}**{code}: {_md(verdict_detail(result))}.", ""]
    return "\n".join(out) + "\n"


__all__ = [
    "DEFAULT_REQUIRE",
    "FORMAT",
    "GateCheck",
    "GateInterval",
    "GateResult",
    "NEEDS_BASELINE",
    "REQUIREMENTS",
    "SelectorFacts",
    "check_comparable",
    "check_complete",
    "check_error_rate",
    "check_errors",
    "check_improvement",
    "check_margin",
    "check_no_regression",
    "check_robust",
    "check_slices",
    "decide",
    "evidence_line",
    "gate_interval",
    "load_gate",
    "parse_requirements",
    "requirements_for",
    "selector_facts",
    "to_json",
    "to_markdown",
    "to_text",
    "verdict_detail",
    "verdict_line",
]
