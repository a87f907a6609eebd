"""Stop when decided, in a launch: the plan made from the launch's options, the barrier between rounds, and the
lines the launch logs after each round. The design and its looks are ``core.stats.sequential.tracker``'s."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hermit_tui.core.errors import InputError
from hermit_tui.core.run.launch import check_margin
from hermit_tui.core.stats.clusters import Clustering
from hermit_tui.core.stats.sequential.look import SequentialLook, stop_state
from hermit_tui.core.stats.sequential.tracker import RoundTracker, SequentialPlan, design_method


def plan_for(
    selectors: Sequence[Any],
    baseline: str | None,
    margin: Any,
    max_rounds: int,
    tasks: int | None = None,
    first_round_looks: int | None = None,
    futility: bool = True,
    clustering: Clustering | None = None,
    task_ids: Sequence[str] | None = None,
) -> SequentialPlan:
    """The plan for ``selectors`` (resolved ``Selector`` objects, in launch order): the baseline is the selector
    typed as (or labelled) ``baseline``, by default ``none`` when it is there, else the first one. ``tasks``: the
    test tasks; ``first_round_looks``: the looks within the first round (``--first-round-looks``; None: one per
    ``MIN_BATCH`` tasks, at most ``MAX_BATCHES``, ``core.stats.sequential.schedule.first_round_batches``); ``futility``:
    the non-binding futility rule (``FUTILITY_CP``), on unless turned off or a margin is given (an equivalence
    claim is what a small difference leads to, so stopping there for futility would preempt it).
    ``clustering`` (``--cluster-by`` / ``--cluster-file``, with the test ``task_ids``): the clustered design
    (``core.stats.sequential.clustered.ClusteredMonitor``): round 1's looks after whole clusters, by default one per
    ``MIN_CLUSTERS_PER_LOOK`` clusters at most, as many as the clusters' sizes allow."""
    from hermit_tui.core.stats.sequential.clustered import clustered_method
    from hermit_tui.core.stats.sequential.schedule import (
        cluster_codes,
        cluster_look_order,
        cluster_schedule,
        clustered_batches,
        first_round_batches,
    )
    from hermit_tui.core.stats.sequential.spending import design_spending
    from hermit_tui.core.stats.sequential.stopping import FUTILITY_CP

    margin = check_margin(margin)
    codes = None
    if clustering is not None and task_ids is not None:
        codes = cluster_codes(cluster_look_order(task_ids, clustering.of), clustering.of)
    if first_round_looks is None and codes is not None:
        batches = clustered_batches(len(codes), int(codes.max()) + 1)
    elif first_round_looks is None:
        batches = first_round_batches(tasks) if tasks else 1
    else:
        batches = int(first_round_looks)
        if tasks is not None and batches > 1 and tasks < MIN_TASKS_PER_LOOK * batches:
            raise InputError(
                f"--first-round-looks {batches}: {tasks} test tasks give fewer than {MIN_TASKS_PER_LOOK} tasks per "
                f"look (at most {max(1, tasks // MIN_TASKS_PER_LOOK)} looks)"
            )
    if len(selectors) < 2:
        raise InputError("--stop-when-decided compares selectors with a baseline: give at least two --adapter")
    labels = [s.label for s in selectors]
    if baseline is None:
        base = "none" if "none" in labels else labels[0]
    else:
        text = str(baseline).strip()
        found = [s.label for s in selectors if text in (s.text, s.label)]
        if not found:
            raise InputError(f"--baseline {text[:60]!r} is not among the selectors ({', '.join(labels)})")
        base = found[0]
    clustered: dict[str, Any] = {}
    method = design_method(batches)
    if clustering is not None and codes is not None:  # the looks the clusters' sizes allow (never splitting one)
        batches = sum(1 for r, _ in cluster_schedule(codes, max_rounds, batches) if r == 1)
        method = clustered_method(batches)
        clustered = dict(cluster_by=clustering.by, clusters_sha256=clustering.digest(), cluster_of=clustering.of)
    return SequentialPlan(
        baseline=base,
        candidates=[lab for lab in labels if lab != base],
        max_rounds=max_rounds,
        margin=margin,
        batches=batches,
        spending=design_spending(batches),
        method=method,
        futility=FUTILITY_CP if futility and margin is None else None,
        **clustered,
    )


MIN_TASKS_PER_LOOK = 5  # --first-round-looks: the fewest tasks a look within the first round may add


def round_line(r: int, plan: SequentialPlan, looks: Sequence[SequentialLook]) -> str:
    """What a launch logs when a look of round ``r`` is checked: each candidate's decision against the baseline."""
    parts = []
    for look in looks:
        ci = "" if look.ci_low is None else f" (repeated 95% CI {look.ci_low:+.3f} to {look.ci_high:+.3f})"
        state: str = look.decision
        if state == "futile" and look.conditional_power is not None:
            state = f"stopped for futility (conditional power {look.conditional_power:.2g})"
        parts.append(f"{look.candidate} vs {plan.baseline}: {state}{ci}")
    return f"{look_where(r, looks[0] if looks else None, plan.max_rounds)}: " + "; ".join(parts)


def look_where(r: int, look: SequentialLook | None, max_rounds: int) -> str:
    """'round r of R', or within the first round 'round 1 of R, n of G tasks'."""
    if look is not None and look.within_first_round:
        return f"round {r} of {max_rounds}, {look.tasks} of {look.total_tasks} tasks"
    return f"round {r} of {max_rounds}"


def decided_line(
    r: int, plan: SequentialPlan, tasks: int | None = None, total: int | None = None, futile: int = 0
) -> str:
    """What a launch logs when it stops: ``futile`` of its candidates stopped for futility (no decision is in
    reach), the others decided."""
    state = stop_state(len(plan.candidates), futile)
    if tasks is not None and total is not None and tasks < total:
        return (
            f"{state} after {tasks} of the {total} tasks of round 1 (of {plan.max_rounds}): no "
            f"further attempt starts (the summaries say repeats 1; the other {total - tasks} tasks were not run)"
        )
    return f"{state} after round {r} of {plan.max_rounds}: no further round starts (the summaries say repeats {r})"


class RoundGate:
    """The runner's barrier between looks: an attempt of look ``j`` (a batch of the first round's tasks in the look
    order, or a whole later round) starts only once look ``j - 1`` is checked, and none starts once every candidate
    is decided. Attempts within a look run concurrently; at a look's end the slots wait for its last attempts (the
    price of never paying for attempts that turn out not to be needed).

    ``remaining[j]``: the attempts of look ``j`` scheduled and not yet recorded (a resume's recorded looks have 0).
    Event-loop only, except :meth:`halt`, which the runner calls through ``call_soon_threadsafe``."""

    def __init__(
        self, tracker: RoundTracker, records: Mapping[str, Mapping[tuple[str, int], Any]], remaining: dict[int, int]
    ):
        import asyncio

        self.tracker = tracker
        self.records = records
        self.remaining = dict(remaining)
        self.stopped = False  # every candidate decided: the launch ends with the looks checked
        self.halted = False  # cancelled, or the cost cap: waiting attempts give up
        self._events = {j: asyncio.Event() for j in range(0, len(tracker.schedule) + 1)}
        self._events[0].set()

    @classmethod
    def for_schedule(
        cls,
        plan: SequentialPlan,
        task_ids: Sequence[str],
        records: Mapping[str, Mapping[tuple[str, int], Any]],
        attempts: Sequence[tuple[str, int]],
    ) -> RoundGate:
        """The gate of a launch whose scheduled attempts are ``attempts`` ((task id, round) per attempt)."""
        from hermit_tui.core.stats.sequential.anytime_tracker import tracker_for

        tracker = tracker_for(plan, task_ids)  # RoundTracker, or the anytime-valid design's AnytimeTracker
        remaining: dict[int, int] = {}
        for tid, r in attempts:
            j = tracker.look_of(tid, r)
            remaining[j] = remaining.get(j, 0) + 1
        return cls(tracker, records, remaining)

    @property
    def rounds_run(self) -> int:
        """What a sequential summary says for ``repeats``: the rounds begun once the launch stopped when decided,
        else the maximum (a running or unfinished launch)."""
        return self.tracker.rounds if self.stopped else self.tracker.plan.max_rounds

    def look_of(self, task_id: str, r: int) -> int:
        return self.tracker.look_of(task_id, r)

    async def admit(self, look: int) -> bool:
        """Wait until look ``look - 1`` is checked; False when the attempt must not start."""
        while not (self.stopped or self.halted) and self.tracker.looks < look - 1:
            await self._events[look - 1].wait()
        return not (self.stopped or self.halted)

    def finished(self, look: int) -> list[tuple[int, list[SequentialLook]]]:
        """An attempt of look ``look`` was recorded: check the looks that are now complete ((round, looks) each)."""
        self.remaining[look] = self.remaining.get(look, 0) - 1
        return self.advance()

    def advance(self) -> list[tuple[int, list[SequentialLook]]]:
        """Check every complete look in turn (on their first look at a launch: a resume's recorded ones)."""
        out = []
        tracker = self.tracker
        while not tracker.finished and not self.halted:
            j = tracker.looks + 1
            if self.remaining.get(j, 0) > 0 or not tracker.complete(self.records, j):
                break
            looks = tracker.check(self.records)
            out.append((tracker.rounds, looks))
            self._events[j].set()
        if tracker.decided:
            self.stopped = True
            self._wake()
        return out

    def halt(self) -> None:
        self.halted = True
        self._wake()

    def _wake(self) -> None:
        for event in self._events.values():
            event.set()


__all__ = ["RoundGate", "decided_line", "look_where", "plan_for", "round_line"]


def projections(run_dir: Any, plan: SequentialPlan, test_ids: Sequence[str], threshold: float = 1.0) -> list[str]:
    """Before a launch: per candidate, the round by which its earlier evaluation's variance says a true difference
    of ``core.stats.noise.DEFAULT_DELTA`` (and of the difference that evaluation saw, when larger) would be decided,
    with the attempts and known cost up to it (``core.stats.noise.round_projection``); or what cannot be projected."""
    from hermit_tui.core.records.folders import list_evaluations
    from hermit_tui.core.records.scores import tabulate
    from hermit_tui.core.stats.figures import pair_stats
    from hermit_tui.core.stats.noise import DEFAULT_DELTA, CostRate, round_projection

    every = 2 * len(test_ids) * plan.max_rounds
    if plan.clustered:  # the projection's variance split is the tasks', not the clusters'
        return [
            f"{b} vs {plan.baseline}: no projection for the clustered design (its information is in the clusters, "
            f"which the projection does not model); all {plan.max_rounds} rounds: {every:,} attempts of the pair"
            for b in plan.candidates
        ]
    stored = {s.label: s for s in list_evaluations(run_dir, include_archived=False)}
    lines = []
    tables, costs = {}, {}
    for label in [plan.baseline, *plan.candidates]:
        if label in stored:
            table = stored[label].load_table()
            try:
                tables[label] = tabulate(table.attempt_columns(list(test_ids)), list(test_ids), threshold)
                n = table.n
                unknown = table.unknown_costs()
                costs[label] = CostRate(
                    known_usd=table.known_cost(), known_attempts=n - unknown, unknown_attempts=unknown
                )
            finally:
                table.close()
    for b in plan.candidates:
        a = plan.baseline
        if a not in tables or b not in tables:
            lines.append(
                f"{b} vs {a}: no earlier evaluation of both to project from; all {plan.max_rounds} rounds: "
                f"{every:,} attempts of the pair"
            )
            continue
        # the projection reads the variance split and the mean difference, not the power figures
        pair = pair_stats(a, tables[a], b, tables[b], list(test_ids), threshold, simulate_power=False)
        deltas = [DEFAULT_DELTA]
        if pair.mean_diff is not None and abs(pair.mean_diff) > DEFAULT_DELTA:
            deltas.append(round(abs(pair.mean_diff), 3))
        made = [
            round_projection(
                pair, len(test_ids), plan.max_rounds, plan.each_spend, costs[a] + costs[b], d, batches=plan.batches
            )
            for d in deltas
        ]
        if made[0] is None:
            lines.append(
                f"{b} vs {a}: the earlier evaluations give no variance split to project from (they need 2+ repeats "
                f"and some spread); all {plan.max_rounds} rounds: {every:,} attempts of the pair"
            )
            continue
        lines += [p.text for p in made if p is not None]
    return lines
