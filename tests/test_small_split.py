"""Issue 19's "done when": on the demo with a 4-task test split, no interval anywhere (report, HTML report, card,
compare screen and its plots) leaves the possible range, for a fixed launch and a stop-when-decided one: a mean
lies in [0, 1], a difference in [-1, 1]."""

from __future__ import annotations

import json
import re

import pytest

from hermit_tui.cli import main
from hermit_tui.core.publish.plan import plan_publish
from hermit_tui.core.workspace.config import load_config
from hermit_tui.core.workspace.tasks import load_tasks

FAST = "agent.params.latency_scale=0"
LABELS = ("none", "root", "final")


def within(low, high, lo, hi, what) -> None:
    assert low is not None and high is not None, what
    assert lo - 1e-12 <= low <= high <= hi + 1e-12, (what, low, high)


@pytest.mark.parametrize("sequential", [False, True], ids=["fixed", "stop-when-decided"])
def test_no_interval_leaves_the_range_on_a_four_task_split(demo_config, capsys, sequential):
    test_txt = demo_config.parent / "test.txt"
    ids = [line for line in test_txt.read_text().splitlines() if line.strip() and not line.startswith("#")][:4]
    test_txt.write_text("\n".join(ids) + "\n")
    extra = ["--stop-when-decided"] if sequential else []
    code = main(
        [
            "eval",
            "--config",
            str(demo_config),
            *(a for s in LABELS for a in ("--adapter", s)),
            "--no-card",
            *extra,
            FAST,
            "eval.repeats=4",
        ]
    )
    summaries = json.loads(capsys.readouterr().out)
    assert code == 0 and all(s["tasks"] == 4 for s in summaries.values())
    if sequential:
        assert all(s["sequential"]["max_rounds"] == 4 for s in summaries.values())
        for label in ("root", "final"):
            low, high = summaries[label]["sequential"]["interval"]
            within(low, high, -1, 1, f"{label}'s sequential interval")

    # the report (JSON: every figure the Markdown and HTML render)
    assert main(["report", "--config", str(demo_config), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    for s in report["selectors"]:
        st = s["stats"]
        within(st["ci_low"], st["ci_high"], 0, 1, f"{s['label']}'s mean")
        once_low, once_high = st["solved_once_ci"]
        within(once_low, once_high, 0, 1, f"{s['label']}'s solved once")
    assert report["pairs"]
    for p in report["pairs"]:
        within(p["ci_low"], p["ci_high"], -1, 1, f"{p['b']} - {p['a']}")
        assert (p["sequential"] is not None) == (sequential and p["a"] == "none")
    assert main(["report", "--config", str(demo_config), "--format", "html"]) == 0
    html = capsys.readouterr().out
    found = re.findall(r'data-ci-low="([^"]+)" data-ci-high="([^"]+)"', html)
    assert len(found) == len(report["selectors"]) + len(report["pairs"])
    for low, high in found:
        within(float(low), float(high), -1, 1, "an interval of the HTML report")

    # the card
    plan = plan_publish(load_config(demo_config, [FAST, "eval.repeats=4"]))
    assert not plan.refusals
    cells = re.findall(r"\| (\d\.\d{3}) \[(-?\d\.\d{3}), (-?\d\.\d{3})\] \|", plan.table)
    assert len(cells) == 3
    for mean, low, high in cells:
        within(float(low), float(high), 0, 1, "a card row")
        assert float(low) <= float(mean) <= float(high)
    for low, high in re.findall(
        r"\[(-?\d\.\d{3}), (-?\d\.\d{3})\]: (?:an improvement|a regression|undecided)", plan.table
    ):
        within(float(low), float(high), -1, 1, "a card decision")
    assert bool(plan.sequential) == sequential

    # the compare screen's figures and plot series (computed as the screen computes them)
    from hermit_tui.core.records.folders import list_evaluations
    from hermit_tui.dashboard.screens.compare_figures import compare
    from hermit_tui.dashboard.widgets.boundary import with_sequential

    stored = {s.label: s for s in list_evaluations(load_config(demo_config).run_dir, include_archived=False)}
    test_ids = load_tasks(load_config(demo_config)).test_ids
    for a, b in (("none", "final"), ("root", "final"), ("none", "root")):
        ra, rb = stored[a].load_results().records, stored[b].load_results().records
        c = with_sequential(
            compare(a, ra, b, rb, test_ids), (stored[a].summary, stored[b].summary), ra, rb, test_ids, None
        )
        for s in (c.sa, c.sb):
            within(s.ci_low, s.ci_high, 0, 1, f"compare: {s.label}")
        within(c.pair.ci_low, c.pair.ci_high, -1, 1, f"compare: {b} - {a}")
        assert (c.sequential is not None) == (sequential and a == "none")
        for label, points in c.running.items():
            for pt in points:
                if pt.low is not None:
                    within(pt.low, pt.high, 0, 1, f"running plot of {label}")
