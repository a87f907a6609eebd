"""``hermit-tui show``: one task's attempts under one selector, headless, as text and JSON; bad input is one line
and exit code 2."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hermit_tui.cli import main
from hermit_tui.core.run.runner import EvalRun
from hermit_tui.core.workspace.config import load_config

FAST = ["agent.params.latency_scale=0.01"]
FIXTURES = Path(__file__).parent / "fixtures" / "hermit_eval"


@pytest.fixture
def evaluated(demo_config):
    """The demo with none and root evaluated by hermit-tui (2 repeats)."""
    config = load_config(demo_config, FAST)
    EvalRun(config, ["none", "root"], repeats=2, update_card=False).run_sync()
    return demo_config, config.run_dir / "eval"


def records(path: Path) -> dict[tuple[str, int], dict]:
    return {(r["id"], r["repeat"]): r for r in map(json.loads, path.read_text().splitlines())}


def show(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["show", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_json_is_every_field_of_every_repeat_and_the_transcript(evaluated, capsys):
    config, eval_dir = evaluated
    code, out, err = show(
        capsys, "--config", str(config), "--adapter", "root", "--task", "arith-04", "--format", "json"
    )
    assert code == 0 and err == ""
    shown = json.loads(out)
    assert (shown["label"], shown["selector"], shown["written_by"]) == ("root", "root", "hermit-tui")
    row = next(
        json.loads(line)
        for line in (config.parent / "tasks.jsonl").read_text().splitlines()
        if json.loads(line)["id"] == "arith-04"
    )
    assert shown["task"] == {"id": "arith-04", "fields": row, "note": None}
    on_disk = records(eval_dir / "root" / "results.jsonl")
    kept = {
        (t["id"], t["repeat"]): t["messages"]
        for t in map(json.loads, (eval_dir / "root" / "transcripts.jsonl").read_text().splitlines())
    }
    assert [a["repeat"] for a in shown["attempts"]] == [1, 2]
    for a in shown["attempts"]:
        rec = on_disk[("arith-04", a["repeat"])]
        assert (a["status"], a["score"], a["feedback"], a["judge_extra"], a["output"], a["error"]) == (
            rec["status"],
            rec["judge"]["score"],
            rec["judge"]["feedback"],
            rec["judge"].get("extra"),
            rec["output"],
            rec["error"],
        )
        assert (a["cost_usd"], a["tokens"], a["wall_s"], a["api_speed"], a["log"]) == (
            rec["cost_usd"],
            rec["tokens"],
            rec["wall_s"],
            rec["api_speed"],
            rec["log"],
        )
        assert a["cost"] == f"${rec['cost_usd']:.4f}"
        assert a["transcript"]["source"] == "transcripts.jsonl"
        assert a["transcript"]["messages"] == kept[("arith-04", a["repeat"])]


def test_text_shows_fields_output_cost_and_the_tool_calls(evaluated, capsys):
    config, eval_dir = evaluated
    code, out, _ = show(capsys, "--config", str(config), "--adapter", "none", "--task", "arith-04", "--repeat", "2")
    assert code == 0
    rec = records(eval_dir / "none" / "results.jsonl")[("arith-04", 2)]
    lines = out.splitlines()
    assert lines[0] == f"Task arith-04 under none (selector none, {eval_dir / 'none'})"
    assert "  input     Compute: 289 + 476" in lines
    assert f"── repeat 2 ── ok · score {rec['judge']['score']:.3f}" in lines and "── repeat 1" not in out
    assert f"Cost        ${rec['cost_usd']:.4f}" in lines and f"Tokens      {rec['tokens']}" in lines
    assert f"Log         {rec['log']}" in lines
    assert lines[lines.index("Output") + 1] == f"  {rec['output']}"
    start = lines.index("Transcript  5 messages, from transcripts.jsonl")
    assert lines[start + 1 :] == [
        "  [1] system",
        "    You solve short exercises. Use a tool, then answer with the value only.",
        "  [2] user",
        "    Compute: 289 + 476",
        "  [3] assistant",
        "    → calls calculator (call_arith-04_r2)",
        "        {",
        '          "expression": "289 + 476"',
        "        }",
        "  [4] tool result · calculator (call_arith-04_r2)",
        "    765",
        "  [5] assistant",
        f"    {rec['output']}",
    ]  # no adapter: no notes in the system prompt


def test_failed_attempts_show_error_traceback_and_unknown_cost(evaluated, capsys):
    config, eval_dir = evaluated
    code, out, _ = show(capsys, "--config", str(config), "--adapter", "none", "--task", "date-05", "--repeat", "1")
    assert code == 0
    rec = records(eval_dir / "none" / "results.jsonl")[("date-05", 1)]
    assert rec["status"] == "error"
    assert f"Error       {rec['error']}" in out.splitlines() and "Cost        unknown" in out.splitlines()
    assert "\nTraceback\n  Traceback (most recent call last):" in out and "$0" not in out
    assert "Transcript  no transcript: the attempt recorded no messages and no log" in out
    code, out, _ = show(capsys, "--config", str(config), "--adapter", "root", "--task", "roman-05", "--format", "json")
    for a in json.loads(out)["attempts"]:
        assert a["status"] == "judge_error" and a["feedback"].startswith("the judge failed")
        assert a["cost_usd"] is None and a["cost"] == "unknown" and a["traceback"]


def test_an_evaluation_hermit_wrote(demo_config, capsys):
    eval_dir = load_config(demo_config).run_dir / "eval"
    shutil.copytree(FIXTURES / "root", eval_dir / "root")
    code, out, err = show(
        capsys, "--config", str(demo_config), "--adapter", "root", "--task", "arith-04", "--format", "json"
    )
    assert code == 0 and err == ""
    shown = json.loads(out)
    assert shown["written_by"] == "hermit" and len(shown["attempts"]) == 3
    for a in shown["attempts"]:  # its logs were written elsewhere and are gone: a note, not an error
        assert a["transcript"]["messages"] is None
        assert a["transcript"]["note"] == f"no transcript: the log {a['log']} is not found"


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["--adapter", "final", "--task", "arith-04"],
            "--adapter final: no evaluation in {eval}/final (evaluated here: none, root)",
        ),
        (["--adapter", "demo/nope", "--task", "arith-04"], "--adapter demo/nope: no evaluation in {eval}/demo_nope"),
        (
            ["--adapter", "none", "--task", "nope-1"],
            "--task nope-1: unknown task (not in {eval}/none/results.jsonl nor in {ws}/tasks.jsonl)",
        ),
        (
            ["--adapter", "none", "--task", "arith-01"],
            "--task arith-01: no attempt of it is recorded in {eval}/none/results.jsonl",
        ),
        (
            ["--adapter", "none", "--task", "arith-04", "--repeat", "3"],
            "--repeat 3: arith-04 has repeat 1, 2 under none",
        ),
        (
            ["--adapter", "none", "--task", "arith-04", "--repeat", "0"],
            "--repeat must be a positive whole number, got 0",
        ),
        (
            ["--adapter", "none", "--task", "arith-04", "--format", "xml"],
            "hermit-tui show: argument --format: invalid choice: 'xml'",
        ),
        (["--adapter", "none"], "hermit-tui show: the following arguments are required: --task"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(evaluated, capsys, args, message):
    config, eval_dir = evaluated
    before = {p: p.stat().st_mtime_ns for p in eval_dir.rglob("*")}
    code, out, err = show(capsys, "--config", str(config), *args)
    expected = message.format(eval=eval_dir, ws=config.parent)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("hermit-tui: error: ")
    assert expected in err, err
    assert {p: p.stat().st_mtime_ns for p in eval_dir.rglob("*")} == before  # nothing touched


def test_the_console_script(evaluated):
    config, _ = evaluated
    done = subprocess.run(
        [
            str(Path(sys.executable).with_name("hermit-tui")),
            "show",
            "--config",
            str(config),
            "--adapter",
            "none",
            "--task",
            "pct-04",
            "--repeat",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "→ calls calculator" in done.stdout and "tool result · calculator" in done.stdout
