"""Command-palette commands (ctrl+p): every action of the dashboard by name. An action that belongs to one screen
("Swap the compared selectors") shows that screen first, then runs there."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider


def palette_commands(app) -> list[tuple[str, str, Callable]]:
    """(name, help, callback) of every palette command, in the order they are listed."""
    on = app.run_on
    return [
        ("Open config…", "choose a run.yaml", partial(app.goto, "picker")),
        ("Open the built-in demo", "a teaching demonstration, not evidence", app.action_open_demo),
        ("Setup: choose selectors and launch", "the protocol at a glance", partial(app.goto, "setup")),
        (
            "Launch the ticked selectors side by side",
            "writes results and summaries only; never publishes",
            partial(on, "setup", "launch"),
        ),
        (
            "Resume interrupted evaluations",
            "only the missing attempts run, under the recorded protocol",
            partial(on, "setup", "resume"),
        ),
        (
            "Add an adapter directory, tag or commit…",
            "a selector typed in, checked before it is added",
            partial(on, "setup", "add_selector"),
        ),
        (
            "Setup: launch settings (repeats, concurrency, limit, timeout, cost, executor)",
            "the first field of the launch settings (s on Setup)",
            partial(on, "setup", "settings"),
        ),
        (
            "Setup: the protocol and its checks",
            "the protocol panel, scrolled to its checks (c on Setup)",
            partial(on, "setup", "checks"),
        ),
        ("Live run", "progress, grid and event log", partial(app.goto, "run")),
        ("Cancel the launch", "finished attempts are kept; summaries marked incomplete", app.cancel_run),
        ("Per-task table", "sort, filter, search", partial(app.goto, "tasks")),
        (
            "Filter the per-task table (next filter)",
            "all, errors, regressions, improvements, flaky, unknown cost",
            partial(on, "tasks", "next_filter"),
        ),
        (
            "Sort the per-task table (next column)",
            "by id, mean, solved or delta of any selector",
            partial(on, "tasks", "sort"),
        ),
        (
            "Sort the per-task table by a column…",
            "pick the column: id, or a selector's mean, solved or delta (shift+s)",
            partial(on, "tasks", "sort_pick"),
        ),
        (
            "Per-task table: selectors one line each, or all on one line",
            "the header's details: commit, mean, errors per selector (i)",
            partial(on, "tasks", "details"),
        ),
        (
            "Baseline: next selector",
            "the deltas and the regression filters compare against it",
            partial(on, "tasks", "baseline"),
        ),
        (
            "Outputs side by side per task",
            "each selector's output, the differences highlighted",
            partial(on, "tasks", "toggle_outputs"),
        ),
        (
            "Errors",
            "every error and judge_error, grouped; the failure labels per selector",
            partial(app.goto, "errors"),
        ),
        (
            "Re-run failed attempts…",
            "asks first: re-running only failures can bias a mean",
            partial(on, "errors", "rerun_failed"),
        ),
        (
            "Triage: next unlabelled failure",
            "regressions first, then errors, flaky tasks, other failures (u)",
            partial(app.triage, "next_unlabelled"),
        ),
        (
            "Triage: toggle a label on the chosen attempt…",
            "the run's label set (keys 1-9); several per attempt",
            partial(app.triage, "pick_label"),
        ),
        (
            "Triage: note and corrected score on the chosen attempt…",
            "the judge's score stays recorded (n)",
            partial(app.triage, "note"),
        ),
        (
            "Triage: clear the chosen attempt's labels and note",
            "appends a clearing line to annotations.jsonl (0)",
            partial(app.triage, "clear_annotation"),
        ),
        (
            "Triage: label every attempt shown…",
            "the errors screen's group, or the failed attempts of the per-task table's rows (shift+a)",
            partial(app.triage, "bulk_label"),
        ),
        ("Triage: undo the last bulk label", "every attempt it changed, as it was (shift+u)", app.undo_bulk),
        (
            "Triage: edit the label set (keys 1-9)…",
            "kept per run in hermit-tui's settings, never in run.yaml",
            app.edit_label_set,
        ),
        (
            "Filter the per-task table by label…",
            "a label, any label, or the failures without one (shift+f)",
            partial(on, "tasks", "label_filter"),
        ),
        (
            "Per-task table: target the row's next attempt",
            "what the triage keys act on in the table (a)",
            partial(on, "tasks", "next_attempt"),
        ),
        (
            "Compare: failure labels fixed and introduced",
            "per label, the tasks b fixed or introduced against a",
            partial(on, "compare", "show_labels"),
        ),
        ("History", "add earlier evaluations to the view, or take them out (x)", partial(app.goto, "history")),
        (
            "Take a selector out of the view…",
            "the per-task table's x; History (enter) puts it back",
            partial(on, "tasks", "take_out"),
        ),
        ("Compare two selectors", "intervals, paired difference, verdict, plots", partial(app.goto, "compare")),
        ("Swap the compared selectors", "a and b change places", partial(on, "compare", "swap")),
        (
            "Why it changed: the compared pair's Changes",
            "the adapter's diff beside the tasks fixed, broken, flaky; divergence, tool use, usage (w)",
            partial(on, "compare", "why"),
        ),
        (
            "One task through every version",
            "the table's task in every evaluation of the run; the checkpoints on test (shift+v)",
            partial(on, "tasks", "versions"),
        ),
        ("Review & publish the final card", "diff, warnings, explicit confirm; undo", partial(app.goto, "review")),
        ("Publish the final card…", "asks for a typed confirmation first", partial(on, "review", "publish")),
        ("Undo the last publish…", "moves the final tag back; asks first", partial(on, "review", "undo")),
        (
            "Review: failure labels line on the card (on/off)",
            "off by default: the hand labels, counted per row",
            partial(on, "review", "toggle_taxonomy"),
        ),
        ("Export the report", "Markdown, JSON, CSV and HTML beside the evaluations", app.action_export_report),
        ("Set the success threshold…", "what counts as solved in the views (files keep 1.0)", app.action_set_threshold),
        ("Warnings: expand or collapse", "the banners at the top of the screen (!)", app.action_toggle_banners),
        ("Toggle dark/light theme", "", app.action_toggle_dark),
        ("Help", "every key binding", app.action_help),
        ("Quit", "asks first during a launch", app.action_quit),
    ]


class HermitCommands(Provider):
    """The dashboard's actions, by name."""

    def _commands(self):
        return palette_commands(self.app)

    async def discover(self) -> Hits:
        for name, help_text, callback in self._commands():
            yield DiscoveryHit(name, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, help_text, callback in self._commands():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), callback, help=help_text)
