"""Records and summaries in hermit's format; figures worked by hand."""

import json

import pytest

from hermit_tui.core.errors import InputError
from hermit_tui.core.records.results import (
    RECORD_KEYS,
    SUMMARY_KEYS,
    AttemptRecord,
    Judged,
    read_results,
    read_summary,
    summarize,
)


def rec(tid, repeat, score, status="ok", cost=0.5):
    judge = Judged(score=score, feedback="", extra={} if status == "ok" else None)
    return AttemptRecord(
        repeat=repeat,
        id=tid,
        status=status,
        error=None if status == "ok" else "E: x",
        output="o",
        judge=judge,
        cost_usd=cost,
        wall_s=0.1,
    )


def test_summary_matches_hand_computation():
    # 2 tasks x 2 repeats: a scores 1.0 and 0.5, b scores 0.0 (pipeline error, unknown cost) and 0.25.
    records = [rec("a", 1, 1.0), rec("b", 1, 0.0, "error", None), rec("a", 2, 0.5), rec("b", 2, 0.25, cost=0.25)]
    s = summarize(records, adapter="root", commit="c" * 40, task_ids=["a", "b"], repeats=2, wall_s=3.14159)
    assert s.mean_score == pytest.approx((1.0 + 0.0 + 0.5 + 0.25) / 4)
    assert s.solved_once == 0.5  # only a reached 1.0
    assert s.cost_usd is None  # one cost unknown
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
    path.write_text(
        json.dumps(
            {
                "adapter": "none",
                "commit": None,
                "tasks": 4,
                "repeats": 3,
                "mean_score": 0.375,
                "solved_once": 0.25,
                "cost_usd": None,
                "unknown_cost_tasks": 3,
                "errors": 6,
                "wall_s": 1.0,
            },
            indent=1,
        )
    )
    s = read_summary(path)
    assert s.written_by_hermit and s.is_complete and not s.is_smoke
    path.write_text("[1, 2]")
    with pytest.raises(InputError, match="summary.json"):
        read_summary(path)


#: Every key hermit-tui writes into summary.json, in the order it writes them (hermit's ten first), as the files of
#: earlier hermit-tui versions have them: a reader that relies on the order keeps working.
WRITTEN_ORDER = [
    "adapter",
    "commit",
    "tasks",
    "repeats",
    "mean_score",
    "solved_once",
    "cost_usd",
    "unknown_cost_tasks",
    "errors",
    "wall_s",
    "label",
    "attempts",
    "expected_attempts",
    "complete",
    "cancelled",
    "smoke_limit",
    "known_cost_usd",
    "pipeline_errors",
    "judge_errors",
    "content_hash",
    "retries",
    "started_at",
    "finished_at",
    "hermit_tui_version",
    "sequential",
    "concurrency",
    "executor",
    "fingerprint",
    "in_progress",
    "retry_lost",
    "ray_retries",
    "scores_outside_unit",
    "max_cost_usd",
    "stop_reason",
    "stopped",
    "protocol_warnings",
    "ignored_attempts",
    "nonfinite_scores",
    "published",
]


def every_key_summary() -> dict:
    fp = {
        "test_ids_sha256": "1" * 64,
        "test_rows_sha256": "2" * 64,
        "judge_sha256": "3" * 64,
        "pipeline_sha256": None,
        "agent_params_sha256": "4" * 64,
        "model_sha256": "5" * 64,
        "repeats": 2,
        "smoke_limit": 3,
        "dataset_revision": None,
        "hermit_tui_version": "0.1.0",
        "cluster_by": "category",
        "clusters_sha256": "6" * 64,
    }
    seq = {
        "baseline": "none",
        "decision": "improvement",
        "rounds": 2,
        "max_rounds": 3,
        "method": "m",
        "alpha": 0.05,
        "spend": 0.045,
        "split_over": 1,
        "margin": None,
        "decided_at": 2,
        "interval": [0.1, 0.3],
        "mean_diff": 0.2,
        "candidates": None,
        "batches": 4,
        "tasks_looked": 120,
        "total_tasks": 120,
    }
    values = dict(
        adapter="root",
        commit="c" * 40,
        tasks=3,
        repeats=2,
        mean_score=0.5,
        solved_once=0.25,
        cost_usd=None,
        unknown_cost_tasks=1,
        errors=2,
        wall_s=1.5,
        label="root",
        attempts=6,
        expected_attempts=6,
        complete=False,
        cancelled=True,
        smoke_limit=3,
        known_cost_usd=0.75,
        pipeline_errors=1,
        judge_errors=1,
        content_hash="h",
        retries=2,
        started_at="2025-01-01T00:00:00+00:00",
        finished_at="2025-01-01T00:01:00+00:00",
        hermit_tui_version="0.1.0",
        sequential=seq,
        concurrency=4,
        executor="threads",
        fingerprint=fp,
        in_progress={"pid": 12, "updated_at": "2025-01-01T00:00:30+00:00"},
        retry_lost=True,
        ray_retries=1,
        scores_outside_unit=1,
        max_cost_usd=2.0,
        stop_reason="max cost $2.00 reached",
        stopped="hung",
        protocol_warnings=["w"],
        ignored_attempts=1,
        nonfinite_scores=1,
        published={
            "measured_commit": "c" * 40,
            "card_commit": "d" * 40,
            "previous_tag_target": "e" * 40,
            "at": "2025-01-02T00:00:00+00:00",
        },
    )
    # the order an earlier version wrote them in is not the order given here: the model decides it
    return {k: values[k] for k in sorted(values)}


def test_every_key_hermit_tui_writes_is_declared_and_written_in_its_order():
    from hermit_tui.core.records.results import Summary

    data = every_key_summary()
    s = Summary.model_validate(data)
    assert s.model_extra == {}  # nothing of ours is left undeclared
    written = json.loads(s.to_json())
    assert list(written) == WRITTEN_ORDER
    assert written == {k: data[k] for k in WRITTEN_ORDER}  # every value round-trips as it was
    assert s.fingerprint is not None
    assert s.in_progress is not None
    assert s.fingerprint.judge_sha256 == "3" * 64 and s.in_progress.pid == 12
    assert s.published is not None
    assert s.sequential is not None
    assert s.published.card_commit == "d" * 40 and s.sequential.interval == (0.1, 0.3)


def test_keys_of_another_tool_are_kept_and_ours_of_the_wrong_type_are_refused(tmp_path):
    from hermit_tui.core.records.results import Summary

    data = {**every_key_summary(), "their_key": {"x": 1}}
    s = Summary.model_validate(data)
    assert s.model_extra == {"their_key": {"x": 1}} and json.loads(s.to_json())["their_key"] == {"x": 1}
    path = tmp_path / "summary.json"
    path.write_text(json.dumps({**data, "in_progress": "yes"}))
    with pytest.raises(InputError, match=r"summary.json: not an evaluation summary \(in_progress"):
        read_summary(path)


def test_summaries_hermit_and_earlier_versions_wrote_still_load():
    """hermit's own files (tests/fixtures/hermit_eval) and an earlier hermit-tui's file whose fingerprint lacks
    fields load; a missing fingerprint field compares as not recorded."""
    from pathlib import Path

    from hermit_tui.core.workspace.fingerprint import differences

    fixtures = sorted((Path(__file__).parent / "fixtures" / "hermit_eval").rglob("summary.json"))
    assert fixtures
    for path in fixtures:
        s = read_summary(path)
        assert s.written_by_hermit and s.fingerprint is None and s.model_extra == {}
    older = Summary_from(
        {
            "adapter": "none",
            "tasks": 2,
            "repeats": 1,
            "mean_score": 0.5,
            "solved_once": 0.5,
            "hermit_tui_version": "0.0.9",
            "fingerprint": {"test_ids_sha256": "a", "repeats": 1},
        }
    )
    now = Summary_from(
        {
            "adapter": "none",
            "tasks": 2,
            "repeats": 1,
            "mean_score": 0.5,
            "solved_once": 0.5,
            "fingerprint": {"test_ids_sha256": "a", "repeats": 1, "judge_sha256": "j"},
        }
    )
    assert differences(older.fingerprint, now.fingerprint) == ["the judge's source"]


def Summary_from(data: dict):
    from hermit_tui.core.records.results import Summary

    return Summary.model_validate(data)
