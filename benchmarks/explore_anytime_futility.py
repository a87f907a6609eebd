"""The anytime-valid design's futility rule (issue 25, item 4; core.stats.sequential.anytime_tracker
``_Stream.in_reach``): the same seeded streams through ``AnytimeTracker`` with the rule off and on, at 50 and 200 tasks,
no effect and an effect of 0.2 (pass/fail scores, task success p ~ Beta(2, 2), one repeat, looks every 4 tasks, one
candidate). It prints each cell's mean tasks looked at and the share of each decision: the rule must leave the
improvement and regression shares exactly as they are (it stops only comparisons that could not be decided within the
split) and use fewer tasks. Not part of run_all.py; the figures are in RESULTS.md's note.

``nice -n 10 python benchmarks/explore_anytime_futility.py`` (600 streams per cell: about 30 s on 2 shared CPUs).
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from hermit_tui.core.stats.sequential.anytime_plan import AnytimePlan
from hermit_tui.core.stats.sequential.anytime_tracker import AnytimeTracker


class _Record:
    def __init__(self, score: float):
        self.judge = type("Judge", (), {"score": score})()


def cell(tasks: int, effect: float, streams: int, rule: bool) -> tuple[float, dict[str, float]]:
    """(mean tasks looked at, share of each decision) over ``streams`` seeded streams (the same for either rule)."""
    rng = np.random.default_rng(tasks * 10 + int(effect * 10))
    used: list[int] = []
    decisions: dict[str, int] = {}
    ids = [f"t{i}" for i in range(tasks)]
    for _ in range(streams):
        p = rng.beta(2, 2, tasks)
        a = (rng.random(tasks) < p).astype(float)
        b = (rng.random(tasks) < np.clip(p + effect, 0, 1)).astype(float)
        records: dict[str, Any] = {
            "a": {(t, 1): _Record(a[i]) for i, t in enumerate(ids)},
            "b": {(t, 1): _Record(b[i]) for i, t in enumerate(ids)},
        }
        plan = AnytimePlan(baseline="a", candidates=["b"], max_rounds=1, tasks_per_look=4, out_of_reach=rule)
        tracker = AnytimeTracker(plan, ids)
        while not tracker.finished:
            tracker.check(records)
        used.append(tracker.tasks_looked)
        last = tracker.last("b")
        decision = last.decision if last is not None else "undecided"
        decisions[decision] = decisions.get(decision, 0) + 1
    return float(np.mean(used)), {k: v / streams for k, v in sorted(decisions.items())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=600, help="streams per cell (default 600)")
    args = parser.parse_args(argv)
    print("| tasks | effect | rule | mean tasks looked at | decisions |\n|---|---|---|---|---|")
    for tasks in (50, 200):
        for effect in (0.0, 0.2):
            for rule in (False, True):
                mean, shares = cell(tasks, effect, args.streams, rule)
                text = ", ".join(f"{k} {v:.3f}" for k, v in shares.items())
                print(f"| {tasks} | {effect:g} | {'on' if rule else 'off'} | {mean:.1f} | {text} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
