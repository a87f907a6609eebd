"""One selector's progress during a run: a bar, ETA, mean so far, errors, unknown-cost attempts, cost so far."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.css.query import NoMatches
from textual.widgets import ProgressBar, Static

from hermit_tui.core.present import fixed, money, projected_cost
from hermit_tui.core.safe import line as one_line
from hermit_tui.dashboard.state.store import Column
from hermit_tui.dashboard.widgets.static_text import show_text


def _eta(seconds: float | None) -> str:
    if seconds is None:
        return ""
    seconds = int(seconds + 0.5)
    return f"ETA {seconds // 60}:{seconds % 60:02d}"


def cost_figure(col: Column) -> str:
    """Known cost so far (unknown ones counted, never $0); while running, also the projection at the end."""
    end = projected_cost(col.known_cost, col.done, col.expected)
    if col.running and end is not None and col.done < col.expected and col.unknown_cost < col.done:
        text = f"{money(col.known_cost)} → ~{money(end)}"
        return text + (f" + {col.unknown_cost} unknown" if col.unknown_cost else "")
    return col.cost_text()


def progress_text(col: Column) -> Text:
    """The figures beside the bar, as plain words a user can read at a glance."""
    text = Text()
    text.append(f"{col.done}/{col.expected}", style="bold")
    mean = col.mean
    text.append(f"  mean {fixed(mean)}" if mean is not None else "  mean —")
    errors = col.errors + col.judge_errors
    text.append(f"  errors {errors}", style="bold red" if errors else "")
    text.append(f"  {cost_figure(col)}", style="yellow" if col.unknown_cost else "")
    eta = _eta(col.eta_s())
    if eta:
        text.append(f"  {eta}", style="dim")
    s = col.summary
    if s is not None and s.complete is False:
        text.append("  incomplete", style="bold yellow")
    elif not col.running and col.done >= col.expected and col.expected:
        text.append("  done", style="green")
    return text


LABEL = 17  # characters of a selector's name beside its bar


class SelectorProgress(Horizontal):
    """A row: label, bar, figures."""

    DEFAULT_CSS = """
    SelectorProgress { height: 1; }
    SelectorProgress .sp-label { width: 18; text-style: bold; }
    SelectorProgress ProgressBar { width: 10; }
    SelectorProgress ProgressBar Bar { width: 8; }
    SelectorProgress .sp-figures { width: 1fr; height: 1; overflow: hidden; }
    """

    def __init__(self, key: str, **kwargs):
        super().__init__(**kwargs)
        self.key = key
        self._column: Column | None = None

    def compose(self) -> ComposeResult:
        name = one_line(self.key)  # "demo_ckpt-step-1" whole; a longer name ends in an ellipsis, never cut silently
        yield Static(Text(name if len(name) <= LABEL else name[: LABEL - 1] + "…"), classes="sp-label")
        yield ProgressBar(total=None, show_eta=False, show_percentage=False)
        yield Static("", classes="sp-figures")

    def on_mount(self) -> None:
        if self._column is not None:
            self.show(self._column)

    def show(self, col: Column) -> None:
        """Show a column's figures; before the row's children exist, keep them for on_mount."""
        self._column = col
        try:
            bar = self.query_one(ProgressBar)
            figures = self.query_one(".sp-figures", Static)
        except NoMatches:
            return
        bar.update(total=max(col.expected, 1), progress=col.done)
        show_text(figures, progress_text(col))  # a fixed height: repainted, never laid out
