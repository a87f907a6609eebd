"""A project trained by the real ``hermit train``, and evaluated by the real ``hermit eval``: what a hermit user has
on disk before opening hermit-tui. Offline and deterministic: a scripted learner (``scripted-evolver/``), a
deterministic solver and judge (``pipeline.py``, ``judge.py``), the sandbox off; no model, no network, no API key.
The project's own files are under ``tests/fixtures/trained/``.

``build_trained_project(dest)`` copies those files into ``dest``, then runs, each as a subprocess of this
interpreter (``python -m hermit``):

- ``hermit check`` and ``hermit train``: three steps of four training tasks. The tree (``runs/trees/demo-notes``)
  gets the tags ``root``, ``demo/ckpt-step-1``, ``demo/ckpt-step-2``, ``demo/ckpt-step-3`` and ``demo/final``; step 2
  leaves a stray file, so hermit commits it marked invalid and then its repair (``demo/ckpt-step-2``).
- ``hermit eval``, in the order of ``EVALUATIONS``: none, root, ``demo/ckpt-step-1`` (a checkpoint tag), the commit
  of ``demo/ckpt-step-2`` by its first 12 hex digits with ``eval.repeats=1``, the adapter directory
  ``adapters/shouty``, then final twice: ``eval.repeats=1`` and then ``eval.repeats=3``. hermit replaces
  ``eval/final/`` in place (no archive) and commits the card each time, moving ``demo/final`` twice; what stays is
  the 3-repeat evaluation, measured on the first card commit. Six evaluations are on disk: ``none``, ``root``,
  ``demo_ckpt-step-1``, ``<sha12>``, ``shouty``, ``final``.

Every commit is dated by a fixed clock (``CLOCK_START`` plus one minute per commit, through a ``git`` shim on the
subprocesses' PATH; hermit fixes the identity itself), so the scores, the files and the history are the same on
every build. Commit ids are the same for the same ``dest`` only: hermit writes the run folder's absolute path into
its commit messages. Not fixed either: ``wall_s`` values and the times in steps.jsonl.

A git worktree records absolute paths, so a copy must be repaired: ``copy_trained_project`` does it (and points the
attempts' ``log`` paths at the copy's logs). ``python tests/trained_project.py DEST`` builds one and prints its
run.yaml path.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from demo_copies import CHECKOUT, TREE_GIT, repair_worktree  # beside this file: on sys.path as a script too

FILES = Path(__file__).resolve().parent / "fixtures" / "trained"
RUN = "demo"  # trainer.run_name; with the template id, the paths repair_worktree knows (demo_copies)
TEMPLATE_ID = "demo-notes"
TREE = Path("runs") / "trees" / TEMPLATE_ID
RUN_DIR = Path("runs") / RUN
COMMIT_OF = f"{RUN}/ckpt-step-2"  # the commit evaluated by its id
COMMIT_DIGITS = 12
CLOCK_START = 1769904000  # 2026-02-01T00:00:00Z: the first commit; each next one a minute later
# (selector, eval.repeats), run in this order; "{commit}" is the commit of COMMIT_OF
EVALUATIONS = (
    ("none", 3),
    ("root", 3),
    (f"{RUN}/ckpt-step-1", 3),
    ("{commit}", 1),
    ("adapters/shouty", 3),
    ("final", 1),
    ("final", 3),
)
GIT_SHIM = """#!/bin/sh
# hermit-tui's trained test project: each git commit a minute after the previous one (a fixed clock)
for arg in "$@"; do
  if [ "$arg" = commit ]; then
    n=$(cat "$HERMIT_TUI_CLOCK")
    echo $((n + 1)) > "$HERMIT_TUI_CLOCK"
    GIT_AUTHOR_DATE="$(({start} + 60 * n)) +0000"
    GIT_COMMITTER_DATE="$GIT_AUTHOR_DATE"
    export GIT_AUTHOR_DATE GIT_COMMITTER_DATE
    break
  fi
done
exec {git} "$@"
"""


class _Hermit:
    """The real hermit CLI in ``project``: this interpreter's ``python -m hermit``, a private temporary folder (hermit
    leaves export folders there), no user git configuration, and git's clock fixed by the shim."""

    def __init__(self, project: Path, scratch: Path):
        git = shutil.which("git")
        if git is None:
            raise RuntimeError("building the trained project needs git on PATH")
        self.project = project
        shim = scratch / "bin" / "git"
        shim.parent.mkdir(parents=True)
        shim.write_text(GIT_SHIM.format(start=CLOCK_START, git=shlex.quote(git)))
        shim.chmod(0o755)
        (scratch / "clock").write_text("0\n")
        (scratch / "tmp").mkdir()
        self.env = {
            **os.environ,
            "PATH": f"{shim.parent}{os.pathsep}{os.environ.get('PATH', '')}",
            "HERMIT_TUI_CLOCK": str(scratch / "clock"),
            "TMPDIR": str(scratch / "tmp"),
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_TERMINAL_PROMPT": "0",
            "LC_ALL": "C",
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        for key in ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE", "GIT_DIR", "GIT_WORK_TREE"):
            self.env.pop(key, None)

    def __call__(self, *args: str) -> str:
        run = subprocess.run(
            [sys.executable, "-m", "hermit", *args],
            cwd=self.project,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if run.returncode != 0:
            tail = (run.stderr.strip() or run.stdout.strip()).splitlines()[-5:]
            raise RuntimeError(f"hermit {' '.join(args)} failed (exit {run.returncode}): " + " | ".join(tail))
        return run.stdout

    def git(self, *args: str) -> str:
        run = subprocess.run(
            ["git", "-C", str(self.project / TREE), *args], env=self.env, capture_output=True, text=True, check=True
        )
        return run.stdout.strip()


def build_trained_project(dest: Path) -> Path:
    """Create the trained project in ``dest`` (a new or empty folder) and return its run.yaml path."""
    dest = Path(dest).expanduser().resolve()
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise FileExistsError(f"{dest}: not a new or empty folder; the trained project is built only into one")
    if importlib.util.find_spec("hermit") is None:
        raise RuntimeError(f"hermit-harness is not installed for {sys.executable} (the test extra has it)")
    shutil.copytree(FILES, dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__", "logs", "runs"))
    with tempfile.TemporaryDirectory(prefix="hermit-tui-trained-") as scratch:
        hermit = _Hermit(dest, Path(scratch))
        hermit("check", "--config", "run.yaml")
        hermit("train", "--config", "run.yaml")
        commit = hermit.git("rev-parse", f"{COMMIT_OF}^{{commit}}")[:COMMIT_DIGITS]
        for selector, repeats in EVALUATIONS:
            hermit(
                "eval", "--config", "run.yaml", "--adapter", selector.format(commit=commit), f"eval.repeats={repeats}"
            )
    return dest / "run.yaml"


def copy_trained_project(src: Path, dest: Path) -> Path:
    """A private copy of the trained project ``src`` at ``dest`` (which must not exist); returns its run.yaml. The
    copy's checkout and tree point at each other, and its attempts' ``log`` paths into its own ``logs/``."""
    src, dest = Path(src).resolve(), Path(dest).resolve()
    assert CHECKOUT == RUN_DIR / "checkout" and TREE_GIT == TREE / ".git", "demo_copies names other paths"
    shutil.copytree(src, dest, symlinks=True)
    repair_worktree(src, dest)
    old, new = f"{src}{os.sep}", f"{dest}{os.sep}"
    for results in (dest / RUN_DIR / "eval").glob("*/results.jsonl"):
        lines = []
        for line in results.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            if isinstance(record.get("log"), str) and record["log"].startswith(old):
                record["log"] = new + record["log"][len(old) :]
            lines.append(json.dumps(record) + "\n")
        results.write_text("".join(lines), encoding="utf-8")
    return dest / "run.yaml"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or argv[0].startswith("-"):
        print("usage: python tests/trained_project.py DEST (a new or empty folder)", file=sys.stderr)
        return 2
    started = time.monotonic()
    try:
        run_yaml = build_trained_project(Path(argv[0]))
    except (FileExistsError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"built in {time.monotonic() - started:.1f} s", file=sys.stderr)
    print(run_yaml)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
