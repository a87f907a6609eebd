"""The figures of the compare screen, computed and worded, with no widget: each selector's statistics and what its
records say beside the scores (:class:`Facts`), the plot series, the paired statistics (:func:`compare`, in two
steps for the screen: :func:`compare_selectors` then :func:`with_pair`, the slow part), and the texts the screen
shows for them (the numbers table, the variance split, the paired difference, power, the comparability check).
``dashboard/screens/compare.py`` lays them out and recomputes them in a worker as attempts stream in."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from rich.text import Text

from hermit_tui.core.present import NO_SPREAD_POWER, SHARP_TEST_ROW, fixed, p_text, p_value, partial_cost
from hermit_tui.core.records.index import Snapshot
from hermit_tui.core.stats.clusters import Clustering
from hermit_tui.core.stats.figures import PairStats, VerdictKind
from hermit_tui.core.stats.noise import between_text
from hermit_tui.core.stats.selector import SelectorStats
from hermit_tui.core.stats.sequential.anytime_looks import interval_words, is_anytime
from hermit_tui.core.stats.sequential.text import adjusted_text
from hermit_tui.core.workspace.fingerprint import differences
from hermit_tui.dashboard.widgets import plots
from hermit_tui.dashboard.widgets.boundary import SequentialView

#: a selector's attempts as the comparison reads them: records, or the store's columns (a snapshot)
Attempts = Sequence[Any] | Snapshot

NO_DATA = "—"
TRANSITION_NAMES = {
    "fixed": ("fixed", "✗ → ✓"),
    "broken": ("broken", "✓ → ✗"),
    "stable_pass": ("stable pass", "✓ → ✓"),
    "stable_fail": ("stable fail", "✗ → ✗"),
    "flaky": ("flaky", "mixed"),
}
METRICS = [
    ("mean", "mean score"),
    ("sample", "tasks × repeats"),
    ("solved", "solved once"),
    ("passk", "pass^k"),
    ("errors", "errors"),
    ("cost", "cost"),
]


@dataclass(frozen=True)
class Facts:
    """What the records say beside the scores: failures and cost."""

    errors: int
    judge_errors: int
    known_cost: float
    known: int
    unknown: int

    @classmethod
    def of(cls, records: Attempts) -> Facts:
        if isinstance(records, Snapshot):  # the store's columns
            from hermit_tui.core.records.columns import ERROR, JUDGE_ERROR

            return cls(
                errors=records.count_status(ERROR),
                judge_errors=records.count_status(JUDGE_ERROR),
                known_cost=records.known_cost,
                known=records.known,
                unknown=len(records) - records.known,
            )
        known = [r.cost_usd for r in records if r.cost_usd is not None]
        return cls(
            errors=sum(r.status == "error" for r in records),
            judge_errors=sum(r.status == "judge_error" for r in records),
            known_cost=sum(known),
            known=len(known),
            unknown=len(records) - len(known),
        )


@dataclass(frozen=True)
class Comparison:
    """Everything the screen shows for a pair, computed off the event loop (``pair`` last: it is the slow part)."""

    a: str
    b: str
    sa: SelectorStats
    sb: SelectorStats
    pair: PairStats | None
    facts: dict[str, Facts]
    histogram: plots.Histogram
    diffs: list[tuple[str, float]]
    running: dict[str, list[plots.RunningPoint]]
    sequential: SequentialView | None = None  # a candidate and its baseline of a --stop-when-decided launch


def compare(
    a: str,
    records_a: Sequence[Any],
    b: str,
    records_b: Sequence[Any],
    task_ids: Sequence[str] | None,
    threshold: float = 1.0,
) -> Comparison:
    """The statistics and plot series of ``b`` against ``a`` (records in arrival order)."""
    return with_pair(
        compare_selectors(a, records_a, b, records_b, task_ids, threshold), records_a, records_b, task_ids, threshold
    )


def with_pair(
    c: Comparison,
    records_a: Attempts,
    records_b: Attempts,
    task_ids: Sequence[str] | None,
    threshold: float = 1.0,
    clusters: Clustering | None = None,
) -> Comparison:
    """``c`` with its paired statistics (a permutation test: seconds on thousands of tasks); ``clusters``: as
    :func:`compare_selectors`."""
    from hermit_tui.core.stats.figures import pair_stats

    pair = pair_stats(c.a, records_a, c.b, records_b, task_ids, threshold=threshold, clusters=clusters)
    return replace(c, pair=pair)


def recorded_clusters(
    tasks: Mapping[str, Mapping[str, object]], task_ids: Sequence[str], summaries: Sequence[Any]
) -> tuple[Clustering | None, str | None]:
    """(the clusters both evaluations were launched with, why not): as the report takes them by default (``eval
    --cluster-by`` or ``--cluster-file``, in their fingerprints, checked against the mapping's recorded sha256).
    (None, None) when they were not launched so; (None, the report's one line) when the clusters cannot be taken
    as recorded (a cluster file edited since the launch, fewer than 2 clusters now): the screen then shows the
    figures unclustered and says why, where ``report`` refuses."""
    from hermit_tui.core.errors import InputError
    from hermit_tui.core.stats.clusters import ClustersChanged, resolve_clustering

    prints = [s.fingerprint if s is not None else None for s in summaries]
    recorded = [fp.cluster_by if fp is not None else None for fp in prints]
    digests = [fp.clusters_sha256 if fp is not None else None for fp in prints]
    try:
        return resolve_clustering(tasks, task_ids, None, recorded, digests), None
    except ClustersChanged as exc:  # the command's remedy is an option: here, the figures are shown unclustered
        return None, f"not clustered: {exc.reason}; `hermit-tui report {exc.option} …` clusters them as they are now"
    except InputError as exc:
        return None, f"not clustered: {exc}"


def compare_selectors(
    a: str,
    records_a: Attempts,
    b: str,
    records_b: Attempts,
    task_ids: Sequence[str] | None,
    threshold: float = 1.0,
    clusters: Clustering | None = None,
) -> Comparison:
    """Each selector's statistics and the plot series, without the paired statistics. ``clusters``: the figures
    clustered by them (``core.stats.clusters``), as ``report`` clusters them."""
    from hermit_tui.core.stats.selector import selector_stats

    sa = selector_stats(a, records_a, task_ids, threshold=threshold, clusters=clusters)
    sb = selector_stats(b, records_b, task_ids, threshold=threshold, clusters=clusters)
    means = {a: plots.task_means(sa)} | ({b: plots.task_means(sb)} if b != a else {})
    return Comparison(
        a=a,
        b=b,
        sa=sa,
        sb=sb,
        pair=None,
        facts={a: Facts.of(records_a), b: Facts.of(records_b)},
        histogram=plots.histogram(means),
        diffs=plots.sorted_differences(sa, sb),
        running={a: plots.running_series(a, records_a, task_ids)}
        | ({b: plots.running_series(b, records_b, task_ids)} if b != a else {}),
    )


def num(x: float | None) -> str:
    return NO_DATA if x is None else fixed(x)


def interval(low: float | None, high: float | None, name: str = "95% CI") -> str:
    return "" if low is None or high is None else f"{name} {fixed(low)} to {fixed(high)}"


def wilson(ci: tuple[float, float] | None) -> str:
    return interval(*ci, name="Wilson") if ci is not None else ""


def interval_kind(method: str | None) -> str:
    """The interval method in a word or two, after the interval: "(t)", "(score)", "(no-spread)"."""
    return f" ({method})" if method else ""


def cost_text(f: Facts) -> str:
    """Known cost plus a count of unknown ones; never $0 for costs nobody reported."""
    if not f.known:
        return partial_cost(None, f.unknown) if f.unknown else NO_DATA
    return partial_cost(f.known_cost, f.unknown)


def metric_texts(s: SelectorStats, f: Facts) -> dict[str, str]:
    """One selector's cells of the numbers table."""
    if s.mean is None:
        return {key: NO_DATA for key, _ in METRICS}
    k = str(s.repeats) if s.repeats is not None else f"{s.repeats_min}-{s.repeats_max}"
    sample = f"{s.n_tasks} × {k} ({s.n_attempts} attempts)"
    if s.n_missing:
        sample += f"; {s.n_missing} tasks not attempted"
    return {
        "mean": f"{num(s.mean)}  {interval(s.ci_low, s.ci_high)}{interval_kind(s.ci_method)}".rstrip(),
        "sample": sample,
        "solved": f"{num(s.solved_once)}  {wilson(s.solved_once_ci)}",
        "passk": (
            f"{num(s.pass_k)}  {wilson(s.pass_k_ci)}" if s.pass_k is not None else f"{NO_DATA} (needs 2+ repeats)"
        ),
        "errors": f"{f.errors} pipeline · {f.judge_errors} judge",
        "cost": cost_text(f),
    }


def split_text(s: SelectorStats) -> str:
    """The variance split and what would narrow the interval."""
    parts = []
    if s.between_var is not None:
        parts.append(
            f"between-task variance {s.between_var:.4f}"
            + (f", within-task {s.within_var:.4f}" if s.within_var is not None else "")
        )
    notes = [s.lever_note, s.rule_of_three]
    if s.scores_outside_unit:
        notes.append(
            f"Scores fall outside [0, 1]: solved-at-least-once (threshold {s.threshold:g}) may not be a "
            "meaningful solved rate for this benchmark: set a success threshold (command palette)."
        )
    if s.n_ignored:
        notes.append(f"{s.n_ignored} attempts outside the test tasks or repeated were left out.")
    notes += [_sentence(w.removeprefix(f"{s.label}: ")) for w in s.warnings]
    if s.ci_method is not None:
        notes.append(f"95% CI: {s.method}.")
    head = f"{s.label}: " + ("; ".join(parts) + ". " if parts else "")
    return head + " ".join(n for n in notes if n)


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")


def pair_text(p: PairStats) -> Text:
    """The paired difference, its test and the win/loss count."""
    text = Text()
    text.append(f"{p.b} − {p.a}: ", style="bold")
    if p.mean_diff is None:
        text.append(f"no task has attempts from both ({p.n_unpaired} unpaired)")
        return text
    text.append(f"{p.mean_diff:+.3f}", style="bold")
    ci = interval(p.ci_low, p.ci_high, "repeated 95% CI" if p.sequential else "95% CI")
    kind = f" (sequential, after round {p.sequential.rounds})" if p.sequential else interval_kind(p.ci_method)
    if p.sequential is not None and is_anytime(p.sequential):
        name, kind = interval_words(p.sequential)
        ci = interval(p.ci_low, p.ci_high, name)
    text.append(f"  {ci}{kind}" if ci else "")
    look = p.sequential
    if look is not None and look.adjusted and look.adjusted_estimate is not None:
        text.append(f"\nadjusted for stopping {look.adjusted_estimate:+.3f} ", style="bold")
        text.append(f"({adjusted_text(look)})")
    clustered = f", clustered by {p.cluster_by}: {p.n_clusters} clusters" if p.cluster_by is not None else ""
    text.append(
        f"  (se {num(p.se)}; {p.n_paired} paired tasks{clustered}"
        + (f", {p.n_unpaired} unpaired left out)" if p.n_unpaired else ")")
    )
    text.append(f"\n{p_text(p.p_value)}", style="bold")
    sign = (
        f"sign test {p_text(p.sign_test_p)}"
        if p.sign_test_p is not None or not p.unequal_repeats
        else "no sign test (not valid with unequal repeats)"
    )
    text.append(f": {p.test}; {sign}")
    if p.sharp_test:
        text.append(f"\n{SHARP_TEST_ROW}: {p_value(p.sharp_p_value)} ({p.sharp_test})")
    text.append(f"\nwins {p.wins} · losses {p.losses} · ties {p.ties}", style="bold")
    text.append(f"  (tasks where {p.b}'s mean is higher / lower / equal)")
    if p.ci_method is not None:
        text.append(f"\n95% CI: {p.method}.")
    for warning in p.warnings:
        text.append(f"\n! {warning}")
    text.append(f"\nVerdict rule: {p.rule}.", style="italic")
    return text


def power_text(p: PairStats) -> str:
    if p.mde is None and p.sd_diff == 0:
        return NO_SPREAD_POWER
    mde = p.mde_figure(lambda x: f"{x:.3f}")
    if mde is None:
        return "Minimum detectable difference: needs at least 2 paired tasks."
    k = f"{p.repeats_min}" if p.repeats_min == p.repeats_max else f"{p.repeats_min}-{p.repeats_max}"
    lines = [
        f"Minimum detectable difference: {mde} (two-sided α 0.05, power 0.8, {p.n_paired} paired tasks "
        f"× {k} repeats; {p.mde_method})."
    ]
    if p.between_var is not None:
        split = f"Variance of a task's difference: between tasks {between_text(p.between_var)}"
        if p.noise_var is not None:
            split += f", run-to-run {p.noise_var:.4f} at the current repeats (per attempt {p.within_var:.4f})"
        lines.append(split + ".")
    return "\n".join(lines)


def needed_text(c: Comparison, delta: float) -> str:
    """What detecting a difference of ``delta`` would take (``core.stats.noise``): more tasks or more repeats, with
    the attempts and the known cost of each."""
    from hermit_tui.core.stats.noise import CostRate, noise_budget

    p = c.pair
    if p is None:
        return ""
    if p.n_clusters is not None:
        return (
            f"To detect a difference of {delta:g}: not projected: the figures are clustered by {p.cluster_by} "
            f"({p.n_clusters} clusters), and what more tasks or repeats would do depends on the clusters they fall in"
        )

    def rate(f: Facts) -> CostRate:
        return CostRate(known_usd=f.known_cost, known_attempts=f.known, unknown_attempts=f.unknown)

    fa, fb = c.facts.get(c.a), c.facts.get(c.b)
    cost = (rate(fa) if fa else CostRate()) + (rate(fb) if fb else CostRate())
    return noise_budget(p, c.sa.repeats_max, c.sb.repeats_max, cost, delta).advice


def verdict_kind(kind: VerdictKind) -> str:
    """The verdict's style: "improvement" or "regression" only when the verdict decides so; "neutral" otherwise."""
    return kind.value if kind in (VerdictKind.IMPROVEMENT, VerdictKind.REGRESSION) else "neutral"


def protocol_check(store, a: str, b: str) -> tuple[str, str]:
    """(kind, text) about comparability: kind is "mismatch", "unchecked", "pending" or "" (they match)."""
    ca, cb = store.columns.get(a), store.columns.get(b)
    if ca is None or cb is None:
        return "", ""
    unfinished = [c.key for c in (ca, cb) if c.summary is None]
    if unfinished:
        return "pending", (
            f"Protocol fingerprint of {', '.join(unfinished)} is checked when "
            f"{'it finishes' if len(unfinished) == 1 else 'they finish'}."
        )
    fa, fb = ca.summary.fingerprint, cb.summary.fingerprint
    missing = [c.key for c, f in ((ca, fa), (cb, fb)) if f is None]
    if missing:
        return "unchecked", (
            f"Protocol cannot be checked: {' and '.join(missing)} carr"
            f"{'ies' if len(missing) == 1 else 'y'} no fingerprint (written by hermit eval?)."
        )
    diff = differences(fa, fb)
    if diff:
        return "mismatch", (
            f"NOT COMPARABLE: {a} and {b} differ in {', '.join(diff)}. A difference in scores may "
            "come from the protocol, not the adapter."
        )
    return "", ""


__all__ = [
    "METRICS",
    "NO_DATA",
    "TRANSITION_NAMES",
    "Attempts",
    "Comparison",
    "Facts",
    "compare",
    "compare_selectors",
    "cost_text",
    "interval",
    "interval_kind",
    "metric_texts",
    "needed_text",
    "num",
    "pair_text",
    "power_text",
    "protocol_check",
    "recorded_clusters",
    "split_text",
    "verdict_kind",
    "wilson",
    "with_pair",
]
