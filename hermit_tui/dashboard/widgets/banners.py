"""Warnings that every summary view carries: teaching demo, smoke subset, incomplete run, retries, protocol."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from hermit_tui.core.present import caveats
from hermit_tui.dashboard.state.store import EvalStore

DEMO_TEXT = "Built-in demo: a teaching demonstration, not real-model evidence."


MAX_PROTOCOL_LINES = 2


def banner_lines(store: EvalStore, *, is_demo: bool) -> list[tuple[str, str]]:
    """(css class, text) lines, most important first; protocol warnings beyond two are counted, not listed (the
    setup screen and the report list them all)."""
    lines: list[tuple[str, str]] = []
    if is_demo:
        lines.append(("demo-banner", DEMO_TEXT))
    for warning in store.warnings[:MAX_PROTOCOL_LINES]:
        lines.append(("warning-banner", f"Protocol: {warning}"))
    if len(store.warnings) > MAX_PROTOCOL_LINES:
        lines.append(
            (
                "warning-banner",
                f"Protocol: {len(store.warnings) - MAX_PROTOCOL_LINES} more warnings "
                "(listed on the setup screen and in the report)",
            )
        )
    outside = store.scores_outside_unit()
    if outside and store.threshold == 1.0:
        lines.append(
            (
                "warning-banner",
                f"{outside} scores fall outside [0, 1]: solved at least once (threshold 1.0) "
                "may not be a meaningful solved rate here; set a success threshold (ctrl+p)",
            )
        )
    if store.threshold != 1.0:
        lines.append(
            (
                "warning-banner",
                f"Success threshold {store.threshold:g} in these views (hermit's files and summaries keep 1.0)",
            )
        )
    for m in store.mismatches():  # (evaluations without a fingerprint: the compare screen says so for its pair)
        if m.reasons:
            lines.append(("warning-banner", f"Not comparable: {m.text()}"))
    for key, col in store.columns.items():
        s = col.summary
        if s is None:
            continue
        lines += [
            ("warning-banner", f"{key}: {caveat}")
            for caveat in caveats(
                smoke=s.is_smoke,
                smoke_limit=s.smoke_limit,
                done=s.attempts or col.done,
                expected=s.expected_attempts or col.expected,
                complete=s.complete is not False,
                retries=s.retries,
            )
        ]
        if col.note:
            lines.append(("warning-banner", f"{key}: {col.note}"))
    return lines


TALL = 40  # a terminal at least this tall shows every banner; a shorter one collapses them to one line


def collapsed_line(lines: list[tuple[str, str]]) -> Text:
    """Every banner in one line: the demo notice, the number of warnings and the first one."""
    text = Text()
    demo = any(cls == "demo-banner" for cls, _ in lines)
    warnings = [line for cls, line in lines if cls != "demo-banner"]
    if demo:
        text.append("Demo, not evidence", style="bold")
    if warnings:
        n = len(warnings)
        text.append(" · " if demo else "")
        text.append(f"! {n} warning{'s' if n != 1 else ''}", style="bold")
        text.append(" (press ! to read): ")
        text.append(warnings[0])
    return text


class Banners(Static):
    """A stack of one-line banners; empty (and zero height) when there is nothing to say. On a short terminal they
    collapse to one line that counts them; ``!`` (or a click) expands and collapses them."""

    DEFAULT_CSS = """
    Banners { height: auto; max-height: 6; overflow-y: auto; text-wrap: nowrap; text-overflow: ellipsis; }
    Banners.-empty { display: none; }
    Banners.-read { max-height: 12; text-wrap: wrap; }
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._shown: tuple[list[tuple[str, str]], bool] | None = None
        self._lines: list[tuple[str, str]] = []

    def expanded(self) -> bool:
        """Shown in full: the user said so (``!``), else when the terminal is tall enough."""
        choice = getattr(self.app, "banners_expanded", None)
        return choice if choice is not None else self.app.size.height >= TALL

    def show_for(self, app, store: EvalStore) -> None:
        self._lines = banner_lines(store, is_demo=getattr(app, "is_demo", False))
        self.redraw()

    def redraw(self) -> None:
        lines = self._lines
        full = self.expanded() or len(lines) <= 1
        # expanded on purpose (!): every warning in full, wrapped, rather than each cut to a line
        self.set_class(getattr(self.app, "banners_expanded", None) is True, "-read")
        if self._shown == (lines, full):
            return
        self._shown = (list(lines), full)
        self.set_class(not lines, "-empty")
        text = Text()
        if full:
            for i, (cls, line) in enumerate(lines):
                text.append("\n" if i else "")
                if cls == "demo-banner":
                    text.append(line, style="bold")
                else:
                    text.append("! ", style="bold")
                    text.append(line)
        else:
            text = collapsed_line(lines)
        self.update(text)
        self.set_class(any(cls == "warning-banner" for cls, _ in lines), "warning-banner")
        self.set_class(bool(lines) and all(cls == "demo-banner" for cls, _ in lines), "demo-banner")

    @property
    def count(self) -> int:
        return len(self._lines)

    def on_resize(self) -> None:
        self.call_after_refresh(self.redraw)

    async def on_click(self) -> None:
        await self.run_action("app.toggle_banners")
