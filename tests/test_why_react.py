"""Was the adapter used, on trajectories written by hermit-harness's own ``react`` agent: hermit-tui evaluates the
demo's workspace with hermit's react agent against an OpenAI-compatible server on 127.0.0.1 (as
test_react_agent.py does), once with no adapter and once with an adapter directory that exports a tool. The "model"
calls the adapter's tool whenever it is offered (on odd-numbered tasks) and answers directly otherwise, so which
attempts used the adapter is known here, from the tasks, without the code under test."""

from __future__ import annotations

import json
import shutil
import textwrap

import pytest
from test_react_agent import MODEL, PRICE, completion, usage_of

from hermit_tui.core.run.runner import EvalRun
from hermit_tui.core.why.pair import align_task, pair_why
from hermit_tui.core.workspace.config import load_config

TASKS = {f"q{i}": f"What is {i} + {i}?" for i in range(1, 7)}
ADAPTER_TOOL = "lookup_hint"
MANIFEST_TOOLS = f"""\
  tools:
    - name: {ADAPTER_TOOL}
      description: A hint for a question.
      entrypoint: hints.py:lookup_hint
      input_schema: {{type: object, properties: {{q: {{type: string}}}}, required: [q]}}
      output_schema: {{type: object}}
"""
HINTS = 'def lookup_hint(q):\n    return {"hint": "add the two numbers"}\n'


def uses_tool(task_id: str) -> bool:
    return int(task_id[1:]) % 2 == 1


def reply(body: dict) -> tuple[int, dict]:
    messages = body["messages"]
    question, last = messages[1]["content"], messages[-1]
    offered = {t["function"]["name"] for t in body.get("tools") or []}
    n = int(question.split()[2])
    odd = n % 2 == 1
    if last["role"] == "user" and ADAPTER_TOOL in offered and odd:
        call = {"name": ADAPTER_TOOL, "arguments": json.dumps({"q": question})}
        calls = [{"id": f"call_{n}", "type": "function", "function": call}]
        return 200, completion(None, calls, usage_of(messages, call["arguments"]))
    answer = str(2 * n)
    return 200, completion(answer, None, usage_of(messages, answer))


@pytest.fixture(scope="module")
def server():
    import test_react_agent

    with test_react_agent.Server() as s:
        original = test_react_agent.reply_to
        test_react_agent.reply_to = reply  # the Server answers with the module's reply_to
        try:
            yield s
        finally:
            test_react_agent.reply_to = original


@pytest.fixture(scope="module")
def evaluated(demo_template, tmp_path_factory, server):
    dest = tmp_path_factory.mktemp("react-why") / "ws"
    shutil.copytree(demo_template, dest, symlinks=True)
    (dest / "q_tasks.jsonl").write_text("".join(json.dumps({"id": t, "question": q}) + "\n" for t, q in TASKS.items()))
    (dest / "q_test.txt").write_text("\n".join(TASKS) + "\n")
    (dest / "q_train.txt").write_text("")
    (dest / "q_judge.py").write_text(
        "def score(task, output):\n"
        "    n = int(task['question'].split()[2])\n"
        "    return {'score': 1.0 if str(output.output).strip() == str(2 * n) else 0.0}\n"
    )
    (dest / "q_prompt.md").write_text("You answer sums.\n\n{context}\n")
    adapter = dest / "adapters" / "hinted"
    shutil.copytree(dest / "template", adapter)
    manifest = (
        (adapter / "adapter.yaml")
        .read_text()
        .replace("  context: ADAPTER.md\n", "  context: ADAPTER.md\n" + MANIFEST_TOOLS)
    )
    (adapter / "adapter.yaml").write_text(manifest)
    (adapter / "hints.py").write_text(HINTS)
    config = dest / "q.yaml"
    config.write_text(
        textwrap.dedent(f"""\
        data: {{tasks: q_tasks.jsonl, train: q_train.txt, test: q_test.txt}}
        agent:
          name: react
          concurrency: 3
          params:
            model: {{base_url: "{server.url}", model: {MODEL}, price: {json.dumps(PRICE)}}}
            prompt: q_prompt.md
            max_turns: 4
        judge: {{path: q_judge.py, name: score}}
        template: template
        evolver: {{name: claude}}
        sandbox: {{enabled: false}}
        trainer: {{run_name: demo, output_dir: runs}}
        eval: {{repeats: 2}}
        """)
    )
    cfg = load_config(config)
    EvalRun(cfg, ["none", "adapters/hinted"], update_card=False).run_sync()
    return cfg


def test_usage_is_recognised_in_hermits_react_trajectories(evaluated):
    pair = pair_why(evaluated, "none", "adapters/hinted", list(TASKS))
    assert pair.diff is not None
    assert pair.diff.b.tools == [ADAPTER_TOOL]
    assert ("tool", ADAPTER_TOOL, "added") in {(e.kind, e.name, e.change) for e in pair.diff.exports}
    none, hinted = pair.use
    expected_used = 2 * sum(uses_tool(t) for t in TASKS)  # two repeats
    assert not none.has_adapter
    assert (hinted.used, hinted.not_used, hinted.unknown) == (expected_used, 2 * len(TASKS) - expected_used, 0)
    assert hinted.usage_by_export == {f"tool {ADAPTER_TOOL}": expected_used}
    tools = {t.tool: t for t in hinted.tools}
    assert tools[ADAPTER_TOOL].calls == expected_used and tools[ADAPTER_TOOL].errors == 0
    # the paired trajectories part ways at the first agent step exactly on the tasks where the tool was called
    for task, steps in pair.divergence_by_task.items():
        assert steps == ([1, 1] if uses_tool(task) else [None, None]), task


def test_aligned_react_trajectories_show_the_adapters_tool_call(evaluated):
    aligned = align_task(evaluated, ["none", "adapters/hinted"], "q1", 1)
    al = aligned.alignments[0]
    assert al.first_divergence is not None
    row = al.rows[al.first_divergence]
    at = row.cells[1].step
    assert at is not None
    step = al.steps[1][at]
    assert (step.kind, step.tool) == ("call", ADAPTER_TOOL)
    assert al.inputs_differ  # the system prompt carries the adapter's ADAPTER.md
