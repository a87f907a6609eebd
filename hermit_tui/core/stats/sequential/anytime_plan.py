"""Stop when decided, anytime-valid: the design of a ``--stop-when-decided --anytime`` launch (:class:`AnytimePlan`,
:func:`anytime_plan`, :func:`with_clusters`); its looks are :mod:`.anytime_tracker`'s, how they read
:mod:`.anytime_text`'s.

The launch runs task by task in a fixed order (:func:`core.stats.sequential.schedule.look_order`, the sha256 of the
task id), every repeat of a task under every selector together: one task is one observation, the paired difference
of its task means ``d = mean_r(candidate) - mean_r(baseline)`` (scores counted in [0, 1]: NaN as 0, outside the
range as its nearest end). After each look (a batch of consecutive tasks in that order, as many as the launch's
slots run at once) every candidate's confidence sequence (``core.stats.sequential.anytime``, Waudby-Smith & Ramdas
2023) is updated on its differences so far; the launch stops once every candidate is decided (the sequence lies
above 0: improvement, below 0: regression, within ±M: equivalent), else it runs every task and ends undecided.

A confidence sequence holds the true mean difference at every number of tasks at once, so the decision may be taken
at any look, and an undecided comparison may be continued later (``--resume``, also after tasks were added to the
test split) without restarting the error budget: the continued stream is the recorded tasks in their recorded order
(summary.json's ``sequential.order``), then the tasks not yet looked at in the look order. What a continuation may
not change is the observation itself (the repeats per task, the protocol) or the error split (alpha, the
candidates): :meth:`AnytimePlan.same_design` says what changed.

``alpha`` is split over the candidates (Bonferroni: the chance of any false claim over them is at most ``alpha``);
each candidate's sequence spends its whole share, since the sequence's guarantee is exact for bounded scores (no
normal approximation to allow for).

**With clusters** (``--cluster-by`` / ``--cluster-file``, :func:`with_clusters`) one observation is a whole cluster:
the stream takes the clusters in the order of their keys' sha256 (``look_order`` of the keys), a cluster's tasks
together (in the look order of their ids); a look never splits a cluster, and a cluster counts only when every
repeat of each of its tasks under every selector is done. The sequence is the clustered one of
``core.stats.sequential.anytime.clustered_confidence_sequence`` for the task-weighted mean difference (the clustered
fixed design's estimand), with ``K`` the largest cluster of the split at the first look. A continuation keeps ``K``
and the clusters already looked at: added tasks may only form new clusters of at most ``K`` tasks
(:meth:`AnytimePlan.stream`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from hermit_tui.core.records.results import SequentialEntry
from hermit_tui.core.stats.sequential.anytime import METHOD
from hermit_tui.core.stats.sequential.anytime_looks import clustered_method, is_anytime, recorded_clusters
from hermit_tui.core.stats.sequential.schedule import look_order
from hermit_tui.core.stats.sequential.tracker import SequentialPlan


def anytime_share(alpha: float, candidates: int) -> float:
    """Each candidate's share of ``alpha`` when ``candidates`` are compared with one baseline (Bonferroni), all of
    it spent: the sequence's guarantee is exact for bounded scores."""
    return alpha / max(1, candidates)


class AnytimePlan(SequentialPlan):
    """The plan of a ``--stop-when-decided --anytime`` launch. ``max_rounds`` is the repeats of each task (all
    run before the task is looked at); ``order``: the tasks an earlier launch of this evaluation looked at, in order
    (a continuation's stream begins with them); ``tasks_per_look``: the consecutive tasks one look adds (the slots
    the launch runs at once, so the barrier after each look leaves few of them idle)."""

    method: str = METHOD
    order: list[str] = []
    tasks_per_look: int = 1
    # stop a candidate that the rest of the split cannot decide even at the clearest results (``_Stream.in_reach``)
    out_of_reach: bool = False
    row_digests: dict[str, str] = {}  # task id -> sha256 of its row (what a continuation checks of the recorded tasks)
    # --cluster-by: the field (None: unclustered), task id -> cluster key of the split, and K (the largest cluster)
    cluster_by: str | None = None
    cluster_of: dict[str, str] = {}
    cluster_cap: int | None = None

    @property
    def clustered(self) -> bool:
        return self.cluster_by is not None and self.cluster_cap is not None

    def cluster_key(self, task_id: str) -> str:
        return self.cluster_of.get(task_id, "\0" + task_id)  # (a task the mapping lacks: a cluster of its own)

    def cluster_sizes(self, stream: Sequence[str]) -> list[int]:
        """The sizes of the clusters of ``stream`` (a cluster's tasks are consecutive in it), in order."""
        sizes: list[int] = []
        prev: str | None = None
        for t in stream:
            key = self.cluster_key(t)
            if key == prev:
                sizes[-1] += 1
            else:
                sizes.append(1)
            prev = key
        return sizes

    @property
    def split_cluster_sizes(self) -> list[int] | None:
        """The sizes of the split's clusters (None: unclustered)."""
        if not self.clustered:
            return None
        counts: dict[str, int] = {}
        for key in self.cluster_of.values():
            counts[key] = counts.get(key, 0) + 1
        return list(counts.values())

    @property
    def method_text(self) -> str:
        return clustered_method(str(self.cluster_by), int(self.cluster_cap or 1)) if self.clustered else METHOD

    def order_digest(self, order: Sequence[str]) -> str | None:
        """The sha256 of the rows of ``order``'s tasks, in order (None when a row's digest is not known)."""
        import hashlib

        if any(t not in self.row_digests for t in order):
            return None
        return hashlib.sha256("\n".join(self.row_digests[t] for t in order).encode()).hexdigest()

    @property
    def each_spend(self) -> float:
        """Each candidate's share of alpha (Bonferroni), all of it spent."""
        return self.spend if self.spend is not None else anytime_share(self.alpha, self.family)

    def same_design(self, entry: SequentialEntry) -> list[str]:
        """How a recorded entry differs from this plan (what a continuation must keep)."""
        if not is_anytime(entry):
            return ["it was launched with the group-sequential design: resume it without --anytime"]
        changed = []
        if entry.baseline != self.baseline:
            changed.append(f"baseline {entry.baseline} -> {self.baseline}")
        if entry.max_rounds != self.max_rounds:
            changed.append(
                f"repeats per task (eval.repeats) {entry.max_rounds} -> {self.max_rounds} (a task's observation is "
                "the mean of its repeats)"
            )
        if entry.margin != self.margin:
            changed.append(f"margin {entry.margin or 'none'} -> {self.margin or 'none'}")
        if entry.alpha != self.alpha:
            changed.append(f"alpha {entry.alpha} -> {self.alpha}")
        if entry.split_over is not None and entry.split_over != self.family:
            changed.append(f"the candidates alpha is split over {entry.split_over} -> {self.family}")
        return changed

    def stream(self, task_ids: Sequence[str]) -> list[str]:
        """The order the tasks are looked at: the recorded ones in their order, then the others in the look order.
        ValueError when a recorded task is no longer among ``task_ids``."""
        ids = [str(t) for t in task_ids]
        known = set(ids)
        gone = [t for t in self.order if t not in known]
        if gone:
            raise ValueError(
                f"{len(gone)} task(s) already looked at are no longer in the test split (e.g. {gone[0]!r}): the "
                "stream cannot continue without them"
            )
        seen = set(self.order)
        if not self.clustered:
            return list(self.order) + look_order([t for t in ids if t not in seen])
        looked = {self.cluster_key(t) for t in self.order}
        members: dict[str, list[str]] = {}
        for t in ids:
            if t not in seen:
                members.setdefault(self.cluster_key(t), []).append(t)
        joined = [k for k in members if k in looked]
        if joined:
            t = members[joined[0]][0]
            raise ValueError(
                f"task {t!r} joins cluster {joined[0][:40]!r}, already looked at: a cluster is one observation, "
                "looked at once whole; give added tasks clusters of their own"
            )
        cap = int(self.cluster_cap or 0)
        big = [k for k, m in members.items() if len(m) > cap]
        if big:
            raise ValueError(
                f"the new cluster {big[0][:40]!r} has {len(members[big[0]])} tasks, more than the {cap} of the "
                "largest cluster the sequence was started with (its observations are scaled by that size)"
            )
        out = list(self.order)
        for key in look_order(list(members)):
            out += look_order(members[key])
        return out

    def take_recorded(self, order: Sequence[str], entry: SequentialEntry | None) -> None:
        """A continuation: the recorded stream ``order`` (and, clustered, the recorded ``K``). ValueError when the
        clusters of the tasks looked at are not those the launch recorded, or one design is clustered and the other
        not."""
        self.order = list(order)
        recorded = recorded_clusters(entry)
        if recorded is None and not self.clustered:
            return
        if recorded is None or not self.clustered:
            was = "clustered" if recorded is not None else "not clustered"
            raise ValueError(f"the recorded sequence was {was}: resume it with the clusters it was started with")
        by = getattr(entry, "cluster_by", None)
        if by != self.cluster_by:
            raise ValueError(f"it was clustered by {by}, not {self.cluster_by}: resume it with the same clusters")
        cap, sizes = recorded
        looked, total = [], 0
        for n in sizes:
            if total >= len(self.order):
                break
            looked.append(n)
            total += n
        if self.cluster_sizes(self.order) != looked:
            raise ValueError(
                "the clusters of the tasks already looked at are not the ones recorded (summary.json "
                "sequential.cluster_sizes): resume it with the same --cluster-by or --cluster-file"
            )
        self.cluster_cap = cap


def anytime_plan(
    plan: SequentialPlan, concurrency: int, selectors: int, rows: Sequence[Mapping[str, Any]] = ()
) -> AnytimePlan:
    """``plan`` (made by ``core.run.rounds.plan_for``) as the anytime-valid design; a look adds as many tasks as
    ``concurrency`` slots run at once with ``selectors`` selectors and ``plan.max_rounds`` repeats of a task.
    ``rows``: the test task rows (their digests let a continuation check the tasks already looked at)."""
    import hashlib
    import json

    per_task = max(1, plan.max_rounds * selectors)
    digests = {
        str(r["id"]): hashlib.sha256(json.dumps(dict(r), sort_keys=True, default=str).encode()).hexdigest()
        for r in rows
    }
    return AnytimePlan(
        baseline=plan.baseline,
        candidates=list(plan.candidates),
        max_rounds=plan.max_rounds,
        margin=plan.margin,
        alpha=plan.alpha,
        tasks_per_look=max(1, math.ceil(concurrency / per_task)),
        row_digests=digests,
        out_of_reach=plan.futility is not None,  # (off with --no-futility or a margin, as the group design's rule)
    )


def with_clusters(plan: AnytimePlan, by: str, of: Mapping[str, str], task_ids: Sequence[str]) -> AnytimePlan:
    """``plan`` with the clusters of the split's tasks ``task_ids`` (``of``: task id -> cluster, a task it lacks
    its own cluster): ``K`` is the largest (a continuation takes the recorded one, ``take_recorded``)."""
    keyed = {t: of.get(t, "\0" + t) for t in map(str, task_ids)}
    counts: dict[str, int] = {}
    for key in keyed.values():
        counts[key] = counts.get(key, 0) + 1
    return plan.model_copy(update=dict(cluster_by=by, cluster_of=keyed, cluster_cap=max(counts.values(), default=1)))


__all__ = ["AnytimePlan", "anytime_plan", "anytime_share", "with_clusters"]
