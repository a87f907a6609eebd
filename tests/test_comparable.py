"""Which evaluations compare with final (or the first shown): task count, repeats, the protocol fingerprint."""

from __future__ import annotations

from pathlib import Path

from hermit_tui.core.present import NO_FINGERPRINT
from hermit_tui.core.publish.plan import EvalRow
from hermit_tui.core.records.results import Summary
from hermit_tui.core.report.comparable import Shape, compare_shapes, rows_mismatches, summaries_mismatches

FP = {
    "test_ids_sha256": "a" * 64,
    "test_rows_sha256": "b" * 64,
    "judge_sha256": "c" * 64,
    "pipeline_sha256": "d" * 64,
    "agent_params_sha256": "e" * 64,
    "model_sha256": "f" * 64,
    "repeats": 3,
    "smoke_limit": None,
    "dataset_revision": None,
    "hermit_tui_version": "0.1.0",
}


def summary(adapter: str, *, tasks: int = 16, repeats: int = 3, fp: dict | None = FP, **extra) -> Summary:
    data = dict(adapter=adapter, commit=None, tasks=tasks, repeats=repeats, mean_score=0.5, solved_once=0.5, **extra)
    if fp is not None:
        data["fingerprint"] = fp
        data["hermit_tui_version"] = "0.1.0"
    return Summary(**data)


def test_same_protocol_compares():
    assert summaries_mismatches({"none": summary("none"), "final": summary("final")}) == []


def test_repeats_differ_is_named_once_with_both_sizes():
    found = summaries_mismatches(
        {"none": summary("none", repeats=1, fp={**FP, "repeats": 1}), "final": summary("final")}
    )
    assert len(found) == 1
    m = found[0]
    assert (m.label, m.reference) == ("none", "final")
    assert m.reasons == ["16 tasks × 1 repeat, final 16 tasks × 3 repeats"]
    assert not m.comparable and not m.unchecked


def test_fingerprint_fields_are_named():
    other = {**FP, "judge_sha256": "0" * 64, "test_ids_sha256": "1" * 64}
    found = summaries_mismatches({"final": summary("final"), "root": summary("root", fp=other)})
    assert found[0].reasons == ["the test task ids", "the judge's source"]
    assert "root vs final: the test task ids; the judge's source" == found[0].text()


def test_reference_is_final_else_the_first():
    s = {"none": summary("none", tasks=10), "root": summary("root"), "final": summary("final")}
    assert [m.label for m in summaries_mismatches(s)] == ["none"]
    s = {"none": summary("none", tasks=10), "root": summary("root")}
    found = summaries_mismatches(s)
    assert [(m.label, m.reference) for m in found] == [("root", "none")]


def test_hermit_written_is_unchecked_but_sizes_still_count():
    found = summaries_mismatches({"none": summary("none", fp=None), "final": summary("final")})
    assert found[0].unchecked and found[0].comparable
    assert "cannot be checked" in found[0].text()
    found = summaries_mismatches({"none": summary("none", fp=None, tasks=8), "final": summary("final")})
    assert found[0].unchecked and found[0].reasons == ["8 tasks × 3 repeats, final 16 tasks × 3 repeats"]


def test_smoke_limit_without_fingerprints():
    a = Shape(label="final", tasks=16, repeats=1)
    b = Shape(label="none", tasks=16, repeats=1, smoke_limit=4)
    assert compare_shapes(a, b).reasons == ["the smoke limit"]


def row(label: str, *, tasks=16, repeats=3, protocol=(), complete=True, smoke=None) -> EvalRow:
    return EvalRow(
        label=label,
        adapter=label,
        selector=label,
        commit=None,
        tasks=tasks,
        repeats=repeats,
        mean=0.5,
        ci_low=None,
        ci_high=None,
        solved_once=0.5,
        attempts=tasks * repeats,
        errors=0,
        pipeline_errors=0,
        judge_errors=0,
        cost_usd=None,
        unknown_cost_attempts=0,
        folder=Path("/x"),
        written_by="hermit-tui",
        protocol=list(protocol),
        complete=complete,
        smoke_limit=smoke,
    )


def test_publish_rows():
    rows = [
        row("none", repeats=1, protocol=["repeats"]),
        row("root", protocol=[NO_FINGERPRINT]),
        row("ckpt", protocol=["the pipeline's source"], complete=False),
        row("final"),
    ]
    found = {m.label: m for m in rows_mismatches(rows)}
    assert found["none"].reasons == ["16 tasks × 1 repeats, final 16 × 3"]
    assert found["root"].unchecked and found["root"].comparable
    assert found["ckpt"].reasons == ["the pipeline's source", "ckpt is incomplete"]
    assert rows_mismatches([row("none"), row("final")]) == []
    assert rows_mismatches([row("none")]) == []  # no final row: nothing to compare with
