"""3. Engine overhead: a pipeline that returns at once (and a trivial judge), none/root/final x 3 repeats x N tasks
through hermit_tui.core.run.runner.EvalRun, end to end: building the run (config, tasks, selectors, fingerprint),
exporting the adapters, every attempt, its results.jsonl line (flushed, fsync'ed in batches), the events, the
summaries. Prints attempts per second (target >= 5,000 on a 2-core machine).

    python benchmarks/bench_overhead.py [--quick] [--tasks N] [--concurrency C]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import synth

LABELS = ["none", "root", "final"]


def measure(project: Path, concurrency: int, repeats: int) -> dict:
    from hermit_tui.core.run.runner import EvalRun
    from hermit_tui.core.workspace.config import load_config

    t0 = time.perf_counter()
    run = EvalRun(
        load_config(project / "run.yaml"), LABELS, repeats=repeats, concurrency=concurrency, update_card=False
    )
    t1 = time.perf_counter()
    summaries = run.run_sync()
    t2 = time.perf_counter()
    attempts = sum(s.attempts or 0 for s in summaries.values())
    if attempts != run.total:
        raise SystemExit(f"{attempts} of {run.total} attempts recorded")
    lines = sum(1 for label in LABELS for _ in open(project / "runs" / synth.RUN / "eval" / label / "results.jsonl"))
    if lines != attempts:
        raise SystemExit(f"results.jsonl holds {lines} lines for {attempts} attempts")
    return {"attempts": attempts, "build": t1 - t0, "run": t2 - t1, "total": t2 - t0}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tiny run (smoke test)")
    parser.add_argument("--tasks", type=int, help="test tasks (default 3,334: 30,006 attempts)")
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args(argv)
    synth.QUICK = args.quick
    tasks = args.tasks or (50 if args.quick else 3334)
    repeats = 3
    print(
        f"# 3. engine overhead: an instant pipeline, {len(LABELS)} selectors x {repeats} repeats x {tasks} tasks, "
        f"concurrency {args.concurrency}",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="hermit-bench-overhead-") as tmp:
        project = Path(tmp) / "p"
        synth.make_project(
            project, tasks=tasks, concurrency=args.concurrency, repeats=repeats, agent="pipeline.py:instant"
        )
        got = measure(project, args.concurrency, repeats)
    rate = got["attempts"] / got["total"]
    synth.figure(
        "overhead.attempts_per_s",
        rate,
        unit="attempts/s",
        target=">= 5000",
        detail=f"{got['attempts']:,} attempts in {got['total']:.2f} s (building the run "
        f"{got['build']:.2f} s, running {got['run']:.2f} s: {got['attempts'] / got['run']:,.0f}/s)",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
