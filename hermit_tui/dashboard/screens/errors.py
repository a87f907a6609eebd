"""Every failed attempt (pipeline error or judge error), grouped by kind and message with counts per selector; jump to
an attempt, or re-run only the failed ones (after a warning: that can bias a mean)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Header, OptionList, Static, Tree
from textual.widgets.option_list import Option
from textual.widgets.tree import TreeNode

from hermit_tui.core.present import retry_caveat
from hermit_tui.core.run.continuing import RetryCandidate, retry_targets
from hermit_tui.core.run.launch import LaunchOptions, RetryKeys
from hermit_tui.core.safe import line as one_line
from hermit_tui.core.safe import terminal
from hermit_tui.dashboard import bindings
from hermit_tui.dashboard.paths import style
from hermit_tui.dashboard.screens.annotate import Scope, Triage, progress_text
from hermit_tui.dashboard.screens.base import HermitModal, HermitScreen
from hermit_tui.dashboard.widgets.footer import Footer
from hermit_tui.dashboard.widgets.taxonomy import corrected_text, counts_table

MAX_LABEL = 160  # characters of an error message shown in a tree label


@dataclass(frozen=True)
class AttemptRef:
    """A tree leaf: one failed attempt."""

    key: str
    task_id: str
    repeat: int


@dataclass
class ErrorGroup:
    """The attempts that failed with one message, per column key."""

    status: str
    error: str
    attempts: dict[str, list[tuple[str, int]]]

    @property
    def total(self) -> int:
        return sum(len(v) for v in self.attempts.values())


def error_type(error: str) -> str:
    """The exception type of hermit's "Type: message" errors ("" when the text has no such prefix)."""
    head, sep, _ = error.partition(":")
    head = head.strip()
    return head if sep and head and " " not in head else ""


def kind_of(status: str, error: str) -> str:
    """A group's kind: its status and exception type, e.g. "error · ValueError"."""
    kind = error_type(error)
    return f"{status} · {kind}" if kind else status


def grouped(store) -> list[tuple[str, list[ErrorGroup]]]:
    """The store's error groups under their kinds, largest kinds first (ties by name)."""
    kinds: dict[str, list[ErrorGroup]] = {}
    for status, error, per in store.error_groups():
        kinds.setdefault(kind_of(status, error), []).append(ErrorGroup(status, error, per))
    return sorted(kinds.items(), key=lambda kv: (-sum(g.total for g in kv[1]), kv[0]))


def counts_text(keys: list[str], per: dict[str, int]) -> Text:
    """ "none 3 · root 0 · final 3", zero counts dimmed."""
    text = Text()
    for i, key in enumerate(keys):
        if i:
            text.append(" · ", style="dim")
        n = per.get(key, 0)
        text.append(f"{key} {n}", style="bold" if n else "dim")
    return text


def _node_key(data: Any) -> Any:
    """What identifies a tree node across rebuilds."""
    return ("group", data.status, data.error) if isinstance(data, ErrorGroup) else data


def _one_line(message: str) -> str:
    line = one_line((message.strip().splitlines() or ["(no message)"])[0])
    return line if len(line) <= MAX_LABEL else line[: MAX_LABEL - 1] + "…"


class ConfirmRetry(HermitModal[RetryKeys | None]):
    """Re-run only the failed attempts? Says how many and that it can bias the mean, and offers the shown set (the
    default: what shift+r asked for) or one selector. Dismisses with the attempts to re-run, or None."""

    CSS_PATH = [style("errors.tcss")]
    BINDINGS = bindings.HELP

    def __init__(self, retry: RetryKeys, repeats: Mapping[str, int | None] | None = None, current: str | None = None):
        super().__init__()
        self.retry = retry
        self.repeats = repeats or {}  # label -> the repeats its evaluation was measured with
        self.current = current  # the selector of the highlighted attempt: offered first after the shown set

    def scopes(self) -> list[tuple[str, RetryKeys]]:
        """(text, attempts) of each choice: every shown selector first, then one selector at a time."""
        n = sum(len(v) for v in self.retry.values())
        protocols = len({self.repeats.get(label) for label in self.retry})
        each = f", {protocols} launches one after the other, each with its own repeats" if protocols > 1 else ""
        out = [(f"every shown selector: {attempts(n)} of {len(self.retry)}{each}", dict(self.retry))]
        labels = sorted(self.retry, key=lambda label: label != self.current)
        for label in labels:
            r = self.repeats.get(label)
            out.append(
                (
                    f"only {label}: {attempts(len(self.retry[label]))}"
                    + (f" ({r} repeat{'s' * (r != 1)})" if r else ""),
                    {label: self.retry[label]},
                )
            )
        return out

    def compose(self) -> ComposeResult:
        n = sum(len(v) for v in self.retry.values())
        per = ", ".join(f"{label} {len(keys)}" for label, keys in self.retry.items())
        with Vertical(id="retry-box"):
            yield Static(f"Re-run {n} failed attempt{'s' * (n != 1)}?", id="retry-title")
            yield Static(Text(per), id="retry-per")
            yield OptionList(
                *[Option(Text(text), id=str(i)) for i, (text, _) in enumerate(self.scopes())], id="retry-scope"
            )
            yield Static(self.warning(self.retry), id="retry-warning", classes="warning-banner")
            yield Static("enter re-runs the highlighted choice · escape cancels", classes="muted")
            with Horizontal(id="retry-buttons"):
                yield Button("Re-run failed", variant="warning", id="retry-confirm", compact=True)
                yield Button("Cancel", id="retry-cancel", compact=True)

    def on_mount(self) -> None:
        scope = self.query_one("#retry-scope", OptionList)
        scope.highlighted = 0  # what the key asked for: every shown selector
        scope.focus()

    @staticmethod
    def warning(retry: RetryKeys) -> str:
        n = sum(len(v) for v in retry.values())
        return f"Re-running only the failed attempts can bias the mean: the summary will record {n} retries."

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        self.query_one("#retry-warning", Static).update(self.warning(self.chosen()))

    def chosen(self) -> RetryKeys:
        index = self.query_one("#retry-scope", OptionList).highlighted or 0
        return self.scopes()[index][1]

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(self.chosen())

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(self.chosen() if event.button.id == "retry-confirm" else None)

    async def action_dismiss(self, result: RetryKeys | None = None) -> None:
        self.dismiss(None)


def attempts(n: int) -> str:
    return f"{n} attempt{'s' * (n != 1)}"


def launches_of(retry: RetryKeys, summaries: dict[str, Any]) -> list[LaunchOptions]:
    """One retry launch per protocol (repeats and smoke limit) the evaluations were measured with: a launch runs
    under one protocol, so evaluations of different repeats are continued one after the other, each its own."""
    groups: dict[Any, RetryKeys] = {}
    for label, keys in retry.items():
        s = summaries.get(label)
        groups.setdefault((s.repeats, s.smoke_limit) if s is not None else None, {})[label] = keys
    return [LaunchOptions(retry=group) for group in groups.values()]


class ErrorsScreen(Triage, HermitScreen[None]):
    """Failed attempts grouped by kind, then message; leaves are attempts (enter jumps to one; the triage keys label
    the highlighted one). Above them, the failure taxonomy: attempts per label per selector."""

    CSS_PATH = [style("errors.tcss")]
    BINDINGS = bindings.ERRORS

    def __init__(self) -> None:
        super().__init__()
        self._version = -1
        self._shape: tuple = ()

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(id="errors-summary")
        yield Static(id="errors-retries", classes="warning-banner")
        with VerticalScroll(id="errors-taxonomy-box", can_focus=False):
            yield Static(id="errors-taxonomy")
        yield Static("No errors", id="errors-empty")
        tree: Tree[Any] = Tree("errors", id="errors-tree")
        tree.show_root = False
        tree.auto_expand = False
        yield tree
        yield Static(id="errors-detail")
        yield Footer()

    def on_mount(self) -> None:
        self.refresh_from_store()
        self.query_one(Tree).focus()

    def on_screen_resume(self) -> None:
        self.refresh_from_store()

    def on_hermit_app_store_updated(self, message) -> None:
        self.refresh_from_store()

    # -- content --------------------------------------------------------------------------------------------------
    def refresh_from_store(self) -> None:
        store = self.app.store
        if store.version == self._version:
            return
        self._version = store.version
        cols = store.columns.values()
        failed = sum(c.errors + c.judge_errors for c in cols)
        judged = sum(c.judge_errors for c in cols)
        summary = Text(no_wrap=True, overflow="ellipsis")  # one line: the tree's groups count per selector too
        # "ended in an error": a failure (triage's word) is also a low score, so "failed" is not used for these
        summary.append(f"{failed} of {sum(c.done for c in cols)} attempts ended in an error", style="bold")
        summary.append(f" ({failed - judged} pipeline, {judged} judge)   " if judged else "   ", style="dim")
        for i, (key, col) in enumerate(store.columns.items()):
            summary.append(" · " if i else "", style="dim")
            summary.append(f"{key} {col.errors + col.judge_errors}")
        self.query_one("#errors-summary", Static).update(summary)
        retried = [(k, c.summary.retries) for k, c in store.columns.items() if c.summary and c.summary.retries]
        banner = self.query_one("#errors-retries", Static)
        banner.display = bool(retried)
        banner.update(Text("\n".join(f"{k}: {retry_caveat(n)}" for k, n in retried)))
        empty = self.query_one("#errors-empty", Static)
        empty.display = failed == 0
        empty.update(
            "No errors"
            if store.columns
            else "No evaluations yet: go back to setup (escape), then launch (l) or open earlier ones from history (h)."
        )
        self._show_taxonomy(store)
        tree = self.query_one(Tree)
        tree.display = failed > 0
        self.query_one("#errors-detail").display = failed > 0
        # regroup only when the failures (or their labels) changed, not on every batch of a live run
        shape = (store.annotations_version, *((k, id(c), c.errors, c.judge_errors) for k, c in store.columns.items()))
        if shape != self._shape:
            self._shape = shape
            self._fill(tree, store.keys, grouped(store))

    def _show_taxonomy(self, store) -> None:
        """Attempts per label per selector, the failures left unlabelled, and the progress of the triage."""
        box = self.query_one("#errors-taxonomy", Static)
        self.query_one("#errors-taxonomy-box").display = bool(store.columns)
        if not store.columns:
            return
        from rich.console import Group

        head = Text.assemble(
            ("Failure labels", "bold"),
            f"  {progress_text(store)} ",
            (f"(error, judge error or score < {store.threshold:g})", "dim"),
            ("\n1-9 label it, or a whole group · shift+u undo · u next unlabelled", "dim"),
        )
        taxonomy = store.taxonomy()
        extra = corrected_text(taxonomy)
        box.update(Group(head, counts_table(store.keys, taxonomy, store.label_set), *([extra] if extra else [])))

    def _fill(self, tree: Tree, keys: list[str], kinds: list[tuple[str, list[ErrorGroup]]]) -> None:
        """Rebuild the tree, keeping the cursor and what the user folded or unfolded."""
        current = _node_key(tree.cursor_node.data) if tree.cursor_node is not None else None
        stack, folded = list(tree.root.children), {}
        while stack:
            node = stack.pop()
            folded[_node_key(node.data)] = not node.is_expanded
            stack.extend(node.children)
        tree.clear()
        many = sum(g.total for _, groups in kinds for g in groups) > 200
        width = max(map(len, keys), default=0)
        target: TreeNode | None = None
        for kind, groups in kinds:
            n = sum(g.total for g in groups)
            kind_node = tree.root.add(
                Text.assemble((kind, "bold"), f"   {n} attempt{'s' * (n != 1)}"),
                data=kind,
                expand=not folded.get(_node_key(kind), False),
            )
            target = kind_node if _node_key(kind) == current else target
            for g in groups:
                label = Text.assemble(
                    _one_line(g.error),
                    "   ",
                    (f"{g.total}: ", "bold"),
                    counts_text(keys, {k: len(v) for k, v in g.attempts.items()}),
                )
                group_node = kind_node.add(label, data=g, expand=not folded.get(_node_key(g), many))
                target = group_node if _node_key(g) == current else target
                for key in keys:
                    for task_id, repeat in g.attempts.get(key, []):
                        ref = AttemptRef(key, task_id, repeat)
                        ann = self.app.store.annotation(key, task_id, repeat)
                        labels = ("  " + " ".join(f"[{n}]" for n in ann.labels)) if ann and ann.labels else ""
                        leaf = group_node.add_leaf(
                            Text.assemble(
                                (key.ljust(width), "bold"),
                                f"  {one_line(task_id)}  repeat {repeat}",
                                (labels, "italic"),
                            ),
                            data=ref,
                        )
                        target = leaf if ref == current else target
        if target is not None:
            tree.move_cursor(target)  # the new nodes have their lines once the tree is laid out: again then
            self.call_after_refresh(self._restore_cursor, tree, target)
        self._show_detail(tree.cursor_node)

    def _restore_cursor(self, tree: Tree, node: TreeNode) -> None:
        if node.line >= 0 and tree.cursor_node is not node:
            tree.move_cursor(node)
            self._show_detail(node)

    def _show_detail(self, node: TreeNode | None) -> None:
        detail = self.query_one("#errors-detail", Static)
        data = node.data if node is not None else None
        if isinstance(data, AttemptRef):
            col = self.app.store.columns.get(data.key)
            rec = col.records.get((data.task_id, data.repeat)) if col else None
            if col is None or rec is None:
                detail.update("")
                return
            tb = col.tracebacks.get((data.task_id, data.repeat)) or ""
            text = Text.assemble(
                (f"{data.key} · {one_line(data.task_id)} · repeat {data.repeat}", "bold"),
                "   enter: open\n",
                terminal(rec.judge.feedback or rec.error or ""),
            )
            tail = terminal(tb.rstrip("\n")).splitlines()[-4:]
            if tail:
                text.append("\n" + "\n".join(tail), style="dim")
            detail.update(text)
        elif isinstance(data, ErrorGroup):
            detail.update(
                Text.assemble(
                    (terminal(data.error or "(no message)"), "bold"),
                    "\n",
                    f"{data.total} attempts: 1-9 label every one of them (U undoes), enter on one opens it; "
                    "shift+r re-runs the failed attempts",
                )
            )
        else:
            detail.update(Text("Enter on an attempt opens it; shift+r re-runs only the failed attempts.", style="dim"))

    def on_tree_node_highlighted(self, event: Tree.NodeHighlighted) -> None:
        self._show_detail(event.node)

    def on_tree_node_selected(self, event: Tree.NodeSelected) -> None:
        event.stop()
        if isinstance(event.node.data, AttemptRef):
            self._jump(event.node.data)
        else:
            event.node.toggle()

    # -- triage ---------------------------------------------------------------------------------------------------
    def chosen_attempt(self) -> tuple[str, str, int] | None:
        node = self.query_one(Tree).cursor_node
        data = node.data if node is not None else None
        return (data.key, data.task_id, data.repeat) if isinstance(data, AttemptRef) else None

    def _scope_of(self, node: TreeNode | None) -> Scope | None:
        """The attempts under a group node (its message) or a kind node (every message of it)."""
        if node is None:
            return None
        data = node.data
        keys = self.app.store.keys
        if isinstance(data, ErrorGroup):
            groups, what = [data], f"the group '{_one_line(data.error)[:40]}'"
        elif isinstance(data, str):
            groups, what = [c.data for c in node.children if isinstance(c.data, ErrorGroup)], f"the kind {data}"
        else:
            return None
        attempts = [(k, t, r) for g in groups for k in keys for t, r in g.attempts.get(k, [])]
        return what, attempts

    def group_scope(self) -> Scope | None:
        return self._scope_of(self.query_one(Tree).cursor_node)

    def bulk_scope(self) -> Scope | None:
        """The highlighted group (a leaf's own group)."""
        node = self.query_one(Tree).cursor_node
        if node is not None and isinstance(node.data, AttemptRef):
            node = node.parent
        return self._scope_of(node)

    # -- actions --------------------------------------------------------------------------------------------------
    def _jump(self, ref: AttemptRef) -> None:
        self.app.goto("attempt", task_id=ref.task_id, key=ref.key, repeat=ref.repeat)

    def action_jump(self) -> None:
        node = self.query_one(Tree).cursor_node
        if node is not None and isinstance(node.data, AttemptRef):
            self._jump(node.data)
        elif node is not None:
            node.toggle()

    def retry_plan(self) -> tuple[RetryKeys, list[str]]:
        """The failed attempts to re-run per folder label, and the columns left out (core.run.continuing.retry_targets:
        smoke checks, archived evaluations, and those not stored under this run's eval folder)."""
        candidates = [
            RetryCandidate(
                key=key,
                label=col.label,
                folder=col.folder,
                live=col.source == "live",
                archived=col.archived,
                failed=col.error_keys(),
            )
            for key, col in self.app.store.columns.items()
        ]
        return retry_targets(candidates, self.app.config)

    def action_rerun_failed(self) -> None:
        plan, skipped = self.retry_plan()
        if skipped:
            self.notify(
                f"Not re-run (smoke checks, or not stored under this run's eval folder): {', '.join(skipped)}",
                severity="warning",
            )
        if not plan:
            self.notify("No failed attempt to re-run", severity="warning")
            return

        summaries = {c.label: c.summary for c in self.app.store.columns.values() if c.summary is not None}
        chosen_attempt = self.chosen_attempt()
        current = None
        if chosen_attempt is not None and chosen_attempt[0] in self.app.store.columns:
            current = self.app.store.columns[chosen_attempt[0]].label

        def confirmed(retry: RetryKeys | None) -> None:
            if retry:
                self.app.launch_chain(launches_of(retry, summaries))
            else:
                self.notify("Nothing re-run", timeout=3)

        repeats = {label: s.repeats for label, s in summaries.items()}
        self.app.push_screen(ConfirmRetry(plan, repeats, current), confirmed)

    def action_back(self) -> None:
        self.app.pop_screen()
