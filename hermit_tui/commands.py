"""Command-palette commands (ctrl+p) for every main action."""
from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider


class HermitCommands(Provider):
    """The dashboard's main actions, by name."""

    def _commands(self):
        app = self.app
        return [
            ("Open config…", "choose a run.yaml", partial(app.goto, "picker")),
            ("Open the built-in demo", "a teaching demonstration, not evidence", app.action_open_demo),
            ("Setup: choose selectors and launch", "the protocol at a glance", partial(app.goto, "setup")),
            ("Live run", "progress, grid and event log", partial(app.goto, "run")),
            ("Cancel the run", "finished attempts are kept", app.cancel_run),
            ("Per-task table", "sort, filter, search", partial(app.goto, "tasks")),
            ("Errors", "every error and judge_error, grouped", partial(app.goto, "errors")),
            ("History", "open earlier evaluations side by side", partial(app.goto, "history")),
            ("Compare two selectors", "intervals, paired difference, verdict, plots", partial(app.goto, "compare")),
            ("Review & publish the final card", "diff, warnings, explicit confirm; undo",
             partial(app.goto, "review")),
            ("Export the report", "Markdown, JSON and CSV beside the evaluations", app.action_export_report),
            ("Set the success threshold…", "what counts as solved in the views (files keep 1.0)",
             app.action_set_threshold),
            ("Toggle dark/light theme", "", app.action_toggle_dark),
            ("Help", "every key binding", app.action_help),
        ]

    async def discover(self) -> Hits:
        for name, help_text, callback in self._commands():
            yield DiscoveryHit(name, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, help_text, callback in self._commands():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), callback, help=help_text)
