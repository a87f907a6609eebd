"""The report: its figures against values recomputed by hand from results.jsonl, its three formats, reports over
hermit-written evaluations, and the CLI's --output rules."""

import argparse
import csv
import io
import json
import re
import shutil
import statistics
from pathlib import Path

import pytest
from demo_copies import repair_worktree
from stats_by_hand import mover_by_hand, score_interval_by_hand, selector_interval_by_hand

from hermit_tui.cli import report as cli_report
from hermit_tui.core.errors import InputError
from hermit_tui.core.records.folders import StoredEvaluation
from hermit_tui.core.report.build import build_report, default_labels, to_csv, to_json, to_markdown
from hermit_tui.core.run.runner import EvalRun
from hermit_tui.core.workspace.config import load_config
from hermit_tui.core.workspace.selectors import label_of
from hermit_tui.core.workspace.tasks import load_tasks

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "hermit_eval"
LABELS = ["none", "root", "final"]
T15 = 2.131449546  # t(0.975, 15 df), from published tables
SUMMARY_KEYS = [
    "adapter",
    "commit",
    "tasks",
    "repeats",
    "mean_score",
    "solved_once",
    "cost_usd",
    "unknown_cost_tasks",
    "errors",
    "wall_s",
]


@pytest.fixture(scope="module")
def evaluated(demo_template, tmp_path_factory) -> Path:
    """A demo workspace where none, root and final were evaluated (3 repeats, as the demo's run.yaml says)."""
    dest = tmp_path_factory.mktemp("report") / "demo"
    shutil.copytree(demo_template, dest, symlinks=True)
    repair_worktree(demo_template, dest)
    EvalRun(load_config(dest / "run.yaml", ["agent.params.latency_scale=0"]), LABELS).run_sync()
    return dest / "run.yaml"


def score_interval(values: list[float], lo: float, hi: float, max_n: float | None = None) -> tuple[float, float]:
    return score_interval_by_hand(values, lo, hi, T15, max_n)


def report_of(path: Path, labels=None, **kw):
    config = load_config(path)
    return build_report(config, load_tasks(config), labels, **kw)


def by_hand(run_dir: Path, label: str) -> dict[str, list[float]]:
    """Scores per task, read straight from results.jsonl."""
    scores: dict[str, list[float]] = {}
    for line in (run_dir / "eval" / label / "results.jsonl").read_text().splitlines():
        row = json.loads(line)
        scores.setdefault(row["id"], []).append(row["judge"]["score"])
    return scores


def test_the_report_on_the_demo_matches_hand_computations(evaluated):
    run_dir = evaluated.parent / "runs" / "demo"
    test_ids = (evaluated.parent / "test.txt").read_text().split()
    report = report_of(evaluated, demo=True)  # the built-in demo: the caller says so (cli_report, the app)
    data = json.loads(to_json(report))
    md = to_markdown(report)

    assert [s["label"] for s in data["selectors"]] == LABELS
    assert data["splits"] == {"tasks": 40, "train": 16, "val": 8, "test": 16}
    assert data["dataset_revision"] == "not recorded" and data["comparable"] is True and data["demo"] is True
    means, caps = {}, {}
    for sel in data["selectors"]:
        label = sel["label"]
        on_disk = json.loads((run_dir / "eval" / label / "summary.json").read_text())
        assert sel["summary"] == {k: on_disk[k] for k in SUMMARY_KEYS}
        scores = by_hand(run_dir, label)
        task_means = [statistics.fmean(scores[t]) for t in test_ids]
        means[label] = dict(zip(test_ids, task_means))
        flat = [x for t in test_ids for x in scores[t]]
        mean = statistics.fmean(flat)
        st = sel["stats"]
        # equal repeats: the task mean is hermit's attempt mean
        assert st["mean"] == pytest.approx(mean) == pytest.approx(on_disk["mean_score"]) == st["attempt_mean"]
        binary = all(x in (0.0, 1.0) for x in flat)
        caps[label] = 16 * 3 if binary else None  # pass/fail: the attempts' worth, 16 tasks x 3 repeats
        low, high = selector_interval_by_hand(task_means, 0.0, 1.0, max_n=caps[label])
        assert st["ci_method"] == "score"
        assert (st["ci_low"], st["ci_high"]) == (pytest.approx(low, abs=1e-8), pytest.approx(high, abs=1e-8))
        assert st["solved_once"] == pytest.approx(sum(max(scores[t]) >= 1 for t in test_ids) / 16)
        assert st["pass_k"] == pytest.approx(sum(min(scores[t]) >= 1 for t in test_ids) / 16)
        lines = [json.loads(line) for line in (run_dir / "eval" / label / "results.jsonl").read_text().splitlines()]
        assert sel["errors"] == on_disk["errors"] == sum(r["status"] != "ok" for r in lines)
        assert sel["unknown_cost_attempts"] == on_disk["unknown_cost_tasks"] == 9
        assert sel["known_cost_usd"] == pytest.approx(sum(r["cost_usd"] or 0 for r in lines))
        assert sel["commit"] == on_disk["commit"]
        row = next(line for line in md.splitlines() if line.startswith(f"| {label} | {label} |")).split(" | ")
        shown_ci = [float(x) for x in row[6].split(" to ")]
        assert [float(row[5]), *shown_ci] == pytest.approx([mean, low, high], abs=5.1e-5) and row[7] == "score"

    assert [(p["a"], p["b"]) for p in data["pairs"]] == [("none", "final"), ("root", "final"), ("none", "root")]
    for pair in data["pairs"]:
        diffs = [means[pair["b"]][t] - means[pair["a"]][t] for t in test_ids]
        diff = statistics.fmean(diffs)
        assert pair["mean_diff"] == pytest.approx(diff)
        if statistics.stdev(diffs) > 0:
            assert pair["ci_method"] == "hybrid"
            want = mover_by_hand(
                [means[pair["a"]][t] for t in test_ids],
                [means[pair["b"]][t] for t in test_ids],
                max_a=caps[pair["a"]],
                max_b=caps[pair["b"]],
            )
            assert (pair["ci_low"], pair["ci_high"]) == pytest.approx(want, abs=1e-8)
        assert (pair["wins"], pair["losses"], pair["ties"]) == (
            sum(d > 1e-9 for d in diffs),
            sum(d < -1e-9 for d in diffs),
            sum(abs(d) <= 1e-9 for d in diffs),
        )
        section = md.split(f"### {pair['b']} vs {pair['a']}")[1].split("###")[0]
        assert f"**Verdict:** {pair['verdict']}" in section
        found = re.search(r"\| mean difference \| (-?[0-9.]+) \|", section)
        assert found is not None
        shown = found.group(1)
        assert float(shown) == pytest.approx(diff, abs=5.1e-5) and len(shown.split(".")[1]) == 4
        assert "test of the interval's null" in section
        assert "sharp-null test p (secondary)" in section and "paired randomisation test" in section
        assert "exact" in section  # 16 tasks: every sign pattern

    steps = [json.loads(line) for line in (run_dir / "steps.jsonl").read_text().splitlines()]
    assert [s["mean_score"] for s in data["training"]["steps"]] == [s["rollout"]["mean_score"] for s in steps]
    assert data["training"]["label"].startswith("TRAINING evidence")
    # warnings come first, training evidence last and apart from the test figures
    order = [
        md.index(h)
        for h in (
            "## Warnings",
            "## Results on the test split",
            "## Paired comparisons",
            "## Training evidence (TRAINING, not test)",
        )
    ]
    assert order == sorted(order)
    assert "Teaching demonstration" in md.split("## Protocol")[0]
    assert "sandbox_disabled" in md.split("## Protocol")[0]  # the demo trained with the sandbox off
    assert [c["code"] for c in data["checks"]] == ["sandbox_disabled", "val_to_evolver"]
    assert data["test_reuse"]["note"] is None and data["test_reuse"]["adapters"] == 2


def test_csv_is_the_per_task_table(evaluated):
    run_dir = evaluated.parent / "runs" / "demo"
    test_ids = (evaluated.parent / "test.txt").read_text().split()
    rows = list(csv.DictReader(io.StringIO(to_csv(report_of(evaluated)))))
    assert [r["task_id"] for r in rows] == test_ids
    scores = {label: by_hand(run_dir, label) for label in LABELS}
    for r in rows:
        t = r["task_id"]
        for label in LABELS:
            s = scores[label][t]
            assert float(r[f"{label}_mean"]) == pytest.approx(sum(s) / len(s))
            assert float(r[f"{label}_sd"]) == pytest.approx(statistics.stdev(s))
            assert int(r[f"{label}_n"]) == 3
            assert int(r[f"{label}_solved_once"]) == int(max(s) >= 1)
        assert float(r["final_minus_none"]) == pytest.approx(sum(scores["final"][t]) / 3 - sum(scores["none"][t]) / 3)


def test_unequal_repeats_and_a_missing_task_are_said_and_use_one_estimand(evaluated, tmp_path):
    dest = tmp_path / "demo"
    shutil.copytree(evaluated.parent, dest, symlinks=True)
    repair_worktree(evaluated.parent, dest)
    results = dest / "runs" / "demo" / "eval" / "final" / "results.jsonl"
    test_ids = (dest / "test.txt").read_text().split()
    gone, extra = test_ids[0], test_ids[1]
    lines = [json.loads(line) for line in results.read_text().splitlines()]
    kept = [rec for rec in lines if rec["id"] != gone]
    retry = dict(next(rec for rec in kept if rec["id"] == extra), repeat=4)
    results.write_text("".join(json.dumps(rec) + "\n" for rec in [*kept, retry]))

    report = report_of(dest / "run.yaml")
    final = report.selectors[2].stats
    scores: dict[str, list[float]] = {}
    for rec in [*kept, retry]:
        scores.setdefault(rec["id"], []).append(rec["judge"]["score"])
    task_means = [statistics.fmean(v) for v in scores.values()]
    assert final.mean == pytest.approx(statistics.fmean(task_means))  # the task mean, over the 15 attempted
    assert final.attempt_mean == pytest.approx(statistics.fmean([x for v in scores.values() for x in v]))
    assert final.solved_once == pytest.approx(sum(max(v) >= 1 for v in scores.values()) / 16)  # hermit's 16
    md = to_markdown(report)
    assert "hermit's mean_score (over attempts)" in md and "CI method" in md and "Verdict rule:" in md
    warnings = "\n".join(report.warnings)
    assert "final: unequal repeats (3-4 per task)" in warnings
    assert "final: 1 test tasks have no attempt" in warnings  # the selector's flag, said once
    assert "different sets of test tasks" in warnings
    pair = report.pairs[0]
    assert (pair.a, pair.b, pair.n_paired, pair.unequal_repeats) == ("none", "final", 15, 1)
    assert pair.sign_test_p is None and "re-dealt attempts on 1 task" in pair.sharp_test
    section = md.split("### final vs none")[1].split("###")[0]
    assert "| sign test p | — (not valid with unequal repeats) |" in section


def test_a_threshold_and_a_chosen_order_of_selectors(evaluated):
    run_dir = evaluated.parent / "runs" / "demo"
    test_ids = (evaluated.parent / "test.txt").read_text().split()
    report = report_of(evaluated, ["final", "none"], threshold=0.5)
    assert [s.label for s in report.selectors] == ["final", "none"]
    assert [(p.a, p.b) for p in report.pairs] == [("none", "final")]
    none = by_hand(run_dir, "none")
    assert report.selectors[1].stats.solved_once == pytest.approx(sum(max(none[t]) >= 0.5 for t in test_ids) / 16)
    assert "| success threshold | 0.5 (set for this report" in to_markdown(report)
    with pytest.raises(InputError, match="no evaluation of 'demo_ckpt-step-1'"):
        report_of(evaluated, ["demo_ckpt-step-1"])


def test_a_report_over_hermit_written_evaluations(demo_config):
    """Files `hermit eval` wrote: no fingerprint, no extras; the report works and says the fingerprint is missing."""
    eval_dir = demo_config.parent / "runs" / "demo" / "eval"
    for label in LABELS:
        shutil.copytree(FIXTURES / label, eval_dir / label)
    report = report_of(demo_config)
    assert [s.label for s in report.selectors] == LABELS
    assert [s.written_by for s in report.selectors] == ["hermit eval"] * 3
    assert report.comparable is False
    assert all("fingerprint is missing" in d.differences[0] for d in report.differences)
    md = to_markdown(report)
    assert "NOT COMPARABLE (cannot be checked): the protocol fingerprint is missing for none, root, final" in md
    expected = {"none": 0.3375, "root": 0.5528, "final": 0.7313}  # the fixture README's figures
    for s in report.selectors:
        assert s.summary["mean_score"] == pytest.approx(expected[s.label], abs=5e-5)
        assert s.stats.mean == pytest.approx(s.summary["mean_score"])
        assert s.errors == s.summary["errors"] == 6
    assert report.selectors[2].commit == "40c22b79ec6057cae58bb8b1929f9de1e3a4d481"
    assert json.loads(to_json(report))["selectors"][0]["fingerprint"] is None


def test_default_order_none_root_checkpoints_final_others():
    names = [
        "zeta",
        "final",
        "demo_ckpt-step-10",
        "other_ckpt-step-1",
        "demo_ckpt-epoch-1",
        "demo_ckpt-step-2",
        "root",
        "demo_bootstrap",
        "none",
    ]
    stored = [StoredEvaluation(label=n, folder=Path(n)) for n in names]
    stored.append(StoredEvaluation(label="old", folder=Path("x"), archived=True, archived_at="20260101T000000Z"))
    assert default_labels(stored, "demo") == [
        "none",
        "root",
        "demo_bootstrap",
        "demo_ckpt-step-2",
        "demo_ckpt-step-10",
        "demo_ckpt-epoch-1",
        "final",
        "other_ckpt-step-1",
        "zeta",
    ]


def parse(argv):
    parser = argparse.ArgumentParser()
    cli_report.add_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["report", *argv])


def test_cli_writes_output_and_refuses_to_overwrite(evaluated, tmp_path, capsys):
    out = tmp_path / "report.json"
    assert cli_report.run(parse(["--config", str(evaluated), "--format", "json", "--output", str(out)])) == 0
    written = json.loads(out.read_text())
    assert [s["label"] for s in written["selectors"]] == LABELS
    out.write_text("keep me")
    with pytest.raises(InputError, match="already exists; pass --force"):
        cli_report.run(parse(["--config", str(evaluated), "--output", str(out)]))
    assert out.read_text() == "keep me"
    assert (
        cli_report.run(
            parse(
                [
                    "--config",
                    str(evaluated),
                    "--format",
                    "csv",
                    "--output",
                    str(out),
                    "--force",
                    "--adapter",
                    "root",
                    "--adapter",
                    "final",
                ]
            )
        )
        == 0
    )
    assert out.read_text().splitlines()[0].startswith("task_id,root_mean,root_sd,root_n,root_solved_once,final_mean")
    capsys.readouterr()
    assert cli_report.run(parse(["--config", str(evaluated), "--adapter", "none"])) == 0
    assert capsys.readouterr().out.startswith("# Evaluation report: demo")


def test_cli_maps_selectors_to_labels(evaluated, tmp_path):
    config = load_config(evaluated)
    assert label_of("demo/ckpt-step-2", config) == "demo_ckpt-step-2"
    assert label_of("final", config) == "final"
    assert label_of("template", config) == "template"  # an adapter directory: its folder name
    with pytest.raises(InputError, match="no evaluation of 'demo_ckpt-step-2'"):
        cli_report.run(parse(["--config", str(evaluated), "--adapter", "demo/ckpt-step-2"]))
