"""The gate's result in words: one line per check and the verdict (``to_text``), JSON (``to_json``), the Markdown
summary for a CI job page (``to_markdown``), and what the checks rest on (``evidence_line``) (``core.report.gate``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hermit_tui.core.present import partial_cost
from hermit_tui.core.report.gate.model import GateInterval, GateResult, SelectorFacts
from hermit_tui.core.safe import line as one_line
from hermit_tui.core.safe import markdown

if TYPE_CHECKING:
    from hermit_tui.core.stats.figures import PairStats


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' * (n != 1)}"


def evidence_line(selectors: Sequence[SelectorFacts], iv: GateInterval | None, pair: PairStats | None = None) -> str:
    """What the checks rest on: each selector's test tasks, repeats and attempts, the paired tasks and the width of
    the interval that decides improvement and no-regression."""
    parts = []
    for f in selectors:
        shape = (
            f"{_plural(f.n_test, 'task')} × {_plural(f.repeats, 'repeat')}" if f.repeats else _plural(f.n_test, "task")
        )
        parts.append(f"{f.label} {shape} ({_plural(f.attempts, 'attempt')})")
    text = ", ".join(parts)
    if iv is not None:
        paired = f"{_plural(iv.n_paired, 'paired task')}, " if iv.n_paired is not None else ""
        text += f"; {paired}interval width {iv.high - iv.low:.4f}"
    elif pair is not None:
        text += f"; {_plural(pair.n_paired, 'paired task')}, no interval"
    return text


def verdict_detail(result: GateResult) -> str:
    failed = result.failed
    if not failed:
        return f"{len(result.checks)} check{'s' * (len(result.checks) != 1)} passed"
    return f"{len(failed)} of {len(result.checks)} checks failed: {', '.join(c.name for c in failed)}"


def verdict_line(result: GateResult) -> str:
    return f"verdict: {'PASS' if result.passed else 'FAIL'} ({verdict_detail(result)})"


def to_text(result: GateResult) -> str:
    """One line per check, PASS or FAIL with the figure that decided it, then the verdict."""
    vs = f" vs baseline {one_line(result.baseline)}" if result.baseline else ""
    head = f"gate: candidate {one_line(result.candidate)}{vs}, margin {result.margin:g}" + (
        ", smoke subsets" if result.smoke else ""
    )
    ran = "checks: " + ", ".join(dict.fromkeys(c.requirement for c in result.checks))
    lines = [head, one_line(f"evidence: {result.evidence}"), ran] if result.evidence else [head, ran]
    return "\n".join([*lines, *(one_line(c.line) for c in result.checks), one_line(verdict_line(result))]) + "\n"


def to_json(result: GateResult) -> str:
    data = result.model_dump(mode="json")
    for check, model in zip(data["checks"], result.checks):
        check["line"] = model.line
    data["verdict"] = "PASS" if result.passed else "FAIL"
    return json.dumps(data, indent=1) + "\n"  # ASCII: every control character is a \\u escape


def _md(value: Any) -> str:
    return markdown(value)


def _ci(f: SelectorFacts) -> str:
    if f.mean is None:
        return "—"
    if f.ci_low is None or f.ci_high is None:
        return f"{f.mean:.4f}"
    return f"{f.mean:.4f} ({f.ci_low:.4f} to {f.ci_high:.4f})"


def to_markdown(result: GateResult, exit_code: int | None = None) -> str:
    """The Markdown summary for a CI job page (``$GITHUB_STEP_SUMMARY``): the selectors, the checks, the verdict."""
    verdict = "PASS" if result.passed else "FAIL"
    out = [f"### hermit-tui gate: {verdict}", ""]
    out.append(
        f"Run {_md(result.run_name)}, candidate {_md(result.candidate)}"
        + (f" against baseline {_md(result.baseline)}" if result.baseline else "")
        + f", margin {result.margin:g}"
        + (", smoke subsets (`--smoke`)" if result.smoke else "")
        + (", no-regression read leniently (`--lenient`)" if result.lenient else "")
        + "."
    )
    if result.evidence:
        out += ["", f"Evidence: {_md(result.evidence)}."]
    out += [
        "",
        "| role | selector | adapter | commit | attempts | mean score (95% CI) | errors (pipeline + judge) "
        "| known cost (USD) | written by |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for f in result.selectors:
        expected = f"{f.present} of {f.expected}" if f.expected is not None else str(f.attempts)
        smoke = f" (smoke, --limit {f.smoke_limit})" if f.smoke_limit is not None else ""
        cost = partial_cost(f.known_cost_usd, f.unknown_cost_attempts, dollars=False, attempts=f.attempts)
        out.append(
            "| "
            + " | ".join(
                _md(x)
                for x in (
                    f.role,
                    f.label + smoke,
                    f.adapter or "—",
                    (f.commit or "—")[:12],
                    expected,
                    _ci(f),
                    f"{f.pipeline_errors} + {f.judge_errors}",
                    cost,
                    f.written_by,
                )
            )
            + " |"
        )
    if result.interval is not None:
        iv = result.interval
        out += [
            "",
            f"{_md(result.candidate)} - {_md(result.baseline)}: 95% CI {iv.low:+.4f} to {iv.high:+.4f} "
            f"({_md(iv.method)}).",
        ]
    out += ["", "| check | result | figure |", "|---|---|---|"]
    out += [f"| {_md(c.name)} | {'PASS' if c.passed else '**FAIL**'} | {_md(c.figure)} |" for c in result.checks]
    code = f" (exit {exit_code})" if exit_code is not None else ""
    out += ["", f"**Verdict: {verdict}**{code}: {_md(verdict_detail(result))}.", ""]
    return "\n".join(out) + "\n"


__all__ = ["evidence_line", "to_json", "to_markdown", "to_text", "verdict_detail", "verdict_line"]
