"""Why it changed, timed (``core.why``): aligning two long trajectories, and the summary of a whole compared pair.

    python benchmarks/bench_why.py [--quick]

1. **Aligning two trajectories of 200 steps each** (``core.why.align.align_messages``: hermit messages to steps, then
   the two-pass alignment), where the second changes a tool call's arguments at step 40, inserts two steps at 120
   and drops one at 170: the median of 30 alignments, in milliseconds (target < 50 ms). A correctness figure checks
   that the first divergence is found at agent step 40 (1 when it is).
2. **The pair summary over 10,000 attempts with transcripts** (``core.why.pair.pair_why``: the adapter's diff read
   from git objects, every trajectory of both sides read from transcripts.jsonl and aligned, tool use, usage of the
   tool the candidate exports, the flips): 1,000 test tasks x 10 repeats under each of root and final, in seconds
   (target < 2 s; scipy's one-time import is done before), the CPU time it took (on a loaded machine the wall
   time includes waiting for a core), and the process's peak memory (target < 300 MB).

The project is benchmarks/synth.py's, with final's adapter exporting a tool its agent calls on some attempts.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import synth  # noqa: E402

from hermit_tui.core.why.align import align_messages  # noqa: E402
from hermit_tui.core.why.pair import pair_why  # noqa: E402
from hermit_tui.core.workspace.config import load_config  # noqa: E402
from hermit_tui.core.workspace.tasks import load_tasks  # noqa: E402

TOOL = "lookup_hint"
TOOLS_YAML = f"""  tools:
    - name: {TOOL}
      description: a hint for a question
      entrypoint: hints.py:{TOOL}
      input_schema: {{type: object}}
      output_schema: {{type: object}}
"""


def call(i: int, name: str, args: dict) -> dict:
    fn = {"name": name, "arguments": json.dumps(args)}
    return {"role": "assistant", "content": None, "tool_calls": [{"id": f"c{i}", "type": "function", "function": fn}]}


def result(i: int, content: str) -> dict:
    return {"role": "tool", "tool_call_id": f"c{i}", "content": content}


def long_pair(steps: int = 200) -> tuple[list[dict], list[dict], int]:
    """Two trajectories of ``steps`` agent steps after a system prompt and a question: calls and results in turn;
    the second changes the call at agent step 40, inserts two steps before 120 and drops the one at 170."""
    head = [{"role": "system", "content": "You solve tasks."}, {"role": "user", "content": "Do the long task."}]
    a: list[dict] = []
    for i in range(steps // 2):
        a += [call(i, "python", {"code": f"step_{i}()", "note": "x" * 60}), result(i, f"output of step {i} " * 8)]
    b = [dict(m) for m in a]
    b[39] = call(19, "python", {"code": "step_19(changed=True)", "note": "x" * 60})  # agent step 40: a call
    b = b[:119] + [call(900, "search", {"q": "more"}), result(900, "found")] + b[119:]
    del b[171]
    return head + a, head + b, 40


def time_align(runs: int) -> tuple[float, int | None]:
    a, b, _ = long_pair()
    took = []
    found = None
    for _ in range(runs):
        t0 = time.perf_counter()
        al = align_messages(["a", "b"], [a, b])
        took.append(time.perf_counter() - t0)
        found = al.divergence_step
    return statistics.median(took) * 1000, found


def trajectory(rng: random.Random, tid: str, label: str, score: float, with_tool: bool) -> list[dict]:
    system = "You answer questions.\n\n" + synth.adapter_text(label)
    out = [{"role": "system", "content": system}, {"role": "user", "content": f"synthetic question {tid}"}]
    out += [call(1, "python", {"code": f"solve('{tid}')"}), result(1, json.dumps({"value": rng.randint(0, 99)}))]
    if with_tool:
        out += [call(2, TOOL, {"q": tid}), result(2, "Error: no hint" if rng.random() < 0.1 else "a hint")]
    out.append({"role": "assistant", "content": f"answer {tid}" if score >= 1.0 else f"guess {rng.randint(0, 9)}"})
    return out


def project(root: Path, tasks: int, repeats: int) -> Path:
    """The synthetic project with root and final evaluated (results, summaries with the real commits, trajectories),
    final's adapter exporting TOOL."""
    run_yaml = synth.make_project(root / "p", tasks=tasks, repeats=repeats)
    repo = root / "p" / "runs" / "trees" / synth.TEMPLATE_ID

    def git(*args: str) -> str:
        env = {**synth.GIT_ENV}
        done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env=env, check=True)
        return done.stdout.strip()

    git("checkout", "-q", synth.RUN)
    manifest = (
        (repo / "adapter.yaml").read_text().replace("  context: ADAPTER.md\n", "  context: ADAPTER.md\n" + TOOLS_YAML)
    )
    (repo / "adapter.yaml").write_text(manifest)
    (repo / "hints.py").write_text(f"def {TOOL}(q):\n    return 'a hint'\n")
    git("add", "-A")
    git("commit", "-q", "--no-verify", "-m", "final exports a tool")
    git("tag", "-f", f"{synth.RUN}/final")
    git("checkout", "-q", "trunk")
    commits = {"root": git("rev-parse", "root"), "final": git("rev-parse", f"{synth.RUN}/final")}
    ids = synth.test_ids(root / "p")
    for label in ("root", "final"):
        synth.write_evaluation(root / "p", label, ids, repeats)
        folder = root / "p" / "runs" / synth.RUN / "eval" / label
        summary = json.loads((folder / "summary.json").read_text())
        summary["commit"] = commits[label]
        (folder / "summary.json").write_text(json.dumps(summary))
        rng = random.Random(f"why|{label}")
        with open(folder / "results.jsonl") as src, open(folder / "transcripts.jsonl", "w") as out:
            for line in src:
                rec = json.loads(line)
                uses = label == "final" and rng.random() < 0.6
                messages = trajectory(rng, rec["id"], label, rec["judge"]["score"], uses)
                out.write(json.dumps({"id": rec["id"], "repeat": rec["repeat"], "messages": messages}) + "\n")
    return run_yaml


def time_pair(tasks: int, repeats: int) -> tuple[float, float, float, int]:
    with tempfile.TemporaryDirectory(prefix="hermit-bench-why-") as tmp:
        config = load_config(project(Path(tmp), tasks, repeats))
        test_ids = list(load_tasks(config).test_ids)
        import scipy.special  # noqa: F401  # the intervals' one-time import (~0.25 s), loaded in a dashboard already

        t0, c0 = time.perf_counter(), time.process_time()
        pair = pair_why(config, "root", "final", test_ids)
        took, cpu = time.perf_counter() - t0, time.process_time() - c0
        peak = synth.peak_rss_mb()
        used = pair.use[1].used if len(pair.use) > 1 else 0
        assert pair.paired_attempts == tasks * repeats, pair.paired_attempts
        assert used > 0 and pair.diff is not None and any(e.name == TOOL for e in pair.diff.exports)
    return took, cpu, peak, pair.paired_attempts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a tiny run that checks the script works")
    args = ap.parse_args(argv)
    synth.QUICK = args.quick
    ms, found = time_align(3 if args.quick else 30)
    synth.figure("why.align_200_ms", ms, unit="ms", target="< 50", detail="two 200-step trajectories, median")
    synth.figure(
        "why.align_divergence_found",
        1.0 if found == long_pair()[2] else 0.0,
        target=">= 1",
        detail=f"first divergence at agent step {found} (expected {long_pair()[2]})",
        check=True,
    )
    tasks, repeats = (20, 5) if args.quick else (1_000, 10)
    took, cpu, peak, paired = time_pair(tasks, repeats)
    detail = f"{paired:,} paired attempts per side ({tasks:,} tasks x {repeats}), with transcripts"
    synth.figure("why.pair_summary_s", took, unit="s", target="< 2", detail=detail)
    synth.figure("why.pair_summary_cpu_s", cpu, unit="s", detail="the same, in this process's CPU time (load-proof)")
    synth.figure("why.pair_summary_peak_rss_mb", peak, unit="MB", target="< 300")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
