"""The failure taxonomy in the views: attempts per label per selector (the errors screen, the compare screen), and
for a pair the tasks the candidate fixed or introduced per label (the compare screen's Labels tab). The figures come
from ``core.records.annotations`` through the store."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Static

from hermit_tui.core.records.annotations import PairTaxonomy, SelectorTaxonomy
from hermit_tui.dashboard.widgets.virtual_table import VColumn, VirtualTable


def label_names(taxonomy: dict[str, SelectorTaxonomy], label_set: Sequence[str]) -> list[str]:
    """The labels some attempt carries, most frequent first (ties: the set's order)."""
    totals: dict[str, int] = {}
    for t in taxonomy.values():
        for name, n in t.counts.items():
            totals[name] = totals.get(name, 0) + n
    rank = {name: i for i, name in enumerate(label_set)}
    return sorted(totals, key=lambda name: (-totals[name], rank.get(name, len(rank)), name))


def counts_table(keys: Sequence[str], taxonomy: dict[str, SelectorTaxonomy], label_set: Sequence[str]) -> Table:
    """label × selector: attempts carrying the label; then the failures still unlabelled, and the corrected scores."""
    table = Table.grid(padding=(0, 2))
    table.add_column(no_wrap=True, overflow="ellipsis", max_width=28)
    for _ in keys:
        table.add_column(justify="right", no_wrap=True)
    table.add_row(Text("label", style="bold"), *(Text(k, style="bold") for k in keys))
    for name in label_names(taxonomy, label_set):
        cells = [taxonomy[k].counts.get(name, 0) if k in taxonomy else 0 for k in keys]
        table.add_row(name, *(Text(str(n), style="" if n else "dim") for n in cells))
    unlabelled = [taxonomy[k].failures - taxonomy[k].labelled_failures if k in taxonomy else 0 for k in keys]
    table.add_row(
        Text("unlabelled failures", style="italic"), *(Text(str(n), style="italic" if n else "dim") for n in unlabelled)
    )
    corrected = [taxonomy[k].corrected if k in taxonomy else 0 for k in keys]
    if any(corrected):
        table.add_row(Text("corrected scores", style="italic"), *(Text(str(n), style="dim") for n in corrected))
    return table


def corrected_text(taxonomy: dict[str, SelectorTaxonomy]) -> Text:
    """ "final: mean 0.667 with 2 corrected scores (recorded 0.611)" per selector that has corrections."""
    text = Text()
    for t in taxonomy.values():
        if t.corrected_mean is None:
            continue
        text.append("\n" if text else "")
        text.append(
            f"{t.label}: mean {t.corrected_mean:.3f} with {t.corrected} corrected score"
            f"{'s' * (t.corrected != 1)} (recorded {t.recorded_mean:.3f}; the files keep the judge's)"
        )
    return text


class PairLabels(VerticalScroll):
    """The compare screen's Labels tab: per label, the attempts under a and b, the tasks b fixed (a had the label,
    b does not) and introduced; enter on a label lists those tasks."""

    pair: PairTaxonomy | None = None

    def compose(self) -> ComposeResult:
        yield Static("", id="labels-counts")
        with Vertical(id="labels-box"):
            yield VirtualTable(id="labels-table")
            with Vertical(id="labels-side"):
                yield Static("enter on a label lists its tasks", id="labels-title")
                yield Static("", id="labels-tasks")

    def show(
        self,
        a: str,
        b: str,
        taxonomy: dict[str, SelectorTaxonomy],
        pair: PairTaxonomy,
        label_set: Sequence[str],
        progress: str,
    ) -> None:
        self.pair = pair
        counts = Text.assemble(
            ("Failure labels ", "bold"), (f"({progress}; u: next unlabelled failure). Attempts per label:", "dim")
        )
        head = self.query_one("#labels-counts", Static)
        shown = [a, b] if a != b else [a]
        table = counts_table(shown, {k: v for k, v in taxonomy.items() if k in shown}, label_set)
        extra = corrected_text({k: v for k, v in taxonomy.items() if k in (a, b)})
        from rich.console import Group

        head.update(Group(counts, table, *([Text(""), extra] if extra else [])))
        rows = pair.labels
        vt = self.query_one("#labels-table", VirtualTable)
        vt.set_columns(
            [
                VColumn("label", "tasks with", max([10, *(len(c.label) for c in rows)])),
                VColumn("a", a, max(3, len(a)), "right"),
                VColumn("b", b, max(3, len(b)), "right"),
                VColumn("fixed", "fixed", 5, "right"),
                VColumn("introduced", "introduced", 10, "right"),
                VColumn("untriaged", "not triaged", 11, "right"),
            ]
        )

        def render(c, col: str) -> str:
            return {
                "label": c.label,
                "a": str(c.a_tasks),
                "b": str(c.b_tasks),
                "fixed": str(len(c.fixed)),
                "introduced": str(len(c.introduced)),
                "untriaged": str(len(c.untriaged)),
            }[col]

        vt.set_rows(rows, render, key=lambda c: c.label)
        vt.styles.height = len(rows) + 2 if rows else 1  # a line for the scrollbar on a narrow terminal
        if not rows:
            self.query_one("#labels-title", Static).update(
                Text(
                    "No task carries a label under either selector yet: 1-9 label an attempt on the drill-down, the "
                    "per-task table or the errors screen.",
                    style="dim",
                )
            )
            self.query_one("#labels-tasks", Static).update("")
        else:
            self.list_tasks(vt.cursor_value)

    def list_tasks(self, change) -> None:
        if change is None or self.pair is None:
            return
        a, b = self.pair.a, self.pair.b
        self.query_one("#labels-title", Static).update(
            Text.assemble((change.label, "bold"), "   tasks (a task carries a label when one of its attempts does)")
        )
        text = Text()
        for name, tasks in (
            (f"fixed by {b} (under {a}, not under {b})", change.fixed),
            (f"introduced by {b} (under {b}, not under {a})", change.introduced),
            ("under both", change.both),
            ("not triaged (the other side's failures there carry no label yet)", change.untriaged),
        ):
            text.append(f"{name}: {len(tasks)}\n", style="bold")
            text.append((" ".join(tasks) or "—") + "\n")
        self.query_one("#labels-tasks", Static).update(text)

    def on_virtual_table_row_highlighted(self, event: VirtualTable.RowHighlighted) -> None:
        event.stop()
        self.list_tasks(event.row)

    def on_virtual_table_row_selected(self, event: VirtualTable.RowSelected) -> None:
        event.stop()
        self.list_tasks(event.row)
