"""The headless CLI as a user runs it: a real process, its output, its exit code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

FAST = "agent.params.latency_scale=0.01"


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "HERMIT_TUI_CONFIG_DIR": str(Path(cwd or ".").resolve() / ".settings")}
    return subprocess.run(
        [sys.executable, "-m", "hermit_tui", *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=120
    )


@pytest.fixture
def demo(tmp_path):
    out = cli("demo", str(tmp_path / "demo"), "--no-ui")
    assert out.returncode == 0, out.stderr
    path = Path(out.stdout.strip())
    assert path == tmp_path / "demo" / "run.yaml" and path.is_file()
    assert "teaching demonstration" in out.stderr
    return path


def test_one_adapter_prints_its_summary_like_hermit(demo):
    out = cli("eval", "--config", str(demo), "--adapter", "root", FAST)
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert summary["adapter"] == "root" and summary["tasks"] == 16 and summary["repeats"] == 3
    on_disk = json.loads((demo.parent / "runs/demo/eval/root/summary.json").read_text())
    assert summary == on_disk


def test_several_adapters_print_label_to_summary(demo):
    out = cli(
        "eval", "--config", str(demo), "--adapter", "none", "--adapter", "demo/ckpt-step-1", "eval.repeats=1", FAST
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert list(data) == ["none", "demo_ckpt-step-1"]
    assert (demo.parent / "runs/demo/eval/demo_ckpt-step-1/summary.json").is_file()


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--adapter", "nosuchtag"], "nosuchtag"),
        (["--adapter=--output=/tmp/x"], "--output"),
        (["--adapter", "root", "eval.repeats=three"], "eval.repeats"),
        (["--adapter", "root", "agent.concurency=2"], "agent.concurency"),
        (["--adapter", "root", "--limit", "0"], "--limit"),
        (["--adapter", "root", "--concurrency", "x"], "concurrency"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(demo, args, needle):
    out = cli("eval", "--config", str(demo), *args)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in out.stderr
    assert out.stdout == ""
    assert not (demo.parent / "runs/demo/eval").exists()


def test_missing_config_and_yaml_error(tmp_path):
    out = cli("eval", "--config", str(tmp_path / "nope.yaml"), "--adapter", "none")
    assert out.returncode == 2 and "nope.yaml" in out.stderr and len(out.stderr.strip().splitlines()) == 1
    bad = tmp_path / "run.yaml"
    bad.write_text("data:\n  tasks: [unclosed\n")
    out = cli("eval", "--config", str(bad), "--adapter", "none")
    assert out.returncode == 2 and "run.yaml" in out.stderr and "Traceback" not in out.stderr


def test_demo_again_prints_only_its_path(demo):
    """The README's commands take `--config "$(hermit-tui demo --no-ui)"`: the tip was printed when the demo was
    made, and the path alone after that (the workspace untouched: its evaluations stay)."""
    (demo.parent / "mine.txt").write_text("kept")
    out = cli("demo", str(demo.parent), "--no-ui")
    assert out.returncode == 0 and out.stdout.strip() == str(demo) and out.stderr == ""
    assert (demo.parent / "mine.txt").read_text() == "kept"


def test_demo_refuses_a_foreign_folder(tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    out = cli("demo", str(tmp_path / "mine"), "--no-ui")
    assert out.returncode == 2
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"


def test_a_config_as_the_first_word_opens_the_dashboard_as_config_does(tmp_path, monkeypatch):
    import hermit_tui.cli as cli_main

    opened: list[tuple[Path | None, list[str] | None]] = []

    def fake_open(path: Path | None, sets: list[str] | None) -> int:
        opened.append((path, sets))
        return 0

    monkeypatch.setattr(cli_main, "open_dashboard", fake_open)
    project = tmp_path / "project"
    project.mkdir()
    (project / "run.yaml").write_text("run_name: x\n")
    assert cli_main.main([str(project / "run.yaml")]) == 0
    assert cli_main.main([str(project)]) == 0  # a project's folder: its run.yaml
    assert cli_main.main(["--set", "eval.repeats=1", str(project / "run.yaml")]) == 0  # the --set value is skipped
    assert cli_main.main(["--config", str(project / "run.yaml")]) == 0
    paths = [str(path) for path, _ in opened]
    assert paths == [str(project / "run.yaml")] * 4
    assert opened[2][1] == ["eval.repeats=1"]


@pytest.mark.parametrize(
    "word, needle", [("nonsense", "neither a command"), ("missing.yaml", "missing.yaml"), ("runs", "is a directory")]
)
def test_a_first_word_that_is_no_command_nor_config_is_one_line_exit_2(tmp_path, word, needle):
    (tmp_path / "runs").mkdir()  # a folder without a run.yaml
    out = cli(word, cwd=tmp_path)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in out.stderr
    assert out.stdout == "" and sorted(p.name for p in tmp_path.iterdir() if p.name != ".settings") == ["runs"]
