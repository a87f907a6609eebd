"""Run every benchmark, each in its own process, and print each figure next to its target.

    python benchmarks/run_all.py [--quick] [--only runner,hermit,...,where,why,startup,concurrency] [--write [PATH]]

--write regenerates benchmarks/RESULTS.md (or PATH) from this run: the machine, the date, the command and every
figure; the notes below the NOTES_MARKER line of the existing file are kept.
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
import synth  # noqa: E402

SCRIPTS = {  # name: (script, what it measures)
    "runner": ("bench_runner.py", "1. Runner efficiency"),
    "hermit": ("bench_hermit.py", "2. Against hermit-harness"),
    "overhead": ("bench_overhead.py", "3. Engine overhead"),
    "dashboard": ("bench_dashboard.py", "4. Dashboard at scale"),
    "ray": ("ray_bench.py", "5. Ray executor (skipped without Ray)"),
    "stats": ("bench_stats.py", "6. Statistics: coverage, the paired test, sequential stopping, speed"),
    "scale": ("bench_scale.py", "7. A million attempts: report and dashboard against a stdlib pass, 10k-1M"),
    "where": ("bench_where.py", "8. Where it helps and hurts: slices under Holm, the harmed-task list's FDR, scale"),
    "why": ("bench_why.py", "9. Why it changed: aligning 200-step trajectories, a pair's summary at 10,000 attempts"),
    "startup": ("bench_startup.py", "10. Start-up: --help, report/gate/show on the demo, report at 10k vs stdlib"),
    "concurrency": ("bench_concurrency.py", "11. Concurrency 64-1,024: simulated I/O attempts, async/sync/processes"),
}
NOTES_MARKER = "<!-- notes: everything below this line is kept when run_all.py --write regenerates the file -->"


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def run(names: list[str], quick: bool) -> tuple[list[dict], dict[str, float]]:
    figures, walls = [], {}
    with tempfile.TemporaryDirectory(prefix="hermit-bench-") as tmp:
        sink = Path(tmp) / "figures.jsonl"
        env = {**os.environ, "BENCH_FIGURES": str(sink)}
        for name in names:
            script, title = SCRIPTS[name]
            t0 = time.perf_counter()
            done = subprocess.run([sys.executable, str(HERE / script), *(["--quick"] if quick else [])], env=env)
            walls[name] = time.perf_counter() - t0
            if done.returncode:
                print(f"# {title}: {script} failed with exit code {done.returncode}", flush=True)
                figures.append(
                    {
                        "name": f"{name}.failed",
                        "value": None,
                        "unit": "",
                        "target": None,
                        "ok": False,
                        "detail": f"{script} exited with {done.returncode}",
                    }
                )
        if sink.exists():
            figures = [json.loads(line) for line in sink.read_text().splitlines() if line.strip()] + figures
    return figures, walls


def shown(f: dict) -> str:
    v = f["value"]
    if v is None:
        return "skipped"
    text = f"{v:,.3f}" if abs(v) < 100 else f"{v:,.0f}"
    return f"{text} {f['unit']}".strip()


def verdict(f: dict) -> str:
    if f["target"] is None:
        return "(reported)"
    return {True: "ok", False: "MISS", None: "skipped" if f["value"] is None else "not judged"}[f["ok"]]


def table(figures: list[dict]) -> list[str]:
    rows = [("figure", "value", "target", "")] + [
        (f["name"], shown(f), f"{f['target']} {f['unit']}".strip() if f["target"] else "", verdict(f)) for f in figures
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]


def write_results(
    path: Path, figures: list[dict], walls: dict[str, float], command: str, load: tuple[str, str], total: float
) -> None:
    m = synth.machine()
    notes = ""
    if path.exists() and NOTES_MARKER in path.read_text():
        notes = path.read_text().split(NOTES_MARKER, 1)[1].lstrip("\n")
    lines = [
        "# Benchmark results",
        "",
        "Produced by `benchmarks/run_all.py` (see [README.md](README.md) for what each figure measures and how).",
        "",
        f"- Date: {m['date']}",
        f"- Machine: {m['nproc']} CPUs ({m['cpu']}), {m['memory_gb']} GB memory; Python {m['python']}; {m['platform']}",
        f"- Load average (1, 5, 15 min) before / after: {load[0]} / {load[1]} (other work shared the machine "
        "when it was above the CPU count)",
        f"- Command: `{command}` ({total / 60:.1f} min: " + ", ".join(f"{k} {v:.0f} s" for k, v in walls.items()) + ")",
        "",
        "| figure | value | target | verdict |",
        "|---|---|---|---|",
    ]
    for f in figures:
        target = f"{f['target']} {f['unit']}".strip() if f["target"] else ""
        lines.append(f"| `{f['name']}` | {shown(f)} | {target} | {verdict(f)} |")
    lines += ["", "Details, as printed:", ""]
    lines += [f"- `{f['name']}`: {f['detail']}" for f in figures if f.get("detail")]
    lines += ["", NOTES_MARKER, "", notes.rstrip() + "\n" if notes else ""]
    path.write_text("\n".join(lines).rstrip() + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny runs (a smoke test; nothing is judged)")
    parser.add_argument("--only", help="a comma-separated subset of " + ", ".join(SCRIPTS))
    parser.add_argument(
        "--write",
        nargs="?",
        const=str(HERE / "RESULTS.md"),
        metavar="PATH",
        help="write the results file (default benchmarks/RESULTS.md)",
    )
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.only.split(",")] if args.only else list(SCRIPTS)
    unknown = [n for n in names if n not in SCRIPTS]
    if unknown:
        parser.error(f"unknown benchmark {', '.join(unknown)} (choose from {', '.join(SCRIPTS)})")
    m = synth.machine()
    before = loadavg()
    print(
        f"# {m['date']} · {m['nproc']} CPUs ({m['cpu']}) · {m['memory_gb']} GB · Python {m['python']} · load {before}",
        flush=True,
    )
    t0 = time.perf_counter()
    figures, walls = run(names, args.quick)
    total = time.perf_counter() - t0
    after = loadavg()
    print(f"\n# all figures ({total / 60:.1f} min; load average {before} before, {after} after)")
    for line in table(figures):
        print(line)
    misses = [f["name"] for f in figures if f["ok"] is False]
    print(f"# {len(misses)} missed: {', '.join(misses)}" if misses else "# every judged target met")
    if args.write:
        command = (
            "python benchmarks/run_all.py"
            + (" --quick" if args.quick else "")
            + (f" --only {args.only}" if args.only else "")
            + " --write"
        )
        write_results(Path(args.write), figures, walls, command, (before, after), total)
        print(f"# wrote {args.write}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
