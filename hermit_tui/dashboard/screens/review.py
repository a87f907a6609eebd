"""Review & publish: the card as it will be, the diff, the Evaluation table and the warnings to read first; then
a deliberate publish (a key, then a typed or ticked-and-clicked confirm: screens/dialogs/confirm) and its undo. Rows
that do not compare with final (other repeats, other test tasks, another judge or pipeline, unfinished) are named in
red, and publishing them takes typing ``publish anyway``.

The plan (``core.publish.apply.plan_publish``: git calls, results files, statistics), the publish and the undo all run
in thread workers; the screen only shows what they return.
"""

from __future__ import annotations

from typing import Any, Literal

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Checkbox, DataTable, Header, Markdown, SelectionList, Static, TabbedContent, TabPane
from textual.widgets.selection_list import Selection
from textual.worker import get_current_worker

from hermit_tui.core.errors import InputError
from hermit_tui.core.present import cost_cell, fixed
from hermit_tui.core.publish.apply import PublishPlan, Review, carry_out, review
from hermit_tui.core.report.comparable import rows_mismatches
from hermit_tui.core.workspace.selectors import label_for
from hermit_tui.dashboard import bindings
from hermit_tui.dashboard.paths import style
from hermit_tui.dashboard.screens.base import HermitScreen
from hermit_tui.dashboard.screens.dialogs.confirm import ConfirmScreen
from hermit_tui.dashboard.widgets.banners import DEMO_TEXT
from hermit_tui.dashboard.widgets.checklist import CheckList, TickBox
from hermit_tui.dashboard.widgets.footer import Footer

OVERRIDE_WORD = "publish anyway"

TABLE_COLUMNS = ("adapter", "commit", "tasks×rep", "mean [95% CI]", "solved", "errors", "cost USD")


def table_cells(row) -> list[Text | str]:
    """One EvalRow as the screen's table shows it (shorter than the card's cells)."""
    ci = f" [{row.ci_low:.3f}, {row.ci_high:.3f}]" if row.ci_low is not None else ""
    cost = Text(cost_cell(None), style="yellow") if row.cost_usd is None else cost_cell(row.cost_usd)
    return [
        Text(row.adapter, style="bold"),
        row.commit[:7] if row.commit else Text("—", style="dim"),
        f"{row.tasks}×{row.repeats}",
        f"{fixed(row.mean)}{ci}",
        fixed(row.solved_once),
        Text(str(row.errors), style="red" if row.errors else ""),
        cost,
    ]


def diff_text(diff: str, styles: dict | None = None) -> Text:
    """A unified diff, coloured by line kind: ``styles`` maps "added", "removed", "hunk" and "file" to Rich
    styles (green, red, cyan and bold when not given)."""
    styles = {"added": "green", "removed": "red", "hunk": "cyan", "file": "bold", **(styles or {})}
    text = Text()
    for line in diff.splitlines():
        kind = (
            "file"
            if line.startswith(("+++", "---"))
            else "added"
            if line.startswith("+")
            else "removed"
            if line.startswith("-")
            else "hunk"
            if line.startswith("@@")
            else None
        )
        text.append(line + "\n", style=styles[kind] if kind else "")
    return text


class DiffText(Static):
    """A unified diff in the theme's colours."""

    COMPONENT_CLASSES = {"diff--added", "diff--removed", "diff--hunk", "diff--file"}
    DEFAULT_CSS = """
    DiffText > .diff--added { color: $success; }
    DiffText > .diff--removed { color: $error; }
    DiffText > .diff--hunk { color: $accent; }
    DiffText > .diff--file { text-style: bold; }
    """

    def show(self, diff: str) -> None:
        if not diff:
            self.update(Text("No change to CARD.md.", style="dim"))
            return
        kinds = ("added", "removed", "hunk", "file")
        self.update(diff_text(diff, {k: self.get_component_rich_style(f"diff--{k}") for k in kinds}))


def _reason(exc: Exception) -> str:
    return str(exc) if isinstance(exc, InputError) else f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"


def bullet_list(items: list[str], mark: str, style: str) -> Text:
    text = Text()
    for i, item in enumerate(items):
        text.append("\n" if i else "")
        text.append(f"{mark} ", style=style)
        text.append(item)
    return text


class ReviewScreen(HermitScreen[None]):
    """Final's card as it will be published, what to read first, and the guarded publish and undo."""

    CSS_PATH = [style("review.tcss")]
    BINDINGS = bindings.REVIEW
    TITLE = "hermit-tui"
    SUB_TITLE = "review & publish"

    def __init__(self, labels: list[str] | None = None, **kwargs):
        super().__init__(**kwargs)
        self.labels = list(labels or [])
        self.review: Review | None = None  # what core.publish.apply.review found, when it is ready
        self.plan: PublishPlan | None = None
        self.undo_entry: dict[str, Any] | None = None
        self.undo_problem: str | None = None
        self.undo_text: str | None = None
        self.mismatches: list = []  # rows that do not compare with final's (core.report.comparable)
        self.busy = False
        self.pending: str | None = None  # "publish" or "undo" asked for before the review was ready
        self.ready = False  # the review was worked out (or failed) at least once
        self.taxonomy = False  # a line with the rows' failure labels under the card's table (off by default)
        self._table_width = 0

    def compose(self) -> ComposeResult:
        yield Header()
        if getattr(self.app, "is_demo", False):
            yield Static(DEMO_TEXT, classes="demo-banner")
        yield Static("Reading the evaluations and the checkout…", id="review-title", classes="section-title")
        with Vertical(id="review-body"):
            yield Static("", id="review-refusals")
            yield Static("", id="review-mismatch")
            yield Static("", id="review-warnings")
            yield DataTable(id="review-table", cursor_type="none")
            with TabbedContent(id="review-tabs"):
                with TabPane("Card as it will be", id="tab-card"):
                    with VerticalScroll(id="card-scroll"):
                        yield Markdown("", id="card-md")
                with TabPane("Diff", id="tab-diff"):
                    with VerticalScroll(id="diff-scroll"):
                        yield DiffText("", id="diff-text")
                with TabPane("Rows", id="tab-rows"):
                    yield Static(
                        "Other evaluated selectors to put on the card beside none, root and final:", classes="muted"
                    )
                    yield CheckList(id="review-rows")
                    yield TickBox(
                        "Add a line with the failure labels (hand-made, from annotations.jsonl) under the table  (t)",
                        id="review-taxonomy",
                        compact=True,
                    )
        yield Static("", id="review-actions")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#review-refusals").display = False
        self.query_one("#review-mismatch").display = False
        self.query_one("#review-body").loading = True
        self.query_one("#review-warnings").border_title = "Warnings"
        self.query_one("#review-table", DataTable).fixed_columns = 1  # the adapter stays put when scrolled sideways

    # -- computing the plan ---------------------------------------------------------------------------------------
    def on_screen_resume(self) -> None:
        if not self.busy:  # a publish in progress refreshes when it is done
            self.refresh_plan()

    def on_hermit_app_run_ended(self, message) -> None:
        self.refresh_plan()

    def action_refresh(self) -> None:
        self.refresh_plan()

    def refresh_plan(self) -> None:
        config = getattr(self.app, "config", None)
        if config is None:
            self.query_one("#review-title", Static).update("Open a config first")
            return
        labels, taxonomy = list(self.labels), self.taxonomy

        def compute() -> None:
            try:
                found = review(config, labels, taxonomy)
            except Exception as exc:  # a git or file failure is shown, not raised into the dashboard
                if not get_current_worker().is_cancelled:
                    self.app.call_from_thread(self._failed, _reason(exc))
                return
            if not get_current_worker().is_cancelled:
                self.app.call_from_thread(self._show, found)

        self.run_worker(compute, thread=True, exclusive=True, group="review-plan", name="plan-publish")

    def _failed(self, message: str) -> None:
        if self not in self.app.screen_stack:  # closed while the review was being worked out
            return
        self.review = self.plan = None
        self.pending = None
        self.ready = True
        self.query_one("#review-body").loading = False
        self.query_one("#review-title", Static).update(Text(message, style="bold red"))
        self._show_actions()

    def _show(self, found: Review) -> None:
        if self not in self.app.screen_stack:  # closed while the review was being worked out
            return
        self.review = found
        plan, others = found.plan, found.others
        self.plan, self.undo_entry, self.undo_problem = plan, found.undo_entry, found.undo_problem
        self.undo_text = found.undo_text
        self.ready = True
        self.mismatches = [m for m in rows_mismatches(plan.rows) if m.reasons]
        self.query_one("#review-body").loading = False
        title = Text(f"Card of {plan.tag}")
        if plan.measured_commit:
            title.append(f" · measured at {plan.measured_commit[:7]}")
        state = (
            "cannot be published"
            if not plan.can_publish
            else "already published"
            if plan.up_to_date
            else f"{len(self.mismatches)} row{'s' if len(self.mismatches) != 1 else ''} not comparable with final"
            if self.mismatches
            else "ready to publish"
        )
        title.append(f" · {state}", style="bold red" if not plan.can_publish or self.mismatches else "")
        self.query_one("#review-title", Static).update(title)

        mismatch = self.query_one("#review-mismatch", Static)
        mismatch.display = bool(self.mismatches) and plan.can_publish and not plan.up_to_date
        mismatch.border_title = f"Not comparable with final: publishing them takes typing '{OVERRIDE_WORD}'"
        mismatch.update(
            bullet_list(
                [m.text() for m in self.mismatches]
                + [
                    "re-run them with final's settings (setup, then l), or publish them anyway: "
                    "the card names the differences"
                ],
                "≠",
                "bold red",
            )
        )

        refusals = self.query_one("#review-refusals", Static)
        refusals.display = bool(plan.refusals)
        refusals.border_title = "Publishing is refused"
        refusals.update(bullet_list(plan.refusals, "✗", "bold red"))

        box = self.query_one("#review-warnings", Static)
        n = len(plan.warnings)
        box.border_title = f"⚠ {n} warning{'s' if n > 1 else ''}: read before publishing" if n else "No warnings"
        box.set_class(bool(n), "-has-warnings")
        box.update(bullet_list(plan.warnings, "⚠", "bold yellow") if n else Text("Nothing to flag.", style="dim"))

        table = self.query_one("#review-table", DataTable)
        cells = [table_cells(row) for row in plan.rows]
        # fixed column widths: the table never draws a row with widths measured before all rows were added
        widths = (
            [
                max([len(h)] + [(Text(c) if isinstance(c, str) else c).cell_len for c in col])
                for h, col in zip(TABLE_COLUMNS, zip(*cells))
            ]
            if cells
            else [len(h) for h in TABLE_COLUMNS]
        )
        table.clear(columns=True)
        for header, width in zip(TABLE_COLUMNS, widths):
            table.add_column(header, width=width)
        for row, values in zip(plan.rows, cells):
            table.add_row(*values, key=row.label)
        self._table_width = sum(widths) + 2 * table.cell_padding * len(widths)
        self._fit_table()
        self.run_worker(
            self._show_card(plan.new_card or plan.current_card or "*No CARD.md.*"),
            exclusive=True,
            group="review-card",
            name="render-card",
        )
        self.query_one("#diff-text", DiffText).show(plan.diff)

        rows = self.query_one("#review-rows", SelectionList)
        chosen = {label_for(lab) for lab in self.labels}
        if [o.value for o in rows.options if isinstance(o, Selection)] != others:
            rows.clear_options()
            rows.add_options([Selection(Text(label), label, label in chosen) for label in others])
        self._show_actions()
        if self.pending:
            pending, self.pending = self.pending, None
            self.call_after_refresh(self.run_action, pending)

    def _fit_table(self) -> None:
        """Every row visible, plus a line for the horizontal scrollbar when the columns are wider than the screen."""
        table = self.query_one("#review-table", DataTable)
        wide = self._table_width > self.size.width - 2  # the table's margins: 1 on each side
        table.styles.height = max(table.row_count, 1) + 1 + (1 if wide else 0)

    def on_resize(self) -> None:
        self.call_after_refresh(self._fit_table)

    async def _show_card(self, text: str) -> None:
        """The card rendered, scrolled to its Evaluation section (the part that changes)."""
        card = self.query_one("#card-md", Markdown)
        await card.update(text)
        self.call_after_refresh(self._scroll_to_evaluation)

    def _scroll_to_evaluation(self) -> None:
        card = self.query_one("#card-md", Markdown)
        heading = next(
            (
                block_id
                for level, title, block_id in card.table_of_contents
                if level == 2 and title.strip() == "Evaluation"
            ),
            None,
        )
        if heading is not None:
            self.query_one("#card-scroll", VerticalScroll).scroll_to_widget(
                card.query_one(f"#{heading}"), top=True, animate=False
            )

    def _show_actions(self) -> None:
        plan = self.plan
        text = Text()
        if self.busy:
            text.append("Working…", style="bold")
        elif plan is not None and plan.refusals:
            text.append("Publishing is disabled until the refusals above are fixed.", style="red")
        elif plan is not None and plan.up_to_date:
            text.append(f"Published: the card and {plan.tag} hold this evaluation.", style="green")
        elif plan is not None and self.mismatches:
            text.append("p", style="bold")
            text.append(f" publish… (rows not comparable: type '{OVERRIDE_WORD}')", style="red")
        elif plan is not None:
            text.append("p", style="bold")
            text.append(" publish… (asks for a confirmation)")
        if self.undo_entry is not None:
            text.append("   u", style="bold")
            text.append(" undo that publish…")
        self.query_one("#review-actions", Static).update(text)

    @on(SelectionList.SelectedChanged, "#review-rows")
    def _rows_changed(self, event: SelectionList.SelectedChanged) -> None:
        picked = list(event.selection_list.selected)
        if picked != self.labels:
            self.labels = picked
            self.refresh_plan()

    def action_toggle_taxonomy(self) -> None:
        """The failure-labels line on the card: on or off (the card and its diff follow)."""
        self.query_one("#review-taxonomy", TickBox).value = not self.taxonomy

    @on(Checkbox.Changed, "#review-taxonomy")
    def _taxonomy_changed(self, event: Checkbox.Changed) -> None:
        if event.value != self.taxonomy:
            self.taxonomy = event.value
            self.notify(
                "The card gets a line with the failure labels"
                if self.taxonomy
                else "No failure-labels line on the card",
                timeout=3,
            )
            self.refresh_plan()

    # -- publish and undo -----------------------------------------------------------------------------------------
    def action_show_tab(self, tab: str) -> None:
        self.query_one("#review-tabs", TabbedContent).active = tab

    def action_publish(self) -> None:
        plan = self.plan
        if not self.ready:
            self.pending = "publish"
            self.notify("The review is still being prepared: the confirmation follows", markup=False)
            return
        if self.busy:
            return
        if plan is None:
            self.notify("Nothing to publish: the review could not be prepared", severity="warning", markup=False)
            return
        if plan.refusals:
            self.notify(
                "; ".join(plan.refusals), title="Publishing is refused", severity="error", timeout=10, markup=False
            )
            return
        if plan.up_to_date:
            self.notify("Nothing to publish: the card and the tag already hold this evaluation", markup=False)
            return
        was = (plan.tag_target or "nowhere")[:7]
        what = (
            f"Commit CARD.md (only its Evaluation section changes) on branch {plan.run} and move {plan.tag} "
            f"from {was} to that commit."
            if plan.changes_card
            else f"Move {plan.tag} from {was} to the head of branch {plan.run}, whose card already "
            "holds this evaluation."
        )
        body = f"{what}\nThe commit message: {plan.message}\nUndo (u) moves the tag back."
        if self.mismatches:
            body += (
                "\n\nNOT COMPARABLE WITH FINAL:\n"
                + "\n".join(f"≠ {m.text()}" for m in self.mismatches)
                + f"\nType '{OVERRIDE_WORD}' to publish these rows anyway."
            )
        self.app.push_screen(
            ConfirmScreen(
                f"Publish the card of {plan.tag}?",
                body,
                word=OVERRIDE_WORD if self.mismatches else "publish",
                tick=None if self.mismatches else "I have read the warnings and the diff",
                ok="Publish anyway" if self.mismatches else "Publish",
                warnings=len(plan.warnings),
            ),
            lambda ok: self._run("publish") if ok else None,
        )

    def action_undo(self) -> None:
        if self.busy:
            return
        if not self.ready:
            self.pending = "undo"
            self.notify("The review is still being prepared: the confirmation follows", markup=False)
            return
        if self.undo_entry is None:
            self.notify(
                self.undo_problem or "Nothing to undo", title="Cannot undo", severity="warning", timeout=8, markup=False
            )
            return
        e = self.undo_entry
        what = self.undo_text or f"move {e['tag']} back to {e['previous_tag_target'][:12]}"
        body = f"{what[:1].upper()}{what[1:]}."
        self.app.push_screen(
            ConfirmScreen(f"Undo the publish of {e['tag']}?", body, word="undo", tick="Move the tag back", ok="Undo"),
            lambda ok: self._run("undo") if ok else None,
        )

    def _run(self, what: Literal["publish", "undo"]) -> None:
        found, config = self.review, self.app.config
        if found is None or config is None:
            return
        self.busy = True
        self._show_actions()

        def work() -> None:
            try:
                message = carry_out(what, found, config)
            except Exception as exc:  # publish and undo restore everything before raising
                self.app.call_from_thread(self._done, _reason(exc), True)
                return
            self.app.call_from_thread(self._done, message, False)

        self.run_worker(work, thread=True, exclusive=True, group="review-publish", name=what)

    def _done(self, message: str, failed: bool) -> None:
        self.busy = False
        if self not in self.app.screen_stack:
            self.app.notify(
                message,
                title="Not done" if failed else "Done",
                severity="error" if failed else "information",
                timeout=10,
                markup=False,
            )
            return
        self.notify(
            message,
            title="Not done" if failed else "Done",
            severity="error" if failed else "information",
            timeout=10,
            markup=False,
        )
        self.refresh_plan()

    def action_back(self) -> None:
        self.app.pop_screen()
