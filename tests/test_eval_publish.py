"""Headless ``eval`` never moves the card or the tag unless asked (issue 27, finding 5): evaluating final leaves
CARD.md, the run's branch and ``<run>/final`` as they were and says how to review and publish; ``--publish``
publishes after the publish command's checks (and after the gate, when one is asked for); what could never be
published is refused before anything runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

FAST = "agent.params.latency_scale=0"


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "hermit_tui", *args], capture_output=True, text=True, timeout=300, env=dict(os.environ)
    )


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout.strip()


def state(demo_config: Path) -> dict[str, str]:
    """What publishing changes: the card in the checkout, the run branch's head and the final tag."""
    checkout = demo_config.parent / "runs/demo/checkout"
    return {
        "card": (checkout / "CARD.md").read_text(),
        "branch": git(checkout, "rev-parse", "refs/heads/demo"),
        "tag": git(checkout, "rev-parse", "refs/tags/demo/final^{commit}"),
    }


def test_eval_with_final_leaves_the_card_and_the_tag_alone(demo_config):
    before = state(demo_config)
    out = cli("eval", "--config", str(demo_config), "--adapter", "none", "--adapter", "final", "eval.repeats=1", FAST)
    assert out.returncode == 0, out.stderr
    assert state(demo_config) == before
    summary = json.loads((demo_config.parent / "runs/demo/eval/final/summary.json").read_text())
    assert summary["complete"] is True and "published" not in summary
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("final is evaluated; CARD.md and the final tag are unchanged")
    assert f"hermit-tui publish --config {demo_config} --dry-run" in last


def test_eval_without_final_says_nothing_of_publishing(demo_config):
    out = cli("eval", "--config", str(demo_config), "--adapter", "root", "eval.repeats=1", FAST)
    assert out.returncode == 0, out.stderr
    assert "publish" not in out.stderr


def test_eval_publish_publishes_after_the_publish_checks(demo_config):
    before = state(demo_config)
    out = cli(
        "eval", "--config", str(demo_config), "--adapter", "none", "--adapter", "root", "--adapter", "final",
        "--publish", FAST,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    after = state(demo_config)
    assert after["card"] != before["card"] and "## Evaluation" in after["card"]
    # the card commit sits on the branch, the tag moved to it, and its parent is the old head
    assert after["tag"] == after["branch"] != before["branch"]
    checkout = demo_config.parent / "runs/demo/checkout"
    assert git(checkout, "rev-parse", f"{after['branch']}^") == before["branch"]
    assert git(checkout, "diff", "--name-only", f"{before['branch']}..{after['branch']}") == "CARD.md"
    # the card's rows are the evaluations on disk: final's mean, computed here from results.jsonl
    rows = [json.loads(x) for x in (demo_config.parent / "runs/demo/eval/final/results.jsonl").read_text().split("\n")
            if x]  # fmt: skip
    mean = sum(r["judge"]["score"] for r in rows) / len(rows)
    assert f"{mean:.3f}" in after["card"]
    # the diff it reviewed went to stderr; stdout stays the summaries' JSON
    assert set(json.loads(out.stdout)) == {"none", "root", "final"}
    assert "+++" in out.stderr


def test_eval_publish_does_not_publish_when_the_gate_fails(demo_config):
    before = state(demo_config)
    out = cli(
        "eval", "--config", str(demo_config), "--adapter", "none", "--adapter", "final", "--publish",
        "--require", "improvement", "--margin", "0.95", "eval.repeats=1", FAST,
    )  # fmt: skip
    assert out.returncode == 3, out.stderr
    assert "not published: the gate failed" in out.stderr
    assert state(demo_config) == before


@pytest.mark.parametrize(
    "args, needle",
    [
        (
            ["--adapter", "none", "--adapter", "root", "--publish"],
            "--publish publishes final's card: add --adapter final",
        ),
        (["--adapter", "final", "--publish", "--limit", "2"], "a smoke subset (--limit) can never be published"),
        (["--adapter", "final", "--publish", "--no-card"], "--publish and --no-card contradict each other"),
    ],
)
def test_eval_publish_that_could_never_publish_is_refused_before_running(demo_config, args, needle):
    before = state(demo_config)
    out = cli("eval", "--config", str(demo_config), *args, FAST)
    assert out.returncode == 2 and needle in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr
    assert not (demo_config.parent / "runs/demo/eval").exists()  # nothing ran
    assert state(demo_config) == before
