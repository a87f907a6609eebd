"""The order attempts start in: repeat by repeat and task by task (a task's selectors side by side, so partial
results stay paired), and within a repeat the longest tasks first when earlier attempts tell how long they take.

Concurrency slots taking attempts in a fixed order finish unevenly: a long attempt started near the end of the run
holds the whole launch while the other slots sit idle. Starting the longest first (longest processing time first,
the classic list-scheduling rule) leaves short attempts for the end, where they fill the slots evenly.

How long an attempt takes is learnt from what is already known (``Durations``): the recorded attempts a resume or a
retry continues, the earlier evaluation of the same label that a fresh launch archives, and the attempts of this
launch as they finish (the earlier repeats, the other selectors on the same task). A task's expected time under a
selector is the mean of that selector's known times on the task, else of the other selectors' times on it; a task
nothing is known about counts as the mean of every known time. A repeat is ordered when its first attempt is
taken, and a task still waiting moves to its place as soon as one of its times becomes known (the tasks of the
previous repeat still running when a repeat begins are the long ones: they are not taken for average ones); when
nothing is known about any of its tasks a repeat keeps the task order.

What never changes: which attempts run (the order only permutes them), the repeat each belongs to (rounds of
``--stop-when-decided`` still end repeat by repeat), the selectors of a task one after the other in the launch's
order, and the results (an attempt's record does not depend on when it starts; results.jsonl is appended in
finishing order as before). An ordered stream (``data.shuffle: false``) and a launch at concurrency 1 keep the task
order as it is: a stream's order is part of its benchmark's protocol, and one slot gains nothing.
"""

from __future__ import annotations

import collections
import heapq
import os
from collections.abc import Callable, Hashable, Iterator, Sequence
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
        self.total = 0.0

    def add(self, label: str, task_id: str, seconds: float | None) -> None:
        if seconds is None or not seconds >= 0 or seconds == float("inf"):
            return  # not a time (a NaN or an infinity another tool wrote)
        self._by_task.setdefault(task_id, {}).setdefault(label, []).append(float(seconds))
        self.count += 1
        self.total += float(seconds)

    @property
    def mean(self) -> float | None:
        """The mean of every known time (what a task nothing is known about is taken to need)."""
        return self.total / self.count if self.count else None

    def knows(self, task_id: str) -> bool:
        return task_id in self._by_task

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

    def group_total(self, group: Sequence[Attempt]) -> float | None:
        """The expected time of a task's attempts together, or None when nothing is known about the task."""
        if not self.knows(group[0].task_id):
            return None
        return sum(self.expected(a.label, a.task_id) or 0.0 for a in group)


def keeps_order(*, shuffle: bool, concurrency: int) -> bool:
    """True when the launch runs its attempts in the task order as it is (an ordered stream, or one slot)."""
    return not shuffle or concurrency <= 1


def _groups(block: Sequence[Attempt]) -> list[list[Attempt]]:
    """A repeat's attempts cut into tasks: consecutive attempts on one task (its selectors, in the launch's order)."""
    groups: list[list[Attempt]] = []
    for attempt in block:
        if groups and groups[-1][0].task_id == attempt.task_id:
            groups[-1].append(attempt)
        else:
            groups.append([attempt])
    return groups


class _Block:
    """One repeat's tasks not started yet, longest expected first, with what is known at each take: a task whose
    time becomes known while it waits moves to its place (a heap of the known, the unknown in task order)."""

    def __init__(self, block: Sequence[Attempt], durations: Durations):
        self.durations = durations
        self.groups = _groups(block)
        self.where = {group[0].task_id: i for i, group in enumerate(self.groups)}
        self.taken = [False] * len(self.groups)
        self.version = [0] * len(self.groups)
        self.heap: list[tuple[float, int, int]] = []  # (-expected total, task index, version)
        self.unknown: collections.deque[int] = collections.deque()
        for i, group in enumerate(self.groups):
            total = durations.group_total(group)
            if total is None:
                self.unknown.append(i)
            else:
                self.heap.append((-total, i, 0))
        heapq.heapify(self.heap)

    def learnt(self, task_id: str) -> None:
        """A time of ``task_id`` became known: its place among the waiting tasks follows."""
        i = self.where.get(task_id)
        if i is None or self.taken[i]:
            return
        total = self.durations.group_total(self.groups[i])
        if total is not None:
            self.version[i] += 1
            heapq.heappush(self.heap, (-total, i, self.version[i]))

    def take(self) -> list[Attempt] | None:
        """The next task's attempts: the longest expected of the known ones, unless a task nothing is known about
        (taken as the mean known time per attempt) is expected longer; None when every task has started."""
        heap, unknown, taken = self.heap, self.unknown, self.taken
        while heap and (taken[heap[0][1]] or heap[0][2] != self.version[heap[0][1]]):
            heapq.heappop(heap)
        while unknown and (taken[unknown[0]] or self.durations.knows(self.groups[unknown[0]][0].task_id)):
            unknown.popleft()  # started, or known since (its entry is in the heap)
        if not heap and not unknown:
            return None
        pick: int
        if heap and unknown:
            mean = self.durations.mean or 0.0
            first = unknown[0]
            pick = first if mean * len(self.groups[first]) > -heap[0][0] else heapq.heappop(heap)[1]
            if pick == first:
                unknown.popleft()
        elif heap:
            pick = heapq.heappop(heap)[1]
        else:
            pick = unknown.popleft()
        taken[pick] = True
        return self.groups[pick]


def longest_first(block: Sequence[Attempt], durations: Durations) -> list[Attempt]:
    """One repeat's attempts in the order they would start with what is known now (nothing learnt meanwhile)."""
    ordered = _Block(block, durations)
    out: list[Attempt] = []
    while (group := ordered.take()) is not None:
        out.extend(group)
    return out


class Schedule:
    """The attempts of a launch in the order they start (see the module's docstring). Iterate it from the event
    loop only; ``learn`` what each finished attempt took: a task of the current repeat still waiting moves to its
    place at once, so the tasks still running when a repeat begins (the long ones) are not taken for average ones."""

    def __init__(
        self,
        order: Sequence[Attempt],
        durations: Durations | None = None,
        *,
        reorder: bool = True,
        block_of: Callable[[Attempt], Hashable] | None = None,
    ):
        """``block_of``: what an attempt is reordered within (default its repeat); the sequential runner passes its
        look, so a task of a later look within round 1 never starts before the tasks of the look being run (it
        would wait at the look's barrier holding a slot, and with every slot so held the launch would stall)."""
        self.durations = durations if durations is not None else Durations()
        self.reorder = reorder
        key = block_of if block_of is not None else (lambda a: a.repeat)
        self._blocks: list[list[Attempt]] = []
        keys: list[Hashable] = []
        for attempt in order:  # the launch's order is repeat by repeat: consecutive runs of one block
            k = key(attempt)
            if self._blocks and keys[-1] == k:
                self._blocks[-1].append(attempt)
            else:
                self._blocks.append([attempt])
                keys.append(k)
        self._current: _Block | None = None
        self.started: list[Attempt] = []  # in the order they were taken

    def learn(self, label: str, task_id: str, seconds: float | None) -> None:
        before = self.durations.count
        self.durations.add(label, task_id, seconds)
        if self._current is not None and self.durations.count != before:
            self._current.learnt(task_id)

    def __iter__(self) -> Iterator[Attempt]:
        for block in self._blocks:
            if not self.reorder:
                for attempt in block:
                    self.started.append(attempt)
                    yield attempt
                continue
            self._current = current = _Block(block, self.durations)
            while (group := current.take()) is not None:
                for attempt in group:
                    self.started.append(attempt)
                    yield attempt
        self._current = None


def earlier_results(folder: Path | None) -> Path | None:
    """The results.jsonl of an archived evaluation folder, if it has one."""
    if folder is None:
        return None
    path = Path(folder) / "results.jsonl"
    return path if os.path.isfile(path) else None


__all__ = ["DURATION_BYTES", "Durations", "Schedule", "earlier_results", "keeps_order", "longest_first"]
