"""4. Dashboard at scale: 100,008 attempts (none/root/final x 3 repeats x 11,112 tasks) written to disk in hermit's
format, then opened in the dashboard headlessly (HermitApp.run_test), the way a user opens them: the config given
on the command line, the history screen, all three evaluations selected, Enter. Then a live launch streamed into the
RunScreen at 5,000 attempts per second.

    python benchmarks/bench_dashboard.py [--quick] [--tasks N] [--rate R] [--size WxH] [--no-stream] [--dir DIR]
    python benchmarks/bench_dashboard.py --live async:256,async:1024,sync:256 [--scale 0.1]   # a real launch

Each measurement runs in its own process (peak RSS = that process's ru_maxrss) and prints one JSON line back.

How the times are taken (instrumentation only: the dashboard's own code runs unchanged):
- A paint is one call of ``App._display`` (the compositor's update for the screen); it is timed when it returns.
  Headless, Textual skips turning the update into terminal bytes, so the benchmark does that step itself
  (``CompositorUpdate.render_segments``) inside the timed call: a paint costs what it would on a terminal.
- Config open: from the app's start with the config to the last of its three current evaluations in the store
  (opening a config reads them at once, in a worker).
- Open: from the moment Enter is handled in the history screen to the end of the first paint of the TasksScreen
  after it has shown all 11,112 rows with the three evaluations read again and put in the store (their summaries in
  the header lines).
- Sort and filter: from the call (sort by final's mean, the regressions filter) to the first paint of the table
  showing the new rows.
- Streaming: a thread appends ``AttemptFinished`` events to ``app._events`` (where the engine's events go) on a
  5 ms tick at the target rate, noting each event's creation time. ``EvalStore.apply_many`` is wrapped to note when
  each event was applied, ``RunScreen.refresh_from_store`` to note which applied events a screen update covered,
  and the paint hook to note when that update reached the screen. Lag = end of that paint - creation.
- The event loop's longest stall is the longest gap between ticks of a 10 ms interval timer.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import synth

LABELS = ["none", "root", "final"]
REPEATS = 3
LIVE = "async:256,sync:256"  # the real launches measured by default (--live chooses others)


# -- instrumentation ---------------------------------------------------------------------------------------------


class Probe:
    """Paint times, event-loop stalls, and the streaming timestamps."""

    def __init__(self):
        self.paints: list[tuple[float, str]] = []
        self.ticks: list[float] = []
        self.created: dict[int, float] = {}  # id(event) -> creation time, until applied
        self.pending: list[tuple[float, float]] = []  # (created, applied) applied, not yet covered by an update
        self.covered: list[tuple[float, float]] = []  # covered by a screen update, not yet painted
        self.lags: list[tuple[float, float, float]] = []  # (created, applied, painted)
        self.shown_rows: list[tuple[float, int, int]] = []  # TasksScreen._show_rows: (time, rows, columns)
        self.gc: list[tuple[float, float]] = []  # full (generation 2) collections: (start, seconds)
        self._gc_start = 0.0
        self.lock = threading.Lock()

    def install(self) -> None:
        from textual._compositor import CompositorUpdate
        from textual.app import App

        from hermit_tui.dashboard.screens.run import RunScreen
        from hermit_tui.dashboard.screens.tasks import TasksScreen
        from hermit_tui.dashboard.state.store import EvalStore

        probe = self
        display = App._display

        def timed_display(app, screen, renderable):
            display(app, screen, renderable)
            if renderable is None:
                return
            if app.is_headless and isinstance(renderable, CompositorUpdate):
                renderable.render_segments(app.console)  # what a terminal would be sent
            now = time.perf_counter()
            probe.paints.append((now, type(screen).__name__))
            if probe.covered and isinstance(screen, RunScreen):
                probe.lags.extend((c, a, now) for c, a in probe.covered)
                probe.covered = []

        App._display = timed_display  # type: ignore[method-assign]  # the probe times the real method, in this process only

        apply_many = EvalStore.apply_many

        def timed_apply_many(store, events):
            events = list(events)
            n = apply_many(store, events)
            now = time.perf_counter()
            with probe.lock:
                for event in events:
                    created = probe.created.pop(id(event), None)
                    if created is not None:
                        probe.pending.append((created, now))
            return n

        EvalStore.apply_many = timed_apply_many  # type: ignore[method-assign]  # the probe times the real method, in this process only

        refresh = RunScreen.refresh_from_store

        def timed_refresh(screen):
            with probe.lock:
                covered, probe.pending = probe.pending, []
            refresh(screen)
            probe.covered.extend(covered)

        RunScreen.refresh_from_store = timed_refresh  # type: ignore[method-assign]  # the probe times the real method, in this process only

        show_rows = TasksScreen._show_rows

        def timed_show_rows(screen, generation, rows, keys, *rest):
            show_rows(screen, generation, rows, keys, *rest)
            if generation == screen._generation:
                probe.shown_rows.append((time.perf_counter(), len(rows), len(keys)))

        TasksScreen._show_rows = timed_show_rows  # type: ignore[method-assign]  # the probe times the real method, in this process only
        gc.callbacks.append(self._on_gc)

    def _on_gc(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._gc_start = time.perf_counter()
        elif info.get("generation") == 2:
            self.gc.append((self._gc_start, time.perf_counter() - self._gc_start))

    def gc_between(self, start: float, end: float) -> tuple[int, float, float]:
        """Full collections in [start, end]: how many, their total and longest duration."""
        runs = [s for t, s in self.gc if start <= t <= end]
        return len(runs), sum(runs), max(runs, default=0.0)

    def tick(self) -> None:
        self.ticks.append(time.perf_counter())

    def longest_stall(self, start: float, end: float) -> float:
        ticks = [t for t in self.ticks if start <= t <= end]
        return max((b - a for a, b in zip(ticks, ticks[1:])), default=0.0)


async def wait_for(pilot, condition, timeout: float, what: str) -> None:
    """Poll ``condition`` every 10 ms without touching the app: ``pilot.pause`` would also force a screen update
    at each poll (Textual's Pilot calls the screen's update handler after its sleep), so the harness itself would
    paint 100 times a second, beside the screen's own update timer, and lengthen the stalls it measures."""
    deadline = time.perf_counter() + timeout
    while not condition():
        if time.perf_counter() > deadline:
            raise SystemExit(f"timed out after {timeout:.0f} s waiting for {what}")
        await asyncio.sleep(0.01)


def parse_size(text: str) -> tuple[int, int]:
    w, _, h = text.partition("x")
    return int(w), int(h)


# -- the measurements (each in its own process) -------------------------------------------------------------------


async def measure_open(project: Path, size: tuple[int, int]) -> dict:
    t_start = time.perf_counter()
    from hermit_tui.dashboard.app import HermitApp
    from hermit_tui.dashboard.screens.history import HistoryScreen
    from hermit_tui.dashboard.screens.setup import SetupScreen
    from hermit_tui.dashboard.screens.tasks import TasksScreen
    from hermit_tui.dashboard.state.store import EvalStore

    t_imported = time.perf_counter()
    probe = Probe()
    probe.install()
    added: list[float] = []  # when each evaluation read from disk went into the store
    add_column = EvalStore.add_column

    def timed_add_column(store, *args, **kwargs):
        out = add_column(store, *args, **kwargs)
        added.append(time.perf_counter())
        return out

    EvalStore.add_column = timed_add_column  # type: ignore[method-assign,assignment]  # timed, in this process only
    app = HermitApp(project / "run.yaml")
    expected = len(synth.test_ids(project))
    attempts = expected * REPEATS

    def loaded() -> bool:
        cols = app.store.columns
        return len(cols) == 3 and all(c.done == attempts for c in cols.values())

    def painted_after(t: float, rows: int | None = expected) -> float | None:
        """The first TasksScreen paint after the rows (all of them, or ``rows``) were shown after ``t``."""
        shown = [ts for ts, n, ncols in probe.shown_rows if ts >= t and ncols == 3 and (rows is None or n == rows)]
        if not shown:
            return None
        painted = [ts for ts, name in probe.paints if name == "TasksScreen" and ts >= shown[0]]
        return painted[0] if painted else None

    t_app = time.perf_counter()
    async with app.run_test(size=size) as pilot:
        app.set_interval(0.01, probe.tick)
        # opening the config loads its current evaluations at once (off the event loop)
        await wait_for(
            pilot,
            lambda: (
                isinstance(app.screen, SetupScreen)
                and loaded()
                and len(added) >= 3
                and not any(w.group == "history" for w in app.workers)
            ),
            300,
            "the config's evaluations",
        )
        t_config = added[2]
        config_stall = probe.longest_stall(probe.ticks[1] if len(probe.ticks) > 1 else t_app, t_config)
        await pilot.pause(0.3)
        app.goto("history")
        await wait_for(
            pilot,
            lambda: isinstance(app.screen, HistoryScreen) and len(app.screen.evaluations) == 3,
            30,
            "the history list",
        )
        history = app.screen
        assert isinstance(history, HistoryScreen)
        history.selected = {e.folder for e in history.evaluations}
        before = len(added)
        t0 = time.perf_counter()
        history.action_open_selected()  # what Enter does

        def rendered() -> float | None:
            if not (isinstance(app.screen, TasksScreen) and loaded() and len(added) >= before + 3):
                return None
            return painted_after(added[before + 2])

        await wait_for(pilot, lambda: rendered() is not None, 300, "the full per-task table")
        t_rendered = rendered()
        assert t_rendered is not None
        header = str(app.screen.query_one("#tasks-columns").render())
        if not all(f"{label}" in header for label in LABELS):
            raise SystemExit(f"the summaries are not shown: {header!r}")
        first_rows: float = min((t for t, *_ in probe.shown_rows if t >= t0), default=t_rendered)
        gc_n, gc_s, gc_max = probe.gc_between(t0, t_rendered)
        result = {
            "open_s": t_rendered - t0,
            "stall_s": probe.longest_stall(t0, t_rendered),
            "gc_n": gc_n,
            "gc_s": gc_s,
            "gc_max_s": gc_max,
            "config_open_s": t_config - t_app,
            "config_stall_s": config_stall,
            "first_rows_s": first_rows - t0,
            "start_to_setup_s": 0.0,
            "import_s": t_imported - t_start,
            "rows": expected,
        }
        # sort and filter the whole table, each to its first paint
        screen = app.screen
        assert isinstance(screen, TasksScreen)
        await pilot.pause(0.3)
        for name, act, rows in (
            ("sort", lambda: screen.set_sort("mean:final", reverse=True), expected),
            ("filter", lambda: screen.action_set_filter("regressions"), None),
        ):
            ts = time.perf_counter()
            act()
            await wait_for(
                pilot, lambda ts=ts, rows=rows: painted_after(ts, rows) is not None, 60, f"the {name}ed table"
            )
            done = painted_after(ts, rows)
            assert done is not None
            result[f"{name}_s"] = done - ts
            result[f"{name}_stall_s"] = probe.longest_stall(ts, done)
            result[f"{name}_rows"] = screen._shown
            await pilot.pause(0.3)
    result["peak_rss_mb"] = synth.peak_rss_mb()
    return result


async def measure_stream(project: Path, size: tuple[int, int], rate: float, seconds: float | None) -> dict:
    from hermit_tui.core.records.results import AttemptRecord, Judged
    from hermit_tui.core.run import events as ev
    from hermit_tui.dashboard.app import HermitApp
    from hermit_tui.dashboard.screens.run import RunScreen
    from hermit_tui.dashboard.screens.setup import SetupScreen

    probe = Probe()
    probe.install()
    app = HermitApp(project / "run.yaml")
    ids = synth.test_ids(project)
    total = len(ids) * REPEATS * len(LABELS)
    n = total if seconds is None else min(total, int(rate * seconds))
    done = threading.Event()
    feed: dict = {}

    def attempts():
        k = 0
        for r in range(1, REPEATS + 1):
            for _i, tid in enumerate(ids):
                for j, label in enumerate(LABELS):
                    k += 1
                    u = ((k * 2654435761) % 1000) / 1000
                    if u < 0.02:
                        rec = AttemptRecord(
                            repeat=r,
                            id=tid,
                            status="error",
                            error="RuntimeError: synthetic",
                            judge=Judged(score=0.0, feedback="the pipeline failed"),
                            wall_s=0.05,
                        )
                    else:
                        rec = AttemptRecord(
                            repeat=r,
                            id=tid,
                            status="ok",
                            output=f"answer {tid}",
                            judge=Judged(score=1.0 if u < 0.5 + 0.1 * j else 0.0, feedback="synthetic", extra={}),
                            cost_usd=None if u > 0.95 else 0.002,
                            wall_s=0.05,
                            tokens=120,
                        )
                    yield ev.AttemptFinished(label=label, record=rec)

    def feeder() -> None:
        push = app._events.append
        push(ev.RunStarted(labels=LABELS, task_ids=ids, repeats=REPEATS, concurrency=16, total=total))
        for label in LABELS:
            push(ev.SelectorStarted(label=label, selector=label, commit=None, total=len(ids) * REPEATS))
        source = attempts()
        sent = 0
        start = time.perf_counter()
        while sent < n:
            due = min(n, int((time.perf_counter() - start) * rate) + 1)
            while sent < due:
                event = next(source)
                with probe.lock:
                    probe.created[id(event)] = time.perf_counter()
                push(event)
                sent += 1
            time.sleep(0.005)
        feed["seconds"] = time.perf_counter() - start
        feed["sent"] = sent
        done.set()

    async with app.run_test(size=size) as pilot:
        app.set_interval(0.01, probe.tick)
        await wait_for(pilot, lambda: isinstance(app.screen, SetupScreen), 30, "the setup screen")
        app._show_run()
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen), 30, "the run screen")
        await pilot.pause(0.2)
        thread = threading.Thread(target=feeder, daemon=True)
        t0 = time.perf_counter()
        thread.start()
        await wait_for(pilot, done.is_set, 600, "the feeder")
        await wait_for(pilot, lambda: len(probe.lags) >= n, 30, "the last attempts on screen")
        t1 = time.perf_counter()
        shown = sum(c.done for c in app.store.columns.values())
        status = str(app.screen.query_one("#run-status").render())
    lags = sorted(p - c for c, a, p in probe.lags)
    to_store = sorted(a - c for c, a, p in probe.lags)
    q = statistics.quantiles(lags, n=100) if len(lags) > 1 else lags * 99
    gc_n, gc_s, gc_max = probe.gc_between(t0, t1)
    if shown != n or f"{n}/" not in status:
        raise SystemExit(f"the run screen shows {shown} of {n} attempts ({status!r})")
    return {
        "attempts": n,
        "feed_s": feed["seconds"],
        "gc_n": gc_n,
        "gc_s": gc_s,
        "gc_max_s": gc_max,
        "rate": feed["sent"] / feed["seconds"],
        "lag_p50_s": q[49],
        "lag_p95_s": q[94],
        "lag_p99_s": q[98],
        "lag_max_s": lags[-1],
        "to_store_p50_s": statistics.median(to_store),
        "paints_per_s": sum(1 for t, name in probe.paints if t0 <= t <= t1 and name == "RunScreen") / (t1 - t0),
        "stall_s": probe.longest_stall(t0, t1),
        "peak_rss_mb": synth.peak_rss_mb(),
    }


async def measure_live(mode: str, concurrency: int, scale: float, size: tuple[int, int]) -> dict:
    """A real launch from the dashboard (bench_concurrency's simulated I/O-bound attempts: ``async def`` on the
    runner's loop, or synchronous in its threads), one selector, 4 x concurrency tasks x 2 repeats: each attempt's
    lag from the runner's event (AttemptFinished handed to the dashboard) to its paint on the RunScreen, the loop's
    longest stall, the launch's efficiency against the ideal, and the process's peak memory."""
    import bench_concurrency as bc

    from hermit_tui.core.run import events as ev
    from hermit_tui.core.run.launch import LaunchOptions
    from hermit_tui.dashboard.app import HermitApp
    from hermit_tui.dashboard.screens.run import RunScreen
    from hermit_tui.dashboard.screens.setup import SetupScreen

    probe = Probe()
    probe.install()
    tasks = 4 * concurrency
    with tempfile.TemporaryDirectory(prefix="hermit-bench-live-") as tmp:
        run_yaml = bc.make(Path(tmp) / "p", tasks, concurrency, scale, "arun" if mode == "async" else "run")
        ids = [f"t{i:05d}" for i in range(tasks)]
        ideal = synth.ideal_wall([x for row in bc.latencies(ids, scale) for x in row], concurrency)
        n = tasks * bc.REPEATS
        finished: list[float] = []

        class TimedEvents(collections.deque):
            """The app's event queue, noting when the runner hands over each finished attempt."""

            def append(self, event) -> None:
                if isinstance(event, ev.AttemptFinished):
                    now = time.perf_counter()
                    finished.append(now)
                    with probe.lock:
                        probe.created[id(event)] = now
                super().append(event)

        app = HermitApp(run_yaml)
        async with app.run_test(size=size) as pilot:
            app.set_interval(0.01, probe.tick)
            await wait_for(pilot, lambda: isinstance(app.screen, SetupScreen), 30, "the setup screen")
            app._events = TimedEvents()  # before the launch: its runner's on_event is this queue's append
            t0 = time.perf_counter()
            app.launch(LaunchOptions(selectors=["none"], concurrency=concurrency))
            await wait_for(pilot, lambda: isinstance(app.screen, RunScreen), 60, "the run screen")
            await wait_for(pilot, lambda: not app.running and len(finished) >= n, 900, "the launch")
            t_end = finished[-1]
            await wait_for(pilot, lambda: len(probe.lags) >= n, 30, "the last attempts on screen")
            t1 = time.perf_counter()
            shown = sum(c.done for c in app.store.columns.values())
    if shown != n:
        raise SystemExit(f"the run screen shows {shown} of {n} attempts")
    lags = sorted(p - c for c, a, p in probe.lags)
    q = statistics.quantiles(lags, n=100) if len(lags) > 1 else lags * 99
    return {
        "mode": mode,
        "concurrency": concurrency,
        "attempts": n,
        "wall_s": t_end - t0,
        "ideal_s": ideal,
        "lag_p50_s": q[49],
        "lag_p99_s": q[98],
        "lag_max_s": lags[-1],
        "stall_s": probe.longest_stall(t0, t1),
        "peak_rss_mb": synth.peak_rss_mb(),
    }


def live_figures(got: dict) -> None:
    key = f"dashboard.live.{got['mode']}.{got['concurrency']}"
    synth.figure(
        f"{key}.lag_p99_s",
        got["lag_p99_s"],
        unit="s",
        target="< 0.25",
        detail=f"a real launch from the dashboard ({got['mode']} attempts at concurrency {got['concurrency']}, "
        f"{got['attempts']:,} attempts): the runner's AttemptFinished -> painted on the RunScreen, p50 "
        f"{got['lag_p50_s'] * 1000:.0f} ms, max {got['lag_max_s'] * 1000:.0f} ms; longest stall "
        f"{got['stall_s']:.2f} s; peak RSS {got['peak_rss_mb']:.0f} MB",
    )
    synth.figure(
        f"{key}.efficiency",
        got["ideal_s"] / got["wall_s"],
        detail=f"the launch under the dashboard: wall {got['wall_s']:.2f} s (launch -> last attempt finished), ideal "
        f"{got['ideal_s']:.2f} s",
    )


# -- the driver ---------------------------------------------------------------------------------------------------


def child(kind: str, project: Path, args: argparse.Namespace) -> dict:
    """Run one measurement in a fresh process; its last stdout line is the JSON result."""
    cmd = [
        sys.executable,
        __file__,
        "--child",
        kind,
        "--project",
        str(project),
        "--size",
        args.size,
        "--rate",
        str(args.rate),
    ]
    if args.seconds is not None:
        cmd += ["--seconds", str(args.seconds)]
    done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "BENCH_FIGURES": ""})
    if done.returncode:
        raise SystemExit(f"the {kind} measurement failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tiny run (smoke test)")
    parser.add_argument("--tasks", type=int, help="test tasks (default 11,112: 100,008 attempts)")
    parser.add_argument("--rate", type=float, default=5000.0, help="attempts per second streamed (default 5,000)")
    parser.add_argument("--seconds", type=float, help="stream only this long (default: every attempt)")
    parser.add_argument("--size", default="160x50", help="terminal size, WxH (default 160x50)")
    parser.add_argument("--no-stream", action="store_true", help="measure opening only")
    parser.add_argument(
        "--dir",
        help="where the generated project goes (a temporary folder inside it; default: the system's temporary folder)",
    )
    parser.add_argument(
        "--live",
        metavar="MODE:LEVEL,...",
        help="instead: real launches from the dashboard, e.g. async:256,async:1024,sync:256 (simulated I/O-bound "
        "attempts of 1-20 s x --scale): the stream lag while they run",
    )
    parser.add_argument("--scale", type=float, default=0.1, help="--live: latencies are 1-20 s times this")
    parser.add_argument("--child", choices=["open", "stream", "live"], help=argparse.SUPPRESS)
    parser.add_argument("--mode", help=argparse.SUPPRESS)
    parser.add_argument("--project", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    synth.QUICK = args.quick
    size = parse_size(args.size)
    if args.child:
        project = Path(args.project)
        if args.child == "live":
            mode, _, level = args.mode.partition(":")
            print(json.dumps(asyncio.run(measure_live(mode, int(level), args.scale, size))), flush=True)
            return 0
        if args.child == "open":
            result = asyncio.run(measure_open(project, size))
        else:
            result = asyncio.run(measure_stream(project, size, args.rate, args.seconds))
        print(json.dumps(result), flush=True)
        return 0

    if args.live:
        live(args.live, args.scale, args.size)
        return 0
    tasks = args.tasks or (300 if args.quick else 11112)
    if args.quick and args.seconds is None:
        args.seconds = 1.0
    print(
        f"# 4. dashboard at scale: {len(LABELS)} selectors x {REPEATS} repeats x {tasks:,} tasks = "
        f"{len(LABELS) * REPEATS * tasks:,} attempts, terminal {args.size}",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="hermit-bench-dashboard-", dir=args.dir) as tmp:
        project = Path(tmp) / "p"
        synth.make_project(project, tasks=tasks, tree=False)
        ids = synth.test_ids(project)
        t0 = time.perf_counter()
        lines = sum(synth.write_evaluation(project, label, ids, REPEATS) for label in LABELS)
        print(f"# wrote {lines:,} attempts in {time.perf_counter() - t0:.1f} s", flush=True)
        open_figures(child("open", project, args))
        if not args.no_stream:
            stream_figures(child("stream", project, args), args.rate)
    if not args.no_stream:  # and a real launch streamed from the runner
        live("async:8" if args.quick else LIVE, 0.01 if args.quick else args.scale, args.size)
    return 0


def live(specs: str, scale: float, size: str) -> None:
    """Each MODE:LEVEL of ``specs`` measured by :func:`measure_live` in its own process."""
    for spec in specs.split(","):
        cmd = [sys.executable, __file__, "--child", "live", "--mode", spec, "--scale", str(scale)]
        cmd += ["--project", "-", "--size", size]
        done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "BENCH_FIGURES": ""})
        if done.returncode:
            raise SystemExit(f"the live measurement {spec} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
        live_figures(json.loads(done.stdout.strip().splitlines()[-1]))


def open_figures(got: dict, prefix: str = "dashboard", open_target: str | None = "< 2") -> None:
    n = f"{got['rows']:,}"
    synth.figure(
        f"{prefix}.open_s",
        got["open_s"],
        unit="s",
        target=open_target,
        detail=f"Enter in history -> first paint of all {n} rows with the 3 summaries (the evaluations "
        f"are read again, off the event loop, and put in the store); {got['gc_n']} full GC collections "
        f"{got['gc_s']:.2f} s (longest {got['gc_max_s']:.2f} s); imports {got['import_s']:.2f} s, not "
        "counted",
    )
    synth.figure(
        f"{prefix}.open_stall_s",
        got["stall_s"],
        unit="s",
        target="< 0.1",
        detail="longest event-loop stall from Enter in history to that paint (gap between ticks of a 10 ms timer)",
    )
    synth.figure(
        f"{prefix}.config_open_s",
        got["config_open_s"],
        unit="s",
        detail=f"app start with the config -> its 3 current evaluations in the store (read at once, off the "
        f"event loop); longest stall meanwhile {got['config_stall_s']:.2f} s (from the first timer tick: "
        "Textual's own start-up before it is not counted)",
    )
    synth.figure(
        f"{prefix}.config_open_stall_s",
        got["config_stall_s"],
        unit="s",
        target="<= 0.1",
        detail="longest event-loop stall of that config open (gap between ticks of a 10 ms timer, from its first "
        "tick): the setup screen's first show is its longest step",
    )
    synth.figure(
        f"{prefix}.open_peak_rss_mb",
        got["peak_rss_mb"],
        unit="MB",
        target="< 600",
        detail="peak RSS of the process that opened them (twice: with the config, then from history)",
    )
    for name, what in (
        ("sort", "sort by final's mean, descending"),
        ("filter", "the regressions filter (final vs none)"),
    ):
        synth.figure(
            f"{prefix}.{name}_s",
            got[f"{name}_s"],
            unit="s",
            target="< 0.2",
            detail=f"{what} on the {n}-row table -> its first paint ({got[f'{name}_rows']:,} rows); longest "
            f"stall meanwhile {got[f'{name}_stall_s'] * 1000:.0f} ms",
        )


def stream_figures(got: dict, rate: float) -> None:
    synth.figure(
        "dashboard.stream_lag_p99_s",
        got["lag_p99_s"],
        unit="s",
        target="< 0.25",
        detail=f"event created -> painted on the RunScreen: p50 {got['lag_p50_s'] * 1000:.0f} ms, "
        f"p95 {got['lag_p95_s'] * 1000:.0f} ms, max {got['lag_max_s'] * 1000:.0f} ms "
        f"(created -> in the store p50 {got['to_store_p50_s'] * 1000:.0f} ms); {got['attempts']:,} "
        f"attempts fed at {got['rate']:,.0f}/s over {got['feed_s']:.1f} s, "
        f"{got['paints_per_s']:.1f} paints/s, longest stall {got['stall_s']:.2f} s, {got['gc_n']} full "
        f"GC collections {got['gc_s']:.2f} s (longest {got['gc_max_s']:.2f} s)",
    )
    synth.figure(
        "dashboard.stream_rate",
        got["rate"],
        unit="attempts/s",
        target=f">= {rate * 0.98:g}",
        detail="the rate the feeder held (it shares the GIL with the dashboard)",
    )
    synth.figure(
        "dashboard.stream_peak_rss_mb",
        got["peak_rss_mb"],
        unit="MB",
        target="< 500",
        detail="peak RSS of the streaming process",
    )


if __name__ == "__main__":
    sys.exit(main())
