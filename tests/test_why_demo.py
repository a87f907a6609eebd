"""The demo shows why it changed with something true: its adapters/unit-table exports a tool that final does not,
and the simulated agent calls it. Which attempts call it is worked out here from the demo pipeline's own draws (the
fixture, not the code under test); the diff, the divergence and the usage split are what core.why makes of it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hermit_tui.core.run.runner import EvalRun
from hermit_tui.core.why.pair import pair_why
from hermit_tui.core.workspace.config import load_config
from hermit_tui.core.workspace.tasks import load_tasks
from hermit_tui.demo import VARIANT, VARIANT_TOOL

REPEATS = 3


def load_module(path: Path):
    import types

    module = types.ModuleType("demo_pipeline_for_test")
    module.__file__ = str(path)
    exec(compile(path.read_text(), str(path), "exec"), module.__dict__)
    return module


@pytest.fixture(scope="module")
def evaluated(demo_template, tmp_path_factory):
    from demo_copies import copy_workspace

    run_yaml = copy_workspace(demo_template, tmp_path_factory.mktemp("why-demo") / "demo")
    config = load_config(run_yaml, ["agent.params.latency_scale=0"])
    EvalRun(config, ["final", VARIANT], update_card=False).run_sync()
    return config


def expected_lookups(config) -> set[tuple[str, int]]:
    """(task, repeat) of the variant's attempts that call the tool: the pipeline's own rule on its own draws."""
    base = Path(config.base)
    pipeline = load_module(base / "pipeline.py")
    text = (base / VARIANT / "ADAPTER.md").read_text()
    tasks = {r["id"]: r for r in map(json.loads, (base / "tasks.jsonl").read_text().splitlines()) if r}
    out = set()
    for tid in load_tasks(config).test_ids:
        for r in range(1, REPEATS + 1):
            try:
                if pipeline.attempt(tasks[tid], text, r, [VARIANT_TOOL])["looked_up"]:
                    out.add((tid, r))
            except Exception:  # the demo's task that always makes the pipeline fail
                continue
    return out


def test_the_variant_exports_a_tool_final_does_not_and_the_agent_uses_it(evaluated):
    config = evaluated
    looked = expected_lookups(config)
    assert looked and {t for t, _ in looked} <= {"unit-04", "unit-05"}
    pair = pair_why(config, "final", VARIANT, list(load_tasks(config).test_ids))
    assert pair.diff is not None
    assert [(e.kind, e.name, e.change) for e in pair.diff.exports] == [("tool", VARIANT_TOOL, "added")]
    assert sorted(f.path for f in pair.diff.files) == ["adapter.yaml", "tools.py"]  # ADAPTER.md is final's
    final, variant = pair.use
    assert not final.has_adapter  # final exports its context alone
    assert variant.has_adapter and variant.used == len(looked)
    assert variant.usage_by_export == {f"tool {VARIANT_TOOL}": len(looked)}
    tool = next(t for t in variant.tools if t.tool == VARIANT_TOOL)
    assert tool.calls == len(looked) and VARIANT_TOOL not in {t.tool for t in final.tools}
    # the agents part ways at their first step exactly where the tool was called, and nowhere else
    assert pair.divergence.get("1") == len(looked)
    assert sum(n for k, n in pair.divergence.items() if k not in ("1", "never")) == 0
    assert pair.usage_split is not None
    split = {g.group: g for g in pair.usage_split.groups}
    assert split["used"].attempts == len(looked)
    assert "not a causal effect" in pair.usage_split.note


def test_a_small_evaluations_steps_are_read_once_for_every_pair_it_is_in(evaluated, monkeypatch):
    """The report's pairs share their selectors: a small evaluation's compact steps are read once and handed to
    each pair (issue 30), with the same summaries as when every pair reads them again (STEPS_KEPT 0)."""
    from hermit_tui.core.why import pair as pair_module
    from hermit_tui.core.workspace.selectors import label_of
    from hermit_tui.core.workspace.tasks import load_tasks

    config = evaluated
    variant = label_of(VARIANT, config)
    labels = {"final": "final", variant: VARIANT}
    pairs = [("final", variant), (variant, "final")]
    test_ids = load_tasks(config).test_ids
    calls: list[int] = []
    from hermit_tui.core.why.align import steps_of as real

    def counted(messages, *, pretty=True):
        calls.append(1)
        return real(messages, pretty=pretty)

    monkeypatch.setattr(pair_module, "steps_of", counted)
    kept = pair_module.pairs_why(config, labels, pairs, test_ids)
    once = len(calls)  # each attempt's steps (test split, with a transcript) once, not once per pair
    calls.clear()
    monkeypatch.setattr(pair_module, "STEPS_KEPT", 0)
    again = pair_module.pairs_why(config, labels, pairs, test_ids)
    assert once > 0 and len(calls) == 2 * once
    assert [p.model_dump() for p in kept] == [p.model_dump() for p in again]
    assert kept[0].paired_attempts > 0
