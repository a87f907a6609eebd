"""``hermit-tui publish``: review final's card on the command line, then publish it (or undo the last publish).

    hermit-tui publish --config run.yaml [--adapter SEL ...] [--failure-labels] [--dry-run] [--yes] [--undo]
                       [key.sub=value ...]

The diff and the warnings are printed first. Publishing then needs the word "publish" typed on a terminal, or
``--yes``; without a terminal and without ``--yes`` nothing happens (exit 2). Refusals are one line, exit 2.
"""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from hermit_tui.core.errors import InputError
from hermit_tui.core.safe import line as one_line
from hermit_tui.core.safe import terminal

EXIT_OK, EXIT_DECLINED = 0, 1
_COLOURS = {"+": "\x1b[32m", "-": "\x1b[31m", "@": "\x1b[36m"}
_RESET = "\x1b[0m"


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``publish`` subcommand to ``subparsers`` (from ``ArgumentParser.add_subparsers``)."""
    p = subparsers.add_parser(
        "publish",
        help="review final's card (diff and warnings), then commit it and move "
        "the <run>/final tag; --undo moves the tag back",
    )
    p.add_argument("--config", required=True, help="hermit's run.yaml")
    p.add_argument(
        "--adapter",
        action="append",
        default=[],
        metavar="SEL",
        help="another evaluated selector to put on the card beside none, root and final (repeatable)",
    )
    p.add_argument("--dry-run", action="store_true", help="print the diff and the warnings; change nothing")
    p.add_argument("--yes", action="store_true", help="publish without the typed confirmation (read --dry-run first)")
    p.add_argument(
        "--failure-labels",
        action="store_true",
        help="add a line with each row's failure labels (the triage labels in annotations.jsonl) under "
        "the card's table (off by default)",
    )
    p.add_argument(
        "--undo",
        action="store_true",
        help="move <run>/final back to where the last hermit-tui publish found it, and the run's branch and "
        "CARD.md back to where it found them (when nothing was committed after the card)",
    )
    p.add_argument("overrides", nargs="*", metavar="key.sub=value", help="config overrides, as hermit takes them")
    return p


def _write_diff(diff: str, out: TextIO) -> None:
    colour = out.isatty()
    for line in diff.splitlines():
        if colour and line[:1] in _COLOURS and not line.startswith(("+++", "---")):
            line = f"{_COLOURS[line[0]]}{line}{_RESET}"
        out.write(terminal(line) + "\n")


def show_plan(plan, out: TextIO) -> None:
    """The review: the card's diff, the warnings and the refusals."""
    if plan.diff:
        _write_diff(plan.diff, out)
    elif plan.current_card is not None and plan.new_card is not None:
        out.write(f"{plan.card_path.name}: no change to its Evaluation section\n")
    if plan.warnings:
        n = len(plan.warnings)
        out.write(f"\n{n} warning{'s' if n > 1 else ''}, read before publishing:\n")
        out.writelines(f"  ! {one_line(w)}\n" for w in plan.warnings)
    if plan.refusals:
        out.write("\nPublishing is refused:\n")
        out.writelines(f"  x {one_line(r)}\n" for r in plan.refusals)


def _confirmed(word: str, what: str, stdin: TextIO, stderr: TextIO) -> bool:
    stderr.write(f"Type '{word}' to {what}: ")
    stderr.flush()
    return stdin.readline().strip() == word


def run(args, *, stdin: TextIO | None = None, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Carry out ``publish`` for parsed ``args``; bad input and refusals raise InputError (the CLI exits 2)."""
    from hermit_tui.core.publish.apply import CONFIRM_WORD, plan_publish, publish
    from hermit_tui.core.workspace.config import load_config

    stdin, stdout, stderr = stdin or sys.stdin, stdout or sys.stdout, stderr or sys.stderr
    config = load_config(args.config, args.overrides)
    _recover(args, config, stdout)
    if args.undo:
        return _undo(args, config, stdin, stdout, stderr)
    plan = plan_publish(config, args.adapter, getattr(args, "failure_labels", False))
    show_plan(plan, stdout)
    if plan.refusals:
        raise InputError("cannot publish: " + "; ".join(plan.refusals))
    if plan.up_to_date:
        stdout.write(
            f"{plan.card_path.name} already holds this evaluation and {plan.tag} points at it: nothing to publish\n"
        )
        return EXIT_OK
    target = (
        f"commit {plan.card_path.name} on branch '{plan.run}' and move {plan.tag} to it"
        if plan.changes_card
        else f"move {plan.tag} to the head of branch '{plan.run}', whose card already holds this evaluation"
    )
    if args.dry_run:
        stdout.write(f"\ndry run: nothing changed (publishing would {target})\n")
        return EXIT_OK
    if not args.yes:
        if not stdin.isatty():
            raise InputError("publish needs a typed confirmation on a terminal: read --dry-run, then add --yes")
        if not _confirmed(CONFIRM_WORD, target, stdin, stderr):
            stderr.write("not published\n")
            return EXIT_DECLINED
    result = publish(plan)
    stdout.write(terminal(result.message) + "\n")
    return EXIT_OK


def _recover(args, config, stdout: TextIO) -> None:
    """A publish or undo killed half-way left its journal: finished or rolled back before anything else (a dry
    run only says so)."""
    from hermit_tui.core.publish.recovery import journal_path, pending, recover

    if args.dry_run:
        if pending(config) is not None:
            stdout.write(
                f"a killed publish left {journal_path(config.run_dir)}: publish or publish --undo recovers it first\n"
            )
        return
    recovered = recover(config)
    if recovered is not None:
        stdout.write(recovered + "\n")


def _undo(args, config, stdin: TextIO, stdout: TextIO, stderr: TextIO) -> int:
    from hermit_tui.core.publish.apply import UNDO_WORD, undo_check, undo_publish, undo_text

    entry, problem = undo_check(config)
    if entry is None:
        raise InputError(f"cannot undo: {problem}")
    what = f"{undo_text(config, entry)} (published {entry.get('at', '?')})"
    stdout.write(f"undo would {what}\n")
    if args.dry_run:
        stdout.write("dry run: nothing changed\n")
        return EXIT_OK
    if not args.yes:
        if not stdin.isatty():
            raise InputError("publish --undo needs a typed confirmation on a terminal, or --yes")
        if not _confirmed(UNDO_WORD, "undo the publish", stdin, stderr):
            stderr.write("nothing undone\n")
            return EXIT_DECLINED
    stdout.write(terminal(undo_publish(config).message) + "\n")
    return EXIT_OK
