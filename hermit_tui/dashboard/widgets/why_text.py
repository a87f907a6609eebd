"""Why it changed, as Rich text: the pair's text (``core.why.text``) with diff lines coloured, and the cells of an
aligned trajectory (a step's title and its text, folded to one line, coloured by how it compares)."""

from __future__ import annotations

from rich.text import Text

from hermit_tui.core.why.align import Alignment, Row, row_status
from hermit_tui.core.why.pair import PairWhy
from hermit_tui.core.why.text import MARK, pair_lines

STATUS_STYLE = {"changed": "yellow", "inserted": "green", "removed": "red", "same": "", "absent": "dim"}
DIVERGENCE_STYLE = "bold reverse"


def pair_text(pair: PairWhy) -> Text:
    """The pair's notes, diff and summary (the tasks are in the table above it): headings bold, added lines green,
    removed red, hunks cyan."""
    out = Text()
    fence = False
    lines = pair_lines(pair, "#")
    start = next((i for i, line in enumerate(lines) if line.startswith("## Adapter:")), 0)  # the tasks are above
    for line in [*pair.notes, *lines[start:]] if start else lines:
        style = ""
        if line.startswith("```"):
            fence = not fence
            continue
        if line.startswith("#"):
            style = "bold"
            line = line.lstrip("#").strip()
        elif fence and line.startswith("+"):
            style = "green"
        elif fence and line.startswith("-"):
            style = "red"
        elif fence and line.startswith("@@"):
            style = "cyan"
        elif line.startswith("- added:"):
            style = "green"
        elif line.startswith("- removed:"):
            style = "red"
        elif line.startswith("- changed:"):
            style = "yellow"
        out.append(line + "\n", style=style)
    out.rstrip()
    return out


def one_line(text: str) -> str:
    return " ".join(text.split())


def mark_cell(al: Alignment, index: int) -> Text:
    row = al.rows[index]
    status = row_status(row)
    lead = ">>" if index == al.first_divergence else "  "
    style = DIVERGENCE_STYLE if index == al.first_divergence else STATUS_STYLE.get(status, "")
    return Text(f"{lead}{MARK.get(status, ' ')}", style=style)


def step_cell(al: Alignment, index: int, column: int) -> Text:
    """Trajectory ``column``'s step in row ``index``, on one line."""
    row: Row = al.rows[index]
    cell = row.cells[column]
    if cell.step is None:
        return Text("·" if cell.status == "absent" else "(no step)", style="dim")
    step = al.steps[column][cell.step]
    status = "same" if row.same else cell.status
    style = STATUS_STYLE.get(status, "")
    if index == al.first_divergence and status != "same":
        style = f"{style} {DIVERGENCE_STYLE}".strip()
    text = Text(step.title, style=f"bold {style}".strip())
    body = one_line(step.text)
    if body:
        text.append(" " + body, style=style or None)
    if not row.agent:
        text.stylize("dim")
    return text


def row_detail(al: Alignment, index: int, full: bool) -> Text:
    """Every trajectory's step of a row, whole (``full``) or its first lines."""
    out = Text()
    row = al.rows[index]
    status = row_status(row)
    out.append(f"row {index + 1} · {status}" + ("" if row.agent else " (input)"), style="bold")
    if index == al.first_divergence:
        out.append(f" · first divergence: agent step {al.divergence_step}", style=DIVERGENCE_STYLE)
    for i, cell in enumerate(row.cells):
        if cell.step is None:
            continue
        step = al.steps[i][cell.step]
        sim = f" · similarity {cell.similarity:.2f}" if cell.similarity is not None else ""
        out.append(f"\n[{al.labels[i]}] {step.title}{sim}\n", style=STATUS_STYLE.get(cell.status, "") or "bold")
        lines = step.text.splitlines() or [""]
        shown = lines if full else lines[:3]
        out.append("\n".join(shown))
        if len(shown) < len(lines):
            out.append(f"\n… {len(lines) - len(shown)} more lines (enter: unfold)", style="dim")
        if row.same:
            break
    return out


def matches(al: Alignment, index: int, query: str) -> bool:
    q = query.lower()
    row = al.rows[index]
    for i, cell in enumerate(row.cells):
        if cell.step is not None:
            step = al.steps[i][cell.step]
            if q in step.title.lower() or q in step.text.lower():
                return True
    return False


__all__ = ["mark_cell", "matches", "pair_text", "row_detail", "step_cell"]
