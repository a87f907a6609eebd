"""The live grid: tasks down, selectors across, one mark per repeat, filling in as attempts finish.

A Line-API widget: only the visible rows are drawn, from the store, so a repaint costs the same at 40 tasks as at
11,000, and a batch of attempts is one repaint. The task column stays put when the selectors scroll sideways.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from hermit_tui.core.records.results import SOLVED_THRESHOLD
from hermit_tui.dashboard.state.store import EvalStore

ID_WIDTH = 18  # the task column on a terminal narrower than WIDE; wider ones give long ids up to WIDE_ID
WIDE, WIDE_ID = 160, 40
PENDING, ERROR, JUDGE_ERROR = "·", "✗", "J"


def mark_for(status: str | None, score: float | None, threshold: float = SOLVED_THRESHOLD) -> tuple[str, str]:
    """(glyph, component class) of one attempt; None = not finished yet."""
    if status is None:
        return PENDING, "attempt-grid--pending"
    if status == "error":
        return ERROR, "attempt-grid--error"
    if status == "judge_error":
        return JUDGE_ERROR, "attempt-grid--judge-error"
    if score is not None and score >= threshold:
        return "●", "attempt-grid--pass"
    if score is not None and score > 0:
        return "◐", "attempt-grid--partial"
    return "○", "attempt-grid--fail"


class AttemptGrid(ScrollView, can_focus=True):
    """Tasks × selectors; the cursor row opens the drill-down."""

    COMPONENT_CLASSES = {
        "attempt-grid--header",
        "attempt-grid--cursor",
        "attempt-grid--pending",
        "attempt-grid--error",
        "attempt-grid--judge-error",
        "attempt-grid--pass",
        "attempt-grid--partial",
        "attempt-grid--fail",
        "attempt-grid--id",
    }
    DEFAULT_CSS = """
    AttemptGrid { height: 1fr; }
    AttemptGrid > .attempt-grid--header { text-style: bold; color: $accent; }
    AttemptGrid > .attempt-grid--cursor { background: $panel-lighten-2; text-style: bold; }
    AttemptGrid > .attempt-grid--pending { color: $text-muted; }
    AttemptGrid > .attempt-grid--error { color: $error; text-style: bold; }
    AttemptGrid > .attempt-grid--judge-error { color: $warning; text-style: bold; }
    AttemptGrid > .attempt-grid--pass { color: $success; }
    AttemptGrid > .attempt-grid--partial { color: $warning; }
    AttemptGrid > .attempt-grid--fail { color: $error 70%; }
    AttemptGrid > .attempt-grid--id { color: $text; }
    """
    BINDINGS = [
        Binding("up", "cursor(-1)", "Up", show=False),
        Binding("down", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "jump(0)", "First", show=False),
        Binding("end", "jump(-1)", "Last", show=False),
        Binding("enter", "select", "Drill down", show=False),
    ]

    cursor = reactive(0, repaint=False)

    class TaskSelected(Message):
        """Enter or a click on a task's row."""

        def __init__(self, task_id: str):
            super().__init__()
            self.task_id = task_id

    def __init__(self, store: EvalStore, **kwargs):
        super().__init__(**kwargs)
        self.store = store
        self._shape: tuple[int, int, int] = (0, 0, 0)
        self._longest_id = 4
        self.id_width = ID_WIDTH
        self._style_set: tuple[Style, Style, dict[str, Style], dict[str, Style]] | None = None

    # -- layout ---------------------------------------------------------------------------------------------------
    @property
    def keys(self) -> list[str]:
        return self.store.keys

    def _cell_width(self) -> int:
        longest = max((len(k) for k in self.keys), default=4)
        return max(self.store.repeats, min(longest, 16)) + 2

    def show(self, store: EvalStore) -> None:
        """Draw ``store`` from scratch at the next sync: another store, or the same one reset (whose shape may
        equal the old one's while its tasks differ)."""
        self.store = store
        self._shape = (0, 0, 0)

    def sync(self) -> None:
        """Call after the store changed: resizes when tasks or columns were added, then repaints."""
        shape = (len(self.store.task_ids), len(self.keys), self.store.repeats)
        if shape != self._shape:
            if shape[0] != self._shape[0]:
                self._longest_id = max((len(t) for t in self.store.task_ids[:20000]), default=4)
            self._shape = shape
            self._fit_ids()
            width = self.id_width + 1 + self._cell_width() * len(self.keys)
            self.virtual_size = Size(width, len(self.store.task_ids) + 1)
            self.cursor = min(self.cursor, max(0, len(self.store.task_ids) - 1))
        self.refresh()

    def _fit_ids(self) -> None:
        room = WIDE_ID if self.app.size.width >= WIDE else ID_WIDTH
        self.id_width = max(4, min(self._longest_id, room)) if self._longest_id > ID_WIDTH else ID_WIDTH

    def on_mount(self) -> None:
        self.sync()

    def on_resize(self) -> None:
        self._shape = (-1, -1, -1)  # the task column may widen or narrow
        self.sync()

    # -- drawing --------------------------------------------------------------------------------------------------
    # A line is a few segments (a run of marks in one style is one segment), built from styles worked out once per
    # restyle: at 5,000 attempts a second the grid is repainted whole ~10 times a second.
    def _styles(self) -> tuple[Style, Style, dict[str, Style], dict[str, Style]]:
        """The grid's style, its header's, and each mark's class on a plain row and on the cursor row."""
        cached = self._style_set
        if cached is None:
            base = self.rich_style
            part = self.get_component_rich_style
            cursor = base + part("attempt-grid--cursor", partial=True)
            marks = self.COMPONENT_CLASSES - {"attempt-grid--header", "attempt-grid--cursor"}
            plain = {c: base + part(c, partial=True) for c in marks} | {"": base}
            on_cursor = {c: cursor + part(c, partial=True) for c in marks} | {"": cursor}
            cached = (base, base + part("attempt-grid--header", partial=True), plain, on_cursor)
            self._style_set = cached
        return cached

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._style_set = None

    def on_focus(self) -> None:
        self._style_set = None

    def on_blur(self) -> None:
        self._style_set = None

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.size.width
        base = self._styles()[0]
        if y == 0:
            strip = self._header()
        else:
            index = scroll_y + y - 1
            if index >= len(self.store.task_ids):
                return Strip.blank(width, base)
            strip = self._row(index)
        if not scroll_x:
            return strip.crop_extend(0, width, base)
        # the task column stays put when scrolled sideways
        fixed = self.id_width + 1 if width > self.id_width + 8 else 0
        return Strip.join([strip.crop(0, fixed), strip.crop(fixed + scroll_x, scroll_x + width)]).extend_cell_length(
            width, base
        )

    def _header(self) -> Strip:
        style = self._styles()[1]
        cw = self._cell_width()
        text = "task".ljust(self.id_width + 1) + "".join(k[: cw - 1].ljust(cw) for k in self.keys)
        return Strip([Segment(text, style)], len(text))

    def _row(self, index: int) -> Strip:
        tid = self.store.task_ids[index]
        cw = self._cell_width()
        _, _, plain, on_cursor = self._styles()
        styles = on_cursor if index == self.cursor else plain
        w = self.id_width
        label = tid if len(tid) <= w else tid[: w - 1] + "…"
        segments = [Segment(label.ljust(w + 1), styles["attempt-grid--id"])]
        repeats = self.store.repeats
        threshold = self.store.threshold
        gap = " " * (cw - repeats)
        run, run_cls = "", ""  # marks of one class not yet added
        for key in self.keys:
            col = self.store.columns[key]
            own = col.summary.repeats if col.summary is not None and not col.running else repeats
            for r in range(1, repeats + 1):
                # an evaluation of fewer repeats than the others has no attempt to wait for there: a blank
                glyph, cls = mark_for(*col.mark(tid, r), threshold) if r <= own else (" ", "")
                if cls != run_cls and run:
                    segments.append(Segment(run, styles[run_cls]))
                    run = ""
                run, run_cls = run + glyph, cls
            if run:
                segments.append(Segment(run, styles[run_cls]))
                run = ""
            segments.append(Segment(gap, styles[""]))
        return Strip(segments, len(label.ljust(w + 1)) + cw * len(self.keys))

    # -- cursor ---------------------------------------------------------------------------------------------------
    def watch_cursor(self, old: int, new: int) -> None:
        rows = self.size.height - 1
        top = int(self.scroll_offset.y)
        if new < top:
            self.scroll_to(y=new, animate=False)
        elif rows > 0 and new >= top + rows:
            self.scroll_to(y=new - rows + 1, animate=False)
        self.refresh()

    def _move_to(self, index: int) -> None:
        n = len(self.store.task_ids)
        if n:
            self.cursor = max(0, min(n - 1, index))

    def action_cursor(self, delta: int) -> None:
        self._move_to(self.cursor + delta)

    def action_page(self, direction: int) -> None:
        self._move_to(self.cursor + direction * max(1, self.size.height - 2))

    def action_jump(self, where: int) -> None:
        self._move_to(0 if where == 0 else len(self.store.task_ids) - 1)

    def action_select(self) -> None:
        if self.store.task_ids:
            self.post_message(self.TaskSelected(self.store.task_ids[self.cursor]))

    def on_click(self, event) -> None:
        y = event.y
        if y < 1:
            return
        index = int(self.scroll_offset.y) + y - 1
        if 0 <= index < len(self.store.task_ids):
            if index == self.cursor:
                self.action_select()
            self.cursor = index

    @property
    def cursor_task(self) -> str | None:
        ids = self.store.task_ids
        return ids[self.cursor] if ids else None
