"""``hermit-tui annotate``: label, note or correct the score of one attempt, headless (the dashboard's triage keys).

    hermit-tui annotate --config run.yaml --adapter SEL --task ID --repeat N
                        [--label L ...] [--remove-label L ...] [--note TEXT] [--judge-score X] [--clear]
                        [key.sub=value ...]

Appends one line to the selector's current ``eval/<label>/annotations.jsonl`` (the evaluation may have been written
by hermit-tui or by ``hermit eval``) and prints the attempt's annotation as JSON. ``--label`` adds labels of the
run's label set (hermit-tui's settings; the default set otherwise), ``--remove-label`` takes them off, ``--note``
replaces the note ("" removes it), ``--judge-score`` keeps a corrected score beside the judge's (which never
changes) and adds "judge disagrees", ``--clear`` removes everything first. Without any of them it prints the
attempt's annotation. An unknown selector, task, repeat or label is an InputError: one line, exit code 2, nothing
written.
"""

from __future__ import annotations

import json
import sys

from hermit_tui.core.errors import InputError
from hermit_tui.core.safe import json_text


def add_parser(subparsers):
    """Add the ``annotate`` subcommand to an argparse subparsers object; returns its parser."""
    p = subparsers.add_parser(
        "annotate",
        help="label, note or correct the score of one attempt (triage, "
        "headless): appends to eval/<label>/annotations.jsonl",
    )
    p.add_argument("--config", required=True, help="hermit's run.yaml")
    p.add_argument(
        "--adapter",
        required=True,
        metavar="SEL",
        help="the selector whose current evaluation holds the "
        "attempt (none | root | final | a tag | a commit | an adapter directory)",
    )
    p.add_argument("--task", required=True, metavar="ID", help="the task id")
    p.add_argument("--repeat", required=True, type=int, metavar="N", help="the repeat (from 1)")
    p.add_argument(
        "--label", action="append", default=[], metavar="L", help="add a label of the run's label set (repeatable)"
    )
    p.add_argument("--remove-label", action="append", default=[], metavar="L", help="take a label off (repeatable)")
    p.add_argument("--note", metavar="TEXT", help='the attempt\'s note (replaces the earlier one; "" removes it)')
    p.add_argument(
        "--judge-score",
        metavar="X",
        help='a corrected score, kept beside the judge\'s (which never changes); adds the label "judge disagrees"',
    )
    p.add_argument(
        "--clear",
        action="store_true",
        help="remove the attempt's labels, note and corrected score (before the other options apply)",
    )
    p.add_argument("overrides", nargs="*", metavar="key.sub=value", help="config overrides, as hermit takes them")
    return p


def find_attempt(config, selector: str, task_id: str, repeat: int):
    """(folder, record) of the attempt, from the selector's current evaluation. InputError for an unknown selector,
    task or repeat."""
    from hermit_tui.core.records.folders import RESULTS, eval_root
    from hermit_tui.core.records.lines import task_records
    from hermit_tui.core.workspace.selectors import label_of

    if repeat < 1:
        raise InputError(f"--repeat must be a positive whole number, got {repeat}")
    label = label_of(selector, config)
    root = eval_root(config.run_dir)
    folder = root / label
    if not (folder / RESULTS).is_file():
        present = sorted(p.name for p in root.iterdir() if (p / RESULTS).is_file()) if root.is_dir() else []
        raise InputError(
            f"--adapter {selector}: no evaluation in {folder} (evaluated here: "
            f"{', '.join(present) if present else 'none yet'})"
        )
    attempts = {r.repeat: r for r in task_records(folder / RESULTS, task_id)}  # a retried attempt: the latest line
    if not attempts:
        raise InputError(f"--task {task_id}: no attempt of it is recorded in {folder / RESULTS}")
    if repeat not in attempts:
        raise InputError(
            f"--repeat {repeat}: {task_id} has repeat {', '.join(map(str, sorted(attempts)))} under {label}"
        )
    return folder, attempts[repeat]


def change_of(args, label_set: list[str]):
    """The Change the options ask for (None: nothing to change). InputError for an unknown label or a bad score."""
    from hermit_tui.core.records.annotations import Change, check_label, check_note, check_score

    def known(texts: list[str], option: str) -> list[str]:
        out = []
        for text in texts:
            name = check_label(text, option)
            if name not in label_set:
                raise InputError(
                    f"{option} {name!r}: not in the run's label set ({', '.join(label_set)}); edit the "
                    "set in the dashboard (shift+l)"
                )
            out.append(name)
        return out

    add = known(args.label, "--label")
    remove = [check_label(text, "--remove-label") for text in args.remove_label]
    note = check_note(args.note) if args.note is not None else None
    score = check_score(args.judge_score, "--judge-score") if args.judge_score is not None else None
    if not (add or remove or args.clear) and note is None and score is None:
        return None
    return Change(add=add, remove=remove, note=note, corrected_score=score, clear=args.clear)


def run(args) -> int:
    """Annotate the attempt (or print its annotation); 0 when done."""
    from hermit_tui.core.records.annotations import read_annotations, update_annotation
    from hermit_tui.core.workspace.config import load_config
    from hermit_tui.settings import label_set

    config = load_config(args.config, args.overrides or [])
    folder, record = find_attempt(config, args.adapter, str(args.task), args.repeat)
    change = change_of(args, label_set(config.run_dir))
    if change is None:
        current = read_annotations(folder).entries.get(record.key)
        shown = current.model_dump() if current is not None and current.applies_to(record) else None
        payload = {"label": folder.name, "folder": str(folder), "annotation": shown}
    else:
        new, _ = update_annotation(folder, record, change)
        payload = {"label": folder.name, "folder": str(folder), "annotation": None if new.empty else new.model_dump()}
    sys.stdout.write(json_text(json.dumps(payload, ensure_ascii=False)) + "\n")
    sys.stdout.flush()
    return 0


__all__ = ["add_parser", "change_of", "find_attempt", "run"]
