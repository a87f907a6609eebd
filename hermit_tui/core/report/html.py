"""The report as one self-contained HTML page: ``hermit-tui report --format html``.

Everything is inline (stylesheet, plots drawn as SVG from the report's numbers, one small script that sorts and
pages the per-task table); nothing is fetched, and the page's Content-Security-Policy forbids fetching anything.
With JavaScript off the page reads the same: the per-task table is split into pages of :data:`PAGE_ROWS` rows.
Warnings come first, the teaching-demo banner before them on the demo (``Report.demo``: this module never looks at
the demo itself). Every string from the data is escaped.

The figures are the report's own (the ones ``--format json`` gives): each results row, pair and per-task cell
carries its exact values in ``data-*`` attributes (shortest round-trip repr), and the text shows them rounded as
the Markdown report does. Fields of the Report model this module does not know (added later) are rendered
generically at the end, so nothing in the model is left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hermit_tui.core.present import SHARP_TEST_ROW, p_value
from hermit_tui.core.records.results import SOLVED_THRESHOLD, SUMMARY_KEYS
from hermit_tui.core.report.formatting import (
    compact,
    exact,
    figure,
    fingerprint_value,
    interval,
    methods_by_selector,
    sequential_protocol,
)
from hermit_tui.core.report.html_assets import CSP, CSS, SCRIPT
from hermit_tui.core.report.html_tables import grid as _grid
from hermit_tui.core.report.html_tables import kv as _kv
from hermit_tui.core.report.html_where import where_sections
from hermit_tui.core.report.model import Report, SelectorReport
from hermit_tui.core.report.svg import BINS, differences_plot, distribution_plot, esc, means_plot
from hermit_tui.core.stats.clusters import CLUSTER_METHOD
from hermit_tui.core.stats.figures import ESTIMAND, SE_METHOD, VERDICT_RULE, PairStats, VerdictKind
from hermit_tui.core.stats.intervals import method_note
from hermit_tui.core.stats.noise import variance_text
from hermit_tui.core.stats.sequential import anytime_looks
from hermit_tui.core.stats.sequential.text import adjusted_text, boundary_text
from hermit_tui.core.why.text import curve_lines, pair_lines
from hermit_tui.core.workspace.fingerprint import FIELD_NAMES

PAGE_ROWS = 500  # per-task rows per page without JavaScript (the script shows 100 at a time, sorted)
LONG_ID = 28  # task ids longer than this may wrap in the per-task table
SHOWN_IDS = 40  # task ids listed per transition before "and N more"
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


def _data(**values: Any) -> str:
    return "".join(
        f' data-{k.replace("_", "-")}="{esc(exact(v) if isinstance(v, float) else v)}"'
        for k, v in values.items()
        if v is not None
    )


def _ids(ids: list[str], limit: int = SHOWN_IDS) -> str:
    shown = ", ".join(f"<code>{esc(i)}</code>" for i in ids[:limit])
    return shown + (f" and {len(ids) - limit:,} more (all in report.json)" if len(ids) > limit else "")


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


def _commit(s: SelectorReport) -> str:
    return (s.commit or "")[:12] or (f"dir {s.content_hash[:12]}" if s.content_hash else "—")


def _results(r: Report) -> str:
    unequal = any(s.stats.repeats is None and s.stats.n_tasks for s in r.selectors)
    header = [
        "selector",
        "mean score",
        "95% CI",
        "CI method",
        *(["hermit's mean_score (over attempts)"] if unequal else []),
        "tasks",
        "repeats",
        "solved once",
        "Wilson 95% CI",
        "pass^k",
        "errors",
        "known cost (USD)",
        "unknown-cost attempts",
        "adapter",
        "commit measured",
        "written by",
    ]
    text_columns = {"selector", "adapter", "commit measured", "CI method", "written by"}
    numeric = frozenset(i for i, h in enumerate(header) if h not in text_columns)
    rows = []
    for s in r.selectors:
        st = s.stats
        k = st.repeats if st.repeats is not None else f"{st.repeats_min}-{st.repeats_max}"
        once_low, once_high = st.solved_once_ci or (None, None)
        data = _data(
            label=s.label,
            mean=st.mean,
            ci_low=st.ci_low,
            ci_high=st.ci_high,
            ci_method=st.ci_method,
            attempt_mean=st.attempt_mean,
            n_tasks=st.n_tasks,
            solved_once=st.solved_once,
            pass_k=st.pass_k,
            errors=s.errors,
            known_cost=s.known_cost_usd,
        )
        cells = [
            f"<th scope=row>{esc(s.label)}</th>",
            figure(st.mean),
            esc(interval(st.ci_low, st.ci_high)),
            esc(st.ci_method or "—"),
            *([figure(st.attempt_mean)] if unequal else []),
            str(st.n_tasks),
            esc(k),
            figure(st.solved_once, 3),
            esc(interval(once_low, once_high, digits=3)),
            figure(st.pass_k, 3),
            str(s.errors),
            f"{s.known_cost_usd:.4f}",
            str(s.unknown_cost_attempts),
            esc(s.adapter or "—"),
            f"<code>{esc(_commit(s))}</code>",
            esc(s.written_by),
        ]
        rows.append(
            f"<tr{data}>"
            + "".join(
                c if i == 0 else f"<td{' class=num' if i in numeric else ''}>{c}</td>" for i, c in enumerate(cells)
            )
            + "</tr>"
        )
    head = "".join(f'<th scope="col"{" class=num" if i in numeric else ""}>{esc(h)}</th>' for i, h in enumerate(header))
    table = (
        f'<div class="scroll"><table id="results-table" class="wrap-head"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )
    notes = "".join(
        f"<li>{esc(s.label)}: {esc(text)}</li>"
        for s in r.selectors
        for text in (s.stats.rule_of_three, s.stats.lever_note)
        if text
    )
    methods = method_note([s.stats.ci_method for s in r.selectors])
    footnote = (
        f"Mean score: {ESTIMAND}. 95% CI ({methods_by_selector(r.selectors)}): {methods}; {SE_METHOD}. "
        f"Solved once (a repeat scoring at least {compact(r.threshold)}) and pass^k (every repeat does): "
        f"shares of all {r.splits['test']} test tasks (hermit's denominator), Wilson 95% intervals."
    )
    stats = [s.stats for s in r.selectors]
    plots = (
        f'<div class="plots wide"><figure>{means_plot(stats)}<figcaption>Mean score with its 95% interval '
        f"(dot and whisker), per selector.</figcaption></figure></div>"
        f'<h3 id="distributions">Score distributions</h3><div class="plots">'
        + "".join(f"<figure>{distribution_plot(st)}</figure>" for st in stats if st.n_tasks)
        + f"</div><p class=note>Per-task mean scores (each task's mean over its repeats) in {BINS} bins; the "
        "dashed line is the selector's mean score.</p>"
    )
    summaries = _grid(
        ["selector", *SUMMARY_KEYS],
        [
            [esc(s.label), *(esc("—" if s.summary[k] is None else s.summary[k]) for k in SUMMARY_KEYS)]
            if s.summary
            else [esc(s.label), "(no summary.json)", *["—"] * (len(SUMMARY_KEYS) - 1)]
            for s in r.selectors
        ],
        numeric=frozenset(i + 1 for i, k in enumerate(SUMMARY_KEYS) if k not in ("adapter", "commit")),
    )
    return (
        f'<section id="results"><h2>Results on the test split</h2>{table}'
        f'{f"<ul class=note>{notes}</ul>" if notes else ""}<p class="note">{esc(footnote)}</p>{plots}'
        f'<h3 id="summaries">hermit\'s summaries</h3>{summaries}</section>'
    )


def _pair(p: PairStats, r: Report) -> str:
    stats = {s.label: s.stats for s in r.selectors}
    sign = (
        p_value(p.sign_test_p)
        if p.sign_test_p is not None or not p.unequal_repeats
        else "— (not valid with unequal repeats)"
    )
    rows = [
        ("paired tasks", str(p.n_paired)),
        ("mean difference (b − a)", figure(p.mean_diff)),
        ("95% CI", esc(interval(p.ci_low, p.ci_high))),
        ("interval method", f'<span class="note">{esc(p.method or "—")}</span>'),
        ("p-value", esc(p_value(p.p_value))),
        ("test", f'<span class="note">{esc(p.test or "—")}</span>'),
        (SHARP_TEST_ROW, esc(p_value(p.sharp_p_value)) + f' <span class="note">{esc(p.sharp_test)}</span>'),
        ("sign test p", esc(sign)),
        ("wins / losses / ties", f"{p.wins} / {p.losses} / {p.ties}"),
        (
            "minimum detectable difference",
            esc(f"{mde} ({p.mde_method})" if (mde := p.mde_figure(figure)) is not None else "—"),
        ),
    ]
    if p.sequential is not None:
        anytime = anytime_looks.is_anytime(p.sequential)
        name = anytime_looks.interval_words(p.sequential)[0] if anytime else "repeated 95% CI"
        rows[2] = (name, esc(interval(p.ci_low, p.ci_high)))
        adjusted = adjusted_text(p.sequential)
        if adjusted is not None and p.sequential.adjusted_estimate is not None:
            rows[1] = ("mean difference (b − a), observed", figure(p.mean_diff))
            rows.insert(2, ("adjusted for stopping", f"{figure(p.sequential.adjusted_estimate)} "
                            f'<span class="note">{esc(adjusted)}</span>'))  # fmt: skip
        rows.append(("sequential boundary", esc(boundary_text(p.sequential))))
    if p.n_unpaired:
        rows.append(("left out (attempted by only one)", _ids(p.unpaired)))
    noise = r.noise_of(p.a, p.b)
    if noise is not None:
        rows.append(("noise", f'<span class="note">{esc(variance_text(noise))}</span>'))
        if p.decision == VerdictKind.UNCLEAR:
            rows.append(("what it would take", esc(noise.advice)))
    transitions = _grid(
        ["transition", "tasks", "task ids"],
        [
            [esc(k.replace("_", " ")), str(p.transition_counts.get(k, len(ids))), _ids(ids) or "—"]
            for k, ids in p.transitions.items()
        ],
        numeric=frozenset({1}),
    )
    word = {"improvement": "improvement", "regression": "regression", "equivalent": "equivalent"}.get(
        p.decision, "undecided" if p.sequential is not None else "no clear difference"
    )
    if p.sequential is not None and p.sequential.decision == "futile":
        word = "stopped for futility"
    data = _data(
        a=p.a,
        b=p.b,
        n_paired=p.n_paired,
        mean_diff=p.mean_diff,
        ci_low=p.ci_low,
        ci_high=p.ci_high,
        p_value=p.p_value,
        decision=p.decision,
        wins=p.wins,
        losses=p.losses,
        ties=p.ties,
    )
    plot = ""
    if p.a in stats and p.b in stats and p.n_paired:
        band = "repeated 95% interval (sequential)" if p.sequential is not None else "95% interval"
        if p.sequential is not None and anytime_looks.is_anytime(p.sequential):
            band = "anytime-valid 95% confidence sequence"
        plot = (
            f"<figure>{differences_plot(p, stats[p.a], stats[p.b])}<figcaption>Per-task differences "
            f"{esc(p.b)} − {esc(p.a)} (green higher, red lower); the dashed line is the mean difference, the "
            f"shaded band its {band}.</figcaption></figure>"
        )
    warn = "".join(f"<li>{esc(w)}</li>" for w in p.warnings)
    return (
        f'<article class="pair"{data}><h3>{esc(p.b)} vs {esc(p.a)}</h3>'
        f'<p class="verdict {esc(p.decision)}"><span class="tag">{esc(word)}</span>{esc(p.verdict)}</p>'
        f'{f"<ul class=warnings>{warn}</ul>" if warn else ""}<div class="plots wide"><div>{_kv(rows)}'
        f"<h4>Transitions</h4>{transitions}</div>{plot}</div></article>"
    )


def _pairs(r: Report) -> str:
    if not r.pairs:
        return '<section id="pairs"><h2>Paired comparisons</h2><p>One selector: nothing to compare.</p></section>'
    return (
        f'<section id="pairs"><h2>Paired comparisons (test split)</h2><p class="note">Verdict rule: '
        f"{esc(VERDICT_RULE)}. Differences are b − a of task means, on the tasks both attempted.</p>"
        + "".join(
            f'<p class="note">Verdict rule for a candidate and its baseline: {esc(rule)}.</p>'
            for rule in dict.fromkeys(p.rule for p in r.pairs if p.sequential)
        )
        + "".join(_pair(p, r) for p in r.pairs)
        + "</section>"
    )


def _errors_mark(n: int) -> str:
    return f' <span class=err title="{n} attempt{"s" * (n != 1)} ended in a pipeline or judge error">⚠{n}</span>'


def _task_rows(r: Report, errors: Mapping[str, Mapping[str, int]]) -> list[str]:
    per = {s.label: s.stats.per_task for s in r.selectors}
    most = {s.label: s.stats.repeats_max for s in r.selectors}
    rows = []
    for tid in r.test_ids:
        cells = [f"<th scope=row{' class=long' if len(tid) > LONG_ID else ''}>{esc(tid)}</th>"]
        for s in r.selectors:
            ts = per[s.label].get(tid)
            if ts is None:
                cells.append('<td class=u data-v="">—</td>')
                continue
            extra = f" (n={ts.n})" if ts.n != most[s.label] else ""
            n_err = errors.get(s.label, {}).get(tid, 0)
            extra += _errors_mark(n_err) if n_err else ""
            # every attempt an error: no score to speak of (the dashboard's ✗), not a 0.000 that reads as measured
            shown = "✗" if n_err and n_err >= ts.n else f"{ts.mean:.3f}"
            cells.append(f"<td class={'s' if ts.solved else 'u'} data-v={exact(ts.mean)}>{shown}{extra}</td>")
        for p in r.pairs:
            a, b = per.get(p.a, {}).get(tid), per.get(p.b, {}).get(tid)
            if a is None or b is None:
                cells.append('<td data-v="">—</td>')
                continue
            d = b.mean - a.mean
            kind = " class=pos" if d > 1e-9 else " class=neg" if d < -1e-9 else ""
            cells.append(f"<td{kind} data-v={exact(d)}>{d:+.3f}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return rows


def _tasks(r: Report, errors: Mapping[str, Mapping[str, int]]) -> str:
    head = (
        '<thead><tr><th scope="col">task</th>'
        + "".join(f'<th scope="col">{esc(s.label)}</th>' for s in r.selectors)
        + "".join(f'<th scope="col">{esc(p.b)} − {esc(p.a)}</th>' for p in r.pairs)
        + "</tr></thead>"
    )
    rows = _task_rows(r, errors)

    def table(chunk: list[str]) -> str:
        return f'<div class="scroll"><table class="tasks">{head}<tbody>{"".join(chunk)}</tbody></table></div>'

    if len(rows) <= PAGE_ROWS:
        body = table(rows)
    else:
        body = "".join(
            f"<details{' open' if i == 0 else ''}><summary>Tasks {i + 1:,}–{min(i + PAGE_ROWS, len(rows)):,} of "
            f"{len(rows):,}</summary>{table(rows[i : i + PAGE_ROWS])}</details>"
            for i in range(0, len(rows), PAGE_ROWS)
        )
    legend = (
        f"One row per test task (test split order): each selector's mean score over its repeats (✓: solved "
        f"at least once, score ≥ {compact(r.threshold)}; n: repeats when fewer or more than the selector's most; "
        "⚠ N: N attempts ended in a pipeline or judge error, counted as failures (✗: every one did, so there is no "
        "score; it counts as 0 in the means); "
        "—: no attempt), then each pair's difference of task means. The same table with standard deviations: "
        "<code>hermit-tui report --format csv</code>."
    )
    return (
        f'<section id="tasks"><h2>Per-task table ({len(rows):,} tasks)</h2><p class="note">{legend}</p>'
        f'<noscript><p class="note">JavaScript is off: the table is shown in pages of {PAGE_ROWS} rows, in '
        f"test order; with JavaScript on it sorts by any column and can be filtered.</p></noscript>"
        f'<div id="task-table">{body}</div></section>'
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
        _results(r),
        _pairs(r),
        _tasks(r, errors or {}),
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


__all__ = ["PAGE_ROWS", "to_html"]
