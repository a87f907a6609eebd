"""The built-in demo: a complete hermit-format workspace that needs no network and no API key.

``build_demo`` copies the files under ``files/`` (config, simulated pipeline, judge, tasks, template) and then writes
what a finished hermit training run leaves behind: the adapter tree (git) with ``root``, three checkpoints, an invalid
commit and its repair, ``demo/final``; the run's checkout with ``CARD.md``; ``config.yaml``, ``steps.jsonl`` and
``summary.json``; and an adapter directory, ``adapters/unit-table``: final's files plus a tool it exports
(``unit_table``), which the simulated agent calls on unit conversions when its adapter exports it, so that "why it
changed" (``hermit-tui diff --a final --b adapters/unit-table``) has an exported tool, a divergence and a usage split
to show. Everything is deterministic, commit dates included. It is a teaching demonstration, not evidence of any real
model's performance.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import types
from pathlib import Path
from typing import Any

import yaml

from hermit_tui.core.errors import InputError

DEMO_RUN = "demo"
MARKER = ".hermit-tui-demo"
FILES = Path(__file__).resolve().parent / "files"
COPIED = (
    "run.yaml",
    "README.md",
    "pipeline.py",
    "judge.py",
    "tasks.jsonl",
    "train.txt",
    "val.txt",
    "test.txt",
    "judge_data",
    "template",
    "task_info",
)
TEMPLATE_ID = "demo-notes"
EVOLVER = "claude"
INVALID_MARK = "[invalid: fails check_spec; the next commit repairs it]"
START = 1767225600  # 2026-01-01T00:00:00Z; commit N of the tree is dated START + N hours
IDENTITY = {
    "GIT_AUTHOR_NAME": "hermit-tui demo",
    "GIT_AUTHOR_EMAIL": "demo@localhost",
    "GIT_COMMITTER_NAME": "hermit-tui demo",
    "GIT_COMMITTER_EMAIL": "demo@localhost",
}
ORIGIN = '\norigin:\n  template: demo-notes\n  version: "0.1"\n'
EVOLVER_USAGE = [(0.184, 41200), (0.213, 47800), (0.196, 44100)]  # per step: USD, tokens (made up, fixed)
VARIANT = "adapters/unit-table"  # an adapter directory: final plus an exported tool
VARIANT_TOOL = "unit_table"
VARIANT_EXPORT = f"""  tools:
    - name: {VARIANT_TOOL}
      description: The factor between two units (km, mi, kg, lb) or the formula between C and F.
      entrypoint: tools.py:{VARIANT_TOOL}
      input_schema: {{type: object, properties: {{from: {{type: string}}, to: {{type: string}}}}, required: [from, to]}}
      output_schema: {{type: object}}
"""
VARIANT_CODE = '''"""The unit_table tool of the demo's adapters/unit-table: factors between units (a teaching toy)."""

FACTORS = {("km", "mi"): 1 / 1.609344, ("mi", "km"): 1.609344, ("kg", "lb"): 2.20462262, ("lb", "kg"): 1 / 2.20462262}


def unit_table(**args):
    pair = (args.get("from"), args.get("to"))
    if pair == ("C", "F"):
        return {"formula": "F = C * 9 / 5 + 32"}
    if pair == ("F", "C"):
        return {"formula": "C = (F - 32) * 5 / 9"}
    return {"factor": FACTORS[pair]} if pair in FACTORS else {"error": f"no factor for {pair}"}
'''
STEPS = [  # (ADAPTER.md file under files/training, summary of the simulated learner)
    ("ADAPTER.step-1.md", "added a second hint each for sorting and date arithmetic"),
    ("ADAPTER.step-2.md", "added hints for reversing, counting letters and percentages"),
    ("ADAPTER.step-3.md", "rewrote the notes: more checks per skill; the unit-conversion hints were dropped"),
]


def default_demo_dir() -> Path:
    """``$HERMIT_TUI_DEMO_DIR``, else ``hermit-tui/demo`` under ``$XDG_CACHE_HOME`` (default ``~/.cache``)."""
    if os.environ.get("HERMIT_TUI_DEMO_DIR"):
        return Path(os.environ["HERMIT_TUI_DEMO_DIR"]).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME")
    return (Path(cache).expanduser() if cache else Path.home() / ".cache") / "hermit-tui" / "demo"


def is_demo_config(path: str | Path) -> bool:
    """Whether ``path`` (a run.yaml, or its folder) belongs to a workspace built by ``build_demo``."""
    path = Path(path)
    folder = path if path.is_dir() else path.parent
    return (folder / MARKER).is_file()


def build_demo(dest: str | Path, *, force: bool = False) -> Path:
    """Create the demo workspace in ``dest`` (when missing) and return its run.yaml.

    An existing demo workspace is returned untouched, or rebuilt with ``force``. A non-empty folder that is not a
    demo workspace is refused: user files are never overwritten.
    """
    dest = Path(dest).expanduser().resolve()
    if dest.exists() and not dest.is_dir():
        raise InputError(f"{dest}: exists and is not a folder; choose a folder for the demo workspace")
    if (dest / MARKER).is_file():
        if not force and (dest / "run.yaml").is_file():
            return dest / "run.yaml"
        if not force:
            raise InputError(f"{dest}: an incomplete demo workspace (no run.yaml); rebuild it with force")
        for child in dest.iterdir():
            shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
    elif dest.exists() and any(dest.iterdir()):
        raise InputError(
            f"{dest}: the folder is not empty and is not a hermit-tui demo workspace; choose a new or empty folder"
        )
    existed = dest.exists()
    try:
        _build(dest)
    except BaseException:
        if existed:
            for child in dest.iterdir():
                shutil.rmtree(child, ignore_errors=True) if child.is_dir() else child.unlink(missing_ok=True)
        else:
            shutil.rmtree(dest, ignore_errors=True)
        raise
    return dest / "run.yaml"


# ---------- building ----------
class _Git:
    """git on one repository, with a fixed identity and clock, isolated from the user's git configuration."""

    def __init__(self, cwd: Path):
        self.cwd = cwd
        self.hour = 0

    def __call__(self, *args: str, hour: int | None = None) -> str:
        env = {
            **os.environ,
            **IDENTITY,
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_TERMINAL_PROMPT": "0",
            "LC_ALL": "C",
        }
        if hour is not None:
            env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = f"{START + 3600 * hour} +0000"
        run = subprocess.run(["git", "-C", str(self.cwd), *args], capture_output=True, text=True, env=env)
        if run.returncode != 0:
            raise RuntimeError(f"building the demo: git {args[0]} failed: {run.stderr.strip()}")
        return run.stdout.strip()

    def commit(self, message: str) -> str:
        """Commit every change, dated one hour after the previous commit."""
        self("add", "-A")
        self("commit", "-q", "--no-verify", "-m", message, hour=self.hour)
        self.hour += 1
        return self("rev-parse", "HEAD")


def _load(path: Path, name: str) -> types.ModuleType:
    """Execute a workspace file as a module without leaving a __pycache__ behind."""
    module = types.ModuleType(name)
    module.__file__ = str(path)
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), module.__dict__)
    return module


def _rollout(pipeline, judge, tasks: list[dict], text: str) -> tuple[int, dict[str, Any]]:
    """One training step's rollouts: each task once, with the parent adapter's ADAPTER.md."""
    scores, costs, latencies, tokens = {}, [], [], 0
    for task in tasks:
        result = pipeline.attempt(dict(task), text, 1)
        verdict = judge.score(dict(task), {"output": result["output"]})
        scores[task["id"]] = verdict["score"]
        costs.append(result["cost_usd"])
        latencies.append(result["latency_s"])
        tokens += result["tokens"]
    known = [c for c in costs if c is not None]
    return tokens, {
        "mean_score": round(sum(scores.values()) / len(scores), 4),
        "scores": scores,
        "cost_usd": round(sum(known), 6) if known else None,
        "unknown_cost_tasks": sum(c is None for c in costs),
        "wall_s": round(sum(latencies) / 4, 1),
        "api_speed": [],
    }


def _card(root_commit: str, steps: list[dict], budget: dict, note: str) -> str:
    usd, unknown = budget["usd"], budget["unknown_cost_calls"]
    return "\n".join(
        [
            f"# Adapter card: {DEMO_RUN}",
            "",
            f"- Template: `{TEMPLATE_ID}@0.1`",
            f"- Started from: `{root_commit}`",
            f"- Evolver: `{EVOLVER}` (simulated: hermit-tui wrote these commits; no learner ran)",
            "- Task: tasks.jsonl (hermit-tui's built-in demo, 40 small skill tasks)",
            f"- Training: 1 epoch(s), {len(steps)} step(s)",
            f"- Spending: rollouts ${usd['rollout']:.4f}, Evolver ${usd['evolver']:.4f} "
            f"(+{unknown} calls of unknown cost); {budget['seconds'] / 3600:.2f} h",
            "",
            "## Settings that affect what can be trusted",
            "",
            '- sandbox: {"enabled": false}',
            '- evolver_access: {"environment": [], "tools": [], "send_material_out": false}',
            "- validation data given to the Evolver: True",
            "",
            "A teaching demonstration: the acting agent is a deterministic simulation whose skills are read from",
            "ADAPTER.md. Nothing here is evidence of a real model's performance.",
            "",
            "## What was learned",
            "",
            note,
            "",
            "## Evaluation",
            "",
            "Not evaluated yet (`hermit eval`).",
            "",
            "Where it has not been tested: anything beyond this demo's simulated solver and its test split.",
            "",
        ]
    )


def _build(dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    for name in COPIED:
        src = FILES / name
        shutil.copytree(src, dest / name) if src.is_dir() else shutil.copyfile(src, dest / name)
    pipeline = _load(dest / "pipeline.py", "_hermit_tui_demo_pipeline")
    judge = _load(dest / "judge.py", "_hermit_tui_demo_judge")
    tasks = {row["id"]: row for row in map(json.loads, (dest / "tasks.jsonl").read_text().splitlines()) if row}
    train = (dest / "train.txt").read_text().split()
    config = yaml.safe_load((dest / "run.yaml").read_text())
    step_size = int(config["data"]["step_size"])

    tree_dir = dest / "runs" / "trees" / TEMPLATE_ID
    run_dir = dest / "runs" / DEMO_RUN
    checkout = run_dir / "checkout"
    tree_dir.mkdir(parents=True)
    tree = _Git(tree_dir)
    tree("init", "-q", "-b", "trunk")
    tree("config", "core.autocrlf", "false")
    for path in sorted((dest / "template").iterdir()):
        shutil.copyfile(path, tree_dir / path.name)
    root = tree.commit(f"root: template {TEMPLATE_ID}@0.1")
    tree("tag", "root", root)
    tree("worktree", "add", "-q", "-b", DEMO_RUN, str(checkout), root)
    work = _Git(checkout)
    work.hour = tree.hour

    budget: dict[str, Any] = {
        "usd": {"rollout": 0.0, "evolver": 0.0},
        "tokens": {"rollout": 0, "evolver": 0},
        "unknown_cost_calls": 0,
        "seconds": 0.0,
    }
    text = (checkout / "ADAPTER.md").read_text()
    parent, records = root, []
    for n, (source, summary) in enumerate(STEPS, start=1):
        chunk = train[(n - 1) * step_size : n * step_size]
        tokens_used, rollout = _rollout(pipeline, judge, [tasks[t] for t in chunk], text)
        text = (FILES / "training" / source).read_text()
        (checkout / "ADAPTER.md").write_text(text)
        if n == 1:
            with open(checkout / "adapter.yaml", "a") as f:  # a changed adapter names its origin
                f.write(ORIGIN)
        message = f"step {n} (epoch 1) [{EVOLVER}]: {summary}\n\nrun: {DEMO_RUN}\nevolver: {EVOLVER}\n"
        check, repaired = {"passed": True, "issues": []}, []
        if n == 2:  # the learner also left a file outside the learnable paths: committed as invalid, then repaired
            shutil.copyfile(FILES / "training" / "worked_examples.txt", checkout / "worked_examples.txt")
            invalid = work.commit(f"{message}\n{INVALID_MARK}\n")
            (checkout / "worked_examples.txt").unlink()
            reason = "file outside every learnable path"
            repaired = [{"path": "worked_examples.txt", "restored_from": "parent (absent there)", "reason": reason}]
            commits = [
                invalid,
                work.commit(f"repair step {n} (epoch 1): 1 file(s)\n\n- worked_examples.txt: removed ({reason})\n"),
            ]
            check = {
                "passed": False,
                "issues": [{"path": "worked_examples.txt", "check": 2, "problem": reason}],
                "after_repair": {"passed": True, "issues": []},
            }
        else:
            commits = [work.commit(message)]
        head = commits[-1]
        tree("tag", f"{DEMO_RUN}/ckpt-step-{n}", head)
        usd, tokens = EVOLVER_USAGE[n - 1]
        budget["usd"]["rollout"] = round(budget["usd"]["rollout"] + (rollout["cost_usd"] or 0.0), 6)
        budget["usd"]["evolver"] = round(budget["usd"]["evolver"] + usd, 6)
        budget["tokens"]["rollout"] += tokens_used
        budget["tokens"]["evolver"] += tokens
        budget["unknown_cost_calls"] += rollout["unknown_cost_tasks"]
        budget["seconds"] = round(budget["seconds"] + rollout["wall_s"] + 95.0 + 10 * n, 1)
        records.append(
            {
                "step": n,
                "epoch": 1,
                "tasks": chunk,
                "rollout": rollout,
                "evolver": {
                    "status": "done",
                    "summary": summary,
                    "wall_s": 95.0 + 10 * n,
                    "usage": [{"input_tokens": tokens - 3000, "output_tokens": 3000, "cost_usd": usd, "calls": 1}],
                },
                "status": "done",
                "parent": parent,
                "commits": commits,
                "commit": head,
                "changed": True,
                "check": check,
                "repaired": repaired,
                "budget_after": json.loads(json.dumps(budget)),
                "time": _stamp(work.hour - 1),
            }
        )
        parent = head

    note = (
        "Simulated training of the demo: three steps on the train split added tagged hints to ADAPTER.md; the "
        "last step rewrote the notes and dropped the unit-conversion hints, a regression the test split shows."
    )
    (checkout / "CARD.md").write_text(_card(root, records, budget, note))
    final = work.commit(f"final: {DEMO_RUN}\n\n{note}\n")
    tree("tag", f"{DEMO_RUN}/final", final)

    with open(run_dir / "steps.jsonl", "w") as f:
        for record in records:
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
    template = yaml.safe_load((dest / "template" / "adapter.yaml").read_text())["template"]
    resolved = {
        "config": config,
        "template": template,
        "tree": str(tree_dir),
        "branch": DEMO_RUN,
        "start": root,
        "evolver": {"name": EVOLVER, "simulated": True},
        "warnings": [],
        "python": None,
    }
    (run_dir / "config.yaml").write_text(yaml.safe_dump(resolved, sort_keys=False, allow_unicode=True))
    run_summary = {
        "run": DEMO_RUN,
        "stop_reason": "all epochs done",
        "final_commit": final,
        "final_tag": f"{DEMO_RUN}/final",
        "tree": str(tree_dir),
        "branch": DEMO_RUN,
        "steps": len(records),
        "bootstrap": False,
        "spending": budget,
        "checkpoints": [f"{DEMO_RUN}/ckpt-step-{n}" for n in range(1, len(records) + 1)],
        "finalize": note,
        "warnings": [],
        "demo": "teaching demonstration: simulated agent, not evidence of real-model performance",
    }
    (run_dir / "summary.json").write_text(json.dumps(run_summary, indent=1))
    _variant(checkout, dest / VARIANT)
    (dest / MARKER).write_text(json.dumps({"built_by": "hermit-tui demo", "format": 1}) + "\n")


def _variant(checkout: Path, dest: Path) -> None:
    """adapters/unit-table: final's files with the unit_table tool exported."""
    dest.mkdir(parents=True)
    for path in sorted(checkout.iterdir()):
        if path.is_file() and path.name != ".git":
            shutil.copyfile(path, dest / path.name)
    manifest = (dest / "adapter.yaml").read_text()
    context = "  context: ADAPTER.md\n"
    if context not in manifest:
        raise RuntimeError("building the demo: the template's adapter.yaml has no exports.context line")
    (dest / "adapter.yaml").write_text(manifest.replace(context, context + VARIANT_EXPORT))
    (dest / "tools.py").write_text(VARIANT_CODE)


def _stamp(hour: int) -> str:
    return dt.datetime.fromtimestamp(START + 3600 * hour, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S")
