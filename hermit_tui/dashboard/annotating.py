"""Triage in the dashboard, for :class:`~hermit_tui.dashboard.app.HermitApp`: annotation changes written to each
evaluation's annotations.jsonl on one thread (in the order they were made) and put in the store as they land, the
bulk label that U undoes, the label set, and the walk to the next unlabelled failure. A mixin of the app: what it
reads of the app (the config, the store, its StoreUpdated message, its navigation) is declared here for the type
checker only."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.app import App
from textual.message import Message
from textual.worker import get_current_worker

from hermit_tui.core.errors import InputError

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

    from hermit_tui.core.workspace.config import Config
    from hermit_tui.dashboard.state.store import EvalStore

WALK_WORKER_THRESHOLD = 20_000  # attempts from which the triage walk is computed in a worker thread


class Annotating(App):
    """Annotating attempts one at a time or in bulk (and undoing a bulk label), the label set, the triage walk."""

    # handled as on_hermit_app_…, as every message of the app is (the namespace, not this mixin's name)
    class AnnotationSaved(Message, namespace="hermit_app"):
        """An annotation change reached (or could not reach) its annotations.jsonl (posted from the writer thread)."""

        def __init__(self, store: EvalStore, key: str, folder: Path, result: Any, generation: int = 0):
            super().__init__()
            self.store, self.key, self.folder, self.result = store, key, folder, result
            self.generation = generation  # the store's generation when the change was made

    if TYPE_CHECKING:  # the app's, set in HermitApp.__init__ (goto and run_on: its navigation)
        StoreUpdated: type[Message]
        config: Config | None
        store: EvalStore
        bulk_undo: tuple[str, list[tuple[str, str, int, Any]]] | None
        annotations_pending: int
        _annotation_writer: ThreadPoolExecutor | None

        def goto(self, name: str, **kwargs: Any) -> Any: ...

        async def run_on(self, name: str, action: str) -> None: ...

    # -- triage annotations ---------------------------------------------------------------------------------------
    def annotate(self, key: str, task_id: str, repeat: int, change) -> None:
        """Apply ``change`` (core.records.annotations.Change) to one attempt: appended to its evaluation's
        annotations.jsonl on the annotation thread (in order), then put in the store. A column with no folder keeps it
        in memory."""
        self.annotate_many([(key, task_id, repeat, change)])

    def annotate_many(self, changes: list[tuple[str, str, int, Any]], undoable: str | None = None) -> int:
        """Apply each (column, task, repeat, Change); one write per evaluation (core.records.annotations
        .update_annotations: one lock, one append). ``undoable`` names a bulk change: the attempts' annotations
        before it are kept, and ``undo_bulk`` (U) puts them back. Returns how many attempts were changed."""
        from hermit_tui.core.records.annotations import attempt_digest

        store = self.store
        per: dict[str, list[tuple[Any, Any]]] = {}
        before: list[tuple[str, str, int, Any]] = []
        for key, task_id, repeat, change in changes:
            col = store.columns.get(key)
            rec = col.records.get((task_id, repeat)) if col is not None else None
            if col is None or rec is None:
                self.notify(f"No attempt {key} · {task_id} · repeat {repeat} to annotate", severity="warning")
                continue
            before.append((key, task_id, repeat, col.annotation(task_id, repeat)))
            if col.folder is None:
                store.put_annotation(key, change.apply(col.annotation(task_id, repeat), rec.key, attempt_digest(rec)))
            else:
                per.setdefault(key, []).append((rec, change))
        if undoable is not None and before:
            self.bulk_undo = (undoable, before)
        if len(per) < len({k for k, *_ in before}):  # some columns kept it in memory
            self.screen.post_message(self.StoreUpdated())
        if not per:
            return len(before)
        if self._annotation_writer is None:
            from concurrent.futures import ThreadPoolExecutor

            self._annotation_writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="annotations")
        generation = store.generation
        for key, items in per.items():
            folder = store.columns[key].folder
            self.annotations_pending += 1

            def write(key: str = key, folder: Any = folder, items: list = items) -> None:
                from hermit_tui.core.records.annotations import update_annotations

                try:
                    _, read = update_annotations(folder, items)
                    result: Any = read
                except InputError as exc:
                    result = exc
                except Exception as exc:  # a failed write must not take the dashboard down
                    result = InputError(f"{folder}: {type(exc).__name__}: {exc}")
                self.post_message(self.AnnotationSaved(store, key, folder, result, generation))  # never blocks

            self._annotation_writer.submit(write)
        return len(before)

    def undo_bulk(self) -> None:
        """Put back the annotations the last bulk label changed (core.records.annotations.restoring), or say there
        is none to undo."""
        from hermit_tui.core.records.annotations import restoring

        if self.bulk_undo is None:
            self.notify("No bulk label to undo", severity="warning", timeout=4)
            return
        what, before = self.bulk_undo
        self.bulk_undo = None
        n = self.annotate_many([(key, task, repeat, restoring(prev)) for key, task, repeat, prev in before])
        self.notify(f"Undone: {what} ({n} attempt{'s' * (n != 1)} as they were)", timeout=5)

    def on_hermit_app_annotation_saved(self, message: AnnotationSaved) -> None:
        store, key, folder, result = message.store, message.key, message.folder, message.result
        self.annotations_pending -= 1
        if isinstance(result, InputError):
            self.notify(str(result), title="Annotation not saved", severity="error", timeout=10)
            return
        col = store.columns.get(key)
        current = store is self.store and store.generation == message.generation
        if current and col is not None and col.folder == folder:
            store.set_annotations(key, result.entries)
            self.screen.post_message(self.StoreUpdated())

    def edit_label_set(self) -> None:
        """The label set dialog; the new set goes to the settings file (per run) and the store."""
        from hermit_tui.dashboard.screens.annotate import LabelSetScreen

        where = f" for {self.config.run_dir}" if self.config is not None else ""

        def chosen(labels: list[str] | None) -> None:
            if labels is None:
                return
            if self.config is not None:
                from hermit_tui.settings import remember_label_set

                remember_label_set(self.config.run_dir, labels)
            self.store.set_label_set(labels)
            self.notify(f"Label set: {', '.join(f'{i} {n}' for i, n in enumerate(labels, start=1))}", timeout=5)
            self.screen.post_message(self.StoreUpdated())

        self.push_screen(LabelSetScreen(self.store.label_set, where), chosen)

    def open_next_unlabelled(self) -> None:
        """The drill-down on the first unlabelled failure of the triage walk (from screens without attempts)."""
        self.next_unlabelled(None, lambda f: self.goto("attempt", task_id=f.task_id, key=f.key, repeat=f.repeat), self)

    def next_unlabelled(self, after, show, where) -> None:
        """Show the next unlabelled failure after ``after`` (dashboard/screens/annotate.next_unlabelled). On a large
        store whose walk must be computed again, that is done in a worker thread first (half a second at 100,000
        attempts)."""
        from hermit_tui.dashboard.screens.annotate import next_unlabelled

        store, generation = self.store, self.store.generation
        if store.walk_ready() or sum(c.done for c in store.columns.values()) < WALK_WORKER_THRESHOLD:
            next_unlabelled(where, after, show)
            return

        def work() -> None:
            for _ in range(5):  # a batch of a live run may change the store meanwhile: try again
                try:
                    store.failure_walk()
                    break
                except RuntimeError:
                    continue
            if not get_current_worker().is_cancelled and store is self.store and store.generation == generation:
                self.call_from_thread(next_unlabelled, where, after, show)

        self.run_worker(work, thread=True, exclusive=True, group="triage-walk", name="triage-walk")

    async def triage(self, action: str) -> None:
        """A triage action from the palette: on the current screen when it has a chosen attempt (drill-down,
        per-task table, errors), else on the per-task table."""
        from hermit_tui.dashboard.screens.annotate import Triage

        if isinstance(self.screen, Triage):
            await self.screen.run_action(action)
        elif action == "next_unlabelled":
            self.open_next_unlabelled()
        else:
            await self.run_on("tasks", action)

    def flush_annotations(self) -> None:
        """Wait until every annotation change made is on disk (at exit)."""
        if self._annotation_writer is not None:
            self._annotation_writer.shutdown(wait=True)
            self._annotation_writer = None
