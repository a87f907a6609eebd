"""Fixed data for the UI tests and the screenshots: no timing, no randomness."""

from __future__ import annotations

from hermit_tui.core.records.results import AttemptRecord, Judged, summarize
from hermit_tui.core.run import events as ev
from hermit_tui.dashboard.state.store import EvalStore

FIXED_LABELS = ("none", "root", "final")
FIXED_COMMITS = {"none": None, "root": "1" * 40, "final": "f" * 40}
FIXED_TASKS = [
    {"id": f"t{i:02d}", "category": ("arith", "units", "strings", "dates")[i % 4], "question": f"question number {i}"}
    for i in range(1, 13)
]

# score per (task index, label) before the repeat wobble: none < root < final on average, t04 and t10 regress.
_BASE = {
    "none": [0, 0, 1, 0.5, 0, 1, 0, 0, 0.5, 1, 0, 0],
    "root": [1, 0, 1, 1, 0, 1, 0.5, 0, 1, 1, 0, 0.5],
    "final": [1, 1, 1, 0, 0, 1, 1, 1, 1, 0.5, 1, 1],
}

#: Seven selectors, as a hermit-trained project has them (checkpoints, an adapter directory, a commit): the 80x24
#: snapshots with many columns. The extra ones score between root and final, each on a fixed pattern.
SEVEN_LABELS = ("none", "root", "demo_ckpt-step-1", "demo_ckpt-step-2", "shouty", "3ad8450452c9", "final")
SEVEN_COMMITS = {
    **FIXED_COMMITS,
    "demo_ckpt-step-1": "2" * 40,
    "demo_ckpt-step-2": "3" * 40,
    "shouty": None,
    "3ad8450452c9": "3ad8450452c9" + "0" * 28,
}
_BASE.update(
    {
        "demo_ckpt-step-1": [1, 0, 1, 1, 0, 1, 0.5, 0, 1, 1, 0.5, 0.5],
        "demo_ckpt-step-2": [1, 0.5, 1, 0.5, 0, 1, 1, 0, 1, 1, 1, 0.5],
        "shouty": [0, 0, 1, 0.5, 0, 1, 0, 0.5, 0.5, 1, 0, 0],
        "3ad8450452c9": [1, 1, 1, 0.5, 0, 1, 1, 0.5, 1, 0.5, 1, 1],
    }
)


def fixed_records(label: str, repeats: int = 3) -> list[AttemptRecord]:
    """Deterministic attempts with every status: t05 always fails in the pipeline, final's t09 repeat 2 has a
    judge error, t03's cost is unknown, t07 is flaky under root."""
    out = []
    for r in range(1, repeats + 1):
        for i, task in enumerate(FIXED_TASKS):
            tid = task["id"]
            score = float(_BASE[label][i])
            if tid == "t07" and label == "root":
                score = 1.0 if r == 2 else 0.0
            if tid == "t05":
                out.append(
                    AttemptRecord(
                        repeat=r,
                        id=tid,
                        status="error",
                        error="ValueError: no unit for 'parsec'",
                        output=None,
                        judge=Judged(score=0.0, feedback="the pipeline failed: ValueError: no unit for 'parsec'"),
                        cost_usd=None,
                        wall_s=0.05,
                        traceback="Traceback (most recent call last):\n"
                        "  File \"pipeline.py\", line 40, in run\nValueError: no unit for 'parsec'\n",
                    )
                )
                continue
            if tid == "t09" and label == "final" and r == 2:
                out.append(
                    AttemptRecord(
                        repeat=r,
                        id=tid,
                        status="judge_error",
                        error="KeyError: 'expected'",
                        output="42 km",
                        judge=Judged(score=0.0, feedback="the judge failed: KeyError: 'expected'"),
                        cost_usd=0.002,
                        wall_s=0.12,
                        tokens=120,
                    )
                )
                continue
            out.append(
                AttemptRecord(
                    repeat=r,
                    id=tid,
                    status="ok",
                    error=None,
                    output=f"{label} answer to {tid}: {score:g}",
                    judge=Judged(
                        score=score, feedback="correct" if score >= 1 else "wrong", extra={"category": task["category"]}
                    ),
                    cost_usd=None if tid == "t03" else 0.001 * (i + 1),
                    wall_s=0.1 + 0.01 * i,
                    tokens=100 + i,
                    log=None,
                )
            )
    return out


def fixed_store(repeats: int = 3, labels: tuple[str, ...] = FIXED_LABELS) -> EvalStore:
    """A store fed through the engine's own events, as a finished launch of none/root/final (or ``labels``, e.g.
    SEVEN_LABELS) would feed it."""
    store = EvalStore({t["id"]: t for t in FIXED_TASKS}, [])
    ids = [t["id"] for t in FIXED_TASKS]
    total = len(ids) * repeats
    commits = SEVEN_COMMITS
    store.apply(
        ev.RunStarted(labels=list(labels), task_ids=ids, repeats=repeats, concurrency=4, total=total * len(labels))
    )
    for label in labels:
        store.apply(ev.SelectorStarted(label=label, selector=label, commit=commits[label], total=total))
    for label in labels:
        records = fixed_records(label, repeats)
        for rec in records:
            store.apply(ev.AttemptFinished(label=label, record=rec, traceback=rec.traceback))
        store.apply(
            ev.SelectorFinished(
                label=label,
                summary=summarize(
                    records,
                    adapter=label,
                    commit=commits[label],
                    task_ids=ids,
                    repeats=repeats,
                    wall_s=12.0,
                    label=label,
                    complete=True,
                    expected_attempts=total,
                ),
            )
        )
    store.apply(ev.RunFinished(summaries={}, cancelled=False, wall_s=12.0))
    return store


def fixture_app(config_path=None, screen: str | None = "setup", *, store: EvalStore | None = None, **screen_kwargs):
    """The dashboard on fixed data: the config (a demo workspace) is loaded synchronously, the store is
    ``fixed_store()`` (no engine, no timers), and ``screen`` is shown first."""
    from hermit_tui.dashboard.app import HermitApp

    class FixtureApp(HermitApp):
        def start(self) -> None:
            if config_path is not None:
                from hermit_tui.core.workspace.config import load_config
                from hermit_tui.core.workspace.tasks import load_tasks
                from hermit_tui.demo import is_demo_config

                self.config = load_config(config_path)
                self.taskset = load_tasks(self.config)
                self.is_demo = is_demo_config(self.config.path)
                from hermit_tui.dashboard.app import protocol_warnings

                self.store.set_warnings(protocol_warnings(self.config, self.taskset))
                self.sub_title = self.config.run_name + ("  ·  teaching demonstration" if self.is_demo else "")
            if screen is not None:
                self.goto(screen, **screen_kwargs)

    return FixtureApp(None, store=store if store is not None else fixed_store(), live_updates=False)


#: Triage labels on the fixed store (column, task, repeat, labels, note, corrected score): none and final share a
#: "wrong reasoning" on t04; final alone has "format error" on t05 and t10; root's t05 is a flaky infrastructure.
FIXED_ANNOTATIONS = [
    ("none", "t04", 1, ["wrong reasoning"], "", None),
    ("final", "t04", 1, ["wrong reasoning"], "adds the units twice", None),
    ("final", "t04", 2, ["wrong reasoning", "format error"], "", None),
    ("final", "t05", 1, ["format error"], "", None),
    ("final", "t10", 3, ["judge disagrees"], "0.5 looks right to me", 1.0),
    ("root", "t05", 1, ["flaky infrastructure"], "", None),
    ("none", "t07", 2, ["timeout"], "", None),
]


def annotate_fixed(store: EvalStore) -> EvalStore:
    """``store`` with FIXED_ANNOTATIONS (in memory, a fixed time)."""
    from hermit_tui.core.records.annotations import Annotation

    for key, task, repeat, labels, note, score in FIXED_ANNOTATIONS:
        store.put_annotation(
            key,
            Annotation(
                repeat=repeat,
                id=task,
                labels=labels,
                note=note,
                corrected_score=score,
                at="2026-01-02T03:04:05.000000Z",
            ),
        )
    return store
