"""The report as one self-contained HTML page: ``hermit-tui report --format html``.

Everything is inline (stylesheet, plots drawn as SVG from the report's numbers, one small script that sorts and
pages the per-task table); nothing is fetched, and the page's Content-Security-Policy forbids fetching anything.
With JavaScript off the page reads the same: the per-task table is split into pages of
:data:`core.report.html_figures.PAGE_ROWS` rows. Warnings come first, the teaching-demo banner before them on the
demo (``Report.demo``: this module never looks at the demo itself). Every string from the data is escaped. The
results, the paired comparisons and the per-task table are drawn by ``core.report.html_figures``, the sections on
where it helps and hurts by ``core.report.html_where``.

The figures are the report's own (the ones ``--format json`` gives): each results row, pair and per-task cell
carries its exact values in ``data-*`` attributes (shortest round-trip repr), and the text shows them rounded as
the Markdown report does. Fields of the Report model this module does not know (added later) are rendered
generically at the end, so nothing in the model is left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hermit_tui.core.records.results import SOLVED_THRESHOLD
from hermit_tui.core.report.formatting import compact, figure, fingerprint_value, sequential_protocol
from hermit_tui.core.report.html_assets import CSP, CSS, SCRIPT
from hermit_tui.core.report.html_figures import pairs_html, results_html, tasks_html
from hermit_tui.core.report.html_tables import grid as _grid
from hermit_tui.core.report.html_tables import kv as _kv
from hermit_tui.core.report.html_where import where_sections
from hermit_tui.core.report.model import Report
from hermit_tui.core.report.svg import esc
from hermit_tui.core.stats.clusters import CLUSTER_METHOD
from hermit_tui.core.why.text import curve_lines, pair_lines
from hermit_tui.core.workspace.fingerprint import FIELD_NAMES

DEMO_PREFIX = "Teaching demonstration"
KNOWN_FIELDS = {
    "why",
    "checkpoints",
    "format",
    "hermit_tui_version",
    "config",
    "run_name",
    "run_dir",
    "demo",
    "threshold",
    "dataset_revision",
    "splits",
    "comparable",
    "differences",
    "warnings",
    "selectors",
    "pairs",
    "checks",
    "test_reuse",
    "training",
    "test_ids",
    "noise",  # in each pair's figures
    "slices",  # core.report.html_where
    "harm",
    "error_bounds",
    "pass_k",
}
GENERIC_ROWS = 1000  # rows of a list rendered generically before "and N more"


# ---------------------------------------------------------------------------------------------------- sections


def _warnings(r: Report) -> tuple[str, str]:
    """(banner, warnings section): the demo's warning becomes the banner, the others a list."""
    warnings = list(r.warnings)
    banner = ""
    if r.demo:
        text = next((w for w in warnings if w.startswith(DEMO_PREFIX)), None)
        if text is not None:
            warnings.remove(text)
        text = text or "Teaching demonstration: nothing here is evidence of a real model's performance."
        banner = f'<p class="banner" role="note" id="demo-banner">{esc(text)}</p>'
    items = "".join(f"<li>{esc(w)}</li>" for w in warnings)
    body = f'<ul class="warnings">{items}</ul>' if items else "<p>None.</p>"
    return banner, f'<section id="warnings"><h2>Warnings ({len(warnings)})</h2>{body}</section>'


def _protocol(r: Report) -> str:
    repeats = sorted({s.summary["repeats"] for s in r.selectors if s.summary})
    threshold = compact(r.threshold) + (
        " (hermit's)" if r.threshold == SOLVED_THRESHOLD else " (set for this report; the files keep hermit's 1.0)"
    )
    rows = [
        ("dataset revision", esc(r.dataset_revision)),
        (
            "split sizes",
            esc(
                f"test {r.splits['test']}, train {r.splits['train']}, val {r.splits['val']} "
                f"(task file: {r.splits['tasks']} tasks)"
            ),
        ),
        ("repeats", esc(", ".join(map(str, repeats)) or "—")),
        ("success threshold", esc(threshold)),
        (
            "comparable",
            "yes: every selector shares one protocol fingerprint"
            if r.comparable
            else '<strong class="check-error">NO</strong>: see <a href="#comparability">Comparability</a>',
        ),
    ]
    if sequential_protocol(r):
        rows.append(("stop when decided", esc(sequential_protocol(r))))
    if r.cluster_by is not None:
        rows.append(
            ("clustered by", esc(f"{r.cluster_by}: {r.n_clusters} clusters of the test tasks; {CLUSTER_METHOD}"))
        )
    checks = "".join(
        f'<li><span class="check-{esc(c.level)}">{esc(c.level)}</span> (<code>{esc(c.code)}</code>): '
        f"{esc(c.message)}</li>"
        for c in r.checks
    )
    return (
        f'<section id="protocol"><h2>Protocol</h2>{_kv(rows)}<h3 id="checks">Protocol checks</h3>'
        f"{f'<ul>{checks}</ul>' if checks else '<p>No finding.</p>'}</section>"
    )


def _comparability(r: Report) -> str:
    if r.comparable:
        text = (
            "<p>Every selector shares one protocol fingerprint (test ids and rows, judge, pipeline, params, "
            "model, repeats).</p>"
        )
    else:
        text = (
            "<ul>"
            + "".join(
                f"<li><strong>{esc(d.a)} vs {esc(d.b)}</strong>: {esc('; '.join(d.differences))}</li>"
                for d in r.differences
            )
            + "</ul>"
        )
    fields = list(FIELD_NAMES)
    table = _grid(
        ["selector", *fields],
        [
            [esc(s.label), *(f"<code>{esc(fingerprint_value(s.fingerprint.field(f)))}</code>" for f in fields)]
            if s.fingerprint
            else [
                esc(s.label),
                "missing (written by hermit eval)" if s.written_by == "hermit eval" else "missing",
                *["—"] * (len(fields) - 1),
            ]
            for s in r.selectors
        ],
    )
    return f'<section id="comparability"><h2>Comparability</h2>{text}{table}</section>'


def _reuse(r: Report) -> str:
    u = r.test_reuse
    text = (
        f"{u.adapters} different adapter{'s' * (u.adapters != 1)} of this run ({u.non_final} besides final) were "
        f"evaluated on this test split, in {u.evaluations} evaluation{'s' * (u.evaluations != 1)} (archived ones "
        "included)."
    )
    note = f"<p><strong>{esc(u.note)}.</strong></p>" if u.note else ""
    return f'<section id="reuse"><h2>Test reuse</h2><p>{esc(text)}</p>{note}</section>'


def _checkpoints(r: Report) -> str:
    """Root, the checkpoints and final on test, as the text curve, marked as description only (docs/why.md)."""
    if r.checkpoints is None:
        return ""
    lines = curve_lines(r.checkpoints)[1:]
    note = f'<p class="note"><strong>{esc(r.checkpoints.note)}.</strong></p>'
    return (
        '<section id="checkpoints"><h2>Checkpoints on test (description only)</h2>'
        f"{note}<pre>{esc(chr(10).join(lines))}</pre></section>"
    )


def _training(r: Report) -> str:
    t = r.training
    if t is None or not t.steps:
        body = "<p>No steps.jsonl with training scores in the run folder.</p>"
    else:
        body = f'<p class="banner training">{esc(t.label)}</p>' + _grid(
            ["step", "epoch", "train tasks", "training mean score"],
            [
                [
                    esc("—" if x.step is None else x.step),
                    esc("—" if x.epoch is None else x.epoch),
                    esc("—" if x.tasks is None else x.tasks),
                    figure(x.mean_score),
                ]
                for x in t.steps
            ],
            numeric=frozenset({0, 1, 2, 3}),
        )
    return f'<section id="training"><h2>Training evidence (TRAINING, not test)</h2>{body}</section>'


def _why(r: Report) -> str:
    """Per compared pair, the adapter's diff beside the tasks it fixed, broke or made flaky, the first divergence,
    tool use and usage: the text of ``hermit-tui diff``, one folded block per pair (docs/why.md)."""
    if not r.why:
        return ""
    blocks = []
    for pair in r.why:
        flips = ", ".join(f"{k} {len(v)}" for k, v in pair.flips.items())
        text = "\n".join(pair_lines(pair, "#"))
        blocks.append(
            f"<details><summary>{esc(pair.a)} → {esc(pair.b)}: {esc(flips)}</summary><pre>{esc(text)}</pre></details>"
        )
    note = (
        '<p class="note">What the adapter changed, where the trajectories first part ways, and whether the adapter '
        "was used: descriptive, not causal (docs/why.md).</p>"
    )
    return f'<section id="why"><h2>Why it changed</h2>{note}{"".join(blocks)}</section>'


def _generic(value: Any) -> str:
    """Any JSON value as html: dicts as two-column tables, lists of like dicts as tables, other lists as lists."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float, str)):
        return esc(value)
    if isinstance(value, dict):
        return _kv([(str(k), _generic(v)) for k, v in value.items()]) if value else "none"
    if isinstance(value, list):
        if not value:
            return "none"
        more = (
            f'<p class="note">and {len(value) - GENERIC_ROWS:,} more (all in report.json)</p>'
            if len(value) > GENERIC_ROWS
            else ""
        )
        shown = value[:GENERIC_ROWS]
        if all(isinstance(v, dict) for v in shown):
            keys = list(dict.fromkeys(k for v in shown for k in v))
            return _grid([str(k) for k in keys], [[_generic(v.get(k)) for k in keys] for v in shown]) + more
        return "<ul>" + "".join(f"<li>{_generic(v)}</li>" for v in shown) + "</ul>" + more
    return esc(value)


def _extra_sections(r: Report) -> list[tuple[str, str, str]]:
    """(id, title, html) for every field of the model this module does not render by name (e.g. a failure
    taxonomy added later), in the model's order; empty values are left out."""
    dumped = r.model_dump(mode="json")
    out = []
    for name in type(r).model_fields:
        if name in KNOWN_FIELDS or dumped.get(name) in (None, [], {}):
            continue
        anchor = "extra-" + "".join(ch if ch.isalnum() else "-" for ch in name)
        title = name.replace("_", " ").capitalize()
        out.append(
            (anchor, title, f'<section id="{esc(anchor)}"><h2>{esc(title)}</h2>{_generic(dumped[name])}</section>')
        )
    return out


# ---------------------------------------------------------------------------------------------------- the page


def to_html(report: Report, *, errors: Mapping[str, Mapping[str, int]] | None = None, attempts: str = "") -> str:
    """The whole report as one self-contained HTML page (see the module's docstring). ``errors``: per selector and
    test task, the attempts that ended in an error (marked in the per-task table); ``attempts``: the folded attempts
    section (``core.report.html_attempts``), both read from the files by the caller."""
    r = report
    banner, warnings = _warnings(r)
    extras = _extra_sections(r)
    where = where_sections(r)
    contents = [
        ("warnings", "Warnings"),
        ("protocol", "Protocol"),
        ("results", "Results"),
        ("pairs", "Comparisons"),
        ("tasks", "Per-task table"),
        *((("attempts", "Attempts"),) if attempts else ()),
        ("comparability", "Comparability"),
        ("reuse", "Test reuse"),
        *([("checkpoints", "Checkpoints on test")] if r.checkpoints is not None else []),
        ("training", "Training evidence"),
        *((a, t) for a, t, _ in where),
        *([("why", "Why it changed")] if r.why else []),
        *((a, t) for a, t, _ in extras),
    ]
    nav = "".join(f'<a href="#{esc(a)}">{esc(t)}</a>' for a, t in contents)
    title = f"Evaluation report: {r.run_name}" + (" (teaching demonstration)" if r.demo else "")
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{esc(CSP)}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="color-scheme" content="light dark">',
        '<meta name="referrer" content="no-referrer">',
        f'<meta name="generator" content="hermit-tui {esc(r.hermit_tui_version)}">',
        f"<title>{esc(title)}</title><style>{CSS}</style></head>",
        f'<body data-format="{esc(r.format)}" data-demo="{str(r.demo).lower()}"><main>',
        f"<header><h1>Evaluation report: {esc(r.run_name)}</h1>",
        f'<p class="meta">Config <code>{esc(r.config)}</code>; run folder <code>{esc(r.run_dir)}</code>; hermit-tui '
        f"{esc(r.hermit_tui_version)}. Every figure is measured on the test split unless labelled otherwise.</p>"
        "</header>",
        banner,
        f'<nav aria-label="Contents">{nav}</nav>',
        warnings,
        _protocol(r),
        results_html(r),
        pairs_html(r),
        tasks_html(r, errors or {}),
        attempts,
        _comparability(r),
        _reuse(r),
        _checkpoints(r),
        _training(r),
        *(html for _, _, html in where),
        _why(r),
        *(html for _, _, html in extras),
        f"<footer>Written by hermit-tui {esc(r.hermit_tui_version)} ({esc(r.format)}). The figures are those of "
        "<code>hermit-tui report --format json</code> for the same evaluations; the per-task table is "
        "<code>--format csv</code>. This page fetches nothing.</footer>",
        f"</main><script>{SCRIPT}</script></body></html>",
    ]
    return "\n".join(p for p in parts if p) + "\n"


__all__ = ["to_html"]
