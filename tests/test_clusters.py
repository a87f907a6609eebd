"""Clusters above the task (issue 25, item 5): the CR2 cluster-robust standard error, the intervals and the test
that use it, pinned against a CR2 sandwich built by hand on statsmodels' OLS on an intercept (``stats_by_hand``:
its residuals and hat matrix, scipy's matrix square root) with t on the Bell-McCaffrey df from the general matrices,
against statsmodels' ``cov_type="cluster"`` (CR1, clusters - 1 df) where the clusters are of equal size (the two
are then equal), and ``--cluster-by`` through eval, report and gate on the demo (its categories), bad input
included."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import statsmodels.api as sm
from demo_copies import repair_worktree
from stats_by_hand import clustered_mover_by_hand, clustered_selector_by_hand, cr2_cov_by_hand, cr2_df_by_hand

from hermit_tui.core.errors import InputError
from hermit_tui.core.stats.clusters import (
    Clustering,
    bell_mccaffrey_df,
    cluster_df,
    clustered_cov,
    clustered_var,
    clusters_by_field,
    resolve_clustering,
)
from hermit_tui.core.stats.figures import pair_stats
from hermit_tui.core.stats.intervals import pair_interval, pair_p_value
from hermit_tui.core.stats.selector import selector_stats

FAST = ["agent.params.latency_scale=0"]


def cluster_fit(values, groups):
    """statsmodels' cluster-robust (CR1) fit of an intercept model: the reference where clusters are of equal size."""
    return sm.OLS(np.asarray(values, dtype=float), np.ones(len(values))).fit(
        cov_type="cluster", cov_kwds={"groups": np.asarray(groups)}, use_t=True
    )


def clustered_data(seed: int, clusters: int = 12, shared: float = 0.15):
    """Paired task means in the middle of the range, with a per-cluster shift of the difference (``shared``)."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(2, 7, clusters)  # unequal cluster sizes
    groups = np.repeat(np.arange(clusters), sizes)
    rng.shuffle(groups)
    n = len(groups)
    a = np.clip(rng.normal(0.5, 0.12, n), 0.05, 0.95)
    shift = rng.normal(0.05, shared, clusters)[groups]
    b = np.clip(a + shift + rng.normal(0, 0.05, n), 0.0, 1.0)
    return a, b, groups


def cr2_se(values, groups) -> float:
    return float(np.sqrt(cr2_cov_by_hand(list(values), list(values), list(groups))))


@pytest.mark.parametrize("seed", range(4))
def test_the_clustered_variance_and_covariance_of_means_are_the_cr2_sandwich(seed):
    a, b, groups = clustered_data(seed)
    assert float(clustered_var(b, groups)) == pytest.approx(cr2_cov_by_hand(list(b), list(b), list(groups)), rel=1e-10)
    # the pair's covariance is the same sandwich on both fits' residuals, so V(b - a) = V(a) + V(b) - 2 cov(a, b) is
    # the CR2 variance of the task differences
    cov = float(clustered_cov(a, b, groups))
    assert cov == pytest.approx(cr2_cov_by_hand(list(a), list(b), list(groups)), rel=1e-10)
    v_d = float(clustered_var(b, groups) + clustered_var(a, groups)) - 2 * cov
    assert v_d == pytest.approx(cr2_se(b - a, groups) ** 2, rel=1e-10)
    # unequal sizes: larger than statsmodels' CR1 (the large clusters weigh more), on fewer df than C - 1
    assert float(clustered_var(b, groups)) != pytest.approx(cluster_fit(b, groups).bse[0] ** 2, rel=1e-3)
    c = len(set(groups.tolist()))
    assert cluster_df(groups) == pytest.approx(cr2_df_by_hand(list(groups)), rel=1e-10) and cluster_df(groups) < c - 1
    # several data sets at once (the benchmark's path), each as the sandwich by hand
    many = np.stack([b, b[::-1], b**2])
    want = [cr2_cov_by_hand(list(x), list(x), list(groups)) for x in many]
    assert clustered_var(many, groups) == pytest.approx(want, rel=1e-10)


def test_with_clusters_of_equal_size_cr2_is_statsmodels_cr1_on_clusters_minus_1_df():
    """Equal sizes n_c = N / C: 1 / (1 - n_c / N) = C / (C - 1), CR1's factor (statsmodels' with one parameter:
    C / (C - 1) (N - 1) / (N - 1)), so the two variances are one, and the Bell-McCaffrey df is C - 1 exactly."""
    rng = np.random.default_rng(11)
    groups = np.repeat(np.arange(8), 5)
    rng.shuffle(groups)
    y = rng.normal(0, 1, 40) + rng.normal(0, 0.5, 8)[groups]
    fit = cluster_fit(y, groups)
    assert float(clustered_var(y, groups)) == pytest.approx(fit.bse[0] ** 2, rel=1e-12)
    assert float(clustered_var(y, groups)) == pytest.approx(
        8 / 7 * np.sum(np.bincount(groups, y - y.mean()) ** 2) / 1600
    )
    assert cluster_df(groups) == 7.0 == fit.df_resid_inference and bell_mccaffrey_df([5] * 8) == 7.0
    # every task its own cluster: sd^2 / N on N - 1 df
    own = np.arange(40)
    assert float(clustered_var(y, own)) == pytest.approx(np.var(y, ddof=1) / 40, rel=1e-12) and cluster_df(own) == 39


def _records(means: np.ndarray, ids: list[str], repeats: int = 4):
    """Graded attempts whose task means are ``means`` (the repeats spread symmetrically around them)."""
    offsets = np.linspace(-0.04, 0.04, repeats)
    return [(tid, r, float(np.clip(m + offsets[r], 0.0, 1.0))) for tid, m in zip(ids, means) for r in range(repeats)]


@pytest.mark.parametrize("seed", range(4))
def test_pair_figures_clustered_are_the_cluster_robust_t_on_the_task_differences(seed):
    a, b, groups = clustered_data(seed)
    a, b = np.clip(a, 0.05, 0.95), np.clip(b, 0.05, 0.95)  # repeats stay inside [0, 1]: the task means are a, b
    ids = [f"t{i:03d}" for i in range(len(a))]
    clustering = Clustering(by="template", of={t: f"c{g}" for t, g in zip(ids, groups)})
    p = pair_stats("a", _records(a, ids), "b", _records(b, ids), ids, clusters=clustering)
    from scipy.stats import t

    se, df = cr2_se(b - a, groups), cr2_df_by_hand(list(groups))
    c = len(set(groups.tolist()))
    assert p.n_clusters == c and p.cluster_by == "template"
    assert p.se == pytest.approx(se, rel=1e-9)
    assert p.cluster_df == pytest.approx(df, rel=1e-9) and p.df == p.cluster_df and df < c - 1
    assert f"({c} clusters, {df:.3g} df)" in p.method and "(CR2)" in p.method and "Bell-McCaffrey" in p.method
    assert "never narrower than the CR2 t interval on the task differences" in p.method
    # the interval is the hybrid written out with the CR2 variances and t on the Bell-McCaffrey df, never
    # narrower than the CR2 t interval on the differences ...
    d = float(np.mean(b - a))
    crit = float(t.ppf(0.975, df))
    low, high = d - crit * se, d + crit * se
    mover_low, mover_high = clustered_mover_by_hand(list(a), list(b), list(groups))
    assert (p.ci_low, p.ci_high) == pytest.approx((min(mover_low, low), max(mover_high, high)), abs=1e-9)
    # ... which in the middle of the range is the CR2 t interval on the differences up to Wilson's shape (a few
    # percent of its width at these effective sample sizes), and its test the CR2 t test on those df
    assert p.p_value is not None and p.ci_low is not None and p.ci_high is not None
    assert p.ci_low == pytest.approx(low, abs=0.06 * (high - low)) and p.ci_high == pytest.approx(
        high, abs=0.06 * (high - low)
    )
    assert p.p_value == pytest.approx(2 * t.sf(abs(d) / se, df), abs=0.06)
    assert (p.p_value < 0.05) == (p.ci_low > 0 or p.ci_high < 0)
    # the selector's standard error too, and its interval's critical value on the same df
    sb = selector_stats("b", _records(b, ids), ids, clusters=clustering)
    assert sb.se == pytest.approx(cr2_se(b, groups), rel=1e-9) and sb.n_clusters == c
    assert f"({c} clusters, {df:.3g} df)" in sb.method
    assert (sb.ci_low, sb.ci_high) == pytest.approx(clustered_selector_by_hand(list(b), list(groups)), abs=1e-9)


def test_clustering_with_shared_effects_widens_and_every_task_its_own_cluster_changes_nothing():
    a, b, groups = clustered_data(7, clusters=10, shared=0.2)
    k = np.full(len(a), 3)
    plain = pair_interval(a, b, k, k, False, False, 0.0, 1.0)
    own = pair_interval(a, b, k, k, False, False, 0.0, 1.0, clusters=np.arange(len(a)))
    clustered = pair_interval(a, b, k, k, False, False, 0.0, 1.0, clusters=groups)
    assert plain is not None and own is not None and clustered is not None
    assert (own.low, own.high) == pytest.approx((plain.low, plain.high), abs=1e-12)
    assert clustered.high - clustered.low > 1.5 * (plain.high - plain.low)
    assert pair_p_value(a, b, k, k, False, False, 0.0, 1.0, clusters=np.arange(len(a))) == pytest.approx(
        pair_p_value(a, b, k, k, False, False, 0.0, 1.0), rel=1e-9
    )
    # the power figures use the Bell-McCaffrey degrees of freedom; tasks needed is not projected (clusters decide)
    ids = [f"t{i}" for i in range(len(a))]
    clustering = Clustering(by="f", of={t: str(g) for t, g in zip(ids, groups)})
    p = pair_stats("a", _records(np.clip(a, 0.05, 0.95), ids), "b", _records(np.clip(b, 0.05, 0.95), ids), ids,
                   clusters=clustering)  # fmt: skip
    from scipy.stats import t

    assert p.ci_low is not None and p.ci_high is not None and p.mean_diff is not None and p.se is not None
    half = p.ci_high - p.mean_diff if p.mean_diff < 0 else p.mean_diff - p.ci_low
    df = cr2_df_by_hand(list(groups))
    assert p.se == pytest.approx(cr2_se(np.clip(b, 0.05, 0.95) - np.clip(a, 0.05, 0.95), groups), rel=1e-9)
    assert p.mde == pytest.approx(half + float(t.ppf(0.8, df)) * p.se, rel=1e-9) and df < 9
    # the power at delta: the chance the interval's edge lands beyond 0, T_df((|delta| - h) / se)
    below = p.mean_diff - p.ci_low  # the side a gain must clear
    assert p.power_at(0.2) == pytest.approx(float(t.cdf((0.2 - below) / p.se, df)), rel=1e-9)
    assert p.tasks_needed(0.1) is None and p.repeats_needed(0.1) is None
    assert p.mde_method.endswith("clustered: se the CR2 cluster-robust one, n - 1 the Bell-McCaffrey df")
    # unclustered, the pair is dumped without the clustered key, as before
    plain_pair = pair_stats("a", _records(np.clip(a, 0.05, 0.95), ids), "b", _records(np.clip(b, 0.05, 0.95), ids), ids)
    assert "cluster_df" not in plain_pair.model_dump() and p.model_dump()["cluster_df"] == p.cluster_df


def test_clusters_by_field_and_its_bad_input():
    tasks: dict[str, dict[str, object]] = {
        "a": {"id": "a", "tpl": "x", "tags": ["p"]},
        "b": {"id": "b", "tpl": "x", "tags": ["q"]},
        "c": {"id": "c", "tpl": "y"},
        "d": {"id": "d"},
    }
    ids = ["a", "b", "c", "d"]
    cl = clusters_by_field(tasks, ids, "tpl")
    assert cl.codes(ids).tolist() == [0, 0, 1, 2] and cl.count(ids) == 3  # d, without the field: its own cluster
    with pytest.raises(
        InputError, match=r"--cluster-by 'colour': no test task has that field \(they have: tags, tpl\)"
    ):
        clusters_by_field(tasks, ids, "colour")
    with pytest.raises(InputError, match="every test task is in one cluster"):
        clusters_by_field(tasks, ["a", "b"], "tpl")
    with pytest.raises(InputError, match="task a: the field holds a list"):
        clusters_by_field(tasks, ids, "tags")
    # the recorded field is the default only when every evaluation recorded the same one
    recorded = resolve_clustering(tasks, ids, None, ["tpl", "tpl"])
    assert recorded is not None and recorded.by == "tpl"
    assert resolve_clustering(tasks, ids, None, ["tpl", None]) is None
    assert resolve_clustering(tasks, ids, None, []) is None


# ---------------------------------------------------------------------------------------------------- the commands


@pytest.fixture(scope="module")
def clustered_demo(demo_template, tmp_path_factory) -> Path:
    from hermit_tui.cli import main

    dest = tmp_path_factory.mktemp("clusters") / "demo"
    shutil.copytree(demo_template, dest, symlinks=True)
    repair_worktree(demo_template, dest)
    config = str(dest / "run.yaml")
    code = main(["eval", "--config", config, "--adapter", "none", "--adapter", "final", "--cluster-by", "category",
                 *FAST])  # fmt: skip
    assert code == 0
    return dest


def _cli(capsys, *args: str) -> tuple[int, str, str]:
    from hermit_tui.cli import main

    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def _task_means(ws: Path, label: str) -> dict[str, float]:
    scores: dict[str, list[float]] = {}
    for line in (ws / "runs/demo/eval" / label / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        scores.setdefault(r["id"], []).append(r["judge"]["score"] if r["judge"] else 0.0)
    return {k: float(np.mean(v)) for k, v in scores.items()}


def test_eval_records_the_clusters_and_report_and_gate_use_them(clustered_demo, capsys):
    ws = clustered_demo
    summary = json.loads((ws / "runs/demo/eval/final/summary.json").read_text())
    assert summary["fingerprint"]["cluster_by"] == "category" and len(summary["fingerprint"]["clusters_sha256"]) == 64
    assert "cluster_by" not in (ws / "run.yaml").read_text()  # run.yaml untouched
    code, js, _ = _cli(capsys, "report", "--config", str(ws / "run.yaml"), "--format", "json")
    data = json.loads(js)
    assert code == 0 and data["cluster_by"] == "category" and data["n_clusters"] == 8
    pair = next(p for p in data["pairs"] if (p["a"], p["b"]) == ("none", "final"))
    # by hand from the files: the task differences and the tasks' categories, through the CR2 sandwich
    test_ids = (ws / "test.txt").read_text().split()
    rows = {json.loads(x)["id"]: json.loads(x) for x in (ws / "tasks.jsonl").read_text().splitlines()}
    ma, mb = _task_means(ws, "none"), _task_means(ws, "final")
    diffs = [mb[t] - ma[t] for t in test_ids]
    cats = [rows[t]["category"] for t in test_ids]
    df = cr2_df_by_hand(cats)
    assert pair["se"] == pytest.approx(cr2_se(diffs, cats), rel=1e-9) and pair["n_clusters"] == 8
    assert pair["cluster_df"] == pytest.approx(df, rel=1e-9)
    assert f"clustered by category (8 clusters, {df:.3g} df)" in pair["method"]
    # unclustered on request of another field gives other figures; the Markdown names the clustering
    code, md, _ = _cli(capsys, "report", "--config", str(ws / "run.yaml"))
    method = "bias-reduced cluster-robust (CR2) standard error, Student t on the Bell-McCaffrey degrees of freedom"
    assert f"| clustered by | category: 8 clusters of the test tasks; {method} |" in md
    code, html, _ = _cli(capsys, "report", "--config", str(ws / "run.yaml"), "--format", "html")
    assert f"clustered by</th><td>category: 8 clusters of the test tasks; {method}</td>" in html
    code, out, _ = _cli(capsys, "gate", "--config", str(ws / "run.yaml"), "--require", "no-regression", "--only")
    assert f"clustered by category (8 clusters; CR2 standard error, t on {df:.3g} Bell-McCaffrey df)" in out


def test_cluster_by_bad_input_is_one_line_and_exit_2(clustered_demo, tmp_path, capsys):
    ws = clustered_demo
    for command in ("report", "gate"):
        code, _, err = _cli(capsys, command, "--config", str(ws / "run.yaml"), "--cluster-by", "colour")
        assert code == 2 and "--cluster-by 'colour': no test task has that field (they have: category, input)" in err
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    # one cluster: every category the same, in a copy; eval refuses before anything runs
    dest = tmp_path / "one"
    shutil.copytree(ws, dest, symlinks=True)
    repair_worktree(ws, dest)
    rows = [json.loads(x) for x in (dest / "tasks.jsonl").read_text().splitlines()]
    (dest / "tasks.jsonl").write_text("".join(json.dumps(r | {"category": "all"}) + "\n" for r in rows))
    before = sorted(p.name for p in (dest / "runs/demo/eval").iterdir())
    code, _, err = _cli(capsys, "eval", "--config", str(dest / "run.yaml"), "--adapter", "none", "--adapter",
                        "root", "--cluster-by", "category", *FAST)  # fmt: skip
    assert code == 2 and "--cluster-by category: every test task is in one cluster ('all')" in err
    assert len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in (dest / "runs/demo/eval").iterdir()) == before
    code, _, err = _cli(capsys, "report", "--config", str(dest / "run.yaml"))  # the recorded field: one cluster now
    assert code == 2 and "every test task is in one cluster" in err


def test_the_compare_screen_clusters_by_the_recorded_field_as_the_report_does(clustered_demo, capsys):
    from hermit_tui.core.records.results import read_results, read_summary
    from hermit_tui.dashboard.screens.compare_figures import compare_selectors, pair_text, recorded_clusters, with_pair

    ws = clustered_demo
    test_ids = (ws / "test.txt").read_text().split()
    rows = {json.loads(x)["id"]: json.loads(x) for x in (ws / "tasks.jsonl").read_text().splitlines()}
    summaries = [read_summary(ws / "runs/demo/eval" / label / "summary.json") for label in ("none", "final")]
    clusters, note = recorded_clusters(rows, test_ids, summaries)
    assert clusters is not None and clusters.by == "category" and note is None
    assert recorded_clusters(rows, test_ids, [summaries[0], None]) == (None, None)  # one without the record

    def records(label: str):
        return read_results(ws / "runs/demo/eval" / label / "results.jsonl").records

    ra, rb = records("none"), records("final")
    c = with_pair(compare_selectors("none", ra, "final", rb, test_ids, 1.0, clusters), ra, rb, test_ids, 1.0, clusters)
    ma, mb = _task_means(ws, "none"), _task_means(ws, "final")
    fit = cluster_fit([mb[t] - ma[t] for t in test_ids], [rows[t]["category"] for t in test_ids])
    pair = c.pair
    assert pair is not None
    assert pair.se == pytest.approx(fit.bse[0], rel=1e-9)
    assert "clustered by category: 8 clusters" in pair_text(pair).plain
    from hermit_tui.dashboard.screens.compare_figures import needed_text

    assert "not projected: the figures are clustered by category (8 clusters)" in needed_text(c, 0.1)
    code, js, _ = _cli(capsys, "report", "--config", str(ws / "run.yaml"), "--format", "json")
    report_pair = next(p for p in json.loads(js)["pairs"] if (p["a"], p["b"]) == ("none", "final"))
    assert (pair.ci_low, pair.ci_high) == pytest.approx((report_pair["ci_low"], report_pair["ci_high"]))


# ---------------------------------------------------------------------------------------------------- --cluster-file


def test_clusters_from_a_file_and_its_bad_input(tmp_path):
    from hermit_tui.core.stats.clusters import FILE_PREFIX, cluster_option, clusters_from_file, file_spec

    ids = ["a", "b", "c", "d"]
    csv_file = tmp_path / "clusters.csv"
    csv_file.write_text("id,cluster\na,x\nb,x\nc,y\ntrain-1,z\n")  # d unnamed: its own cluster; train-1 ignored
    cl = clusters_from_file(file_spec(csv_file), ids)
    assert cl.codes(ids).tolist() == [0, 0, 1, 2] and cl.count(ids) == 3
    assert cl.by == FILE_PREFIX + str(csv_file.resolve())
    tsv = tmp_path / "c.tsv"
    tsv.write_text("a\t1\nb\t1\nc\t2\nd\t2\n")  # no header, tab-separated
    assert clusters_from_file(str(tsv), ids).codes(ids).tolist() == [0, 0, 1, 1]
    js = tmp_path / "c.json"
    js.write_text(json.dumps({"a": "x", "b": "y", "c": "y", "d": None}))
    assert clusters_from_file(str(js), ids).codes(ids).tolist() == [0, 1, 1, 2]
    # the same mapping from a field or a file clusters alike (the codes) but records where it came from
    field = clusters_by_field({t: {"id": t, "tpl": v} for t, v in zip(ids, "xxyz")}, ids, "tpl")
    assert field.codes(ids).tolist() == cl.codes(ids).tolist() and field.digest() != cl.digest()
    # through the spec, clusters_by_field reads the file (what report and gate do with a recorded spec)
    assert clusters_by_field({}, ids, file_spec(csv_file)).of == cl.of

    def bad(text: str, name: str = "bad.csv") -> str:
        path = tmp_path / name
        path.write_text(text)
        with pytest.raises(InputError) as exc:
            clusters_from_file(str(path), ids)
        return str(exc.value)

    assert "line 2: 3 columns" in bad("a,x\nb,x,extra\n")
    assert "line 3: task 'a' appears twice (first: line 1)" in bad("a,x\nb,y\na,z\n")
    assert "names none of the 4 test tasks" in bad("q,x\nr,y\n")
    assert "every test task is in one cluster" in bad("a,x\nb,x\nc,x\nd,x\n")
    assert "not JSON" in bad("{", "bad.json") and "one object" in bad("[1]", "list.json")
    assert "a cluster is one value" in bad(json.dumps({"a": ["x"], "b": "y"}), "nested.json")
    with pytest.raises(InputError, match="cannot read it"):
        clusters_from_file(str(tmp_path / "missing.csv"), ids)
    with pytest.raises(InputError, match="--cluster-by and --cluster-file both name the clusters"):
        cluster_option("tpl", str(csv_file))
    assert cluster_option(None, str(csv_file)) == file_spec(csv_file) and cluster_option("tpl", None) == "tpl"


def test_eval_records_a_cluster_file_and_report_and_gate_read_it_again(clustered_demo, tmp_path, capsys):
    """The demo's categories written to a file: eval --cluster-file records the file in the fingerprint, and the
    report's pair standard error is statsmodels' cluster-robust one by those clusters; --cluster-by with it is
    refused."""
    ws = tmp_path / "demo"
    shutil.copytree(clustered_demo, ws, symlinks=True)
    repair_worktree(clustered_demo, ws)
    shutil.rmtree(ws / "runs/demo/eval")
    test_ids = (ws / "test.txt").read_text().split()
    groups = {t: f"g{i % 5}" for i, t in enumerate(test_ids)}  # 5 clusters unrelated to the categories
    cfile = tmp_path / "groups.csv"
    cfile.write_text("id,cluster\n" + "".join(f"{t},{g}\n" for t, g in groups.items()))
    code, _, err = _cli(capsys, "eval", "--config", str(ws / "run.yaml"), "--adapter", "none", "--adapter", "final",
                        "--cluster-file", str(cfile), *FAST)  # fmt: skip
    assert code == 0, err
    summary = json.loads((ws / "runs/demo/eval/final/summary.json").read_text())
    assert summary["fingerprint"]["cluster_by"] == f"file:{cfile.resolve()}"
    code, js, _ = _cli(capsys, "report", "--config", str(ws / "run.yaml"), "--format", "json")
    data = json.loads(js)
    assert code == 0 and data["n_clusters"] == 5
    pair = next(p for p in data["pairs"] if (p["a"], p["b"]) == ("none", "final"))
    ma, mb = _task_means(ws, "none"), _task_means(ws, "final")
    cl = [groups[t] for t in test_ids]
    assert pair["se"] == pytest.approx(cr2_se([mb[t] - ma[t] for t in test_ids], cl), rel=1e-9)
    code, out, _ = _cli(capsys, "gate", "--config", str(ws / "run.yaml"), "--require", "no-regression", "--only")
    assert "(5 clusters; CR2 standard error, t on " in out
    # the report's own --cluster-file, and both options together
    code, js, _ = _cli(capsys, "report", "--config", str(ws / "run.yaml"), "--format", "json",
                       "--cluster-file", str(cfile))  # fmt: skip
    assert code == 0 and json.loads(js)["n_clusters"] == 5
    for command in ("report", "gate"):
        code, _, err = _cli(capsys, command, "--config", str(ws / "run.yaml"), "--cluster-by", "category",
                            "--cluster-file", str(cfile))  # fmt: skip
        assert code == 2 and "give one of the two" in err and len(err.strip().splitlines()) == 1
    # the file edited after the launch: report and gate refuse the recorded clusters (one line, exit 2) rather than
    # cluster otherwise than the launch did; naming the file again clusters by it as it is now (3 clusters)
    before = cfile.read_text()
    cfile.write_text("id,cluster\n" + "".join(f"{t},h{i % 3}\n" for i, t in enumerate(test_ids)))
    for command in ("report", "gate"):
        code, _, err = _cli(capsys, command, "--config", str(ws / "run.yaml"))
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert "--cluster-file" in err and str(cfile)[-20:] in err and "not the ones the evaluations" in err
    code, js, _ = _cli(capsys, "report", "--config", str(ws / "run.yaml"), "--format", "json",
                       "--cluster-file", str(cfile))  # fmt: skip
    assert code == 0 and json.loads(js)["n_clusters"] == 3
    # the compare screen cannot refuse: it shows the figures unclustered and says why, in the report's words
    from hermit_tui.core.records.results import read_summary
    from hermit_tui.dashboard.screens.compare_figures import recorded_clusters

    rows = {json.loads(x)["id"]: json.loads(x) for x in (ws / "tasks.jsonl").read_text().splitlines()}
    summaries = [read_summary(ws / "runs/demo/eval" / label / "summary.json") for label in ("none", "final")]
    clusters, note = recorded_clusters(rows, test_ids, summaries)
    assert clusters is None and note is not None
    assert note.startswith("not clustered: --cluster-file") and "not the ones the evaluations" in note
    assert "pass --cluster-file" not in note  # an option is no remedy on a screen
    assert cfile.read_text() != before  # nothing rewrote the user's file
    cfile.write_text(before)  # as it was at the launch: clustered again
    clusters, note = recorded_clusters(rows, test_ids, summaries)
    assert clusters is not None and clusters.by == f"file:{cfile.resolve()}" and note is None


@pytest.mark.parametrize("seed", range(3))
def test_the_bell_mccaffrey_df_is_the_satterthwaite_df_of_the_cr2_quadratic_form(seed):
    from stats_by_hand import cr2_cov_by_hand, satterthwaite_df_by_hand

    from hermit_tui.core.stats.clusters import bell_mccaffrey_df, bias_reduced_var

    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 7, 6)
    groups = np.repeat(np.arange(6), sizes)
    y = rng.normal(0, 1, len(groups))
    assert bias_reduced_var(y, groups) == pytest.approx(cr2_cov_by_hand(list(y), list(y), list(groups)), rel=1e-10)
    assert bell_mccaffrey_df(sizes) == pytest.approx(satterthwaite_df_by_hand(list(groups)), rel=1e-9)
    assert bell_mccaffrey_df(sizes) < 5  # unequal sizes: fewer than C - 1


def test_the_cr2_variance_and_df_of_a_tiny_data_set_by_hand_arithmetic():
    """x = 0, 1 | 1, 0 | 1 (clusters of 2, 2, 1 tasks): mean 0.6, residual sums S = -0.2, -0.2, 0.4, 1 - n_c / N =
    0.6, 0.6, 0.8, so V = (0.04 / 0.6 + 0.04 / 0.6 + 0.16 / 0.8) / 25 = (1/3) / 25 = 1/75 (CR1: 3/2 x 0.24 / 25 =
    0.0144). G = [[2, -4/3, -1/sqrt(3)], [-4/3, 2, -1/sqrt(3)], [-1/sqrt(3), -1/sqrt(3), 1]]: tr G = 5, ||G||^2 =
    9 + 32/9 + 4/3 = 125/9, df = 25 / (125/9) = 1.8 (C - 1 = 2)."""
    x = np.array([0.0, 1.0, 1.0, 0.0, 1.0])
    groups = np.array([0, 0, 1, 1, 2])
    assert float(clustered_var(x, groups)) == pytest.approx(1 / 75, rel=1e-12)
    assert cluster_fit(x, groups).bse[0] ** 2 == pytest.approx(0.0144, rel=1e-12)  # CR1, for contrast
    assert cluster_df(groups) == pytest.approx(1.8, rel=1e-12) and bell_mccaffrey_df([2, 2, 1]) == pytest.approx(1.8)
    y = np.array([1.0, 1.0, 0.0, 0.0, 0.0])  # S = 1.2, -0.8, -0.4: (-0.24 / 0.6 + 0.16 / 0.6 - 0.16 / 0.8) / 25
    assert float(clustered_cov(x, y, groups)) == pytest.approx(-1 / 75, rel=1e-12)
