"""Trajectories aligned step by step, N-way, with the first step where they part ways.

A trajectory (hermit's ``RunOutput.messages``, read as turns by ``core.records.transcripts``) becomes steps: a
message (its role and text), a tool call (the tool and its arguments) and a tool result (the tool and what it
returned). Two trajectories are aligned in two passes: steps that are exactly the same (kind, role, tool and text,
whitespace aside) are matched as the longest common runs (``difflib.SequenceMatcher``, without its junk heuristic);
between those runs, steps of the same kind, role and tool are matched as *changed* (with their text similarity), and
what is left is *removed* (only in the first) or *inserted* (only in the other). N trajectories are aligned each
against the first (the pivot) and merged on the pivot's steps.

The first divergence counts the agent's steps only: the system prompt and the user's messages are its inputs (the
system prompt holds ADAPTER.md, so it differs between any two adapters); a difference there is reported as
``inputs_differ``. Step numbers are 1-based: divergence at step k means the first k-1 agent steps were the same.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field

from hermit_tui.core.records.transcripts import turns_of

StepKind = Literal["message", "call", "result"]
CellStatus = Literal["same", "changed", "inserted", "removed", "absent"]
INPUT_ROLES = ("system", "user", "developer")
ERROR_PREFIX = "error"
_SPACE = re.compile(r"\s+")
SIMILARITY_CHARS = 4000  # the text compared for a changed step's similarity


@dataclass(slots=True)
class Step:
    """One step of a trajectory; ``message`` is the index of the message it comes from (0-based). A slotted
    dataclass, not a model: the pair summary makes one per message of every attempt (160,000 at 20,000 attempts),
    and pydantic validates and serialises it inside the models that hold it the same way."""

    kind: StepKind
    role: str
    text: str
    tool: str | None = None
    message: int = 0
    error: bool = False  # a tool result that reports an error (hermit's "Error: ..." text)

    @property
    def agent(self) -> bool:
        return not (self.kind == "message" and self.role in INPUT_ROLES)

    @property
    def signature(self) -> tuple[str, str, str]:
        return (self.kind, self.role, self.tool or "")

    def key(self) -> tuple[str, str, str, str]:
        return (*self.signature, _SPACE.sub(" ", self.text).strip())

    @property
    def title(self) -> str:
        if self.kind == "call":
            return f"call {self.tool}"
        if self.kind == "result":
            return f"result {self.tool or 'tool'}" + (" (error)" if self.error else "")
        return self.role


def steps_of(messages: Sequence[Any] | None, *, pretty: bool = True) -> list[Step]:
    """A trajectory's steps, in order. ``pretty``: a call's JSON arguments indented for reading; without it they are
    compact (faster, for the pair summary): after whitespace is collapsed (``Step.key``) the two forms make the
    same steps equal."""
    steps: list[Step] = []
    for turn in turns_of(list(messages or []), pretty=pretty):
        is_result = turn.role in ("tool", "function") or (turn.call_id is not None and turn.role != "assistant")
        if is_result:
            steps.append(
                Step(
                    kind="result",
                    role=turn.role,
                    text=turn.text,
                    tool=turn.tool,
                    message=turn.index,
                    error=turn.text.lstrip()[:5].lower() == ERROR_PREFIX,
                )
            )
            continue
        if turn.text or not turn.calls:
            steps.append(
                Step(kind="message", role=turn.role, text=turn.text, tool=None, message=turn.index, error=False)
            )
        for call in turn.calls:
            steps.append(
                Step(kind="call", role=turn.role, text=call.arguments, tool=call.name, message=turn.index, error=False)
            )
    return steps


class Cell(BaseModel):
    """One trajectory's place in a row: its step (an index into its steps) or None, and how it compares with the
    pivot's step in the row (the pivot's own cell is ``same`` when the whole row is)."""

    step: int | None
    status: CellStatus
    similarity: float | None = None  # a changed step's text similarity to the pivot's, 0-1


class Row(BaseModel):
    cells: list[Cell]
    agent: bool  # the row holds an agent step (not only inputs)

    @property
    def same(self) -> bool:
        return all(c.status == "same" for c in self.cells)


class Alignment(BaseModel):
    """Two or more trajectories aligned; ``first_divergence`` is the index of the first agent row that is not the
    same in every trajectory (None: the agents did the same), ``divergence_step`` its 1-based agent step number."""

    labels: list[str]
    steps: list[list[Step]]
    rows: list[Row]
    first_divergence: int | None = None
    divergence_step: int | None = None
    inputs_differ: bool = False
    counts: dict[str, int] = Field(default_factory=dict)  # row status -> rows (same, changed, inserted, removed)


def _similarity(a: str, b: str) -> float:
    m = difflib.SequenceMatcher(None, a[:SIMILARITY_CHARS], b[:SIMILARITY_CHARS], autojunk=False)
    return round(m.ratio(), 3)


PairRow = tuple[int | None, int | None, CellStatus, float | None]


def align_two(a: Sequence[Step], b: Sequence[Step]) -> list[PairRow]:
    """Rows ``(index in a, index in b, status of b's step, similarity)``: same, changed, removed (a only) or
    inserted (b only)."""
    keys: dict[tuple[str, str, str, str], int] = {}
    ka = [keys.setdefault(s.key(), len(keys)) for s in a]
    kb = [keys.setdefault(s.key(), len(keys)) for s in b]
    out: list[PairRow] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, ka, kb, autojunk=False).get_opcodes():
        if op == "equal":
            out += [(i1 + k, j1 + k, "same", 1.0) for k in range(i2 - i1)]
            continue
        sigs: dict[tuple[str, str, str], int] = {}
        sa = [sigs.setdefault(s.signature, len(sigs)) for s in a[i1:i2]]
        sb = [sigs.setdefault(s.signature, len(sigs)) for s in b[j1:j2]]
        for op2, x1, x2, y1, y2 in difflib.SequenceMatcher(None, sa, sb, autojunk=False).get_opcodes():
            if op2 == "equal":
                for k in range(x2 - x1):
                    ia, ib = i1 + x1 + k, j1 + y1 + k
                    out.append((ia, ib, "changed", _similarity(a[ia].text, b[ib].text)))
                continue
            out += [(i1 + x, None, "removed", None) for x in range(x1, x2)]
            out += [(None, j1 + y, "inserted", None) for y in range(y1, y2)]
    return out


def divergence_two(a: Sequence[Step], b: Sequence[Step]) -> int | None:
    """The first-divergence step of ``align(["a", "b"], [a, b])`` without building the alignment (the pair summary
    needs only this): rows of an equal run are the same, and a run that is not equal holds an agent row exactly when
    one of its steps, on either side, is an agent step; so the divergence is one more than the agent steps of the
    equal runs before the first such run."""
    keys: dict[tuple[str, str, str, str], int] = {}
    ka = [keys.setdefault(s.key(), len(keys)) for s in a]
    kb = [keys.setdefault(s.key(), len(keys)) for s in b]
    if ka == kb:
        return None  # one equal run: the agents did the same
    same = 0
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, ka, kb, autojunk=False).get_opcodes():
        if op == "equal":
            same += sum(1 for s in a[i1:i2] if s.agent)
        elif any(s.agent for s in a[i1:i2]) or any(s.agent for s in b[j1:j2]):
            return same + 1
    return None


def align(labels: Sequence[str], trajectories: Sequence[Sequence[Step]]) -> Alignment:
    """Align two or more trajectories (steps) against the first."""
    if len(labels) != len(trajectories) or len(labels) < 2:
        raise ValueError("align needs two or more trajectories, each with its label")
    pivot = list(trajectories[0])
    n = len(pivot)
    # per other trajectory: what sits at each pivot step, and what it inserts before each pivot step (gap n: at end)
    at: list[list[tuple[int | None, CellStatus, float | None]]] = []
    before: list[list[list[int]]] = []
    for other in trajectories[1:]:
        here: list[tuple[int | None, CellStatus, float | None]] = [(None, "removed", None)] * n
        gaps: list[list[int]] = [[] for _ in range(n + 1)]
        nxt = 0  # the pivot step the next insertion comes before
        for ia, ib, status, sim in align_two(pivot, list(other)):
            if ia is None:
                assert ib is not None
                gaps[nxt].append(ib)
            else:
                here[ia] = (ib, status, sim)
                nxt = ia + 1
        at.append(here)
        before.append(gaps)
    rows: list[Row] = []
    others = range(len(trajectories) - 1)
    for i in range(n + 1):
        for k in range(max((len(before[j][i]) for j in others), default=0)):
            cells = [Cell(step=None, status="absent")]
            agent = False
            for j in others:
                ins = before[j][i]
                if k < len(ins):
                    cells.append(Cell(step=ins[k], status="inserted"))
                    agent = agent or trajectories[j + 1][ins[k]].agent
                else:
                    cells.append(Cell(step=None, status="absent"))
            rows.append(Row(cells=cells, agent=agent))
        if i == n:
            break
        cells = [Cell(step=i, status="same")]
        for j in others:
            ib, status, sim = at[j][i]
            cells.append(Cell(step=ib, status=status, similarity=sim if status == "changed" else None))
        if any(c.status != "same" for c in cells[1:]):
            cells[0] = Cell(step=i, status="changed" if any(c.status == "changed" for c in cells[1:]) else "removed")
        rows.append(Row(cells=cells, agent=pivot[i].agent))
    out = Alignment(labels=list(labels), steps=[list(t) for t in trajectories], rows=rows)
    agent_step = 0
    for r, row in enumerate(rows):
        if not row.agent:
            out.inputs_differ = out.inputs_differ or not row.same
            continue
        agent_step += 1
        if not row.same and out.first_divergence is None:
            out.first_divergence, out.divergence_step = r, agent_step
    for row in rows:
        word = row_status(row)
        out.counts[word] = out.counts.get(word, 0) + 1
    return out


def _row_status(row: Row) -> str:
    kinds = {c.status for c in row.cells[1:]} - {"same", "absent"}
    for status in ("changed", "inserted", "removed"):
        if status in kinds:
            return status
    return "same"


def row_status(row: Row) -> str:
    """A row in one word: same, changed, inserted or removed (the first of these that any trajectory shows)."""
    return "same" if row.same else _row_status(row)


def align_messages(labels: Sequence[str], transcripts: Sequence[Sequence[Any] | None]) -> Alignment:
    """Align trajectories given as hermit messages."""
    return align(labels, [steps_of(m) for m in transcripts])


__all__ = [
    "Alignment",
    "Cell",
    "Row",
    "Step",
    "align",
    "align_messages",
    "align_two",
    "divergence_two",
    "row_status",
    "steps_of",
]
