"""The evaluation runner: several selectors side by side on the test split, under one protocol.

Attempts of all selectors share one concurrency limit and are scheduled repeat by repeat, task by task, selector by
selector, so that partial results stay paired. Each finished attempt is appended to its selector's results.jsonl
(one writer: the event loop) and reported as an ``AttemptFinished`` event.

What the launch is asked to do is a ``LaunchOptions`` (core.run.launch); what it continues from, a retry's or a resume's
``ContinuePlan`` (core.run.continuing); where attempts run, an ``Executor`` each class builds from the options
(core.run.executors, core.run.ray_executor); the summaries, a ``SummaryWriter`` (core.run.summaries); the rounds of
``--stop-when-decided``, a ``RoundGate`` (core.stats.sequential.tracker). ``EvalRun`` schedules.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeGuard

from hermit_tui.core.errors import InputError, RunFailed
from hermit_tui.core.records.folders import SUMMARY
from hermit_tui.core.records.journal import SelectorJournal, WriteFailed
from hermit_tui.core.records.results import AttemptRecord, Summary
from hermit_tui.core.run import events as ev
from hermit_tui.core.run.attempts import Attempt
from hermit_tui.core.run.costs import CostCap
from hermit_tui.core.run.executors import CapacityExhausted, Executor, Outcome, Running
from hermit_tui.core.run.launch import LaunchOptions
from hermit_tui.core.run.plan import LaunchPlan
from hermit_tui.core.run.printed import STRAY_NAME, routed, stray_output
from hermit_tui.core.run.schedule import Durations, Schedule, earlier_results, keeps_order
from hermit_tui.core.run.summaries import SummaryWriter
from hermit_tui.core.workspace.config import Config
from hermit_tui.core.workspace.selectors import Selector, materialize
from hermit_tui.core.workspace.tasks import TaskSet

if TYPE_CHECKING:  # the rounds and their statistics (numpy) load only for a launch that has rounds
    from hermit_tui.core.run.rounds import RoundGate
    from hermit_tui.core.stats.sequential.anytime_plan import AnytimePlan
    from hermit_tui.core.stats.sequential.look import SequentialLook

EventSink = Callable[[ev.Event], None]
SUMMARY_EVERY_S = 2.0  # a running evaluation's summary.json (complete: false) is refreshed this often


class _Exports:
    """Each selector's adapter folder (``materialize``): the git exports (each is git subprocesses) begin in threads
    side by side as soon as this is made, so that the launch takes its folders' locks meanwhile; ``folders()``
    waits for them. Each export is removed with ``stack``, also when another one failed or the launch was refused
    before it asked for them."""

    def __init__(self, stack: contextlib.ExitStack, selectors: Sequence[Selector], config: Config):
        self._stack = stack
        self._managers = {sel.label: materialize(sel, config) for sel in selectors}
        exported = [s.label for s in selectors if s.kind != "none" and s.kind != "directory" and s.commit is not None]
        self._entering: dict[str, Future[Path | None]] = {}
        if exported:
            pool = ThreadPoolExecutor(max_workers=len(exported), thread_name_prefix="hermit-tui-export")
            self._entering = {label: pool.submit(self._managers[label].__enter__) for label in exported}
            pool.shutdown(wait=False)  # its threads end with their export
        self._collected = False
        stack.callback(self._settle)

    def folders(self) -> dict[str, Path | None]:
        """The folders, once every export is done; the first failure is raised (the others are still removed)."""
        self._collected = True
        folders: dict[str, Path | None] = {}
        failed: BaseException | None = None
        for label, cm in self._managers.items():
            future = self._entering.get(label)
            try:
                folders[label] = future.result() if future is not None else cm.__enter__()
            except BaseException as exc:
                failed = failed or exc
            else:
                self._stack.push(cm)
        if failed is not None:
            raise failed
        return folders

    def _settle(self) -> None:
        """The launch ended before it asked for the folders (a lock was refused): what was exported is removed."""
        if self._collected:
            return
        for label, future in self._entering.items():
            try:
                future.result()
            except BaseException:
                continue
            self._managers[label].__exit__(None, None, None)


def _is_anytime(plan: object) -> TypeGuard[AnytimePlan]:
    """An anytime-valid launch's plan (``core.stats.sequential.anytime_plan.AnytimePlan``), without loading the
    statistics for a launch that has no plan."""
    if plan is None:
        return False
    from hermit_tui.core.stats.sequential.anytime_plan import AnytimePlan

    return isinstance(plan, AnytimePlan)


async def _unchained(executor: Executor, attempt: Attempt) -> tuple[Outcome, Running | None]:
    return await executor.run(attempt), None


class _InTakeOrder:
    """``AttemptStarted`` in the order the attempts were taken from the schedule. Chained, a pool thread takes an
    attempt and starts it before the loop hears of it, while the loop may take (and say) a later one meanwhile: each
    is said once every attempt taken before it has been said (or was not started after all)."""

    def __init__(self, emit: Callable[[ev.Event], None]):
        self._emit = emit
        self._numbers = itertools.count()
        self._number: dict[int, int] = {}  # id(attempt) -> its place in the take order
        self._ready: dict[int, Attempt | None] = {}
        self._next = 0

    def taken(self, attempt: Attempt) -> None:
        """Under the schedule's lock, as ``attempt`` is taken (any thread)."""
        self._number[id(attempt)] = next(self._numbers)

    def started(self, attempt: Attempt, *, ran: bool = True) -> None:
        """On the loop: ``attempt`` started (or, ``ran=False``, was taken but will not start)."""
        self._ready[self._number.pop(id(attempt))] = attempt if ran else None
        while self._next in self._ready:
            self._say(self._ready.pop(self._next))
            self._next += 1

    def flush(self) -> None:
        """The launch is over: what is left (behind an attempt whose start the loop never heard of: a forced
        cancel), in order."""
        for n in sorted(self._ready):
            self._say(self._ready.pop(n))

    def _say(self, attempt: Attempt | None) -> None:
        if attempt is not None:
            self._emit(ev.AttemptStarted(label=attempt.label, task_id=attempt.task_id, repeat=attempt.repeat))


class EvalRun:
    """One launch: the selectors of ``options`` evaluated side by side on the config's test split.

    Build it (bad input raises InputError before anything is written: ``core.run.plan.LaunchPlan``), then
    ``await run()`` or ``run_sync()``; ``cancel()`` may be called from any thread. ``EvalRun(config, ["none",
    "root"], repeats=2)`` is short for ``EvalRun(config, LaunchOptions(selectors=["none", "root"], repeats=2))``; see
    ``LaunchOptions`` for what each option does.
    """

    def __init__(
        self,
        config: Config,
        options: LaunchOptions | Sequence[str],
        *,
        on_event: EventSink | None = None,
        tasks: TaskSet | None = None,
        **option_values: Any,
    ):
        if not isinstance(options, LaunchOptions):
            options = LaunchOptions(selectors=list(options), **option_values)
        elif option_values:
            raise TypeError("give the options either as LaunchOptions or as keywords, not both")
        self.plan = plan = LaunchPlan(config, options, tasks)
        self.config, self.options, self.tasks, self.executor = config, options, plan.tasks, plan.executor
        self.on_event: EventSink = on_event or (lambda event: None)
        self.cost_cap = CostCap(max_usd=options.max_cost) if options.max_cost is not None else None
        self.writer = SummaryWriter(
            task_ids=plan.task_ids,
            limit=plan.limit,
            concurrency=plan.concurrency,
            executor=plan.executor,
            fingerprint=plan.fingerprint,
            warnings=plan.warnings,
            cost_cap=self.cost_cap,
            plan=plan.continuing,
        )
        self._cancel, self._force = threading.Event(), threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._in_flight: set[asyncio.Future[tuple[Outcome, Running | None]]] = set()  # attempts being run
        self._rounds: RoundGate | None = None  # --stop-when-decided: the round barrier of a running launch
        self.schedule: Schedule | None = None  # the order attempts start in (core.run.schedule), once launched
        self.summaries: dict[str, Summary] = {}
        self.cancelled = False
        self.failure: str | None = None  # why the run failed (a write that failed, threads that hung)
        self.stopped: str | None = None  # why the run stopped short (capacity exhausted), for the summary
        self.stop_reason: str | None = None  # why the launch stopped early without a cancel (--max-cost)

    @property
    def smoke(self) -> bool:
        return self.plan.smoke

    @property
    def labels(self) -> list[str]:
        return self.plan.labels

    @property
    def total(self) -> int:
        return self.plan.total

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
            if loop is not None and not loop.is_closed():
                loop.call_soon_threadsafe(self._abandon_in_flight)

    @property
    def cancel_requested(self) -> bool:
        return self._cancel.is_set()

    def run_sync(self) -> dict[str, Summary]:
        return asyncio.run(self.run())

    def _emit(self, event: ev.Event) -> None:
        self.on_event(event)

    def _log(self, level: ev.Level, message: str) -> None:
        self._emit(ev.RunLog(level=level, message=message))

    # -- the run -------------------------------------------------------------------------------------------------
    async def run(self) -> dict[str, Summary]:
        t0 = time.perf_counter()
        journals: dict[str, SelectorJournal] = {}
        started = False
        try:
            with contextlib.ExitStack() as stack:
                exports = _Exports(stack, self.plan.selectors, self.config)  # (temporary folders only)
                self.plan.take_folders(stack, self._log)
                stack.enter_context(routed())  # what an attempt prints is kept for it (core.run.printed)
                # The executor starts before any earlier evaluation is archived: a cluster that cannot be reached
                # (or workers that cannot start) leaves every folder as it was.
                await self.executor.start()
                started = True
                await self._launch(stack, journals, exports)
        finally:
            # closed once the journals, the exports and the folders' locks are let go: every answer is in (a forced
            # cancel abandoned the rest), and the processes executor's 16 workers exiting on two cores slowed
            # what came after them (removing an export took ~16 ms instead of ~0.2)
            if started:
                await self.executor.close()
        self.summaries = {label: self.summaries[label] for label in self.labels if label in self.summaries}
        if self.cancelled:
            done = self.total - sum(j.pending for j in journals.values())
            self._emit(ev.RunCancelled(finished=done, total=self.total))
        self._emit(
            ev.RunFinished(
                summaries=self.summaries,
                cancelled=self.cancelled,
                wall_s=round(time.perf_counter() - t0, 2),
                stop_reason=self.stop_reason,
            )
        )
        if self.failure:
            raise RunFailed(self.failure)
        return self.summaries

    async def _launch(
        self, stack: contextlib.ExitStack, journals: dict[str, SelectorJournal], exports: _Exports
    ) -> None:
        """Archive or reopen each selector's folder, then run every attempt of the launch."""
        plan = self.plan
        for warning in plan.warnings:
            self._log("warning", warning)
        self._emit(
            ev.RunStarted(
                labels=plan.labels,
                task_ids=plan.task_ids,
                repeats=plan.repeats,
                concurrency=plan.concurrency,
                total=plan.total,
                max_cost_usd=self.cost_cap.max_usd if self.cost_cap else None,
                sequential=plan.sequential,
            )
        )
        adapters = exports.folders()
        for sel in plan.selectors:
            journal = journals[sel.label] = plan.continuing.open_journal(
                sel, plan.folder(sel.label), plan.task_ids, plan.repeats, self._log
            )
            stack.callback(journal.close)
            self._emit(
                ev.SelectorStarted(
                    label=sel.label,
                    selector=sel.text,
                    commit=sel.commit,
                    total=journal.total,
                    folder=str(journal.folder),
                    resolved=sel.resolution(),
                )
            )
            for rec in journal.records.values():  # a retry or a resume shows the earlier records first
                self._emit(ev.AttemptFinished(label=sel.label, record=rec))
        order = self._order(adapters, journals)
        if plan.sequential is not None:  # rounds a resume finds complete are checked at once (it may be decided)
            from hermit_tui.core.run.rounds import RoundGate

            self._rounds = RoundGate.for_schedule(
                plan.sequential,
                plan.task_ids,
                {label: j.records for label, j in journals.items()},
                [(a.task_id, a.repeat) for a in order],
            )
        rounds = self._rounds
        anytime = _is_anytime(plan.sequential)  # a look holds every repeat of its tasks

        def block_round(a: Attempt) -> int:
            return 0 if anytime else a.repeat

        self.schedule = Schedule(  # with looks, reordered within a look: a later look's attempt waits at its barrier
            order,
            self._known_durations(journals),
            reorder=not keeps_order(shuffle=self.config.shuffle, concurrency=plan.concurrency),
            block_of=None if rounds is None else (lambda a: (block_round(a), rounds.look_of(a.task_id, a.repeat))),
        )
        if rounds is not None:
            self._report_rounds(rounds.advance())
        for journal in journals.values():
            self._write_summary(journal, final=False)
        stray = journals[plan.labels[0]].log_dir / STRAY_NAME
        with stray_output(stray) as printed:  # fd-level output of this process: not the attempts' own
            await self._execute(self.schedule, journals)
        if printed[0]:
            self._log(
                "warning",
                f"{printed[0]} bytes were printed by this process outside any attempt's capture (a "
                "C library, a subprocess, a thread a pipeline started): kept in "
                f"{stray if stray.exists() else 'no file (it could not be written)'}",
            )
        if self._rounds is not None and self._rounds.stopped:
            for journal in journals.values():  # decided after round r: the later rounds are not part of it
                journal.pending, journal.total = 0, self._rounds.tracker.attempts_each
        self.cancelled = self._cancel.is_set() and any(j.pending for j in journals.values())
        if not any(j.pending for j in journals.values()):
            self.stop_reason = None  # the cap was reached by the last attempts: nothing was left out
        for journal in journals.values():
            if journal.selector.label not in self.summaries or journal.pending:
                journal.close()
                self.summaries[journal.selector.label] = self._finish(journal)

    def _order(self, adapters: dict[str, Path | None], journals: dict[str, SelectorJournal]) -> list[Attempt]:
        """Repeat by repeat, task by task, selector by selector: partial results stay paired."""
        wanted = {label: set(keys) for label, keys in self.options.retry.items()}
        log_dirs = {label: journal.log_dir for label, journal in journals.items()}  # one folder per evaluation
        order = []
        rows = self.plan.test_rows
        seq = self.plan.sequential
        if seq is not None and seq.batches > 1:  # looks within round 1 take the tasks in the protocol's look order
            by_id = {str(t["id"]): t for t in rows}
            rows = [by_id[tid] for tid in seq.first_round_order(list(by_id))]
        repeats = range(1, self.plan.repeats + 1)
        if _is_anytime(seq):  # anytime-valid: task by task in the stream's order, every repeat of each
            by_id = {str(t["id"]): t for t in rows}
            slots = [(r, by_id[tid]) for tid in seq.stream(list(by_id)) for r in repeats]
        else:
            slots = [(r, task) for r in repeats for task in rows]
        for r, task in slots:
            tid = str(task["id"])
            for sel in self.plan.selectors:
                journal = journals[sel.label]
                skip = ((tid, r) not in wanted.get(sel.label, ())) if wanted else (tid, r) in journal.records
                if skip:  # a retry runs only the chosen attempts; a resume skips the recorded ones
                    continue
                order.append(Attempt(sel.label, task, r, adapters[sel.label], log_dirs[sel.label]))
                journal.pending += 1
        return order

    def _known_durations(self, journals: dict[str, SelectorJournal]) -> Durations:
        """How long the launch's tasks took before: the records it continues, and the evaluation of each label a
        fresh launch has just archived (core.run.schedule)."""
        durations = Durations()
        task_ids = set(self.plan.task_ids)
        for label, journal in journals.items():
            for record in journal.records.values():
                durations.add(label, record.id, record.wall_s)
            earlier = earlier_results(self.plan.continuing.archived.get(label))
            if earlier is not None and not journal.records:
                durations.read(label, earlier, task_ids)
        return durations

    async def _execute(self, schedule: Schedule, journals: dict[str, SelectorJournal]) -> None:
        self._loop = asyncio.get_running_loop()
        executor = self.executor
        queue = iter(schedule)
        in_flight = self._in_flight
        # Chained: the pool thread that finishes an attempt takes the next one itself (no hand-off through the loop
        # between two attempts of a slot). Only where nothing but a cancel can hold an attempt back: no rounds (their
        # barrier is the loop's) and no cost cap (counted on the loop).
        chained = executor.chains and self._rounds is None and self.cost_cap is None
        lock = threading.Lock()  # the schedule (taken and learnt from the pool's threads too, when chained)

        in_order = _InTakeOrder(self._emit)

        def take() -> Attempt | None:
            with lock:
                attempt = next(queue, None)
                if attempt is not None and chained:
                    in_order.taken(attempt)
                return attempt

        learnt: set[int] = set()  # the attempts whose time their thread taught the schedule (by id)

        def take_next(done: Attempt, record: AttemptRecord) -> Attempt | None:  # in the finishing attempt's thread
            with lock:
                schedule.learn(done.label, done.task_id, record.wall_s)  # before the next is chosen, as on the loop
                learnt.add(id(done))
                if self._cancel.is_set() or executor.__dict__.get("_hung"):
                    return None  # the loop decides (and says why it stops)
                attempt = next(queue, None)
                if attempt is not None:
                    in_order.taken(attempt)
                return attempt

        async def one(attempt: Attempt, running: Running | None) -> tuple[Outcome, Running | None] | None:
            call = executor.run_chained(attempt, take_next, running) if chained else _unchained(executor, attempt)
            work = asyncio.ensure_future(call)
            in_flight.add(work)
            try:
                return await work
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if work.cancelled() and self._force.is_set() and not (task is not None and task.cancelling()):
                    return None  # a forced cancel: the attempt is abandoned, not recorded
                raise
            finally:
                in_flight.discard(work)

        def finished(attempt: Attempt, record: AttemptRecord, tb: str | None, look: int) -> bool:
            """Record a finished attempt; False when its record could not be written (the run fails)."""
            journal = journals[attempt.label]
            try:
                journal.append(record)
            except WriteFailed as exc:
                self._fail(str(exc))
                return False
            journal.pending -= 1
            with lock:
                if id(attempt) in learnt:
                    learnt.discard(id(attempt))
                else:
                    schedule.learn(attempt.label, attempt.task_id, record.wall_s)
            self._count_cost(record)
            self._emit(ev.AttemptFinished(label=attempt.label, record=record, traceback=tb))
            if self._rounds is not None:
                self._report_rounds(self._rounds.finished(look))
            if not 0 <= record.judge.score <= 1:
                self._log(
                    "warning",
                    f"{attempt.label}: {attempt.task_id} repeat {attempt.repeat} scored "
                    f"{record.judge.score:g}, outside [0, 1]",
                )
            if journal.pending == 0 and self._rounds is None:  # sequential: all at the end, with the decision
                journal.close()
                self.summaries[attempt.label] = self._finish(journal)
            elif time.monotonic() - journal.last_summary > SUMMARY_EVERY_S:
                self._write_summary(journal, final=False)
            return True

        async def worker() -> None:
            running: Running | None = None  # the next attempt, started by the thread of the one before (chained)
            while True:
                if running is None:
                    attempt = take()  # one shared schedule: each attempt is taken once, in order
                    if attempt is None:
                        return
                    look = self._rounds.look_of(attempt.task_id, attempt.repeat) if self._rounds is not None else 0
                    if self._rounds is not None and not await self._rounds.admit(look):
                        return  # every candidate is decided (or the launch is ending)
                    if self._cancel.is_set() or self._cost_reached():
                        if self._rounds is not None:
                            self._rounds.halt()  # attempts waiting for this round's end would wait forever
                        if chained:
                            in_order.started(attempt, ran=False)
                        return
                    if chained:
                        in_order.started(attempt)
                    else:
                        self._emit(
                            ev.AttemptStarted(label=attempt.label, task_id=attempt.task_id, repeat=attempt.repeat)
                        )
                else:
                    attempt, look = executor.attempt_of(running), 0
                try:
                    result = await one(attempt, running)
                except CapacityExhausted as exc:
                    self.stopped = str(exc) if self.failure is None else self.stopped
                    self._fail(str(exc))
                    return
                if result is None:
                    return
                (record, tb), running = result
                if not finished(attempt, record, tb, look) and running is None:
                    return  # its record could not be written: no attempt starts after it (a chained one is kept)
                if running is not None:  # already running: said after the one before it finished, as without chaining
                    in_order.started(executor.attempt_of(running))

        try:
            await asyncio.gather(*(worker() for _ in range(self.plan.concurrency)))
        finally:
            in_order.flush()
            if self._force.is_set():
                executor.abandon()

    def _abandon_in_flight(self) -> None:
        """A forced cancel, on the loop: every attempt in flight is given up (the executor's ``abandon`` stops what
        can be stopped)."""
        for work in list(self._in_flight):
            work.cancel()

    def _fail(self, message: str) -> None:
        """The run cannot go on (a write failed, threads hung): say so once, and stop scheduling."""
        if self.failure is None:
            self.failure = message
            self._log("error", message)
        self.cancel()

    # -- the cost cap (core/run/costs.py) ----------------------------------------------------------------------------
    def _count_cost(self, record: AttemptRecord) -> None:
        cap = self.cost_cap
        if cap is not None and cap.add(record.cost_usd):
            self._log(
                "warning",
                "--max-cost: the attempts so far report no cost; they count once some attempt "
                "reports one (their cost is never taken as $0)",
            )

    def _cost_reached(self) -> bool:
        """True once this launch's cost reached --max-cost: no new attempt starts (the ones in flight finish)."""
        cap = self.cost_cap
        if cap is not None and self.stop_reason is None and cap.reached:
            self.stop_reason = cap.reason()
            self._log(
                "warning",
                f"{self.stop_reason}: no new attempt starts, the ones in flight finish; continue later with --resume",
            )
        return self.stop_reason is not None

    # -- rounds (--stop-when-decided) -----------------------------------------------------------------------------
    def _report_rounds(self, checked: list[tuple[int, list[SequentialLook]]]) -> None:
        from hermit_tui.core.run.rounds import decided_line, round_line
        from hermit_tui.core.stats.sequential import anytime_text
        from hermit_tui.core.stats.sequential.anytime_plan import AnytimePlan
        from hermit_tui.core.stats.sequential.anytime_tracker import AnytimeTracker

        gate, plan = self._rounds, self.plan.sequential
        assert gate is not None and plan is not None
        for i, (r, looks) in enumerate(checked):
            last = i == len(checked) - 1
            self._emit(
                ev.RoundChecked(
                    round=r,
                    max_rounds=plan.max_rounds,
                    baseline=plan.baseline,
                    looks=looks,
                    stopped=last and gate.stopped,
                    tasks=looks[0].tasks if looks else None,
                    total_tasks=looks[0].total_tasks if looks else None,
                )
            )
            anytime = isinstance(plan, AnytimePlan)
            self._log("info", anytime_text.look_line(plan, looks) if anytime else round_line(r, plan, looks))
        if checked and gate.stopped:
            t = gate.tracker
            if isinstance(t, AnytimeTracker):
                self._log("info", anytime_text.decided_line(t))
            else:
                futile = sum(1 for c in plan.candidates if (lk := t.last(c)) is not None and lk.decision == "futile")
                self._log("info", decided_line(t.rounds, plan, t.tasks_looked, len(t.task_ids), futile))

    # -- summaries -----------------------------------------------------------------------------------------------
    def _write_summary(self, journal: SelectorJournal, *, final: bool) -> Summary:
        gate = self._rounds
        summary = self.writer.summary(
            journal,
            final=final,
            cancelled=self._cancel.is_set(),
            stop_reason=self.stop_reason,
            stopped=self.stopped,
            repeats=gate.rounds_run if gate is not None else self.plan.repeats,
            sequential=gate.tracker.entry(journal.selector.label) if gate is not None else None,
        )
        try:
            self.writer.write(journal, summary)
        except OSError as exc:
            journal.last_summary = time.monotonic()
            self._fail(f"writing {journal.folder / SUMMARY} failed: {exc.strerror or exc}")
        return summary

    def _finish(self, journal: SelectorJournal) -> Summary:
        """The selector's final summary.json, from all its records; hermit's card update when final is done."""
        if journal.continues:
            try:
                journal.compact(self.plan.task_ids)
            except (OSError, ValueError):
                pass  # the appended file is still readable: a later line replaces an earlier one
        summary = self._write_summary(journal, final=True)
        sel = journal.selector
        self._emit(ev.SelectorFinished(label=sel.label, summary=summary))
        if (
            sel.kind == "final"
            and sel.text == "final"
            and summary.complete
            and not self.plan.limit
            and self.options.update_card
            and not journal.continues
        ):
            from hermit_tui.core.publish.card import update_final_card

            try:
                result = update_final_card(self.config, summary)
            except InputError as exc:
                self._log("error", f"card not updated: {exc}")
            else:
                self._emit(ev.CardUpdated(commit=result.commit, moved_tag=result.moved_tag, message=result.message))
        return summary


__all__ = ["EvalRun"]
