"""Where it helps and hurts, proved by simulation and timed at scale (``core.stats.slices``, ``harm``).

    python benchmarks/bench_where.py [--quick] [--runs N]

1. **Family-wise error of "this slice is hurt"**: 20 slices of 64 tasks x 3 repeats, no true effect anywhere; the
   share of runs in which any slice is named as hurt (Holm, one-sided 0.025). Target ≤ 5%.
2. **Power to find a hurt slice**: the same, with one slice (10% of the tasks: 2 of 20) truly hurt at −0.3; the share
   of runs in which it is named. Target ≥ 80%.
3. **FDR of the harmed-task list** at q = 0.1: 200 tasks x 10 repeats of pass/fail scores, 20 truly harmed (success
   0.9 → 0.3); the mean share of false entries among the listed tasks. Target ≤ 10%.
4. **Scale**: 111,112 tasks x 3 repeats x 3 selectors: slices by a 100-valued field over the 3 default pairs and the
   harmed-task list of one pair, in seconds and peak memory (targets < 2 s and < 600 MB), and the CPU seconds of the
   same (the figure that does not depend on what else the machine runs). A fresh process pays scipy's import here
   (the slices' vectorised t quantiles): the simulations before it never load it.

Every simulation is seeded.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import synth  # noqa: E402

from hermit_tui.core.records.scores import AttemptColumns, TaskTable, tabulate  # noqa: E402
from hermit_tui.core.stats.harm import harmed_tasks  # noqa: E402
from hermit_tui.core.stats.slices import slice_report  # noqa: E402

SEED = 20261202


def table(scores: np.ndarray, ids: list[str]) -> TaskTable:
    """A TaskTable from scores (tasks x repeats)."""
    g, k = scores.shape
    cols = AttemptColumns(
        task=np.repeat(np.arange(g), k), repeat=np.tile(np.arange(1, k + 1), g), score=scores.reshape(-1)
    )
    return tabulate(cols, ids, 0.5)


def graded(rng: np.random.Generator, quality: np.ndarray, k: int) -> np.ndarray:
    """Scores in [0, 1] around each task's quality (Beta with concentration 10), tasks x k."""
    q = np.clip(quality, 0.02, 0.98)[:, None] * np.ones(k)
    return rng.beta(q * 10, (1 - q) * 10)


def slice_runs(runs: int, effect: float, slices: int = 20, per: int = 64, reps: int = 3) -> tuple[float, float]:
    """(share of runs with any slice named hurt, share with the truly hurt slices named); the first two slices are
    hurt by ``effect`` (10% of the tasks)."""
    rng = np.random.default_rng(SEED + int(effect * 1000))
    g = slices * per
    ids = [f"t{i}" for i in range(g)]
    groups = {f"s{j}": ids[j * per : (j + 1) * per] for j in range(slices)}
    hurt_names = {"s0", "s1"} if effect else set()
    any_named = found = 0
    for _ in range(runs):
        base_q = rng.beta(5, 3, size=g)
        cand_q = base_q.copy()
        if effect:
            cand_q[: 2 * per] = base_q[: 2 * per] - effect
        tables = {"none": table(graded(rng, base_q, reps), ids), "final": table(graded(rng, cand_q, reps), ids)}
        report = slice_report(groups, tables, [("none", "final")], ids, by="slice")
        named = {s.name for s, _ in report.hurt()}
        any_named += bool(named - hurt_names) if effect else bool(named)
        found += bool(hurt_names) and hurt_names <= named
    return any_named / runs, found / runs


def fdr_runs(runs: int, tasks: int = 200, harmed: int = 20, reps: int = 10) -> float:
    rng = np.random.default_rng(SEED + 7)
    ids = [f"t{i}" for i in range(tasks)]
    shares = []
    for _ in range(runs):
        p_base = np.full(tasks, 0.9)
        p_cand = p_base.copy()
        p_cand[:harmed] = 0.3
        a = (rng.random((tasks, reps)) < p_base[:, None]).astype(float)
        b = (rng.random((tasks, reps)) < p_cand[:, None]).astype(float)
        listed = {h.task for h in harmed_tasks("none", table(a, ids), "final", table(b, ids)).harmed}
        false = len(listed - set(ids[:harmed]))
        shares.append(false / max(1, len(listed)))
    return float(np.mean(shares))


def scale(tasks: int) -> tuple[float, float, float]:
    rng = np.random.default_rng(SEED + 11)
    ids = [f"t{i}" for i in range(tasks)]
    tables = {label: table(graded(rng, rng.beta(5, 3, size=tasks), 3), ids) for label in ("none", "root", "final")}
    field = rng.integers(0, 100, size=tasks)
    groups: dict[str, list[str]] = {}
    for tid, v in zip(ids, field.tolist()):
        groups.setdefault(f"v{v}", []).append(tid)
    start, cpu = time.perf_counter(), time.process_time()
    slice_report(groups, tables, [("none", "root"), ("none", "final"), ("root", "final")], ids, by="field")
    harmed_tasks("none", tables["none"], "final", tables["final"])
    took, cpu = time.perf_counter() - start, time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return took, cpu, peak


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a tiny run that checks the script works")
    ap.add_argument("--runs", type=int, default=None, help="simulated runs per figure (default 400; --quick 10)")
    args = ap.parse_args(argv)
    synth.QUICK = args.quick
    runs = args.runs or (10 if args.quick else 400)
    fwer, _ = slice_runs(runs, 0.0)
    synth.figure("where.slices.fwer_no_effect", fwer, target="<= 0.05", detail=f"{runs} runs, 20 slices x 64 tasks x 3")
    _, power = slice_runs(runs, 0.3)
    synth.figure("where.slices.power_at_0.3", power, target=">= 0.8", detail="2 of 20 slices hurt by -0.3")
    fdr = fdr_runs(max(runs // 4, 5))
    synth.figure("where.harm.fdr", fdr, target="<= 0.1", detail="200 tasks x 10 repeats, 20 harmed, q = 0.1")
    took, cpu, peak = scale(2_000 if args.quick else 111_112)
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3]) if Path("/proc/loadavg").exists() else "?"
    synth.figure(
        "where.scale.seconds", took, unit="s", target="< 2", detail=f"100 slices x 3 pairs + harmed tasks; load {load}"
    )
    synth.figure("where.scale.cpu_seconds", cpu, unit="s", detail="the same, CPU seconds of this process")
    synth.figure("where.scale.peak_rss_mb", peak, unit="MB", target="< 600")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
