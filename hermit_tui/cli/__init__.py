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
from hermit_tui.cli.common import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    Parser,
    imports_done,
    pause_collector,
    skip_pydantic_plugins,
)
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
        epilog="hermit-tui run.yaml (or a project folder holding one) opens the dashboard on it, as --config does.",
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


def _config_as_positional(argv: list[str]) -> list[str]:
    """``hermit-tui run.yaml`` (or a project's folder holding one) opens the dashboard on it, as ``--config`` does.

    Only a first bare word that is no command and names a YAML file or an existing path is taken so; a word that
    is neither is one line naming the commands.
    """
    skip = False
    for i, word in enumerate(argv):
        if skip:
            skip = False
            continue
        if word == "--config" or word.startswith("--config="):
            return argv  # the config given as an option already
        if word == "--set":
            skip = True  # its value is next
            continue
        if word.startswith("-"):
            continue
        if word in COMMANDS:
            return argv
        if Path(word).is_dir() and (Path(word) / "run.yaml").is_file():
            word = str(Path(word) / "run.yaml")  # a project's folder: its run.yaml
        if word.endswith((".yaml", ".yml")) or Path(word).exists():
            return [*argv[:i], "--config", word, *argv[i + 1 :]]
        raise InputError(
            f"{word!r} is neither a command ({', '.join(COMMANDS)}) nor a config file; "
            "hermit-tui run.yaml opens the dashboard on one"
        )
    return argv


# commands that read the files, print and end: run as the process's own command (argv None), they leave what they
# built out of the collector's reach on their way out (``_exit_lightly``)
READING = frozenset({"report", "gate", "show", "diff", "annotate"})
# those of them that also build their models without pydantic's plugins (cli.common.skip_pydantic_plugins: no user
# code runs in them)
PLUGINLESS = frozenset({"report", "gate", "show"})
# commands that import the engine with the collector paused (cli.common.pause_collector; each calls imports_done
# once its modules are in): the reading ones above, and eval, whose launch then runs with the imported objects
# out of its full collections
PAUSED_IMPORTS = PLUGINLESS | {"eval"}


def _exit_lightly(collect: bool = False) -> None:
    """Freeze the collector's objects (``gc.freeze``) as the process is about to end: the interpreter's exit then
    skips them in its final collections, which otherwise traverse every object the engine's modules, pydantic's
    schemas and numpy built (40-80 ms of CPU after ``report`` on the demo, issue 30). Nothing is lost: atexit
    handlers, flushes and the objects' own finalizers run as before; only cycles the process leaves behind stay
    uncollected, as the process ends. ``collect`` (eval, which ran threads, processes and user code): those cycles
    are collected first, so every finalizer they hold runs as at a plain exit (eval's exit 62-70 -> ~27 ms on
    bench_hermit's project, the collection included). Not for ``main`` called in a process that goes on (the
    tests)."""
    import gc

    if collect:
        gc.collect()
    gc.freeze()


def main(argv: Sequence[str] | None = None) -> int:
    command = None
    try:
        words = list(sys.argv[1:] if argv is None else argv)
        args = _parser().parse_args(_config_as_positional(words))
        command = args.command
        if argv is None and command in PAUSED_IMPORTS:
            pause_collector()
        if argv is None and command in PLUGINLESS:
            skip_pydantic_plugins()
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
    finally:
        imports_done()  # the collector resumed, had a command ended before its imports were in
        if argv is None and command in READING:
            _exit_lightly()
        elif argv is None and command == "eval":
            _exit_lightly(collect=True)


__all__ = ["COMMANDS", "PAUSED_IMPORTS", "PLUGINLESS", "READING", "main"]
