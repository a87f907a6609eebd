"""hermit-tui's settings file: hostile contents are ignored, never read into a hang."""

from __future__ import annotations

import json
import os
import threading

from hermit_tui.settings import load_settings, recent_configs, remember_config, settings_path


def in_thread(fn, timeout: float = 10.0):
    """Run ``fn``; a blocking read would hang the suite, so it runs in a thread given ``timeout`` seconds."""
    out: list = []
    thread = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), f"{fn.__name__} blocked"
    return out[0]


def test_a_fifo_or_garbage_in_place_of_the_settings_file_reads_as_no_settings(tmp_path, monkeypatch):
    monkeypatch.setenv("HERMIT_TUI_CONFIG_DIR", str(tmp_path))
    path = settings_path()
    os.mkfifo(path)  # nobody writes to it: a plain read would wait forever
    assert in_thread(load_settings) == {} and in_thread(recent_configs) == []
    path.unlink()
    path.write_bytes(b"\xff\xfe not json")
    assert load_settings() == {}
    path.write_text(json.dumps(["a", "list"]))
    assert load_settings() == {}


def test_recent_configs_round_trip(tmp_path, monkeypatch):
    monkeypatch.setenv("HERMIT_TUI_CONFIG_DIR", str(tmp_path / "settings"))
    config = tmp_path / "run.yaml"
    config.write_text("run_name: x\n")
    remember_config(config)
    assert recent_configs() == [config.resolve()]
    config.unlink()
    assert recent_configs() == []  # gone from disk: not offered
