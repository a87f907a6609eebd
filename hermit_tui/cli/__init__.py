"""The headless commands, one module each; ``main`` reads the command line and hands it to one of them.

``hermit-tui [--config run.yaml]`` opens the dashboard; ``eval``, ``report``, ``gate``, ``publish``, ``show``, ``diff``,
``serve``, ``annotate`` and ``demo`` are modules of this package. Exit codes: ``cli.common``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from hermit_tui.cli import annotate as cli_annotate
from hermit_tui.cli import demo as cli_demo
from hermit_tui.cli import diff as cli_diff
from hermit_tui.cli import eval as cli_eval
from hermit_tui.cli import gate as cli_gate
from hermit_tui.cli import publish as cli_publish
from hermit_tui.cli import report as cli_report
from hermit_tui.cli import serve as cli_serve
from hermit_tui.cli import show as cli_show
from hermit_tui.cli.common import EXIT_BAD_INPUT, EXIT_FAILED, Parser
from hermit_tui.cli.dashboard import open_dashboard
from hermit_tui.core.errors import InputError, RunFailed
from hermit_tui.core.safe import line

COMMANDS = {
    "eval": cli_eval,
    "report": cli_report,
    "gate": cli_gate,
    "publish": cli_publish,
    "show": cli_show,
    "diff": cli_diff,
    "serve": cli_serve,
    "annotate": cli_annotate,
    "demo": cli_demo,
}


def _parser() -> argparse.ArgumentParser:
    from hermit_tui import __version__

    parser = Parser(
        prog="hermit-tui",
        description="Compare Hermit harness adapters under a fixed evaluation "
        "protocol: a terminal dashboard, and a headless CLI.",
    )
    parser.add_argument("--version", action="version", version=f"hermit-tui {__version__}")
    parser.add_argument("--config", help="open the dashboard on this run.yaml")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="key.sub=value",
        help="a config override for the dashboard (repeatable), as hermit takes them",
    )
    sub = parser.add_subparsers(dest="command", parser_class=Parser)
    for module in COMMANDS.values():
        module.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = _parser().parse_args(argv)
        if args.command in COMMANDS:
            return COMMANDS[args.command].run(args)
        return open_dashboard(Path(args.config) if args.config else None, args.set)
    except InputError as exc:
        sys.stderr.write(f"hermit-tui: error: {line(exc)}\n")  # an echoed --task or file name shown, not run
        return EXIT_BAD_INPUT
    except RunFailed as exc:
        sys.stderr.write(f"hermit-tui: the run stopped: {line(exc)}\n")
        return EXIT_FAILED
    except KeyboardInterrupt:
        sys.stderr.write("hermit-tui: interrupted\n")
        return EXIT_FAILED


__all__ = ["COMMANDS", "main"]
