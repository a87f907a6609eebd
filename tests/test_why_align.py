"""Trajectories aligned step by step on hand-written trajectories whose first divergence is known; usage detection
on hermit-format messages and through the hooks."""

from __future__ import annotations

import json

import pytest

from hermit_tui.core.why.adapter_files import read_exports
from hermit_tui.core.why.align import align, align_messages, row_status, steps_of
from hermit_tui.core.why.text import alignment_lines
from hermit_tui.core.why.usage import usage_of

SYSTEM = {"role": "system", "content": "You solve tasks."}
USER = {"role": "user", "content": "Do it"}


def call(i: int, name: str, args: dict) -> dict:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}],
    }


def result(i: int, content: str) -> dict:
    return {"role": "tool", "tool_call_id": f"c{i}", "content": content}


def say(text: str) -> dict:
    return {"role": "assistant", "content": text}


BASE = [SYSTEM, USER, call(0, "ls", {"dir": "."}), result(0, "a.txt b.txt"), say("done")]


def test_steps_of_hermit_messages():
    steps = steps_of(BASE + [call(1, "cat", {"f": "a"}), result(1, "Error: FileNotFoundError: a")])
    assert [(s.kind, s.role, s.tool) for s in steps] == [
        ("message", "system", None),
        ("message", "user", None),
        ("call", "assistant", "ls"),
        ("result", "tool", "ls"),
        ("message", "assistant", None),
        ("call", "assistant", "cat"),
        ("result", "tool", "cat"),
    ]
    assert [s.error for s in steps] == [False] * 6 + [True]
    assert [s.agent for s in steps] == [False, False, True, True, True, True, True]


def test_identical_trajectories_never_diverge():
    al = align_messages(["a", "b"], [BASE, list(BASE)])
    assert al.first_divergence is None and al.divergence_step is None
    assert al.counts == {"same": 5} and not al.inputs_differ


def test_both_empty_and_one_sided():
    empty = align_messages(["a", "b"], [[], []])
    assert empty.rows == [] and empty.first_divergence is None
    one = align_messages(["a", "b"], [[], BASE])
    assert [row_status(r) for r in one.rows] == ["inserted"] * 5
    # the system and user messages are inputs: the first agent step is the third row
    assert (one.first_divergence, one.divergence_step, one.inputs_differ) == (2, 1, True)
    other = align_messages(["a", "b"], [BASE, []])
    assert [row_status(r) for r in other.rows] == ["removed"] * 5 and other.divergence_step == 1


def test_changed_arguments_are_matched_as_changed_with_a_similarity():
    b = [SYSTEM, USER, call(0, "ls", {"dir": "src"}), result(0, "a.txt b.txt"), say("done")]
    al = align_messages(["a", "b"], [BASE, b])
    assert [row_status(r) for r in al.rows] == ["same", "same", "changed", "same", "same"]
    assert (al.first_divergence, al.divergence_step) == (2, 1)
    cell = al.rows[2].cells[1]
    assert cell.similarity is not None
    assert cell.status == "changed" and 0 < cell.similarity < 1


def test_inserted_step_in_the_middle():
    b = BASE[:4] + [call(1, "cat", {"f": "a.txt"}), result(1, "hello")] + BASE[4:]
    al = align_messages(["a", "b"], [BASE, b])
    assert [row_status(r) for r in al.rows] == ["same", "same", "same", "same", "inserted", "inserted", "same"]
    assert al.divergence_step == 3  # ls call and its result were the same: the agents parted at their third step


def test_a_different_system_prompt_is_an_input_difference_not_the_divergence():
    b = [{"role": "system", "content": "You solve tasks.\n- [hint] use ls"}] + BASE[1:]
    al = align_messages(["a", "b"], [BASE, b])
    assert al.inputs_differ and al.first_divergence is None


def test_three_way_alignment_merges_on_the_pivot():
    b = BASE[:4] + [call(1, "cat", {"f": "a.txt"}), result(1, "hello")] + BASE[4:]
    c = [SYSTEM, USER, call(0, "find", {"name": "*.txt"}), result(0, "a.txt"), say("done")]
    al = align_messages(["a", "b", "c"], [BASE, b, c])
    statuses = [[cell.status for cell in row.cells] for row in al.rows]
    assert statuses[:2] == [["same"] * 3] * 2
    # c replaced the ls call and result by a find call and result: removed then inserted against the pivot
    assert ["removed", "same", "removed"] in [s for s in statuses if s[0] != "absent"]
    assert al.divergence_step == 1
    lines = alignment_lines(al)
    assert lines[0] == "Aligned: [1] a, [2] b, [3] c"
    assert any(line.startswith(">>") for line in lines)


def test_very_long_trajectories_align_and_find_the_divergence():
    n = 200

    def long(changed_at: int | None) -> list[dict]:
        out = [SYSTEM, USER]
        for i in range(n):
            args = {"i": i, "x": "changed" if i == changed_at else "same"}
            out += [call(i, f"tool{i % 5}", args), result(i, f"ok {i % 3}")]
        return out + [say("done")]

    al = align_messages(["a", "b"], [long(None), long(150)])
    assert al.divergence_step == 2 * 150 + 1
    assert al.counts == {"same": 2 + 2 * n, "changed": 1}
    assert align_messages(["a", "b"], [long(None), long(None)]).first_divergence is None


def test_align_needs_two():
    with pytest.raises(ValueError):
        align(["a"], [[]])


# -- usage -------------------------------------------------------------------------------------------------------
MANIFEST = {
    "template": {"id": "t", "version": "1"},
    "exports": {"context": "ADAPTER.md", "tools": [{"name": "lookup"}], "skills": "skills", "agents": "agents"},
}
FILES = {
    "adapter.yaml": json.dumps(MANIFEST).encode(),
    "ADAPTER.md": b"notes",
    "skills/plan/SKILL.md": b"plan",
    "agents/critic.md": b"---\nname: critic\ndescription: d\n---\nbody\n",
}


def test_usage_recognises_tools_skills_subagents_and_the_context():
    exports = read_exports(FILES)
    assert (sorted(exports.tools), exports.skills, exports.agents) == (["lookup"], ["plan"], ["critic"])
    plain = usage_of(steps_of(BASE), BASE, exports)
    assert plain.used is False and plain.source == "messages"
    msgs = BASE[:2] + [
        call(1, "lookup", {"q": "x"}),
        result(1, "{}"),
        call(2, "read_file", {"path": ".claude/skills/plan/SKILL.md"}),
        result(2, "plan"),
        call(3, "Task", {"subagent_type": "critic", "prompt": "review"}),
        result(3, "ok"),
        call(4, "read_file", {"path": "ADAPTER.md"}),
        result(4, "notes"),
    ]
    got = usage_of(steps_of(msgs), msgs, exports)
    assert (got.used, got.tools, got.skills, got.agents, got.context_read) == (
        True,
        ["lookup"],
        ["plan"],
        ["critic"],
        True,
    )
    assert usage_of(None, None, exports).used is None
    assert usage_of(steps_of(msgs), msgs, None).used is None


def test_usage_hooks_come_first():
    exports = read_exports(FILES)
    seen = []

    def hook(messages, names):
        seen.append(names)
        return ["plan"]

    got = usage_of(steps_of(BASE), BASE, exports, hook=hook)
    assert (got.used, got.skills, got.source) == (True, ["plan"], "hook")
    assert seen == [{"tools": ["lookup"], "skills": ["plan"], "agents": ["critic"]}]
    fallback = usage_of(steps_of(BASE), BASE, exports, hook=lambda m, n: None)
    assert fallback.source == "messages"
    record = usage_of(steps_of(BASE), BASE, exports, record_value={"tools": ["lookup"]}, hook=hook)
    assert (record.used, record.tools, record.source) == (True, ["lookup"], "record")
    assert usage_of(None, None, exports, record_value=False).used is False


# -- the pair summary's divergence (divergence_two, compact arguments) ------------------------------------------------
LONG_A = [SYSTEM, USER] + [m for i in range(60) for m in (call(i, "py", {"i": i}), result(i, f"out {i}"))]
LONG_B = LONG_A[: 2 + 30] + [say("a thought")] + LONG_A[2 + 30 :]  # inserted before agent step 31
CASES = [  # (a, b, the first divergence's agent step, worked out by hand)
    (BASE, list(BASE), None),
    ([], [], None),
    ([], BASE, 1),  # one-sided: every agent step of b is inserted
    (BASE, [SYSTEM, USER], 1),
    ([{**SYSTEM, "content": "other prompt"}] + BASE[1:], BASE, None),  # the inputs differ, the agents did not
    (BASE, [SYSTEM, USER, call(0, "ls", {"dir": "/"}), result(0, "a.txt b.txt"), say("done")], 1),
    (BASE, BASE[:4] + [say("done, twice")], 3),
    (BASE, BASE[:4] + [call(1, "cat", {"f": "a"}), result(1, "x"), say("done")], 3),
    (LONG_A, LONG_B, 31),
    # the same arguments written with other whitespace (and key spacing) are the same step
    (
        BASE,
        BASE[:2]
        + [
            {
                **BASE[2],
                "tool_calls": [
                    {**BASE[2]["tool_calls"][0], "function": {"name": "ls", "arguments": '{ "dir" :   "." }'}}
                ],
            }
        ]
        + BASE[3:],
        None,
    ),
]


@pytest.mark.parametrize("a, b, expected", CASES)
def test_the_pair_summarys_divergence_is_the_alignments(a, b, expected):
    from hermit_tui.core.why.align import divergence_two

    assert align_messages(["a", "b"], [a, b]).divergence_step == expected
    assert divergence_two(steps_of(a, pretty=False), steps_of(b, pretty=False)) == expected


def test_the_pair_summarys_divergence_agrees_with_the_alignment_on_random_trajectories():
    import random

    from hermit_tui.core.why.align import divergence_two

    rng = random.Random(26)
    pool = [call(0, "ls", {"d": "."}), result(0, "x"), call(1, "cat", {"f": "a"}), result(1, "y"), say("ok"), USER]
    for _ in range(400):
        a = [SYSTEM] + [rng.choice(pool) for _ in range(rng.randint(0, 12))]
        b = [SYSTEM] + [rng.choice(pool) for _ in range(rng.randint(0, 12))]
        full = align_messages(["a", "b"], [a, b]).divergence_step
        assert divergence_two(steps_of(a, pretty=False), steps_of(b, pretty=False)) == full, (a, b)


def test_the_changes_tables_divergence_cell_reads_as_words():
    """The Changes screen's cell: how many repeats parted at each step, earliest first, never last (not ``3,3,=``)."""
    from hermit_tui.core.why.text import divergence_cell

    assert divergence_cell([3, 3, 3]) == "step 3 ×3"
    assert divergence_cell([2]) == "step 2"
    assert divergence_cell([None, None]) == "never ×2"
    assert divergence_cell([3, None, 1]) == "step 1, step 3, never"
    assert divergence_cell([None, 1, None, 1, 4]) == "step 1 ×2, step 4, never ×2"
    assert divergence_cell([]) == "-"
