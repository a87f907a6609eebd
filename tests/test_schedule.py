"""The order attempts start in (core/run/schedule.py): the longest tasks first once earlier attempts tell how long
they take, a task's selectors side by side, repeat by repeat; the same results in any order; an ordered stream and
one slot keep the task order. Expected orders are worked out here by hand from the times the pipeline reports."""

from __future__ import annotations

import json
from pathlib import Path

from hermit_tui.core.run import events as ev
from hermit_tui.core.run.attempts import Attempt
from hermit_tui.core.run.runner import EvalRun
from hermit_tui.core.run.schedule import Durations, Schedule, longest_first
from hermit_tui.core.workspace.config import load_config

#: task id -> the seconds the pipeline says it took (no attempt sleeps: the runner learns from the reported wall_s)
TIMES = {"a": 0.2, "b": 3.0, "c": 0.5, "d": 7.0, "e": 1.0, "f": 0.1}


def project(tmp_path: Path, *, shuffle: bool = True, concurrency: int = 3) -> Path:
    """Tasks whose reported time is TIMES[id] (root's 10% longer), scored by a pure function of (task, repeat)."""
    (tmp_path / "tasks.jsonl").write_text("".join(json.dumps({"id": t, "secs": s}) + "\n" for t, s in TIMES.items()))
    (tmp_path / "test.txt").write_text("".join(f"{t}\n" for t in TIMES))
    (tmp_path / "train.txt").write_text("")
    (tmp_path / "pipe.py").write_text(
        "import hashlib\n"
        "from hermit_tui import RunOutput\n"
        "from hermit_tui.core.context import current_repeat\n"
        "def run(task, adapter):\n"
        "    key = f\"{task['id']}|{current_repeat()}|{adapter is None}\"\n"
        "    u = hashlib.sha256(key.encode()).digest()[0] / 255\n"
        "    secs = task['secs'] * (1.0 if adapter is None else 1.1)\n"
        "    return RunOutput(output=f'{u:.3f}', cost_usd=round(u / 100, 6), wall_s=secs, tokens=int(100 * u))\n"
    )
    (tmp_path / "judge.py").write_text("def score(task, output):\n    return float(output.output)\n")
    (tmp_path / "run.yaml").write_text(
        "data: {tasks: tasks.jsonl, train: train.txt, test: test.txt, shuffle: " + str(shuffle).lower() + "}\n"
        f"agent: {{name: pipe.py:run, concurrency: {concurrency}}}\njudge: {{path: judge.py}}\n"
        "trainer: {run_name: t, tree_dir: tree}\n"
    )
    return tmp_path / "run.yaml"


def launch(run_yaml: Path, **options) -> list[tuple[str, str, int]]:
    """Evaluate none; the (label, task, repeat) of each attempt as it started."""
    started: list[tuple[str, str, int]] = []

    def note(event: ev.Event) -> None:
        if isinstance(event, ev.AttemptStarted):
            started.append((event.label, event.task_id, event.repeat))

    EvalRun(load_config(run_yaml), ["none"], on_event=note, update_card=False, **options).run_sync()
    return started


def records(run_yaml: Path, label: str = "none") -> dict[tuple[str, int], dict]:
    path = run_yaml.parent / "runs" / "t" / "eval" / label / "results.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    kept = ("status", "output", "judge", "cost_usd", "tokens")
    return {(r["id"], r["repeat"]): {k: r[k] for k in kept} for r in rows}


# -- the rule, on its own ------------------------------------------------------------------------------------------


def attempts(labels: list[str], tasks: list[str], repeats: int) -> list[Attempt]:
    """The launch's fixed order: repeat by repeat, task by task, selector by selector."""
    return [Attempt(lb, {"id": t}, r, None) for r in range(1, repeats + 1) for t in tasks for lb in labels]


def test_longest_first_sorts_tasks_by_their_total_and_keeps_selectors_together():
    d = Durations()
    d.add("none", "a", 1.0)
    d.add("root", "a", 4.0)  # a: 1 + 4 = 5
    d.add("none", "b", 5.0)  # b: none 5, root unknown on b -> none's mean there (5): 10
    d.add("none", "c", 0.5)
    d.add("root", "c", 0.5)  # c: 1
    # d: nothing known -> each attempt counts as the mean of every known time (11 / 5 = 2.2): 4.4
    got = longest_first(attempts(["none", "root"], ["a", "b", "c", "d"], 1), d)
    assert [(a.task_id, a.label) for a in got] == [
        ("b", "none"),
        ("b", "root"),
        ("a", "none"),
        ("a", "root"),
        ("d", "none"),
        ("d", "root"),
        ("c", "none"),
        ("c", "root"),
    ]


def test_a_waiting_task_whose_time_becomes_known_moves_to_its_place():
    schedule = Schedule(attempts(["none"], ["a", "b", "c", "d"], 2))
    queue = iter(schedule)
    first = [next(queue) for _ in range(4)]  # repeat 1 in task order: all four in flight, nothing known
    assert [(a.task_id, a.repeat) for a in first] == [("a", 1), ("b", 1), ("c", 1), ("d", 1)]
    assert next(queue).task_id == "a"  # repeat 2 begins: still nothing known, task order
    schedule.learn("none", "c", 9.0)  # c's first attempt finishes: 9 s
    assert next(queue).task_id == "c"
    schedule.learn("none", "b", 1.0)
    schedule.learn("none", "d", 5.0)
    assert [(a.task_id, a.repeat) for a in queue] == [("d", 2), ("b", 2)]


def test_nothing_known_keeps_the_task_order_and_ties_keep_it_too():
    block = attempts(["none"], ["a", "b", "c"], 1)
    assert [a.task_id for a in longest_first(block, Durations())] == ["a", "b", "c"]
    d = Durations()
    for t in ("a", "b", "c"):
        d.add("none", t, 2.0)
    assert [a.task_id for a in longest_first(block, d)] == ["a", "b", "c"]


def test_times_that_are_not_times_are_ignored():
    d = Durations()
    d.add("none", "a", float("nan"))
    d.add("none", "a", float("inf"))
    d.add("none", "a", -1.0)
    d.add("none", "a", None)
    assert d.expected("none", "a") is None and d.count == 0


def test_each_repeat_is_ordered_with_what_the_earlier_repeats_taught():
    schedule = Schedule(attempts(["none"], ["a", "b", "c"], 2))
    taken = []
    for attempt in schedule:
        taken.append((attempt.task_id, attempt.repeat))
        if attempt.repeat == 1:  # repeat 1 finishes before repeat 2 is taken: c 9 s, a 4 s, b 1 s
            schedule.learn("none", attempt.task_id, {"a": 4.0, "b": 1.0, "c": 9.0}[attempt.task_id])
    assert taken == [("a", 1), ("b", 1), ("c", 1), ("c", 2), ("a", 2), ("b", 2)]


def test_unordered_schedule_is_the_fixed_order():
    order = attempts(["none", "root"], ["a", "b"], 2)
    d = Durations()
    d.add("none", "b", 10.0)
    assert list(Schedule(order, d, reorder=False)) == order


# -- the runner ------------------------------------------------------------------------------------------------------


def by_time_descending(factor: float = 1.0) -> list[str]:
    """TIMES' tasks, longest first (worked out here, not by the code under test)."""
    return [t for t, _ in sorted(TIMES.items(), key=lambda kv: -kv[1] * factor)]


def test_re_evaluation_starts_the_longest_tasks_first_from_the_archived_times(tmp_path):
    run_yaml = project(tmp_path)
    first = launch(run_yaml, repeats=2)
    # nothing known at the start: repeat 1 in the task order
    assert [t for _, t, r in first if r == 1] == list(TIMES)
    before = records(run_yaml)
    again = launch(run_yaml, repeats=2)
    # the earlier evaluation (archived by this launch) gives every task's time: both repeats longest first
    assert [t for _, t, r in again if r == 1] == by_time_descending()
    assert [t for _, t, r in again if r == 2] == by_time_descending()
    assert [r for _, _, r in again] == sorted(r for _, _, r in again)  # still repeat by repeat
    # the same attempts, with the same results, in another order
    assert records(run_yaml) == before
    assert len(before) == 2 * len(TIMES)


def test_selectors_of_a_task_start_side_by_side_in_the_launch_order(tmp_path):
    run_yaml = project(tmp_path)
    folder = tmp_path / "adapters" / "extra"
    folder.mkdir(parents=True)
    (folder / "adapter.yaml").write_text("name: extra\n")
    config = load_config(run_yaml)
    started: list[tuple[str, str, int]] = []

    def note(event: ev.Event) -> None:
        if isinstance(event, ev.AttemptStarted):
            started.append((event.label, event.task_id, event.repeat))

    EvalRun(config, ["none", "adapters/extra"], update_card=False, on_event=note).run_sync()
    assert [t for _, t, _ in started[::2]] == list(TIMES)  # nothing known yet
    started.clear()
    EvalRun(config, ["none", "adapters/extra"], update_card=False, on_event=note).run_sync()
    pairs = [started[i : i + 2] for i in range(0, len(started), 2)]
    assert all([lb for lb, _, _ in p] == ["none", "extra"] and p[0][1] == p[1][1] for p in pairs)
    # the adapter's attempts take 1.1x: a task's pair (1 + 1.1 = 2.1 x TIMES) ranks the tasks as TIMES does
    assert [p[0][1] for p in pairs] == by_time_descending()


def test_an_ordered_stream_keeps_the_task_order(tmp_path):
    run_yaml = project(tmp_path, shuffle=False)
    launch(run_yaml, repeats=1)
    again = launch(run_yaml, repeats=1)
    assert [t for _, t, _ in again] == list(TIMES)


def test_one_slot_keeps_the_task_order(tmp_path):
    run_yaml = project(tmp_path, concurrency=1)
    launch(run_yaml, repeats=1)
    assert [t for _, t, _ in launch(run_yaml, repeats=1)] == list(TIMES)


def test_a_resume_orders_the_missing_attempts_by_the_recorded_times(tmp_path):
    run_yaml = project(tmp_path)
    launch(run_yaml, repeats=2)
    path = run_yaml.parent / "runs" / "t" / "eval" / "none" / "results.jsonl"
    lines = path.read_text().splitlines()
    kept = [line for line in lines if json.loads(line)["repeat"] == 1]  # repeat 2 was never recorded
    path.write_text("".join(line + "\n" for line in kept))
    resumed = launch(run_yaml, repeats=2, resume=True)
    assert [(t, r) for _, t, r in resumed] == [(t, 2) for t in by_time_descending()]


# -- with looks within round 1 ---------------------------------------------------------------------------------------


def test_reordering_stays_within_a_block_it_is_given():
    """block_of cuts a repeat further (the sequential runner's looks): longest first inside each block, the blocks
    in their order, so a later block's long task never jumps ahead of an earlier block's short one."""
    durations = Durations()
    for t, secs in TIMES.items():
        durations.add("none", t, secs)
    order = attempts(["none"], list(TIMES), 1)
    first = {"a", "b", "c"}  # block 1: a 0.2, b 3.0, c 0.5; block 2: d 7.0, e 1.0, f 0.1
    schedule = Schedule(order, durations, block_of=lambda a: (a.repeat, 1 if a.task_id in first else 2))
    assert [a.task_id for a in schedule] == ["b", "c", "a", "d", "e", "f"]
    plain = Schedule(attempts(["none"], list(TIMES), 1), durations)
    assert [a.task_id for a in plain] == ["d", "b", "e", "c", "a", "f"]


def test_a_sequential_launch_with_looks_in_round_1_never_starts_a_later_look_first(tmp_path):
    """Stop when decided with 2 looks within round 1 over 20 tasks, after an evaluation whose times make the second
    look's tasks the longest: the launch finishes (a later look's attempt taken first would hold its slot at the
    look's barrier; at concurrency 2 both slots so held stall the launch for ever), every round-1 attempt of look
    1 starts before any of look 2, and inside look 1 the longest known task starts first."""
    import threading

    from hermit_tui.core.stats.sequential.schedule import look_order

    ids = [f"t{i:02d}" for i in range(20)]
    late = look_order(ids)[10:]  # the second look's tasks
    secs = {t: (50.0 + i if t in late else 1.0 + i) for i, t in enumerate(ids)}
    (tmp_path / "tasks.jsonl").write_text("".join(json.dumps({"id": t, "secs": secs[t]}) + "\n" for t in ids))
    (tmp_path / "test.txt").write_text("".join(f"{t}\n" for t in ids))
    (tmp_path / "train.txt").write_text("")
    (tmp_path / "adapters" / "x").mkdir(parents=True)
    (tmp_path / "adapters" / "x" / "adapter.yaml").write_text("name: x\n")
    (tmp_path / "pipe.py").write_text(
        "import hashlib\n"
        "from hermit_tui import RunOutput\n"
        "from hermit_tui.core.context import current_repeat\n"
        "def run(task, adapter):\n"
        "    key = f\"{task['id']}|{current_repeat()}|{adapter is None}\"\n"
        "    u = hashlib.sha256(key.encode()).digest()[0] / 255\n"
        "    return RunOutput(output=f'{u:.3f}', cost_usd=0.001, wall_s=task['secs'])\n"
    )
    (tmp_path / "judge.py").write_text("def score(task, output):\n    return float(output.output)\n")
    (tmp_path / "run.yaml").write_text(
        "data: {tasks: tasks.jsonl, train: train.txt, test: test.txt}\n"
        "agent: {name: pipe.py:run, concurrency: 2}\njudge: {path: judge.py}\n"
        "trainer: {run_name: t, tree_dir: tree}\neval: {repeats: 2}\n"
    )
    config = load_config(tmp_path / "run.yaml")
    EvalRun(config, ["none", "adapters/x"], update_card=False, repeats=1).run_sync()  # the times to learn from
    started: list[tuple[str, int]] = []
    note = lambda e: started.append((e.task_id, e.repeat)) if isinstance(e, ev.AttemptStarted) else None  # noqa: E731
    run = EvalRun(
        config, ["none", "adapters/x"], update_card=False, stop_when_decided=True, first_round_looks=2, on_event=note
    )
    worker = threading.Thread(target=run.run_sync, daemon=True)
    worker.start()
    worker.join(timeout=120)  # the launch itself takes well under a second; a stalled one never ends
    if worker.is_alive():
        run.cancel()
    assert not worker.is_alive(), "the launch stalled at the barrier of its first look"
    round1 = [t for t, r in started if r == 1]
    looks = [1 if t in late else 0 for t in round1]
    assert looks == sorted(looks) and set(round1) == set(ids)
    early = [t for t in round1 if t not in late]
    assert early[0] == max((t for t in ids if t not in late), key=secs.__getitem__)
