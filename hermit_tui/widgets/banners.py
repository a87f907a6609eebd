"""Warnings that every summary view carries: teaching demo, smoke subset, incomplete run, retries, protocol."""
from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from hermit_tui.store import EvalStore

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
        lines.append(("warning-banner", f"Protocol: {len(store.warnings) - MAX_PROTOCOL_LINES} more warnings "
                                        "(listed on the setup screen and in the report)"))
    outside = store.scores_outside_unit()
    if outside and store.threshold == 1.0:
        lines.append(("warning-banner", f"{outside} scores fall outside [0, 1]: solved at least once (threshold 1.0) "
                                        "may not be a meaningful solved rate here; set a success threshold (ctrl+p)"))
    if store.threshold != 1.0:
        lines.append(("warning-banner", f"Success threshold {store.threshold:g} in these views (hermit's files and "
                                        "summaries keep 1.0)"))
    for key, col in store.columns.items():
        s = col.summary
        if s is None:
            continue
        if s.is_smoke:
            lines.append(("warning-banner", f"{key}: smoke subset of {s.smoke_limit} tasks, a wiring check, "
                                            "not an evaluation"))
        if s.complete is False:
            lines.append(("warning-banner", f"{key}: incomplete ({s.attempts or col.done} of "
                                            f"{s.expected_attempts or col.expected} attempts): cannot be published"))
        if s.retries:
            lines.append(("warning-banner", f"{key}: includes {s.retries} retried attempts; re-running only "
                                            "failures can bias the mean"))
        if col.note:
            lines.append(("warning-banner", f"{key}: {col.note}"))
    return lines


class Banners(Static):
    """A stack of one-line banners; empty (and zero height) when there is nothing to say."""

    DEFAULT_CSS = """
    Banners { height: auto; max-height: 6; overflow-y: auto; text-wrap: nowrap; text-overflow: ellipsis; }
    Banners.-empty { display: none; }
    """

    def show_for(self, app, store: EvalStore) -> None:
        lines = banner_lines(store, is_demo=getattr(app, "is_demo", False))
        self.set_class(not lines, "-empty")
        text = Text()
        for i, (cls, line) in enumerate(lines):
            text.append("\n" if i else "")
            if cls == "demo-banner":
                text.append(line, style="bold")
            else:
                text.append("! ", style="bold")
                text.append(line)
        self.update(text)
        self.set_class(any(cls == "warning-banner" for cls, _ in lines), "warning-banner")
        self.set_class(bool(lines) and all(cls == "demo-banner" for cls, _ in lines), "demo-banner")
