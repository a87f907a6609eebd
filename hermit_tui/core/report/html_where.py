"""The HTML page's sections on where it helps and where it hurts, when the report was asked for them: slices
(``report --slice-by``), harmed tasks (``--harmed``), bounds under errors (``--error-bounds``) and pass@k
(``--pass-k``). The same figures and words as the Markdown report (``core.report.text``), as tables with data
attributes a script or a test can read."""

from __future__ import annotations

from hermit_tui.core.present import p_value
from hermit_tui.core.report.formatting import figure
from hermit_tui.core.report.html_tables import grid
from hermit_tui.core.report.model import Report
from hermit_tui.core.report.svg import esc
from hermit_tui.core.stats.passk import PassFigure

#: (anchor, title) of each section, in the page's order; a section is drawn only when the report holds it
SECTIONS = (
    ("slices", "Slices"),
    ("harmed", "Harmed tasks"),
    ("bounds", "Bounds under errors"),
    ("pass-k", "pass@k and pass^k"),
)


def _signed(x: float | None) -> str:
    return "—" if x is None else f"{x:+.3f}"


def _ci(low: float | None, high: float | None) -> str:
    return "—" if low is None or high is None else f"{low:+.3f} to {high:+.3f}"


def slices_html(r: Report) -> str:
    sr = r.slices
    if sr is None:
        return ""
    intro = (
        f"{len(sr.slices)} slices of the test split by <code>{esc(sr.by)}</code>"
        + (f" ({sr.unsliced} test tasks in none)" if sr.unsliced else "")
        + f". p: each slice's test of no difference; p (BH): adjusted over the slices, {esc(sr.fdr_method)}, for "
        f"screening; hurt p (Holm): {esc(sr.hurt_test)} (M = {sr.margin:g}), adjusted by {esc(sr.fwer_method)}; a "
        f"slice is named as hurt when it is at most {sr.hurt_alpha:g}."
    )
    hurt = sr.hurt()
    named = (
        f'<p class="verdict regression"><span class="tag">hurt</span>{esc(", ".join(s.name for s, _ in hurt))}</p>'
        if hurt
        else '<p class="verdict">No slice shown to be hurt.</p>'
    )
    blocks = []
    pairs = [(p.a, p.b) for p in sr.slices[0].pairs] if sr.slices else []
    for k, (a, b) in enumerate(pairs):
        rows = []
        for sl in sr.slices:
            p = sl.pairs[k]
            means = {s.label: s.mean for s in sl.selectors}
            cls = "hurt" if p.hurt else ("small" if p.too_small else "")
            rows.append(
                [
                    f'<span class="{cls}" data-slice="{esc(sl.name)}" data-hurt="{str(p.hurt).lower()}">'
                    f"{esc(sl.name)}</span>",
                    str(len(sl.task_ids)),
                    figure(means.get(a)),
                    figure(means.get(b)),
                    _signed(p.mean_diff),
                    _ci(p.ci_low, p.ci_high),
                    esc(p_value(p.p_value)),
                    esc(p_value(p.p_bh)),
                    esc(p_value(p.p_hurt_holm)),
                    esc(p.reading),
                ]
            )
        blocks.append(
            f"<h3>{esc(b)} − {esc(a)}</h3>"
            + grid(
                ["slice", "tasks", a, b, f"{b} − {a}", "95% CI", "p", "p (BH)", "hurt p (Holm)", "reading"],
                rows,
                numeric=frozenset({1, 2, 3, 4, 6, 7, 8}),
            )
        )
    return (
        f'<section id="slices"><h2>Slices by {esc(sr.by)}</h2><p class="note">{intro}</p>{named}'
        f"{''.join(blocks)}</section>"
    )


def harmed_html(r: Report) -> str:
    if not r.harm:
        return ""
    blocks = []
    for h in r.harm:
        note = f"{h.test}; {h.adjustment} over the {h.tested} tasks, q = {h.q:g}. {h.note[:1].upper()}{h.note[1:]}."
        table = (
            grid(
                ["task", h.baseline, h.candidate, "difference", "p", "q"],
                [
                    [
                        f'<span data-task="{esc(t.task)}">{esc(t.task)}</span>',
                        f"{t.baseline_mean:.3f}",
                        f"{t.candidate_mean:.3f}",
                        f"{t.difference:+.3f}",
                        esc(p_value(t.p_value)),
                        esc(p_value(t.q_value)),
                    ]
                    for t in h.harmed
                ],
                numeric=frozenset({1, 2, 3, 4, 5}),
            )
            if h.harmed
            else "<p>No task is worse with evidence.</p>"
        )
        blocks.append(
            f'<article class="harm" data-baseline="{esc(h.baseline)}" data-candidate="{esc(h.candidate)}" '
            f'data-harmed="{len(h.harmed)}"><h3>{esc(h.candidate)} against {esc(h.baseline)}</h3>'
            f'<p class="note">{esc(note)}</p>{table}</article>'
        )
    return f'<section id="harmed"><h2>Harmed tasks</h2>{"".join(blocks)}</section>'


def bounds_html(r: Report) -> str:
    if not r.error_bounds:
        return ""
    blocks = []
    for eb in r.error_bounds:
        rows = [
            [esc(x.reading), str(x.n_paired), _signed(x.mean_diff), _ci(x.ci_low, x.ci_high), esc(x.decision)]
            for x in eb.readings
        ]
        blocks.append(
            f'<article class="bounds" data-holds="{str(eb.holds).lower()}"><h3>{esc(eb.b)} − {esc(eb.a)}</h3>'
            f"<p>{esc(eb.sentence[:1].upper() + eb.sentence[1:])}.</p>"
            + grid(["errors counted", "paired tasks", "difference", "95% CI", "reading"], rows, frozenset({1, 2}))
            + "</article>"
        )
    intro = (
        '<p class="note">Each pair with its errored attempts (pipeline and judge errors) counted as failures (every '
        "other figure's reading), as successes (scored 1) and left out.</p>"
    )
    return f'<section id="bounds"><h2>Bounds under errors</h2>{intro}{"".join(blocks)}</section>'


def pass_k_html(r: Report) -> str:
    pk = r.pass_k
    if pk is None or not pk.selectors:
        return ""

    def cell(f: PassFigure) -> str:
        if f.value is None:
            return "—"
        ci = f" ({f.ci_low:.3f} to {f.ci_high:.3f})" if f.ci_low is not None and f.ci_high is not None else ""
        return esc((f"{f.value:+.3f}" if f.value < 0 else f"{f.value:.3f}") + ci)

    rows = [[esc(f"{s.label} pass@{f.k}"), cell(f)] for s in pk.selectors for f in s.pass_at]
    rows += [[esc(f"{s.label} pass^{f.k}"), cell(f)] for s in pk.selectors for f in s.pass_hat]
    rows += [[esc(f"{p.b} − {p.a} pass@{f.k}"), cell(f)] for p in pk.pairs for f in p.pass_at]
    rows += [[esc(f"{p.b} − {p.a} pass^{f.k}"), cell(f)] for p in pk.pairs for f in p.pass_hat]
    intro = (
        f"Per test task, unbiased estimates ({esc(pk.definition)}; threshold {pk.threshold:g}), averaged over the "
        "tasks with at least k attempts, with 95% intervals."
    )
    return (
        f'<section id="pass-k"><h2>pass@k and pass^k</h2><p class="note">{intro}</p>'
        f"{grid(['figure', 'value (95% CI)'], rows)}</section>"
    )


def where_sections(r: Report) -> list[tuple[str, str, str]]:
    """(anchor, title, html) of each section the report holds, in :data:`SECTIONS` order."""
    drawn = {"slices": slices_html(r), "harmed": harmed_html(r), "bounds": bounds_html(r), "pass-k": pass_k_html(r)}
    return [(anchor, title, drawn[anchor]) for anchor, title in SECTIONS if drawn[anchor]]


__all__ = ["SECTIONS", "where_sections"]
