"""Where it helps and hurts (issue 28): multiplicity adjustments, the exact per-task harm test, slices of the test
split, each pinned against an independent computation (statsmodels, scipy, brute force, the demo's files by hand)."""

from __future__ import annotations

import itertools
import json
import math
import shutil
import statistics
from pathlib import Path

import numpy as np
import pytest
from demo_copies import repair_worktree
from scipy.stats import fisher_exact
from statsmodels.stats.multitest import multipletests

from hermit_tui.core.errors import InputError
from hermit_tui.core.records.columns import read_table
from hermit_tui.core.records.scores import AttemptColumns, tabulate
from hermit_tui.core.run.runner import EvalRun
from hermit_tui.core.stats.harm import (
    fisher_lower_p,
    harmed_tasks,
    permutation_lower_p,
    repeats_needed,
    smallest_p,
    task_p,
)
from hermit_tui.core.stats.multiplicity import benjamini_hochberg, holm
from hermit_tui.core.stats.slices import NO_VALUE, groups_by_field, restrict, slice_report
from hermit_tui.core.workspace.config import load_config
from hermit_tui.core.workspace.tasks import load_tasks

FAST = ["agent.params.latency_scale=0"]

# ---------------------------------------------------------------------------------------------------- adjustments


@pytest.mark.parametrize("seed", range(5))
def test_holm_and_bh_match_statsmodels(seed):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0, 1, 20) ** 3
    assert holm(list(p)) == pytest.approx(list(multipletests(p, method="holm")[1]), abs=1e-12)
    assert benjamini_hochberg(list(p)) == pytest.approx(list(multipletests(p, method="fdr_bh")[1]), abs=1e-12)


def test_a_published_worked_example_and_none_left_out():
    # Benjamini & Hochberg (1995), section 4: 15 p-values; at q = 0.05 the first four are discoveries
    p = [0.0001, 0.0004, 0.0019, 0.0095, 0.0201, 0.0278, 0.0298, 0.0344, 0.0459, 0.3240, 0.4262, 0.5719, 0.6528,
         0.7590, 1.0]  # fmt: skip
    q = benjamini_hochberg(p)
    assert [x is not None and x <= 0.05 for x in q] == [True] * 4 + [False] * 11
    # Holm on four p-values, by hand: 0.01*4, max(0.04, 0.02*3), max(.., 0.03*2), max(.., 0.5)
    assert holm([0.03, 0.01, 0.5, 0.02]) == pytest.approx([0.06, 0.04, 0.5, 0.06])
    assert holm([None, 0.01, None]) == [None, 0.01, None]
    with pytest.raises(ValueError):
        holm([1.5])


# ---------------------------------------------------------------------------------------------------- per-task test


@pytest.mark.parametrize(
    ("a_s", "m", "b_s", "n"), [(3, 3, 0, 3), (2, 3, 1, 3), (5, 10, 0, 1), (0, 3, 3, 3), (4, 5, 2, 6)]
)
def test_the_binary_per_task_test_is_fishers_exact_test(a_s, m, b_s, n):
    # candidate in the first row: "less" asks whether its odds of success are lower
    expected = fisher_exact([[b_s, n - b_s], [a_s, m - a_s]], alternative="less")[1]
    assert fisher_lower_p(a_s, m, b_s, n) == pytest.approx(expected, abs=1e-12)
    a = np.array([1.0] * a_s + [0.0] * (m - a_s))
    b = np.array([1.0] * b_s + [0.0] * (n - b_s))
    assert task_p(a, b, 0.5) == pytest.approx(expected, abs=1e-12)


def test_the_graded_per_task_test_is_the_exact_permutation_test():
    a, b = np.array([0.9, 0.7, 0.8]), np.array([0.2, 0.75, 0.1])
    pooled = list(a) + list(b)
    observed = sum(b) / 3
    splits = list(itertools.combinations(range(6), 3))
    by_hand = sum(sum(pooled[i] for i in s) / 3 <= observed + 1e-12 for s in splits) / len(splits)
    assert permutation_lower_p(a, b) == pytest.approx(by_hand) == pytest.approx(2 / 20)
    assert task_p(a, b, 0.5) == pytest.approx(by_hand)


def test_too_few_repeats_are_said_to_be_too_few():
    assert smallest_p(3, 3) == pytest.approx(1 / 20)
    # BH needs q / T for one discovery: 16 tasks at q = 0.1 need C(2r, r) >= 160, first at r = 5 (252; r = 4: 70)
    assert repeats_needed(16, 0.1) == 5 and math.comb(8, 4) < 160 <= math.comb(10, 5)
    ids = [f"t{i}" for i in range(16)]
    base = tabulate([_att(t, r, 1.0) for t in ids for r in (1, 2, 3)], ids, 0.5)
    # one task drops from 3/3 to 0/3: p = 1/20 on its own, above the 0.1/16 that BH needs for one discovery
    one = tabulate([_att(t, r, 0.0 if t == "t0" else 1.0) for t in ids for r in (1, 2, 3)], ids, 0.5)
    report = harmed_tasks("none", base, "final", one)
    assert report.tested == 16 and not report.reachable and report.harmed == []
    assert report.repeats_needed == 5 and "5 repeats per selector would make it reachable" in report.note
    assert "no single task can show harm on its own" in report.note
    # every task drops so: 16 p-values of 0.05, and BH (p_(16) = 0.05 <= 0.1 * 16/16) flags all of them
    every = tabulate([_att(t, r, 0.0) for t in ids for r in (1, 2, 3)], ids, 0.5)
    report = harmed_tasks("none", base, "final", every)
    assert len(report.harmed) == 16 and all(h.q_value == pytest.approx(0.05) for h in report.harmed)


def test_harm_is_found_with_enough_repeats():
    ids = [f"t{i}" for i in range(8)]
    base = tabulate([_att(t, r, 1.0) for t in ids for r in range(1, 9)], ids, 0.5)
    cand = tabulate([_att(t, r, 0.0 if t == "t3" else 1.0) for t in ids for r in range(1, 9)], ids, 0.5)
    report = harmed_tasks("none", base, "final", cand)
    assert report.reachable and [h.task for h in report.harmed] == ["t3"]
    p = fisher_exact([[0, 8], [8, 0]], alternative="less")[1]
    (h,) = report.harmed
    assert h.p_value == pytest.approx(p) and h.q_value == pytest.approx(min(1.0, p * 8 / 1))


def _att(task_id: str, repeat: int, score: float) -> tuple[str, int, float]:
    """An attempt as tabulate takes it: (task id, repeat, score)."""
    return (task_id, repeat, score)


# ---------------------------------------------------------------------------------------------------- slices


@pytest.fixture(scope="module")
def evaluated(demo_template, tmp_path_factory) -> Path:
    dest = tmp_path_factory.mktemp("slices") / "demo"
    shutil.copytree(demo_template, dest, symlinks=True)
    repair_worktree(demo_template, dest)
    EvalRun(load_config(dest / "run.yaml", FAST), ["none", "final"], update_card=False).run_sync()
    return dest


def _tables(ws: Path, ids: list[str]):
    out = {}
    for label in ("none", "final"):
        table = read_table(ws / "runs/demo/eval" / label / "results.jsonl")
        out[label] = tabulate(table.attempt_columns(ids), ids, 1.0)
        table.close()
    return out


def test_restrict_is_tabulating_the_slice_afresh(evaluated):
    config = load_config(evaluated / "run.yaml")
    ids = load_tasks(config).test_ids
    sub = ids[1::3]
    table = read_table(evaluated / "runs/demo/eval/final/results.jsonl")
    whole, fresh = tabulate(table.attempt_columns(ids), ids, 1.0), tabulate(table.attempt_columns(sub), sub, 1.0)
    table.close()
    cut = restrict(whole, sub)
    for name in ("index", "n", "mean", "solved", "scores", "offsets"):
        assert np.array_equal(getattr(cut, name), getattr(fresh, name)), name
    assert cut.ids == fresh.ids


def test_slices_by_category_match_the_files_by_hand(evaluated):
    config = load_config(evaluated / "run.yaml")
    taskset = load_tasks(config)
    ids = taskset.test_ids
    groups = groups_by_field(taskset.tasks, ids, "category")
    rows = [json.loads(x) for x in (evaluated / "tasks.jsonl").read_text().splitlines()]
    by_hand: dict[str, list[str]] = {}
    for r in rows:
        if r["id"] in ids:
            by_hand.setdefault(r["category"], []).append(r["id"])
    assert {k: sorted(v) for k, v in groups.items()} == {k: sorted(v) for k, v in by_hand.items()}
    report = slice_report(groups, _tables(evaluated, ids), [("none", "final")], ids, by="category")
    assert [s.name for s in report.slices] == list(groups) and report.unsliced == 0
    scores: dict[tuple[str, str], list[float]] = {}
    for label in ("none", "final"):
        for line in (evaluated / "runs/demo/eval" / label / "results.jsonl").read_text().splitlines():
            r = json.loads(line)
            scores.setdefault((label, r["id"]), []).append(r["judge"]["score"])
    for s in report.slices:
        for sel in s.selectors:
            expected = statistics.fmean(statistics.fmean(scores[(sel.label, t)]) for t in s.task_ids)
            assert sel.mean == pytest.approx(expected, abs=1e-12)
        (p,) = s.pairs
        diffs = [statistics.fmean(scores[("final", t)]) - statistics.fmean(scores[("none", t)]) for t in s.task_ids]
        assert p.mean_diff == pytest.approx(statistics.fmean(diffs), abs=1e-12)
        assert p.n_paired == 2 and p.too_small and p.reading.startswith("too small to show anything: 2 paired tasks")
        assert not p.hurt
    # the screening adjustment is BH over the slices' own p-values
    raw = [s.pairs[0].p_value for s in report.slices]
    assert [s.pairs[0].p_bh for s in report.slices] == pytest.approx(benjamini_hochberg(raw))


def test_a_hurt_slice_is_named_and_an_unhurt_one_is_not():
    ids = [f"{c}{i}" for c in "ab" for i in range(12)]
    rng = np.random.default_rng(7)
    base, cand = [], []
    for t in ids:
        for r in (1, 2, 3):
            base.append(_att(t, r, float(rng.uniform(0.6, 1.0))))
            drop = 0.5 if t.startswith("b") else 0.0
            cand.append(_att(t, r, float(max(0.0, rng.uniform(0.6, 1.0) - drop))))
    tables = {"none": tabulate(base, ids, 0.5), "final": tabulate(cand, ids, 0.5)}
    groups = {"a": [t for t in ids if t[0] == "a"], "b": [t for t in ids if t[0] == "b"]}
    report = slice_report(groups, tables, [("none", "final")], ids, by="letter")
    assert [s.name for s, _ in report.hurt()] == ["b"]
    b = report.slices[1].pairs[0]
    assert b.p_hurt_holm is not None
    assert b.p_hurt is not None
    a_hurt = report.slices[0].pairs[0].p_hurt
    assert a_hurt is not None
    assert b.p_hurt_holm == pytest.approx(min(1.0, 2 * min(b.p_hurt, a_hurt)), rel=1e-9) or (b.p_hurt_holm >= b.p_hurt)
    assert b.reading.startswith("hurt: the difference lies below 0")
    # a margin wider than the drop: no longer named
    assert slice_report(groups, tables, [("none", "final")], ids, by="letter", margin=0.8).hurt() == []


def test_list_fields_and_missing_values_and_unknown_fields():
    tasks: dict[str, dict[str, object]] = {"x": {"tags": ["p", "q"]}, "y": {"tags": "q"}, "z": {}}
    assert groups_by_field(tasks, ["x", "y", "z"], "tags") == {"p": ["x"], "q": ["x", "y"], NO_VALUE: ["z"]}
    with pytest.raises(InputError, match=r"--slice-by 'nope': no test task has that field \(they have: tags\)"):
        groups_by_field(tasks, ["x", "y", "z"], "nope")


# ---------------------------------------------------------------------------------------------------- report and gate


def _cli(capsys, *args: str) -> tuple[int, str, str]:
    from hermit_tui.cli import main

    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_report_slices_and_harmed_tasks_in_markdown_and_json(evaluated, capsys):
    config = str(evaluated / "run.yaml")
    code, md, _ = _cli(capsys, "report", "--config", config, "--slice-by", "category", "--harmed")
    assert code == 0
    assert "## Slices by category" in md and "### final − none" in md
    assert "## Harmed tasks: final against none" in md
    # 3 vs 3 repeats: 1/20 is the smallest p a task can reach, and 16 tasks at q = 0.1 need 0.00625
    assert "the smallest p-value a task can reach is 0.05" in md and "5 repeats per selector" in md
    code, js, _ = _cli(capsys, "report", "--config", config, "--slice-by", "category", "--format", "json")
    data = json.loads(js)
    assert data["slices"]["by"] == "category" and len(data["slices"]["slices"]) == 8
    assert data["harm"] == []  # only when asked
    code, plain, _ = _cli(capsys, "report", "--config", config)
    assert (
        "## Slices" not in plain
        and json.loads(_cli(capsys, "report", "--config", config, "--format", "json")[1])["slices"] is None
    )


def _hurt_variant(evaluated: Path, tmp_path: Path) -> Path:
    """The demo with 8 of its test tasks in one category, on which final does much worse than none."""
    dest = tmp_path / "demo"
    shutil.copytree(evaluated, dest, symlinks=True)
    repair_worktree(evaluated, dest)
    ids = (dest / "test.txt").read_text().split()
    big = ids[:8]
    rows = [json.loads(x) for x in (dest / "tasks.jsonl").read_text().splitlines()]
    for r in rows:
        if r["id"] in big:
            r["category"] = "big"
    (dest / "tasks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    for label, score in (("none", lambda t: 1.0), ("final", lambda t: 0.5 if t in big[:2] else 0.0)):
        path = dest / "runs/demo/eval" / label / "results.jsonl"
        out = []
        for line in path.read_text().splitlines():
            r = json.loads(line)
            if r["id"] in big:
                r["status"], r["error"] = "ok", None
                r["judge"] = {"score": score(r["id"]), "feedback": "", "extra": {}}
            out.append(json.dumps(r))
        path.write_text("\n".join(out) + "\n")
    return dest / "run.yaml"


def test_gate_slice_by_fails_naming_the_hurt_slice_and_passes_otherwise(evaluated, tmp_path, capsys):
    only = ("--require", "no-regression", "--only", "--lenient")
    code, out, _ = _cli(capsys, "gate", "--config", str(evaluated / "run.yaml"), *only, "--slice-by", "category")
    assert code == 0 and "PASS no-regression by category: no slice shown to be hurt beyond -0 (8 slices" in out
    hurt = _hurt_variant(evaluated, tmp_path)
    code, out, _ = _cli(capsys, "gate", "--config", str(hurt), *only, "--slice-by", "category")
    line = next(x for x in out.splitlines() if x.startswith("FAIL no-regression by category"))
    assert code == 3 and "hurt beyond -0: big: final - none" in line
    # the hurt slice's difference, by hand: final 0.5 on two tasks and 0 on six, none 1 everywhere
    assert f"{(2 * 0.5 + 6 * 0.0) / 8 - 1.0:+.4f}" in line
    # with a margin wider than the drop it is not named
    code, out, _ = _cli(capsys, "gate", "--config", str(hurt), *only, "--slice-by", "category", "--margin", "0.95")
    assert "PASS no-regression by category" in out


def test_slice_by_an_unknown_field_is_one_line_and_exit_2(evaluated, capsys):
    for command in ("gate", "report"):
        code, out, err = _cli(capsys, command, "--config", str(evaluated / "run.yaml"), "--slice-by", "colour")
        assert code == 2 and "--slice-by 'colour': no test task has that field (they have: category, input)" in err
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


# ---------------------------------------------------------------------------------------------------- pass@k


def _brute(n: int, c: int, k: int, every: bool) -> float:
    """Over every k-subset of n attempts (c successes): the share with at least one (or every one) success."""
    attempts = [1] * c + [0] * (n - c)
    subsets = list(itertools.combinations(attempts, k))
    return sum((all(s) if every else any(s)) for s in subsets) / len(subsets)


@pytest.mark.parametrize(("n", "c"), [(3, 0), (3, 1), (3, 3), (5, 2), (10, 3), (10, 9)])
def test_pass_at_k_and_pass_hat_k_match_enumeration(n, c):
    from hermit_tui.core.stats.passk import pass_at_k, pass_hat_k

    for k in range(1, n + 1):
        got_at = pass_at_k(np.array([float(n)]), np.array([float(c)]), k)[0]
        got_hat = pass_hat_k(np.array([float(n)]), np.array([float(c)]), k)[0]
        assert got_at == pytest.approx(_brute(n, c, k, every=False), abs=1e-12)
        assert got_hat == pytest.approx(_brute(n, c, k, every=True), abs=1e-12)


def test_pass_k_per_selector_and_paired_on_the_demo(evaluated):
    from hermit_tui.core.stats.passk import pass_k

    ids = load_tasks(load_config(evaluated / "run.yaml")).test_ids
    tables = _tables(evaluated, ids)
    result = pass_k(tables, [("none", "final")], 1.0)
    counts: dict[tuple[str, str], list[int]] = {}
    for label in ("none", "final"):
        for line in (evaluated / "runs/demo/eval" / label / "results.jsonl").read_text().splitlines():
            r = json.loads(line)
            counts.setdefault((label, r["id"]), []).append(int(r["judge"]["score"] >= 1.0))
    for sel in result.selectors:
        for k in (1, 2, 3):
            at = statistics.fmean(_brute(3, sum(counts[(sel.label, t)]), k, False) for t in ids)
            hat = statistics.fmean(_brute(3, sum(counts[(sel.label, t)]), k, True) for t in ids)
            assert sel.pass_at[k - 1].value == pytest.approx(at, abs=1e-12)
            assert sel.pass_hat[k - 1].value == pytest.approx(hat, abs=1e-12)
            low, high = sel.pass_at[k - 1].ci_low, sel.pass_at[k - 1].ci_high
            assert low is not None and high is not None
            assert 0.0 <= low <= at <= high <= 1.0
    (pair,) = result.pairs
    for k in (1, 2, 3):
        d = statistics.fmean(
            _brute(3, sum(counts[("final", t)]), k, False) - _brute(3, sum(counts[("none", t)]), k, False) for t in ids
        )
        assert pair.pass_at[k - 1].value == pytest.approx(d, abs=1e-12) and pair.pass_at[k - 1].tasks == 16
    assert result.selectors[0].pass_at[0].value == pytest.approx(
        statistics.fmean(statistics.fmean(counts[("none", t)]) for t in ids)
    )  # pass@1 is the solved rate per attempt, averaged over tasks


def test_report_pass_k_in_markdown_and_json(evaluated, capsys):
    config = str(evaluated / "run.yaml")
    code, md, _ = _cli(capsys, "report", "--config", config, "--pass-k")
    assert code == 0 and "## pass@k and pass^k" in md and "| final − none pass@3 |" in md
    data = json.loads(_cli(capsys, "report", "--config", config, "--pass-k", "--format", "json")[1])
    assert [f["k"] for f in data["pass_k"]["selectors"][0]["pass_at"]] == [1, 2, 3]


# ------------------------------------------------------------------------------------------------ bounds under errors


def _columns(rows: list[tuple[int, int, float, bool]]) -> tuple[AttemptColumns, np.ndarray]:
    task, rep, score, err = zip(*rows)
    return AttemptColumns(task=np.array(task), repeat=np.array(rep), score=np.array(score, dtype=float)), np.array(err)


def test_error_bounds_by_hand_and_a_reading_that_depends_on_them():
    from hermit_tui.core.stats.bounds import error_bounds

    ids = [f"t{i}" for i in range(30)]
    base = [0.4 + 0.01 * (t % 5) for t in range(30)]
    # candidate: 0.15 above the baseline on every task, but its first 20 tasks errored (scored 0)
    a = _columns([(t, 1, base[t], False) for t in range(30)])
    b = _columns([(t, 1, 0.0 if t < 20 else base[t] + 0.15, t < 20) for t in range(30)])
    eb = error_bounds("none", *a, "final", *b, ids, 1.0)
    by = {r.reading: r for r in eb.readings}
    fail = [(0.0 if t < 20 else base[t] + 0.15) - base[t] for t in range(30)]
    succ = [(1.0 if t < 20 else base[t] + 0.15) - base[t] for t in range(30)]
    assert by["as failures"].mean_diff == pytest.approx(statistics.fmean(fail))
    assert by["as successes"].mean_diff == pytest.approx(statistics.fmean(succ))
    assert by["left out"].mean_diff == pytest.approx(0.15) and by["left out"].n_paired == 10
    assert (eb.errors_a, eb.errors_b) == (0, 20)
    assert by["as failures"].decision == "regression" and by["as successes"].decision == "improvement"
    assert not eb.holds and eb.sentence.startswith("the reading depends on how the 20 errored attempts are counted")
    # a later record of a (task, repeat) replaces an earlier one before anything is counted
    b2 = _columns([(0, 1, 0.0, True), (0, 1, 0.9, False), *[(t, 1, 0.6, False) for t in range(1, 6)]])
    eb2 = error_bounds("none", *a, "final", *b2, ids, 1.0)
    assert eb2.errors_b == 0 and eb2.holds and eb2.sentence == "no attempt ended in an error: nothing to bound"


def test_report_error_bounds_on_the_demo_by_hand(evaluated, capsys):
    data = json.loads(
        _cli(capsys, "report", "--config", str(evaluated / "run.yaml"), "--error-bounds", "--format", "json")[1]
    )
    (eb,) = data["error_bounds"]
    rows = {
        label: [json.loads(x) for x in (evaluated / f"runs/demo/eval/{label}/results.jsonl").read_text().splitlines()]
        for label in ("none", "final")
    }  # fmt: skip
    ids = load_tasks(load_config(evaluated / "run.yaml")).test_ids

    def task_mean(label: str, reading: str) -> dict[str, float]:
        scores: dict[str, list[float]] = {}
        for r in rows[label]:
            err = r["status"] != "ok"
            if reading == "left out" and err:
                continue
            scores.setdefault(r["id"], []).append(1.0 if err and reading == "as successes" else r["judge"]["score"])
        return {t: statistics.fmean(v) for t, v in scores.items()}

    for reading in ("as failures", "as successes", "left out"):
        ma, mb = task_mean("none", reading), task_mean("final", reading)
        both = [t for t in ids if t in ma and t in mb]
        got = next(r for r in eb["readings"] if r["reading"] == reading)
        assert got["n_paired"] == len(both)
        assert got["mean_diff"] == pytest.approx(statistics.fmean(mb[t] - ma[t] for t in both), abs=1e-12)


def test_gate_robust_to_errors(evaluated, capsys):
    code, out, _ = _cli(capsys, "gate", "--config", str(evaluated / "run.yaml"), "--require", "robust-to-errors")
    line = next(x for x in out.splitlines() if "robust-to-errors" in x and x.startswith(("PASS", "FAIL")))
    assert "however the 12 errored attempts are counted" in line or "depends on how" in line
    code, out, err = _cli(capsys, "gate", "--config", str(evaluated / "run.yaml"), "--candidate", "none",
                          "--require", "robust-to-errors")  # fmt: skip
    assert code == 2 and "needs a baseline" in err


def test_the_batched_per_task_test_gives_the_single_task_values():
    from hermit_tui.core.stats.harm import batch_p

    rng = np.random.default_rng(3)
    pairs = []
    for i in range(60):
        m, n = int(rng.integers(1, 5)), int(rng.integers(1, 5))
        if i % 2:
            pairs.append((rng.integers(0, 2, m).astype(float), rng.integers(0, 2, n).astype(float)))
        else:
            pairs.append((rng.random(m).round(2), rng.random(n).round(2)))
    pairs.append((np.zeros(0), np.ones(2)))
    assert batch_p(pairs, 0.5) == pytest.approx([task_p(a, b, 0.5) for a, b in pairs], abs=1e-12)
