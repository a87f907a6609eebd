"""Exports for machines (issue 16): ``report --format csv --per attempt`` and ``report --format junit``, checked
against results.jsonl read here, the JUnit XML validated by parsing it as CI reporters do."""

from __future__ import annotations

import csv
import io
import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from demo_copies import repair_worktree

from hermit_tui.cli import main
from hermit_tui.core.records.results import AttemptRecord
from hermit_tui.core.report.build import build_report
from hermit_tui.core.report.exports import ATTEMPT_COLUMNS, error_kind, read_attempts, to_attempts_csv, to_junit
from hermit_tui.core.run.runner import EvalRun
from hermit_tui.core.workspace.config import load_config
from hermit_tui.core.workspace.tasks import load_tasks

FAST = ["agent.params.latency_scale=0"]
LABELS = ["none", "root", "final"]


def child(element: ET.Element, path: str) -> ET.Element:
    """The element at ``path`` under ``element``, which the test expects to be there."""
    found = element.find(path)
    assert found is not None, path
    return found


def attr(element: ET.Element, name: str) -> str:
    """An attribute the test expects ``element`` to carry."""
    value = element.get(name)
    assert value is not None, (element.tag, name)
    return value


@pytest.fixture(scope="module")
def evaluated(demo_template, tmp_path_factory) -> Path:
    dest = tmp_path_factory.mktemp("exports") / "demo"
    shutil.copytree(demo_template, dest, symlinks=True)
    repair_worktree(demo_template, dest)
    EvalRun(load_config(dest / "run.yaml", FAST), LABELS, update_card=False).run_sync()
    return dest


def on_disk(ws: Path, label: str) -> list[dict]:
    return [json.loads(line) for line in (ws / f"runs/demo/eval/{label}/results.jsonl").read_text().splitlines()]


def report(ws: Path, labels=None, **kw):
    config = load_config(ws / "run.yaml")
    return build_report(config, load_tasks(config), labels, **kw)


def run_report(ws: Path, *args: str, capsys) -> tuple[int, str, str]:
    code = main(["report", "--config", str(ws / "run.yaml"), *args])
    out = capsys.readouterr()
    return code, out.out, out.err


# ---------------------------------------------------------------------------------------------------- CSV


def test_per_attempt_csv_has_every_attempt_as_recorded(evaluated, capsys):
    code, text, err = run_report(evaluated, "--format", "csv", "--per", "attempt", capsys=capsys)
    assert code == 0, err
    table = list(csv.reader(io.StringIO(text)))
    assert (
        tuple(table[0])
        == ATTEMPT_COLUMNS
        == ("selector", "task", "repeat", "status", "score", "error_kind", "cost_usd", "tokens", "wall_s")
    )
    body = table[1:]
    assert len(body) == 3 * 16 * 3
    test_ids = (evaluated / "test.txt").read_text().split()
    for label in LABELS:
        mine = [row for row in body if row[0] == label]
        expected = sorted(on_disk(evaluated, label), key=lambda r: (test_ids.index(r["id"]), r["repeat"]))
        assert [(row[1], int(row[2])) for row in mine] == [(r["id"], r["repeat"]) for r in expected]
        for row, rec in zip(mine, expected):
            assert row[3] == rec["status"] and float(row[4]) == rec["judge"]["score"]
            assert row[6] == ("" if rec["cost_usd"] is None else repr(float(rec["cost_usd"])))  # empty: unknown
            assert row[7] == ("" if rec["tokens"] is None else str(rec["tokens"]))
            assert float(row[8]) == rec["wall_s"]
            kind = rec["error"].split(":")[0] if rec["status"] != "ok" else ""
            assert row[5] == kind
    kinds = {(row[1], row[3], row[5]) for row in body if row[3] != "ok"}
    assert kinds == {("date-05", "error", "ValueError"), ("roman-05", "judge_error", "LookupError")}
    assert sum(row[6] == "" for row in body) == 27  # 9 unknown-cost attempts per selector


def test_per_attempt_csv_neutralises_formulas(evaluated):
    rep = report(evaluated, ["none"])
    evil = [
        AttemptRecord(
            repeat=1,
            id='=HYPERLINK("http://x")',
            status="error",
            error="@SUM(A1): boom",
            judge={"score": 0.0},
            tokens={"in": 5, "out": "+1"},
        ),
        AttemptRecord(repeat=1, id="-2+3", status="ok", judge={"score": 1.0}, cost_usd=0.5, wall_s=1.5),
    ]
    rep = rep.model_copy(update={"test_ids": [r.id for r in evil]})
    rows = list(csv.reader(io.StringIO(to_attempts_csv(rep, {"none": evil}))))
    assert rows[1][1] == '\'=HYPERLINK("http://x")' and rows[2][1] == "'-2+3"
    assert rows[1][5] == "unknown"  # the error names no exception type ("@SUM(A1)" is not one)
    assert rows[1][7] == '{"in": 5, "out": "+1"}' and rows[2][6:] == ["0.5", "", "1.5"]
    assert (
        error_kind(
            AttemptRecord(repeat=1, id="t", status="error", error="asyncio.TimeoutError: slow", judge={"score": 0})
        )
        == "asyncio.TimeoutError"
    )


def test_per_attempt_goes_with_csv_only(evaluated, capsys):
    code, text, err = run_report(evaluated, "--format", "md", "--per", "attempt", capsys=capsys)
    assert code == 2 and text == "" and "--per attempt goes with --format csv" in err
    assert len(err.strip().splitlines()) == 1


# ---------------------------------------------------------------------------------------------------- JUnit


def outcome_by_hand(records: list[dict], threshold: float = 1.0) -> str:
    if not records:
        return "skipped"
    if all(r["status"] != "ok" for r in records):
        return "error"
    if not any(r["judge"]["score"] >= threshold for r in records):
        return "failure"
    return "pass"


def test_junit_parses_with_the_structure_ci_reporters_read(evaluated, tmp_path, capsys):
    out = tmp_path / "results.xml"
    code, _, err = run_report(evaluated, "--format", "junit", "--output", str(out), capsys=capsys)
    assert code == 0, err
    root = ET.parse(out).getroot()  # well-formed XML, or this raises
    assert root.tag == "testsuites"
    suites = root.findall("testsuite")
    assert [attr(child(s, "properties/property[@name='selector']"), "value") for s in suites] == LABELS
    test_ids = (evaluated / "test.txt").read_text().split()
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for suite, label in zip(suites, LABELS):
        cases = suite.findall("testcase")
        assert [c.get("classname") for c in cases] == [label] * 16
        assert [c.get("name") for c in cases] == test_ids
        records = on_disk(evaluated, label)
        counts = {"failure": 0, "error": 0, "skipped": 0}
        for case in cases:
            mine = [r for r in records if r["id"] == case.get("name")]
            want = outcome_by_hand(mine)
            children = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
            assert children == ([] if want == "pass" else [want]), case.get("name")
            if want in counts:
                counts[want] += 1
                element = case.find(want)
                assert element is not None
                assert element.get("message")
            assert float(attr(case, "time")) == pytest.approx(sum(r["wall_s"] for r in mine), abs=1e-3)
        assert (
            int(attr(suite, "tests")),
            int(attr(suite, "failures")),
            int(attr(suite, "errors")),
            int(attr(suite, "skipped")),
        ) == (16, counts["failure"], counts["error"], 0)
        assert counts["error"] == 2  # date-05 (pipeline) and roman-05 (judge) fail on every repeat
        date = next(c for c in cases if c.get("name") == "date-05").find("error")
        assert date is not None
        assert date.get("type") == "ValueError" and "every attempt failed (3 pipeline errors in 3)" in attr(
            date, "message"
        )
        roman = next(c for c in cases if c.get("name") == "roman-05").find("error")
        assert roman is not None
        assert roman.get("type") == "LookupError" and "3 judge errors in 3" in attr(roman, "message")
        for key, value in (("tests", 16), ("failures", counts["failure"]), ("errors", counts["error"])):
            totals[key] += value
    assert {k: int(attr(root, k)) for k in totals} == totals
    assert float(attr(root, "time")) == pytest.approx(sum(float(attr(s, "time")) for s in suites), abs=1e-2)
    failure = root.find(".//testcase/failure")
    assert failure is not None
    assert attr(failure, "message").startswith("no attempt reached the success threshold 1: best score")


def test_junit_threshold_skipped_tasks_and_characters_xml_cannot_hold(evaluated):
    rep = report(evaluated, ["none"], threshold=0.5)
    recs = [
        AttemptRecord(repeat=1, id="t1", status="ok", judge={"score": 0.5}),
        AttemptRecord(
            repeat=1, id="t2", status="error", error="ValueError: bad \x00\x1b[31m byte & <tag>", judge={"score": 0.0}
        ),
        AttemptRecord(repeat=2, id="t2", status="ok", judge={"score": 0.25}),
    ]
    rep = rep.model_copy(update={"test_ids": ["t1", "t2", "t3"]})
    root = ET.fromstring(to_junit(rep, {"none": recs}))
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert [child.tag for child in cases["t1"] if child.tag != "system-out"] == []  # 0.5 reaches --threshold 0.5
    failure = cases["t2"].find("failure")  # one attempt failed, one scored: below the threshold, not an error
    assert failure is not None and cases["t2"].find("error") is None
    # escaped, control characters shown as their escape
    assert "bad \\x00\\x1b[31m byte & <tag>" in (failure.text or "")
    assert attr(child(cases["t3"], "skipped"), "message") == "no attempt recorded on this task"
    suite = root.find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors"), suite.get("skipped")) == (
        "3",
        "1",
        "0",
        "1",
    )


def test_read_attempts_keeps_the_latest_record_of_each_test_attempt(evaluated, tmp_path):
    ws = tmp_path / "demo"
    shutil.copytree(evaluated, ws, symlinks=True)
    repair_worktree(evaluated, ws)
    path = ws / "runs/demo/eval/none/results.jsonl"
    first = json.loads(path.read_text().splitlines()[0])
    extra = [dict(first, judge={"score": 0.123, "feedback": ""}), dict(first, id="not-a-test-task")]
    path.write_text(path.read_text() + "".join(json.dumps(r) + "\n" for r in extra))
    got = read_attempts(report(ws, ["none"]))["none"]
    assert len(got) == 48 and "not-a-test-task" not in {r.id for r in got}
    assert next(r for r in got if r.key == (first["id"], first["repeat"])).judge.score == 0.123


def test_the_exports_from_columns_equal_the_exports_from_records(evaluated, tmp_path):
    """read_attempts gives rows of the columns; the CSV and the JUnit XML are those the AttemptRecords give, odd
    lines included (a float token count, a mapping of tokens, a cost that is not a number, a re-run)."""
    from hermit_tui.core.records.results import read_results

    ws = tmp_path / "demo"
    shutil.copytree(evaluated, ws, symlinks=True)
    repair_worktree(evaluated, ws)
    path = ws / "runs/demo/eval/root/results.jsonl"
    lines = path.read_text().splitlines()
    rows = [json.loads(line) for line in lines]
    odd = [
        dict(rows[0], tokens=12.0),
        dict(rows[1], tokens={"in": 1, "out": 2}, cost_usd=None),
        dict(rows[2], status="error", error="KeyError: 'x'", judge={"score": 0.0, "feedback": ""}, wall_s=1.5),
    ]
    path.write_text(
        "\n".join(lines)
        + "\n"
        + "".join(json.dumps(r) + "\n" for r in odd)
        + json.dumps(rows[3]).replace('"cost_usd": ', '"cost_usd": NaN, "x": ')
        + "\n"
    )
    rep = report(ws)
    order = {tid: i for i, tid in enumerate(rep.test_ids)}
    by_records = {}
    for s in rep.selectors:
        kept = {r.key: r for r in read_results(Path(s.folder) / "results.jsonl").records if r.id in order}
        by_records[s.label] = sorted(kept.values(), key=lambda r: (order[r.id], r.repeat))
    by_columns = read_attempts(rep)
    assert [[r.key for r in v] for v in by_columns.values()] == [[r.key for r in v] for v in by_records.values()]
    assert to_attempts_csv(rep, by_columns) == to_attempts_csv(rep, by_records)
    assert to_junit(rep, by_columns) == to_junit(rep, by_records)
