"""``hermit-tui report``: the evaluation report of a run, from the evaluations already on disk (nothing is re-run).

    hermit-tui report --config run.yaml [--adapter SEL ...] [--format md|json|csv|html|junit] [--per task|attempt]
                      [--smoke] [--slice-by FIELD] [--cluster-by FIELD] [--harmed] [--pass-k] [--error-bounds]
                      [--details-max-mb MB] [--output FILE] [--force] [--threshold X] [key.sub=value ...]

Bad input raises InputError, which the CLI prints on one line and turns into exit code 2.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

from hermit_tui.core.errors import InputError
from hermit_tui.core.safe import line

FORMATS = ("md", "json", "csv", "html", "junit")


def add_parser(subparsers):
    """Add the ``report`` subcommand to an argparse subparsers object; returns its parser."""
    p = subparsers.add_parser(
        "report",
        help="write the evaluation report of a run (Markdown, JSON, CSV or one "
        "self-contained HTML page) from the evaluations on disk, including ones `hermit eval` "
        "wrote",
    )
    p.add_argument("--config", required=True, help="hermit's run.yaml")
    p.add_argument(
        "--adapter",
        action="append",
        metavar="SEL",
        help="a selector whose current evaluation to include (repeatable, in this order); default: every "
        "current evaluation, in the order none, root, checkpoints, final, others",
    )
    p.add_argument(
        "--format",
        choices=FORMATS,
        default="md",
        help="md (default), json, csv (the per-task table), "
        "html (one self-contained page: plots, sortable per-task table; fetches nothing), or junit (JUnit "
        "XML for CI test reporters: a testcase per selector and task)",
    )
    p.add_argument(
        "--per",
        choices=("task", "attempt"),
        default="task",
        help="with --format csv: one row per task (default) or per attempt (selector, task, repeat, "
        "status, score, error kind, cost, tokens, wall time)",
    )
    p.add_argument(
        "--smoke",
        action="store_true",
        help="report the smoke subsets (eval --limit, under eval/<label>/smoke/) instead of the evaluations",
    )
    p.add_argument(
        "--slice-by",
        metavar="FIELD",
        help="a field of the task rows (a list field: each value its slice): each pair's figures per slice, "
        "adjusted across the slices (Holm for 'hurt', Benjamini-Hochberg for screening)",
    )
    p.add_argument(
        "--cluster-by",
        metavar="FIELD",
        help="a field of the task rows whose values cluster the tasks (a template, a passage, a category): standard "
        "errors, intervals, tests and power figures cluster-robust (CR2, Student t on the Bell-McCaffrey degrees of "
        "freedom; default: "
        "the field the evaluations were launched with, eval --cluster-by)",
    )
    p.add_argument(
        "--cluster-file",
        metavar="FILE",
        help="like --cluster-by, from a file: task id -> cluster (a JSON object, or two CSV/TSV columns id,cluster); "
        "a test task it does not name is its own cluster",
    )
    p.add_argument(
        "--harmed",
        action="store_true",
        help="per pair, the tasks where the candidate is worse with evidence: an exact per-task test on the "
        "repeats, false-discovery rate controlled over the tasks (q 0.1)",
    )
    p.add_argument(
        "--error-bounds",
        action="store_true",
        help="per pair, the difference with errored attempts counted as failures, as successes and left out, and "
        "whether the reading holds across the three",
    )
    p.add_argument(
        "--pass-k",
        action="store_true",
        help="pass@k and pass^k for k up to the repeats, per selector and per pair, with intervals",
    )
    p.add_argument(
        "--noise-at",
        type=float,
        default=None,
        metavar="DELTA",
        help="the difference each pair's noise budget is computed for (default 0.05): the tasks or repeats, "
        "attempts and known cost that would detect it at 80%% power",
    )
    p.add_argument(
        "--details-max-mb",
        type=float,
        default=None,
        metavar="MB",
        help="with --format html: carry every attempt's output, feedback, error and transcript, folded, when they "
        "come to at most MB megabytes (default 5; 0: never)",
    )
    p.add_argument("--output", metavar="FILE", help="write here instead of stdout (atomically)")
    p.add_argument("--force", action="store_true", help="with --output: replace an existing file")
    p.add_argument(
        "--threshold",
        type=float,
        default=1.0,
        metavar="X",
        help="the success threshold of the solved rates shown (default hermit's 1.0; the files keep 1.0)",
    )
    p.add_argument("overrides", nargs="*", metavar="key.sub=value", help="config overrides, as hermit takes them")
    return p


def _check_output(path: Path, force: bool) -> None:
    import os
    import stat

    from hermit_tui.core.workspace.files import kind_of

    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise InputError(f"{path}: cannot inspect --output ({exc.strerror or exc})") from None
    if mode is not None and stat.S_ISLNK(mode):
        raise InputError(f"{path}: --output is a symbolic link; a report never replaces a link nor writes through one")
    if mode is not None and not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
        raise InputError(f"{path}: --output is {kind_of(mode)}, not a file; give a file name")
    if path.is_dir():
        raise InputError(f"{path}: --output is a folder; give a file name")
    if path.exists() and not force:
        raise InputError(f"{path}: already exists; pass --force to replace it")
    if not path.parent.is_dir():
        raise InputError(f"{path}: the folder {path.parent} does not exist")


def run(args) -> int:
    """Build and write the report; 0 when done."""
    from hermit_tui.cli.common import import_numpy_one_blas_thread, imports_done

    import_numpy_one_blas_thread()  # before the engine's modules import numpy
    from hermit_tui.core.records.results import write_atomic
    from hermit_tui.core.report.build import build_report, to_csv, to_json, to_markdown
    from hermit_tui.core.stats.clusters import cluster_option
    from hermit_tui.core.workspace.config import load_config
    from hermit_tui.core.workspace.tasks import load_tasks
    from hermit_tui.demo import is_demo_config

    imports_done()

    if not math.isfinite(args.threshold):
        raise InputError(f"--threshold must be a finite number, got {args.threshold}")
    if args.per == "attempt" and args.format != "csv":
        raise InputError(f"--per attempt goes with --format csv, not --format {args.format}")
    if args.details_max_mb is not None and args.format != "html":
        raise InputError(f"--details-max-mb goes with --format html, not --format {args.format}")
    if args.details_max_mb is not None and not (math.isfinite(args.details_max_mb) and args.details_max_mb >= 0):
        raise InputError(f"--details-max-mb must be a number of megabytes, 0 or more, got {args.details_max_mb}")
    if args.noise_at is not None:  # refused before anything is read
        from hermit_tui.core.stats.noise import check_delta

        check_delta(args.noise_at)
    output = Path(args.output).expanduser() if args.output else None
    if output is not None:
        _check_output(output, args.force)
    config = load_config(args.config, args.overrides or [])
    taskset = load_tasks(config)
    from hermit_tui.core.workspace.selectors import label_of

    labels = [label_of(text, config) for text in args.adapter] if args.adapter else None
    from hermit_tui.settings import label_set

    report = build_report(
        config,
        taskset,
        labels,
        threshold=args.threshold,
        label_set=label_set(config.run_dir),
        smoke=args.smoke,
        demo=is_demo_config(config.path),
        slice_by=args.slice_by,
        harmed=args.harmed,
        passk=args.pass_k,
        error_bounds=args.error_bounds,
        noise_at=args.noise_at,
        cluster_by=cluster_option(args.cluster_by, args.cluster_file),
    )
    if args.format == "junit" or args.per == "attempt":
        from hermit_tui.core.report.exports import read_attempts, to_attempts_csv, to_junit

        text = (to_junit if args.format == "junit" else to_attempts_csv)(report, read_attempts(report))
    elif args.format == "html":
        from hermit_tui.core.report.html_attempts import DEFAULT_MAX_MB, report_html  # the page's modules: html only

        mb = DEFAULT_MAX_MB if args.details_max_mb is None else args.details_max_mb
        text = report_html(report, mb)
    else:
        text = {"md": to_markdown, "json": to_json, "csv": to_csv}[args.format](report)
    if output is None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return 0
    _check_output(output, args.force)  # again: the file may have appeared while the report was built
    try:
        write_atomic(output, text)
    except OSError as exc:
        raise InputError(f"{output}: cannot write ({exc.strerror or exc})") from None
    sys.stderr.write(f"report written to {line(output)}\n")
    return 0


__all__ = ["FORMATS", "add_parser", "run"]
