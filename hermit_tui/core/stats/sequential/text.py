"""How a look of a ``--stop-when-decided`` launch reads: where it was taken, the verdict, the method, the boundary
and the pair's figures with the sequential test in place of the fixed design's (:func:`sequential_pair`); an
anytime-valid look by :mod:`.anytime_text`."""

from __future__ import annotations

import math

from hermit_tui.core.present import p_value, short_interval, short_num
from hermit_tui.core.stats.figures import PairStats, VerdictKind
from hermit_tui.core.stats.sequential.look import AT_STOPPING, SequentialLook
from hermit_tui.core.stats.sequential.stopping import ADJUSTED_METHOD, FUTILITY_METHOD, ORDERED_METHOD

SEQUENTIAL_RULE = (
    "after each look of a stop-when-decided launch (a whole round, or a batch of the first round's tasks), "
    "'an improvement' ('a regression') when the "
    "repeated 95% confidence interval for the mean difference lies above (below) 0, 'equivalent' (with "
    "a margin M) when it lies within -M..M; 'stopped for futility' (without a margin) when the conditional power "
    "of a later decision under the current estimate is below 2%; the first decision is kept; otherwise 'undecided'"
)
FIXED_P_NOTE = (
    "the p-value is the fixed design's, not adjusted for the looks after each round: for reference only "
    "(the decision is the sequential test's)"
)
ADJUSTED_P_NOTE = (
    "the p-value is adjusted for the stopping rule (stagewise ordering of the looks, or with the futility rule the "
    "sample-mean ordering, Jennison & Turnbull 2000, ch. 8); the decision is the repeated interval's"
)


ADJUSTED = "median-unbiased for the stopping rule"

_num = short_num


def look_text(look: SequentialLook) -> str:
    """Where ``look`` was taken: 'round r of R', or within round 1 'n of the G tasks of round 1 (of R)'."""
    from hermit_tui.core.stats.sequential import anytime_looks

    if anytime_looks.is_anytime(look):
        return anytime_looks.look_text(look)
    if look.within_first_round:
        return f"{look.tasks} of the {look.total_tasks} tasks of round 1 (of {look.max_rounds})"
    return f"round {look.rounds} of {look.max_rounds}"


def decided_where(look: SequentialLook) -> str:
    """Where ``look``'s decision was taken: 'at round r', or 'after n of the G tasks of round 1'."""
    from hermit_tui.core.stats.sequential import anytime_looks

    if anytime_looks.is_anytime(look):
        return anytime_looks.decided_where(look)
    if look.decided_tasks is not None and look.total_tasks is not None and look.decided_tasks < look.total_tasks:
        return f"after {look.decided_tasks} of the {look.total_tasks} tasks of round 1"
    return f"at round {look.decided_at}"


def adjusted_text(look: SequentialLook) -> str | None:
    """The inference adjusted for the stopping rule, in words ('median-unbiased for the stopping rule, 95% CI ...,
    p ...; observed ...'), or None before the candidate stopped."""
    if not look.adjusted or look.adjusted_low is None or look.adjusted_high is None:
        return None
    p = "" if look.adjusted_p is None else f", p {p_value(look.adjusted_p)}"
    later = look.decided_at is not None and (look.rounds, look.tasks) != (look.decided_at, look.decided_tasks)
    where = (
        f"after {look.tasks} of the {look.total_tasks} tasks of round 1"
        if look.within_first_round
        else f"at round {look.rounds}"
    )
    at = f" {where}" if later else ""
    observed = "" if look.mean_diff is None else f"; observed {look.mean_diff:+.3f}{at}, not adjusted"
    return f"{ADJUSTED}, 95% CI {short_interval(look.adjusted_low, look.adjusted_high)}{p}{observed}"


def sequential_text(look: SequentialLook, a: str, b: str) -> str:
    """The verdict of a monitored pair, b - a, in one or two sentences: the estimate adjusted for the stopping rule
    once the candidate stopped (the observed one, flagged, before)."""
    from hermit_tui.core.stats.sequential import anytime_looks, anytime_text

    if anytime_looks.is_anytime(look):
        return anytime_text.sequential_text(look, a, b)
    d = look.mean_diff
    when = f"decided {decided_where(look)} of {look.max_rounds}" if look.decided_at is not None else look_text(look)
    ci = (
        "no interval yet"
        if look.ci_low is None or look.ci_high is None
        else f"repeated 95% CI {short_interval(look.ci_low, look.ci_high)}"
    )
    if d is None:
        return f"Undecided: no complete round of {a} and {b} yet."
    adjusted = adjusted_text(look)
    est = look.adjusted_estimate if adjusted is not None and look.adjusted_estimate is not None else d
    if look.decision in ("improvement", "regression"):
        higher = "higher" if est > 0 else "lower"
        word = "an improvement" if look.decision == "improvement" else "a regression"
        early = f"{adjusted}; " if adjusted else (f"{AT_STOPPING}; " if look.stopped_early else "")
        return f"Stopped when decided: {b} scores {_num(abs(est))} {higher} than {a} ({early}{ci}; {when}): {word}."
    lead = f"{b} − {a} = {est:+.3f} ({f'{adjusted}; ' if adjusted else ''}{ci}"
    if look.decision == "equivalent":
        return f"Stopped when decided: {lead}; {when}): equivalent within ±{look.margin:g}."
    if look.decision == "futile":
        cp = "" if look.conditional_power is None else f"{look.conditional_power:.2g}, "
        return (
            f"Stopped for futility {decided_where(look)} of {look.max_rounds}: {lead}); no decision was in reach "
            f"(conditional power {cp}under the current estimate, below {look.futility or 0:g}): no clear difference."
        )
    reach = "includes 0" + (f" and reaches beyond ±{look.margin:g}" if look.margin is not None else "")
    done = look.rounds >= look.max_rounds
    head = f"Undecided after all {look.max_rounds} rounds" if done else f"Undecided so far ({when})"
    return f"{head}: {lead}); the interval {reach}."


def sequential_method(look: SequentialLook) -> str:
    """The interval's method, in words."""
    from hermit_tui.core.stats.sequential import anytime_looks, anytime_text

    if anytime_looks.is_anytime(look):
        return anytime_text.sequential_method(look)
    from hermit_tui.core.stats.clusters import CLUSTER_T_METHOD
    from hermit_tui.core.stats.intervals import METHOD_TEXT

    text = f"repeated 95% confidence interval (the intersection over the rounds run): {look.method}"
    if look.ci_method is not None and look.nominal_level is not None:
        # a clustered look's t interval is on the clusters' Bell-McCaffrey df, not on tasks - 1
        shown = CLUSTER_T_METHOD if look.clusters is not None and look.ci_method == "t" else METHOD_TEXT[look.ci_method]
        text += f"; round {look.rounds}'s interval: {shown} at the nominal confidence 1 − {1 - look.nominal_level:.2g}"
    if look.futility is not None:
        text += f"; {FUTILITY_METHOD.format(cp=look.futility)}"
    if look.adjusted:
        method = ADJUSTED_METHOD if look.futility is None else ORDERED_METHOD
        text += f"; the estimate, interval and p at stopping: {method}"
    return text


def boundary_text(look: SequentialLook) -> str:
    """This look's boundary against what was observed: critical z, observed z, the interval against 0 and ±M."""
    from hermit_tui.core.stats.sequential import anytime_looks, anytime_text

    if anytime_looks.is_anytime(look):
        return anytime_text.boundary_text(look)

    def z(x: float | None) -> str:
        if x is None:
            return "—"
        return ("∞" if x > 0 else "−∞") if math.isinf(x) else f"{x:.2f}"

    parts = [f"{look_text(look)}: boundary |z| ≥ {z(look.boundary_z)}, observed z {z(look.z)}"]
    if look.ci_low is not None:
        target = "0" + (f" and ±{look.margin:g}" if look.margin is not None else "")
        parts.append(f"repeated 95% CI {look.ci_low:+.3f} to {look.ci_high:+.3f} against {target}")
    if look.alpha_spent is not None:
        split = f", α {look.alpha:g} split over {look.candidates} candidates" if look.candidates > 1 else ""
        parts.append(f"α spent {look.alpha_spent:.2g} of {look.boundary_alpha:.3g}{split}")
    return "; ".join(parts)


def sequential_pair(pair: PairStats, look: SequentialLook) -> PairStats:
    """``pair`` (a ``core.stats.figures.PairStats``, b - a) with the sequential look in place of the fixed design's
    interval, decision, verdict and rule; ``look`` must read b - a (see :func:`negated`)."""
    from hermit_tui.core.stats.sequential import anytime_looks, anytime_text

    if anytime_looks.is_anytime(look):
        return anytime_text.sequential_pair(pair, look)  # type: ignore[no-any-return]
    decision = VerdictKind.UNCLEAR if look.decision in ("undecided", "futile") else VerdictKind(look.decision)
    adjusted = look.adjusted_p is not None
    return pair.model_copy(
        update=dict(
            sequential=look,
            ci_low=look.ci_low,
            ci_high=look.ci_high,
            ci_method=look.ci_method,
            n_eff=None,
            method=sequential_method(look),
            decision=decision,
            verdict=sequential_text(look, pair.a, pair.b),
            rule=SEQUENTIAL_RULE,
            p_value=look.adjusted_p if adjusted else pair.p_value,
            test=ADJUSTED_P_NOTE if adjusted else (f"{pair.test}; {FIXED_P_NOTE}" if pair.test else FIXED_P_NOTE),
        )
    )


__all__ = [
    "ADJUSTED",
    "ADJUSTED_P_NOTE",
    "adjusted_text",
    "decided_where",
    "look_text",
    "FIXED_P_NOTE",
    "SEQUENTIAL_RULE",
    "boundary_text",
    "sequential_method",
    "sequential_pair",
    "sequential_text",
]
