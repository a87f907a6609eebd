"""2. Against hermit-harness: the synthetic project evaluated by ``hermit eval`` (hermit-harness 0.1.0 in its own
venv, sandbox off) for none, root and final in turn, versus one side-by-side launch of ``hermit-tui eval`` at the
same concurrency. Both walls are whole command runs (process start included) against the same ideal; the four
summary figures hermit defines (mean_score, solved_once, errors, unknown_cost_tasks) must agree per selector, and so
must every attempt's status, score and cost.

    python benchmarks/bench_hermit.py [--quick] [--hermit PATH]

hermit-harness is found at --hermit, else $HERMIT_BENCH_VENV/bin/hermit, beside this Python (the test extra installs
it), /tmp/hvenv/bin/hermit, or a venv created
under ~/.cache/hermit-tui/bench-hvenv (python3 -m venv + pip install hermit-harness==0.1.0; not with
$HERMIT_BENCH_NO_INSTALL set). Where it cannot be installed the comparison is skipped with a message.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import synth

LABELS = ["none", "root", "final"]
COMPARED = ("mean_score", "solved_once", "errors", "unknown_cost_tasks")
HERMIT_VERSION = "0.1.0"


def find_hermit(given: str | None) -> tuple[Path | None, str]:
    """The hermit executable, installing hermit-harness into a cache venv when none is found; (None, why) if not."""
    if given:
        return (Path(given), f"using {given}") if Path(given).is_file() else (None, f"{given}: no such file")
    venv = os.environ.get("HERMIT_BENCH_VENV")
    for c in ([Path(venv, "bin", "hermit")] if venv else []) + [
        Path(sys.executable).with_name("hermit"),
        Path("/tmp/hvenv/bin/hermit"),
    ]:
        if c.is_file():
            return c, f"using {c}"
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "hermit-tui" / "bench-hvenv"
    hermit = cache / "bin" / "hermit"
    if hermit.is_file():
        return hermit, f"using {hermit}"
    if os.environ.get("HERMIT_BENCH_NO_INSTALL"):
        return None, "hermit-harness is not installed and $HERMIT_BENCH_NO_INSTALL forbids installing it"
    print(f"# installing hermit-harness=={HERMIT_VERSION} into {cache} ...", flush=True)
    try:
        subprocess.run(["python3", "-m", "venv", str(cache)], check=True, capture_output=True, timeout=300)
        subprocess.run(
            [str(cache / "bin" / "pip"), "install", "-q", f"hermit-harness=={HERMIT_VERSION}"],
            check=True,
            capture_output=True,
            timeout=600,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        detail = getattr(exc, "stderr", b"") or b""
        last = detail.decode(errors="replace").strip().splitlines()[-1:] if detail else [str(exc)]
        return None, f"hermit-harness=={HERMIT_VERSION} could not be installed ({last[0] if last else exc})"
    return (hermit, f"installed into {cache}") if hermit.is_file() else (None, "no hermit executable after install")


def timed(cmd: list[str], cwd: Path, env: dict | None = None) -> float:
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if done.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return wall


def in_process(project: Path, concurrency: int, scale: float) -> tuple[float, list[float]]:
    """The same side-by-side launch through EvalRun.run_sync() in this process: the run without the command's
    start-up (interpreter, imports) and exit; (its wall, its attempts' latencies in the order it took them)."""
    from hermit_tui.core.run.runner import EvalRun
    from hermit_tui.core.workspace.config import load_config

    run = EvalRun(load_config(project / "run.yaml"), LABELS, concurrency=concurrency, update_card=False)
    t0 = time.perf_counter()
    run.run_sync()
    return time.perf_counter() - t0, synth.taken_latencies(project, run, scale)


def read_eval(project: Path, label: str) -> tuple[dict, dict]:
    """summary.json and {(id, repeat): (status, score, cost)} of one evaluation."""
    folder = project / "runs" / synth.RUN / "eval" / label
    summary = json.loads((folder / "summary.json").read_text())
    records = {}
    for line in (folder / "results.jsonl").read_text().splitlines():
        if line.strip():
            r = json.loads(line)
            records[r["id"], r["repeat"]] = (r["status"], r["judge"]["score"], r["cost_usd"])
    return summary, records


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tiny run (smoke test)")
    parser.add_argument("--hermit", help="path to a hermit executable (hermit-harness 0.1.0)")
    args = parser.parse_args(argv)
    synth.QUICK = args.quick
    tasks, scale, concurrency, repeats = (12, 0.2, 4, 2) if args.quick else (200, 1.0, 16, 3)
    print(
        f"# 2. against hermit-harness: {len(LABELS)} selectors x {repeats} repeats x {tasks} tasks, concurrency "
        f"{concurrency}",
        flush=True,
    )
    hermit, how = find_hermit(args.hermit)
    if hermit is None:
        print(f"# SKIPPED: {how}", flush=True)
        for name in (
            "hermit.wall_over_ideal",
            "hermit_tui.wall_over_ideal",
            "hermit_tui.run_wall_over_ideal",
            "hermit.same_results",
        ):
            synth.figure(name, None, detail=f"skipped: {how}")
        return 0
    print(f"# hermit: {how}", flush=True)
    with tempfile.TemporaryDirectory(prefix="hermit-bench-vs-") as tmp:
        theirs, ours, ours_again = Path(tmp) / "hermit", Path(tmp) / "hermit-tui", Path(tmp) / "in-process"
        for project in (theirs, ours, ours_again):
            synth.make_project(project, tasks=tasks, concurrency=concurrency, repeats=repeats, latency_scale=scale)
        ids = synth.test_ids(ours)
        lat = synth.planned_latencies(ours, LABELS, ids, repeats, scale)
        ideal = synth.ideal_wall(lat, concurrency)
        hermit_bound = synth.hermit_schedule(ours, LABELS, ids, repeats, concurrency, scale)
        fixed_bound = synth.list_schedule(synth.runner_order(ours, LABELS, ids, repeats, scale), concurrency)
        # both commands run with their bytecode written, as installed packages run (a shell's PYTHONDONTWRITEBYTECODE
        # would make every start recompile hermit_tui's modules under an editable install: ~0.4 s, no user's cost)
        written = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env = {k: v for k, v in written.items() if k != "PYTHONPATH"}  # hermit's venv has no hermit_tui
        hermit_walls = {
            label: timed([str(hermit), "eval", "--config", "run.yaml", "--adapter", label], theirs, env)
            for label in LABELS
        }
        cmd = [
            sys.executable,
            "-m",
            "hermit_tui",
            "eval",
            "--config",
            "run.yaml",
            "--no-card",
            "--concurrency",
            str(concurrency),
        ]
        for label in LABELS:
            cmd += ["--adapter", label]
        package = importlib.util.find_spec("hermit_tui")
        if package is not None and package.submodule_search_locations:  # bytecode written once, outside the timing
            subprocess.run([sys.executable, "-m", "compileall", "-q", *package.submodule_search_locations], check=False)
        ours_wall = timed(cmd, ours, written)
        run_wall, taken = in_process(ours_again, concurrency, scale)
        ours_bound = synth.list_schedule(taken, concurrency)  # the command's own order is not seen from here

        mismatches, attempt_diffs = [], 0
        for label in LABELS:
            (hs, hr), (os_, or_) = read_eval(theirs, label), read_eval(ours, label)
            for key in COMPARED:
                if abs(float(hs[key]) - float(os_[key])) > 1e-9:
                    mismatches.append(f"{label}.{key}: hermit {hs[key]} vs hermit-tui {os_[key]}")
            attempt_diffs += sum(1 for k in set(hr) | set(or_) if hr.get(k) != or_.get(k))
            print(
                f"#   {label:5}: "
                + ", ".join(f"{k} {hs[k]:.4g}" for k in COMPARED)
                + f"  (hermit's own wall_s {hs['wall_s']}, ours {os_['wall_s']})",
                flush=True,
            )
        hermit_total = sum(hermit_walls.values())
        base = f"ideal {ideal:.2f} s (sum {sum(lat):.1f} s / {concurrency}, longest {max(lat) * 1000:.0f} ms)"
        synth.figure(
            "hermit.wall_over_ideal",
            hermit_total / ideal,
            detail=f"hermit eval x3 in turn: {hermit_total:.2f} s ("
            + ", ".join(f"{k} {v:.2f}" for k, v in hermit_walls.items())
            + f"); {base}; its barriers "
            f"(selector after selector, repeat after repeat) alone make {hermit_bound:.2f} s",
        )
        synth.figure(
            "hermit_tui.wall_over_ideal",
            ours_wall / ideal,
            target="<= 1.05",
            detail=f"hermit-tui eval, one side-by-side launch, whole command: {ours_wall:.2f} s; "
            f"{hermit_total / ours_wall:.2f}x faster than hermit; the order the in-process launch took alone "
            f"makes {ours_bound:.2f} s ({ideal / ours_bound:.3f} of ideal), the fixed task order {fixed_bound:.2f} s",
        )
        synth.figure(
            "hermit_tui.run_wall_over_ideal",
            run_wall / ideal,
            target="<= 1.05",
            detail=f"the same launch in-process (EvalRun.run_sync, no interpreter start or imports): "
            f"{run_wall:.2f} s; the command's start-up and exit cost {ours_wall - run_wall:.2f} s",
        )
        synth.figure(
            "hermit.same_results",
            float(not mismatches and not attempt_diffs),
            target=">= 1",
            check=True,
            detail="mean_score, solved_once, errors, unknown_cost_tasks per selector and every attempt's "
            "status/score/cost agree"
            if not mismatches and not attempt_diffs
            else f"{len(mismatches)} summary mismatches ({'; '.join(mismatches[:3])}), {attempt_diffs} attempts differ",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
