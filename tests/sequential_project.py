"""A small synthetic project for --stop-when-decided: pass/fail tasks with a known success probability each, and
adapter directories that add a known boost to it. Every draw is a hash of (task, repeat, the adapter's salt), so a
launch is reproducible and the expected outcome of an A/A or an A/B comparison is known in advance."""

from __future__ import annotations

import json
import random
from pathlib import Path

PIPELINE = """
import hashlib
from pathlib import Path

from hermit_tui.core.context import current_repeat


def run(task, adapter):
    salt, boost = "none", 0.0
    if adapter is not None:
        salt = (Path(adapter) / "salt.txt").read_text().strip()
        boost = float((Path(adapter) / "boost.txt").read_text())
    digest = hashlib.sha256(f"{task['id']}|{current_repeat()}|{salt}".encode()).hexdigest()
    draw = int(digest[:13], 16) / 16 ** 13
    return {"output": 1 if draw < min(1.0, task["p"] + boost) else 0, "cost_usd": 0.001}
"""

JUDGE = "def score(task, output):\n    return float(output.output)\n"


def build(
    root: Path,
    *,
    tasks: int = 30,
    repeats: int = 6,
    seed: int = 5,
    low: float = 0.1,
    high: float = 0.5,
    adapters: dict[str, float] | None = None,
) -> Path:
    """The project under ``root``; ``adapters``: directory name -> boost of the success probability. Returns the
    run.yaml path."""
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    ids = [f"t{i:03d}" for i in range(tasks)]
    (root / "tasks.jsonl").write_text(
        "".join(json.dumps({"id": t, "p": round(rng.uniform(low, high), 3)}) + "\n" for t in ids)
    )
    (root / "test.txt").write_text("\n".join(ids) + "\n")
    (root / "train.txt").write_text("")
    (root / "pipe.py").write_text(PIPELINE)
    (root / "judge.py").write_text(JUDGE)
    for name, boost in (adapters or {}).items():
        folder = root / "adapters" / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "adapter.yaml").write_text(f"name: {name}\n")
        (folder / "salt.txt").write_text(name + "\n")
        (folder / "boost.txt").write_text(f"{boost}\n")
    (root / "run.yaml").write_text(
        "data: {tasks: tasks.jsonl, train: train.txt, test: test.txt}\n"
        "agent: {name: pipe.py:run, concurrency: 4}\njudge: {path: judge.py}\n"
        f"trainer: {{run_name: seq, tree_dir: tree}}\neval: {{repeats: {repeats}}}\n"
    )
    return root / "run.yaml"
