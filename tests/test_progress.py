"""Progress without a terminal (issue 16): ``eval`` with stderr piped prints a plain line per selector at each
quarter of its attempts and at least every 10 seconds. The timer is tested with an injectable clock (no waiting, no
timed assertion); the quarters with a real ``eval`` whose stderr is a pipe."""

from __future__ import annotations

import io
import json
import math
import re
import subprocess
import sys
import threading

import pytest

from hermit_tui.cli.progress import EVERY_S, PlainProgress, duration_text
from hermit_tui.core.records.results import AttemptRecord
from hermit_tui.core.run import events as ev

LINE = re.compile(
    r"^\[progress\] (\S+): (\d+)/(\d+) attempts \((\d+)%\), mean (\S+), errors (\d+), "
    r"cost \$([0-9.]+) known(?: \+ (\d+) unknown)?, ETA (\S+)$"
)


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def record(tid: str, score: float, status: str = "ok", cost: float | None = 0.01) -> AttemptRecord:
    return AttemptRecord(repeat=1, id=tid, status=status, judge={"score": score}, cost_usd=cost)


def started(progress, labels=("a", "b"), total=8):
    progress(
        ev.RunStarted(
            labels=list(labels),
            task_ids=[f"t{i}" for i in range(total)],
            repeats=1,
            concurrency=2,
            total=total * len(labels),
        )
    )
    for label in labels:
        progress(ev.SelectorStarted(label=label, selector=label, commit=None, total=total))


def finish(progress, label: str, rec: AttemptRecord) -> None:
    progress(ev.AttemptStarted(label=label, task_id=rec.id, repeat=rec.repeat))
    progress(ev.AttemptFinished(label=label, record=rec))


def parsed(text: str) -> list[tuple]:
    return [m.groups() for line in text.splitlines() if (m := LINE.match(line))]


def test_a_line_at_each_quarter_with_the_figures_so_far():
    out, clock = io.StringIO(), Clock()
    p = PlainProgress(out, clock=clock, ticker=False)
    started(p)
    scores = [1.0, 0.0, 0.5, 1.0, 0.0, 0.0, 1.0, 0.5]
    statuses = ["ok", "error", "ok", "ok", "judge_error", "ok", "ok", "ok"]
    costs = [0.01, None, 0.02, 0.01, None, 0.03, 0.01, 0.01]
    for i, (s, st, c) in enumerate(zip(scores, statuses, costs)):
        clock.now += 2.0  # each attempt of a takes 2 s
        finish(p, "a", record(f"t{i}", s, st, c))
    lines = parsed(out.getvalue())
    assert [g[1] for g in lines] == ["2", "4", "6", "8"]  # 8 attempts: a line every 2
    for groups in lines:
        label, done, total, pct, mean, errors, cost, unknown, eta = groups
        k = int(done)
        assert (label, total, pct) == ("a", "8", str(100 * k // 8))
        assert float(mean) == pytest.approx(
            sum(scores[:k]) / k, abs=5e-4 + 1e-9
        )  # a half rounds up: 0.3375 prints 0.338
        assert int(errors) == sum(st != "ok" for st in statuses[:k])
        assert float(cost) == pytest.approx(sum(c for c in costs[:k] if c is not None), abs=5e-5)
        assert int(unknown or 0) == sum(c is None for c in costs[:k])
        # the pace: k attempts done in the 2 (k - 1) s since the first one started (each starts and ends at once)
        elapsed = 2.0 * (k - 1)
        assert eta == (duration_text((8 - k) * elapsed / k) if k < 8 else "0s")
    assert out.getvalue().splitlines()[0] == (
        "[progress] 2 selectors (a, b) x 8 tasks x 1 repeats: 16 attempts, 2 at once"
    )


def test_at_least_every_ten_seconds_per_running_selector():
    out, clock = io.StringIO(), Clock()
    p = PlainProgress(out, clock=clock, ticker=False)
    started(p)
    finish(p, "a", record("t0", 1.0))  # 1 of 8: not a quarter yet
    assert parsed(out.getvalue()) == []
    clock.now += EVERY_S - 0.1
    p.tick()
    assert parsed(out.getvalue()) == []  # not silent for 10 s yet
    clock.now += 0.1
    p.tick()
    lines = parsed(out.getvalue())
    assert [(g[0], g[1]) for g in lines] == [("a", "1"), ("b", "0")]  # b has nothing done: its line says so
    assert lines[1][4] == "—" and lines[1][8] == "?"  # no mean and no pace yet
    p.tick()  # just written: nothing more
    assert len(parsed(out.getvalue())) == 2
    # a finished selector goes quiet; a quarter resets the selector's silence
    for i in range(1, 8):
        finish(p, "a", record(f"t{i}", 0.0))
    p(
        ev.SelectorFinished(
            label="a",
            summary={
                "adapter": "a",
                "tasks": 8,
                "repeats": 1,
                "mean_score": 0.125,
                "solved_once": 0.125,
                "attempts": 8,
                "expected_attempts": 8,
            },
        )
    )
    assert out.getvalue().splitlines()[-1] == "a: 8/8 attempts, mean 0.125, errors 0"
    n = len(parsed(out.getvalue()))
    clock.now += EVERY_S
    p.tick()
    assert [g[0] for g in parsed(out.getvalue())[n:]] == ["b"]


def test_resumed_records_do_not_count_towards_the_pace():
    out, clock = io.StringIO(), Clock()
    p = PlainProgress(out, clock=clock, ticker=False)
    started(p, labels=("a",), total=8)
    for i in range(4):  # an earlier launch recorded half: shown first, before any attempt starts
        p(ev.AttemptFinished(label="a", record=record(f"t{i}", 1.0)))
    assert parsed(out.getvalue()) == []  # no line for what was already there
    clock.now += 100.0  # however long ago that was
    finish(p, "a", record("t4", 0.0))  # the first attempt of this launch: starts and ends at once
    clock.now += 30.0
    finish(p, "a", record("t5", 0.0))  # 6 of 8: a quarter; 2 fresh attempts in 30 s, 2 left
    lines = parsed(out.getvalue())
    assert lines[-1][1:3] == ("6", "8") and lines[-1][8] == duration_text(2 * 30.0 / 2) == "30s"


def test_the_timer_thread_writes_without_events():
    """The context's thread calls tick on its own: a long attempt does not leave the log silent."""
    out, clock = io.StringIO(), Clock()
    p = PlainProgress(out, clock=clock, every_s=0.01)
    started(p, labels=("a",), total=4)
    clock.now += 1.0
    wrote = threading.Event()

    class Watch(io.StringIO):
        def write(self, text):
            if text.startswith("[progress] a: 0/4"):
                wrote.set()
            return out.write(text)

    p.stream = Watch()
    with p:
        assert wrote.wait(30), "the timer thread never wrote a line"
    assert p._thread is None


def test_duration_text():
    assert [duration_text(x) for x in (0, 12.4, 65, 3599, 3600 * 2 + 7 * 60 + 30, None, math.inf, -1)] == [
        "0s",
        "12s",
        "1m05s",
        "59m59s",
        "2h07m",
        "?",
        "?",
        "?",
    ]


def test_a_terminal_keeps_the_live_bars():
    from rich.progress import Progress

    from hermit_tui.cli.eval import _progress

    class Tty(io.StringIO):
        def isatty(self):
            return True

    sink, context = _progress(None, Tty())
    assert isinstance(context, Progress)
    sink, context = _progress(None, io.StringIO())
    assert isinstance(context, PlainProgress) and sink is context


def test_eval_with_stderr_piped_prints_the_quarters(demo_config):
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "hermit_tui",
            "eval",
            "--config",
            str(demo_config),
            "--adapter",
            "none",
            "--adapter",
            "final",
            "--no-card",
            "--concurrency",
            "2",
            "agent.params.latency_scale=0",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    summaries = json.loads(out.stdout)
    lines = parsed(out.stderr)
    for label in ("none", "final"):
        mine = [g for g in lines if g[0] == label]
        # 48 attempts each: the quarters are 12, 24, 36 and 48 (each count is reached one attempt at a time); a
        # loaded machine may add a 10-second line in between
        done = [int(g[1]) for g in mine]
        assert {12, 24, 36, 48} <= set(done) and done == sorted(done) and {g[2] for g in mine} == {"48"}
        last = mine[-1]
        s = summaries[label]
        assert float(last[4]) == pytest.approx(s["mean_score"], abs=5e-4 + 1e-9)
        assert int(last[5]) == s["errors"] and int(last[7]) == s["unknown_cost_tasks"] == 9
        assert float(last[6]) == pytest.approx(s["known_cost_usd"], abs=5e-5) and last[8] == "0s"
        assert f"{label}: 48/48 attempts, mean {round(s['mean_score'], 10):.3f}, errors {s['errors']}" in out.stderr
    assert "\x1b[" not in out.stderr  # plain text: no terminal control sequences in a log
