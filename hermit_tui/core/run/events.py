"""The engine's event stream: what a run reports as it goes. The dashboard and the CLI subscribe to it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel

from hermit_tui.core.records.results import AttemptRecord, Summary

if TYPE_CHECKING:  # the statistics (numpy) load when a launch has rounds, not for every launch's events
    from hermit_tui.core.stats.sequential.look import SequentialLook
    from hermit_tui.core.stats.sequential.tracker import SequentialPlan
else:
    SequentialPlan = SequentialLook = Any  # as the engine builds them: the objects themselves, not validated again


class Event(BaseModel):
    kind: str


class RunStarted(Event):
    kind: Literal["run_started"] = "run_started"
    labels: list[str]
    task_ids: list[str]
    repeats: int
    concurrency: int
    total: int
    max_cost_usd: float | None = None  # --max-cost of the launch
    sequential: SequentialPlan | None = None  # --stop-when-decided: the baseline, candidates and maximum rounds


class SelectorStarted(Event):
    kind: Literal["selector_started"] = "selector_started"
    label: str
    selector: str
    commit: str | None
    total: int
    folder: str | None = None  # eval/<label>/: where its files (and transcripts) are written
    resolved: str | None = None  # what the selector was resolved to, in words (Selector.resolution)


class AttemptStarted(Event):
    kind: Literal["attempt_started"] = "attempt_started"
    label: str
    task_id: str
    repeat: int


class AttemptFinished(Event):
    kind: Literal["attempt_finished"] = "attempt_finished"
    label: str
    record: AttemptRecord
    traceback: str | None = None


class SelectorFinished(Event):
    kind: Literal["selector_finished"] = "selector_finished"
    label: str
    summary: Summary


class CardUpdated(Event):
    kind: Literal["card_updated"] = "card_updated"
    commit: str | None
    moved_tag: bool
    message: str


Level = Literal["info", "warning", "error"]


class RunLog(Event):
    kind: Literal["log"] = "log"
    level: Level = "info"
    message: str


class RunCancelled(Event):
    kind: Literal["run_cancelled"] = "run_cancelled"
    finished: int
    total: int


class RoundChecked(Event):
    """--stop-when-decided: a look of round ``round`` is complete (the whole round, or within round 1 its first
    ``tasks`` tasks in the look order) and every candidate was compared with the baseline."""

    kind: Literal["round_checked"] = "round_checked"
    round: int
    max_rounds: int
    baseline: str
    looks: list[SequentialLook]
    stopped: bool = False  # every candidate is decided: no further round starts
    tasks: int | None = None  # the paired tasks of this look (fewer than total_tasks: a look within round 1)
    total_tasks: int | None = None


class RunFinished(Event):
    kind: Literal["run_finished"] = "run_finished"
    summaries: dict[str, Summary]
    cancelled: bool
    wall_s: float
    stop_reason: str | None = None  # why it stopped before the end without a cancel (--max-cost)


AnyEvent = (
    RunStarted
    | SelectorStarted
    | AttemptStarted
    | AttemptFinished
    | SelectorFinished
    | CardUpdated
    | RunLog
    | RunCancelled
    | RunFinished
    | RoundChecked
)
