"""The gate's checks, each passing or failing on one figure: the interval for candidate - baseline that decides
improvement and no-regression, each requirement's check, and :func:`decide`, every check asked into one result
(``core.report.gate``). Pure: the facts are read by ``core.report.gate.load``."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from hermit_tui.core.errors import InputError
from hermit_tui.core.present import p_value, smoke_caveat
from hermit_tui.core.records.results import SequentialEntry
from hermit_tui.core.report.gate.model import GateCheck, GateInterval, GateResult, SelectorFacts
from hermit_tui.core.report.gate.options import check_error_rate, check_margin
from hermit_tui.core.report.gate.text import evidence_line
from hermit_tui.core.report.requirements import NEEDS_BASELINE, REQUIREMENTS
from hermit_tui.core.stats.sequential import anytime_looks
from hermit_tui.core.stats.sequential.look import entry_stopped_how
from hermit_tui.core.workspace.fingerprint import FIELD_NAMES, Fingerprint, differences

if TYPE_CHECKING:
    from hermit_tui.core.stats.bounds import ErrorBounds
    from hermit_tui.core.stats.figures import PairStats
    from hermit_tui.core.stats.slices import SliceReport

LENIENT_HINT = "--lenient reads no-regression as 'no evidence of a drop'"
ERROR_RATE = "max-error-rate"
METHOD_NAMES = {
    "t": "Student t interval",
    "score": "score interval with an effective sample size",
    "no-spread": "no-spread bound",
    "hybrid": "Newcombe-style hybrid interval",
}
DECIDED = ("improvement", "regression", "equivalent")


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


__all__ = [
    "check_comparable",
    "check_complete",
    "check_errors",
    "check_improvement",
    "check_no_regression",
    "check_robust",
    "check_slices",
    "decide",
    "fingerprint_id",
    "gate_interval",
]
