"""Synthetic reports for the HTML report's tests: any number of tasks, hostile task ids, made with the engine's own
statistics from seeded random scores (no workspace on disk needed)."""

from __future__ import annotations

import random

from hermit_tui.core.records.scores import tabulate
from hermit_tui.core.report.build import Report, SelectorReport
from hermit_tui.core.report.protocol import Check, TestReuse
from hermit_tui.core.stats.figures import default_pairs, pair_stats
from hermit_tui.core.stats.selector import selector_stats

HOSTILE = [
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(2)>',
    "a&amp;b </td></tr><tr><td>",
    "' onmouseover='alert(3)",
    "<svg onload=alert(4)>",
    "<!-- x -->",
    "</style><style>body{display:none}",
]
LABELS = ("none", "root", "final")
CHANCE = {"none": 0.3, "root": 0.5, "final": 0.7}


def synthetic_report(
    n_tasks: int,
    *,
    seed: int = 7,
    repeats: int = 3,
    hostile: bool = True,
    demo: bool = False,
    missing: int = 2,
    labels=LABELS,
    run_name: str = "synthetic",
) -> Report:
    """A report over ``n_tasks`` test tasks (the hostile ids among them when ``hostile``); ``missing`` tasks have
    no attempt by the last selector."""
    rng = random.Random(seed)
    ids = [f"task-{i:05d}" for i in range(n_tasks)]
    if hostile:
        ids[1 : 1 + len(HOSTILE)] = HOSTILE
    attempts = {}
    for label in labels:
        p = CHANCE.get(label, 0.5)
        skip = set(ids[-missing:]) if label == labels[-1] and missing else set()
        attempts[label] = [(tid, r, float(rng.random() < p)) for tid in ids if tid not in skip for r in range(repeats)]
    tables = {label: tabulate(attempts[label], ids, 1.0) for label in labels}
    stats = {label: selector_stats(label, tables[label], ids, 1.0) for label in labels}
    pairs = [pair_stats(a, tables[a], b, tables[b], ids, 1.0) for a, b in default_pairs(list(labels))]
    selectors = [
        SelectorReport(
            label=label,
            folder=f"/runs/{run_name}/eval/{label}",
            adapter=label,
            commit=None if label == "none" else f"{i:040x}",
            content_hash=None,
            written_by="hermit-tui",
            summary=None,
            fingerprint=None,
            stats=stats[label],
            errors=0,
            known_cost_usd=0.0,
            unknown_cost_attempts=0,
            smoke_limit=None,
            complete=True,
            retries=0,
            flags=[],
        )
        for i, label in enumerate(labels)
    ]
    warnings = (["Teaching demonstration: a synthetic report."] if demo else []) + [
        "A warning with <b>markup</b> & an id: " + HOSTILE[0]
    ]
    return Report(
        hermit_tui_version="0.0.test",
        config=f"/configs/{run_name}/run.yaml",
        run_name=run_name,
        run_dir=f"/runs/{run_name}",
        demo=demo,
        threshold=1.0,
        dataset_revision="not recorded",
        splits={"tasks": n_tasks, "train": 0, "val": 0, "test": n_tasks},
        comparable=True,
        differences=[],
        warnings=warnings,
        selectors=selectors,
        pairs=pairs,
        checks=[Check(level="warning", code="hostile", message="a check naming " + HOSTILE[1])],
        test_reuse=TestReuse(adapters=2, non_final=1, evaluations=2, other_split=0, seen=[], note=None),
        training=None,
        test_ids=ids,
    )


__all__ = ["HOSTILE", "synthetic_report"]
