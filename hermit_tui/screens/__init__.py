"""One screen per module. ``SCREENS`` maps the names used by bindings and palette commands to their classes."""
from __future__ import annotations

import threading
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
}


class _Screens(dict):
    """Imports a screen's module the first time it is asked for (start-up stays fast)."""

    def __missing__(self, name: str):
        module, cls = _WHERE[name]
        value = getattr(import_module(f"hermit_tui.screens.{module}"), cls)
        self[name] = value
        return value


SCREENS = _Screens()


def warm(*names: str) -> None:
    """Import these screens' modules in a background thread, before they are asked for: an import on the event loop
    is a stall (the setup screen's ~0.16 s, the per-task table's ~0.06 s on this project's test machine)."""
    missing = [n for n in names if n not in SCREENS]
    if not missing:
        return

    def load() -> None:
        for name in missing:
            try:
                SCREENS[name]
            except Exception:  # the import is tried again, on the loop, when the screen is asked for
                pass
    threading.Thread(target=load, name="warm-screens", daemon=True).start()
