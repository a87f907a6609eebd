"""``hermit-tui eval``: one or more selectors side by side on the test split, with progress on stderr and the
summaries as JSON on stdout (``--require``: the gate after it)."""

from __future__ import annotations

import json
import os
import signal
import sys

from hermit_tui.cli import gate as cli_gate
from hermit_tui.cli.common import EXIT_FAILED, EXIT_OK, imports_done
from hermit_tui.core.errors import InputError
from hermit_tui.core.safe import line, markup


def add_parser(sub) -> None:
    p_eval = sub.add_parser("eval", help="evaluate one or more adapters side by side on the test split")
    p_eval.add_argument("--config", required=True, help="hermit's run.yaml")
    p_eval.add_argument(
        "--adapter",
        action="append",
        required=True,
        metavar="SEL",
        help="none | root | final | a tag | a commit | an adapter directory; repeat to compare",
    )
    p_eval.add_argument(
        "--concurrency", type=int, help="attempts at once, shared by all selectors (default agent.concurrency)"
    )
    p_eval.add_argument(
        "--limit",
        type=int,
        metavar="N",
        help="only the first N test tasks: a wiring check whose summary says so and that can never be published",
    )
    p_eval.add_argument(
        "--publish",
        action="store_true",
        help="with final: after the launch (and the gate, when one is asked for), publish final's card as "
        "'publish --yes' does, after the same checks (hermit eval's behaviour, reviewed); without it eval never "
        "touches CARD.md or the tag",
    )
    p_eval.add_argument(
        "--no-card",
        action="store_true",
        help="leave CARD.md and the tag alone: the default (kept for scripts written for hermit-tui 0.x)",
    )
    p_eval.add_argument(
        "--resume",
        action="store_true",
        help="continue interrupted evaluations: keep the recorded "
        "attempts and run only the missing ones (the protocol must match)",
    )
    p_eval.add_argument(
        "--executor",
        choices=("threads", "processes", "ray"),
        default=os.environ.get("HERMIT_TUI_EXECUTOR", "threads"),
        help="where attempts run: threads of this process (default), worker processes that can "
        "be killed when an attempt hangs or crashes, or a Ray cluster ($HERMIT_TUI_EXECUTOR)",
    )
    p_eval.add_argument(
        "--ray-address",
        metavar="ADDRESS",
        help="with --executor ray: the cluster to join (default $RAY_ADDRESS, else a local one)",
    )
    p_eval.add_argument(
        "--judge-on-workers",
        action="store_true",
        help="with --executor ray: judge on the workers (by default the driver judges, so "
        "judge-owned private labels never leave it)",
    )
    p_eval.add_argument(
        "--retry-lost-once",
        action="store_true",
        help="with --executor ray: run an attempt whose worker or node was lost once more (the summary records it)",
    )
    p_eval.add_argument(
        "--max-cost",
        type=float,
        metavar="USD",
        help="stop starting new attempts once this launch's attempts cost this much (unknown costs "
        "count at the mean known cost); the ones in flight finish; continue later with --resume",
    )
    cli_gate.add_gate_options(p_eval, for_eval=True)
    p_eval.add_argument(
        "--stop-when-decided",
        action="store_true",
        help="run rounds (every task once per selector; eval.repeats rounds at most) and stop "
        "after the first look at which every selector is decided against the baseline by a "
        "group-sequential test (improvement or regression at 95%%, or equivalent within --margin); with 50 "
        "tasks or more it also looks within the first round, after batches of its tasks",
    )
    p_eval.add_argument(
        "--first-round-looks",
        type=int,
        metavar="N",
        help="with --stop-when-decided: the looks within the first round, after each Nth of its tasks in a fixed "
        "order (default: one per 25 tasks, at most 8; 1: look only after whole rounds)",
    )
    p_eval.add_argument(
        "--no-futility",
        action="store_true",
        help="with --stop-when-decided: no stop for futility (by default, without --margin, a candidate stops once "
        "a decision is out of reach: conditional power under the current estimate below 2%%)",
    )
    p_eval.add_argument(
        "--anytime",
        action="store_true",
        help="with --stop-when-decided: look task by task (every repeat of a task together, in a fixed order) by "
        "anytime-valid confidence sequences, so an undecided comparison continues with --resume, also after "
        "tasks were added, without restarting the error budget",
    )
    p_eval.add_argument("overrides", nargs="*", metavar="key.sub=value", help="config overrides, as hermit takes them")


def _progress(run, stream):
    """An event sink that shows progress on stderr, and the context it runs in: Rich bars on a terminal; plain
    lines otherwise (each quarter of a selector's attempts and at least every 10 s: ``cli_progress``)."""
    from hermit_tui.core.present import fixed
    from hermit_tui.core.run import events as ev

    if not stream.isatty():
        from hermit_tui.cli.progress import PlainProgress

        plain = PlainProgress(stream)
        return plain, plain

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeRemainingColumn

    console = Console(file=stream)
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        TextColumn("{task.fields[note]}"),
        console=console,
    )
    bars: dict[str, TaskID] = {}
    sums: dict[str, list[float]] = {}

    def rich_sink(event):
        if isinstance(event, ev.SelectorStarted):
            bars[event.label] = progress.add_task(markup(event.label), total=event.total, note="")
            sums[event.label] = [0.0, 0, 0]
        elif isinstance(event, ev.AttemptFinished):
            acc = sums[event.label]
            acc[0] += event.record.judge.score
            acc[1] += 1
            acc[2] += event.record.status != "ok"
            note = f"mean {fixed(acc[0] / acc[1])}  errors {acc[2]}"
            progress.update(bars[event.label], advance=1, note=note)
        elif isinstance(event, ev.SelectorFinished) and event.summary.expected_attempts:
            progress.update(bars[event.label], total=event.summary.expected_attempts)  # stopped when decided
        elif isinstance(event, (ev.RunLog, ev.CardUpdated)):
            progress.console.print(line(event.message), markup=False, highlight=False)

    return rich_sink, progress


class _StdoutKept:
    """While a run goes on, the command's stdout carries only its own JSON: what pipelines and judges print is kept
    per attempt (core.run.printed); fd-level output of this process outside any attempt (a C library, a subprocess)
    goes to the launch's printed-outside-attempts.txt during a launch and to stderr otherwise; Python-level prints
    that no attempt claims go to stderr."""

    def __enter__(self):
        from hermit_tui.core.run.printed import TerminalGuard

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


def run(args) -> int:
    with _StdoutKept() as out:
        return _cmd_eval(args, out)


def _clusters(args) -> str | None:
    """--cluster-by / --cluster-file; the statistics (numpy) load only when one is given."""
    if args.cluster_by is None and args.cluster_file is None:
        return None
    from hermit_tui.core.stats.clusters import cluster_option

    return cluster_option(args.cluster_by, args.cluster_file)


def _cmd_eval(args, out: _StdoutKept) -> int:
    from hermit_tui.core.run.launch import LaunchOptions
    from hermit_tui.core.run.runner import EvalRun
    from hermit_tui.core.workspace.config import load_config

    imports_done()  # the launch's modules are in (main paused the collector for them)
    config = load_config(args.config, args.overrides)
    options = LaunchOptions(
        selectors=args.adapter,
        concurrency=args.concurrency,
        limit=args.limit,
        update_card=False,  # the card moves only after review: --publish, below
        resume=args.resume,
        executor=args.executor,
        ray_address=args.ray_address,
        judge_on_workers=args.judge_on_workers,
        retry_lost=args.retry_lost_once,
        max_cost=args.max_cost,
        stop_when_decided=args.stop_when_decided,
        # --baseline and --margin serve both the sequential test and the gate
        baseline=args.baseline if args.stop_when_decided else None,
        margin=args.margin if args.stop_when_decided else None,
        first_round_looks=args.first_round_looks,
        futility=not args.no_futility,
        anytime=args.anytime,
        cluster_by=_clusters(args),
    )
    run = EvalRun(config, options)
    gate = cli_gate.plan_for_eval(args, run)  # bad gate options are refused before anything runs
    _check_publish(args, run)
    sink, progress = _progress(run, out.guard.terminal_err)
    run.on_event = sink
    if run.plan.sequential is not None and args.anytime and not args.resume:
        from hermit_tui.core.stats.sequential.anytime_text import small_split_note

        seq = run.plan.sequential
        note = small_split_note(
            len(run.plan.task_ids),
            seq.family,
            seq.margin,
            getattr(seq, "each_spend", None),
            clusters=getattr(seq, "split_cluster_sizes", None),
        )
        if note is not None:
            sys.stderr.write(f"note: {line(note)}\n")
    if run.plan.sequential is not None and not args.resume and not args.anytime:  # projections of rounds
        from hermit_tui.core.run.rounds import projections

        for text in projections(config.run_dir, run.plan.sequential, run.plan.task_ids):
            sys.stderr.write(f"projection: {line(text)}\n")

    def interrupted(signum, frame):
        if run.cancel_requested:
            run.cancel(force=True)
        else:
            sys.stderr.write("cancelling: finishing the attempts in flight (Ctrl-C again to abandon them)\n")
            run.cancel()

    # An ignored SIGINT (nohup, a job started in the background of a script) stays ignored: the user asked for the
    # launch not to be interrupted by it, and a handler installed here would undo that
    previous = signal.getsignal(signal.SIGINT)
    if previous is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, interrupted)
    try:
        if progress is not None:
            with progress:
                summaries = run.run_sync()
        else:
            summaries = run.run_sync()
    finally:
        if previous is not signal.SIG_IGN:
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
        sys.stderr.write(
            f"stopped: {line(run.stop_reason)}; the summaries are marked incomplete (continue with --resume)\n"
        )
        return EXIT_FAILED
    if gate is not None:
        code = cli_gate.gate_after_eval(gate, config, run.tasks, sys.stderr)
        if code != EXIT_OK:
            if args.publish:
                sys.stderr.write("not published: the gate failed (the card and the tag are unchanged)\n")
            return code
    if args.publish:
        return _publish(args, config)
    if "final" in run.labels and not run.smoke:
        sys.stderr.write(_review_hint(args.config))
    return EXIT_OK


def _check_publish(args, run) -> None:
    """--publish is refused before anything runs where it could never publish."""
    if not args.publish:
        return
    if args.no_card:
        raise InputError("--publish and --no-card contradict each other: give one")
    if run.smoke:
        raise InputError("--publish: a smoke subset (--limit) can never be published")
    if "final" not in run.labels:
        raise InputError("--publish publishes final's card: add --adapter final")


def _review_hint(config: str) -> str:
    config = line(config)
    return (
        "final is evaluated; CARD.md and the final tag are unchanged. Review: "
        f"hermit-tui publish --config {config} --dry-run; then publish: hermit-tui publish --config {config}\n"
    )


def _publish(args, config) -> int:
    """Publish final's card after the launch, reviewed by the publish command's checks; a refusal is one line,
    exit 2, with the evaluations kept."""
    from hermit_tui.cli.publish import show_plan
    from hermit_tui.core.publish.apply import plan_publish, publish

    plan = plan_publish(config, args.adapter)
    show_plan(plan, sys.stderr)
    if plan.refusals:
        raise InputError(
            "not published: " + "; ".join(plan.refusals) + " (the evaluations are written; publish later with "
            "hermit-tui publish)"
        )
    if plan.up_to_date:
        sys.stderr.write(f"{plan.card_path.name} already holds this evaluation and {plan.tag} points at it\n")
        return EXIT_OK
    sys.stderr.write(publish(plan).message + "\n")
    return EXIT_OK


__all__ = ["add_parser", "run"]
