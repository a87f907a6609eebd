"""Triage annotations (core/records/annotations.py): the file format, latest-wins reading, concurrent writers, the
archive, evaluations hermit wrote, the taxonomy counts and the store's triage walk. Expected values are worked out by
hand from tests/fixture_data.py (see test_tasks_screen.py's table)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from fixture_data import FIXED_TASKS, fixed_records, fixed_store

from hermit_tui.core.errors import InputError
from hermit_tui.core.records.annotations import (
    ANNOTATIONS,
    DEFAULT_LABEL_SET,
    JUDGE_DISAGREES,
    Annotation,
    Change,
    attempt_digest,
    check_label_set,
    is_failure,
    pair_taxonomy,
    parse_annotations,
    read_annotations,
    selector_taxonomy,
    task_mean,
    update_annotation,
)
from hermit_tui.core.records.results import AttemptRecord, Judged, read_results
from hermit_tui.core.run.runner import EvalRun
from hermit_tui.core.workspace.config import load_config
from hermit_tui.dashboard.state.store import ANY_LABEL, UNLABELLED

FAST = ["agent.params.latency_scale=0"]
HERMIT_EVAL = Path(__file__).resolve().parent / "fixtures" / "hermit_eval"


def rec(tid: str = "t1", repeat: int = 1, score: float = 0.0, status: str = "ok", output="x") -> AttemptRecord:
    return AttemptRecord(
        repeat=repeat,
        id=tid,
        status=status,
        output=output,
        judge=Judged(score=score),
        error=None if status == "ok" else "ValueError: boom",
    )


def lines(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / ANNOTATIONS).read_text().splitlines()]


# ---------------------------------------------------------------------------------------------------- changes


def test_a_change_toggles_adds_removes_and_keeps_the_rest():
    key = ("t1", 2)
    a = Change(toggle=["format error", "timeout"]).apply(None, key, "d")
    assert (a.id, a.repeat, a.labels, a.note, a.corrected_score, a.attempt) == (
        "t1",
        2,
        ["format error", "timeout"],
        "",
        None,
        "d",
    )
    b = Change(toggle=["timeout"], note="cut at 20 tokens").apply(a, key, "d")
    assert b.labels == ["format error"] and b.note == "cut at 20 tokens"
    c = Change(add=["format error", "tool misuse"], remove=["nothing"]).apply(b, key, "d")
    assert c.labels == ["format error", "tool misuse"] and c.note == "cut at 20 tokens"
    assert Change(clear=True).apply(c, key, "d").empty


def test_a_corrected_score_comes_with_judge_disagrees_and_goes_with_it():
    key = ("t1", 1)
    a = Change(corrected_score=0.75).apply(None, key, None)
    assert a.labels == [JUDGE_DISAGREES] and a.corrected_score == 0.75
    b = Change(add=["format error"]).apply(a, key, None)
    assert b.corrected_score == 0.75  # kept while the label stays
    c = Change(toggle=[JUDGE_DISAGREES]).apply(b, key, None)
    assert c.labels == ["format error"] and c.corrected_score is None
    d = Change(corrected_score=1.0).apply(c, key, None)
    assert d.labels == [JUDGE_DISAGREES, "format error"]
    assert Change(clear_score=True).apply(d, key, None).corrected_score is None


def test_label_sets_keep_judge_disagrees_first_and_refuse_bad_labels():
    assert check_label_set(["", "  format   error ", "timeout"]) == [JUDGE_DISAGREES, "format error", "timeout"]
    assert check_label_set([JUDGE_DISAGREES, "x"]) == [JUDGE_DISAGREES, "x"]
    with pytest.raises(InputError, match="twice"):
        check_label_set(["a", "a"])
    with pytest.raises(InputError, match="at most 9"):
        check_label_set([f"l{i}" for i in range(9)])
    with pytest.raises(InputError, match="longer than 40"):
        check_label_set(["x" * 41])
    with pytest.raises(InputError, match="control"):
        check_label_set(["a\x07b"])


# ---------------------------------------------------------------------------------------------------- the file


def test_the_latest_line_wins_and_a_cleared_attempt_is_gone(tmp_path):
    r1, r2 = rec("t1", 1), rec("t2", 1)
    update_annotation(tmp_path, r1, Change(add=["format error"]))
    update_annotation(tmp_path, r2, Change(note="odd"))
    new, _ = update_annotation(tmp_path, r1, Change(add=["timeout"]))
    assert new.labels == ["format error", "timeout"]
    assert [(e["id"], e["labels"]) for e in lines(tmp_path)] == [
        ("t1", ["format error"]),
        ("t2", []),
        ("t1", ["format error", "timeout"]),
    ]
    update_annotation(tmp_path, r2, Change(clear=True))
    again = read_annotations(tmp_path)
    assert set(again.entries) == {("t1", 1)} and again.lines == 4  # append-only: 4 lines, one attempt annotated
    assert again.entries[("t1", 1)].labels == ["format error", "timeout"]
    assert list(json.loads((tmp_path / ANNOTATIONS).read_text().splitlines()[0])) == [
        "repeat",
        "id",
        "labels",
        "note",
        "corrected_score",
        "at",
        "attempt",
    ]


def test_a_line_cut_by_a_crash_is_skipped_and_the_next_line_starts_on_its_own(tmp_path):
    r = rec()
    update_annotation(tmp_path, r, Change(add=["timeout"]))
    with open(tmp_path / ANNOTATIONS, "ab") as fh:
        fh.write(b'{"repeat": 1, "id": "t1", "lab')  # killed mid-line
    update_annotation(tmp_path, r, Change(add=["format error"]))
    read = read_annotations(tmp_path)
    assert read.entries[("t1", 1)].labels == ["timeout", "format error"]
    assert len(read.skipped) == 1 and "line 2" in read.skipped[0] and ANNOTATIONS in read.skipped[0]


def test_a_folder_that_cannot_be_written_is_one_line_and_nothing_changes(tmp_path, monkeypatch):
    update_annotation(tmp_path, rec(), Change(add=["timeout"]))
    before = (tmp_path / ANNOTATIONS).read_bytes()
    (tmp_path / ANNOTATIONS).chmod(0o444)
    if os.geteuid() == 0:  # root writes anywhere: opening fails as the kernel fails it for anyone else
        real = os.open

        def denied(path, flags, *args):
            if Path(path).name == ANNOTATIONS and flags & (os.O_RDWR | os.O_WRONLY):
                raise PermissionError(13, "Permission denied", str(path))
            return real(path, flags, *args)

        monkeypatch.setattr(os, "open", denied)
    try:
        with pytest.raises(InputError, match=ANNOTATIONS):
            update_annotation(tmp_path, rec(), Change(add=["format error"]))
    finally:
        (tmp_path / ANNOTATIONS).chmod(0o644)
    assert (tmp_path / ANNOTATIONS).read_bytes() == before


def test_a_full_disk_is_one_line_and_the_file_is_as_it_was(tmp_path, monkeypatch):

    update_annotation(tmp_path, rec(), Change(add=["timeout"]))
    before = (tmp_path / ANNOTATIONS).read_bytes()
    real = os.write

    def half(fd, data):  # writes part of the line, then the disk is full
        real(fd, data[: len(data) // 2])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "write", half)
    with pytest.raises(InputError, match=r"No space left on device\); nothing was changed"):
        update_annotation(tmp_path, rec(), Change(add=["format error"]))
    assert (tmp_path / ANNOTATIONS).read_bytes() == before


def test_a_missing_folder_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        update_annotation(tmp_path / "gone", rec(), Change(add=["timeout"]))


WRITER = textwrap.dedent("""
    import sys
    from hermit_tui.core.records.annotations import Change, update_annotation
    from hermit_tui.core.records.results import AttemptRecord, Judged
    folder, me, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    shared = AttemptRecord(repeat=1, id="shared", status="ok", output="x", judge=Judged(score=0.0))
    own = AttemptRecord(repeat=1, id=me, status="ok", output="x", judge=Judged(score=0.0))
    for i in range(n):
        # the same attempt from every process: each adds its own label (none may be lost), and a long note
        update_annotation(folder, shared, Change(add=[f"{me}-{i}"], note=me * 300))
        update_annotation(folder, own, Change(toggle=["timeout"]))
""")


def test_concurrent_writers_never_interleave_lines_nor_lose_a_change(tmp_path):
    writers, n = 4, 25
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), f"w{k}", str(n)]) for k in range(writers)]
    assert [p.wait(timeout=120) for p in procs] == [0] * writers
    raw = (tmp_path / ANNOTATIONS).read_text().splitlines()
    assert len(raw) == writers * n * 2
    parsed = [json.loads(line) for line in raw]  # every line is whole JSON: nothing interleaved
    assert all(len(p["note"]) in (0, 600) for p in parsed)
    read = read_annotations(tmp_path)
    assert read.skipped == []
    # each process's 25 labels on the shared attempt, none lost (each change applies to the latest line on disk)
    assert sorted(read.entries[("shared", 1)].labels) == sorted(f"w{k}-{i}" for k in range(writers) for i in range(n))
    for k in range(writers):  # 25 toggles: on, off, ..., on
        assert read.entries[(f"w{k}", 1)].labels == ["timeout"]


# ---------------------------------------------------------------------------------------------------- attempts


def test_the_digest_is_the_same_read_back_and_differs_for_a_rerun(tmp_path):
    original = rec(output={"b": 1, "a": [1, 2]})
    path = tmp_path / "results.jsonl"
    path.write_text(original.to_json_line())
    back = read_results(path).records[0]
    assert attempt_digest(back) == attempt_digest(original)
    rerun = rec(output={"b": 1, "a": [1, 3]})
    assert attempt_digest(rerun) != attempt_digest(original)
    ann = Change(add=["timeout"]).apply(None, original.key, attempt_digest(original))
    assert ann.applies_to(back) and not ann.applies_to(rerun) and not ann.applies_to(None)
    assert Annotation(repeat=1, id="t1", labels=["x"]).applies_to(rerun)  # no digest: whatever is recorded


def test_a_failure_is_an_error_or_a_score_below_the_threshold():
    assert is_failure(rec(status="error")) and is_failure(rec(status="judge_error", score=1.0))
    assert is_failure(rec(score=0.5)) and not is_failure(rec(score=1.0))
    assert not is_failure(rec(score=0.5), threshold=0.5) and is_failure(rec(score=float("nan")))


# ---------------------------------------------------------------------------------------------------- taxonomy


def test_selector_taxonomy_counts_by_hand():
    records = {r.key: r for r in fixed_records("final")}  # 36 attempts
    # final's failures: t04 x3 (0), t05 x3 (error), t09 r2 (judge error), t10 x3 (0.5): 10
    ann = {
        ("t04", 1): Annotation(
            repeat=1, id="t04", labels=["wrong reasoning"], attempt=attempt_digest(records[("t04", 1)])
        ),
        ("t05", 2): Annotation(repeat=2, id="t05", labels=["format error", "timeout"]),
        ("t01", 1): Annotation(repeat=1, id="t01", labels=[JUDGE_DISAGREES], corrected_score=0.0),  # a pass
        ("t10", 1): Annotation(repeat=1, id="t10", labels=["timeout"], attempt="not-this-attempt"),  # stale
        ("t10", 2): Annotation(repeat=2, id="t10", note="only a note"),
    }
    t = selector_taxonomy("final", records, ann, 1.0, DEFAULT_LABEL_SET, [x["id"] for x in FIXED_TASKS])
    assert (t.attempts, t.failures, t.labelled_failures, t.labelled_attempts) == (36, 10, 2, 3)
    assert t.counts == {JUDGE_DISAGREES: 1, "format error": 1, "wrong reasoning": 1, "timeout": 1}
    assert t.failure_counts == {"format error": 1, "wrong reasoning": 1, "timeout": 1}
    assert (t.notes, t.corrected, t.stale) == (1, 1, 1)
    # task means of final: 1 1 1 0 0 1 1 1 2/3 .5 1 1 -> (8 + 2/3 + 1/2)/12; t01 corrected to 0 on 1 of 3 repeats
    assert t.recorded_mean == pytest.approx((8 + 2 / 3 + 0.5) / 12)
    assert t.corrected_mean == pytest.approx((8 + 2 / 3 + 0.5 - 1 / 3) / 12)
    assert task_mean(records.values()) == pytest.approx(t.recorded_mean)


def test_pair_taxonomy_says_which_labels_final_fixed_and_introduced():
    ra = {r.key: r for r in fixed_records("none")}
    rb = {r.key: r for r in fixed_records("final")}
    a = {
        ("t01", 1): Annotation(repeat=1, id="t01", labels=["format error"]),
        ("t04", 2): Annotation(repeat=2, id="t04", labels=["timeout"]),
        ("t05", 1): Annotation(repeat=1, id="t05", labels=["format error"]),
    }
    b = {
        ("t05", 3): Annotation(repeat=3, id="t05", labels=["format error"]),
        ("t04", 1): Annotation(repeat=1, id="t04", labels=["wrong reasoning"]),
        ("t10", 1): Annotation(repeat=1, id="t10", labels=["wrong reasoning"]),
    }
    p = pair_taxonomy("none", ra, a, "final", rb, b, DEFAULT_LABEL_SET, [x["id"] for x in FIXED_TASKS])
    by = {c.label: c for c in p.labels}
    # final's unlabelled failures are on t04 (r2, r3), t05 (r1, r2), t09 (r2), t10 (r2, r3); none's on every task it
    # fails (t01 t02 t04 t05 t07 t08 t09 t11 t12): a label missing there is "not triaged", not fixed or introduced
    assert (by["format error"].fixed, by["format error"].introduced, by["format error"].both) == (["t01"], [], ["t05"])
    assert (by["timeout"].fixed, by["timeout"].untriaged) == ([], ["t04"])
    assert (by["wrong reasoning"].introduced, by["wrong reasoning"].untriaged) == (["t10"], ["t04"])
    assert [c.label for c in p.labels] == ["format error", "wrong reasoning", "timeout"]  # most tasks first
    # once final's failures on t04 all carry a label, timeout is fixed there
    b[("t04", 2)] = Annotation(repeat=2, id="t04", labels=["format error"])
    b[("t04", 3)] = Annotation(repeat=3, id="t04", labels=["format error"])
    by = {c.label: c for c in pair_taxonomy("none", ra, a, "final", rb, b).labels}
    assert (by["timeout"].fixed, by["timeout"].untriaged) == (["t04"], [])


# ---------------------------------------------------------------------------------------------------- the store


def test_the_walk_visits_regressions_then_errors_then_flaky_tasks_then_the_rest():
    store = fixed_store()  # baseline none
    walk = [(f.group, f.key, f.task_id, f.repeat) for f in store.failure_walk()]
    # final regresses on t04 (0.5 -> 0) and t10 (1 -> 0.5): equal drops, task order
    assert walk[:6] == [("regression", "final", t, r) for t in ("t04", "t10") for r in (1, 2, 3)]
    # then every error: t05 under none, root, final; final's t09 repeat 2 (a judge error)
    assert walk[6:16] == [("error", k, "t05", r) for k in ("none", "root", "final") for r in (1, 2, 3)] + [
        ("error", "final", "t09", 2)
    ]
    # then root's flaky t07 (scores 0, 1, 0): repeats 1 and 3 failed
    assert walk[16:18] == [("flaky", "root", "t07", 1), ("flaky", "root", "t07", 3)]
    # the rest: every other attempt below 1.0; none 27 - 3 errors, root 17 - 3 - 2, final 10 - 6 - 1 - 3
    assert len(walk) == 27 + 17 + 10 and {g for g, *_ in walk[18:]} == {"failure"}
    assert store.triage_progress() == (0, 54)


def test_next_unlabelled_skips_labelled_failures_and_wraps_around():
    store = fixed_store()
    walk = store.failure_walk()
    first = store.next_unlabelled()
    assert first is not None
    assert (first.key, first.task_id, first.repeat) == ("final", "t04", 1)
    for f in walk[1:3]:
        store.put_annotation(f.key, Annotation(repeat=f.repeat, id=f.task_id, labels=["wrong reasoning"]))
    nxt = store.next_unlabelled(("final", "t04", 1))
    assert nxt is not None
    assert (nxt.key, nxt.task_id, nxt.repeat) == ("final", "t10", 1)  # t04's repeats 2 and 3 carry a label
    last = walk[-1]
    nxt = store.next_unlabelled((last.key, last.task_id, last.repeat))
    assert nxt is not None
    assert (nxt.key, nxt.task_id, nxt.repeat) == ("final", "t04", 1)  # wrapped
    assert store.triage_progress() == (2, 54)
    note_only = walk[0]
    store.put_annotation(note_only.key, Annotation(repeat=1, id="t04", note="a note is not a label"))
    assert store.next_unlabelled() == walk[0]


def test_annotations_bump_the_version_but_not_the_data_version_and_filter_rows():
    store = fixed_store()
    version, data = store.version, store.data_version
    store.put_annotation("root", Annotation(repeat=2, id="t07", labels=["flaky infrastructure"]))
    store.put_annotation("final", Annotation(repeat=1, id="t10", labels=["format error"]))
    assert store.version == version + 2 and store.data_version == data
    assert [r.task_id for r in store.rows(label="format error")] == ["t10"]
    assert [r.task_id for r in store.rows(label=ANY_LABEL)] == ["t07", "t10"]
    unlabelled = [r.task_id for r in store.rows(label=UNLABELLED)]
    # every task has a failure somewhere except t03 and t06 (all 1.0 everywhere)
    assert unlabelled == [t["id"] for t in FIXED_TASKS if t["id"] not in ("t03", "t06")]
    assert store.labels_in_use() == {"format error": 1, "flaky infrastructure": 1}
    tax = store.taxonomy()
    assert tax["root"].counts == {"flaky infrastructure": 1} and tax["root"].labelled_failures == 0  # t07 r2 passed
    assert tax["final"].failure_counts == {"format error": 1}
    store.put_annotation("final", Annotation(repeat=1, id="t10"))  # an empty one clears
    assert store.rows(label="format error") == []


# ---------------------------------------------------------------------------------------------------- on disk


def test_re_evaluating_a_selector_archives_its_annotations_beside_the_results_they_describe(demo_config):
    config = load_config(demo_config, FAST)
    EvalRun(config, ["none"], repeats=1, update_card=False).run_sync()
    folder = config.run_dir / "eval" / "none"
    records = {r.key: r for r in read_results(folder / "results.jsonl").records}
    failed = [r for r in records.values() if is_failure(r)]
    assert len(failed) >= 2
    for r in failed[:2]:
        update_annotation(folder, r, Change(add=["format error"], note=f"seen {r.id}"))
    annotated = (folder / ANNOTATIONS).read_bytes()

    EvalRun(config, ["none"], repeats=1, update_card=False).run_sync()  # evaluated again
    assert not (folder / ANNOTATIONS).exists()  # the new evaluation starts without labels
    (archived,) = list((folder / "archive").iterdir())
    assert (archived / ANNOTATIONS).read_bytes() == annotated
    old = {r.key: r for r in read_results(archived / "results.jsonl").records}
    kept = read_annotations(archived).entries
    assert set(kept) == {r.key for r in failed[:2]}
    assert all(a.applies_to(old[k]) for k, a in kept.items())  # beside the very attempts they were made on


def test_a_retry_keeps_the_annotations_and_the_archive_gets_a_copy(demo_config):
    config = load_config(demo_config, FAST)
    EvalRun(config, ["none"], repeats=1, update_card=False).run_sync()
    folder = config.run_dir / "eval" / "none"
    records = read_results(folder / "results.jsonl").records
    errors = [r for r in records if r.status != "ok"]
    passed = next(r for r in records if r.status == "ok")
    update_annotation(folder, passed, Change(add=[JUDGE_DISAGREES], corrected_score=0.0))
    update_annotation(folder, errors[0], Change(add=["flaky infrastructure"]))
    annotated = (folder / ANNOTATIONS).read_bytes()
    EvalRun(config, [], retry={"none": [r.key for r in errors]}).run_sync()
    (archived,) = list((folder / "archive").iterdir())
    assert (archived / ANNOTATIONS).read_bytes() == annotated == (folder / ANNOTATIONS).read_bytes()
    now = {r.key: r for r in read_results(folder / "results.jsonl").records}
    entries = read_annotations(folder).entries
    assert entries[passed.key].applies_to(now[passed.key])  # not re-run: still applies
    retried = now[errors[0].key]
    assert entries[errors[0].key].applies_to(retried) == (attempt_digest(retried) == attempt_digest(errors[0]))


def test_evaluations_hermit_wrote_take_annotations_and_the_store_reads_them(tmp_path):
    from hermit_tui.core.records.folders import open_evaluation

    folder = tmp_path / "final"
    shutil.copytree(HERMIT_EVAL / "final", folder)
    stored = open_evaluation(folder)
    assert stored.summary is not None and stored.summary.written_by_hermit  # no fingerprint, no extra keys
    records = stored.load_results().records
    target = next(r for r in records if is_failure(r))
    update_annotation(folder, target, Change(add=["timeout"], note="slow"))
    store = fixed_store()
    col = store.add_stored(stored, key="hermit final")
    note = col.annotation(target.id, target.repeat)
    assert note is not None and note.labels == ["timeout"]
    assert store.taxonomy()["hermit final"].counts == {"timeout": 1}


def test_parse_ignores_blank_lines_and_keeps_unknown_labels(tmp_path):
    data = b'\n{"repeat": 2, "id": "x", "labels": ["my own"], "note": "", "corrected_score": null, "at": ""}\n\n'
    read = parse_annotations(data)
    assert read.entries[("x", 2)].labels == ["my own"] and read.lines == 1 and read.skipped == []
