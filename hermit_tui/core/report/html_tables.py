"""The HTML page's tables: two-column (name, value) tables and grids with a header, shared by the page's sections
(``core.report.html``, ``core.report.html_figures``, ``core.report.html_where``). Header and name cells are escaped
here; value cells are html already."""

from __future__ import annotations

from hermit_tui.core.report.svg import esc


def kv(rows: list[tuple[str, str]]) -> str:
    """A two-column table of (name, html) rows; the names are escaped here, the values are html already."""
    return (
        '<div class="scroll"><table class="kv"><tbody>'
        + "".join(f'<tr><th scope="row">{esc(k)}</th><td>{v}</td></tr>' for k, v in rows)
        + "</tbody></table></div>"
    )


def grid(header: list[str], rows: list[list[str]], numeric: frozenset[int] = frozenset(), cls: str = "") -> str:
    """A table: header text (escaped here), rows of html cells; the ``numeric`` columns right-aligned."""

    def num(i: int) -> str:
        return ' class="num"' if i in numeric else ""

    head = "".join(f'<th scope="col"{num(i)}>{esc(h)}</th>' for i, h in enumerate(header))
    body = "".join("<tr>" + "".join(f"<td{num(i)}>{c}</td>" for i, c in enumerate(row)) + "</tr>" for row in rows)
    return (
        f'<div class="scroll"><table{f" class={cls}" if cls else ""}><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
    )


__all__ = ["grid", "kv"]
