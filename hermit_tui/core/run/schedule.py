"""The order attempts start in: repeat by repeat and task by task (a task's selectors side by side, so partial
results stay paired), and within a repeat the longest tasks first when earlier attempts tell how long they take.

Concurrency slots taking attempts in a fixed order finish unevenly: a long attempt started near the end of the run
holds the whole launch while the other slots sit idle. Starting the longest first (longest processing time first,
the classic list-scheduling rule) leaves short attempts for the end, where they fill the slots evenly.

How long an attempt takes is learnt from what is already known (``Durations``): the recorded attempts a resume or a
retry continues, the earlier evaluation of the same label that a fresh launch archives, and the attempts of this
launch as they finish (the earlier repeats, the other selectors on the same task). A task's expected time under a
selector is the mean of that selector's known times on the task, else of the other selectors' times on it; a task
nothing is known about counts as the mean of the tasks that are known. A repeat is ordered when its first attempt is
taken, with what is known then; when nothing is known about any of its tasks it keeps the task order.

What never changes: which attempts run (the order only permutes them), the repeat each belongs to (rounds of
``--stop-when-decided`` still end repeat by repeat), the selectors of a task one after the other in the launch's
order, and the results (an attempt's record does not depend on when it starts; results.jsonl is appended in
finishing order as before). An ordered stream (``data.shuffle: false``) and a launch at concurrency 1 keep the task
order as it is: a stream's order is part of its benchmark's protocol, and one slot gains nothing.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import msgspec

from hermit_tui.core.run.attempts import Attempt

#: At most this much of an earlier results.jsonl is read for durations (the estimate needs no more; a huge file is
#: not read whole before the first attempt starts).
DURATION_BYTES = 64 << 20


class _Timed(msgspec.Struct, gc=False):
    """The three keys of a results.jsonl line that say how long an attempt took (the others are skipped)."""

    id: str | int
    repeat: int = 1
    wall_s: float | None = None


_decode_timed = msgspec.json.Decoder(_Timed).decode


class Durations:
    """Known attempt times, by selector label and task id."""

    def __init__(self) -> None:
        self._by_task: dict[str, dict[str, list[float]]] = {}  # task id -> label -> seconds
        self.count = 0

    def add(self, label: str, task_id: str, seconds: float | None) -> None:
        if seconds is None or not seconds >= 0 or seconds == float("inf"):
            return  # not a time (a NaN or an infinity another tool wrote)
        self._by_task.setdefault(task_id, {}).setdefault(label, []).append(float(seconds))
        self.count += 1

    def read(self, label: str, path: Path, task_ids: set[str]) -> None:
        """Learn from an earlier results.jsonl of ``label``: its attempts on ``task_ids``. A line that cannot be read
        is skipped (this is an estimate: the launch itself reads what it continues, and says what is wrong)."""
        try:
            with open(path, "rb") as fh:
                raw = fh.read(DURATION_BYTES)
        except OSError:
            return
        for line in raw.splitlines():
            if not line.strip():
                continue
            try:
                timed = _decode_timed(line)
            except (msgspec.DecodeError, msgspec.ValidationError):
                continue
            tid = str(timed.id)
            if tid in task_ids:
                self.add(label, tid, timed.wall_s)

    def expected(self, label: str, task_id: str) -> float | None:
        """The expected time of ``label`` on ``task_id``: its own mean there, else the other selectors' mean there,
        else None (nothing known)."""
        known = self._by_task.get(task_id)
        if not known:
            return None
        own = known.get(label)
        if own:
            return sum(own) / len(own)
        others = [x for times in known.values() for x in times]
        return sum(others) / len(others)


def keeps_order(*, shuffle: bool, concurrency: int) -> bool:
    """True when the launch runs its attempts in the task order as it is (an ordered stream, or one slot)."""
    return not shuffle or concurrency <= 1


def longest_first(block: Sequence[Attempt], durations: Durations) -> list[Attempt]:
    """One repeat's attempts, its tasks sorted by their expected total time, longest first (ties and unknown times
    keep the task order; a task's attempts stay together, in the order they had)."""
    groups: list[list[Attempt]] = []
    for attempt in block:
        if groups and groups[-1][0].task_id == attempt.task_id:
            groups[-1].append(attempt)
        else:
            groups.append([attempt])
    expected = [[durations.expected(a.label, a.task_id) for a in group] for group in groups]
    known = [x for times in expected for x in times if x is not None]
    if not known:
        return list(block)
    fill = sum(known) / len(known)  # a task nothing is known about counts as an average one
    totals = [sum(fill if x is None else x for x in times) for times in expected]
    ranked = sorted(range(len(groups)), key=lambda i: -totals[i])  # stable: equal totals keep the task order
    return [attempt for i in ranked for attempt in groups[i]]


class Schedule:
    """The attempts of a launch in the order they start, one repeat ordered at a time (see the module's
    docstring). Iterate it from the event loop only; ``learn`` what each finished attempt took."""

    def __init__(self, order: Sequence[Attempt], durations: Durations | None = None, *, reorder: bool = True):
        self.durations = durations if durations is not None else Durations()
        self.reorder = reorder
        self._blocks: list[list[Attempt]] = []
        for attempt in order:  # the launch's order is repeat by repeat: consecutive runs of one repeat
            if self._blocks and self._blocks[-1][0].repeat == attempt.repeat:
                self._blocks[-1].append(attempt)
            else:
                self._blocks.append([attempt])
        self.started: list[Attempt] = []  # in the order they were taken (what the tests check)

    def learn(self, label: str, task_id: str, seconds: float | None) -> None:
        self.durations.add(label, task_id, seconds)

    def __iter__(self) -> Iterator[Attempt]:
        for block in self._blocks:
            ordered = longest_first(block, self.durations) if self.reorder else block
            for attempt in ordered:
                self.started.append(attempt)
                yield attempt


def earlier_results(folder: Path | None) -> Path | None:
    """The results.jsonl of an archived evaluation folder, if it has one."""
    if folder is None:
        return None
    path = Path(folder) / "results.jsonl"
    return path if os.path.isfile(path) else None


__all__ = ["DURATION_BYTES", "Durations", "Schedule", "earlier_results", "keeps_order", "longest_first"]
