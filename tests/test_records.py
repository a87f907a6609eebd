"""Records and summaries in hermit's format; figures worked by hand."""
import json

import pytest

from hermit_tui.core.errors import InputError
from hermit_tui.core.records import (RECORD_KEYS, SUMMARY_KEYS, AttemptRecord, Judged, read_results, read_summary,
                                     summarize)


def rec(tid, repeat, score, status="ok", cost=0.5):
    judge = Judged(score=score, feedback="", extra={} if status == "ok" else None)
    return AttemptRecord(repeat=repeat, id=tid, status=status, error=None if status == "ok" else "E: x",
                         output="o", judge=judge, cost_usd=cost, wall_s=0.1)


def test_summary_matches_hand_computation():
    # 2 tasks x 2 repeats: a scores 1.0 and 0.5, b scores 0.0 (pipeline error, unknown cost) and 0.25.
    records = [rec("a", 1, 1.0), rec("b", 1, 0.0, "error", None), rec("a", 2, 0.5), rec("b", 2, 0.25, cost=0.25)]
    s = summarize(records, adapter="root", commit="c" * 40, task_ids=["a", "b"], repeats=2, wall_s=3.14159)
    assert s.mean_score == pytest.approx((1.0 + 0.0 + 0.5 + 0.25) / 4)
    assert s.solved_once == 0.5          # only a reached 1.0
    assert s.cost_usd is None            # one cost unknown
    assert s.known_cost_usd == pytest.approx(1.25)
    assert s.unknown_cost_tasks == 1
    assert s.errors == 1 and s.pipeline_errors == 1 and s.judge_errors == 0
    assert s.wall_s == 3.1
    data = json.loads(s.to_json())
    assert list(data)[:10] == list(SUMMARY_KEYS)


def test_summary_all_known_costs_and_judge_errors():
    records = [rec("a", 1, 0.0, "judge_error", 0.5), rec("b", 1, 1.0, cost=0.25)]
    s = summarize(records, adapter="none", commit=None, task_ids=["a", "b", "c"], repeats=1, wall_s=0)
    assert s.cost_usd == pytest.approx(0.75)
    assert s.errors == 1 and s.judge_errors == 1
    assert s.solved_once == pytest.approx(1 / 3)  # over the test tasks, not over those attempted


def test_record_line_keys_and_error_shape():
    line = rec("b", 1, 0.0, "error", None).to_json_line()
    data = json.loads(line)
    assert list(data) == list(RECORD_KEYS)
    assert data["judge"] == {"score": 0.0, "feedback": ""}  # no judge.extra on a failed pipeline, as hermit


def test_truncated_last_line_is_skipped_and_bad_middle_line_is_an_error(tmp_path):
    good = rec("a", 1, 1.0).to_json_line()
    path = tmp_path / "results.jsonl"
    path.write_text(good + good[: len(good) // 2])
    read = read_results(path)
    assert len(read.records) == 1 and len(read.skipped) == 1 and ":2:" in read.skipped[0]
    path.write_text(good + "{not json}\n" + good)
    with pytest.raises(InputError, match=r"results.jsonl:2:"):
        read_results(path)


def test_summary_written_by_hermit_reads(tmp_path):
    path = tmp_path / "summary.json"
    path.write_text(json.dumps({"adapter": "none", "commit": None, "tasks": 4, "repeats": 3, "mean_score": 0.375,
                                "solved_once": 0.25, "cost_usd": None, "unknown_cost_tasks": 3, "errors": 6,
                                "wall_s": 1.0}, indent=1))
    s = read_summary(path)
    assert s.written_by_hermit and s.is_complete and not s.is_smoke
    path.write_text("[1, 2]")
    with pytest.raises(InputError, match="summary.json"):
        read_summary(path)
