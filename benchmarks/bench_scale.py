"""7. A million attempts (issue 15): the report and the dashboard against a stdlib pass over the same files.

    python benchmarks/bench_scale.py [--tasks N ...] [--dir DIR] [--quick]

For each size (default 1,112, 11,112 and 111,112 test tasks: 10,008, 100,008 and 1,000,008 attempts as none/root/
final x 3 repeats written in hermit's format by synth.write_evaluation), side by side, each in its own process
(peak RSS = that process's ru_maxrss):

- the stdlib pass: ``json.loads`` per line of each results.jsonl and the per-task means (the floor a tool reading
  these files with the standard library pays; see ``stdlib_pass``);
- ``hermit-tui report --format json --output FILE`` (the whole command, in-process ``cli.main``), its selectors' means
  checked against the stdlib pass's;
- the dashboard: opening the config (its current evaluations read at once), then History -> Enter -> the first paint
  of the per-task table with three summaries, the longest event-loop stall, then a sort and a filter of the whole
  table (bench_dashboard.py's ``open`` measurement).

Generated files go under --dir (default: the system's temporary folder), in a temporary folder removed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench_dashboard  # noqa: E402
import synth  # noqa: E402

LABELS = ["none", "root", "final"]
REPEATS = 3


def size_tag(attempts: int) -> str:
    """1M, 100k, 10k (the figures' names), or the count itself when smaller."""
    if attempts >= 1_000_000:
        return f"{round(attempts / 1e6)}M"
    return f"{round(attempts / 1e3)}k" if attempts >= 10_000 else str(attempts)


def stdlib_pass(project: Path) -> dict:
    """json.loads per line, then each selector's mean of per-task means (what the report calls the mean score)."""
    t0 = time.perf_counter()
    means = {}
    for label in LABELS:
        per: dict[str, list[float]] = {}
        with open(project / "runs" / synth.RUN / "eval" / label / "results.jsonl", "rb") as fh:
            for line in fh:
                if not line.strip():
                    continue
                rec = json.loads(line)
                per.setdefault(rec["id"], []).append(rec["judge"]["score"])
        means[label] = sum(sum(v) / len(v) for v in per.values()) / len(per)
    return {"seconds": time.perf_counter() - t0, "means": means, "peak_rss_mb": synth.peak_rss_mb()}


def report(project: Path) -> dict:
    """``hermit-tui report --format json`` in this process (the command's own code path, imports included)."""
    t0 = time.perf_counter()
    from hermit_tui.cli import main

    out = project / "report.json"
    code = main(["report", "--config", str(project / "run.yaml"), "--format", "json", "--output", str(out), "--force"])
    seconds = time.perf_counter() - t0
    peak = synth.peak_rss_mb()  # the command's own peak: before this benchmark parses its output (44 MB at 1M)
    if code:
        raise SystemExit(f"report exited with {code}")
    data = json.loads(out.read_text())
    return {
        "seconds": seconds,
        "means": {s["label"]: s["stats"]["mean"] for s in data["selectors"]},
        "peak_rss_mb": peak,
    }


def child(kind: str, project: Path) -> dict:
    done = subprocess.run(
        [sys.executable, __file__, "--child", kind, "--project", str(project)],
        capture_output=True,
        text=True,
        env={**os.environ, "BENCH_FIGURES": ""},
    )
    if done.returncode:
        raise SystemExit(f"the {kind} measurement failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def dashboard(project: Path, size: str) -> dict:
    args = argparse.Namespace(size=size, rate=5000.0, seconds=None)
    return bench_dashboard.child("open", project, args)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, nargs="+", help="test tasks per size (default 1112 11112 111112)")
    parser.add_argument("--dir", help="where the generated projects go (default: the system's temporary folder)")
    parser.add_argument("--size", default="160x50", help="the dashboard's terminal size, WxH (default 160x50)")
    parser.add_argument("--quick", action="store_true", help="one tiny size (smoke test)")
    parser.add_argument("--child", choices=["stdlib", "report"], help=argparse.SUPPRESS)
    parser.add_argument("--project", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        project = Path(args.project)
        print(json.dumps(stdlib_pass(project) if args.child == "stdlib" else report(project)), flush=True)
        return 0
    synth.QUICK = args.quick
    sizes = args.tasks or ([100] if args.quick else [1112, 11112, 111112])
    print(
        f"# 7. a million attempts: load average {' '.join(Path('/proc/loadavg').read_text().split()[:3])}", flush=True
    )
    rows = []
    for tasks in sizes:
        attempts = tasks * REPEATS * len(LABELS)
        with tempfile.TemporaryDirectory(prefix="hermit-bench-scale-", dir=args.dir) as tmp:
            project = Path(tmp) / "p"
            synth.make_project(project, tasks=tasks, tree=False)
            ids = synth.test_ids(project)
            t0 = time.perf_counter()
            for label in LABELS:
                synth.write_evaluation(project, label, ids, REPEATS)
            print(f"# {attempts:,} attempts written in {time.perf_counter() - t0:.1f} s", flush=True)
            base = child("stdlib", project)
            rep = child("report", project)
            dash = dashboard(project, args.size)
        same = all(abs(rep["means"][k] - v) < 1e-9 for k, v in base["means"].items())
        row = dict(
            tasks=tasks,
            attempts=attempts,
            stdlib_s=base["seconds"],
            stdlib_rss=base["peak_rss_mb"],
            report_s=rep["seconds"],
            report_rss=rep["peak_rss_mb"],
            same_means=same,
            **{f"dash_{k}": v for k, v in dash.items()},
        )
        rows.append(row)
        tag = f"scale.{size_tag(attempts)}"
        synth.figure(
            f"{tag}.report_over_stdlib",
            rep["seconds"] / base["seconds"],
            target="<= 2",
            detail=f"report --format json {rep['seconds']:.2f} s, stdlib pass {base['seconds']:.2f} s",
        )
        synth.figure(f"{tag}.report_peak_rss_mb", rep["peak_rss_mb"], unit="MB", target="< 600")
        synth.figure(
            f"{tag}.same_means",
            float(same),
            target=">= 1",
            check=True,
            detail="the report's selector means equal the stdlib pass's (within 1e-9)",
        )
        synth.figure(
            f"{tag}.open_over_stdlib",
            dash["open_s"] / base["seconds"],
            target="<= 2",
            detail=f"history -> per-task table painted {dash['open_s']:.2f} s",
        )
        synth.figure(
            f"{tag}.config_open_over_stdlib",
            dash["config_open_s"] / base["seconds"],
            target="<= 2",
            detail=f"app start with the config -> its evaluations in the store {dash['config_open_s']:.2f} s",
        )
        bench_dashboard.open_figures(dash, prefix=tag, open_target=None)
    print(
        "\n| attempts | stdlib pass | report --format json | report RSS | dashboard open (history) | open, "
        "config | longest stall (history / config) | dashboard RSS | sort | filter |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['attempts']:,} | {r['stdlib_s']:.2f} s | {r['report_s']:.2f} s "
            f"({r['report_s'] / r['stdlib_s']:.2f}x) | {r['report_rss']:.0f} MB | {r['dash_open_s']:.2f} s "
            f"({r['dash_open_s'] / r['stdlib_s']:.2f}x) | {r['dash_config_open_s']:.2f} s | "
            f"{r['dash_stall_s'] * 1000:.0f} / {r['dash_config_stall_s'] * 1000:.0f} ms | "
            f"{r['dash_peak_rss_mb']:.0f} MB | {r['dash_sort_s'] * 1000:.0f} ms | "
            f"{r['dash_filter_s'] * 1000:.0f} ms |"
        )
    print(f"# load average after: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
