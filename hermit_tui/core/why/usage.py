"""Was the adapter used? Per attempt, whether the agent used what its adapter version exports.

Recognised from hermit's own message format (chat-completions tool calls, Anthropic ``tool_use`` blocks):

- a **tool**: a call of a tool named in ``exports.tools``;
- a **skill**: a call of a skill tool (``skill``, ``Skill``, ``use_skill``, ``load_skill``, ``read_skill``) naming
  one of the skills of the ``skills`` folder, or any call whose arguments name ``<skill>/SKILL.md`` or the skill's
  folder (``skills/<skill>/``: hermit's hosts copy the folders under ``.claude/skills/``, ``.codex/skills/``...);
- a **subagent**: a call of a subagent tool (``Task``, ``task``, ``Agent``, ``agent``, ``subagent``,
  ``spawn_agent``) naming one of the subagents, or a call of a tool named like the subagent;
- the context read: any call whose arguments name ``ADAPTER.md`` (the react agent puts ADAPTER.md in the system
  prompt, so not reading it is no sign of not using it: it is reported, never counted as use).

Pipelines whose agents record usage otherwise have two hooks, tried first: a key ``adapter_usage`` in the attempt's
judge extra (or in its results line), and a function (``file.py:name`` or ``module:name``) given to hermit-tui by its
own settings, never by run.yaml: ``fn(messages, exports) -> list[str] | dict | bool | None``, where ``exports`` is
``{"tools": [...], "skills": [...], "agents": [...]}``; a list names what was used, a dict has the keys ``tools``,
``skills`` and ``agents``, a bool says only whether, and None falls back to recognising the messages.

Usage is an outcome of the adapter: an attempt that used a tool differs from one that did not in more than the tool.
Every split by usage is descriptive, never a causal effect.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from hermit_tui.core.why.adapter_files import CONTEXT, SKILL_FILE, Exports
from hermit_tui.core.why.align import Step

SKILL_TOOLS = frozenset({"skill", "Skill", "use_skill", "load_skill", "read_skill"})
AGENT_TOOLS = frozenset({"Task", "task", "Agent", "agent", "subagent", "spawn_agent"})
RECORD_KEY = "adapter_usage"
DESCRIPTIVE = (
    "descriptive only: using the adapter is itself an outcome of the adapter, so the split by usage is not a "
    "causal effect of using it"
)

UsageHook = Callable[[list[Any], dict[str, list[str]]], Any]
UsageSource = Literal["messages", "hook", "record", "none"]


class Usage(BaseModel):
    """One attempt's use of its adapter; ``used`` None when it cannot be known (no transcript, no adapter)."""

    used: bool | None
    tools: list[str] = Field(default_factory=list)
    skills: list[str] = Field(default_factory=list)
    agents: list[str] = Field(default_factory=list)
    context_read: bool = False
    source: UsageSource = "messages"


def _names(exports: Exports) -> dict[str, list[str]]:
    return {"tools": sorted(exports.tools), "skills": list(exports.skills), "agents": list(exports.agents)}


def _from_value(value: Any, exports: Exports, source: UsageSource) -> Usage | None:
    """A hook's or a record's answer as a Usage, or None when it says nothing."""
    if value is None:
        return None
    if isinstance(value, bool):
        return Usage(used=value, source=source)
    names = _names(exports)
    if isinstance(value, dict):
        got = {k: sorted({str(x) for x in value.get(k) or []}) for k in ("tools", "skills", "agents")}
        used = value.get("used")
        return Usage(
            used=bool(used) if isinstance(used, bool) else any(got.values()),
            tools=got["tools"],
            skills=got["skills"],
            agents=got["agents"],
            context_read=bool(value.get("context_read", False)),
            source=source,
        )
    if isinstance(value, (list, tuple, set)):
        items = {str(x) for x in value}
        tools = sorted(items & set(names["tools"]))
        skills = sorted(items & set(names["skills"]))
        agents = sorted(items & set(names["agents"]))
        return Usage(used=bool(items), tools=tools, skills=skills, agents=agents, source=source)
    return None


def _mentions(text: str, needle: str) -> bool:
    return needle in text


def _argument_values(text: str) -> set[str]:
    """The string values of a call's JSON arguments (the skill or subagent a generic tool names)."""
    try:
        data = json.loads(text) if text else {}
    except ValueError:
        return {text.strip()}
    found: set[str] = set()
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack += list(item.values())
        elif isinstance(item, list):
            stack += item
        elif isinstance(item, str):
            found.add(item.strip())
    return found


def detect_usage(steps: Sequence[Step], exports: Exports) -> Usage:
    """Recognise the adapter's use in a trajectory's steps (hermit's message format)."""
    tools: set[str] = set()
    skills: set[str] = set()
    agents: set[str] = set()
    context = False
    skill_dir = exports.skills_dir
    for step in steps:
        if step.kind != "call":
            continue
        name = step.tool or ""
        if name in exports.tools:
            tools.add(name)
        args = step.text
        context = context or _mentions(args, CONTEXT)
        values = _argument_values(args) if name in SKILL_TOOLS | AGENT_TOOLS else set()
        for skill in exports.skills:
            if name in SKILL_TOOLS and skill in values:
                skills.add(skill)
            elif _mentions(args, f"{skill}/{SKILL_FILE}") or _mentions(args, f"skills/{skill}/"):
                skills.add(skill)
            elif skill_dir and _mentions(args, f"{skill_dir}/{skill}"):
                skills.add(skill)
        for agent in exports.agents:
            if name == agent or (name in AGENT_TOOLS and agent in values):
                agents.add(agent)
    return Usage(
        used=bool(tools or skills or agents),
        tools=sorted(tools),
        skills=sorted(skills),
        agents=sorted(agents),
        context_read=context,
    )


def usage_of(
    steps: Sequence[Step] | None,
    messages: list[Any] | None,
    exports: Exports | None,
    record_value: Any = None,
    hook: UsageHook | None = None,
) -> Usage:
    """An attempt's usage: the record's ``adapter_usage``, else the hook's answer, else the messages recognised.
    No adapter (``exports`` None), or no transcript and no answer from the hooks: ``used`` is None."""
    if exports is None:
        return Usage(used=None, source="none")
    found = _from_value(record_value, exports, "record")
    if found is not None:
        return found
    if hook is not None and messages is not None:
        found = _from_value(hook(messages, _names(exports)), exports, "hook")
        if found is not None:
            return found
    if steps is None:
        return Usage(used=None, source="none")
    return detect_usage(steps, exports)


__all__ = ["DESCRIPTIVE", "RECORD_KEY", "Usage", "UsageHook", "detect_usage", "usage_of"]
