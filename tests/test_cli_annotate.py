"""``hermit-tui annotate`` (triage, headless) and the failure taxonomy of ``hermit-tui report`` and of the card at
publish time; bad input is one line, exit code 2, and nothing written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hermit_tui.cli import main
from hermit_tui.core.records.annotations import ANNOTATIONS, JUDGE_DISAGREES
from hermit_tui.core.records.results import read_results
from hermit_tui.core.run.runner import EvalRun
from hermit_tui.core.workspace.config import load_config

FAST = ["agent.params.latency_scale=0"]
FIXTURES = Path(__file__).parent / "fixtures" / "hermit_eval"


@pytest.fixture
def evaluated(demo_config, tmp_path, monkeypatch):
    """The demo with none and final evaluated by hermit-tui (2 repeats), private settings."""
    monkeypatch.setenv("HERMIT_TUI_CONFIG_DIR", str(tmp_path / "settings"))
    config = load_config(demo_config, FAST)
    EvalRun(config, ["none", "final"], repeats=2, update_card=False).run_sync()
    return demo_config, config.run_dir / "eval"


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def annotate(capsys, config: Path, *args: str) -> tuple[int, str, str]:
    return run(capsys, "annotate", "--config", str(config), *args)


def failures(folder: Path) -> list:
    return [r for r in read_results(folder / "results.jsonl").records if r.status != "ok" or r.judge.score < 1.0]


def test_labels_note_and_corrected_score_are_appended_and_printed(evaluated, capsys):
    config, eval_dir = evaluated
    target = failures(eval_dir / "final")[0]
    where = ["--adapter", "final", "--task", target.id, "--repeat", str(target.repeat)]
    code, out, err = annotate(
        capsys, config, *where, "--label", "format error", "--label", "timeout", "--note", "stops mid-sentence"
    )
    assert (code, err) == (0, "")
    shown = json.loads(out)
    assert shown["label"] == "final" and shown["folder"] == str(eval_dir / "final")
    assert shown["annotation"]["labels"] == ["format error", "timeout"]
    assert shown["annotation"]["note"] == "stops mid-sentence" and shown["annotation"]["corrected_score"] is None

    code, out, _ = annotate(capsys, config, *where, "--judge-score", "1", "--remove-label", "timeout")
    assert code == 0
    assert json.loads(out)["annotation"]["labels"] == [JUDGE_DISAGREES, "format error"]
    assert json.loads(out)["annotation"]["corrected_score"] == 1.0

    code, out, _ = annotate(capsys, config, *where)  # no change asked for: prints the annotation
    assert code == 0 and json.loads(out)["annotation"]["corrected_score"] == 1.0
    lines = (eval_dir / "final" / ANNOTATIONS).read_text().splitlines()
    assert len(lines) == 2 and all(json.loads(line)["id"] == target.id for line in lines)
    # the recorded score never changes
    after = {r.key: r for r in read_results(eval_dir / "final" / "results.jsonl").records}
    assert after[target.key].judge.score == target.judge.score

    code, out, _ = annotate(capsys, config, *where, "--clear")
    assert code == 0 and json.loads(out)["annotation"] is None
    assert len((eval_dir / "final" / ANNOTATIONS).read_text().splitlines()) == 3


def test_labels_come_from_the_run_label_set_in_the_settings(evaluated, capsys):
    from hermit_tui.settings import label_set, remember_label_set

    config, eval_dir = evaluated
    yaml_before = Path(config).read_bytes()
    run_dir = load_config(config).run_dir
    remember_label_set(run_dir, ["", "off by one", "units"])
    assert label_set(run_dir) == [JUDGE_DISAGREES, "off by one", "units"]
    target = failures(eval_dir / "none")[0]
    where = ["--adapter", "none", "--task", target.id, "--repeat", str(target.repeat)]
    code, _, err = annotate(capsys, config, *where, "--label", "timeout")  # in the default set, not in this one
    assert code == 2 and "--label 'timeout': not in the run's label set (judge disagrees, off by one, units)" in err
    code, out, _ = annotate(capsys, config, *where, "--label", "off by one")
    assert code == 0 and json.loads(out)["annotation"]["labels"] == ["off by one"]
    assert Path(config).read_bytes() == yaml_before  # the label set lives in hermit-tui's settings, not run.yaml


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["--adapter", "root", "--task", "arith-04", "--repeat", "1", "--label", "timeout"],
            "--adapter root: no evaluation in {eval}/root (evaluated here: final, none)",
        ),
        (["--adapter", "-x", "--task", "arith-04", "--repeat", "1", "--label", "timeout"], "--adapter"),
        (
            ["--adapter", "none", "--task", "nope-1", "--repeat", "1", "--label", "timeout"],
            "--task nope-1: no attempt of it is recorded in {eval}/none/results.jsonl",
        ),
        (
            ["--adapter", "none", "--task", "arith-04", "--repeat", "3", "--label", "timeout"],
            "--repeat 3: arith-04 has repeat 1, 2 under none",
        ),
        (
            ["--adapter", "none", "--task", "arith-04", "--repeat", "0", "--label", "timeout"],
            "--repeat must be a positive whole number, got 0",
        ),
        (
            ["--adapter", "none", "--task", "arith-04", "--repeat", "1", "--label", "bogus"],
            "--label 'bogus': not in the run's label set",
        ),
        (
            ["--adapter", "none", "--task", "arith-04", "--repeat", "1", "--label", "  "],
            "--label: a label cannot be empty",
        ),
        (
            ["--adapter", "none", "--task", "arith-04", "--repeat", "1", "--judge-score", "inf"],
            "--judge-score: 'inf' is not a finite number",
        ),
        (
            ["--adapter", "none", "--task", "arith-04", "--repeat", "1", "--judge-score", "high"],
            "--judge-score: 'high' is not a number",
        ),
        (
            ["--adapter", "none", "--task", "arith-04", "--label", "timeout"],
            "hermit-tui annotate: the following arguments are required: --repeat",
        ),
        (["--adapter", "none", "--task", "arith-04", "--repeat", "one"], "argument --repeat: invalid int value: 'one'"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_nothing_written(evaluated, capsys, args, message):
    config, eval_dir = evaluated
    before = {p: p.stat().st_mtime_ns for p in eval_dir.rglob("*")}
    code, out, err = annotate(capsys, config, *args)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("hermit-tui: error: ")
    assert message.format(eval=eval_dir) in err, err
    assert {p: p.stat().st_mtime_ns for p in eval_dir.rglob("*")} == before  # nothing written
    assert not list(eval_dir.rglob(ANNOTATIONS))


def test_an_evaluation_hermit_wrote_takes_annotations_and_the_report_counts_them(
    demo_config, capsys, tmp_path, monkeypatch
):
    monkeypatch.setenv("HERMIT_TUI_CONFIG_DIR", str(tmp_path / "settings"))
    eval_dir = load_config(demo_config).run_dir / "eval"
    for label in ("none", "final"):
        shutil.copytree(FIXTURES / label, eval_dir / label)
    none_fail, final_fail = failures(eval_dir / "none"), failures(eval_dir / "final")
    for r in none_fail[:3]:
        assert (
            annotate(
                capsys,
                demo_config,
                "--adapter",
                "none",
                "--task",
                r.id,
                "--repeat",
                str(r.repeat),
                "--label",
                "wrong reasoning",
            )[0]
            == 0
        )
    r = final_fail[0]
    assert (
        annotate(
            capsys,
            demo_config,
            "--adapter",
            "final",
            "--task",
            r.id,
            "--repeat",
            str(r.repeat),
            "--label",
            "wrong reasoning",
            "--label",
            "format error",
        )[0]
        == 0
    )
    code, out, err = run(capsys, "report", "--config", str(demo_config), "--format", "json")
    assert code == 0, err
    tax = json.loads(out)["taxonomy"]
    by = {s["label"]: s for s in tax["selectors"]}
    assert by["none"]["counts"] == {"wrong reasoning": 3}
    assert by["none"]["failures"] == len(none_fail) and by["none"]["labelled_failures"] == 3
    assert by["final"]["counts"] == {"wrong reasoning": 1, "format error": 1}
    (pair,) = [p for p in tax["pairs"] if (p["a"], p["b"]) == ("none", "final")]
    changes = {c["label"]: c for c in pair["labels"]}
    none_tasks = sorted({x.id for x in none_fail[:3]})
    # a task is triaged on a side when every failure of that side on it carries a label
    open_none = {x.id for x in none_fail[3:]}
    open_final = {x.id for x in final_fail[1:]}
    wrong = changes["wrong reasoning"]
    assert wrong["a_tasks"] == len(none_tasks) and wrong["both"] == ([r.id] if r.id in none_tasks else [])
    only_none = [t for t in none_tasks if t != r.id]
    assert wrong["fixed"] == [t for t in only_none if t not in open_final]
    only_final = [r.id] if r.id not in none_tasks else []
    assert wrong["introduced"] == [t for t in only_final if t not in open_none]
    assert sorted(wrong["untriaged"]) == sorted(
        [t for t in only_none if t in open_final] + [t for t in only_final if t in open_none]
    )
    fmt = changes["format error"]
    assert (fmt["introduced"], fmt["untriaged"]) == (([], [r.id]) if r.id in open_none else ([r.id], []))

    code, out, _ = run(capsys, "report", "--config", str(demo_config))
    section = out.split("## Failure taxonomy", 1)[1].split("\n## ", 1)[0]
    assert "| wrong reasoning | 3 | 1 |" in section and "| format error | 0 | 1 |" in section
    assert f"| *failures* | {len(none_fail)} | {len(final_fail)} |" in section
    assert "### Labels: final vs none" in section


def test_the_report_says_when_nothing_is_labelled(evaluated, capsys):
    config, _ = evaluated
    code, out, _ = run(capsys, "report", "--config", str(config))
    assert code == 0
    assert "No attempt carries a label yet" in out.split("## Failure taxonomy", 1)[1]
    code, out, _ = run(capsys, "report", "--config", str(config), "--format", "json")
    assert all(s["counts"] == {} for s in json.loads(out)["taxonomy"]["selectors"])


def test_report_bad_input_is_one_line_exit_2(evaluated, capsys):
    config, _ = evaluated
    code, out, err = run(capsys, "report", "--config", str(config), "--adapter", "root", "--format", "json")
    assert code == 2 and out == "" and err.count("\n") == 1 and "no evaluation of 'root'" in err
