"""``hermit-tui demo``: create the built-in demo workspace (a teaching demonstration) and open it."""

from __future__ import annotations

import sys
from pathlib import Path

from hermit_tui.cli.common import EXIT_OK
from hermit_tui.cli.dashboard import open_dashboard


def add_parser(sub) -> None:
    p_demo = sub.add_parser("demo", help="create the built-in demo workspace (a teaching demonstration) and open it")
    p_demo.add_argument("dir", nargs="?", help="where to create it (default: the user cache folder)")
    p_demo.add_argument("--no-ui", action="store_true", help="only create it and print its run.yaml path")
    p_demo.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="key.sub=value",
        help="a config override for the dashboard (repeatable)",
    )


def run(args) -> int:
    from hermit_tui.demo import build_demo, default_demo_dir

    dest = Path(args.dir) if args.dir else default_demo_dir()
    there = (dest.expanduser() / "run.yaml").is_file()  # a demo already built is returned untouched
    config_path = build_demo(dest)
    if args.no_ui:
        print(config_path)
        if there:  # `--config "$(hermit-tui demo --no-ui)"` in every command: the tip once, when the demo is made
            return EXIT_OK
        sys.stderr.write(
            "The demo is a teaching demonstration, not evidence of real-model performance. Try:\n"
            f"  hermit-tui eval --config {config_path} --adapter none --adapter root --adapter final\n"
        )
        return EXIT_OK
    return open_dashboard(config_path, args.set)


__all__ = ["add_parser", "run"]
