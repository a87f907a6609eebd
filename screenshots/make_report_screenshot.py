"""Regenerate the HTML report's sample and screenshots from the demo: screenshots/report-html.html (the page itself),
report-html.png (1280 px wide, light) and report-html-400-dark.png (400 px wide, dark).

    python screenshots/make_report_screenshot.py

Needs Chromium (apt-get install chromium); the page is rendered headless as the browser tests do.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from browser import Browser, find_chromium  # noqa: E402

TOP = 2100  # px of the wide page shown in the README (header, warnings, protocol, results, plots)


def main() -> int:
    from hermit_tui.cli import main as cli
    from hermit_tui.core.run.runner import EvalRun
    from hermit_tui.core.workspace.config import load_config
    from hermit_tui.demo import build_demo

    if find_chromium() is None:
        print("chromium is not installed (apt-get install chromium)")
        return 1
    with tempfile.TemporaryDirectory(prefix="hermit-tui-", dir="/tmp") as tmp:
        os.environ["HERMIT_TUI_CONFIG_DIR"] = str(Path(tmp) / "settings")
        config = build_demo(Path(tmp) / "demo")
        EvalRun(
            load_config(config, ["agent.params.latency_scale=0"]), ["none", "root", "final"], update_card=False
        ).run_sync()
        page_file = HERE / "report-html.html"
        if cli(["report", "--config", str(config), "--format", "html", "--output", str(page_file), "--force"]):
            return 1
    with Browser() as browser:
        page = browser.page()
        page.set_view(1280, TOP)
        page.navigate(page_file.as_uri())
        page.screenshot(HERE / "report-html.png")
        page.set_view(400, 1500, dark=True)
        page.screenshot(HERE / "report-html-400-dark.png")
    for name in ("report-html.html", "report-html.png", "report-html-400-dark.png"):
        print(f"{name}: {(HERE / name).stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
