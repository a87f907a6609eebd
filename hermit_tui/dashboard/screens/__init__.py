"""One screen per module. ``SCREENS`` maps the names used by bindings and palette commands to their classes."""

from __future__ import annotations

from importlib import import_module

_WHERE = {
    "picker": ("picker", "PickerScreen"),
    "setup": ("setup", "SetupScreen"),
    "run": ("run", "RunScreen"),
    "tasks": ("tasks", "TasksScreen"),
    "attempt": ("attempt", "AttemptScreen"),
    "errors": ("errors", "ErrorsScreen"),
    "history": ("history", "HistoryScreen"),
    "help": ("help", "HelpScreen"),
    "review": ("review", "ReviewScreen"),
    "compare": ("compare", "CompareScreen"),
    "slices": ("slices", "SlicesScreen"),
    "changes": ("why.changes", "ChangesScreen"),
    "aligned": ("why.aligned", "AlignedScreen"),
    "versions": ("why.versions", "VersionsScreen"),
}


class _Screens(dict):
    """Imports a screen's module the first time it is asked for (start-up stays fast)."""

    def __missing__(self, name: str):
        module, cls = _WHERE[name]
        value = getattr(import_module(f"hermit_tui.dashboard.screens.{module}"), cls)
        self[name] = value
        return value


SCREENS = _Screens()
