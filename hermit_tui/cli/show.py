"""``hermit-tui show``: one task's attempts under one selector, headless (the drill-down without a terminal UI).

    hermit-tui show --config run.yaml --adapter SEL --task ID [--repeat N] [--format text|json] [key.sub=value ...]
    hermit-tui show --config run.yaml --task ID --versions [--format text|json]

Reads the selector's current evaluation (``eval/<label>/``, written by hermit-tui or by ``hermit eval``): the task's
fields, then per attempt its output, score, feedback, judge extra, status, error and traceback, cost (an unknown
cost says unknown, never $0), tokens, wall time, API speed, log path, and the transcript with its tool calls and
results (from transcripts.jsonl, else from the log when it is hermit's react JSON). Without ``--repeat``, every
repeat. An unknown selector, task or repeat is an InputError: one line, exit code 2.

``--versions``: the task through every evaluation of the run (none, root, each checkpoint, final, archived and
hermit-written ones), its marks and means in each, and the run's checkpoints as a curve on test (description only).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from hermit_tui.core.errors import InputError
from hermit_tui.core.present import cost_text, tokens_text
from hermit_tui.core.safe import json_text, terminal
from hermit_tui.core.safe import line as one_line

FORMATS = ("text", "json")


def add_parser(subparsers):
    """Add the ``show`` subcommand to an argparse subparsers object; returns its parser."""
    p = subparsers.add_parser(
        "show",
        help="show one task's attempts under one selector: fields, output, score, "
        "cost, transcript with tool calls (the drill-down, headless)",
    )
    p.add_argument("--config", required=True, help="hermit's run.yaml")
    p.add_argument(
        "--adapter",
        metavar="SEL",
        help="the selector whose current evaluation to read "
        "(none | root | final | a tag | a commit | an adapter directory)",
    )
    p.add_argument("--task", required=True, metavar="ID", help="the task id")
    p.add_argument("--repeat", type=int, metavar="N", help="only this repeat (default: every repeat)")
    p.add_argument("--format", choices=FORMATS, default="text", help="text (default) or json")
    p.add_argument(
        "--align",
        action="append",
        metavar="SEL",
        help="align the task's trajectories under --adapter and this selector step by step, with the first "
        "divergence marked (repeatable: N-way, --adapter's the pivot); per repeat, or --repeat's",
    )
    p.add_argument("--full", action="store_true", help="with --align: every step's text whole (default: folded)")
    p.add_argument(
        "--versions",
        action="store_true",
        help="the task through every evaluation of the run (none, root, checkpoints, final, archived): its marks "
        "and means in each, and the checkpoints as a curve on test (description only); no --adapter",
    )
    p.add_argument("overrides", nargs="*", metavar="key.sub=value", help="config overrides, as hermit takes them")
    return p


# -- gathering -------------------------------------------------------------------------------------------------------
def _task_row(config, task_id: str) -> tuple[dict | None, str]:
    """The task's row from data.tasks, or None and why not (the attempts are still shown)."""
    from hermit_tui.core.workspace.tasks import read_tasks

    if config.tasks_path is None:
        return None, "data.tasks is not set: the task's fields are not known"
    try:
        tasks = read_tasks(config.tasks_path)
    except InputError as exc:
        return None, f"the task's fields cannot be read: {exc}"
    return tasks.get(task_id), "" if task_id in tasks else f"{task_id} is not in {config.tasks_path}"


def gather(config, selector: str, task_id: str, repeat: int | None) -> dict:
    """Everything ``show`` prints, as plain values. InputError for an unknown selector, task or repeat."""
    from hermit_tui.core.records.folders import RESULTS, SUMMARY, eval_root
    from hermit_tui.core.records.results import read_summary
    from hermit_tui.core.records.transcripts import load_transcript
    from hermit_tui.core.workspace.selectors import label_of

    if repeat is not None and repeat < 1:
        raise InputError(f"--repeat must be a positive whole number, got {repeat}")
    label = label_of(selector, config)
    root = eval_root(config.run_dir)
    folder = root / label
    if not (folder / RESULTS).is_file():
        present = sorted(p.name for p in root.iterdir() if (p / RESULTS).is_file()) if root.is_dir() else []
        listed = ", ".join(present) if present else "none yet"
        raise InputError(f"--adapter {selector}: no evaluation in {folder} (evaluated here: {listed})")
    skipped: list[str] = []
    from hermit_tui.core.records.lines import task_records  # numpy and the columns: only for an unclean file

    attempts = sorted(task_records(folder / RESULTS, task_id, skipped), key=lambda r: r.repeat)
    row, task_note = _task_row(config, task_id)
    if not attempts:
        if row is None:
            raise InputError(
                f"--task {task_id}: unknown task (not in {folder / RESULTS}"
                + (f" nor in {config.tasks_path})" if config.tasks_path else ")")
            )
        raise InputError(f"--task {task_id}: no attempt of it is recorded in {folder / RESULTS}")
    if repeat is not None:
        chosen = [r for r in attempts if r.repeat == repeat]
        if not chosen:
            have = ", ".join(str(r.repeat) for r in attempts)
            raise InputError(f"--repeat {repeat}: {task_id} has repeat {have} under {label}")
        attempts = chosen
    summary = None
    if (folder / SUMMARY).is_file():
        try:
            summary = read_summary(folder / SUMMARY)
        except InputError:
            summary = None
    out_attempts = []
    for rec in attempts:
        transcript = load_transcript(folder, rec)
        out_attempts.append(
            {
                "repeat": rec.repeat,
                "status": rec.status,
                "score": rec.judge.score,
                "feedback": rec.judge.feedback,
                "judge_extra": rec.judge.extra,
                "output": rec.output,
                "error": rec.error,
                "traceback": rec.traceback,
                "cost_usd": rec.cost_usd,
                "cost": cost_text(rec.cost_usd),
                "tokens": rec.tokens,
                "wall_s": rec.wall_s,
                "api_speed": rec.api_speed,
                "log": rec.log,
                "printed": rec.printed,
                "transcript": {
                    "source": transcript.source,
                    "path": transcript.path,
                    "note": transcript.note or None,
                    "messages": transcript.messages,
                },
            }
        )
    return {
        "selector": selector,
        "label": label,
        "folder": str(folder),
        "written_by": None if summary is None else ("hermit" if summary.written_by_hermit else "hermit-tui"),
        "task": {"id": task_id, "fields": row, "note": task_note or None},
        "skipped_lines": skipped,
        "attempts": out_attempts,
    }


# -- text -------------------------------------------------------------------------------------------------------------
def _block(value: Any) -> list[str]:
    if isinstance(value, str):
        text = value
        stripped = value.strip()
        if stripped[:1] in ("{", "["):
            try:
                text = json.dumps(json.loads(stripped), indent=2, ensure_ascii=False)
            except ValueError:
                pass
    else:
        text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    return ["  " + line for line in text.splitlines()] or ["  "]


def to_text(shown: dict) -> str:
    from hermit_tui.core.records.transcripts import transcript_lines, turns_of

    task = shown["task"]
    lines = [
        f"Task {one_line(task['id'])} under {one_line(shown['label'])} (selector {one_line(shown['selector'])}, "
        f"{one_line(shown['folder'])})"
    ]
    if task["fields"] is not None:
        width = max(len(str(k)) for k in task["fields"]) if task["fields"] else 0
        for key, value in task["fields"].items():
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
            lines.append(f"  {one_line(key):<{width}}  {text}")
    if task["note"]:
        lines.append(f"  ({task['note']})")
    for warning in shown["skipped_lines"]:
        lines.append(f"  ! {warning}")
    for a in shown["attempts"]:
        lines += ["", f"── repeat {a['repeat']} ── {a['status']} · score {a['score']:.3f}"]
        rows = [("Feedback", a["feedback"] or "—")]
        if a["error"]:
            rows.append(("Error", a["error"]))
        rows += [("Cost", a["cost"]), ("Tokens", tokens_text(a["tokens"])), ("Wall time", f"{a['wall_s']:.2f} s")]
        if a["api_speed"] is not None:
            rows.append(("API speed", json.dumps(a["api_speed"], ensure_ascii=False, default=str)))
        rows.append(("Log", a["log"] or "none"))
        if a["printed"]:
            rows.append(("Printed", a["printed"]))
        lines += [f"{name:<11} {one_line(value)}" for name, value in rows]
        if a["judge_extra"]:
            lines.append("Judge extra")
            lines += _block(a["judge_extra"])
        lines.append("Output")
        lines += _block(a["output"]) if a["output"] is not None else ["  (no output)"]
        if a["traceback"]:
            lines.append("Traceback")
            lines += ["  " + line for line in a["traceback"].rstrip("\n").splitlines()]
        t = a["transcript"]
        if t["messages"] is None:
            lines.append(f"Transcript  {t['note']}")
        else:
            turns = turns_of(t["messages"])
            where = "transcripts.jsonl" if t["source"] != "log" else f"the log {t['path']}"
            lines.append(f"Transcript  {len(turns)} messages, from {where}")
            lines += ["  " + line for line in transcript_lines(turns)]
    return terminal("\n".join(lines)) + "\n"  # every text from the data: its control characters shown, not sent


def run(args) -> int:
    """Print the attempts; 0 when done."""
    from hermit_tui.cli.common import imports_done
    from hermit_tui.core.records import lines, transcripts  # noqa: F401  (gather's, imported with the collector paused)
    from hermit_tui.core.workspace import selectors  # noqa: F401
    from hermit_tui.core.workspace.config import load_config

    imports_done()
    config = load_config(args.config, args.overrides or [])
    if args.versions:
        return _versions(config, args)
    if args.adapter is None:
        raise InputError("--adapter is required (except with --versions)")
    if args.align:
        return _align(config, args)
    if args.full:
        raise InputError("--full goes with --align")
    shown = gather(config, args.adapter, str(args.task), args.repeat)
    text = (
        json_text(json.dumps(shown, indent=1, ensure_ascii=False, default=str)) + "\n"
        if args.format == "json"
        else to_text(shown)
    )
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:  # `| head`: the reader has what it wanted
        pass
    return 0


def _align(config, args) -> int:
    from hermit_tui.core.why.align import Alignment
    from hermit_tui.core.why.pair import align_task
    from hermit_tui.core.why.text import DIVERGENCE_NOTE, alignment_lines

    aligned = align_task(config, [args.adapter, *args.align], str(args.task), args.repeat)
    if args.format == "json":
        text = json_text(aligned.model_dump_json(indent=1)) + "\n"
    else:
        lines = [f"Task {aligned.task}: {' | '.join(aligned.labels)}", DIVERGENCE_NOTE]
        lines += [f"  ! {n}" for n in aligned.notes]
        for r, al in zip(aligned.repeats, aligned.alignments):
            assert isinstance(al, Alignment)
            lines += ["", f"── repeat {r} ──", *alignment_lines(al, full=args.full)]
        text = terminal("\n".join(lines)) + "\n"  # transcripts' control characters shown, not sent
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        pass
    return 0


def _versions(config, args) -> int:
    from hermit_tui.core.records.results import SOLVED_THRESHOLD
    from hermit_tui.core.why.text import versions_lines
    from hermit_tui.core.why.versions import checkpoint_steps, task_versions
    from hermit_tui.core.workspace.tasks import load_tasks

    for flag, given in (("--adapter", args.adapter), ("--align", args.align), ("--repeat", args.repeat)):
        if given is not None:
            raise InputError(f"{flag} does not go with --versions (every evaluation of the run is shown)")
    if args.full:
        raise InputError("--full goes with --align")
    taskset = load_tasks(config)
    steps = checkpoint_steps(config)
    tv = task_versions(config.run_dir, str(args.task), list(taskset.test_ids), SOLVED_THRESHOLD, steps)
    if args.format == "json":
        text = json_text(tv.model_dump_json(indent=1)) + "\n"
    else:
        text = terminal("\n".join(versions_lines(tv))) + "\n"  # labels and ids come from disk: shown, not sent
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        pass
    return 0


__all__ = ["FORMATS", "add_parser", "gather", "run", "to_text"]
