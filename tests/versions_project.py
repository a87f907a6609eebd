"""Evaluations written by hand into a copy of the demo's run folder, for "one task through every version": none,
root, two checkpoints (step 2 written as ``hermit eval`` writes, step 10), final (the commit of step 10) and its
archive, and an adapter directory evaluated on another split. Every score is chosen here; the tests compute what they
expect from ``EVALS`` with plain arithmetic."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from hermit_tui.core.workspace.config import load_config
from hermit_tui.core.workspace.tasks import load_tasks

TASK = "unit-04"
OTHER = "arith-04"


def rec(task: str, repeat: int, status: str, score: float) -> dict:
    return {
        "repeat": repeat,
        "id": task,
        "status": status,
        "error": None if status == "ok" else "boom",
        "output": "x",
        "judge": {"score": score, "feedback": "", "extra": {}},
        "cost_usd": 0.001,
        "wall_s": 0.1,
        "api_speed": None,
        "tokens": 10,
        "log": None,
    }


EVALS = {  # (folder label, summary adapter, commit, archived, written by hermit, attempts)
    "none": ("none", "none", None, None, False, {TASK: [("ok", 0.0), ("ok", 0.5)], OTHER: [("ok", 1.0)] * 2}),
    "root": ("root", "root", "a" * 40, None, False, {TASK: [("ok", 1.0), ("error", 0.0)], OTHER: [("ok", 0.0)] * 2}),
    "s10": (
        "demo_ckpt-step-10",
        "demo/ckpt-step-10",
        "c" * 40,
        None,
        False,
        {TASK: [("ok", 1.0), ("ok", 1.0)], OTHER: [("ok", 1.0), ("ok", 0.0)]},
    ),
    "s2": (
        "demo_ckpt-step-2",
        "demo/ckpt-step-2",
        "b" * 40,
        None,
        True,  # written by hermit eval: no fingerprint, its task count says the split
        {TASK: [("judge_error", 0.0), ("ok", 1.0)], OTHER: [("ok", 0.5)] * 2},
    ),
    "final": ("final", "final", "c" * 40, None, False, {TASK: [("ok", 1.0), ("ok", 0.25)], OTHER: [("ok", 1.0)] * 2}),
    "final-old": (
        "final",
        "final",
        "9" * 40,
        "20260101T000000Z",
        False,
        {TASK: [("ok", 0.0), ("ok", 0.0)], OTHER: [("ok", 1.0)] * 2},
    ),
    "subset": ("variant", "adapters/variant", None, None, False, {TASK: [("ok", 1.0)]}),  # another split
}


def write_eval(run_dir: Path, test_ids: list[str], key: str) -> None:
    label, adapter, commit, archived, by_hermit, attempts = EVALS[key]
    folder = run_dir / "eval" / label
    if archived:
        folder = folder / "archive" / archived
    folder.mkdir(parents=True, exist_ok=True)
    lines = [rec(t, r, st, sc) for t, reps in attempts.items() for r, (st, sc) in enumerate(reps, start=1)]
    (folder / "results.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    ids = test_ids if key != "subset" else [TASK]
    summary: dict[str, object] = {
        "adapter": adapter,
        "commit": commit,
        "tasks": len(ids),
        "repeats": 2,
        "mean_score": 0.5,
        "solved_once": 0.5,
        "cost_usd": None,
        "unknown_cost_tasks": 0,
        "errors": 0,
        "wall_s": 1.0,
    }
    if not by_hermit:
        digest = hashlib.sha256(json.dumps([str(t) for t in ids], sort_keys=True).encode()).hexdigest()
        summary["hermit_tui_version"] = "0.1.0"
        summary["fingerprint"] = {"test_ids_sha256": digest, "repeats": 2}
    (folder / "summary.json").write_text(json.dumps(summary))


def scores(key: str, task: str) -> list[float]:
    return [sc for _, sc in EVALS[key][5][task]]  # failed attempts score 0, as hermit writes them


def write_all(run_yaml) -> tuple[object, list[str]]:
    """Write every evaluation of EVALS into the run folder of ``run_yaml`` (a demo copy); (config, test ids)."""
    config = load_config(run_yaml)
    test_ids = list(load_tasks(config).test_ids)
    assert TASK in test_ids and OTHER in test_ids
    for key in EVALS:
        write_eval(Path(config.run_dir), test_ids, key)
    return config, test_ids
