"""The HTML page's figures on the test split (``core.report.html``): the results table with its plots and
hermit's summaries (``results_html``), the paired comparisons (``pairs_html``) and the per-task table, in pages of
:data:`PAGE_ROWS` rows without JavaScript (``tasks_html``). Each results row, pair and per-task cell carries its
exact values in ``data-*`` attributes; every string from the data is escaped."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hermit_tui.core.present import SHARP_TEST_ROW, p_value
from hermit_tui.core.records.results import SUMMARY_KEYS
from hermit_tui.core.report.formatting import compact, exact, figure, interval, methods_by_selector
from hermit_tui.core.report.html_tables import grid as _grid
from hermit_tui.core.report.html_tables import kv as _kv
from hermit_tui.core.report.model import Report, SelectorReport
from hermit_tui.core.report.svg import BINS, differences_plot, distribution_plot, esc, means_plot
from hermit_tui.core.stats.figures import VERDICT_RULE, PairStats, VerdictKind
from hermit_tui.core.stats.intervals import method_note
from hermit_tui.core.stats.noise import variance_text
from hermit_tui.core.stats.selector import ESTIMAND, SE_METHOD
from hermit_tui.core.stats.sequential import anytime_looks
from hermit_tui.core.stats.sequential.text import adjusted_text, boundary_text

PAGE_ROWS = 500  # per-task rows per page without JavaScript (the script shows 100 at a time, sorted)
LONG_ID = 28  # task ids longer than this may wrap in the per-task table
SHOWN_IDS = 40  # task ids listed per transition before "and N more"


def _data(**values: Any) -> str:
    return "".join(
        f' data-{k.replace("_", "-")}="{esc(exact(v) if isinstance(v, float) else v)}"'
        for k, v in values.items()
        if v is not None
    )


def _ids(ids: list[str], limit: int = SHOWN_IDS) -> str:
    shown = ", ".join(f"<code>{esc(i)}</code>" for i in ids[:limit])
    return shown + (f" and {len(ids) - limit:,} more (all in report.json)" if len(ids) > limit else "")


def _commit(s: SelectorReport) -> str:
    return (s.commit or "")[:12] or (f"dir {s.content_hash[:12]}" if s.content_hash else "—")


def results_html(r: Report) -> str:
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


def pairs_html(r: Report) -> str:
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


def tasks_html(r: Report, errors: Mapping[str, Mapping[str, int]]) -> str:
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


__all__ = ["PAGE_ROWS", "pairs_html", "results_html", "tasks_html"]
