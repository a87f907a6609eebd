"""The dashboard's store (hermit_tui/dashboard/state/store.py) on its own: one long-lived store with reset(), every
change through a method that bumps its version, columns read from disk built off the store (build_stored) and put in at
once (add_column), live attempts streaming in, and the per-task table, error groups and triage walk on the columns, each
checked against figures computed here from the records."""

from __future__ import annotations

import math
import random

import pytest
from fixture_data import FIXED_LABELS, FIXED_TASKS, fixed_records, fixed_store

from hermit_tui.core.records.annotations import Annotation, is_failure
from hermit_tui.core.records.folders import open_evaluation
from hermit_tui.core.records.results import AttemptRecord, Judged, read_results, summarize
from hermit_tui.core.run import events as ev
from hermit_tui.dashboard.state.store import FILTERS, UNLABELLED, EvalStore, build_stored

IDS = [t["id"] for t in FIXED_TASKS]


def write_eval(folder, records, repeats=3):
    folder.mkdir(parents=True)
    (folder / "results.jsonl").write_text("".join(r.to_json_line() for r in records))
    summary = summarize(
        records,
        adapter=folder.name,
        commit=None,
        task_ids=sorted({r.id for r in records}),
        repeats=repeats,
        wall_s=1.0,
        label=folder.name,
        complete=True,
    )
    (folder / "summary.json").write_text(summary.to_json())
    return open_evaluation(folder)


def latest(records):
    """(task, repeat) -> the record that counts (a later one replaces an earlier one)."""
    return {r.key: r for r in records}


def by_task(records):
    out: dict[str, list[AttemptRecord]] = {}
    for r in latest(records).values():
        out.setdefault(r.id, []).append(r)
    return out


def mean_of(recs):
    return sum(r.judge.score for r in recs) / len(recs)


def random_records(label: str, seed: int, tasks: int = 40, repeats: int = 3) -> list[AttemptRecord]:
    rng = random.Random(f"{seed}|{label}")
    out = []
    for r in range(1, repeats + 1):
        for i in range(tasks):
            if rng.random() < 0.15:  # some tasks are missing some repeats, some missing altogether
                continue
            u = rng.random()
            status = "error" if u < 0.05 else "judge_error" if u < 0.08 else "ok"
            score = 0.0 if status != "ok" else rng.choice([0.0, 0.5, 1.0, 1.0])
            out.append(
                AttemptRecord(
                    repeat=r,
                    id=f"t{i:02d}",
                    status=status,
                    error=f"ValueError: {i % 3}" if status != "ok" else None,
                    judge=Judged(score=score, feedback="f"),
                    cost_usd=None if rng.random() < 0.1 else 0.001,
                    output=f"{label} {i} {r}",
                )
            )
    out += out[:5][::-1]  # re-runs of a few attempts, appended
    return out


# ---------------------------------------------------------------------------------------------------- the one door


def test_every_change_goes_through_a_method_that_bumps_the_version(tmp_path):
    store = fixed_store()
    col = build_stored(write_eval(tmp_path / "eval" / "extra", fixed_records("root")), store.threshold)
    changes = [
        lambda: store.apply(ev.RunLog(level="info", message="hello")),
        lambda: store.set_baseline("final"),
        lambda: store.set_threshold(0.5),
        lambda: store.set_warnings(["test overlap"]),
        lambda: store.set_label_set(["judge disagrees", "x"]),
        lambda: store.put_annotation("root", Annotation(repeat=1, id="t01", labels=["x"])),
        lambda: store.set_annotations("root", {}),
        lambda: store.add_column(col),
        lambda: store.remove_column(col.key),
        lambda: store.reset({"a": {"id": "a"}}, ["a"], warnings=["w"], label_set=["judge disagrees"]),
    ]
    for change in changes:
        before = store.version
        change()
        assert store.version > before, change


def test_reset_forgets_the_previous_config_and_keeps_the_store(tmp_path):
    store = fixed_store()
    store.put_annotation("final", Annotation(repeat=1, id="t04", labels=["x"]))
    generation, version = store.generation, store.version
    store.reset({"a": {"id": "a", "q": "?"}}, ["a", "b"], warnings=["overlap"], label_set=["judge disagrees", "y"])
    assert store.generation == generation + 1 and store.version > version
    assert store.columns == {} and store.task_ids == ["a", "b"] and store.tasks == {"a": {"id": "a", "q": "?"}}
    assert store.warnings == ["overlap"] and store.label_set == ["judge disagrees", "y"]
    assert store.baseline is None and store.log == [] and not store.run_active and store.repeats == 1
    assert [(r.task_id, r.cells) for r in store.rows()] == [("a", []), ("b", [])]  # the new tasks, no column
    assert len(store.failure_walk()) == 0 and store.error_groups() == []


def test_build_stored_touches_no_store_and_add_column_puts_it_in(tmp_path):
    store = fixed_store()
    version, ids = store.version, list(store.task_ids)
    records = fixed_records("final") + [AttemptRecord(repeat=1, id="extra", status="ok", judge=Judged(score=1.0))]
    stored = write_eval(tmp_path / "eval" / "final", records)
    col = build_stored(stored, store.threshold)
    assert store.version == version and store.task_ids == ids and len(store.columns) == 3  # untouched
    assert store.columns["final"].source == "live"  # fixed_store's columns came from engine events
    assert store.stored_key(stored) == "final (disk)"
    store.add_column(col, store.stored_key(stored))
    assert store.task_ids == ids + ["extra"]  # new ids at the end
    assert list(store.columns) == ["none", "root", "final", "final (disk)"]  # as a launch orders them, stable
    assert store.columns["final (disk)"].records[("extra", 1)].judge.score == 1.0


def test_new_ids_worked_out_in_the_worker_are_checked_again_on_the_loop(tmp_path):
    store = fixed_store()
    ids = list(store.task_ids)
    extra = [AttemptRecord(repeat=1, id=t, status="ok", judge=Judged(score=1.0)) for t in ("x1", "x2", "x3")]
    col = build_stored(write_eval(tmp_path / "eval" / "final", fixed_records("final") + extra), store.threshold)
    new_ids = store.new_task_ids(col)  # in the worker
    assert new_ids == {"x1", "x2", "x3"} and store.task_ids == ids  # reading only
    other = build_stored(write_eval(tmp_path / "eval" / "root", [extra[1]]), store.threshold)
    store.add_column(other, "root (disk)")  # meanwhile, on the loop: x2 arrives with another column
    assert store.task_ids == ids + ["x2"]
    store.add_column(col, "final (disk)", new_ids=new_ids)
    assert store.task_ids == ids + ["x2", "x1", "x3"]  # each once, the rest in the column's order
    assert len(set(store.task_ids)) == len(store.task_ids)
    assert store.columns["final (disk)"].records[("x3", 1)].judge.score == 1.0


def test_task_ids_indexed_off_the_loop_equal_the_ones_added_on_it():
    from hermit_tui.dashboard.state.store import LOOKUP_SLICE, index_task_ids

    rng = random.Random(5)
    ids = [f"t{rng.randrange(3 * LOOKUP_SLICE)}" for _ in range(3 * LOOKUP_SLICE)]  # duplicates across slices
    first_seen = list(dict.fromkeys(ids))
    order, pos = index_task_ids(ids)
    assert order == first_seen and pos == {t: i for i, t in enumerate(first_seen)}
    plain, indexed = EvalStore(), EvalStore()
    plain.reset({}, ids)
    indexed.reset({}, ids, indexed=(order, pos))
    assert plain.task_ids == indexed.task_ids == first_seen
    assert plain._task_pos == indexed._task_pos == {t: i for i, t in enumerate(first_seen)}


def test_a_name_shown_live_gets_a_disk_key(tmp_path):
    store = EvalStore({t: {"id": t} for t in IDS}, IDS)
    store.apply(ev.SelectorStarted(label="final", selector="final", commit=None, total=1))
    stored = write_eval(tmp_path / "eval" / "final", fixed_records("final"))
    assert store.stored_key(stored) == "final (disk)"
    col = store.add_stored(stored)
    assert col.key == "final (disk)" and set(store.columns) == {"final", "final (disk)"}


# ---------------------------------------------------------------------------------------------------- figures


def assert_column_figures(col, records, threshold=1.0):
    """A column's figures against the records, computed here."""
    kept = latest(records)
    assert col.done == len(kept)
    assert col.errors == sum(r.status == "error" for r in kept.values())
    assert col.judge_errors == sum(r.status == "judge_error" for r in kept.values())
    assert col.unknown_cost == sum(r.cost_usd is None for r in kept.values())
    assert math.isclose(col.known_cost, sum(r.cost_usd for r in kept.values() if r.cost_usd is not None))
    assert math.isclose(col.mean, mean_of(list(kept.values())))
    assert col.failures == sum(is_failure(r, threshold) for r in kept.values())
    tasks = by_task(records)
    assert set(col.cells) == set(tasks)
    for tid, recs in tasks.items():
        cell = col.cells[tid]
        scores = [r.judge.score for r in recs]
        assert cell.n == len(recs) and math.isclose(cell.mean, mean_of(recs))
        assert cell.solved == sum(s >= threshold for s in scores)
        assert cell.failed == sum(is_failure(r, threshold) for r in recs)
        assert (cell.errors, cell.judge_errors) == (
            sum(r.status == "error" for r in recs),
            sum(r.status == "judge_error" for r in recs),
        )
        assert cell.unknown_cost == sum(r.cost_usd is None for r in recs)
        assert cell.flaky == (len(recs) > 1 and (0 < cell.solved < len(recs) or max(scores) - min(scores) > 1e-9))
    for key, rec in kept.items():
        assert col.records[key] == rec and key in col.records
        assert col.mark(*key) == (rec.status, rec.judge.score)
    assert ("nope", 1) not in col.records and col.mark("nope", 1) == (None, None)
    assert set(col.records) == set(kept)
    assert [r.key for r in col.attempts_of(records[0].id)] == sorted(
        (k for k in kept if k[0] == records[0].id), key=lambda k: k[1]
    )


@pytest.mark.parametrize("seed", [1, 2])
def test_live_and_disk_columns_hold_the_figures_of_their_records(tmp_path, seed):
    """Streamed attempts (re-runs replacing earlier ones) and the same attempts read from disk: the same figures,
    equal to the ones computed here; and again after the success threshold changes."""
    records = random_records("x", seed)
    live = EvalStore()
    live.apply(
        ev.RunStarted(
            labels=["x"], task_ids=sorted({r.id for r in records}), repeats=3, concurrency=1, total=len(records)
        )
    )
    live.apply(ev.SelectorStarted(label="x", selector="x", commit=None, total=len(records)))
    for rec in records:
        live.apply(ev.AttemptFinished(label="x", record=rec))
    disk = EvalStore()
    disk.add_stored(write_eval(tmp_path / "eval" / "x", records))
    for store in (live, disk):
        assert_column_figures(store.columns["x"], records)
        store.set_threshold(0.5)
        assert_column_figures(store.columns["x"], records, threshold=0.5)
    assert disk.columns["x"].records[records[0].key] == read_results(tmp_path / "eval/x/results.jsonl").records[-1]


def test_a_retry_streaming_in_recounts_its_task():
    store = fixed_store()
    col = store.columns["root"]
    before = col.cells["t07"]
    assert before.flaky and before.solved == 1
    for r in (1, 3):
        store.apply(
            ev.AttemptFinished(
                label="root",
                record=AttemptRecord(repeat=r, id="t07", status="ok", judge=Judged(score=1.0), cost_usd=0.5),
            )
        )
    after = col.cells["t07"]
    assert (after.n, after.solved, after.flaky, after.mean) == (3, 3, False, 1.0)
    records = fixed_records("root") + [
        AttemptRecord(repeat=r, id="t07", status="ok", judge=Judged(score=1.0), cost_usd=0.5) for r in (1, 3)
    ]
    assert_column_figures(col, records)


# ---------------------------------------------------------------------------------------------------- the table


def reference_rows(store, filter="all", search="", sort="id", reverse=False, label_tasks=None):
    """The per-task table computed here from the records, as the store's docstring defines it."""
    cols = list(store.columns.values())
    data = {c.key: by_task(list(c.records.values())) for c in cols}
    base = store.baseline
    a, b = (base, cols[-1].key if cols[-1].key != base else cols[0].key) if len(cols) >= 2 else (None, None)
    out = []
    for tid in store.task_ids:
        if search and search.lower() not in store.search_text(tid):
            continue
        if label_tasks is not None and tid not in label_tasks:
            continue
        present = [data[c.key].get(tid) for c in cols]
        live = [p for p in present if p]
        if filter == "errors" and not any(r.status != "ok" for p in live for r in p):
            continue
        if filter == "unknown_cost" and not any(r.cost_usd is None for p in live for r in p):
            continue
        if filter == "flaky" and not any(
            len(p) > 1 and (0 < sum(r.judge.score >= 1 for r in p) < len(p) or len({r.judge.score for r in p}) > 1)
            for p in live
        ):
            continue
        if filter in ("regressions", "improvements"):
            pa, pb = data[a].get(tid), data[b].get(tid)
            if not pa or not pb:
                continue
            d = mean_of(pb) - mean_of(pa)
            if not (d < -1e-9 if filter == "regressions" else d > 1e-9):
                continue
        out.append(tid)
    if sort == "id":
        return sorted(out, reverse=True) if reverse else out
    kind, _, name = sort.partition(":")
    tasks = data[name]

    def value(tid):
        p = tasks.get(tid)
        if not p:
            return None
        if kind == "mean":
            return mean_of(p)
        if kind == "solved":
            return float(any(r.judge.score >= 1 for r in p))
        bp = data[base].get(tid)
        return None if not bp else mean_of(p) - mean_of(bp)

    have = [t for t in out if value(t) is not None]
    return sorted(have, key=value, reverse=reverse) + [t for t in out if value(t) is None]


@pytest.mark.parametrize("seed", [3, 4])
def test_the_per_task_table_filters_and_sorts_as_computed_by_hand(tmp_path, seed):
    store = EvalStore({f"t{i:02d}": {"id": f"t{i:02d}", "text": f"question {i % 7}"} for i in range(40)})
    for label in FIXED_LABELS:
        store.add_stored(write_eval(tmp_path / "eval" / label, random_records(label, seed)))
    assert store.baseline == "none"
    for filter in FILTERS:
        assert store.rows(filter=filter).task_ids == reference_rows(store, filter), filter
    assert store.rows(search="QUESTION 3").task_ids == reference_rows(store, search="question 3")
    for sort in ["id", "mean:root", "solved:final", "delta:final", "delta:root", "mean:none"]:
        for reverse in (False, True):
            got = store.rows(sort=sort, reverse=reverse).task_ids
            assert got == reference_rows(store, sort=sort, reverse=reverse), (sort, reverse)
    rows = store.rows(filter="errors", sort="mean:final", reverse=True)
    for row in rows:
        for key, cell, delta in zip(store.keys, row.cells, row.deltas):
            recs = by_task(list(store.columns[key].records.values())).get(row.task_id)
            assert (cell is None) == (recs is None)
            if recs:
                assert math.isclose(cell.mean, mean_of(recs))
                base = by_task(list(store.columns["none"].records.values())).get(row.task_id)
                assert (delta is None) == (base is None)
                if base:
                    assert math.isclose(delta, mean_of(recs) - mean_of(base))
    assert rows.position(rows[3].task_id) == 3 and rows.position("not a task") is None
    assert rows[:2] == [rows[0], rows[1]] and rows == list(rows)


def test_the_label_filter_keeps_the_tasks_of_labelled_and_unlabelled_failures():
    store = fixed_store()
    store.put_annotation("final", Annotation(repeat=1, id="t10", labels=["format error"]))
    assert store.rows(label="format error").task_ids == ["t10"]
    unlabelled = {
        r.id
        for c in store.columns.values()
        for r in c.records.values()
        if is_failure(r) and not (c.key == "final" and r.key == ("t10", 1))
    }
    assert store.rows(label=UNLABELLED).task_ids == [t for t in store.task_ids if t in unlabelled]


# ---------------------------------------------------------------------------------------------------- errors, walk


def test_error_groups_are_every_failed_attempt_by_status_and_message():
    store = fixed_store()
    want: dict[tuple[str, str], dict[str, list[tuple[str, int]]]] = {}
    for key, col in store.columns.items():
        for rec in col.records.values():
            if rec.status != "ok":
                want.setdefault((rec.status, rec.error or ""), {}).setdefault(key, []).append(rec.key)
    got = store.error_groups()
    assert {(s, m): per for s, m, per in got} == {k: {c: sorted(v) for c, v in per.items()} for k, per in want.items()}
    sizes = [sum(len(v) for v in per.values()) for _, _, per in got]
    assert sizes == sorted(sizes, reverse=True)
    assert store.columns["final"].error_keys() == [("t05", 1), ("t05", 2), ("t09", 2), ("t05", 3)]


def reference_walk(store):
    """The triage walk computed here from the records (regressions by largest drop, errors, flaky, the rest)."""
    cols = [c for c in store.columns.values() if not c.archived]
    base = store.columns.get(store.baseline)
    rank = {t: i for i, t in enumerate(store.task_ids)}
    keyed = []
    for ci, col in enumerate(cols):
        tasks = by_task(list(col.records.values()))
        btasks = by_task(list(base.records.values())) if base is not None and col is not base else {}
        for tid, recs in tasks.items():
            drop = mean_of(btasks[tid]) - mean_of(recs) if tid in btasks else 0.0
            drop = drop if drop > 1e-9 else 0.0
            scores = [r.judge.score for r in recs]
            flaky = len(recs) > 1 and (0 < sum(s >= 1 for s in scores) < len(recs) or max(scores) - min(scores) > 1e-9)
            for rec in recs:
                if not is_failure(rec):
                    continue
                group = 0 if drop else 1 if rec.status != "ok" else 2 if flaky else 3
                keyed.append(((group, -drop, rank[tid], ci, rec.repeat), (col.key, tid, rec.repeat)))
    return [f for _, f in sorted(keyed)]


@pytest.mark.parametrize("seed", [5, 6])
def test_the_walk_is_the_order_computed_by_hand(tmp_path, seed):
    store = EvalStore()
    for label in FIXED_LABELS:
        store.add_stored(write_eval(tmp_path / "eval" / label, random_records(label, seed)))
    walk = store.failure_walk()
    assert [(f.key, f.task_id, f.repeat) for f in walk] == reference_walk(store)
    assert store.walk_ready() and store.failure_walk() is walk
    f = walk[len(walk) // 2]
    assert walk.position(f.key, f.task_id, f.repeat) == len(walk) // 2
    store.set_baseline("root")
    assert not store.walk_ready()
    assert [(f.key, f.task_id, f.repeat) for f in store.failure_walk()] == reference_walk(store)


def test_a_column_whose_costs_are_all_unknown_says_unknown_not_0(tmp_path):
    """Every attempt without a cost: the sum is unknown ("unknown (3 attempts)"), never "$0.0000 + 3 unknown";
    one known cost among them: the known part and the count of the rest."""
    recs = [AttemptRecord(repeat=r, id="a", status="ok", judge=Judged(score=1.0), cost_usd=None) for r in (1, 2, 3)]
    col = build_stored(write_eval(tmp_path / "eval" / "none", recs), 1.0)
    assert col.cost_text() == "unknown (3 attempts)"
    recs[0] = AttemptRecord(repeat=1, id="a", status="ok", judge=Judged(score=1.0), cost_usd=0.25)
    col = build_stored(write_eval(tmp_path / "eval" / "root", recs), 1.0)
    assert col.cost_text() == "$0.2500 + 2 unknown"
