"""Each selector's summary.json while a launch writes it: hermit's summary of the records
(``core.records.results.summarize``) plus hermit-tui's keys, refreshed as the launch goes (``complete: false``,
``in_progress``) and written once more at the end. Every key is declared on ``core.records.results.Summary``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

from hermit_tui.core.records.folders import SUMMARY
from hermit_tui.core.records.journal import SelectorJournal, now_iso
from hermit_tui.core.records.results import InProgress, SequentialEntry, Summary, summarize, write_atomic
from hermit_tui.core.run.continuing import ContinuePlan
from hermit_tui.core.run.costs import CostCap
from hermit_tui.core.run.executors import Executor
from hermit_tui.core.version import __version__
from hermit_tui.core.workspace.fingerprint import Fingerprint


class SummaryWriter:
    """What every summary of one launch shares (the protocol, the settings), and how one is written."""

    def __init__(
        self,
        *,
        task_ids: Sequence[str],
        limit: int | None,
        concurrency: int,
        executor: Executor,
        fingerprint: Fingerprint,
        warnings: Sequence[str],
        cost_cap: CostCap | None,
        plan: ContinuePlan,
    ):
        self.task_ids = list(task_ids)
        self.limit, self.concurrency, self.executor = limit, concurrency, executor
        self.fingerprint, self.warnings = fingerprint, list(warnings)
        self.cost_cap, self.plan = cost_cap, plan

    def summary(
        self,
        journal: SelectorJournal,
        *,
        final: bool,
        repeats: int,
        cancelled: bool,
        stop_reason: str | None,
        stopped: str | None,
        sequential: SequentialEntry | None,
    ) -> Summary:
        """Selector ``journal``'s summary now. ``repeats``: what the summary says (the rounds a launch that stopped
        when decided ran); ``cancelled``: the launch was cancelled (it says so when attempts are left);
        ``stop_reason``: --max-cost stopped it; ``stopped``: it stopped short otherwise (hung threads)."""
        sel = journal.selector
        complete = len(journal.records) == journal.total
        earlier = self.plan.earlier.get(sel.label)
        outside = sum(1 for r in journal.records.values() if not 0 <= r.judge.score <= 1)
        if sequential is None and earlier is not None and self.plan.retry:
            sequential = earlier.sequential  # what the launch decided, before these attempts were re-run
        fingerprint = self.fingerprint
        if fingerprint.repeats != repeats:  # the rounds run
            fingerprint = fingerprint.model_copy(update={"repeats": repeats})
        extra: dict[str, Any] = dict(
            label=sel.label,
            expected_attempts=journal.total,
            complete=complete,
            cancelled=True if (final and cancelled and journal.pending) else None,
            smoke_limit=self.limit,
            content_hash=sel.content_hash,
            started_at=journal.started_at,
            finished_at=now_iso() if final else None,
            hermit_tui_version=__version__,
            concurrency=self.concurrency,
            retries=journal.retries or None,
            executor=self.executor.name,
            fingerprint=fingerprint,
            sequential=sequential,
            in_progress=None if final else InProgress(pid=os.getpid(), updated_at=now_iso()),
            **self.executor.summary_keys(sel.label),
            scores_outside_unit=outside or None,
            max_cost_usd=self.cost_cap.max_usd if self.cost_cap is not None else None,
            stop_reason=stop_reason if self.cost_cap is not None and not complete else None,
            stopped=stopped if journal.pending else None,
            protocol_warnings=self.warnings or None,
        )
        wall = time.perf_counter() - journal.started + (earlier.wall_s if earlier else 0.0)
        return summarize(
            [*journal.records.values(), *journal.foreign],
            adapter=sel.text,
            commit=sel.commit,
            task_ids=self.task_ids,
            repeats=repeats,
            wall_s=wall,
            **extra,
        )

    def write(self, journal: SelectorJournal, summary: Summary) -> None:
        """Replace the selector's summary.json (readers see the old or the new one); OSError when it cannot."""
        write_atomic(journal.folder / SUMMARY, summary.to_json())
        journal.last_summary = time.monotonic()


__all__ = ["SummaryWriter"]
