"""The demo's judge: compares the pipeline's answer with the reference answers it keeps to itself.

The references live in judge_data/answers.json, not in the task rows, so nothing that learns from task rows sees them.
Unit conversions earn half credit within 5%; a sorted list earns the fraction of positions it got right; every other
category is right or wrong.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

ANSWERS = Path(__file__).resolve().parent / "judge_data" / "answers.json"
_answers: dict | None = None


def _reference(task_id: str):
    global _answers
    if _answers is None:
        _answers = json.loads(ANSWERS.read_text(encoding="utf-8"))
    if task_id not in _answers:
        raise LookupError(f"no reference answer for task {task_id} in judge_data/answers.json")
    return _answers[task_id]


def _text(output) -> str:
    value = output.get("output") if isinstance(output, dict) else getattr(output, "output", output)
    return "" if value is None else str(value).strip()


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def score(task: dict, output) -> dict:
    cat, expected = task["category"], _reference(str(task["id"]))
    got = _text(output)
    result = {"expected": expected, "category": cat}
    if cat == "sorting":
        try:
            values = [int(x) for x in got.split(",")]
        except ValueError:
            values = []
        right = sum(a == b for a, b in zip(values, expected)) if len(values) == len(expected) else 0
        return {"score": right / len(expected), "feedback": f"{right} of {len(expected)} positions right", **result}
    if cat == "unit_conversion":
        value = _number(got)
        error = math.inf if value is None else abs(value - expected) / abs(expected)
        credit = 1.0 if error <= 0.005 else 0.5 if error <= 0.05 else 0.0
        feedback = {1.0: "right", 0.5: f"within 5% of {expected}: half credit"}.get(credit, f"expected {expected}")
        return {"score": credit, "feedback": feedback, **result}
    if isinstance(expected, (int, float)):
        value = _number(got)
        ok = value is not None and math.isclose(value, expected, rel_tol=1e-9, abs_tol=1e-9)
    else:
        ok = got == str(expected)
    return {"score": 1.0 if ok else 0.0, "feedback": "right" if ok else f"expected {expected}, got {got}", **result}
