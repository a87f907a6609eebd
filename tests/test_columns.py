"""The columnar reader (core/records/columns.py) against the pydantic one (core/records.read_results): the same
attempts, the same warnings and the same one-line errors on hand-made and generated lines; records read back by
offset."""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermit_tui.core.errors import InputError
from hermit_tui.core.records import columns
from hermit_tui.core.records.columns import AttemptTable, read_table
from hermit_tui.core.records.results import AttemptRecord, Judged, read_results
from hermit_tui.core.records.scores import tabulate

RECORD = {
    "repeat": 1,
    "id": "a",
    "status": "ok",
    "error": None,
    "output": "a",
    "judge": {"score": 1.0},
    "cost_usd": 0.0,
    "wall_s": 0.1,
    "api_speed": None,
    "tokens": None,
    "log": None,
}
JSON_LEAF = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20)
)
JSON_VALUE = st.recursive(
    JSON_LEAF,
    lambda kids: st.one_of(st.lists(kids, max_size=4), st.dictionaries(st.text(max_size=8), kids, max_size=4)),
    max_leaves=20,
)
FIELDS = st.sampled_from(["repeat", "id", "status", "judge", "cost_usd", "wall_s", "output", "error", "log", "tokens"])
JUDGE_FIELDS = st.sampled_from(["score", "feedback", "extra"])


def same_number(a: float, b) -> bool:
    b = math.nan if b is None else float(b)
    return (math.isnan(a) and math.isnan(b)) or a == b


def number_or_nan(x) -> float:
    """What the columns keep of a cost, token count or wall time: NaN unless a finite number."""
    if x is None or isinstance(x, bool) or not isinstance(x, (int, float)):
        return math.nan
    try:
        x = float(x)
    except OverflowError:
        return math.nan
    return x if math.isfinite(x) else math.nan


def outcome(reader, path):
    try:
        return reader(path), None
    except InputError as exc:
        return None, str(exc)


def assert_same(path) -> None:
    """read_table holds what read_results reads, or fails with the same message."""
    want, want_error = outcome(read_results, path)
    got, got_error = outcome(read_table, path)
    assert got_error == want_error
    if want is None:
        return
    assert got.skipped == want.skipped
    assert got.n == len(want.records)
    for row, rec in enumerate(want.records):
        assert got.key(row) == (rec.id, max(-columns.REPEAT_LIMIT, min(columns.REPEAT_LIMIT, rec.repeat)))
        assert got.status_name(row) == rec.status
        assert same_number(float(got.score[row]), rec.judge.score)
        assert same_number(float(got.cost[row]), number_or_nan(rec.cost_usd))
        assert same_number(float(got.tokens[row]), number_or_nan(rec.tokens))
        assert same_number(float(got.wall[row]), number_or_nan(rec.wall_s))
        assert got.errors.get(row) == rec.error
        assert repr(got.token_value(row)) == repr(rec.tokens)  # as written: 12.0 stays a float, a mapping a mapping
        back = got.record(row)  # read back by offset: the record read_results gives
        assert back.model_dump_json() == rec.model_dump_json()
    got.close()


def write(tmp_path, lines, final_newline=True):
    path = tmp_path / "results.jsonl"
    data = "\n".join(lines) + ("\n" if final_newline else "")
    path.write_bytes(data.encode("utf-8", errors="surrogatepass"))
    return path


HAND = {
    "plain": [json.dumps(RECORD), json.dumps({**RECORD, "id": "b", "cost_usd": None, "tokens": 12})],
    "lax forms pydantic reads": [
        json.dumps({**RECORD, "repeat": "2"}),
        json.dumps({**RECORD, "repeat": True}),
        json.dumps({**RECORD, "repeat": 3.0}),
        json.dumps({**RECORD, "judge": {"score": "0.5"}}),
        json.dumps({**RECORD, "cost_usd": "0.25"}),
    ],
    "non-finite numbers": [
        json.dumps(RECORD).replace('"score": 1.0', '"score": NaN'),
        json.dumps(RECORD).replace('"score": 1.0', '"score": -Infinity'),
        json.dumps(RECORD).replace('"score": 1.0', '"score": 1e999'),
        json.dumps(RECORD).replace('"cost_usd": 0.0', '"cost_usd": NaN'),
    ],
    "huge repeat": [json.dumps({**RECORD, "repeat": 1 << 70}), json.dumps({**RECORD, "repeat": -(1 << 80)})],
    "odd tokens": [
        json.dumps({**RECORD, "tokens": {"in": 3, "out": 4}}),
        json.dumps({**RECORD, "tokens": "many"}),
        json.dumps({**RECORD, "tokens": 1 << 1100}),
    ],
    "blank lines and CRLF": ["", json.dumps(RECORD) + "\r", "   ", json.dumps({**RECORD, "repeat": 2}), ""],
    "wrong types": [json.dumps(RECORD), json.dumps({**RECORD, "judge": {"score": 1, "extra": [1]}})],
    "feedback not text": [json.dumps({**RECORD, "judge": {"score": 1, "feedback": 3}})],
    "status": [json.dumps({**RECORD, "status": "OK"})],
    "wall null": [json.dumps({**RECORD, "wall_s": None})],
    "nested too deep for pydantic": [
        json.dumps({**RECORD, "output": None}).replace('"output": null', '"output": ' + "[" * 300 + "]" * 300)
    ],
    "nested deep but readable": [
        json.dumps({**RECORD, "output": None}).replace('"output": null', '"output": ' + "[" * 150 + "]" * 150)
    ],
    "bad UTF-8 in a skipped key": [
        '{"repeat": 1, "id": "a", "status": "ok", "judge": {"score": 1}, "output": "\udcff"}'
    ],
    "a bad middle line": [json.dumps(RECORD), "{not json}", json.dumps(RECORD)],
    "two bad lines": [json.dumps(RECORD), "{", "{"],
    "not an object": ["[1, 2]", json.dumps(RECORD)],
    "extra keys kept in the record": [json.dumps({**RECORD, "traceback": "Traceback...", "zz": [1, {"a": 2}]})],
}


@pytest.mark.parametrize("name", list(HAND))
@pytest.mark.parametrize("final_newline", [True, False])
def test_hand_made_lines_read_as_read_results_reads_them(tmp_path, name, final_newline):
    assert_same(write(tmp_path, HAND[name], final_newline))


def test_a_cut_last_line_is_a_warning_and_a_cut_line_inside_is_an_error(tmp_path):
    good = json.dumps(RECORD)
    path = write(tmp_path, [good, good[:20]], final_newline=False)
    table = read_table(path)
    assert table.n == 1 and len(table.skipped) == 1 and ":2: truncated last line ignored" in table.skipped[0]
    path = write(tmp_path, [good, good[:20], "  "], final_newline=False)  # only blanks after it: still the last
    assert read_table(path).skipped and read_results(path).skipped
    path = write(tmp_path, [good, good[:20]], final_newline=True)  # ends with a newline: written whole, so bad
    with pytest.raises(InputError, match=r"results.jsonl:2: not a results record"):
        read_table(path)


# the property tests' settings: reproducible, no example database, large examples allowed
FUZZ = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)


def test_lines_across_read_blocks(tmp_path, monkeypatch):
    """Blocks cut lines anywhere: offsets, line numbers and the cut-last-line rule hold across them."""
    monkeypatch.setattr(columns, "BLOCK_BYTES", 37)
    lines = [json.dumps({**RECORD, "id": f"t{i}", "repeat": 1 + i % 3, "output": "x" * (i % 50)}) for i in range(40)]
    assert_same(write(tmp_path, lines))
    assert_same(write(tmp_path, lines + ["{cut"], final_newline=False))
    assert_same(write(tmp_path, lines[:5] + ["{bad"] + lines[5:]))


@FUZZ
@given(
    st.lists(
        st.one_of(
            st.tuples(FIELDS, JSON_VALUE).map(lambda kv: json.dumps({**RECORD, kv[0]: kv[1]})),
            st.tuples(JUDGE_FIELDS, JSON_VALUE).map(
                lambda kv: json.dumps({**RECORD, "judge": {"score": 0.5, kv[0]: kv[1]}})
            ),
            st.sampled_from(["NaN", "Infinity", "-Infinity", "1e999", '"1"', "true"]).map(
                lambda x: json.dumps(RECORD).replace('"score": 1.0', f'"score": {x}')
            ),
            st.integers(1, 400).map(
                lambda d: json.dumps({**RECORD, "output": None}).replace(
                    '"output": null', '"output": ' + "[" * d + "]" * d
                )
            ),
            st.text(max_size=40),
            JSON_VALUE.map(json.dumps),
        ),
        max_size=6,
    ),
    st.booleans(),
)
def test_generated_lines_read_as_read_results_reads_them(tmp_path, lines, final_newline):
    assert_same(write(tmp_path, lines, final_newline))


def test_a_file_that_cannot_be_read_is_the_same_one_line_error(tmp_path):
    for path in (tmp_path / "missing.jsonl", tmp_path):
        assert outcome(read_table, path)[1] == outcome(read_results, path)[1] is not None
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert outcome(read_table, fifo)[1] == outcome(read_results, fifo)[1] is not None


def test_records_are_read_from_the_file_that_was_read_even_after_it_is_replaced(tmp_path):
    path = write(tmp_path, [json.dumps({**RECORD, "id": f"t{i}", "output": f"answer {i}"}) for i in range(5)])
    table = read_table(path)
    path.unlink()  # a retry's compaction replaces the file; an archive move renames it
    path.write_text(json.dumps({**RECORD, "id": "other"}) + "\n")
    assert table.record(3).output == "answer 3" and table.record(3).id == "t3"
    table.close()
    with pytest.raises(InputError, match="no longer readable"):
        table.record(4)


def test_figures_unknown_costs_and_the_latest_attempt(tmp_path):
    rows = [
        {**RECORD, "id": "a", "repeat": 1, "judge": {"score": 0.0}, "cost_usd": 0.5},
        {
            **RECORD,
            "id": "b",
            "repeat": 1,
            "status": "error",
            "error": "ValueError: x",
            "cost_usd": None,
            "judge": {"score": 0.0},
        },
        {**RECORD, "id": "a", "repeat": 1, "judge": {"score": 1.0}, "cost_usd": 0.25},  # a re-run replaces
        {**RECORD, "id": "a", "repeat": 2, "status": "judge_error", "judge": {"score": 0.0}, "cost_usd": 0.0},
    ]
    table = read_table(write(tmp_path, [json.dumps(r) for r in rows]))
    assert table.ids == ["a", "b"] and table.task.tolist() == [0, 1, 0, 0]
    assert table.latest().tolist() == [1, 2, 3]
    assert table.known_cost() == 0.75 and table.unknown_costs() == 1  # a $0 cost is known, a null one is not
    assert table.cost_known.tolist() == [True, False, True, True]
    assert table.count_status(columns.ERROR) == 1 and table.count_status(columns.JUDGE_ERROR) == 1
    assert table.failed(1.0).tolist() == [True, True, False, True]
    assert table.errors == {1: "ValueError: x"}
    keyed = table.keyed()
    assert set(keyed) == {("a", 1), ("b", 1), ("a", 2)} and keyed[("a", 1)].judge.score == 1.0
    cols = table.attempt_columns(["b", "a", "c"])
    assert cols.task.tolist() == [1, 0, 1, 1]
    assert table.path is not None
    by_records = tabulate(read_results(table.path).records, ["b", "a", "c"], 1.0)
    by_columns = tabulate(cols, ["b", "a", "c"], 1.0)
    assert np.array_equal(by_records.mean, by_columns.mean) and by_records.n_ignored == by_columns.n_ignored


def test_a_table_grows_in_memory_with_live_attempts():
    table = AttemptTable()
    for i in range(200):
        rec = AttemptRecord(
            repeat=1 + i % 2,
            id=f"t{i // 2}",
            status="ok" if i % 7 else "error",
            error=None if i % 7 else "boom",
            judge=Judged(score=(i % 3) / 2),
            cost_usd=None if i % 5 == 0 else 0.01,
            tokens={"in": 1} if i == 3 else i,
        )
        assert table.append(rec, "tb" if i == 0 else None) == i
    assert table.n == 200 and len(table.ids) == 100
    assert table.record(17).id == "t8" and table.record(17).repeat == 2
    assert table.traceback(0) == "tb" and table.traceback(1) is None
    assert table.token_value(3) == {"in": 1} and table.token_value(4) == 4
    assert table.unknown_costs() == 40 and math.isclose(table.known_cost(), 160 * 0.01)
    assert sorted(table.errors) == [i for i in range(200) if i % 7 == 0]


def test_the_taxonomy_from_columns_is_the_taxonomy_from_records(tmp_path):
    """core.records.taxonomy gives core.records.annotations' figures: labels, failures, stale annotations (a re-run
    since), corrected scores, and per pair the tasks fixed, introduced and not triaged."""
    from hermit_tui.core.records import taxonomy as column_taxonomy
    from hermit_tui.core.records.annotations import Annotation, attempt_digest, pair_taxonomy, selector_taxonomy

    tables, records, notes = {}, {}, {}
    for label, shift in (("none", 0), ("final", 1)):
        rows = []
        for i in range(12):
            for r in (1, 2):
                score = ((i + r + shift) % 3) / 2
                status = "error" if (i + shift) % 5 == 0 else "ok"
                rows.append(
                    {
                        **RECORD,
                        "id": f"t{i}",
                        "repeat": r,
                        "status": status,
                        "judge": {"score": 0.0 if status != "ok" else score},
                        "output": f"{label} {i} {r}",
                    }
                )
        rows.append({**rows[3], "judge": {"score": 1.0}, "output": "re-run"})  # t1 repeat 2 re-run: replaces
        rows.append({**RECORD, "id": "outside", "repeat": 1, "judge": {"score": float("nan")}})
        folder = tmp_path / label
        folder.mkdir()
        path = folder / "results.jsonl"
        path.write_text("".join(json.dumps(r, allow_nan=True) + "\n" for r in rows))
        tables[label] = read_table(path)
        records[label] = {r.key: r for r in read_results(path).records}
        recs = records[label]
        notes[label] = {
            ("t0", 1): Annotation(id="t0", repeat=1, labels=["format error"], attempt=attempt_digest(recs[("t0", 1)])),
            ("t1", 2): Annotation(id="t1", repeat=2, labels=["timeout"], attempt="0" * 16),  # stale: re-run since
            ("t2", 1): Annotation(id="t2", repeat=1, labels=["judge disagrees"], corrected_score=0.75, note="hm"),
            ("t5", 2): Annotation(id="t5", repeat=2, labels=["format error", "timeout"] if label == "none" else []),
            ("t9", 9): Annotation(id="t9", repeat=9, labels=["x"]),  # no such attempt
        }
    test_ids = [f"t{i}" for i in range(12)]
    for label in tables:
        for threshold in (1.0, 0.5):
            want = selector_taxonomy(label, records[label], notes[label], threshold, task_ids=test_ids)
            got = column_taxonomy.selector_taxonomy(label, tables[label], notes[label], threshold, task_ids=test_ids)
            assert got == want
            assert want.stale == 2 and want.corrected == 1 and want.corrected_mean != want.recorded_mean
    for threshold in (1.0, 0.5):
        want_pair = pair_taxonomy(
            "none",
            records["none"],
            notes["none"],
            "final",
            records["final"],
            notes["final"],
            task_order=test_ids,
            threshold=threshold,
        )
        got_pair = column_taxonomy.pair_taxonomy(
            "none",
            tables["none"],
            notes["none"],
            "final",
            tables["final"],
            notes["final"],
            task_order=test_ids,
            threshold=threshold,
        )
        assert got_pair == want_pair and got_pair.labels


def assert_same_task_records(path) -> None:
    """lines.task_records gives each task's records as read_results reads them (file order), with its warnings,
    or fails with read_results' message."""
    from hermit_tui.core.records.lines import task_records

    want, want_error = outcome(read_results, path)
    ids = {rec.id for rec in want.records} | {"absent"} if want is not None else {"a", "absent"}
    for task in sorted(ids):
        skipped: list[str] = []
        got, got_error = outcome(lambda p, task=task, skipped=skipped: task_records(p, task, skipped), path)
        assert got_error == want_error
        if want is None:
            continue
        assert skipped == want.skipped
        assert [r.model_dump_json() for r in got] == [r.model_dump_json() for r in want.records if r.id == task]


@pytest.mark.parametrize("name", list(HAND))
@pytest.mark.parametrize("final_newline", [True, False])
def test_one_tasks_records_read_as_read_results_reads_them(tmp_path, name, final_newline):
    assert_same_task_records(write(tmp_path, HAND[name], final_newline))
    lines = [json.dumps({**RECORD, "id": f"t{i % 4}", "repeat": 1 + i // 4}) for i in range(12)]
    assert_same_task_records(write(tmp_path, lines + HAND[name], final_newline))


@settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
@given(
    st.lists(
        st.one_of(
            st.tuples(FIELDS, JSON_VALUE).map(lambda kv: json.dumps({**RECORD, kv[0]: kv[1]})),
            st.tuples(JUDGE_FIELDS, JSON_VALUE).map(
                lambda kv: json.dumps({**RECORD, "judge": {"score": 0.5, kv[0]: kv[1]}})
            ),
            st.integers(1, 400).map(
                lambda d: json.dumps({**RECORD, "output": None}).replace(
                    '"output": null', '"output": ' + "[" * d + "]" * d
                )
            ),
            st.text(max_size=40),
        ),
        max_size=6,
    ),
    st.booleans(),
)
def test_generated_lines_give_one_tasks_records_as_read_results_does(tmp_path, lines, final_newline):
    assert_same_task_records(write(tmp_path, lines, final_newline))


def test_one_tasks_records_of_a_clean_file_are_read_without_numpy(tmp_path):
    """show and annotate read one task without numpy's import (issue 30: 0.1 s of a command) when every line is
    clean; the columns, numpy with them, only for a file with a line msgspec refuses."""
    import subprocess
    import sys

    clean = write(tmp_path, [json.dumps({**RECORD, "id": f"t{i}"}) for i in range(5)])
    (tmp_path / "odd").mkdir()
    odd = write(tmp_path / "odd", [json.dumps(RECORD), json.dumps({**RECORD, "repeat": "2"})])
    code = (
        "import sys\n"
        "from hermit_tui.core.records.lines import task_records\n"
        "n = len(task_records(sys.argv[1], sys.argv[2]))\n"
        "print(n, 'numpy' in sys.modules, 'hermit_tui.core.records.columns' in sys.modules)\n"
    )
    run = [sys.executable, "-c", code]
    assert subprocess.run([*run, str(clean), "t3"], capture_output=True, text=True, check=True).stdout.split() == [
        "1",
        "False",
        "False",
    ]
    assert subprocess.run([*run, str(odd), "a"], capture_output=True, text=True, check=True).stdout.split() == [
        "2",
        "True",
        "True",
    ]


LIGHT_HAND = {
    **HAND,
    "adapter usage recorded": [
        json.dumps({**RECORD, "adapter_usage": {"used": True, "tools": ["lookup"]}}),
        json.dumps({**RECORD, "id": "b", "judge": {"score": 0.5, "extra": {"adapter_usage": {"used": False}}}}),
        json.dumps({**RECORD, "id": "c", "adapter_usage": None}),
    ],
    "hermit-tui's keys of the wrong type": [json.dumps(RECORD), json.dumps({**RECORD, "traceback": 5})],
    "printed and replaced": [json.dumps({**RECORD, "printed": "p.txt", "replaced_surrogates": ["output"]})],
    "replaced not a list of text": [json.dumps({**RECORD, "replaced_surrogates": [1]})],
    "a lone surrogate escaped": [json.dumps(RECORD).replace('"output": "a"', '"output": "\\ud800"')],
}


def assert_same_light_records(path) -> bool:
    """The why summary's light records are read_results' records in every field it reads, or None (read_results
    then reads the file); whether they were read."""
    from hermit_tui.core.why.pair import _record_usage, light_records

    got = light_records(path)
    if got is None:
        return False
    want = read_results(path)  # a file the light reader takes, read_results reads whole
    assert want.skipped == []
    assert len(got) == len(want.records)
    for light, rec in zip(got, want.records):
        assert light.key == rec.key and light.status == rec.status and light.log == rec.log
        assert type(light.judge.score) is type(rec.judge.score) and same_number(light.judge.score, rec.judge.score)
        assert light.judge.extra == rec.judge.extra and light.judge.feedback == rec.judge.feedback
        assert repr(_record_usage(light)) == repr(_record_usage(rec))
        assert (light.error, light.traceback, light.printed, light.replaced_surrogates) == (
            rec.error,
            rec.traceback,
            rec.printed,
            rec.replaced_surrogates,
        )
        assert repr(light.wall_s) == repr(rec.wall_s) and repr(light.cost_usd) == repr(rec.cost_usd)
    return True


@pytest.mark.parametrize("name", list(LIGHT_HAND))
@pytest.mark.parametrize("final_newline", [True, False])
def test_the_why_summarys_light_records_are_read_results_records(tmp_path, name, final_newline):
    read = assert_same_light_records(write(tmp_path, LIGHT_HAND[name], final_newline))
    # the files whose every line msgspec reads as pydantic does; any other goes to read_results
    light = {"plain", "huge repeat", "odd tokens", "blank lines and CRLF", "nested deep but readable"}
    light |= {"extra keys kept in the record", "adapter usage recorded", "printed and replaced"}
    assert read == (name in light)


@FUZZ
@given(
    st.lists(
        st.one_of(
            st.tuples(FIELDS, JSON_VALUE).map(lambda kv: json.dumps({**RECORD, kv[0]: kv[1]})),
            st.tuples(JUDGE_FIELDS, JSON_VALUE).map(
                lambda kv: json.dumps({**RECORD, "judge": {"score": 0.5, kv[0]: kv[1]}})
            ),
            st.tuples(
                st.sampled_from(["adapter_usage", "traceback", "printed", "replaced_surrogates"]), JSON_VALUE
            ).map(lambda kv: json.dumps({**RECORD, kv[0]: kv[1]})),
            st.sampled_from(["NaN", "Infinity", "1e999", '"1"', "true", "1", "0"]).map(
                lambda x: json.dumps(RECORD).replace('"score": 1.0', f'"score": {x}')
            ),
            st.integers(1, 400).map(
                lambda d: json.dumps({**RECORD, "output": None}).replace(
                    '"output": null', '"output": ' + "[" * d + "]" * d
                )
            ),
            st.text(max_size=40),
        ),
        max_size=6,
    ),
    st.booleans(),
)
def test_generated_lines_give_light_records_as_read_results_does(tmp_path, lines, final_newline):
    assert_same_light_records(write(tmp_path, lines, final_newline))
