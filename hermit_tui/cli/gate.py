"""``hermit-tui gate``: pass/fail checks over the evaluations on disk, with an exit code for CI
(``core/report/gate/``).

    hermit-tui gate --config run.yaml [--baseline SEL] [--candidate SEL] [--require REQ ...] [--only] [--margin M]
                    [--lenient] [--max-error-rate F] [--allow-unchecked] [--slice-by FIELD] [--cluster-by FIELD]
                    [--smoke]
                    [--format text|json]
                    [key.sub=value ...]

Exit codes: 0 every check passed, 3 some check failed, 2 bad input (one line on stderr), 1 anything else.
``eval`` takes the same options (``--require`` etc.) and gates what it wrote, after writing everything.
When ``$GITHUB_STEP_SUMMARY`` names a file, a Markdown summary is appended to it.
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
from typing import NamedTuple

from hermit_tui.core.errors import InputError
from hermit_tui.core.safe import line

EXIT_GATE_FAILED = 3
STEP_SUMMARY = "GITHUB_STEP_SUMMARY"


def _requirements(text: str) -> list[str]:
    from hermit_tui.core.report.gate.options import parse_requirements

    return parse_requirements([text])


def add_gate_options(p: argparse.ArgumentParser, *, for_eval: bool = False) -> None:
    """The gate's options, shared by ``gate`` and ``eval``."""
    from hermit_tui.core.report.requirements import DEFAULT_REQUIRE, REQUIREMENTS

    when = " (eval gates only when a gate option is given)" if for_eval else ""
    p.add_argument(
        "--require",
        action="extend",
        type=_requirements,
        metavar="REQ",
        help=f"a check to pass besides the defaults ({', '.join(DEFAULT_REQUIRE)}), repeatable or "
        f"comma-separated: {', '.join(REQUIREMENTS)}{when}",
    )
    p.add_argument(
        "--only", action="store_true", help="check only the requirements named by --require (the defaults are dropped)"
    )
    p.add_argument(
        "--lenient",
        action="store_true",
        help="no-regression passes unless the interval lies entirely below -M (no evidence of a drop); by default "
        "it passes only when the interval excludes a drop of more than M, so thin evidence fails",
    )
    p.add_argument(
        "--margin",
        type=float,
        metavar="M",
        help="the smallest difference that matters. improvement: the 95%% interval of candidate - baseline "
        "must lie above +M; no-regression: it must not lie entirely below -M (default 0)"
        + (
            "; with --stop-when-decided also stop for 'equivalent' once the difference lies within -M..M"
            if for_eval
            else ""
        ),
    )
    p.add_argument(
        "--max-error-rate",
        type=float,
        metavar="F",
        help="fail a selector whose pipeline + judge errors exceed this share of its attempts",
    )
    base = "default: none when evaluated in this launch, else the first other selector" if for_eval else "default: none"
    p.add_argument(
        "--baseline",
        metavar="SEL",
        help=f"the selector compared against ({base})"
        + (
            "; with --stop-when-decided, the one the sequential test compares every other selector with"
            if for_eval
            else ""
        ),
    )
    p.add_argument(
        "--candidate",
        metavar="SEL",
        help="the selector checked (default: final"
        + (" when evaluated in this launch, else the last selector)" if for_eval else ")"),
    )
    p.add_argument(
        "--cluster-by",
        metavar="FIELD",
        help="a field of the task rows whose values cluster the tasks (a template, a passage, a category): the "
        "standard errors, intervals, tests and power figures are cluster-robust (CR2, Student t on the "
        "Bell-McCaffrey degrees of freedom)"
        + (
            "; recorded in the protocol fingerprint, so that report and gate cluster the same way"
            if for_eval
            else " (default: the field the evaluations were launched with, eval --cluster-by)"
        ),
    )
    p.add_argument(
        "--cluster-file",
        metavar="FILE",
        help="like --cluster-by, from a file: task id -> cluster (a JSON object, or two CSV/TSV columns id,cluster); "
        "a test task it does not name is its own cluster"
        + ("; recorded in the protocol fingerprint like --cluster-by" if for_eval else ""),
    )
    p.add_argument(
        "--allow-unchecked",
        action="store_true",
        help="comparable: accept evaluations without a protocol fingerprint (written by hermit eval) when "
        "their task count and repeats agree (by default they fail as 'cannot be checked')",
    )


def add_parser(subparsers):
    """Add the ``gate`` subcommand to an argparse subparsers object; returns its parser."""
    p = subparsers.add_parser(
        "gate",
        help="check evaluations on disk for CI: exit 0 when every check passes, 3 when one fails, 2 on bad input",
    )
    p.add_argument("--config", required=True, help="hermit's run.yaml")
    add_gate_options(p)
    p.add_argument(
        "--slice-by",
        metavar="FIELD",
        help="with no-regression: also fail when a slice of the test split by this field of the task rows is hurt "
        "beyond -M after Holm's adjustment across the slices, naming it",
    )
    p.add_argument(
        "--smoke",
        action="store_true",
        help="gate the smoke subsets (eval --limit, under eval/<label>/smoke/) instead of the evaluations",
    )
    p.add_argument(
        "--format", choices=("text", "json"), default="text", help="text (one line per check, default) or json"
    )
    p.add_argument("overrides", nargs="*", metavar="key.sub=value", help="config overrides, as hermit takes them")
    return p


def gate_requested(args) -> bool:
    """Whether ``eval`` gates after the launch: a gate option was given (with --stop-when-decided, --baseline and
    --margin belong to the sequential test and do not ask for a gate by themselves)."""
    shared = not getattr(args, "stop_when_decided", False) and (args.margin is not None or args.baseline)
    asked = (args.require, args.only, args.lenient, args.max_error_rate is not None, args.candidate)
    return bool(any(asked) or args.allow_unchecked or shared)


class GatePlan(NamedTuple):
    """What ``eval`` will check once it has written everything (a NamedTuple: the dataclasses module's import
    would be a seventh of what ``--help`` costs)."""

    baseline: str | None
    candidate: str
    requirements: list[str]
    margin: float
    max_error_rate: float | None
    allow_unchecked: bool
    lenient: bool
    smoke: bool


def _check_numbers(args) -> tuple[float, float | None]:
    from hermit_tui.core.report.gate.options import check_error_rate, check_margin

    return check_margin(0.0 if args.margin is None else args.margin), check_error_rate(args.max_error_rate)


def plan_for_eval(args, run) -> GatePlan | None:
    """The gate ``eval`` runs after the launch (None when no gate option was given), checked before anything runs:
    baseline and candidate default to the launch's selectors, and one not in the launch must already be on disk."""
    if not gate_requested(args):  # before the gate's imports: they load the statistics (numpy), a plain eval needs none
        return None
    from hermit_tui.core.records.folders import RESULTS, eval_folder
    from hermit_tui.core.report.gate.options import requirements_for
    from hermit_tui.core.report.requirements import NEEDS_BASELINE
    from hermit_tui.core.workspace.selectors import label_of

    margin, max_error_rate = _check_numbers(args)
    labels = run.labels
    candidate = (
        label_of(args.candidate, run.config) if args.candidate else ("final" if "final" in labels else labels[-1])
    )
    baseline: str | None
    if args.baseline:
        baseline = label_of(args.baseline, run.config)
    elif "none" in labels and candidate != "none":
        baseline = "none"
    else:
        baseline = next((label for label in labels if label != candidate), None)
    if baseline == candidate:
        raise InputError(f"--baseline and --candidate are both '{candidate}': nothing to compare")
    requirements = requirements_for(args.require, only=args.only, has_baseline=baseline is not None)
    if baseline is None and NEEDS_BASELINE & set(requirements):
        need = ", ".join(r for r in requirements if r in NEEDS_BASELINE)
        raise InputError(f"--require {need} needs a baseline: evaluate two selectors, or name one with --baseline")
    for label in (baseline, candidate):
        if label is not None and label not in labels:
            folder = eval_folder(run.config.run_dir, label, smoke=run.smoke)
            if not (folder / RESULTS).is_file():
                raise InputError(f"{folder}: no evaluation of '{label}' to gate against (it is not in this launch)")
    return GatePlan(
        baseline=baseline,
        candidate=candidate,
        requirements=requirements,
        margin=margin,
        max_error_rate=max_error_rate,
        allow_unchecked=args.allow_unchecked,
        lenient=args.lenient,
        smoke=run.smoke,
    )


def append_step_summary(markdown: str) -> None:
    """Append to the file ``$GITHUB_STEP_SUMMARY`` names (GitHub Actions' job summary), if it names one; a file
    that cannot be written is a warning, never a change of the verdict."""
    target = os.environ.get(STEP_SUMMARY)
    if not target:
        return
    try:
        from hermit_tui.core.workspace.files import check_regular  # yaml and the file checks: only when writing

        check_regular(target)  # a FIFO would block the gate, a device swallow the summary: refused unopened
        fd = os.open(
            target, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0), 0o644
        )
        with os.fdopen(fd, "a", encoding="utf-8") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise OSError(22, "not a regular file")
            fh.write(markdown)
    except OSError as exc:
        sys.stderr.write(
            f"hermit-tui: warning: ${STEP_SUMMARY} {line(target)}: cannot append the summary ({exc.strerror or exc})\n"
        )


def gate_after_eval(plan: GatePlan, config, taskset, stream) -> int:
    """Gate what ``eval`` wrote: the lines to ``stream`` (stderr: eval's stdout is its JSON), 0 or 3."""
    from hermit_tui.core.report.gate.load import load_gate
    from hermit_tui.core.report.gate.text import to_markdown, to_text

    result = load_gate(
        config,
        taskset,
        plan.baseline,
        plan.candidate,
        plan.requirements,
        margin=plan.margin,
        max_error_rate=plan.max_error_rate,
        smoke=plan.smoke,
        allow_unchecked=plan.allow_unchecked,
        lenient=plan.lenient,
    )
    code = 0 if result.passed else EXIT_GATE_FAILED
    stream.write(to_text(result))
    stream.flush()
    append_step_summary(to_markdown(result, code))
    return code


def run(args) -> int:
    """Gate the evaluations on disk; 0 when every check passes, 3 when one fails."""
    from hermit_tui.cli.common import import_numpy_one_blas_thread, imports_done

    import_numpy_one_blas_thread()  # before the engine's modules import numpy
    from hermit_tui.core.report.gate.load import load_gate
    from hermit_tui.core.report.gate.options import requirements_for
    from hermit_tui.core.report.gate.text import to_json, to_markdown, to_text
    from hermit_tui.core.stats.clusters import cluster_option
    from hermit_tui.core.workspace.config import load_config
    from hermit_tui.core.workspace.selectors import label_of
    from hermit_tui.core.workspace.tasks import load_tasks

    imports_done()

    margin, max_error_rate = _check_numbers(args)
    config = load_config(args.config, args.overrides or [])
    taskset = load_tasks(config)
    candidate = label_of(args.candidate or "final", config)
    baseline = label_of(args.baseline, config) if args.baseline else "none" if candidate != "none" else None
    requirements = requirements_for(args.require, only=args.only, has_baseline=baseline is not None)
    result = load_gate(
        config,
        taskset,
        baseline,
        candidate,
        requirements,
        margin=margin,
        max_error_rate=max_error_rate,
        smoke=args.smoke,
        allow_unchecked=args.allow_unchecked,
        lenient=args.lenient,
        baseline_optional=args.baseline is None,
        slice_by=args.slice_by,
        cluster_by=cluster_option(args.cluster_by, args.cluster_file),
    )
    code = 0 if result.passed else EXIT_GATE_FAILED
    sys.stdout.write(to_json(result) if args.format == "json" else to_text(result))
    sys.stdout.flush()
    append_step_summary(to_markdown(result, code))
    return code


__all__ = [
    "EXIT_GATE_FAILED",
    "GatePlan",
    "add_gate_options",
    "add_parser",
    "append_step_summary",
    "gate_after_eval",
    "gate_requested",
    "plan_for_eval",
    "run",
]
