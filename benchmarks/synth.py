"""Shared pieces of the benchmarks: the synthetic project, the figure lines, the machine description.

The synthetic project is a hermit-format workspace generated into a folder: tasks.jsonl and the three splits, a
pipeline whose latency, score, failures and cost are a pure function of (task, repeat, adapter content) (seeded,
heavy-tailed lognormal latencies clipped to 5-500 ms), a judge, a template, and an adapter tree (git) with the tags
``root`` and ``<run>/final``. It runs unchanged under ``hermit eval`` (hermit-harness 0.1.0, without hermit-tui
installed) and under hermit-tui's runner, and both must record the same results.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import resource
import subprocess
import time
import types
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

RUN = "bench"
TEMPLATE_ID = "bench-notes"
#: The pipeline's TASK_SIGMA by workload: "independent" draws every attempt's latency on its own (nothing predicts a
#: task's time: the benchmarks' workload); "persistent" gives each task its own effect, shape 0.9 of the overall 1.1
#: (two thirds of the log-variance), the rest per-attempt noise, so earlier attempts of a task predict its later ones.
WORKLOADS = {"independent": 0.0, "persistent": 0.9}
SKILLS = {"root": 0.45, "final": 0.7}  # an adapter's skill (chance of a full score); none: NONE_SKILL
GIT_ENV = {
    "GIT_AUTHOR_NAME": "hermit-tui",
    "GIT_AUTHOR_EMAIL": "hermit-tui@localhost",
    "GIT_COMMITTER_NAME": "hermit-tui",
    "GIT_COMMITTER_EMAIL": "hermit-tui@localhost",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "LC_ALL": "C",
}

PIPELINE = '''\
"""A synthetic acting agent for the benchmarks: every figure of an attempt is a hash of (task id, repeat, adapter
content), so an attempt is the same whichever tool runs it and in whatever order. Latencies are lognormal
(median MEDIAN_S, shape SIGMA) clipped to [LO_S, HI_S] and multiplied by ``params.latency_scale``; with TASK_SIGMA
above 0 part of that shape is the task's own (see latency_s)."""
import hashlib
import math
import threading
import time
from pathlib import Path

try:
    from hermit_tui.core.context import current_repeat
except ImportError:              # run by hermit itself, without hermit-tui installed
    def current_repeat():
        return None

try:
    from hermit.task import RunOutput
except ImportError:
    from hermit_tui.core.outputs import RunOutput

SEED = {seed}
MEDIAN_S, SIGMA, LO_S, HI_S = 0.03, 1.1, 0.005, 0.5
TASK_SIGMA = {task_sigma}  # 0: no persistent task effect (each attempt's latency drawn on its own)
NONE_SKILL = 0.2
ERROR_RATE, JUDGE_ERROR_RATE, UNKNOWN_COST_RATE = 0.02, 0.01, 0.05
_counter = {{}}
_lock = threading.Lock()


def unit(*parts) -> float:
    text = "|".join(str(p) for p in (SEED, *parts))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") / 2 ** 64


def adapter_key(adapter) -> str:
    """What identifies an adapter: the sha256 of its ADAPTER.md (paths differ between tools)."""
    if adapter is None:
        return "none"
    return hashlib.sha256((Path(adapter) / "ADAPTER.md").read_bytes()).hexdigest()[:16]


def skill(adapter) -> float:
    if adapter is None:
        return NONE_SKILL
    for line in (Path(adapter) / "ADAPTER.md").read_text().splitlines():
        if line.startswith("skill:"):
            return float(line.split(":", 1)[1])
    return NONE_SKILL


def normal(*parts) -> float:
    """A standard normal by Box-Muller from two hashed uniforms."""
    u1, u2 = unit("lat1", *parts), unit("lat2", *parts)
    return math.sqrt(-2.0 * math.log(1.0 - u1)) * math.cos(2.0 * math.pi * u2)


def latency_s(task_id: str, repeat: int, key: str) -> float:
    """The attempt's latency (before latency_scale): lognormal, clipped. With TASK_SIGMA 0 every attempt draws its
    own; otherwise a task's own effect (lognormal, shape TASK_SIGMA, the same under every repeat and adapter) times
    the attempt's noise (shape sqrt(SIGMA^2 - TASK_SIGMA^2)): the same median and overall shape."""
    z = normal(task_id, repeat, key)
    if not TASK_SIGMA:
        return min(HI_S, max(LO_S, MEDIAN_S * math.exp(SIGMA * z)))
    noise = math.sqrt(SIGMA * SIGMA - TASK_SIGMA * TASK_SIGMA)
    return min(HI_S, max(LO_S, MEDIAN_S * math.exp(TASK_SIGMA * normal("task", task_id) + noise * z)))


def _repeat(task_id: str, key: str) -> int:
    repeat = current_repeat()
    if repeat is not None:
        return int(repeat)
    with _lock:                  # hermit runs repeats one after another and tells no repeat number
        _counter[task_id, key] = _counter.get((task_id, key), 0) + 1
        return _counter[task_id, key]


def run(task, adapter, params=None):
    tid, key = str(task["id"]), adapter_key(adapter)
    repeat = _repeat(tid, key)
    wait = latency_s(tid, repeat, key) * float((params or {{}}).get("latency_scale", 1.0))
    if wait > 0:
        time.sleep(wait)
    if unit("error", tid, repeat, key) < ERROR_RATE:
        raise RuntimeError(f"synthetic failure on {{tid}} repeat {{repeat}}")
    u = unit("score", tid, repeat, key)
    p = skill(adapter)
    score = 1.0 if u < p else 0.5 if u < p + 0.15 else 0.0
    verdict = "judge-fail" if unit("judge", tid, repeat, key) < JUDGE_ERROR_RATE else f"{{score}}"
    cost = None if unit("cost", tid, repeat, key) < UNKNOWN_COST_RATE else round(0.001 + 0.01 * u, 6)
    return RunOutput(output=verdict, cost_usd=cost, wall_s=round(wait, 3), tokens=100 + int(1000 * u))


def instant(task, adapter):
    """A pipeline that returns at once (engine overhead)."""
    return RunOutput(output="1.0", cost_usd=0.001)
'''

JUDGE = '''\
"""The synthetic judge: the pipeline's output is the score; "judge-fail" makes the judge raise."""


def score(task, output):
    text = output.get("output") if isinstance(output, dict) else getattr(output, "output", output)
    if text == "judge-fail":
        raise ValueError("synthetic judge failure")
    return {{"score": float(text), "feedback": "synthetic"}}
'''

MANIFEST = f"""\
template:
  id: {TEMPLATE_ID}
  version: "0.1"
  contract: "1"
  name: Benchmark notes
exports:
  context: ADAPTER.md
structure:
  learnable:
    - path: ADAPTER.md
      format: {{text: true, max_bytes: 8000}}
"""


def run_yaml(concurrency: int, repeats: int, agent: str = "pipeline.py:run", latency_scale: float = 1.0) -> str:
    return f"""\
data: {{tasks: tasks.jsonl, train: train.txt, val: val.txt, test: test.txt}}
agent:
  name: {agent}
  concurrency: {concurrency}
  params: {{latency_scale: {latency_scale}}}
judge: {{path: judge.py, name: score}}
template: template
evolver: {{name: claude}}
sandbox: {{enabled: false}}
trainer: {{run_name: {RUN}, output_dir: runs}}
eval: {{repeats: {repeats}}}
"""


def adapter_text(name: str) -> str:
    return f"# Notes ({name})\nskill: {SKILLS[name]}\n"


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, env={**os.environ, **GIT_ENV})
    if done.returncode:
        raise RuntimeError(f"git {args[0]} failed: {done.stderr.strip()}")
    return done.stdout.strip()


def make_project(
    dest: Path,
    *,
    tasks: int = 200,
    seed: int = 7,
    concurrency: int = 16,
    repeats: int = 3,
    agent: str = "pipeline.py:run",
    latency_scale: float = 1.0,
    tree: bool = True,
    workload: str = "independent",
) -> Path:
    """Write the synthetic project into ``dest`` (created, must not exist) and return its run.yaml. ``workload``: a
    key of WORKLOADS."""
    dest = Path(dest)
    dest.mkdir(parents=True)
    test_ids = [f"t{i:05d}" for i in range(tasks)]
    other = [f"x{i:02d}" for i in range(10)]
    with open(dest / "tasks.jsonl", "w") as fh:
        for tid in other + test_ids:
            fh.write(
                json.dumps({"id": tid, "question": f"synthetic question {tid}", "group": f"g{int(tid[1:]) % 7}"}) + "\n"
            )
    (dest / "train.txt").write_text("\n".join(other[:5]) + "\n")
    (dest / "val.txt").write_text("\n".join(other[5:]) + "\n")
    (dest / "test.txt").write_text("\n".join(test_ids) + "\n")
    (dest / "pipeline.py").write_text(PIPELINE.format(seed=seed, task_sigma=WORKLOADS[workload]))
    (dest / "judge.py").write_text(JUDGE.format())
    (dest / "run.yaml").write_text(run_yaml(concurrency, repeats, agent, latency_scale))
    template = dest / "template"
    template.mkdir()
    (template / "adapter.yaml").write_text(MANIFEST)
    (template / "ADAPTER.md").write_text(adapter_text("root"))
    if tree:
        repo = dest / "runs" / "trees" / TEMPLATE_ID
        repo.mkdir(parents=True)
        _git(repo, "init", "-q", "-b", "trunk")
        for name in ("adapter.yaml", "ADAPTER.md"):
            (repo / name).write_text((template / name).read_text())
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "--no-verify", "-m", "root")
        _git(repo, "tag", "root")
        _git(repo, "checkout", "-q", "-b", RUN)
        (repo / "ADAPTER.md").write_text(adapter_text("final"))
        _git(repo, "commit", "-q", "--no-verify", "-am", "final")
        _git(repo, "tag", f"{RUN}/final")
        _git(repo, "checkout", "-q", "trunk")
    return dest / "run.yaml"


def load_pipeline_module(project: Path) -> types.ModuleType:
    """The generated pipeline.py as a module (to compute the planned latencies)."""
    module = types.ModuleType("_bench_pipeline")
    path = Path(project) / "pipeline.py"
    module.__file__ = str(path)
    exec(compile(path.read_text(), str(path), "exec"), module.__dict__)
    return module


def planned_latencies(
    project: Path, labels: list[str], task_ids: list[str], repeats: int, scale: float = 1.0
) -> list[float]:
    """Every attempt's latency as the pipeline will sleep it: labels among none/root/final."""
    mod = load_pipeline_module(project)
    keys = {"none": "none"}
    for name in SKILLS:
        keys[name] = hashlib.sha256(adapter_text(name).encode()).hexdigest()[:16]
    return [
        mod.latency_s(t, r, keys[label]) * scale for label in labels for r in range(1, repeats + 1) for t in task_ids
    ]


def ideal_wall(latencies: list[float], concurrency: int) -> float:
    """The best any scheduler can do: the larger of the work spread over every slot and the longest attempt."""
    return max(sum(latencies) / concurrency, max(latencies))


def list_schedule(latencies: list[float], concurrency: int) -> float:
    """The wall of ``concurrency`` slots taking the attempts in the given order, each as soon as a slot frees, at
    zero overhead: what a scheduler bound to that order (for pairing) can do at best."""
    import heapq

    slots = [0.0] * concurrency
    for x in latencies:
        heapq.heappush(slots, heapq.heappop(slots) + x)
    return max(slots)


def taken_latencies(project: Path, run: Any, scale: float = 1.0) -> list[float]:
    """The latencies of a finished ``EvalRun``'s attempts in the order its schedule really took them
    (``run.schedule.started``: longest-first within a repeat where earlier attempts tell how long a task takes):
    ``list_schedule`` of it is what that order could do at zero overhead."""
    mod = load_pipeline_module(project)
    keys = {"none": "none"}
    for name in SKILLS:
        keys[name] = hashlib.sha256(adapter_text(name).encode()).hexdigest()[:16]
    return [mod.latency_s(a.task_id, a.repeat, keys[a.label]) * scale for a in run.schedule.started]


def runner_order(
    project: Path, labels: list[str], task_ids: list[str], repeats: int, scale: float = 1.0
) -> list[float]:
    """The latencies in the launch's fixed order, before any reordering: repeat by repeat, task by task, selector
    by selector (the runner takes this order only where it keeps the task order; see ``taken_latencies``)."""
    by_label = {label: planned_latencies(project, [label], task_ids, repeats, scale) for label in labels}
    n = len(task_ids)
    return [by_label[label][(r - 1) * n + i] for r in range(1, repeats + 1) for i in range(n) for label in labels]


def _task_groups(order: list[float], labels: int, tasks: int) -> list[list[list[float]]]:
    """``runner_order``'s latencies cut into repeats, each into its tasks (a task's selectors side by side)."""
    block = labels * tasks
    return [[order[b + i : b + i + labels] for i in range(0, block, labels)] for b in range(0, len(order), block)]


def random_orders(
    order: list[float], labels: int, tasks: int, concurrency: int, *, orders: int = 200, seed: int = 1
) -> list[float]:
    """The zero-overhead walls (``list_schedule``) of ``orders`` seeded random permutations of the tasks within
    each repeat of ``order`` (``runner_order``'s latencies), a task's selectors kept side by side: what an order
    that knows nothing of the future can expect."""
    import random

    rng = random.Random(seed)
    blocks = _task_groups(order, labels, tasks)
    walls = []
    for _ in range(orders):
        taken: list[float] = []
        for groups in blocks:
            shuffled = groups[:]
            rng.shuffle(shuffled)
            taken.extend(x for group in shuffled for x in group)
        walls.append(list_schedule(taken, concurrency))
    return walls


def clairvoyant_order(order: list[float], labels: int, tasks: int) -> list[float]:
    """``order`` (``runner_order``'s latencies) with each repeat's tasks longest first by their true total, a task's
    selectors side by side: longest-first as the runner does it, knowing every attempt's latency beforehand."""
    return [
        x
        for groups in _task_groups(order, labels, tasks)
        for group in sorted(groups, key=lambda g: -sum(g))
        for x in group
    ]


def quantile(values: list[float], q: float) -> float:
    """The ``q`` quantile of ``values`` (linear between order statistics)."""
    xs = sorted(values)
    pos = q * (len(xs) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def hermit_schedule(
    project: Path, labels: list[str], task_ids: list[str], repeats: int, concurrency: int, scale: float = 1.0
) -> float:
    """hermit eval's bound: one selector after another, each repeat waiting for the previous one to end."""
    n = len(task_ids)
    total = 0.0
    for label in labels:
        lat = planned_latencies(project, [label], task_ids, repeats, scale)
        total += sum(list_schedule(lat[(r - 1) * n : r * n], concurrency) for r in range(1, repeats + 1))
    return total


def test_ids(project: Path) -> list[str]:
    return (Path(project) / "test.txt").read_text().split()


# -- figure lines ------------------------------------------------------------------------------------------------

QUICK = False  # set by a script's --quick: its figures are a smoke test, not judged against their targets


def figure(
    name: str, value: float | None, *, unit: str = "", target: str | None = None, detail: str = "", check: bool = False
) -> None:
    """Print one figure line (``FIGURE name = value unit  [target ...: ok|MISS]  detail``); append it as JSON to
    $BENCH_FIGURES when set (run_all.py collects them). A ``check`` (a correctness figure) is judged in --quick too."""
    verdict = None
    if target is not None and value is not None and (check or not QUICK):
        op, bound = target.split()
        verdict = {">=": value >= float(bound), "<": value < float(bound), "<=": value <= float(bound)}[op]
    shown = "skipped" if value is None else (f"{value:,.3f}" if abs(value) < 100 else f"{value:,.0f}")
    parts = [f"FIGURE {name} = {shown}{(' ' + unit) if unit else ''}"]
    if target is not None:
        said = ("not judged in --quick" if QUICK else "n/a") if verdict is None else "ok" if verdict else "MISS"
        parts.append(f"[target {target}{(' ' + unit) if unit else ''}: {said}]")
    if detail:
        parts.append(detail)
    print("  ".join(parts), flush=True)
    out = os.environ.get("BENCH_FIGURES")
    if out:
        with open(out, "a") as fh:
            fh.write(
                json.dumps(
                    {"name": name, "value": value, "unit": unit, "target": target, "ok": verdict, "detail": detail}
                )
                + "\n"
            )


def peak_rss_mb() -> float:
    """This process's peak resident set size in MB (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def machine() -> dict:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem = round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "memory_gb": mem,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }


# -- an evaluation written directly (the dashboard benchmark) -------------------------------------------------------


def write_evaluation(project: Path, label: str, task_ids: list[str], repeats: int, seed: int = 7) -> int:
    """results.jsonl + summary.json of one selector in hermit's format (hermit's keys and line order: one repeat at
    a time, in task order), with scores, errors, judge errors and unknown costs drawn from a seeded generator.
    Returns the number of lines written."""
    import random

    rng = random.Random(f"{seed}|{label}")
    skill = {"none": 0.2, **SKILLS}.get(label, 0.5)
    folder = Path(project) / "runs" / RUN / "eval" / label
    folder.mkdir(parents=True, exist_ok=True)
    total = unknown = errors = 0
    score_sum = 0.0
    solved: set[str] = set()
    known_cost = 0.0
    rec: dict[str, Any]
    with open(folder / "results.jsonl", "w") as fh:
        for r in range(1, repeats + 1):
            for tid in task_ids:
                u = rng.random()
                wall = round(0.005 + rng.lognormvariate(-3.5, 1.1), 2)
                if u < 0.02:
                    msg = "RuntimeError: synthetic failure"
                    rec = {
                        "repeat": r,
                        "id": tid,
                        "status": "error",
                        "error": msg,
                        "output": None,
                        "judge": {"score": 0.0, "feedback": f"the pipeline failed: {msg}"},
                        "cost_usd": None,
                        "wall_s": wall,
                        "api_speed": None,
                        "tokens": None,
                        "log": None,
                    }
                else:
                    score = 1.0 if rng.random() < skill else 0.5 if rng.random() < 0.3 else 0.0
                    cost = None if rng.random() < 0.05 else round(0.001 + 0.01 * rng.random(), 6)
                    judge_error = u < 0.03
                    judge = (
                        {"score": 0.0, "feedback": "the judge failed: ValueError: synthetic"}
                        if judge_error
                        else {"score": score, "feedback": "synthetic", "extra": {}}
                    )
                    rec = {
                        "repeat": r,
                        "id": tid,
                        "status": "judge_error" if judge_error else "ok",
                        "error": "ValueError: synthetic" if judge_error else None,
                        "output": f"answer {tid}",
                        "judge": judge,
                        "cost_usd": cost,
                        "wall_s": wall,
                        "api_speed": None,
                        "tokens": 100 + int(900 * u),
                        "log": None,
                    }
                s = rec["judge"]["score"]
                total += 1
                score_sum += s
                errors += rec["status"] != "ok"
                if s >= 1.0:
                    solved.add(tid)
                if rec["cost_usd"] is None:
                    unknown += 1
                else:
                    known_cost += rec["cost_usd"]
                fh.write(json.dumps(rec) + "\n")
    summary = {
        "adapter": label,
        "commit": None if label == "none" else hashlib.sha1(label.encode()).hexdigest(),
        "tasks": len(task_ids),
        "repeats": repeats,
        "mean_score": score_sum / total,
        "solved_once": len(solved) / len(task_ids),
        "cost_usd": None if unknown else known_cost,
        "unknown_cost_tasks": unknown,
        "errors": errors,
        "wall_s": 1234.5,
    }
    (folder / "summary.json").write_text(json.dumps(summary, indent=1))
    return total


def timed_run(run, executor: str) -> tuple[dict, float, int, float]:
    """``run.run_sync()`` timed: (summaries, wall, attempts recorded, start time); a run that did not record every
    attempt stops the benchmark."""
    t0 = time.perf_counter()
    summaries = run.run_sync()
    wall = time.perf_counter() - t0
    attempts = sum(s.attempts or 0 for s in summaries.values())
    if attempts != run.total or not all(s.complete for s in summaries.values()):
        raise SystemExit(f"{executor}: {attempts} of {run.total} attempts recorded")
    return summaries, wall, attempts, t0


class Stopwatch:
    """``with Stopwatch() as sw: ...`` then ``sw.s``: the seconds the block took."""

    def __enter__(self) -> Stopwatch:
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        self.s = time.perf_counter() - self.t0
