"""Regenerate screenshots/*.svg and *.png: every screen on fixed data, at 120x40, 80x24 and 200x50.

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

from fixture_data import annotate_fixed, fixed_store, fixture_app  # noqa: E402

# (file name, screen, screen kwargs, keys to press first): each at 120x40 (<name>.svg), 80x24 and 200x50
SCREENS = [
    ("setup", "setup", {}, ["wait:500"]),
    ("run", "run", {}, []),
    ("tasks", "tasks", {}, []),
    ("tasks-outputs", "tasks", {}, ["o"]),
    ("attempt", "attempt", {"task_id": "t09"}, []),
    ("errors", "errors", {}, []),
    ("history", "history", {}, []),
    ("compare", "compare", {}, ["wait:2000"]),
    ("compare-labels", "compare", {}, ["wait:2000", "right_square_bracket", "right_square_bracket"]),
    ("review", "review", {}, ["wait:2000"]),
    ("picker", "picker", {}, []),
    ("help", "help", {}, []),
]
SIZES = [((120, 40), ""), ((80, 24), "-80x24"), ((200, 50), "-200x50")]
SHOTS = [
    (name + suffix, screen, kwargs, size, keys) for name, screen, kwargs, keys in SCREENS for size, suffix in SIZES
]


async def shoot(config: Path, name: str, screen: str, kwargs: dict, size: tuple[int, int], keys: list[str]) -> Path:
    app = fixture_app(config, screen, store=annotate_fixed(fixed_store()), **kwargs)  # with a few triage labels
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

    from hermit_tui.core.run.runner import EvalRun
    from hermit_tui.core.workspace.config import load_config

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
