"""Longest-first by task group against longest-first by attempt, at zero overhead (issue 30 part 2; RESULTS.md).

The runner's ``Schedule`` (core/run/schedule.py) orders a repeat's tasks by the expected total of their selectors'
attempts, a task's selectors side by side. This drives the real ``Schedule`` through an event simulation of
``concurrency`` slots (each attempt takes its planned latency, each finished attempt is learnt before the slot
takes the next, as the chained runner does) and the same with every attempt its own group, on five seeds of both
synth workloads; beside them the random task orders' mean and both clairvoyant bounds. Prints efficiency = ideal /
simulated wall.

    python benchmarks/explore_schedule.py
"""

from __future__ import annotations

import hashlib
import heapq
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import synth

from hermit_tui.core.run import schedule as sch
from hermit_tui.core.run.attempts import Attempt

LABELS = ["none", "root", "final"]


class _PerAttempt(sch._Block):
    """Every attempt its own group (ordered by its own expected time); a task learnt moves all its attempts."""

    def __init__(self, block: list[Attempt], durations: sch.Durations):
        super().__init__(block, durations)
        self.where_all: dict[str, list[int]] = {}
        for i, group in enumerate(self.groups):
            self.where_all.setdefault(group[0].task_id, []).append(i)

    def learnt(self, task_id: str) -> None:
        for i in self.where_all.get(task_id, ()):
            total = None if self.taken[i] else self.durations.group_total(self.groups[i])
            if total is not None:
                self.version[i] += 1
                heapq.heappush(self.heap, (-total, i, self.version[i]))


def simulate(project: Path, ids: list[str], repeats: int, concurrency: int, per_attempt: bool) -> float:
    mod = synth.load_pipeline_module(project)
    keys = {
        "none": "none",
        **{n: hashlib.sha256(synth.adapter_text(n).encode()).hexdigest()[:16] for n in synth.SKILLS},
    }

    def lat(a: Attempt) -> float:
        return mod.latency_s(a.task_id, a.repeat, keys[a.label])

    groups, block = sch._groups, sch._Block
    if per_attempt:  # patched for the simulation only (the module's own names, put back below)
        setattr(sch, "_groups", lambda b: [[a] for a in b])  # noqa: B010
        setattr(sch, "_Block", _PerAttempt)  # noqa: B010
    try:
        order = [Attempt(label, {"id": t}, r, None) for r in range(1, repeats + 1) for t in ids for label in LABELS]
        schedule = sch.Schedule(order)
        taking = iter(schedule)
        slots: list[tuple[float, int, Attempt]] = []
        for a in [next(taking) for _ in range(concurrency)]:
            heapq.heappush(slots, (lat(a), id(a), a))
        end = 0.0
        while slots:
            t, _, a = heapq.heappop(slots)
            end = max(end, t)
            schedule.learn(a.label, a.task_id, round(lat(a), 2))  # what its record says
            nxt = next(taking, None)
            if nxt is not None:
                heapq.heappush(slots, (t + lat(nxt), id(nxt), nxt))
        assert len(schedule.started) == len(order)
        return end
    finally:
        setattr(sch, "_groups", groups)  # noqa: B010
        setattr(sch, "_Block", block)  # noqa: B010


def main() -> int:
    tasks, repeats, concurrency = 200, 3, 16
    for workload in ("persistent", "independent"):
        for seed in (7, 8, 9, 10, 11):
            with tempfile.TemporaryDirectory() as tmp:
                p = Path(tmp) / "p"
                synth.make_project(p, tasks=tasks, concurrency=concurrency, repeats=repeats, tree=False,
                                   workload=workload, seed=seed)  # fmt: skip
                ids = synth.test_ids(p)
                ideal = synth.ideal_wall(synth.planned_latencies(p, LABELS, ids, repeats), concurrency)
                fixed = synth.runner_order(p, LABELS, ids, repeats)
                n = len(LABELS) * tasks
                clair_group = synth.list_schedule(synth.clairvoyant_order(fixed, len(LABELS), tasks), concurrency)
                clair_each = synth.list_schedule(
                    [x for b in range(0, len(fixed), n) for x in sorted(fixed[b : b + n], reverse=True)], concurrency
                )
                rnd = [ideal / w for w in synth.random_orders(fixed, len(LABELS), tasks, concurrency, orders=100)]
                group = simulate(p, ids, repeats, concurrency, per_attempt=False)
                each = simulate(p, ids, repeats, concurrency, per_attempt=True)
                print(
                    f"{workload} seed {seed}: random orders {statistics.mean(rnd):.4f}; longest-first by task group "
                    f"{ideal / group:.4f}, by attempt {ideal / each:.4f}; clairvoyant by group "
                    f"{ideal / clair_group:.4f}, by attempt {ideal / clair_each:.4f}",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
