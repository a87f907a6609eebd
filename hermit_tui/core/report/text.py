"""The evaluation report as text: Markdown (warnings first, then the protocol, the results, the comparisons, the
failure taxonomy, comparability, the checks, test reuse and training evidence), JSON (the model, with stable keys)
and CSV (the per-task table). The HTML page is ``core.report.html``."""

from __future__ import annotations

import csv
import io
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
    spreadsheet_text,
)
from hermit_tui.core.report.model import Report
from hermit_tui.core.safe import json_text, terminal
from hermit_tui.core.safe import markdown as md
from hermit_tui.core.stats.clusters import CLUSTER_METHOD
from hermit_tui.core.stats.figures import VERDICT_RULE, PairStats, VerdictKind
from hermit_tui.core.stats.intervals import method_note
from hermit_tui.core.stats.noise import variance_text
from hermit_tui.core.stats.passk import PassFigure
from hermit_tui.core.stats.selector import ESTIMAND, SE_METHOD
from hermit_tui.core.stats.sequential.text import adjusted_text, boundary_text
from hermit_tui.core.why.pair import PairWhy
from hermit_tui.core.why.text import curve_lines, pair_lines
from hermit_tui.core.workspace.fingerprint import FIELD_NAMES


def _cell(value: Any) -> str:
    return md(value)


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    out = ["| " + " | ".join(map(_cell, header)) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(map(_cell, row)) + " |" for row in rows]
    return out


def to_markdown(report: Report) -> str:
    """The report as Markdown: warnings first, then the protocol, the results, the comparisons and the checks."""
    r = report
    out = [
        f"# Evaluation report: {md(r.run_name)}",
        "",
        f"Config {md(r.config)}; run folder {md(r.run_dir)}; hermit-tui {r.hermit_tui_version}. Every figure below is "
        "measured on the test split unless labelled otherwise.",
        "",
        "## Warnings",
        "",
    ]
    out += [f"- {md(w)}" for w in r.warnings] or ["None."]
    out += ["", "## Protocol", ""]
    repeats = sorted({s.summary["repeats"] for s in r.selectors if s.summary})
    out += _table(
        ["", ""],
        [
            ["dataset revision", r.dataset_revision],
            [
                "split sizes",
                f"test {r.splits['test']}, train {r.splits['train']}, val {r.splits['val']} "
                f"(task file: {r.splits['tasks']} tasks)",
            ],
            ["repeats", ", ".join(map(str, repeats)) or "—"],
            [
                "success threshold",
                compact(r.threshold)
                + (
                    " (hermit's)"
                    if r.threshold == SOLVED_THRESHOLD
                    else " (set for this report; the files keep hermit's 1.0)"
                ),
            ],
            [
                "comparable",
                "yes: every selector shares one protocol fingerprint" if r.comparable else "NO: see Comparability",
            ],
            *([["stop when decided", text] for text in [sequential_protocol(r)] if text]),
            *(
                [["clustered by", f"{r.cluster_by}: {r.n_clusters} clusters of the test tasks; {CLUSTER_METHOD}"]]
                if r.cluster_by is not None
                else []
            ),
        ],
    )
    out += ["", "## Results on the test split", ""]
    rows = []
    unequal = any(s.stats.repeats is None and s.stats.n_tasks for s in r.selectors)
    for s in r.selectors:
        st = s.stats
        k = st.repeats if st.repeats is not None else f"{st.repeats_min}-{st.repeats_max}"
        commit = (s.commit or "")[:12] or (f"dir {s.content_hash[:12]}" if s.content_hash else "—")
        row = [
            s.label,
            s.adapter or "—",
            commit,
            st.n_tasks,
            k,
            figure(st.mean),
            interval(st.ci_low, st.ci_high),
            st.ci_method or "—",
        ]
        if unequal:
            row.append(figure(st.attempt_mean))
        once_low, once_high = st.solved_once_ci or (None, None)
        rows.append(
            row
            + [
                figure(st.solved_once, 3),
                interval(once_low, once_high, digits=3),
                figure(st.pass_k, 3),
                s.errors,
                f"{s.known_cost_usd:.4f}",
                s.unknown_cost_attempts,
                s.written_by,
            ]
        )
    out += _table(
        [
            "selector",
            "adapter",
            "commit measured",
            "tasks",
            "repeats",
            "mean score",
            "95% CI",
            "CI method",
            *(["hermit's mean_score (over attempts)"] if unequal else []),
            f"solved once (>= {compact(r.threshold)})",
            "Wilson 95% CI",
            "pass^k",
            "errors",
            "known cost (USD)",
            "unknown-cost attempts",
            "written by",
        ],
        rows,
    )
    notes = [
        f"- {md(s.label)}: {md(text)}"
        for s in r.selectors
        for text in (s.stats.rule_of_three, s.stats.lever_note)
        if text
    ]
    if notes:
        out += ["", *notes]
    methods = method_note([s.stats.ci_method for s in r.selectors])
    out += [
        "",
        f"Mean score: {ESTIMAND}. 95% CI ({md(methods_by_selector(r.selectors))}): {methods}; "
        f"{SE_METHOD}. Solved once and pass^k: shares of all {r.splits['test']} test tasks (hermit's "
        "denominator), Wilson 95% intervals.",
        "",
        "### hermit's summaries",
        "",
    ]
    out += _table(
        ["selector", *SUMMARY_KEYS],
        [
            [s.label, *(("—" if s.summary[k] is None else s.summary[k]) for k in SUMMARY_KEYS)]
            if s.summary
            else [s.label, *(["(no summary.json)"] + ["—"] * (len(SUMMARY_KEYS) - 1))]
            for s in r.selectors
        ],
    )
    out += ["", "## Paired comparisons (test split)", ""]
    if not r.pairs:
        out += ["One selector: nothing to compare.", ""]
    if r.pairs:
        out += [f"Verdict rule: {VERDICT_RULE}. Differences are b - a of task means, on the tasks both attempted.", ""]
        for rule in dict.fromkeys(p.rule for p in r.pairs if p.sequential):  # the design's (group-sequential, anytime)
            out += [f"Verdict rule for a candidate and its baseline: {rule}.", ""]
    for p in r.pairs:
        counts = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in p.transition_counts.items())
        out += [f"### {md(p.b)} vs {md(p.a)}", "", f"**Verdict:** {md(p.verdict)}", ""]
        sign = (
            p_value(p.sign_test_p)
            if p.sign_test_p is not None or not p.unequal_repeats
            else "— (not valid with unequal repeats)"
        )
        out += _table(
            ["", ""],
            [
                ["paired tasks", p.n_paired],
                ["mean difference", figure(p.mean_diff) + (" (observed, not adjusted)" if _adj(p) else "")],
                *([["adjusted for stopping", _adj(p)]] if _adj(p) else []),
                ["95% CI", interval(p.ci_low, p.ci_high) + (f" ({p.method})" if p.ci_method else "")],
                ["p-value", f"{p_value(p.p_value)} ({p.test})"],
                [SHARP_TEST_ROW, f"{p_value(p.sharp_p_value)} ({p.sharp_test})" if p.sharp_test else "—"],
                ["sign test p", sign],
                ["wins / losses / ties", f"{p.wins} / {p.losses} / {p.ties}"],
                ["transitions", counts],
                [
                    "minimum detectable difference",
                    f"{mde} ({p.mde_method})" if (mde := p.mde_figure(figure)) is not None else "—",
                ],
                *([["sequential boundary", boundary_text(p.sequential)]] if p.sequential else []),
            ],
        )
        if p.n_unpaired:
            out += ["", f"Left out (attempted by only one of the two): {md(', '.join(p.unpaired))}"]
        out += _noise_markdown(r, p)
        out.append("")
    out += _taxonomy_markdown(r)
    out += _where_markdown(r)
    out += _pass_k_markdown(r)
    out += _bounds_markdown(r)
    out += _why_markdown(r)
    out += ["## Comparability", ""]
    if r.comparable:
        out.append(
            "Every selector shares one protocol fingerprint (test ids and rows, judge, pipeline, params, model, "
            "repeats)."
        )
    else:
        out += [f"- **{md(d.a)} vs {md(d.b)}**: {md('; '.join(d.differences))}" for d in r.differences]
    fields = list(FIELD_NAMES)
    out += [
        "",
        *_table(
            ["selector", *fields],
            [
                [s.label, *(fingerprint_value(s.fingerprint.field(f)) for f in fields)]
                if s.fingerprint
                else [
                    s.label,
                    "missing (written by hermit eval)" if s.written_by == "hermit eval" else "missing",
                    *["—"] * (len(fields) - 1),
                ]
                for s in r.selectors
            ],
        ),
    ]
    out += ["", "## Protocol checks", ""]
    out += [f"- **{c.level}** ({c.code}): {md(c.message)}" for c in r.checks] or ["No finding."]
    out += ["", "## Test reuse", ""]
    reuse = r.test_reuse
    out.append(
        f"{reuse.adapters} different adapter{'s' * (reuse.adapters != 1)} of this run "
        f"({reuse.non_final} besides final) were evaluated on this test split, in {reuse.evaluations} "
        f"evaluation{'s' * (reuse.evaluations != 1)} (archived ones included)."
    )
    if reuse.note:
        out += ["", f"**{reuse.note}.**"]
    if r.checkpoints is not None:
        out += ["", "## Checkpoints on test (description only)", ""]
        lines = curve_lines(r.checkpoints, bars=False)
        out += [f"**{md(r.checkpoints.note)}.**", ""] + [f"- {md(' '.join(line.split()))}" for line in lines[1:]]
    out += ["", "## Training evidence (TRAINING, not test)", ""]
    if r.training is None or not r.training.steps:
        out.append("No steps.jsonl with training scores in the run folder.")
    else:
        out += [
            r.training.label,
            "",
            *_table(
                ["step", "epoch", "train tasks", "training mean score"],
                [[t.step, t.epoch, t.tasks, figure(t.mean_score)] for t in r.training.steps],
            ),
        ]
    return terminal("\n".join(out).rstrip()) + "\n"  # and nothing a terminal acts on, should a text be missed


def _tasks(ids: list[str], most: int = 12) -> str:
    return ", ".join(ids[:most]) + (f", … ({len(ids) - most} more)" if len(ids) > most else "") if ids else "—"


def _p(x: float | None) -> str:
    return "—" if x is None else f"{x:.3g}"


def _where_markdown(r: Report) -> list[str]:
    """The "Slices" and "Harmed tasks" sections, when the report was asked for them."""
    out: list[str] = []
    sr = r.slices
    if sr is not None:
        out += [f"## Slices by {md(sr.by)}", ""]
        out.append(
            f"{len(sr.slices)} slices of the test split by {md(sr.by)}"
            + (f" ({sr.unsliced} test tasks in none)" if sr.unsliced else "")
            + ". p: each slice's test of no difference; p (BH): adjusted over the slices, "
            f"{sr.fdr_method}, for screening; "
            f"hurt p (Holm): {sr.hurt_test} (M = {sr.margin:g}), adjusted by {sr.fwer_method}; a slice is named as "
            f"hurt when it is at most {sr.hurt_alpha:g}."
        )
        out.append("")
        for k, (a, b) in enumerate((p.a, p.b) for p in (sr.slices[0].pairs if sr.slices else [])):
            out += [f"### {md(b)} − {md(a)}", ""]
            rows = []
            for sl in sr.slices:
                p = sl.pairs[k]
                means = {s.label: s.mean for s in sl.selectors}
                ci = f" ({figure(p.ci_low)} to {figure(p.ci_high)})" if p.ci_low is not None else ""
                rows.append(
                    [
                        sl.name,
                        len(sl.task_ids),
                        figure(means.get(a)),
                        figure(means.get(b)),
                        (f"{p.mean_diff:+.3f}" if p.mean_diff is not None else "—") + ci,
                        _p(p.p_value),
                        _p(p.p_bh),
                        _p(p.p_hurt_holm),
                        p.reading,
                    ]
                )
            out += _table(["slice", "tasks", a, b, f"{b} − {a} (95% CI)", "p", "p (BH)", "hurt p (Holm)", ""], rows)
            out.append("")
    for h in r.harm:
        out += [f"## Harmed tasks: {md(h.candidate)} against {md(h.baseline)}", ""]
        out.append(
            md(f"{h.test}; {h.adjustment} over the {h.tested} tasks, q = {h.q:g}. {h.note[:1].upper()}{h.note[1:]}.")
        )
        out.append("")
        if h.harmed:
            out += _table(
                ["task", h.baseline, h.candidate, "difference", "p", "q"],
                [
                    [t.task, f"{t.baseline_mean:.3f}", f"{t.candidate_mean:.3f}", f"{t.difference:+.3f}", _p(t.p_value),
                     _p(t.q_value)]
                    for t in h.harmed
                ],
            )  # fmt: skip
            out.append("")
    return out


def _noise_markdown(r: Report, p: PairStats) -> list[str]:
    """The pair's variance split; for a pair with no clear difference, what detecting the budget's difference
    would take."""
    n = r.noise_of(p.a, p.b)
    if n is None:
        return []
    out = ["", f"Noise: {md(variance_text(n))}."]
    if p.decision == VerdictKind.UNCLEAR:
        out += ["", f"**What it would take:** {md(n.advice)}"]
    return out


def _bounds_markdown(r: Report) -> list[str]:
    if not r.error_bounds:
        return []
    out = ["## Bounds under errors", "", "Each pair with its errored attempts (pipeline and judge errors) counted as "
           "failures (every other figure's reading), as successes (scored 1) and left out.", ""]  # fmt: skip
    for eb in r.error_bounds:
        out += [f"### {md(eb.b)} − {md(eb.a)}", "", md(eb.sentence[:1].upper() + eb.sentence[1:]) + ".", ""]
        rows = [
            [
                x.reading,
                x.n_paired,
                "—" if x.mean_diff is None else f"{x.mean_diff:+.4f}",
                "—" if x.ci_low is None else f"{x.ci_low:+.4f} to {x.ci_high:+.4f}",
                x.decision,
            ]
            for x in eb.readings
        ]
        out += [*_table(["errors counted", "paired tasks", "difference", "95% CI", "reading"], rows), ""]
    return out


def _pass_k_markdown(r: Report) -> list[str]:
    pk = r.pass_k
    if pk is None or not pk.selectors:
        return []
    out = ["## pass@k and pass^k", "", f"Per test task, unbiased estimates ({pk.definition}; threshold "
           f"{pk.threshold:g}), averaged over the tasks with at least k attempts, with 95% intervals.", ""]  # fmt: skip

    def cell(f: PassFigure) -> str:
        if f.value is None:
            return "—"
        ci = f" ({f.ci_low:.3f} to {f.ci_high:.3f})" if f.ci_low is not None and f.ci_high is not None else ""
        return f"{f.value:+.3f}{ci}" if f.value < 0 else f"{f.value:.3f}{ci}"

    rows = [[f"{s.label} pass@{f.k}", cell(f)] for s in pk.selectors for f in s.pass_at]
    rows += [[f"{s.label} pass^{f.k}", cell(f)] for s in pk.selectors for f in s.pass_hat]
    rows += [[f"{p.b} − {p.a} pass@{f.k}", cell(f)] for p in pk.pairs for f in p.pass_at]
    rows += [[f"{p.b} − {p.a} pass^{f.k}", cell(f)] for p in pk.pairs for f in p.pass_hat]
    return [*out, *_table(["figure", "value (95% CI)"], rows), ""]


def _escape_all(value: Any, key: str = "") -> Any:
    """Every string of a dumped model made safe for Markdown (keys too), but a file's diff lines, which go into a
    fenced block of their own."""
    if isinstance(value, str):
        return md(value)
    if isinstance(value, list):
        return value if key == "diff" else [_escape_all(v) for v in value]
    if isinstance(value, dict):
        return {md(k): _escape_all(v, k) for k, v in value.items()}
    return value


def _markdown_safe(pair: PairWhy) -> PairWhy:
    """The pair with every text from the tree, the data and the folder names escaped for Markdown."""
    return PairWhy.model_validate(_escape_all(pair.model_dump(mode="json")))


def _why_markdown(r: Report) -> list[str]:
    """The "Why it changed" section: per compared pair, the adapter's diff beside the tasks it fixed, broke or made
    flaky, the first divergence, tool use and usage (core/why; docs/why.md)."""
    if not r.why:
        return []
    out = ["## Why it changed", ""]
    for pair in r.why:
        out += pair_lines(_markdown_safe(pair), "###") + [""]
    return out


def _taxonomy_markdown(r: Report) -> list[str]:
    """The "Failure taxonomy" section: attempts per label per selector, then per pair the tasks fixed/introduced."""
    t = r.taxonomy
    out = ["## Failure taxonomy", ""]
    if t is None:
        return out + ["Not computed.", ""]
    labels = [s.label for s in t.selectors]
    out += [
        f"Labels assigned by hand in hermit-tui's triage ({t.source}); counts are attempts. A failure is "
        f"{t.failure} ({compact(t.threshold)}).",
        "",
    ]
    out += [f"- {md(w)}" for w in t.warnings] + ([""] if t.warnings else [])
    names: dict[str, int] = {}
    for s in t.selectors:
        for name, n in s.counts.items():
            names[name] = names.get(name, 0) + n
    rank = {name: i for i, name in enumerate(t.label_set)}
    ordered = sorted(names, key=lambda name: (-names[name], rank.get(name, len(rank)), name))
    rows = [[name, *(s.counts.get(name, 0) for s in t.selectors)] for name in ordered]
    rows += [
        ["*failures*", *(s.failures for s in t.selectors)],
        ["*failures with a label*", *(s.labelled_failures for s in t.selectors)],
        ["*failures without a label*", *(s.failures - s.labelled_failures for s in t.selectors)],
    ]
    if any(s.corrected for s in t.selectors):
        rows.append(["*corrected scores*", *(s.corrected for s in t.selectors)])
    out += _table(["label", *labels], rows)
    if not ordered:
        out += ["", "No attempt carries a label yet (`hermit-tui annotate`, or 1-9 in the dashboard)."]
    corrected = [s for s in t.selectors if s.corrected_mean is not None]
    if corrected:
        out += [
            "",
            "With the corrected scores in place of the judge's (the files and every figure above keep the judge's):",
            "",
        ]
        out += [
            f"- {md(s.label)}: mean {figure(s.corrected_mean)} with {s.corrected} corrected score"
            f"{'s' * (s.corrected != 1)} (recorded {figure(s.recorded_mean)})"
            for s in corrected
        ]
    for p in t.pairs:
        if not p.labels:
            continue
        out += [
            "",
            f"### Labels: {md(p.b)} vs {md(p.a)}",
            "",
            f"Per label, on the tasks both attempted (a task carries a label when one of its attempts does): "
            f"fixed = under {md(p.a)}, not under {md(p.b)}; introduced = under {md(p.b)}, not under {md(p.a)}; "
            "not triaged = on "
            "one side only while the other side's failures on the task carry no label yet.",
            "",
        ]
        out += _table(
            [
                "label",
                f"tasks ({p.a})",
                f"tasks ({p.b})",
                "fixed",
                "introduced",
                "not triaged",
                "fixed tasks",
                "introduced tasks",
            ],
            [
                [
                    c.label,
                    c.a_tasks,
                    c.b_tasks,
                    len(c.fixed),
                    len(c.introduced),
                    len(c.untriaged),
                    _tasks(c.fixed),
                    _tasks(c.introduced),
                ]
                for c in p.labels
            ],
        )
    return out + [""]


def to_json(report: Report) -> str:
    """The whole report as JSON; the keys are the model's fields, in a fixed order."""
    return json_text(report.model_dump_json(indent=1)) + "\n"


def to_csv(report: Report) -> str:
    """The per-task table: task id, then per selector mean, sd, n, solved_once, then per default pair b - a."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    header = ["task_id"]
    for s in report.selectors:
        header += [f"{s.label}_mean", f"{s.label}_sd", f"{s.label}_n", f"{s.label}_solved_once"]
    header += [f"{p.b}_minus_{p.a}" for p in report.pairs]
    writer.writerow([spreadsheet_text(h) for h in header])
    per = {s.label: s.stats.per_task for s in report.selectors}
    for tid in report.test_ids:
        row: list[str] = [spreadsheet_text(tid)]
        for s in report.selectors:
            ts = per[s.label].get(tid)
            row += (
                ["", "", "0", ""] if ts is None else [exact(ts.mean), exact(ts.sd), str(ts.n), str(int(ts.solved > 0))]
            )
        for p in report.pairs:
            a, b = per[p.a].get(tid), per[p.b].get(tid)
            row.append("" if a is None or b is None else exact(b.mean - a.mean))
        writer.writerow(row)
    return buf.getvalue()


__all__ = ["to_csv", "to_json", "to_markdown"]


def _adj(p: PairStats) -> str | None:
    """The estimate at stopping adjusted for the stopping rule, for a monitored pair that stopped."""
    look = p.sequential
    if look is None or look.adjusted_estimate is None:
        return None
    return f"{figure(look.adjusted_estimate)} ({adjusted_text(look)})"
