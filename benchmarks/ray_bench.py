"""Ray executor: the synthetic heavy-tailed workload on Ray beside local threads, and throughput against workers.

1. none/root/final x 3 repeats x 200 tasks at concurrency 16 (bench_runner's workload), threads then Ray on a
   local Ray cluster. Efficiency = ideal / wall, ideal = max(sum of latencies / concurrency, longest attempt).
   Ray's start-up is reported apart: starting the cluster (once; a real cluster is already up), starting the job
   (ray.init: connecting, zipping and uploading the task folder), and starting the job's worker processes, taken
   as the difference between a first run in the job (cold, as each CLI run is) and a second one (warm).
2. Throughput against workers: a simulated cluster of N one-CPU nodes (N = 1, 2, 4, 8; a head node without CPUs
   hosts the driver), one attempt per CPU (task_cpus = 1) and concurrency N, on latency-bound work (the same
   latencies x 4, sleeping: no CPU), measured after a warm-up run. Reported: efficiency against the ideal of N
   slots and effective workers = N x efficiency (the heavy tail makes each N's slice of tasks differ in mean
   latency, so raw attempts/s are shown beside their own ideal).

    python benchmarks/ray_bench.py [--quick] [--part 1|2|both]
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import synth

from hermit_tui.core.run.runner import EvalRun
from hermit_tui.core.workspace.config import load_config

LABELS = ["none", "root", "final"]


def measure(
    project: Path, labels: list[str], executor: str, concurrency: int, repeats: int, limit: int | None = None
) -> dict:
    """One run_sync() of ``labels``; wall is all of it (locks, exports, attempts, writes, summaries). With
    executor "ray", Ray is already initialised by the caller (a job with the project as working_dir)."""
    config = load_config(project / "run.yaml")
    run = EvalRun(
        config, labels, repeats=repeats, concurrency=concurrency, update_card=False, executor=executor, limit=limit
    )
    summaries, wall, attempts, _ = synth.timed_run(run, executor)
    return {
        "wall": wall,
        "attempts": attempts,
        "summaries": {k: (s.mean_score, s.solved_once, s.errors, s.unknown_cost_tasks) for k, s in summaries.items()},
    }


def connect(address: str, project: Path) -> float:
    """Start a Ray job on the cluster with the project's folder as working_dir; returns the seconds it took."""
    import ray

    from hermit_tui.core.run.ray_executor import ray_runtime_env

    with synth.Stopwatch() as sw:
        ray.init(
            address=address,
            runtime_env=ray_runtime_env(load_config(project / "run.yaml")),
            log_to_driver=False,
            logging_level=logging.WARNING,
        )
    return sw.s


def part1(tmp: Path, quick: bool) -> None:
    import ray
    from ray.cluster_utils import Cluster

    tasks, scale, concurrency, repeats = (24, 0.5, 8, 2) if quick else (200, 1.0, 16, 3)
    print(
        f"# 1. Ray vs threads: {len(LABELS)} selectors x {repeats} repeats x {tasks} tasks, concurrency {concurrency}",
        flush=True,
    )
    project = tmp / "p1"
    synth.make_project(project, tasks=tasks, concurrency=concurrency, repeats=repeats, latency_scale=scale)
    lat = synth.planned_latencies(project, LABELS, synth.test_ids(project), repeats, scale)
    ideal = synth.ideal_wall(lat, concurrency)
    print(
        f"ideal {ideal:.2f} s (sum {sum(lat):.1f} s / {concurrency}, longest {max(lat) * 1000:.0f} ms), "
        f"{len(lat)} attempts",
        flush=True,
    )
    threads = measure(project, LABELS, "threads", concurrency, repeats)
    synth.figure("ray.threads.efficiency", ideal / threads["wall"], detail=f"wall {threads['wall']:.2f} s")
    with synth.Stopwatch() as sw:
        cluster = Cluster(initialize_head=True, connect=False, head_node_args={"include_dashboard": False})
    synth.figure(
        "ray.startup.cluster",
        sw.s,
        unit="s",
        detail="a local cluster with every CPU (once; a real cluster is already running)",
    )
    try:
        synth.figure(
            "ray.startup.job",
            connect(cluster.address, project),
            unit="s",
            detail="ray.init: connect, zip and upload the task folder",
        )
        cold = measure(project, LABELS, "ray", concurrency, repeats)
        warm = measure(project, LABELS, "ray", concurrency, repeats)
    finally:
        ray.shutdown()
        cluster.shutdown()
    synth.figure(
        "ray.cold.efficiency",
        ideal / cold["wall"],
        detail=f"wall {cold['wall']:.2f} s: a fresh job, as each `hermit-tui eval --executor ray` is",
    )
    synth.figure(
        "ray.warm.efficiency",
        ideal / warm["wall"],
        detail=f"wall {warm['wall']:.2f} s: the same job again, its worker processes already started",
    )
    synth.figure(
        "ray.startup.workers",
        cold["wall"] - warm["wall"],
        unit="s",
        detail=f"cold - warm: starting {concurrency} worker processes (importing Ray, hermit-tui, the pipeline)",
    )
    same = threads["summaries"] == cold["summaries"] == warm["summaries"]
    print(f"same summaries (mean, solved_once, errors, unknown cost) on threads and Ray: {same}", flush=True)
    if not same:
        raise SystemExit("the Ray runs' summaries differ from the threads run's")


def part2(tmp: Path, quick: bool) -> None:
    import ray
    from ray.cluster_utils import Cluster

    from hermit_tui.core.run.ray_executor import RayExecutor

    workers = (1, 2, 4) if quick else (1, 2, 4, 8)
    scale, waves = (2.0, 8) if quick else (4.0, 24)
    print(
        f"# 2. throughput against workers: N one-CPU nodes, one attempt per CPU, concurrency N, latencies x "
        f"{scale:g} (latency-bound), {waves} x N attempts, after a warm-up run",
        flush=True,
    )
    RayExecutor.task_cpus = 1.0  # one attempt per simulated worker CPU
    project = tmp / "p2"
    synth.make_project(project, tasks=waves * max(workers), concurrency=1, repeats=1, latency_scale=scale)
    lat = synth.planned_latencies(project, ["final"], synth.test_ids(project), 1, scale)
    cluster = Cluster(initialize_head=True, connect=False, head_node_args={"num_cpus": 0, "include_dashboard": False})
    try:
        for n in workers:
            with synth.Stopwatch() as sw:
                while len(cluster.list_all_nodes()) < n + 1:
                    cluster.add_node(num_cpus=1)
                cluster.wait_for_nodes()
            connect(cluster.address, project)
            try:
                measure(project, ["final"], "ray", n, 1, limit=2 * n)  # warm-up: one worker per node
                got = measure(project, ["final"], "ray", n, 1, limit=waves * n)
            finally:
                ray.shutdown()
            ideal = synth.ideal_wall(lat[: waves * n], n)
            rate, efficiency = got["attempts"] / got["wall"], ideal / got["wall"]
            synth.figure(
                f"ray.workers_{n}.effective_workers",
                n * efficiency,
                detail=f"efficiency {efficiency:.3f}, {rate:.1f} attempts/s (ideal "
                f"{got['attempts'] / ideal:.1f}; wall {got['wall']:.2f} s, ideal {ideal:.2f} s; "
                f"nodes added in {sw.s:.1f} s)",
            )
    finally:
        cluster.shutdown()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small run (smoke test)")
    parser.add_argument("--part", choices=["1", "2", "both"], default="both")
    args = parser.parse_args(argv)
    try:
        import ray  # noqa: F401
    except ImportError:
        print("ray is not installed: pip install 'hermit-tui[ray]'", flush=True)
        return 0
    print(f"machine: {synth.machine()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="hermit-bench-ray-") as tmp:
        if args.part in ("1", "both"):
            part1(Path(tmp), args.quick)
        if args.part in ("2", "both"):
            part2(Path(tmp), args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
