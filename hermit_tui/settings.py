"""hermit-tui's own settings file (never run.yaml): recent configs, the launch settings chosen per config, and the
triage label set (keys 1-9) per run.

``$HERMIT_TUI_CONFIG_DIR/settings.json``, else ``$XDG_CONFIG_HOME/hermit-tui/settings.json``, else
``~/.config/hermit-tui/settings.json``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from hermit_tui.core.records.results import write_atomic
from hermit_tui.core.workspace.files import read_text

MAX_RECENT = 12


def settings_path() -> Path:
    if os.environ.get("HERMIT_TUI_CONFIG_DIR"):
        return Path(os.environ["HERMIT_TUI_CONFIG_DIR"]) / "settings.json"
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "hermit-tui" / "settings.json"


def load_settings() -> dict:
    try:
        data = json.loads(read_text(settings_path()))  # a FIFO or device there is refused at once, never read
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
    resolved = str(Path(path).resolve())
    recent = [p for p in data.get("recent", []) if isinstance(p, str) and p != resolved]
    data["recent"] = [resolved, *recent][:MAX_RECENT]
    _write(data)


# -- launch settings, per config ------------------------------------------------------------------------------------
MAX_LAUNCH_CONFIGS = 50
#: key -> the type its value must have (anything else in the file is ignored when read)
LAUNCH_KEYS: dict[str, type | tuple[type, ...]] = {
    "picks": list,
    "added": list,
    "repeats": str,
    "concurrency": str,
    "limit": str,
    "timeout": str,
    "executor": str,
    "decide": str,
    "baseline": str,
    "margin": str,  # --stop-when-decided, --baseline, --margin
}


def _write(data: dict) -> None:
    try:
        target = settings_path()
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, json.dumps(data, indent=1))
    except OSError:
        pass


def launch_settings(config_path: Path) -> dict:
    """What was last chosen on the setup screen for this config: ticked selectors (``picks``), adapter directories
    and refs typed in (``added``), and the launch fields as typed (strings). Values of the wrong type are dropped."""
    entry = load_settings().get("launch", {})
    entry = entry.get(str(Path(config_path).resolve())) if isinstance(entry, dict) else None
    if not isinstance(entry, dict):
        return {}
    out = {}
    for key, kind in LAUNCH_KEYS.items():
        value = entry.get(key)
        if isinstance(value, kind):
            out[key] = [v for v in value if isinstance(v, str)] if isinstance(value, list) else value
    return out


def remember_launch(config_path: Path, values: dict) -> None:
    """Keep the setup screen's choices for this config (the most recent configs only). Not being able to write the
    settings file is not an error."""
    data = load_settings()
    launch = data.get("launch")
    launch = dict(launch) if isinstance(launch, dict) else {}
    key = str(Path(config_path).resolve())
    launch.pop(key, None)
    launch[key] = {k: v for k, v in values.items() if k in LAUNCH_KEYS and isinstance(v, LAUNCH_KEYS[k])}
    data["launch"] = dict(list(launch.items())[-MAX_LAUNCH_CONFIGS:])
    _write(data)


# -- triage label sets, per run -------------------------------------------------------------------------------------
MAX_LABEL_RUNS = 50


def label_set(run_dir: Path) -> list[str]:
    """The labels of keys 1-9 for this run (``<run dir>`` resolved): what was last saved from the dashboard, else the
    default set. "judge disagrees" is always first; an entry that is not a valid set is ignored."""
    from hermit_tui.core.errors import InputError
    from hermit_tui.core.records.annotations import DEFAULT_LABEL_SET, check_label_set

    entry = load_settings().get("labels", {})
    entry = entry.get(str(Path(run_dir).resolve())) if isinstance(entry, dict) else None
    if isinstance(entry, list) and all(isinstance(v, str) for v in entry):
        try:
            return check_label_set(entry)
        except InputError:
            pass
    return list(DEFAULT_LABEL_SET)


def remember_label_set(run_dir: Path, labels: list[str]) -> list[str]:
    """Keep this run's label set (checked first: InputError on a bad one). Returns it as kept. Not being able to
    write the settings file is not an error."""
    from hermit_tui.core.records.annotations import check_label_set

    labels = check_label_set(labels)
    data = load_settings()
    sets = data.get("labels")
    sets = dict(sets) if isinstance(sets, dict) else {}
    key = str(Path(run_dir).resolve())
    sets.pop(key, None)
    sets[key] = labels
    data["labels"] = dict(list(sets.items())[-MAX_LABEL_RUNS:])
    _write(data)
    return labels
