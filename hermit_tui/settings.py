"""hermit-tui's own settings file (never run.yaml): recent configs.

``$HERMIT_TUI_CONFIG_DIR/settings.json``, else ``$XDG_CONFIG_HOME/hermit-tui/settings.json``, else
``~/.config/hermit-tui/settings.json``.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from hermit_tui.core.records import write_atomic

MAX_RECENT = 12


def settings_path() -> Path:
    if os.environ.get("HERMIT_TUI_CONFIG_DIR"):
        return Path(os.environ["HERMIT_TUI_CONFIG_DIR"]) / "settings.json"
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "hermit-tui" / "settings.json"


def load_settings() -> dict:
    try:
        data = json.loads(settings_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def recent_configs() -> list[Path]:
    """Recent configs that still exist, newest first."""
    items = load_settings().get("recent", [])
    return [Path(p) for p in items if isinstance(p, str) and Path(p).is_file()]


def remember_config(path: Path) -> None:
    """Put ``path`` first in the recent list. A settings file that cannot be written is not an error."""
    data = load_settings()
    path = str(Path(path).resolve())
    recent = [p for p in data.get("recent", []) if isinstance(p, str) and p != path]
    data["recent"] = [path, *recent][:MAX_RECENT]
    try:
        target = settings_path()
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, json.dumps(data, indent=1))
    except OSError:
        pass
