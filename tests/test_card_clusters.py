"""The card of evaluations launched with clusters (``eval --cluster-by``): its intervals are clustered as the
launch's (and the report's by default), the note says by what and on how many clusters, and a mapping that
changed since the launch refuses the publish rather than card figures clustered otherwise (issue 25, item 5)."""

from __future__ import annotations

import json
import re

from hermit_tui.cli import main
from hermit_tui.core.publish.plan import plan_publish
from hermit_tui.core.workspace.config import load_config

FAST = ["agent.params.latency_scale=0.01"]


def card_rows(table: str) -> dict[str, tuple[float, float, float]]:
    """Adapter -> (mean, CI low, CI high) from the card's Markdown table."""
    out = {}
    for m in re.finditer(r"^\| (\w+) \| [^|]+ \| \d+ \| \d+ \| ([\d.]+) \[([\d.]+), ([\d.]+)\] \|", table, re.M):
        out[m.group(1)] = (float(m.group(2)), float(m.group(3)), float(m.group(4)))
    return out


def test_the_card_clusters_its_intervals_as_final_was_launched(demo_config, capsys):
    adapters = ["--adapter", "none", "--adapter", "final", "--no-card"]
    assert main(["eval", "--config", str(demo_config), *adapters, *FAST]) == 0
    capsys.readouterr()
    plain = plan_publish(load_config(demo_config))
    assert not plain.refusals and "clustered by" not in plain.table
    assert "with the task as the unit of sampling" in plain.table
    before = card_rows(plain.table)

    assert main(["eval", "--config", str(demo_config), *adapters, "--cluster-by", "category", *FAST]) == 0
    capsys.readouterr()
    clustered = plan_publish(load_config(demo_config))
    assert not clustered.refusals, clustered.refusals
    after = card_rows(clustered.table)
    tasks = [json.loads(x) for x in (demo_config.parent / "tasks.jsonl").read_text().splitlines()]
    test_ids = set((demo_config.parent / "test.txt").read_text().split())
    categories = {t["category"] for t in tasks if t["id"] in test_ids}
    assert f"clustered by category ({len(categories)} clusters): bias-reduced cluster-robust (CR2)" in clustered.table
    assert "with the cluster of tasks as the unit of sampling" in clustered.table
    assert set(after) == set(before) == {"none", "final"}
    assert main(["report", "--config", str(demo_config), "--format", "json"]) == 0
    report = {s["label"]: s for s in json.loads(capsys.readouterr().out)["selectors"]}
    for name in after:  # the same draws: the same means; the intervals are the report's, clustered
        assert after[name][0] == before[name][0]
        assert after[name][1:] != before[name][1:]
        stats = report[name]["stats"]
        assert stats["n_clusters"] == len(categories)
        assert after[name][1:] == (round(stats["ci_low"], 3), round(stats["ci_high"], 3))


def test_a_cluster_mapping_changed_since_the_launch_refuses_the_publish(demo_config, capsys):
    args = ["--adapter", "none", "--adapter", "final", "--no-card", "--cluster-by", "category"]
    assert main(["eval", "--config", str(demo_config), *args, *FAST]) == 0
    capsys.readouterr()
    path = demo_config.parent / "tasks.jsonl"
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    first = (demo_config.parent / "test.txt").read_text().split()[0]
    for r in rows:
        if r["id"] == first:
            r["category"] = "moved"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    plan = plan_publish(load_config(demo_config))
    assert any(
        r.startswith("the card's intervals cannot be clustered as final was launched: --cluster-by category:")
        and "not the ones the evaluations were launched with" in r
        for r in plan.refusals
    ), plan.refusals
    assert main(["publish", "--config", str(demo_config)]) == 2
    err = capsys.readouterr().err
    assert "cannot publish: the card's intervals cannot be clustered as final was launched" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_a_report_of_evaluations_launched_with_and_without_clusters_says_why_it_is_not_clustered(demo_config, capsys):
    base = ["eval", "--config", str(demo_config), "--no-card", *FAST]
    assert main([*base, "--adapter", "none", "--adapter", "final", "--cluster-by", "category"]) == 0
    assert main([*base, "--adapter", "root"]) == 0
    capsys.readouterr()
    assert main(["report", "--config", str(demo_config), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["cluster_by"] is None
    assert (
        "Not clustered: none, final launched with --cluster-by category; root without clusters: every figure takes "
        "the test tasks as independent (--cluster-by category clusters them all)"
    ) in report["warnings"]
    assert main(["report", "--config", str(demo_config), "--format", "json", "--cluster-by", "category"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["cluster_by"] == "category" and not any("Not clustered" in w for w in report["warnings"])
    assert (
        main(["report", "--config", str(demo_config), "--format", "json", "--adapter", "none", "--adapter", "final"])
        == 0
    )
    report = json.loads(capsys.readouterr().out)
    assert report["cluster_by"] == "category" and not any("Not clustered" in w for w in report["warnings"])


def test_the_note_names_a_cluster_file_by_its_name_and_gives_no_hint_for_two_clusterings():
    from hermit_tui.core.stats.clusters import FILE_PREFIX, unclustered_note

    assert unclustered_note(["a", "b"], [None, None]) is None
    note = unclustered_note(["a", "b", "c"], [FILE_PREFIX + "/x/y/groups.csv", "category", None])
    assert note == (
        "Not clustered: a launched with --cluster-file groups.csv; b launched with --cluster-by category; c without "
        "clusters: every figure takes the test tasks as independent"
    )
