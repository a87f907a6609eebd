"""``hermit-tui diff``: why a compared pair changed, headless.

    hermit-tui diff --config run.yaml --a SEL --b SEL [--format text|json] [--usage-hook FILE.py:NAME]
                    [key.sub=value ...]

What the adapter changed from ``a`` to ``b`` (exports named first, then each file's diff; read from git objects,
directories by content), the tasks the pair fixed, broke or made flaky, where the trajectories first part ways,
tool use per selector and whether the adapter was used. A selector that names no adapter version is an InputError:
one line, exit code 2.
"""

from __future__ import annotations

import os
import sys

FORMATS = ("text", "json")
HOOK_ENV = "HERMIT_TUI_USAGE_HOOK"


def add_parser(subparsers):
    """Add the ``diff`` subcommand to an argparse subparsers object; returns its parser."""
    p = subparsers.add_parser(
        "diff",
        help="why a pair changed: the adapter's diff between two versions beside the tasks it fixed, broke or made "
        "flaky, the first divergence of the trajectories, tool use and whether the adapter was used",
    )
    p.add_argument("--config", required=True, help="hermit's run.yaml")
    p.add_argument("--a", required=True, metavar="SEL", help="the baseline selector (none | root | final | ...)")
    p.add_argument("--b", required=True, metavar="SEL", help="the candidate selector")
    p.add_argument("--format", choices=FORMATS, default="text", help="text (default, Markdown-compatible) or json")
    p.add_argument(
        "--usage-hook",
        metavar="FILE.py:NAME",
        help=f"a function telling whether an attempt used the adapter (default ${HOOK_ENV}; see docs/why.md)",
    )
    p.add_argument("overrides", nargs="*", metavar="key.sub=value", help="config overrides, as hermit takes them")
    return p


def usage_hook(spec: str | None, config):
    """The usage hook named by ``--usage-hook`` or ``$HERMIT_TUI_USAGE_HOOK`` (a file relative to the config's
    folder), or None."""
    from hermit_tui.core.workspace.callables import load_function

    spec = spec or os.environ.get(HOOK_ENV) or None
    if not spec:
        return None
    return load_function(spec, config.base, "--usage-hook")


def run(args) -> int:
    from hermit_tui.core.safe import json_text, terminal
    from hermit_tui.core.why.pair import pair_why
    from hermit_tui.core.why.text import as_json, pair_lines
    from hermit_tui.core.workspace.config import load_config
    from hermit_tui.core.workspace.tasks import load_tasks

    config = load_config(args.config, args.overrides or [])
    hook = usage_hook(args.usage_hook, config)
    taskset = load_tasks(config)
    pair = pair_why(config, args.a, args.b, taskset.test_ids, hook=hook)
    # the adapter's files and task ids come from the tree and the data: control characters shown, not sent
    text = json_text(as_json(pair)) if args.format == "json" else terminal("\n".join(pair_lines(pair, "#"))) + "\n"
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        pass
    return 0


__all__ = ["FORMATS", "HOOK_ENV", "add_parser", "run", "usage_hook"]
