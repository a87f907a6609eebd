"""A project made in a test for "why it changed": an adapter tree (real git) whose two tagged versions differ in
skills, tools, ADAPTER.md, a binary and a large file; an adapter directory; and evaluations of ``v1`` and ``v2`` with
hermit-format trajectories in transcripts.jsonl, whose agent calls a tool that only ``v2`` exports.

Every figure the tests assert is computed here, from the attempts this module writes, not by the code under test.
"""

from __future__ import annotations

import json
from pathlib import Path

import git

TOOL_OLD = {
    "name": "old_tool",
    "description": "removed in v2",
    "entrypoint": "tools.py:old_tool",
    "input_schema": {"type": "object"},
    "output_schema": {"type": "object"},
}
TOOL_KEPT_V1 = {
    "name": "lookup",
    "description": "look a hint up",
    "entrypoint": "tools.py:lookup",
    "input_schema": {"type": "object"},
    "output_schema": {"type": "object"},
}
TOOL_KEPT_V2 = {**TOOL_KEPT_V1, "description": "look a hint up, by category"}
TOOL_NEW = {**TOOL_KEPT_V1, "name": "new_tool", "description": "added in v2", "entrypoint": "tools.py:new_tool"}
LARGE = "x" * 300_000 + "\n"
CLOCK = 1767225600  # 2026-01-01T00:00:00Z


def manifest(tools: list[dict], skills: bool = True, agents: bool = False) -> str:
    exports: dict = {"context": "ADAPTER.md", "tools": tools}
    if skills:
        exports["skills"] = "skills"
    if agents:
        exports["agents"] = "agents"
    data = {
        "template": {"id": "why-tpl", "version": "1"},
        "exports": exports,
        "structure": {"learnable": ["ADAPTER.md", "skills/**"], "fixed": ["tools.py"]},
    }
    return json.dumps(data, indent=1) + "\n"  # JSON is YAML


def write_files(root: Path, files: dict[str, str | bytes | None]) -> None:
    for rel, content in files.items():
        path = root / rel
        if content is None:
            path.unlink()
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


V1: dict[str, str | bytes | None] = {
    "adapter.yaml": manifest([TOOL_OLD, TOOL_KEPT_V1]),
    "ADAPTER.md": "# Notes\n\n- one\n- two\n",
    "tools.py": "def old_tool():\n    return {}\n\ndef lookup():\n    return {}\n",
    "skills/summarise/SKILL.md": "---\nname: summarise\n---\nSummarise.\n",
    "skills/gone/SKILL.md": "---\nname: gone\n---\nGone in v2.\n",
    "logo.bin": b"\x89PNG\0\x01\x02",
    "big.txt": "small at first\n",
}
V2: dict[str, str | bytes | None] = {
    "adapter.yaml": manifest([TOOL_KEPT_V2, TOOL_NEW], agents=True),
    "ADAPTER.md": "# Notes\n\n- one\n- two, revised\n- three\n",
    "tools.py": "def lookup():\n    return {}\n\ndef new_tool():\n    return {'hint': 1}\n",
    "skills/summarise/SKILL.md": "---\nname: summarise\n---\nSummarise in one line.\n",
    "skills/gone/SKILL.md": None,
    "skills/plan/SKILL.md": "---\nname: plan\n---\nPlan first.\n",
    "agents/critic.md": "---\nname: critic\ndescription: reviews\n---\nReview the answer.\n",
    "logo.bin": b"\x89PNG\0\x01\x03",
    "big.txt": LARGE,
}

TASKS = ["t1", "t2", "t3", "t4"]
REPEATS = 2


def conversation(task: str, calls: list[tuple[str, dict, str]], answer: str) -> list[dict]:
    """hermit's react messages: system, user, then per tool call an assistant message with tool_calls and the tool
    message answering it, then the final assistant message."""
    messages: list[dict] = [
        {"role": "system", "content": "Answer briefly.\n\n# Instructions from the harness adapter\n\n- one"},
        {"role": "user", "content": f"Solve {task}"},
    ]
    for i, (name, args, result) in enumerate(calls):
        call_id = f"call_{task}_{i}"
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": call_id, "content": result})
    messages.append({"role": "assistant", "content": answer})
    return messages


# per (label, task, repeat): (calls, answer, score). v2's agent calls new_tool on t1 and t2 (both repeats) and on
# t3 repeat 1; the calls before it are the same as v1's, so the first divergence is agent step 1 on t1 and t2
# (new_tool comes first) and step 3 on t3 repeat 1 (after a call and its result that both made).
def plan(label: str, task: str, repeat: int) -> tuple[list[tuple[str, dict, str]], str, float]:
    search = ("search", {"q": task}, '{"hits": 2}')
    if label == "v1":
        if task == "t4":
            return [search], "wrong", 0.0
        return [search], "answer", {"t1": 0.0, "t2": 1.0, "t3": 1.0}[task]
    if task in ("t1", "t2"):
        return [("new_tool", {"task": task}, '{"hint": 1}'), search], "answer", 1.0
    if task == "t3" and repeat == 1:
        return [search, ("new_tool", {"task": task}, "Error: ValueError: bad")], "answer", 0.0
    if task == "t4":
        return [search], "wrong", 1.0 if repeat == 1 else 0.0
    return [search], "answer", 1.0


def record(task: str, repeat: int, score: float) -> dict:
    return {
        "repeat": repeat,
        "id": task,
        "status": "ok",
        "error": None,
        "output": "x",
        "judge": {"score": score, "feedback": "", "extra": {}},
        "cost_usd": 0.001,
        "wall_s": 0.1,
        "api_speed": None,
        "tokens": 10,
        "log": None,
    }


def build(dest: Path) -> Path:
    """The project under ``dest``; returns its run.yaml."""
    dest.mkdir(parents=True, exist_ok=True)
    tree = dest / "tree"
    repo = git.Repo.init(tree, mkdir=True, initial_branch="trunk")
    with repo.config_writer() as cfg:
        cfg.set_value("user", "name", "why test").set_value("user", "email", "why@localhost")
    for n, (name, files) in enumerate((("v1", V1), ("v2", V2))):
        write_files(tree, files)
        repo.git.add("-A")
        date = f"{CLOCK + 3600 * n} +0000"  # fixed dates: the same commit ids on every build
        repo.git.commit("-m", f"adapter {name}", env={"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date})
        repo.git.tag(name)
    repo.git.tag("root", "v1")
    repo.close()
    folder = dest / "adapters" / "local"
    write_files(folder, {k: v for k, v in V2.items() if v is not None})
    (dest / "tasks.jsonl").write_text("".join(json.dumps({"id": t, "question": t}) + "\n" for t in TASKS))
    (dest / "test.txt").write_text("\n".join(TASKS) + "\n")
    (dest / "run.yaml").write_text(
        "data: {tasks: tasks.jsonl, test: test.txt}\nagent: {name: pipe.py:run}\njudge: {path: judge.py}\n"
        "trainer: {run_name: r, tree_dir: tree, output_dir: runs}\neval: {repeats: 2}\n"
    )
    for label in ("v1", "v2"):
        out = dest / "runs" / "r" / "eval" / label
        out.mkdir(parents=True)
        results, transcripts = [], []
        for task in TASKS:
            for repeat in range(1, REPEATS + 1):
                calls, answer, score = plan(label, task, repeat)
                results.append(json.dumps(record(task, repeat, score)) + "\n")
                messages = conversation(task, calls, answer)
                transcripts.append(json.dumps({"repeat": repeat, "id": task, "messages": messages}) + "\n")
        (out / "results.jsonl").write_text("".join(results))
        (out / "transcripts.jsonl").write_text("".join(transcripts))
        commit = git.Repo(tree).commit(label).hexsha
        summary = {"adapter": label, "commit": commit, "tasks": 4, "repeats": 2, "mean_score": 0.5}
        summary.update({"solved_once": 0.5, "cost_usd": 0.008, "unknown_cost_tasks": 0, "errors": 0, "wall_s": 1})
        (out / "summary.json").write_text(json.dumps(summary))
    return dest / "run.yaml"
