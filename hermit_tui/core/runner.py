"""The evaluation runner: several selectors side by side on the test split, under one protocol.

Attempts of all selectors share one concurrency limit and are scheduled repeat by repeat, task by task, selector by
selector, so that partial results stay paired. Each finished attempt is appended to its selector's results.jsonl
(one writer: the event loop) and reported as an ``AttemptFinished`` event.

A launch can also continue an interrupted evaluation (``resume``: only the missing attempts run) or re-run chosen
attempts of a finished one (``retry``: typically the failed ones; the summary counts them).
"""
from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hermit_tui.core import events as ev
from hermit_tui.core.attempts import Attempt
from hermit_tui.core.callables import load_judge, load_pipeline
from hermit_tui.core.costs import CostCap, check_max_cost
from hermit_tui.core.config import MAX_CONCURRENCY, MAX_REPEATS, MAX_TIMEOUT_MIN
from hermit_tui.core.errors import InputError, RunFailed
from hermit_tui.core.evalstore import RESULTS, SUMMARY, archive_existing, eval_folder, eval_root
from hermit_tui.core.executors import EXECUTORS, CapacityExhausted, Executor, ProcessExecutor
from hermit_tui.core.fingerprint import differences
from hermit_tui.core.journal import (FolderLock, SelectorJournal, WriteFailed, check_eval_folder, now_iso,
                                    remove_stale_temporaries)
from hermit_tui.core.records import ResultsFile, Summary, read_results, read_summary, summarize, write_atomic
from hermit_tui.core.selectors import Selector, materialize, remove_stale_exports, resolve_selectors
from hermit_tui.core.tasks import TaskSet, load_tasks

EventSink = Callable[[ev.Event], None]
SUMMARY_EVERY_S = 2.0  # a running evaluation's summary.json (complete: false) is refreshed this often
MAX_LIMIT = 10 ** 9
MAX_ATTEMPTS = 2_000_000  # attempts of one launch (all selectors): beyond this the schedule alone fills memory


def _version() -> str:
    from hermit_tui import __version__
    return __version__


def _positive_int(value: Any, key: str, most: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"{key} must be a positive whole number, got {str(repr(value))[:40]}")
    if most is not None and value > most:
        raise InputError(f"{key} must be at most {most}, got {str(value)[:40]}")
    return value


class EvalRun:
    """One launch: ``selectors`` evaluated side by side on the config's test split.

    Build it (bad input raises InputError before anything is written), then ``await run()`` or ``run_sync()``;
    ``cancel()`` may be called from any thread.

    - ``retry`` = {label: [(task id, repeat), ...]} re-runs only those attempts of earlier evaluations under the
      protocol they were measured with: the earlier pair is archived first, the retried records replace the earlier
      ones, and the summary counts the retries (re-running only failures can bias a mean).
    - ``resume`` continues interrupted evaluations of ``selectors``: the recorded attempts are kept, only the
      missing ones run, and the protocol must match what was recorded.
    - ``max_cost`` (USD) stops starting new attempts once the attempts of this launch cost that much (attempts in
      flight finish; the summaries say ``stop_reason``; ``resume`` continues later).
    - ``executor`` is "threads" (default), "processes" (each attempt in a worker process that can be killed) or
      "ray" (attempts as tasks on a Ray cluster at ``ray_address``; the driver judges unless ``judge_on_workers``;
      ``retry_lost`` runs an attempt whose worker died once more).
    - ``stop_when_decided`` runs whole rounds (round r = repeat r of every task under every selector; at most
      ``repeats`` of them) and stops after the first round at which every candidate is decided against
      ``baseline`` (default none when given, else the first selector) by the group-sequential test of
      ``core.sequential`` (``margin``: also "equivalent within margin"). Attempts of round r + 1 start only once
      round r is checked (core/stopping.py's RoundGate). A launch that stops after r rounds is complete with
      ``repeats`` r; its summaries say so in ``sequential``.
    """

    def __init__(self, config, selectors: Sequence[str], *, repeats: int | None = None,
                 concurrency: int | None = None, limit: int | None = None, update_card: bool = True,
                 on_event: EventSink | None = None, tasks: TaskSet | None = None,
                 retry: dict[str, list[tuple[str, int]]] | None = None, resume: bool = False,
                 executor: str = "threads", timeout_min: float | None = None,
                 ray_address: str | None = None, judge_on_workers: bool = False, retry_lost: bool = False,
                 max_cost: float | None = None, stop_when_decided: bool = False, baseline: str | None = None,
                 margin: float | None = None):
        config.require_for_eval()
        if executor not in EXECUTORS:
            raise InputError(f"--executor must be one of {', '.join(EXECUTORS)}, got {executor!r}")
        self.config = config
        self.executor_name = executor
        self.concurrency = _positive_int(concurrency if concurrency is not None else config.concurrency,
                                         "agent.concurrency" if concurrency is None else "--concurrency",
                                         MAX_CONCURRENCY)
        self.update_card = update_card
        self.on_event = on_event or (lambda event: None)
        self.tasks = tasks or load_tasks(config)
        self.retry = {label: [(str(t), int(r)) for t, r in keys] for label, keys in (retry or {}).items()}
        self.resume = resume
        self.earlier: dict[str, Summary] = {}
        self.recorded: dict[str, ResultsFile] = {}  # what a retry or a resume starts from, read before any write
        self.stopped: str | None = None  # why the run stopped short (capacity exhausted), for the summary
        # --limit N writes eval/<label>/smoke/ and never touches the label's evaluation; a retry re-runs attempts
        # of the current evaluations, where they are (its limit is the one they were measured with)
        self.smoke = limit is not None and not self.retry
        if self.retry:
            selectors, repeats, limit = self._read_earlier(list(self.retry))
        self.repeats = _positive_int(repeats if repeats is not None else config.repeats, "eval.repeats",
                                     MAX_REPEATS)
        if limit is not None:
            _positive_int(limit, "--limit", MAX_LIMIT)
        self.limit = limit
        rows = self.tasks.rows("test")
        self.test_rows = rows[:limit] if limit else rows
        self.task_ids = [str(r["id"]) for r in self.test_rows]
        if not selectors:
            raise InputError("no adapter selector given (e.g. --adapter none --adapter root --adapter final)")
        self.selectors = resolve_selectors(list(selectors), config)
        self.sequential = self._plan_sequential(stop_when_decided, baseline, margin)
        if len(self.selectors) * len(self.task_ids) * self.repeats > MAX_ATTEMPTS:
            raise InputError(f"{len(self.selectors)} selectors x {len(self.task_ids)} tasks x eval.repeats "
                             f"{self.repeats} is more than {MAX_ATTEMPTS:,} attempts in one launch")
        for sel in self.selectors:  # a folder in the way, a lock holding garbage: refused before any write
            check_eval_folder(*self._parent_and_name(sel.label))
        if self.resume:
            self._check_resumable()
        for sel in self.selectors:
            old = self.earlier.get(sel.label)
            if old is not None and old.commit != sel.commit:
                raise InputError(f"{sel.label}: '{sel.text}' now resolves to {str(sel.commit)[:12]}, not the "
                                 f"{str(old.commit)[:12]} that was measured: re-run the whole evaluation instead")
        # -- Ray executor (hermit_tui/core/ray_executor.py): the driver never imports the pipeline --------------
        self.ray_address, self.judge_on_workers, self.retry_lost = ray_address, judge_on_workers, retry_lost
        if executor == "ray":
            EXECUTORS["ray"]  # InputError when Ray is not installed
            from hermit_tui.core.ray_executor import check_shippable
            check_shippable(config, judge_on_workers=judge_on_workers)
            self.pipeline = None
            self.judge = None if judge_on_workers else load_judge(config)
        else:
            self.pipeline = load_pipeline(config)
            self.judge = load_judge(config)
        # -- end Ray ----------------------------------------------------------------------------------------------
        if timeout_min is not None and (isinstance(timeout_min, bool) or not isinstance(timeout_min, (int, float))
                                        or not 0 < timeout_min <= MAX_TIMEOUT_MIN):
            raise InputError(f"the attempt timeout must be a positive number of minutes up to {MAX_TIMEOUT_MIN} "
                             f"(a week), got {str(repr(timeout_min))[:40]}")
        minutes = timeout_min if timeout_min is not None else config.timeout_min
        self.timeout_s = float(minutes) * 60 if minutes else None
        from hermit_tui.core.fingerprint import compute_fingerprint
        self.fingerprint = compute_fingerprint(config, self.test_rows, repeats=self.repeats, limit=limit)
        self.warnings = list(self.tasks.overlaps())
        if limit:
            self.warnings.append(f"smoke subset: the first {len(self.task_ids)} of {len(rows)} test tasks "
                                 "(a wiring check, not an evaluation)"
                                 + (", written under eval/<label>/smoke/" if self.smoke else ""))
        self._cancel = threading.Event()
        self._force = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._forced: asyncio.Event | None = None
        self.summaries: dict[str, Summary] = {}
        self.cancelled = False
        self.failure: str | None = None
        # -- --max-cost (core/costs.py): no new attempt starts once this launch's cost reaches it ------------------
        try:
            cap = check_max_cost(max_cost)
        except ValueError as exc:
            raise InputError(f"--max-cost: {exc}") from None
        self.cost_cap = CostCap(max_usd=cap) if cap is not None else None
        self.stop_reason: str | None = None  # why the launch stopped early without a cancel (the cap)

    # -- --stop-when-decided (core/stopping.py) -----------------------------------------------------------------------
    def _plan_sequential(self, on: bool, baseline: str | None, margin: float | None):
        self._rounds = None  # the RoundGate of a running launch
        if not on:
            if baseline is not None or margin is not None:
                raise InputError(f"{'--baseline' if baseline is not None else '--margin'} is for "
                                 "--stop-when-decided (add it, or drop the option)")
            return None
        if self.limit:
            raise InputError("--stop-when-decided with --limit: a smoke subset is a wiring check, there is nothing "
                             "to decide (drop one of the two)")
        if self.retry:
            raise InputError("--stop-when-decided cannot re-run chosen attempts (a retry): it decides on whole rounds")
        from hermit_tui.core.stopping import plan_for
        return plan_for(self.selectors, baseline, margin, self.repeats)

    # -- earlier evaluations (retry, resume) -----------------------------------------------------------------------
    def _read_earlier(self, labels: list[str]) -> tuple[list[str], int, int | None]:
        """Selectors, repeats and limit of earlier evaluations, read from their summaries: a retry or a resume
        runs under the protocol they were measured with."""
        texts, repeats, limits = [], set(), set()
        for label in labels:
            path = self._folder(label) / SUMMARY
            if not path.is_file():
                raise InputError(f"{path}: no summary to continue from (run the whole evaluation)")
            summary = read_summary(path)
            self.earlier[label] = summary
            self.recorded[label] = read_results(path.parent / RESULTS)
            texts.append(summary.adapter)
            repeats.add(summary.repeats)
            limits.add(summary.smoke_limit)
        if len(repeats) > 1 or len(limits) > 1:
            raise InputError("the evaluations were measured with different repeats or limits; continue them one "
                             "at a time")
        return texts, repeats.pop(), limits.pop()

    def _fingerprint_for_resume(self):
        from hermit_tui.core.fingerprint import compute_fingerprint
        rows = self.tasks.rows("test")
        rows = rows[:self.limit] if self.limit else rows
        return compute_fingerprint(self.config, rows, repeats=self.repeats, limit=self.limit)

    def _check_resumable(self) -> None:
        """Refuse to resume under another protocol, and say what changed."""
        for sel in self.selectors:
            path = self._folder(sel.label) / SUMMARY
            if not (path.parent / RESULTS).is_file():
                continue  # nothing recorded yet: it simply starts
            if not path.is_file():
                raise InputError(f"{path.parent}: results without a summary (written by another tool?): "
                                 "cannot check the protocol, re-run instead")
            old = read_summary(path)
            changed = self._sequential_changes(old)
            if old.adapter != sel.text:
                changed.append(f"selector {old.adapter!r} -> {sel.text!r}")
            if old.commit != sel.commit:
                changed.append(f"commit {str(old.commit)[:12]} -> {str(sel.commit)[:12]}")
            if old.content_hash != sel.content_hash:
                changed.append("adapter directory content")
            stopped = self.sequential and old.sequential and old.repeats == old.sequential.rounds
            if old.repeats != self.repeats and not stopped:  # a launch that stopped when decided ran fewer rounds
                changed.append(f"repeats {old.repeats} -> {self.repeats}")
            if old.smoke_limit != self.limit:
                changed.append(f"limit {old.smoke_limit} -> {self.limit}")
            recorded = old.fingerprint
            if recorded is not None:
                now = self._fingerprint_for_resume()
                changed += [name for name in differences(recorded, now)
                            if name not in ("repeats", "the smoke limit")]
            if changed:
                raise InputError(f"{sel.label}: cannot resume, the protocol changed since it was recorded: "
                                 + "; ".join(changed))
            self.earlier[sel.label] = old
            self.recorded[sel.label] = read_results(path.parent / RESULTS)  # every selector's, before any write

    # -- where each selector's evaluation goes ---------------------------------------------------------------------
    def _folder(self, label: str) -> Path:
        """``eval/<label>/``, or ``eval/<label>/smoke/`` for a smoke subset (``--limit``)."""
        return eval_folder(self.config.run_dir, label, smoke=self.smoke)

    def _parent_and_name(self, label: str) -> tuple[Path, str]:
        folder = self._folder(label)
        return folder.parent, folder.name

    def _sequential_changes(self, old: Summary) -> list[str]:
        """A stop-when-decided launch resumes only as one, with the same design."""
        if old.sequential is None:
            return ["it was not launched with --stop-when-decided"] if self.sequential else []
        if not self.sequential:
            return ["it was launched with --stop-when-decided: resume it with --stop-when-decided (the dashboard's "
                    "stop early: when decided) and the same baseline and margin"]
        return self.sequential.same_design(old.sequential)

    # -- control -------------------------------------------------------------------------------------------------
    def cancel(self, *, force: bool = False) -> None:
        """Stop scheduling; attempts in flight finish and are kept. ``force`` also abandons the attempts in flight
        (they are not recorded). Safe to call from any thread."""
        self._cancel.set()
        gate, loop = self._rounds, self._loop
        if gate is not None and loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(gate.halt)
        if force:
            self._force.set()
            loop, forced = self._loop, self._forced
            if loop is not None and forced is not None and not loop.is_closed():
                loop.call_soon_threadsafe(forced.set)

    @property
    def cancel_requested(self) -> bool:
        return self._cancel.is_set()

    @property
    def labels(self) -> list[str]:
        return [s.label for s in self.selectors]

    @property
    def total(self) -> int:
        if self.retry:
            return sum(len(v) for v in self.retry.values())
        return len(self.selectors) * len(self.task_ids) * self.repeats

    def run_sync(self) -> dict[str, Summary]:
        return asyncio.run(self.run())

    # -- the run -------------------------------------------------------------------------------------------------
    def _emit(self, event: ev.Event) -> None:
        self.on_event(event)

    def _make_executor(self) -> Executor:
        if self.executor_name == "ray":
            return EXECUTORS["ray"](self.pipeline, self.judge, concurrency=self.concurrency, timeout_s=self.timeout_s,
                                    config=self.config, address=self.ray_address,
                                    judge_on_workers=self.judge_on_workers, retry_lost=self.retry_lost)
        if self.executor_name == "processes":
            return ProcessExecutor(self.pipeline, self.judge, concurrency=self.concurrency, timeout_s=self.timeout_s,
                                   config_path=self.config.path, overrides=self.config.overrides)
        return EXECUTORS[self.executor_name](self.pipeline, self.judge, concurrency=self.concurrency,
                                            timeout_s=self.timeout_s)

    def _reread_recorded(self, root: Path) -> None:
        """Under the locks and before anything is written: read again what a retry or a resume starts from (it
        may have changed since the launch was built); a file that cannot be read refuses the whole launch."""
        for label in list(self.recorded):
            self.recorded[label] = read_results(self._folder(label) / RESULTS)

    def _open_journal(self, sel: Selector, root: Path) -> SelectorJournal:
        folder = self._folder(sel.label)
        total = len(self.task_ids) * self.repeats
        kept = None
        if sel.label in self.retry or (self.resume and sel.label in self.earlier):
            if sel.label in self.retry:
                kept = archive_existing(folder, copy=True)
            read = self.recorded[sel.label]
            for warning in read.skipped:
                self._emit(ev.RunLog(level="warning", message=warning))
            wanted = set(self.task_ids)
            earlier, foreign = {}, []
            for r in read.records:
                if r.id in wanted and 1 <= r.repeat <= self.repeats:
                    earlier[r.key] = r
                else:
                    foreign.append(r)
            if foreign:
                self._emit(ev.RunLog(level="warning", message=(
                    f"{sel.label}: {len(foreign)} recorded attempts are outside this evaluation (task ids not in the "
                    f"test split, or repeats beyond {self.repeats}): ignored, and kept in {RESULTS}")))
            old = self.earlier[sel.label]
            retries = (old.retries or 0) + len(self.retry.get(sel.label, ()))
            journal = SelectorJournal(sel, folder, total, earlier, retries)
            journal.foreign = foreign
            journal.started_at = old.started_at or journal.started_at
        else:
            kept = archive_existing(folder)
            journal = SelectorJournal(sel, folder, total)
        if kept is not None:
            self._emit(ev.RunLog(message=f"{sel.label}: the earlier evaluation was archived in {kept}"))
        journal.open()
        return journal

    def _order(self, adapters: dict[str, Path | None], journals: dict[str, SelectorJournal]) -> list[Attempt]:
        """Repeat by repeat, task by task, selector by selector: partial results stay paired."""
        wanted = {label: set(keys) for label, keys in self.retry.items()}
        order = []
        for r in range(1, self.repeats + 1):
            for task in self.test_rows:
                tid = str(task["id"])
                for sel in self.selectors:
                    journal = journals[sel.label]
                    if self.retry:
                        if (tid, r) not in wanted.get(sel.label, ()):
                            continue
                    elif (tid, r) in journal.records:  # resume: already recorded
                        continue
                    order.append(Attempt(sel.label, task, r, adapters[sel.label], journal.log_dir))
                    journal.pending += 1
        return order

    async def run(self) -> dict[str, Summary]:
        t0 = time.perf_counter()
        root = eval_root(self.config.run_dir)
        try:
            root.mkdir(parents=True, exist_ok=True)
            probe = root / f".write-test-{os.getpid()}"
            probe.write_text("")
            probe.unlink()
        except OSError as exc:
            raise InputError(f"cannot write evaluations under {root}: {exc.strerror or exc}") from None
        journals: dict[str, SelectorJournal] = {}
        with contextlib.ExitStack() as stack:
            for sel in self.selectors:  # every lock first: a refusal writes nothing
                check_eval_folder(*self._parent_and_name(sel.label))
                lock = FolderLock(self._folder(sel.label))
                lock.acquire()
                stack.callback(lock.release)
                if lock.took_over:
                    self._emit(ev.RunLog(level="warning", message=f"{sel.label}: took over the lock of process "
                                         f"{lock.took_over.get('pid')}, which is no longer running"))
            self._reread_recorded(root)
            for sel in self.selectors:  # what a killed run left: temporary files of dead processes
                remove_stale_temporaries(self._folder(sel.label))
            remove_stale_exports()
            # The executor starts before any earlier evaluation is archived: a cluster that cannot be reached
            # (or workers that cannot start) leaves every folder as it was.
            executor = self._executor = self._make_executor()
            await executor.start()
            try:
                await self._launch(root, stack, journals)
            finally:
                await executor.close()
        self.summaries = {label: self.summaries[label] for label in self.labels if label in self.summaries}
        if self.cancelled:
            done = self.total - sum(j.pending for j in journals.values())
            self._emit(ev.RunCancelled(finished=done, total=self.total))
        self._emit(ev.RunFinished(summaries=self.summaries, cancelled=self.cancelled,
                                  wall_s=round(time.perf_counter() - t0, 2), stop_reason=self.stop_reason))
        if self.failure:
            raise RunFailed(self.failure)
        return self.summaries

    async def _launch(self, root: Path, stack: contextlib.ExitStack, journals: dict[str, SelectorJournal]) -> None:
        """Archive or reopen each selector's folder, then run every attempt of the launch."""
        for warning in self.warnings:
            self._emit(ev.RunLog(level="warning", message=warning))
        self._emit(ev.RunStarted(labels=self.labels, task_ids=self.task_ids, repeats=self.repeats,
                                 concurrency=self.concurrency, total=self.total,
                                 max_cost_usd=self.cost_cap.max_usd if self.cost_cap else None,
                                 sequential=self.sequential))
        adapters = {sel.label: stack.enter_context(materialize(sel, self.config)) for sel in self.selectors}
        for sel in self.selectors:
            journal = journals[sel.label] = self._open_journal(sel, root)
            stack.callback(journal.close)
            self._emit(ev.SelectorStarted(label=sel.label, selector=sel.text, commit=sel.commit,
                                          total=journal.total, folder=str(journal.folder)))
            for rec in journal.records.values():  # a retry or a resume shows the earlier records first
                self._emit(ev.AttemptFinished(label=sel.label, record=rec))
        order = self._order(adapters, journals)
        if self.sequential:
            self._open_rounds(order, journals)
        for journal in journals.values():
            self._write_summary(journal, final=False)
        await self._execute(order, journals)
        if self._rounds is not None and self._rounds.stopped:
            self._close_rounds(journals)
        self.cancelled = self._cancel.is_set() and any(j.pending for j in journals.values())
        if not any(j.pending for j in journals.values()):
            self.stop_reason = None  # the cap was reached by the last attempts: nothing was left out
        for journal in journals.values():
            if journal.selector.label not in self.summaries or journal.pending:
                journal.close()
                self.summaries[journal.selector.label] = self._finish(journal)

    async def _execute(self, order: list[Attempt], journals: dict[str, SelectorJournal]) -> None:
        self._loop = asyncio.get_running_loop()
        self._forced = forced = asyncio.Event()
        if self._force.is_set():
            forced.set()
        executor = self._executor
        queue = iter(order)

        async def one(attempt: Attempt):
            work = asyncio.ensure_future(executor.run(attempt))
            force = asyncio.ensure_future(forced.wait())
            try:
                await asyncio.wait({work, force}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                force.cancel()
            if not work.done():  # a forced cancel: the attempt is abandoned, not recorded
                work.cancel()
                return None
            return work.result()

        async def worker() -> None:
            for attempt in queue:  # one shared iterator: each attempt is taken once, in order
                if self._rounds is not None and not await self._rounds.admit(attempt.repeat):
                    return  # every candidate is decided (or the launch is ending)
                if self._cancel.is_set() or self._cost_reached():
                    if self._rounds is not None:
                        self._rounds.halt()  # attempts waiting for this round's end would wait forever
                    return
                self._emit(ev.AttemptStarted(label=attempt.label, task_id=attempt.task_id, repeat=attempt.repeat))
                try:
                    outcome = await one(attempt)
                except CapacityExhausted as exc:
                    if self.failure is None:
                        self.failure = self.stopped = str(exc)
                        self._emit(ev.RunLog(level="error", message=str(exc)))
                    self.cancel()
                    return
                if outcome is None:
                    return
                record, tb = outcome
                journal = journals[attempt.label]
                try:
                    journal.append(record)
                except WriteFailed as exc:
                    if self.failure is None:
                        self.failure = str(exc)
                        self._emit(ev.RunLog(level="error", message=str(exc)))
                    self.cancel()
                    return
                journal.pending -= 1
                self._count_cost(record)
                self._emit(ev.AttemptFinished(label=attempt.label, record=record, traceback=tb))
                if self._rounds is not None:
                    self._report_rounds(self._rounds.finished(attempt.repeat))
                if not 0 <= record.judge.score <= 1:
                    self._emit(ev.RunLog(level="warning", message=f"{attempt.label}: {attempt.task_id} repeat "
                                         f"{attempt.repeat} scored {record.judge.score:g}, outside [0, 1]"))
                if journal.pending == 0 and self._rounds is None:  # sequential: all at the end, with the decision
                    journal.close()
                    self.summaries[attempt.label] = self._finish(journal)
                elif time.monotonic() - journal.last_summary > SUMMARY_EVERY_S:
                    self._write_summary(journal, final=False)

        try:
            await asyncio.gather(*(worker() for _ in range(self.concurrency)))
        finally:
            if forced.is_set():
                executor.abandon()

    # -- the cost cap ------------------------------------------------------------------------------------------
    def _count_cost(self, record) -> None:
        cap = self.cost_cap
        if cap is None:
            return
        was_blind = cap.blind
        cap.add(record.cost_usd)
        if cap.blind and not was_blind:
            self._emit(ev.RunLog(level="warning", message="--max-cost: the attempts so far report no cost; they "
                                 "count once some attempt reports one (their cost is never taken as $0)"))

    def _cost_reached(self) -> bool:
        """True once this launch's cost reached --max-cost: no new attempt starts (the ones in flight finish)."""
        cap = self.cost_cap
        if cap is None:
            return False
        if self.stop_reason is None and cap.reached:
            self.stop_reason = cap.reason()
            self._emit(ev.RunLog(level="warning", message=f"{self.stop_reason}: no new attempt starts, the ones "
                                 "in flight finish; continue later with --resume"))
        return self.stop_reason is not None

    # -- summaries -----------------------------------------------------------------------------------------------
    def _summary(self, journal: SelectorJournal, *, final: bool) -> Summary:
        sel = journal.selector
        complete = len(journal.records) == journal.total
        earlier = self.earlier.get(sel.label)
        outside = sum(1 for r in journal.records.values() if not 0 <= r.judge.score <= 1)
        extra: dict[str, Any] = dict(
            label=sel.label, expected_attempts=journal.total, complete=complete,
            cancelled=True if (final and self._cancel.is_set() and journal.pending) else None,
            smoke_limit=self.limit, content_hash=sel.content_hash, started_at=journal.started_at,
            finished_at=now_iso() if final else None, hermit_tui_version=_version(), concurrency=self.concurrency,
            retries=journal.retries or None, executor=self.executor_name,
            fingerprint=self.fingerprint.model_dump(),
        )
        repeats = self.repeats
        if self.sequential:
            repeats = self._rounds_run()
            extra["fingerprint"]["repeats"] = repeats
            extra["sequential"] = (self._rounds.tracker if self._rounds else self._tracker()).entry(sel.label)
        elif earlier is not None and earlier.sequential is not None and self.retry:
            extra["sequential"] = earlier.sequential  # what the launch decided, before these attempts were re-run
        if not final:
            extra["in_progress"] = {"pid": os.getpid(), "updated_at": now_iso()}
        if self.retry_lost:  # the option shows even when no worker was lost
            extra["retry_lost"] = True
            lost = getattr(getattr(self, "_executor", None), "ray_retries", {})
            extra["ray_retries"] = lost.get(sel.label, 0)
        if outside:
            extra["scores_outside_unit"] = outside
        if self.cost_cap is not None:
            extra["max_cost_usd"] = self.cost_cap.max_usd
            if self.stop_reason and not complete:
                extra["stop_reason"] = self.stop_reason
        if self.stopped and journal.pending:
            extra["stopped"] = self.stopped
        if self.warnings:
            extra["protocol_warnings"] = self.warnings
        wall = time.perf_counter() - journal.started + (earlier.wall_s if earlier else 0.0)
        return summarize([*journal.records.values(), *journal.foreign], adapter=sel.text, commit=sel.commit,
                         task_ids=self.task_ids, repeats=repeats, wall_s=wall, **extra)

    # -- rounds (--stop-when-decided) -----------------------------------------------------------------------------
    def _tracker(self):
        from hermit_tui.core.stopping import RoundTracker
        return RoundTracker(self.sequential, self.task_ids)

    def _open_rounds(self, order: list[Attempt], journals: dict[str, SelectorJournal]) -> None:
        """The round barrier; rounds a resume finds complete are checked at once (the launch may be decided)."""
        from hermit_tui.core.stopping import RoundGate
        remaining: dict[int, int] = {}
        for attempt in order:
            remaining[attempt.repeat] = remaining.get(attempt.repeat, 0) + 1
        self._rounds = RoundGate(self._tracker(), {label: j.records for label, j in journals.items()}, remaining)
        self._report_rounds(self._rounds.advance())

    def _report_rounds(self, checked) -> None:
        gate = self._rounds
        plan = self.sequential
        for i, looks in enumerate(checked):
            r = gate.tracker.rounds - len(checked) + i + 1
            last = i == len(checked) - 1
            self._emit(ev.RoundChecked(round=r, max_rounds=plan.max_rounds, baseline=plan.baseline, looks=looks,
                                       stopped=last and gate.stopped))
            parts = []
            for look in looks:
                ci = ("" if look.ci_low is None else
                      f" (repeated 95% CI {look.ci_low:+.3f} to {look.ci_high:+.3f})")
                parts.append(f"{look.candidate} vs {plan.baseline}: {look.decision}{ci}")
            self._emit(ev.RunLog(message=f"round {r} of {plan.max_rounds}: " + "; ".join(parts)))
        if checked and gate.stopped:
            r = gate.tracker.rounds
            self._emit(ev.RunLog(message=f"every candidate is decided after round {r} of {plan.max_rounds}: no "
                                 f"further round starts (the summaries say repeats {r})"))

    def _rounds_run(self) -> int:
        """What a sequential summary says for ``repeats``: the rounds run once the launch stopped when decided,
        else the maximum (a running or unfinished launch)."""
        gate = self._rounds
        return gate.tracker.rounds if gate is not None and gate.stopped else self.repeats

    def _close_rounds(self, journals: dict[str, SelectorJournal]) -> None:
        """Every candidate decided after round r: the later rounds are not part of the launch (none started)."""
        rounds = self._rounds.tracker.rounds
        for journal in journals.values():
            journal.pending = 0
            journal.total = len(self.task_ids) * rounds

    def _write_summary(self, journal: SelectorJournal, *, final: bool) -> Summary:
        summary = self._summary(journal, final=final)
        try:
            write_atomic(journal.folder / SUMMARY, summary.to_json())
        except OSError as exc:
            if self.failure is None:
                self.failure = f"writing {journal.folder / SUMMARY} failed: {exc.strerror or exc}"
                self._emit(ev.RunLog(level="error", message=self.failure))
            self.cancel()
        journal.last_summary = time.monotonic()
        return summary

    def _finish(self, journal: SelectorJournal) -> Summary:
        """The selector's final summary.json, from all its records."""
        if journal.continues:
            try:
                journal.compact(self.task_ids)
            except (OSError, ValueError):
                pass  # the appended file is still readable: a later line replaces an earlier one
        summary = self._write_summary(journal, final=True)
        sel = journal.selector
        self._emit(ev.SelectorFinished(label=sel.label, summary=summary))
        if (sel.kind == "final" and sel.text == "final" and summary.complete and not self.limit
                and self.update_card and not journal.continues):
            self._update_card(summary)
        return summary

    def _update_card(self, summary: Summary) -> None:
        from hermit_tui.core.card import update_final_card
        try:
            result = update_final_card(self.config, summary)
        except InputError as exc:
            self._emit(ev.RunLog(level="error", message=f"card not updated: {exc}"))
            return
        self._emit(ev.CardUpdated(commit=result.commit, moved_tag=result.moved_tag, message=result.message))


__all__ = ["EvalRun"]
