"""The looks of the group-sequential design, when and in which order: after batches of round 1's tasks in the
order of their ids' sha256 (:func:`look_schedule`, :func:`look_order`), or, for tasks clustered above the task,
after whole clusters in the clusters' sha256 order (:func:`cluster_look_order`, :func:`cluster_schedule`), then
after each later round; and their critical values (:func:`look_boundaries`, :func:`round_boundaries`).

A launch runs rounds (every test task once per selector). It looks after each whole round and, with 50 tasks or
more, also within the first round, after batches of its tasks taken in a fixed order (:func:`look_schedule`,
:func:`look_order`): rounds are repeats and shrink only the run-to-run noise, while the variance that matters
shrinks with tasks, so where one round of many tasks already decides, only looks within it can stop earlier. Such a
design counts information in attempts (:func:`look_boundaries`) and spends by Kim & DeMets' power family
(``a t^0.6``; Kim & DeMets 1987, Biometrika 74:149), which spends enough at the first looks to stop there
(``core.stats.sequential.spending`` describes the design that looks after whole rounds only).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache

import numpy as np

from hermit_tui.core.stats.sequential.spending import ALPHA, Spending, spending_at, spending_boundaries

MIN_BATCH = 25  # tasks at the first look within the first round (and the step between its looks)
MAX_BATCHES = 8  # looks within the first round at most
ORDER = "sha256 of the task id"  # the protocol-determined order in which the first round's looks take the tasks


def design_units(tasks: int, max_rounds: int, batches: int = 1) -> tuple[float, ...]:
    """The information of each look of :func:`look_schedule` in attempts (``n / G`` within round 1, ``r`` after
    round ``r``): what the boundaries assume (``between = 0``)."""
    if batches <= 1:
        return tuple(float(r) for r in range(1, max_rounds + 1))
    return tuple(n / tasks if r == 1 else float(r) for r, n in look_schedule(tasks, max_rounds, batches))


@lru_cache(maxsize=256)
def round_boundaries(max_rounds: int, alpha: float = ALPHA, spending: Spending = "hsd") -> tuple[float, ...]:
    """The critical values of rounds 1..``max_rounds`` spending ``alpha`` in total by ``spending`` (the
    Hwang-Shih-DeCani function, or ``obf`` for summaries written before issue 25, item 4): spending time ``r / R``,
    looks correlated as ``sqrt(r / s)`` (information proportional to the rounds)."""
    info = tuple(float(r) for r in range(1, max_rounds + 1))
    times = tuple(r / max_rounds for r in info)
    return tuple(spending_boundaries(info, times, alpha, spend=lambda t: spending_at(t, alpha, spending)))


def first_round_batches(tasks: int) -> int:
    """The looks within the first round a launch on ``tasks`` test tasks plans: one per :data:`MIN_BATCH` tasks, at
    most :data:`MAX_BATCHES` (1: a look after the whole round only)."""
    return max(1, min(MAX_BATCHES, tasks // MIN_BATCH))


def look_schedule(tasks: int, max_rounds: int, batches: int = 1) -> tuple[tuple[int, int], ...]:
    """(round, paired tasks) of each look: after the first ``round(k tasks / batches)`` tasks of round 1 in the
    look order (:func:`look_order`), k = 1..batches, then after each whole round 2..``max_rounds``."""
    if tasks < 1 or max_rounds < 1 or not 1 <= batches <= max(1, tasks):
        raise ValueError(f"no look schedule for {tasks} tasks, {max_rounds} rounds, {batches} looks in round 1")
    first = [(1, max(1, round(tasks * k / batches))) for k in range(1, batches + 1)]
    return tuple(first + [(r, tasks) for r in range(2, max_rounds + 1)])


def look_order(task_ids: Sequence[str]) -> list[str]:
    """The order in which the first round's looks take the tasks: by the sha256 of each task id (:data:`ORDER`),
    fixed by the protocol before any attempt and unrelated to the tasks' content or to which attempt finishes
    first (a prefix of a file's order could be its easiest tasks: the ordered-stream caveat)."""
    import hashlib

    return sorted(task_ids, key=lambda t: (hashlib.sha256(str(t).encode()).hexdigest(), str(t)))


@lru_cache(maxsize=256)
def look_boundaries(
    tasks: int, max_rounds: int, batches: int = 1, alpha: float = ALPHA, spending: Spending = "hsd"
) -> tuple[float, ...]:
    """The critical values of the looks of :func:`look_schedule`. The information of a look is counted in
    attempts, ``u = n / G`` at a look after ``n`` of the ``G`` tasks of round 1 and ``u = r`` after round ``r``:
    the spending time is ``u / R`` and two looks are correlated as ``sqrt(u / v)``. That is exact within round 1
    (``sqrt(n / n')`` whatever the tasks' spread) and, across rounds, the least correlation any split of the
    variance gives (``between = 0``; see the module's docstring). With ``batches = 1`` these are
    :func:`round_boundaries`."""
    if batches <= 1:
        return round_boundaries(max_rounds, alpha, spending)
    units = tuple(n / tasks if r == 1 else float(r) for r, n in look_schedule(tasks, max_rounds, batches))
    times = tuple(u / max_rounds for u in units)
    return tuple(spending_boundaries(units, times, alpha, spend=lambda t: spending_at(t, alpha, spending)))


CLUSTER_ORDER = "sha256 of the cluster, then of the task id within it"
MIN_CLUSTERS_PER_LOOK = 4  # a look within round 1 adds this many clusters or more (and leaves as many for later)


def cluster_key(task_id: str, cluster_of: Mapping[str, str]) -> str:
    """The cluster of ``task_id`` (a task the mapping does not name: a cluster of its own, as in
    ``core.stats.clusters``)."""
    from hermit_tui.core.stats.clusters import OWN

    return cluster_of.get(task_id, OWN + task_id)


def cluster_look_order(task_ids: Sequence[str], cluster_of: Mapping[str, str]) -> list[str]:
    """The clustered design's look order (:data:`CLUSTER_ORDER`): the clusters by the sha256 of their name, each
    cluster's tasks together, by the sha256 of their ids. Fixed by the protocol (the tasks and their clusters)
    before any attempt, so a prefix of whole clusters is a draw of clusters unrelated to their content."""
    import hashlib

    def h(text: str) -> str:
        return hashlib.sha256(text.encode()).hexdigest()

    keyed = [(cluster_key(str(t), cluster_of), str(t)) for t in task_ids]
    return [t for _, t in sorted(keyed, key=lambda kt: (h(kt[0]), kt[0], h(kt[1]), kt[1]))]


def cluster_codes(ordered_ids: Sequence[str], cluster_of: Mapping[str, str]) -> np.ndarray:
    """Integer codes of the tasks' clusters, ``0..C-1`` in order of first appearance."""
    seen: dict[str, int] = {}
    return np.array([seen.setdefault(cluster_key(str(t), cluster_of), len(seen)) for t in ordered_ids], np.int64)


def clustered_batches(tasks: int, clusters: int) -> int:
    """The looks within the first round the clustered design plans by default: :func:`first_round_batches`, at most
    one per :data:`MIN_CLUSTERS_PER_LOOK` clusters (:func:`cluster_schedule` may make fewer)."""
    return max(1, min(first_round_batches(tasks), clusters // MIN_CLUSTERS_PER_LOOK))


def _cluster_ends(codes: np.ndarray) -> list[int]:
    """The tasks seen (a count) at the end of each cluster of ``codes`` (in the look order: a cluster's tasks are
    together)."""
    n = len(codes)
    return [i + 1 for i in range(n) if i == n - 1 or codes[i + 1] != codes[i]]


def cluster_schedule(codes: Sequence[int] | np.ndarray, max_rounds: int, batches: int) -> tuple[tuple[int, int], ...]:
    """(round, paired tasks) of each look of the clustered design: round 1 is looked at after whole clusters (a
    look never splits one), at the end of the cluster nearest to ``k / batches`` of the tasks (k = 1..batches - 1),
    each look adding :data:`MIN_CLUSTERS_PER_LOOK` clusters or more and leaving as many for the rest of the round,
    then after the whole round and each later round. Where the clusters allow fewer looks than ``batches``, the
    schedule of the looks they allow (a fixed point: the schedule of its own number of looks is itself)."""
    codes = np.asarray(codes, dtype=np.int64)
    ends = _cluster_ends(codes)
    g, c = len(codes), len(ends)
    if g < 1 or max_rounds < 1 or batches < 1:
        raise ValueError(f"no look schedule for {g} tasks, {max_rounds} rounds, {batches} looks in round 1")
    want = batches
    while True:
        first, prev = [], -1
        for k in range(1, want):
            options = range(prev + MIN_CLUSTERS_PER_LOOK, c - MIN_CLUSTERS_PER_LOOK)
            if not options:
                break
            j = min(options, key=lambda i: (abs(ends[i] - g * k / want), i))
            first.append(ends[j])
            prev = j
        first.append(g)
        if len(first) == want:
            break
        want = len(first)
    return tuple([(1, n) for n in first] + [(r, g) for r in range(2, max_rounds + 1)])


__all__ = [
    "CLUSTER_ORDER",
    "MIN_CLUSTERS_PER_LOOK",
    "cluster_codes",
    "cluster_key",
    "cluster_look_order",
    "cluster_schedule",
    "clustered_batches",
    "design_units",
    "first_round_batches",
    "look_boundaries",
    "look_order",
    "look_schedule",
    "MAX_BATCHES",
    "MIN_BATCH",
    "ORDER",
    "round_boundaries",
]
