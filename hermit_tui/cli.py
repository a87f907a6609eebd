"""The command line: ``hermit-tui [--config run.yaml]``, ``hermit-tui eval``, ``hermit-tui demo``.

Exit codes: 0 done, 2 bad input (one line on stderr, no traceback), 3 a gate failed (``gate``, ``eval --require``),
1 anything else (including a cancelled run).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from hermit_tui import cli_annotate, cli_gate, cli_publish, cli_report, cli_serve, cli_show
from hermit_tui.core.errors import InputError, RunFailed

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one line and exit code 2 like every other bad input."""

    def error(self, message: str):
        raise InputError(f"{self.prog}: {message}")


def _parser() -> argparse.ArgumentParser:
    from hermit_tui import __version__

    parser = _Parser(prog="hermit-tui", description="Compare Hermit harness adapters under a fixed evaluation "
                     "protocol: a terminal dashboard, and a headless CLI.")
    parser.add_argument("--version", action="version", version=f"hermit-tui {__version__}")
    parser.add_argument("--config", help="open the dashboard on this run.yaml")
    parser.add_argument("--set", action="append", default=[], metavar="key.sub=value",
                        help="a config override for the dashboard (repeatable), as hermit takes them")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)

    p_eval = sub.add_parser("eval", help="evaluate one or more adapters side by side on the test split")
    p_eval.add_argument("--config", required=True, help="hermit's run.yaml")
    p_eval.add_argument("--adapter", action="append", required=True, metavar="SEL",
                        help="none | root | final | a tag | a commit | an adapter directory; repeat to compare")
    p_eval.add_argument("--concurrency", type=int, help="attempts at once, shared by all selectors "
                        "(default agent.concurrency)")
    p_eval.add_argument("--limit", type=int, metavar="N", help="only the first N test tasks: a wiring check whose "
                        "summary says so and that can never be published")
    p_eval.add_argument("--no-card", action="store_true", help="with final: do not update CARD.md or move the tag")
    p_eval.add_argument("--resume", action="store_true", help="continue interrupted evaluations: keep the recorded "
                        "attempts and run only the missing ones (the protocol must match)")
    p_eval.add_argument("--executor", choices=("threads", "processes", "ray"),
                        default=os.environ.get("HERMIT_TUI_EXECUTOR", "threads"),
                        help="where attempts run: threads of this process (default), worker processes that can "
                        "be killed when an attempt hangs or crashes, or a Ray cluster ($HERMIT_TUI_EXECUTOR)")
    p_eval.add_argument("--ray-address", metavar="ADDRESS",
                        help="with --executor ray: the cluster to join (default $RAY_ADDRESS, else a local one)")
    p_eval.add_argument("--judge-on-workers", action="store_true",
                        help="with --executor ray: judge on the workers (by default the driver judges, so "
                        "judge-owned private labels never leave it)")
    p_eval.add_argument("--retry-lost-once", action="store_true",
                        help="with --executor ray: run an attempt whose worker or node was lost once more (the "
                        "summary records it)")
    p_eval.add_argument("--max-cost", type=float, metavar="USD",
                        help="stop starting new attempts once this launch's attempts cost this much (unknown costs "
                        "count at the mean known cost); the ones in flight finish; continue later with --resume")
    cli_gate.add_gate_options(p_eval, for_eval=True)
    p_eval.add_argument("--stop-when-decided", action="store_true",
                        help="run whole rounds (every task once per selector; eval.repeats rounds at most) and stop "
                        "after the first round at which every selector is decided against the baseline by a "
                        "group-sequential test (improvement or regression at 95%%, or equivalent within --margin)")
    p_eval.add_argument("overrides", nargs="*", metavar="key.sub=value", help="config overrides, as hermit takes them")

    cli_report.add_parser(sub)
    cli_gate.add_parser(sub)
    cli_publish.add_parser(sub)
    cli_show.add_parser(sub)
    cli_serve.add_parser(sub)
    cli_annotate.add_parser(sub)

    p_demo = sub.add_parser("demo", help="create the built-in demo workspace (a teaching demonstration) and open it")
    p_demo.add_argument("dir", nargs="?", help="where to create it (default: the user cache folder)")
    p_demo.add_argument("--no-ui", action="store_true", help="only create it and print its run.yaml path")
    p_demo.add_argument("--set", action="append", default=[], metavar="key.sub=value",
                        help="a config override for the dashboard (repeatable)")
    return parser


def _progress(run, stream):
    """An event sink that shows progress on stderr, and the context it runs in: Rich bars on a terminal; plain
    lines otherwise (each quarter of a selector's attempts and at least every 10 s: ``cli_progress``)."""
    from hermit_tui.core import events as ev

    if not stream.isatty():
        from hermit_tui.cli_progress import PlainProgress
        plain = PlainProgress(stream)
        return plain, plain

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeRemainingColumn

    console = Console(file=stream)
    progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeRemainingColumn(), TextColumn("{task.fields[note]}"), console=console)
    bars: dict[str, TaskID] = {}
    sums: dict[str, list[float]] = {}

    def rich_sink(event):
        if isinstance(event, ev.SelectorStarted):
            bars[event.label] = progress.add_task(event.label, total=event.total, note="")
            sums[event.label] = [0.0, 0, 0]
        elif isinstance(event, ev.AttemptFinished):
            acc = sums[event.label]
            acc[0] += event.record.judge.score
            acc[1] += 1
            acc[2] += event.record.status != "ok"
            progress.update(bars[event.label], advance=1, note=f"mean {acc[0] / acc[1]:.3f}  errors {acc[2]}")
        elif isinstance(event, ev.SelectorFinished) and event.summary.expected_attempts:
            progress.update(bars[event.label], total=event.summary.expected_attempts)  # stopped when decided
        elif isinstance(event, (ev.RunLog, ev.CardUpdated)):
            progress.console.print(event.message)
    return rich_sink, progress


class _StdoutKept:
    """While a run goes on, the command's stdout carries only its own JSON: what pipelines and judges print is kept
    per attempt (core.printed); fd-level output of this process outside any attempt (a C library, a subprocess)
    goes to the launch's printed-outside-attempts.txt during a launch and to stderr otherwise; Python-level prints
    that no attempt claims go to stderr."""

    def __enter__(self):
        from hermit_tui.core.printed import TerminalGuard

        self.guard = TerminalGuard().__enter__()  # fds 1 and 2 become a pipe; the terminal's are kept for us
        self.stream = sys.stdout
        sys.stdout = sys.stderr
        return self

    def write(self, text: str) -> None:
        """The command's own output, to the real stdout."""
        self.stream.write(text)
        self.stream.flush()

    def __exit__(self, *exc) -> None:
        try:
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        sys.stdout = self.stream
        self.guard.__exit__(*exc)


def cmd_eval(args) -> int:
    with _StdoutKept() as out:
        return _cmd_eval(args, out)


def _cmd_eval(args, out: _StdoutKept) -> int:
    from hermit_tui.core.config import load_config
    from hermit_tui.core.launch import LaunchOptions
    from hermit_tui.core.runner import EvalRun

    config = load_config(args.config, args.overrides)
    options = LaunchOptions(selectors=args.adapter, concurrency=args.concurrency, limit=args.limit,
                            update_card=not args.no_card, resume=args.resume, executor=args.executor,
                            ray_address=args.ray_address, judge_on_workers=args.judge_on_workers,
                            retry_lost=args.retry_lost_once, max_cost=args.max_cost,
                            stop_when_decided=args.stop_when_decided,
                            # --baseline and --margin serve both the sequential test and the gate
                            baseline=args.baseline if args.stop_when_decided else None,
                            margin=args.margin if args.stop_when_decided else None)
    run = EvalRun(config, options)
    gate = cli_gate.plan_for_eval(args, run)  # bad gate options are refused before anything runs
    sink, progress = _progress(run, out.guard.terminal_err)
    run.on_event = sink

    def interrupted(signum, frame):
        if run.cancel_requested:
            run.cancel(force=True)
        else:
            sys.stderr.write("cancelling: finishing the attempts in flight (Ctrl-C again to abandon them)\n")
            run.cancel()
    previous = signal.signal(signal.SIGINT, interrupted)
    try:
        if progress is not None:
            with progress:
                summaries = run.run_sync()
        else:
            summaries = run.run_sync()
    finally:
        signal.signal(signal.SIGINT, previous)
    if len(summaries) == 1:
        payload = json.loads(next(iter(summaries.values())).to_json())
    else:
        payload = {label: json.loads(s.to_json()) for label, s in summaries.items()}
    out.write(json.dumps(payload, indent=1) + "\n")
    if run.cancelled:
        sys.stderr.write("cancelled: the summaries are marked incomplete\n")
        return EXIT_FAILED
    if run.stop_reason:
        sys.stderr.write(f"stopped: {run.stop_reason}; the summaries are marked incomplete (continue with --resume)\n")
        return EXIT_FAILED
    if gate is not None:
        return cli_gate.gate_after_eval(gate, config, run.tasks, sys.stderr)
    return EXIT_OK


def cmd_demo(args) -> int:
    from hermit_tui.demo import build_demo, default_demo_dir

    config_path = build_demo(Path(args.dir) if args.dir else default_demo_dir())
    if args.no_ui:
        print(config_path)
        sys.stderr.write("The demo is a teaching demonstration, not evidence of real-model performance. Try:\n"
                         f"  hermit-tui eval --config {config_path} --adapter none --adapter root --adapter final\n")
        return EXIT_OK
    return _open_dashboard(config_path, args.set)


def _open_dashboard(config_path: Path | None, overrides: list[str] | None = None) -> int:
    try:
        from hermit_tui.app_run import run_app
    except ImportError:
        sys.stderr.write("the dashboard is not available in this build; use `hermit-tui eval`\n")
        return EXIT_FAILED
    if config_path is not None:  # a bad config is a one-line error before the screen is taken over
        from hermit_tui.core.config import load_config
        load_config(config_path, overrides or [])
    return run_app(config_path, overrides)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = _parser().parse_args(argv)
        if args.command == "eval":
            return cmd_eval(args)
        if args.command == "demo":
            return cmd_demo(args)
        if args.command == "report":
            return cli_report.run(args)
        if args.command == "gate":
            return cli_gate.run(args)
        if args.command == "publish":
            return cli_publish.run(args)
        if args.command == "show":
            return cli_show.run(args)
        if args.command == "serve":
            return cli_serve.run(args)
        if args.command == "annotate":
            return cli_annotate.run(args)
        return _open_dashboard(Path(args.config) if args.config else None, args.set)
    except InputError as exc:
        sys.stderr.write(f"hermit-tui: error: {exc}\n")
        return EXIT_BAD_INPUT
    except RunFailed as exc:
        sys.stderr.write(f"hermit-tui: the run stopped: {exc}\n")
        return EXIT_FAILED
    except KeyboardInterrupt:
        sys.stderr.write("hermit-tui: interrupted\n")
        return EXIT_FAILED
