"""Regenerate screenshots/*.svg and *.png: every screen on fixed data, at 120x40 (and 80x24 for a few).

    python screenshots/make_screenshots.py

Needs cairosvg for the PNGs (pip install cairosvg); the SVGs are written without it.
"""
from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from fixture_data import fixture_app  # noqa: E402

# (file name, screen, screen kwargs, size, keys to press first)
SHOTS = [
    ("setup", "setup", {}, (120, 40), []),
    ("run", "run", {}, (120, 40), []),
    ("tasks", "tasks", {}, (120, 40), []),
    ("attempt", "attempt", {"task_id": "t09"}, (120, 40), []),
    ("errors", "errors", {}, (120, 40), []),
    ("history", "history", {}, (120, 40), []),
    ("compare", "compare", {}, (120, 40), ["wait:2000"]),
    ("review", "review", {}, (120, 40), ["wait:2000"]),
    ("picker", "picker", {}, (120, 40), []),
    ("help", "help", {}, (120, 40), []),
    ("setup-80x24", "setup", {}, (80, 24), []),
    ("run-80x24", "run", {}, (80, 24), []),
    ("tasks-80x24", "tasks", {}, (80, 24), []),
    ("attempt-80x24", "attempt", {"task_id": "t09"}, (80, 24), []),
    ("errors-80x24", "errors", {}, (80, 24), []),
    ("history-80x24", "history", {}, (80, 24), []),
    ("compare-80x24", "compare", {}, (80, 24), ["wait:1500"]),
    ("review-80x24", "review", {}, (80, 24), ["wait:1500"]),
    ("picker-80x24", "picker", {}, (80, 24), []),
    ("run-200x50", "run", {}, (200, 50), []),
    ("tasks-200x50", "tasks", {}, (200, 50), []),
    ("compare-200x50", "compare", {}, (200, 50), ["wait:1500"]),
]


async def shoot(config: Path, name: str, screen: str, kwargs: dict, size: tuple[int, int], keys: list[str]) -> Path:
    app = fixture_app(config, screen, **kwargs)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        for key in keys:
            if key.startswith("wait:"):  # let a screen's worker finish (e.g. the first scipy import)
                await pilot.pause(int(key[5:]) / 1000)
            else:
                await pilot.press(key)
        await pilot.pause(0.3)
        path = app.save_screenshot(f"{name}.svg", str(HERE))
    return Path(path)


def prepare_history(config_path: Path) -> None:
    """Evaluations for the history screen: hermit's own (from the test fixtures), then ours on top (which archives
    hermit's)."""
    import shutil
    from hermit_tui.core.config import load_config
    from hermit_tui.core.runner import EvalRun
    eval_dir = config_path.parent / "runs" / "demo" / "eval"
    for label in ("none", "root", "final"):
        shutil.copytree(HERE.parent / "tests" / "fixtures" / "hermit_eval" / label, eval_dir / label)
    config = load_config(config_path, ["agent.params.latency_scale=0"])
    EvalRun(config, ["none", "root"], update_card=False).run_sync()


def svg_to_png(svg: Path) -> None:
    """A PNG beside the SVG. The SVG asks for Fira Code from the web; offline, a local monospace font keeps the
    columns aligned."""
    try:
        import cairosvg
    except ImportError:
        return
    text = svg.read_text(encoding="utf-8").replace("Fira Code, monospace", "DejaVu Sans Mono, monospace")
    cairosvg.svg2png(bytestring=text.encode("utf-8"), write_to=str(svg.with_suffix(".png")))


def main(only: list[str]) -> None:
    from hermit_tui.demo import build_demo
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["HERMIT_TUI_CONFIG_DIR"] = str(Path(tmp) / "settings")
        config = build_demo(Path(tmp) / "demo")
        os.chdir(Path(tmp) / "demo")
        prepare_history(config)
        for name, screen, kwargs, size, keys in SHOTS:
            if only and name not in only:
                continue
            try:
                svg = asyncio.run(shoot(config, name, screen, kwargs, size, keys))
            except Exception as exc:  # one broken screen must not stop the others
                print(f"{name}: FAILED {type(exc).__name__}: {exc}")
                continue
            svg_to_png(svg)
            print(f"{name}: {svg.name}")


if __name__ == "__main__":
    main(sys.argv[1:])
