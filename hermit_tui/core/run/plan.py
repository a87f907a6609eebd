"""A launch's options resolved against its config, checked before anything is written: the selectors and their
labels, the test tasks, the repeats, the protocol fingerprint, what the launch continues (a retry or a resume), the
sequential design of ``--stop-when-decided``, the executor, and how its summaries are written. ``core.run.runner``
schedules what the plan says.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hermit_tui.core.errors import InputError
from hermit_tui.core.present import smoke_caveat
from hermit_tui.core.records.folders import WRITTEN_NAMES, check_no_links, eval_folder, eval_root
from hermit_tui.core.records.journal import FolderLock, check_eval_folder, remove_stale_temporaries
from hermit_tui.core.run.continuing import ContinuePlan
from hermit_tui.core.run.events import Level
from hermit_tui.core.run.executors import Executor, ThreadExecutor
from hermit_tui.core.run.launch import MAX_LIMIT, ExecutorName, LaunchOptions, positive_int
from hermit_tui.core.run.process_executor import ProcessExecutor
from hermit_tui.core.workspace.config import MAX_REPEATS, Config
from hermit_tui.core.workspace.fingerprint import compute_fingerprint
from hermit_tui.core.workspace.selectors import remove_stale_exports, resolve_selectors
from hermit_tui.core.workspace.tasks import TaskSet, load_tasks

MAX_ATTEMPTS = 2_000_000  # attempts of one launch (all selectors): beyond this the schedule alone fills memory


def executor_class(name: ExecutorName) -> type[Executor]:
    """The class of executor ``name``; Ray's module is imported only when asked for (it is an optional extra)."""
    if name == "ray":
        from hermit_tui.core.run.ray_executor import RayExecutor

        return RayExecutor
    return ProcessExecutor if name == "processes" else ThreadExecutor


class LaunchPlan:
    """What one launch will do. Building it raises InputError (one line) on anything that would make the launch
    fail or write the wrong thing; nothing is written."""

    def __init__(self, config: Config, options: LaunchOptions, tasks: TaskSet | None = None):
        config.require_for_eval()
        self.config, self.options = config, options
        self.tasks = tasks or load_tasks(config)
        self.concurrency = options.concurrency_for(config)
        if options.retry:  # the protocol the earlier attempts were measured with
            self.continuing, selectors, repeats, limit = ContinuePlan.for_retry(options.retry, self.folder)
            positive_int(repeats, "eval.repeats", MAX_REPEATS)
            if limit is not None:
                positive_int(limit, "--limit", MAX_LIMIT)
        else:
            self.continuing, selectors = ContinuePlan(), options.selectors
            repeats, limit = options.repeats_for(config), options.limit
        self.repeats, self.limit = repeats, limit
        rows = self.tasks.rows("test")
        self.test_rows: list[dict[str, Any]] = rows[:limit] if limit else rows
        self.task_ids = [str(r["id"]) for r in self.test_rows]
        self.selectors = resolve_selectors(list(selectors), config)
        self.clustering = None
        if options.cluster_by:
            from hermit_tui.core.stats.clusters import clusters_by_field

            self.clustering = clusters_by_field(self.tasks.tasks, self.task_ids, options.cluster_by)
        self.sequential = None
        if options.stop_when_decided:  # the rounds and their statistics (numpy) load only where they are asked for
            from hermit_tui.core.run.rounds import plan_for

            self.sequential = plan_for(
                self.selectors,
                options.baseline,
                options.margin,
                repeats,
                tasks=len(self.task_ids),
                first_round_looks=options.first_round_looks,
                futility=options.futility,
                clustering=None if options.anytime else self.clustering,  # (anytime: with_clusters below)
                task_ids=self.task_ids,
            )
        if self.sequential is not None and options.anytime:  # task by task, by confidence sequences
            from hermit_tui.core.stats.sequential.anytime_plan import anytime_plan

            self.sequential = anytime_plan(self.sequential, self.concurrency, len(self.selectors), self.test_rows)
        if len(self.selectors) * len(self.task_ids) * repeats > MAX_ATTEMPTS:
            raise InputError(
                f"{len(self.selectors)} selectors x {len(self.task_ids)} tasks x eval.repeats "
                f"{repeats} is more than {MAX_ATTEMPTS:,} attempts in one launch"
            )
        self.check_folders()
        if self.clustering is not None and options.anytime and self.sequential is not None:
            from hermit_tui.core.stats.sequential.anytime_plan import AnytimePlan, with_clusters

            if isinstance(self.sequential, AnytimePlan):  # a cluster is one observation of the stream
                c = self.clustering
                self.sequential = with_clusters(self.sequential, c.by, c.of, self.task_ids)
        self.fingerprint = compute_fingerprint(
            config,
            self.test_rows,
            repeats=repeats,
            limit=limit,
            cluster_by=self.clustering.by if self.clustering else None,
            clusters_sha256=self.clustering.digest() if self.clustering else None,
        )
        if options.resume:
            self.continuing = ContinuePlan.for_resume(
                self.selectors,
                self.folder,
                repeats=repeats,
                limit=limit,
                fingerprint=self.fingerprint,
                sequential=self.sequential,
                task_ids=self.task_ids,
            )
        self.continuing.check_commits(self.selectors)
        self.executor = executor_class(options.executor).for_launch(
            config, options, concurrency=self.concurrency, timeout_s=options.timeout_s_for(config)
        )
        self.warnings = list(self.tasks.overlaps())
        if limit:
            self.warnings.append(
                f"{smoke_caveat(len(self.task_ids))} (the first {len(self.task_ids)} of "
                f"{len(rows)} test tasks" + (", written under eval/<label>/smoke/)" if self.smoke else ")")
            )

    @property
    def smoke(self) -> bool:
        return self.options.smoke

    @property
    def labels(self) -> list[str]:
        return [s.label for s in self.selectors]

    @property
    def total(self) -> int:
        """The attempts the launch runs (a resume's recorded ones included)."""
        if self.options.retry:
            return sum(len(v) for v in self.options.retry.values())
        return len(self.selectors) * len(self.task_ids) * self.repeats

    def folder(self, label: str) -> Path:
        """``eval/<label>/``, or ``eval/<label>/smoke/`` for a smoke subset (``--limit``)."""
        return eval_folder(self.config.run_dir, label, smoke=self.smoke)

    def take_folders(self, stack: contextlib.ExitStack, log: Callable[[Level, str], None]) -> None:
        """Before the launch writes: every folder's lock (released when ``stack`` closes; a refusal writes nothing),
        what the launch continues read again under the locks, and what a killed run left removed (temporary files
        and adapter exports of dead processes)."""
        root = eval_root(self.config.run_dir)
        self.check_links()
        try:
            root.mkdir(parents=True, exist_ok=True)
            probe = root / f".write-test-{os.getpid()}"
            probe.write_text("")
            probe.unlink()
        except OSError as exc:
            raise InputError(f"cannot write evaluations under {root}: {exc.strerror or exc}") from None
        self.check_folders()
        for label in self.labels:
            lock = FolderLock(self.folder(label))
            lock.acquire()
            stack.callback(lock.release)
            if lock.took_over:
                log(
                    "warning",
                    f"{label}: took over the lock of process {lock.took_over.get('pid')}, which is no longer running",
                )
        self.continuing.reread(self.folder)
        for label in self.labels:
            remove_stale_temporaries(self.folder(label))
        remove_stale_exports()

    def check_links(self) -> None:
        """A symbolic link where the launch would write (``eval``, ``eval/<label>``, its files, ``logs``,
        ``archive``): refused before any write, naming it."""
        check_no_links(self.config.run_dir, eval_root(self.config.run_dir))
        for label in self.labels:
            check_no_links(self.config.run_dir, self.folder(label), WRITTEN_NAMES)

    def check_folders(self) -> None:
        """A link, a folder in the way, a lock holding garbage: refused before any write."""
        self.check_links()
        for label in self.labels:
            folder = self.folder(label)
            check_eval_folder(folder.parent, folder.name)


__all__ = ["MAX_ATTEMPTS", "LaunchPlan", "executor_class"]
