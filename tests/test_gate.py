"""The gate (issue 16): each requirement passing and failing on the figure that decides it, the exit codes, the
one-line bad input, the step summary appended for CI, and ``eval`` gating what it wrote.

The figures are recomputed here from results.jsonl (the paired interval by hand, as test_report does), never taken
from the code under test."""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from demo_copies import repair_worktree
from stats_by_hand import mover_by_hand

from hermit_tui.cli import main
from hermit_tui.core.errors import InputError
from hermit_tui.core.records.results import Summary
from hermit_tui.core.report.gate.checks import (
    check_comparable,
    check_complete,
    check_errors,
    check_improvement,
    check_no_regression,
    decide,
    gate_interval,
)
from hermit_tui.core.report.gate.model import GateInterval, SelectorFacts
from hermit_tui.core.report.gate.options import parse_requirements
from hermit_tui.core.report.requirements import DEFAULT_REQUIRE
from hermit_tui.core.run.runner import EvalRun
from hermit_tui.core.workspace.config import load_config

FAST = ["agent.params.latency_scale=0"]

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "hermit_eval"
LINE = re.compile(r"^(PASS|FAIL) (\S+(?: \S+)?): (.*)$")


# ---------------------------------------------------------------------------------------------------- the workspace


@pytest.fixture(scope="module")
def evaluated(demo_template, tmp_path_factory) -> Path:
    """The demo with none, root and final evaluated in full (16 tasks x 3 repeats)."""
    dest = tmp_path_factory.mktemp("gate") / "demo"
    shutil.copytree(demo_template, dest, symlinks=True)
    repair_worktree(demo_template, dest)
    EvalRun(load_config(dest / "run.yaml", FAST), ["none", "root", "final"], update_card=False).run_sync()
    return dest


@pytest.fixture
def ws(evaluated, tmp_path) -> Path:
    """A private copy of the evaluated demo, for tests that change files."""
    dest = tmp_path / "demo"
    shutil.copytree(evaluated, dest, symlinks=True)
    repair_worktree(evaluated, dest)
    return dest


def eval_dir(ws: Path) -> Path:
    return ws / "runs/demo/eval"


def rows(ws: Path, label: str) -> list[dict]:
    return [json.loads(line) for line in (eval_dir(ws) / label / "results.jsonl").read_text().splitlines()]


def task_means(ws: Path, label: str) -> dict[str, float]:
    scores: dict[str, list[float]] = {}
    for r in rows(ws, label):
        scores.setdefault(r["id"], []).append(r["judge"]["score"])
    return {t: statistics.fmean(v) for t, v in scores.items()}


def paired_by_hand(ws: Path, a: str, b: str) -> tuple[float, float]:
    """The 95% interval for b - a over the 16 test tasks: Newcombe's hybrid of the two selectors' intervals (the
    MOVER formula written out in tests/stats_by_hand.py), each capped at its attempts' worth for pass/fail scores."""
    test_ids = (ws / "test.txt").read_text().split()
    ma, mb = task_means(ws, a), task_means(ws, b)

    def cap(label: str) -> float | None:
        scores: dict[str, list[float]] = {}
        for r in rows(ws, label):
            scores.setdefault(r["id"], []).append(r["judge"]["score"])
        if not all(x in (0.0, 1.0) for v in scores.values() for x in v):
            return None
        return len(test_ids) ** 2 / sum(1 / len(scores[t]) for t in test_ids)

    return mover_by_hand([ma[t] for t in test_ids], [mb[t] for t in test_ids], max_a=cap(a), max_b=cap(b))


def gate(ws: Path, *args: str, capsys, env: dict | None = None, monkeypatch=None) -> tuple[int, list[str], str]:
    """Run ``hermit-tui gate`` in this process: (exit code, stdout lines, stderr)."""
    code = main(["gate", "--config", str(ws / "run.yaml"), *args])
    out = capsys.readouterr()
    return code, out.out.splitlines(), out.err


def checks_of(lines: list[str]) -> dict[str, tuple[str, str]]:
    found = {}
    for line in lines:
        m = LINE.match(line)
        if m:
            found[m.group(2)] = (m.group(1), m.group(3))
    return found


def ci_in(text: str) -> tuple[float, float]:
    m = re.search(r"95% CI \[([-+][0-9.]+), ([-+][0-9.]+)\]", text)
    assert m is not None
    return float(m.group(1)), float(m.group(2))


# ---------------------------------------------------------------------------------------------------- the CLI on disk


def test_default_gate_passes_with_one_line_per_check(evaluated, capsys):
    code, lines, err = gate(evaluated, capsys=capsys)
    assert code == 0, err
    assert lines[0] == "gate: candidate final vs baseline none, margin 0"
    checks = checks_of(lines)
    # the default requirements: comparable, complete (each selector), no-regression
    assert list(checks) == ["comparable", "complete none", "complete final", "no-regression"]
    assert DEFAULT_REQUIRE == ("comparable", "complete", "no-regression")
    assert all(result == "PASS" for result, _ in checks.values())
    assert checks["complete none"][1] == "48 of 48 expected attempts (16 tasks x 3 repeats)"
    low, high = paired_by_hand(evaluated, "none", "final")
    assert ci_in(checks["no-regression"][1]) == pytest.approx((low, high), abs=5.1e-5)
    assert "Newcombe-style hybrid interval; 16 paired tasks" in checks["no-regression"][1]
    # strict no-regression: the interval excludes any drop (its low end is above 0)
    assert checks["no-regression"][1].endswith(f"excludes any drop: its low end {low:+.4f} > +0.0000")
    # the evidence the checks rest on, counted here from results.jsonl
    assert len(rows(evaluated, "none")) == len(rows(evaluated, "final")) == 48
    assert lines[1] == (
        "evidence: none 16 tasks × 3 repeats (48 attempts), final 16 tasks × 3 repeats (48 attempts); "
        f"16 paired tasks, interval width {high - low:.4f}"
    )
    assert lines[2] == "checks: comparable, complete, no-regression"
    assert lines[-1] == "verdict: PASS (4 checks passed)" and len(lines) == 8


def test_improvement_passes_above_the_margin_and_fails_below(evaluated, capsys):
    low, high = paired_by_hand(evaluated, "none", "final")
    assert 0.1 < low < 0.3  # the demo's final is clearly better than none
    code, lines, _ = gate(evaluated, "--require", "improvement", capsys=capsys)
    assert code == 0
    result, text = checks_of(lines)["improvement"]
    assert result == "PASS" and "lies above +0.0000" in text
    margin = round(low + 0.01, 3)  # just above the interval's low end: no longer an improvement of that size
    code, lines, _ = gate(evaluated, "--require", "improvement", "--margin", str(margin), capsys=capsys)
    assert code == 3
    result, text = checks_of(lines)["improvement"]
    assert result == "FAIL" and f"its low end {low:+.4f} <= {margin:+.4f}" in text
    # --require adds to the defaults, and the output names every check it ran
    assert lines[2] == "checks: comparable, complete, no-regression, improvement"
    assert lines[-1] == "verdict: FAIL (1 of 5 checks failed: improvement)"
    code, lines, _ = gate(evaluated, "--require", "improvement", "--only", "--margin", str(margin), capsys=capsys)
    assert lines[2] == "checks: improvement" and lines[-1] == "verdict: FAIL (1 of 1 checks failed: improvement)"
    margin = round(low - 0.01, 3)
    assert gate(evaluated, "--require", "improvement", "--margin", str(margin), capsys=capsys)[0] == 0


def test_no_regression_fails_when_the_interval_lies_below_minus_the_margin(evaluated, capsys):
    low, high = paired_by_hand(evaluated, "final", "none")  # none - final: a clear regression
    assert high < -0.1
    code, lines, _ = gate(
        evaluated, "--baseline", "final", "--candidate", "none", "--require", "no-regression", capsys=capsys
    )
    assert code == 3
    result, text = checks_of(lines)["no-regression"]
    assert result == "FAIL" and text.startswith("none - final 95% CI")
    assert ci_in(text) == pytest.approx((low, high), abs=5.1e-5)
    assert text.endswith(f"cannot exclude any drop: its low end {low:+.4f} <= +0.0000")
    args = ("--baseline", "final", "--candidate", "none", "--require", "no-regression")

    def no_regression(*more: str) -> tuple[int, str, str]:
        code, lines, _ = gate(evaluated, *args, *more, capsys=capsys)
        return code, *checks_of(lines)["no-regression"]

    # a margin wider than the estimated loss but not than the interval's low end: the drop is not excluded
    margin = round(-high + 0.01, 3)
    code, result, text = no_regression("--margin", str(margin))
    assert code == 3 and result == "FAIL" and f"cannot exclude a drop of more than {margin:g}" in text
    # the lenient reading tolerates it: the interval does not lie entirely below -M
    code, result, text = no_regression("--margin", str(margin), "--lenient")
    assert code == 0 and result == "PASS" and f"its high end {high:+.4f} >= {-margin:+.4f} (lenient reading)" in text
    code, result, text = no_regression("--lenient")
    assert code == 3 and f"lies entirely below +0.0000: its high end {high:+.4f} < +0.0000" in text
    # a margin wider than the whole interval: a drop of that size is excluded, strictly
    margin = round(-low + 0.01, 3)
    code, result, text = no_regression("--margin", str(margin))
    assert code == 0 and result == "PASS" and f"excludes a drop of more than {margin:g}" in text


def test_the_gate_interval_is_the_reports(evaluated, capsys):
    from hermit_tui.core.report.build import build_report
    from hermit_tui.core.workspace.tasks import load_tasks

    config = load_config(evaluated / "run.yaml")
    report = build_report(config, load_tasks(config), ["none", "final"])
    pair = report.pairs[0]
    code, lines, _ = gate(evaluated, "--require", "improvement", capsys=capsys)
    assert ci_in(checks_of(lines)["improvement"][1]) == pytest.approx((pair.ci_low, pair.ci_high), abs=5.1e-5)


def test_comparable_fails_naming_what_differs(ws, capsys):
    EvalRun(load_config(ws / "run.yaml", FAST), ["root"], repeats=2, update_card=False).run_sync()
    code, lines, _ = gate(ws, "--candidate", "root", "--require", "comparable", capsys=capsys)
    assert code == 3
    assert checks_of(lines)["comparable"] == ("FAIL", "none and root differ in repeats")


def test_evaluations_hermit_wrote_cannot_be_checked_unless_allowed(ws, capsys):
    for label in ("none", "final"):  # what hermit eval itself wrote: no fingerprint
        shutil.rmtree(eval_dir(ws) / label)
        shutil.copytree(FIXTURES / label, eval_dir(ws) / label)
    code, lines, _ = gate(ws, "--require", "comparable", capsys=capsys)
    assert code == 3
    result, text = checks_of(lines)["comparable"]
    assert result == "FAIL" and text.startswith(
        "cannot be checked: no protocol fingerprint for none (written by hermit eval), final (written by hermit eval)"
    )
    code, lines, _ = gate(ws, "--require", "comparable", "--allow-unchecked", capsys=capsys)
    assert code == 0
    result, text = checks_of(lines)["comparable"]
    assert result == "PASS" and "the task count (16) and repeats (3) agree" in text
    # one of them by hermit-tui: still unchecked
    shutil.rmtree(eval_dir(ws) / "none")
    EvalRun(load_config(ws / "run.yaml", FAST), ["none"], update_card=False).run_sync()
    code, lines, _ = gate(ws, "--require", "comparable", capsys=capsys)
    assert (
        code == 3 and "no protocol fingerprint for final (written by hermit eval)" in checks_of(lines)["comparable"][1]
    )
    # hermit's files are complete: every attempt is there
    code, lines, _ = gate(ws, "--require", "complete", "--only", capsys=capsys)
    assert code == 0 and checks_of(lines)["complete final"] == (
        "PASS",
        "48 of 48 expected attempts (16 tasks x 3 repeats)",
    )


def test_complete_fails_on_missing_attempts_and_on_a_cancelled_run(ws, capsys):
    path = eval_dir(ws) / "final/results.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:-2]))
    code, out, _ = gate(ws, "--require", "complete", capsys=capsys)
    assert code == 3
    assert checks_of(out)["complete final"] == ("FAIL", "46 of 48 expected attempts (16 tasks x 3 repeats): 2 missing")
    assert checks_of(out)["complete none"][0] == "PASS"
    summary = eval_dir(ws) / "final/summary.json"
    data = json.loads(summary.read_text())
    summary.write_text(json.dumps({**data, "cancelled": True, "complete": False}))
    code, out, _ = gate(ws, "--require", "complete", capsys=capsys)
    assert checks_of(out)["complete final"] == ("FAIL", "cancelled: 46 of 48 expected attempts (16 tasks x 3 repeats)")


def test_max_error_rate_per_selector(evaluated, capsys):
    for label in ("none", "final"):
        recs = rows(evaluated, label)
        assert (
            sum(r["status"] == "error" for r in recs),
            sum(r["status"] == "judge_error" for r in recs),
            len(recs),
        ) == (3, 3, 48)  # date-05 fails in the pipeline, roman-05 in the judge, each repeat
    code, lines, _ = gate(evaluated, "--require", "complete", "--max-error-rate", "0.125", capsys=capsys)
    checks = checks_of(lines)
    assert code == 0 and checks["max-error-rate final"] == (
        "PASS",
        "error rate 0.1250 (3 pipeline + 3 judge errors in 48 attempts) <= 0.125",
    )
    code, lines, _ = gate(evaluated, "--require", "complete", "--max-error-rate", "0.1", capsys=capsys)
    checks = checks_of(lines)
    assert code == 3
    assert checks["max-error-rate none"] == (
        "FAIL",
        "error rate 0.1250 (3 pipeline + 3 judge errors in 48 attempts) > 0.1",
    )
    assert checks["max-error-rate final"][0] == "FAIL" and checks["complete final"][0] == "PASS"


def test_json_format_carries_the_same_checks(evaluated, capsys):
    code, lines, _ = gate(
        evaluated, "--require", "improvement", "--require", "complete", "--format", "json", capsys=capsys
    )
    data = json.loads("\n".join(lines))
    assert code == 0 and data["verdict"] == "PASS" and data["passed"] is True
    assert [c["requirement"] for c in data["checks"]] == [
        "comparable",
        "complete",
        "complete",
        "no-regression",
        "improvement",
    ]
    assert data["evidence"].startswith("none 16 tasks × 3 repeats (48 attempts)")
    low, high = paired_by_hand(evaluated, "none", "final")
    assert (data["interval"]["low"], data["interval"]["high"]) == pytest.approx((low, high), abs=1e-8)
    assert data["interval"]["source"] == "paired" and data["interval"]["n_paired"] == 16
    text_lines = gate(evaluated, "--require", "improvement,complete", capsys=capsys)[1]
    assert [c["line"] for c in data["checks"]] == text_lines[3:-1]


def test_smoke_subsets_are_gated_only_when_asked(ws, capsys):
    EvalRun(load_config(ws / "run.yaml", FAST), ["final"], limit=2, update_card=False).run_sync()
    code, lines, _ = gate(ws, capsys=capsys)  # the full evaluations, as before
    assert code == 0 and checks_of(lines)["complete final"][1].startswith("48 of 48")
    code, lines, err = gate(ws, "--smoke", capsys=capsys)  # no smoke subset of none: bad input
    assert code == 2 and "no smoke subset of 'none', the baseline" in err
    code, lines, _ = gate(ws, "--smoke", "--candidate", "final", "--baseline", "final", capsys=capsys)
    assert code == 2
    code, lines, _ = gate(
        ws, "--smoke", "--require", "complete", "--baseline", "final", "--candidate", "final", capsys=capsys
    )
    assert code == 2
    EvalRun(load_config(ws / "run.yaml", FAST), ["none"], limit=2, update_card=False).run_sync()
    code, lines, _ = gate(ws, "--smoke", capsys=capsys)
    checks = checks_of(lines)
    assert code == 3 and lines[0].endswith("smoke subsets")
    assert checks["complete final"] == ("FAIL", "smoke subset of 2 tasks: a wiring check, not an evaluation")
    assert checks["comparable"][0] == "PASS"  # two smoke subsets of the same limit do compare


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--require", "better"], "--require: unknown requirement 'better'"),
        (["--margin", "-0.1"], "--margin must be a finite number at least 0"),
        (["--margin", "nan"], "--margin must be a finite number at least 0"),
        (["--max-error-rate", "1.5"], "--max-error-rate must be a share between 0 and 1"),
        (["--candidate", "demo/ckpt-step-2"], "no evaluation of 'demo_ckpt-step-2', the candidate"),
        (["--baseline", "final"], "--baseline and --candidate are both 'final'"),
        (["--candidate", "none", "--require", "improvement"], "--require improvement needs a baseline"),
        (["--format", "xml"], "invalid choice: 'xml'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(evaluated, capsys, args, needle):
    code, lines, err = gate(evaluated, *args, capsys=capsys)
    assert code == 2 and lines == []
    assert len(err.strip().splitlines()) == 1 and needle in err and "Traceback" not in err


def test_bad_config_is_exit_2(tmp_path, capsys):
    (tmp_path / "run.yaml").write_text("agent: [unclosed\n")
    assert main(["gate", "--config", str(tmp_path / "run.yaml")]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_the_step_summary_is_appended(evaluated, tmp_path, capsys, monkeypatch):
    summary = tmp_path / "step-summary.md"
    summary.write_text("# earlier steps wrote this\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert gate(evaluated, "--require", "improvement", "--only", capsys=capsys)[0] == 0
    only = ("--require", "improvement", "--only")
    assert gate(evaluated, *only, "--margin", "0.9", "--max-error-rate", "0.1", capsys=capsys)[0] == 3
    text = summary.read_text()
    assert text.startswith("# earlier steps wrote this\n")  # appended, never replaced
    first, second = text.split("### hermit-tui gate: ")[1:]
    assert first.startswith("PASS\n") and second.startswith("FAIL\n")
    # the selectors' table: a row per selector with its attempts and errors, as counted here
    rows_ = [line for line in second.splitlines() if line.startswith("| baseline") or line.startswith("| candidate")]
    assert [r.split(" | ")[1] for r in rows_] == ["none", "final"]
    assert all("48 of 48" in r and "3 + 3" in r for r in rows_)
    checks = [
        line.split(" | ")
        for line in second.splitlines()
        if line.startswith("| improvement") or line.startswith("| max-error-rate")
    ]
    assert [(c[0].strip("| "), c[1]) for c in checks] == [
        ("improvement", "**FAIL**"),
        ("max-error-rate none", "**FAIL**"),
        ("max-error-rate final", "**FAIL**"),
    ]
    assert "**Verdict: FAIL** (exit 3): 3 of 3 checks failed" in second
    assert "Evidence: none 16 tasks × 3 repeats (48 attempts), final 16 tasks × 3 repeats (48 attempts)" in second
    assert "**Verdict: PASS** (exit 0): 1 check passed" in first


def test_an_unwritable_step_summary_is_a_warning_not_a_verdict(evaluated, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "no-such-folder" / "summary.md"))
    code, lines, err = gate(evaluated, capsys=capsys)
    assert code == 0 and "cannot append the summary" in err and lines[-1].startswith("verdict: PASS")


# ---------------------------------------------------------------------------------------------------- eval --require


def cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "hermit_tui", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )


def test_eval_gates_after_writing_everything(demo_config, tmp_path):
    step = tmp_path / "summary.md"
    out = cli(
        "eval",
        "--config",
        str(demo_config),
        "--adapter",
        "none",
        "--adapter",
        "final",
        "--no-card",
        "--require",
        "improvement",
        "--margin",
        "0.95",
        *FAST,
        env={"GITHUB_STEP_SUMMARY": str(step)},
    )
    assert out.returncode == 3, out.stderr
    data = json.loads(out.stdout)  # stdout is still only the summaries
    assert set(data) == {"none", "final"}
    for label in ("none", "final"):  # everything was written before the gate
        on_disk = json.loads((demo_config.parent / f"runs/demo/eval/{label}/summary.json").read_text())
        assert on_disk["complete"] is True and on_disk == data[label]
    lines = out.stderr.splitlines()
    start = lines.index("gate: candidate final vs baseline none, margin 0.95")
    assert lines[start + 1].startswith("evidence: none 16 tasks")
    assert lines[start + 2] == "checks: comparable, complete, no-regression, improvement"
    improvement = next(i for i, line in enumerate(lines) if line.startswith("FAIL improvement: final - none 95% CI"))
    assert lines[improvement + 1].startswith("verdict: FAIL (1 of 5 checks failed: improvement)")
    assert "### hermit-tui gate: FAIL" in step.read_text()
    again = cli("gate", "--config", str(demo_config), "--require", "improvement", "--margin", "0.95")
    assert again.returncode == 3 and lines[improvement] in again.stdout.splitlines()  # the same figure on disk


def test_eval_derives_baseline_and_candidate_from_its_selectors(demo_config):
    out = cli(
        "eval",
        "--config",
        str(demo_config),
        "--adapter",
        "root",
        "--adapter",
        "final",
        "--no-card",
        "--max-error-rate",
        "0.2",
        "eval.repeats=1",
        *FAST,
    )
    # 16 tasks x 1 repeat cannot exclude a drop of final against root: strict no-regression fails
    assert out.returncode == 3, out.stderr
    gate_lines = out.stderr[out.stderr.index("gate: ") :].splitlines()
    assert gate_lines[0] == "gate: candidate final vs baseline root, margin 0"
    assert gate_lines[1].startswith("evidence: root 16 tasks × 1 repeat (16 attempts), final 16 tasks × 1 repeat")
    assert [line.split(":")[0] for line in gate_lines[3:-1]] == [
        "PASS comparable",
        "PASS complete root",
        "PASS complete final",
        "FAIL no-regression",
        "PASS max-error-rate root",
        "PASS max-error-rate final",
    ]
    assert "cannot exclude any drop" in gate_lines[6] and "--lenient" in gate_lines[6]
    lenient = cli("gate", "--config", str(demo_config), "--baseline", "root", "--lenient", "--max-error-rate", "0.2")
    assert lenient.returncode == 0, lenient.stdout
    assert "(lenient reading)" in checks_of(lenient.stdout.splitlines())["no-regression"][1]


def test_eval_without_gate_options_does_not_gate(demo_config):
    out = cli("eval", "--config", str(demo_config), "--adapter", "none", "eval.repeats=1", *FAST)
    assert out.returncode == 0 and "gate:" not in out.stderr and "verdict" not in out.stderr


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--adapter", "final", "--require", "improvement"], "--require improvement needs a baseline"),
        (["--adapter", "final", "--baseline", "root"], "no evaluation of 'root' to gate against"),
        (["--adapter", "none", "--adapter", "final", "--margin", "-1"], "--margin must be"),
        (["--adapter", "none", "--adapter", "final", "--require", "faster"], "unknown requirement 'faster'"),
    ],
)
def test_eval_refuses_bad_gate_options_before_running(demo_config, args, needle):
    out = cli("eval", "--config", str(demo_config), *args, *FAST)
    assert out.returncode == 2 and needle in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert not (demo_config.parent / "runs/demo/eval").exists()  # nothing ran, nothing was written


# ---------------------------------------------------------------------------------------------------- pure checks


def facts(label: str, role: str = "candidate", **kw) -> SelectorFacts:
    base = dict(
        role=role,
        label=label,
        folder=f"/x/{label}",
        written_by="hermit-tui",
        tasks=10,
        repeats=2,
        n_test=10,
        present=20,
        expected=20,
        attempts=20,
        pipeline_errors=0,
        judge_errors=0,
        known_cost_usd=0.0,
        unknown_cost_attempts=0,
        summary_complete=True,
        fingerprint={"test_ids_sha256": "a", "repeats": 2, "smoke_limit": None},
    )
    return SelectorFacts(**{**base, **kw})


def interval(low: float, high: float) -> GateInterval:
    return GateInterval(low=low, high=high, method="Student t interval", source="paired", n_paired=30)


def test_improvement_and_no_regression_boundaries():
    # the interval must lie strictly above +M; strict no-regression: strictly above -M
    assert check_improvement("none", "final", interval(0.05, 0.2), 0.05).passed is False
    assert check_improvement("none", "final", interval(0.0501, 0.2), 0.05).passed is True
    assert check_no_regression("none", "final", interval(-0.05, 0.2), 0.05).passed is False
    assert check_no_regression("none", "final", interval(-0.0499, 0.2), 0.05).passed is True
    assert check_no_regression("none", "final", interval(0.0, 0.2), 0.0).passed is False
    assert check_no_regression("none", "final", interval(0.0001, 0.2), 0.0).passed is True
    # lenient: fails only strictly below -M
    assert check_no_regression("none", "final", interval(-0.3, -0.05), 0.05, lenient=True).passed is True
    assert check_no_regression("none", "final", interval(-0.3, -0.0501), 0.05, lenient=True).passed is False
    assert check_no_regression("none", "final", interval(-0.3, -0.0001), 0.0, lenient=True).passed is False
    no = check_improvement("none", "final", None, 0.0)
    assert not no.passed and no.figure.startswith("no interval for final - none: 0 tasks attempted by both")


def test_complete_and_error_rate_checks():
    assert check_complete(facts("final")).passed
    assert (
        check_complete(facts("final", present=19)).figure == "19 of 20 expected attempts (10 tasks x 2 repeats): "
        "1 missing"
    )
    assert not check_complete(facts("final", smoke_limit=3)).passed
    assert check_complete(facts("final", tasks=8)).figure == "measured on 8 test tasks; the config's test split has 10"
    assert not check_complete(facts("final", repeats=None, expected=None, summary_problem="bad json")).passed
    assert check_errors(facts("final", pipeline_errors=1, judge_errors=1), 0.1).passed  # 2 of 20 = 0.1
    assert not check_errors(facts("final", pipeline_errors=2, judge_errors=1), 0.1).passed
    assert not check_errors(facts("final", attempts=0), 1.0).passed


def test_comparable_checks():
    a, b = facts("none", "baseline"), facts("final")
    assert check_comparable(a, b).passed
    other = facts("final", fingerprint={"test_ids_sha256": "b", "repeats": 2, "smoke_limit": None})
    assert check_comparable(a, other).figure == "none and final differ in the test task ids"
    hermit = facts("final", fingerprint=None, written_by="hermit eval")
    assert not check_comparable(a, hermit).passed
    assert check_comparable(a, hermit, allow_unchecked=True).passed
    assert not check_comparable(a, facts("final", fingerprint=None, repeats=3), allow_unchecked=True).passed


def test_a_sequential_interval_is_preferred_when_it_names_the_baseline():
    """``sequential`` (--stop-when-decided), as summary.json holds it: the candidate's interval against its baseline."""
    from hermit_tui.core.records.folders import StoredEvaluation
    from hermit_tui.core.report.gate.load import selector_facts

    seq = {
        "baseline": "none",
        "decision": "improvement",
        "rounds": 2,
        "max_rounds": 5,
        "method": "group-sequential",
        "alpha": 0.05,
        "interval": [0.12, 0.4],
    }
    summary = Summary.model_validate(
        {
            "adapter": "final",
            "tasks": 10,
            "repeats": 5,
            "mean_score": 0.5,
            "solved_once": 0.5,
            "complete": True,
            "sequential": seq,
            "hermit_tui_version": "0.1.0",
        }
    )
    stored = StoredEvaluation(label="final", folder=Path("/x/final"), summary=summary)
    from hermit_tui.core.records.results import AttemptRecord

    recs = [AttemptRecord(repeat=r, id=f"t{i}", status="ok", judge={"score": 1.0}) for i in range(10) for r in (1, 2)]
    cand = selector_facts("candidate", stored, recs, [f"t{i}" for i in range(10)])
    assert {k: getattr(cand.sequential, k) for k in seq if k != "interval"} == {
        k: v for k, v in seq.items() if k != "interval"
    }
    assert cand.sequential is not None and cand.sequential.interval is not None
    assert list(cand.sequential.interval) == seq["interval"] and cand.present == 20 and cand.expected == 50
    iv = gate_interval(facts("none", "baseline"), cand, None)
    assert iv is not None
    assert (iv.low, iv.high, iv.source) == (0.12, 0.4, "sequential") and "after 2 rounds" in iv.method
    assert gate_interval(facts("root", "baseline"), cand, None) is None  # another baseline: not this interval
    # the design stopped it when decided after 2 of 5 rounds: the 2 rounds are what is expected
    done = check_complete(cand)
    assert done.passed and done.figure == (
        "20 of 20 expected attempts (10 tasks x 2 repeats) (stopped when decided after 2 of 5 rounds)"
    )
    result = decide(facts("none", "baseline"), cand, ["improvement"], 0.1, None)
    assert result.passed and result.checks[0].figure.startswith(
        "final - none 95% CI [+0.1200, +0.4000] (group-sequential, after 2 rounds)"
    )
    assert not decide(facts("none", "baseline"), cand, ["improvement"], 0.15, None).passed


def test_requirements_parse_and_decide_refuses_what_it_cannot_check():
    assert parse_requirements(["improvement,complete", "complete", " comparable "]) == [
        "improvement",
        "complete",
        "comparable",
    ]
    assert parse_requirements(None) == []
    with pytest.raises(InputError, match="unknown requirement 'fast'"):
        parse_requirements(["fast"])
    with pytest.raises(InputError, match="needs a baseline"):
        decide(None, facts("final"), ["no-regression"], 0.0, None)
    result = decide(None, facts("final"), ["complete"], 0.0, 0.5)
    assert result.passed and [c.name for c in result.checks] == ["complete final", "max-error-rate final"]


def test_the_step_summary_says_unknown_when_no_attempt_has_a_cost():
    from hermit_tui.core.report.gate.model import GateResult
    from hermit_tui.core.report.gate.text import to_markdown

    result = GateResult(
        baseline="none",
        candidate="final",
        requirements=[],
        margin=0.0,
        max_error_rate=None,
        selectors=[
            facts("none", "baseline", unknown_cost_attempts=20),
            facts("final", known_cost_usd=0.25, unknown_cost_attempts=3),
        ],
        checks=[],
        passed=True,
    )
    rows_ = {line.split(" | ")[1]: line for line in to_markdown(result).splitlines() if line.startswith("| ")}
    assert "| unknown (20 attempts) |" in rows_["none"]  # no known part: not "0.0000 + 20 unknown"
    assert "| 0.2500 + 3 unknown |" in rows_["final"]
