"""The benchmark scripts run in their tiny mode (--quick) and print their figure lines. Nothing here is timed: the
figures themselves are recorded in benchmarks/RESULTS.md by benchmarks/run_all.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"
HERMIT = Path(sys.executable).with_name("hermit")  # hermit-harness is in the test extra
EXPECTED = {
    "bench_runner.py": [
        "runner.random_order_efficiency",
        "runner.threads.efficiency",
        "runner.processes.efficiency",
        "runner.persistent.random_order_efficiency",
        "runner.persistent.clairvoyant_efficiency",
        "runner.threads.efficiency_persistent",
        "runner.processes.efficiency_persistent",
    ],
    "bench_hermit.py": [
        "hermit.wall_over_ideal",
        "hermit_tui.wall_over_ideal",
        "hermit_tui.run_wall_over_ideal",
        "hermit.same_results",
    ],
    "bench_overhead.py": ["overhead.attempts_per_s"],
    "bench_dashboard.py": [
        "dashboard.open_s",
        "dashboard.open_stall_s",
        "dashboard.config_open_s",
        "dashboard.config_open_stall_s",
        "dashboard.open_peak_rss_mb",
        "dashboard.sort_s",
        "dashboard.filter_s",
        "dashboard.stream_lag_p99_s",
        "dashboard.stream_rate",
        "dashboard.stream_peak_rss_mb",
        "dashboard.live.async.8.lag_p99_s",
        "dashboard.live.async.8.efficiency",
    ],
    "bench_scale.py": [
        f"scale.900.{name}"
        for name in (
            "report_over_stdlib",
            "report_peak_rss_mb",
            "same_means",
            "open_over_stdlib",
            "config_open_over_stdlib",
            "open_s",
            "open_stall_s",
            "config_open_s",
            "config_open_stall_s",
            "open_peak_rss_mb",
            "sort_s",
            "filter_s",
        )
    ],
    "bench_why.py": [
        "why.align_200_ms",
        "why.align_divergence_found",
        "why.pair_summary_s",
        "why.pair_summary_cpu_s",
        "why.pair_summary_peak_rss_mb",
    ],
    "bench_where.py": [
        "where.slices.fwer_no_effect",
        "where.slices.power_at_0.3",
        "where.harm.fdr",
        "where.scale.seconds",
        "where.scale.cpu_seconds",
        "where.scale.peak_rss_mb",
    ],
    "bench_startup.py": [
        "startup.help_heavy_modules",
        "startup.help_s",
        "startup.help_over_hermit",
        "startup.help_over_python",
        "startup.show_heavy_modules",
        "startup.report_heavy_modules",
        "startup.demo_report_s",
        "startup.demo_gate_s",
        "startup.demo_show_s",
        "startup.report_10k_over_stdlib",
    ],
    "bench_concurrency.py": [
        f"concurrency.{mode}.8.{figure}"
        for mode in ("async", "sync", "processes")
        for figure in ("efficiency", "peak_rss_mb")
    ],
    "bench_stats.py": [
        "stats.coverage.min",
        "stats.coverage.max",
        "stats.coverage.outside_range",
        "stats.grid.sel_b.min",
        "stats.grid.pair.min",
        "stats.grid.outside_or_zero",
        "stats.grid.size_heterogeneous_null",
        "stats.grid.power_gap",
        "stats.grid.mde_power_gap",
        "stats.grid.tasks_needed_gap",
        "stats.grid.mde_power_heterogeneous",
        "stats.test.size_unequal_repeats",
        "stats.test.exact_vs_large_sample",
        "stats.clusters.coverage_clustered",
        "stats.clusters.coverage_unclustered",
        "stats.clusters.mde_power_gap",
        "stats.clusters.size_unequal",
        "stats.sequential.aa_false_claims",
        "stats.sequential.aa_false_claims_upper",
        "stats.sequential.fwer_three_candidates",
        "stats.sequential.attempts_vs_equal_power_fixed_50",
        "stats.sequential.attempts_vs_equal_power_fixed_200",
        "stats.sequential.estimate_at_stopping_bias",
        "stats.anytime.coverage_min",
        "stats.anytime.false_claims",
        "stats.anytime.width_vs_t_200",
        "stats.anytime.launch_false_claims",
        "stats.anytime.launch_vs_fixed",
        "stats.anytime.launch_tasks_share_200",
        "stats.speed.columns_s",
        "stats.speed.tuples_s",
        "stats.speed.pass_fail_pair_s",
    ],
}
# the correctness figures (synth.figure(..., check=True)): judged in --quick too, and each must hold
CHECKS = {
    "why.align_divergence_found",
    "hermit.same_results",
    "stats.coverage.outside_range",
    "stats.grid.outside_or_zero",
    "scale.900.same_means",
    "startup.help_heavy_modules",
    "startup.show_heavy_modules",
    "startup.report_heavy_modules",
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, tuple[subprocess.CompletedProcess, list[dict]]]:
    """Every script with --quick, all at once (each in its own process), with its figures collected as JSON."""
    tmp = tmp_path_factory.mktemp("bench")
    started = {}
    for script in EXPECTED:
        sink = tmp / f"{script}.jsonl"
        extra = ["--hermit", str(HERMIT)] if script == "bench_hermit.py" else []
        env = {**os.environ, "BENCH_FIGURES": str(sink), "HERMIT_BENCH_NO_INSTALL": "1"}
        started[script] = (
            subprocess.Popen(
                [sys.executable, str(BENCH / script), "--quick", *extra],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            ),
            sink,
        )
    out = {}
    for script, (proc, sink) in started.items():
        stdout, stderr = proc.communicate(timeout=120)
        figures = [json.loads(line) for line in sink.read_text().splitlines()] if sink.exists() else []
        out[script] = (subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr), figures)
    return out


@pytest.mark.parametrize("script", list(EXPECTED))
def test_script_prints_its_figures(runs, script):
    done, figures = runs[script]
    assert done.returncode == 0, done.stderr[-3000:]
    printed = [line.split()[1] for line in done.stdout.splitlines() if line.startswith("FIGURE ")]
    assert printed == EXPECTED[script]
    assert [f["name"] for f in figures] == EXPECTED[script]
    # a quick run judges no performance target and every correctness figure (a new check not in CHECKS fails here
    # too), and each correctness figure holds
    assert [f["name"] for f in figures if f["ok"] is not None] == [n for n in EXPECTED[script] if n in CHECKS]
    assert [f for f in figures if f["name"] in CHECKS and f["ok"] is not True] == []


def test_hermit_comparison_agrees(runs):
    assert HERMIT.is_file(), f"hermit-harness's CLI is not beside {sys.executable}"
    done, figures = runs["bench_hermit.py"]
    same = next(f for f in figures if f["name"] == "hermit.same_results")
    assert same["value"] == 1.0 and same["ok"] is True, same["detail"]


def test_scale_report_agrees_with_the_stdlib_pass(runs):
    done, figures = runs["bench_scale.py"]
    same = next(f for f in figures if f["name"] == "scale.900.same_means")
    assert same["value"] == 1.0 and same["ok"] is True, same["detail"]


def test_dashboard_quick_run_showed_every_attempt(runs):
    done, figures = runs["bench_dashboard.py"]
    values = {f["name"]: f["value"] for f in figures}
    assert values["dashboard.open_s"] > 0 and values["dashboard.stream_lag_p99_s"] > 0
    assert values["dashboard.open_peak_rss_mb"] > 0
    # a real launch streamed from the runner: its child exits non-zero unless the run screen showed every attempt
    assert values["dashboard.live.async.8.lag_p99_s"] > 0
    assert 0 < values["dashboard.live.async.8.efficiency"] <= 1  # the ideal is a lower bound of the wall


def test_stats_quick_run_never_left_the_range(runs):
    done, figures = runs["bench_stats.py"]
    values = {f["name"]: f["value"] for f in figures}
    assert values["stats.coverage.outside_range"] == 0 and values["stats.grid.outside_or_zero"] == 0
    assert 0.5 < values["stats.coverage.min"] <= values["stats.coverage.max"] <= 1
    assert values["stats.speed.columns_s"] > 0


def test_results_file_keeps_the_notes(tmp_path):
    sys.path.insert(0, str(BENCH))
    try:
        import run_all
    finally:
        sys.path.remove(str(BENCH))
    path = tmp_path / "RESULTS.md"
    path.write_text(f"# old figures\n\n{run_all.NOTES_MARKER}\n\n## Notes\nkept by hand\n")
    figures: list[dict] = [
        {"name": "a.b", "value": 0.5, "unit": "s", "target": "< 2", "ok": True, "detail": "why"},
        {"name": "c.d", "value": None, "unit": "", "target": None, "ok": None, "detail": "skipped: x"},
    ]
    run_all.write_results(path, figures, {"runner": 3.0}, "python benchmarks/run_all.py --write", ("1", "2"), 3.0)
    text = path.read_text()
    assert "# old figures" not in text
    assert "| `a.b` | 0.500 s | < 2 s | ok |" in text
    assert "| `c.d` | skipped |  | (reported) |" in text
    assert text.endswith(f"{run_all.NOTES_MARKER}\n\n## Notes\nkept by hand\n")
