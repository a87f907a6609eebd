"""10. Start-up (issue 30): whole commands against their floors, timed in one run with interleaved repeats.

    python benchmarks/bench_startup.py [--repeats N] [--tasks N] [--dir DIR] [--quick]

Every measurement is a whole process (interpreter start, imports, the command, exit) run as an installed package
runs, with its bytecode written (``ENV``), started with ``subprocess.run`` and its output thrown away; the commands
take turns (A B C ... A B C ...) for --repeats rounds after one warm-up round, and each figure is the median of its
walls, so a drift of the machine's speed touches them all alike; the details give each command's median CPU seconds
too (user + system, with the processes it waited for), which waiting for a core on a shared machine does not
inflate. Measured:

- ``hermit-tui --help`` against ``hermit --help`` (hermit-harness's CLI, beside this Python) and ``python -c pass``
  (the floor of any Python command): target <= 0.10 s and <= 2x ``hermit --help``. A correctness figure checks
  that ``--help`` imports none of the heavy libraries (``HEAVY``);
- ``report``, ``gate`` and ``show`` on the demo workspace (``hermit-tui demo --no-ui``, evaluated once by
  ``hermit-tui eval --adapter none --adapter root --adapter final``): target <= 0.30 s each; a correctness figure
  checks that ``show`` imports neither numpy nor the columns (``SHOW_HEAVY``), another that ``report`` imports
  neither GitPython nor scipy (``REPORT_HEAVY``: it reads the adapter tree with plain git);
- ``report --format json`` on 10,008 attempts (synth.py's project, none/root/final x 3 repeats x 1,112 tasks written
  in hermit's format) against the stdlib pass over the same results.jsonl files (``json.loads`` per line and the
  per-task means, in a process of its own: ``STDLIB_PASS``): target <= 2x.

Generated files go under --dir (default: the system's temporary folder), in a temporary folder removed at the end.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import synth  # noqa: E402

BIN = Path(sys.executable).parent
HERMIT_TUI = str(BIN / "hermit-tui")
HERMIT = str(BIN / "hermit")
# the commands run as installed: pip writes the bytecode of what it installs, so a command never compiles its
# modules; a shell with PYTHONDONTWRITEBYTECODE would recompile hermit_tui (an editable install) at every start
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
LABELS = ["none", "root", "final"]
REPEATS = 3
# what --help must not import (tests/test_architecture.py checks the parser alone; this checks the whole command)
HEAVY = [
    "numpy",
    "scipy",
    "yaml",
    "git",
    "textual",
    "rich",
    "pydantic",
    "msgspec",
    "hermit_tui.core.records.columns",
    "hermit_tui.dashboard",
]
HEAVY_PROBE = (
    "import sys\n"
    "from hermit_tui.cli import main\n"
    "try:\n"
    "    main(['--help'])\n"
    "except SystemExit:\n"
    "    pass\n"
    f"heavy = {HEAVY!r}\n"
    "sys.stderr.write(','.join(m for m in heavy if m in sys.modules))\n"
)
# what `show` must not import on an evaluation whose every line is clean (records/lines.py reads one task's records
# without numpy or the columns); the probe runs the command in-process on the demo and lists what it imported
SHOW_HEAVY = ["numpy", "scipy", "textual", "rich", "git", "hermit_tui.core.records.columns", "hermit_tui.dashboard"]
# what `report` must not import on the demo (GitPython: the tree is read with plain git; scipy: core/stats/special)
REPORT_HEAVY = ["git", "scipy", "textual", "rich", "hermit_tui.dashboard"]
# runs the command given after the module list in-process; a lazy module never used (core/lazy.py) does not count
PROBE = (
    "import sys, io, contextlib\n"
    "from hermit_tui.cli import main\n"
    "with contextlib.redirect_stdout(io.StringIO()):\n"
    "    code = main(sys.argv[2:])\n"
    "assert code == 0, code\n"
    "loaded = {m for m, mod in sys.modules.items() if type(mod).__name__ != '_LazyModule'}\n"
    "sys.stderr.write(','.join(m for m in sys.argv[1].split(',') if m in loaded))\n"
)
# the floor of a stdlib tool reading the same files: json.loads per line, each selector's mean of per-task means
STDLIB_PASS = (
    "import json, sys\n"
    "from pathlib import Path\n"
    "means = {}\n"
    "for d in sorted(Path(sys.argv[1]).iterdir()):\n"
    "    per = {}\n"
    "    with open(d / 'results.jsonl', 'rb') as fh:\n"
    "        for line in fh:\n"
    "            if line.strip():\n"
    "                rec = json.loads(line)\n"
    "                per.setdefault(rec['id'], []).append(rec['judge']['score'])\n"
    "    means[d.name] = sum(sum(v) / len(v) for v in per.values()) / len(per)\n"
    "print(json.dumps(means))\n"
)


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


# the median CPU seconds (user + system) of each command interleaved() timed last, by name: on a shared machine
# waiting for a core inflates a wall but not the CPU, so the details print both
CPU: dict[str, float] = {}


def wall(cmd: list[str], cwd: Path | None = None) -> tuple[float, float]:
    """(wall, CPU) seconds of one whole process; CPU counts the processes it waited for (git) too."""
    before = os.times()
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV)
    seconds = time.perf_counter() - t0
    after = os.times()
    if done.returncode not in (0, 3):  # gate exits 3 when a check fails: still a complete run
        raise SystemExit(f"{' '.join(cmd)} exited with {done.returncode}:\n{done.stderr.decode()[-3000:]}")
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return seconds, cpu


def interleaved(commands: dict[str, list[str]], rounds: int, cwd: Path | None = None) -> dict[str, float]:
    """One warm-up round, then ``rounds`` rounds of every command in turn; the median wall of each (and its median
    CPU in ``CPU``)."""
    walls: dict[str, list[float]] = {name: [] for name in commands}
    cpus: dict[str, list[float]] = {name: [] for name in commands}
    for r in range(rounds + 1):
        for name, cmd in commands.items():
            seconds, cpu = wall(cmd, cwd)
            if r:
                walls[name].append(seconds)
                cpus[name].append(cpu)
    CPU.update({name: statistics.median(v) for name, v in cpus.items()})
    return {name: statistics.median(v) for name, v in walls.items()}


def demo_workspace(root: Path, quick: bool = False) -> tuple[Path, str]:
    """The demo, created and evaluated once (none, root, final); its run.yaml and one test task id. ``quick``: the
    demo pipeline's simulated latencies scaled to 0, 5 s sooner (the launch is set-up, not measured; the three
    evaluations share the override, so they compare as before, and report, gate and show read what is on disk: the
    report is the same with the override given to it or not)."""
    out = subprocess.run(
        [HERMIT_TUI, "demo", str(root / "demo"), "--no-ui"], capture_output=True, text=True, check=True, env=ENV
    )
    config = Path(out.stdout.strip().splitlines()[0])
    cmd = [HERMIT_TUI, "eval", "--config", str(config), "--adapter", "none", "--adapter", "root", "--adapter", "final"]
    subprocess.run(
        [*cmd, *(["agent.params.latency_scale=0"] if quick else [])], capture_output=True, check=True, env=ENV
    )
    task = (config.parent / "test.txt").read_text().split()[0]
    return config, task


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, help="rounds of each command after the warm-up (default 9)")
    parser.add_argument("--tasks", type=int, help="test tasks of the report-at-scale project (default 1112)")
    parser.add_argument("--dir", help="where the generated projects go (default: the system's temporary folder)")
    parser.add_argument("--quick", action="store_true", help="few rounds, a small project (smoke test)")
    args = parser.parse_args(argv)
    synth.QUICK = args.quick
    rounds = args.repeats or (1 if args.quick else 9)  # --quick: the warm-up and one measured round
    tasks = args.tasks or (100 if args.quick else 1112)
    print(f"# 10. start-up: load average {loadavg()}", flush=True)

    # the probes run in BIN: `python -c` puts its working directory first on sys.path, and a checkout there would be
    # imported in place of the package measured
    probe = subprocess.run(
        [sys.executable, "-c", HEAVY_PROBE], capture_output=True, text=True, check=True, env=ENV, cwd=BIN
    )
    heavy = [m for m in probe.stderr.strip().split(",") if m]
    synth.figure(
        "startup.help_heavy_modules",
        float(len(heavy)),
        target="<= 0",
        check=True,
        detail=f"heavy modules imported by --help: {', '.join(heavy) or 'none'} (of {', '.join(HEAVY)})",
    )

    helps = interleaved(
        {"hermit_tui": [HERMIT_TUI, "--help"], "hermit": [HERMIT, "--help"], "python": [sys.executable, "-c", "pass"]},
        rounds,
    )
    synth.figure(
        "startup.help_s",
        helps["hermit_tui"],
        unit="s",
        target="<= 0.10",
        detail=f"hermit-tui --help, median of {rounds} (CPU {CPU['hermit_tui']:.3f} s); python -c pass "
        f"{helps['python']:.3f} s",
    )
    synth.figure(
        "startup.help_over_hermit",
        helps["hermit_tui"] / helps["hermit"],
        target="<= 2",
        detail=f"hermit --help {helps['hermit']:.3f} s (hermit-harness)",
    )
    synth.figure(
        "startup.help_over_python",
        helps["hermit_tui"] / helps["python"],
        detail=f"over python -c pass {helps['python']:.3f} s (the floor)",
    )

    with tempfile.TemporaryDirectory(prefix="hermit-bench-startup-", dir=args.dir) as tmp:
        root = Path(tmp)
        t0 = time.perf_counter()
        config, task = demo_workspace(root, quick=args.quick)
        print(f"# the demo created and evaluated in {time.perf_counter() - t0:.1f} s", flush=True)
        base = [HERMIT_TUI]
        cfg = ["--config", str(config)]
        demo = interleaved(
            {
                "report": [*base, "report", *cfg, "--output", str(root / "report.md"), "--force"],
                "gate": [*base, "gate", *cfg],
                "show": [*base, "show", *cfg, "--adapter", "final", "--task", task],
                "python": [sys.executable, "-c", "pass"],
            },
            rounds,
        )
        demo_cpu = dict(CPU)
        probes = {
            "show": (SHOW_HEAVY, ["show", *cfg, "--adapter", "final", "--task", task]),
            "report": (REPORT_HEAVY, ["report", *cfg]),
        }
        for name, (modules, command) in probes.items():
            probe = subprocess.run(
                [sys.executable, "-c", PROBE, ",".join(modules), *command],
                capture_output=True,
                text=True,
                env=ENV,
                cwd=BIN,
            )
            if probe.returncode:
                raise SystemExit(f"the {name} probe failed:\n{probe.stderr[-3000:]}")
            heavy = [m for m in probe.stderr.strip().split(",") if m]
            synth.figure(
                f"startup.{name}_heavy_modules",
                float(len(heavy)),
                target="<= 0",
                check=True,
                detail=f"heavy modules imported by {name} on the demo: {', '.join(heavy) or 'none'} "
                f"(of {', '.join(modules)})",
            )
        for name in ("report", "gate", "show"):
            synth.figure(
                f"startup.demo_{name}_s",
                demo[name],
                unit="s",
                target="<= 0.30",
                detail=f"hermit-tui {name} on the demo, median of {rounds} (CPU {demo_cpu[name]:.3f} s); "
                f"python -c pass {demo['python']:.3f} s",
            )

        project = root / "p"
        synth.make_project(project, tasks=tasks, tree=False)
        ids = synth.test_ids(project)
        for label in LABELS:
            synth.write_evaluation(project, label, ids, REPEATS)
        attempts = tasks * REPEATS * len(LABELS)
        out = project / "report.json"
        scale = interleaved(
            {
                "report": [
                    *base,
                    "report",
                    "--config",
                    str(project / "run.yaml"),
                    "--format",
                    "json",
                    "--output",
                    str(out),
                    "--force",
                ],
                "stdlib": [sys.executable, "-c", STDLIB_PASS, str(project / "runs" / synth.RUN / "eval")],
            },
            rounds,
        )
        synth.figure(
            "startup.report_10k_over_stdlib",
            scale["report"] / scale["stdlib"],
            target="<= 2",
            detail=f"report --format json on {attempts:,} attempts {scale['report']:.3f} s (CPU "
            f"{CPU['report']:.3f} s), the stdlib pass {scale['stdlib']:.3f} s (CPU {CPU['stdlib']:.3f} s; whole "
            f"processes, medians of {rounds})",
        )
    print(f"# load average after: {loadavg()}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
