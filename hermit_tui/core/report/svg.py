"""The HTML report's plots, drawn as inline SVG straight from the report's numbers (no plotting library, nothing
fetched): means with their 95% intervals, the distribution of per-task mean scores per selector, and the per-task
differences of each paired comparison.

Every string from the data (labels, task ids) is escaped. Colours are CSS classes (``report_html``'s stylesheet
gives them for light and dark), so a plot follows the page's colour scheme. Each plot carries a ``<title>`` and a
``<desc>`` for screen readers, and each mark a ``<title>`` with its figures (shown on hover).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from hermit_tui.core.present import fixed
from hermit_tui.core.safe import html
from hermit_tui.core.stats.figures import PairStats
from hermit_tui.core.stats.selector import SelectorStats

SORTED_BARS_MAX = 120  # up to this many paired tasks, one bar per task; beyond it, a histogram
BINS = 10  # histogram bins of the per-task means
DIFF_BINS = 20  # histogram bins of the per-task differences


def esc(value: object) -> str:
    """Text safe in HTML and SVG, attributes included (``core.safe.html``: escaped, control characters and lone
    surrogates shown as their escape)."""
    return html(value)


def _n(x: float) -> str:
    return f"{x:.1f}".rstrip("0").rstrip(".") if math.isfinite(x) else "0"


_fmt = fixed  # a figure to 3 decimals (or as many as asked), "—" without one


def _short(label: str, limit: int = 14) -> str:
    return label if len(label) <= limit else label[: limit - 1] + "…"


def _ticks(lo: float, hi: float, count: int = 4) -> list[float]:
    return [lo + (hi - lo) * i / count for i in range(count + 1)]


def _open(kind: str, width: int, height: int, title: str, desc: str) -> list[str]:
    return [
        f'<svg class="plot {kind}" viewBox="0 0 {width} {height}" width="100%" role="img" '
        f'preserveAspectRatio="xMidYMid meet" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{esc(title)}</title>",
        f"<desc>{esc(desc)}</desc>",
    ]


def _x_axis(x0: float, x1: float, y: float, lo: float, hi: float, count: int = 4) -> list[str]:
    out = [f'<line class="axis" x1="{_n(x0)}" y1="{_n(y)}" x2="{_n(x1)}" y2="{_n(y)}"/>']
    for v in _ticks(lo, hi, count):
        x = x0 + (v - lo) / (hi - lo) * (x1 - x0)
        out.append(
            f'<line class="axis" x1="{_n(x)}" y1="{_n(y)}" x2="{_n(x)}" y2="{_n(y + 4)}"/>'
            f'<text class="tick" x="{_n(x)}" y="{_n(y + 16)}" text-anchor="middle">{v:g}</text>'
        )
    return out


def _scale(values: Sequence[tuple[float, float]]) -> tuple[float, float]:
    lo = min((v[0] for v in values), default=0.0)
    hi = max((v[1] for v in values), default=1.0)
    return (lo, hi) if hi > lo else (lo - 0.5, hi + 0.5)


def means_plot(selectors: Sequence[SelectorStats]) -> str:
    """One row per selector: its mean score as a dot and its 95% interval as a whisker, on the score scale."""
    width, left, right, row, top = 400, 96, 20, 30, 12
    lo, hi = _scale([s.scale for s in selectors])
    height = top + row * len(selectors) + 30

    def x(v: float) -> float:
        return left + (min(max(v, lo), hi) - lo) / (hi - lo) * (width - left - right)

    out = _open(
        "means",
        width,
        height,
        "Mean score per selector with its 95% interval",
        "; ".join(
            f"{s.label}: mean {_fmt(s.mean)}, 95% interval {_fmt(s.ci_low)} to {_fmt(s.ci_high)}" for s in selectors
        ),
    )
    for v in _ticks(lo, hi):
        out.append(f'<line class="grid" x1="{_n(x(v))}" y1="{top}" x2="{_n(x(v))}" y2="{top + row * len(selectors)}"/>')
    for i, s in enumerate(selectors):
        y = top + row * i + row / 2
        out.append(
            f"<g><title>{esc(s.label)}: mean {_fmt(s.mean, 4)}, 95% interval {_fmt(s.ci_low, 4)} to "
            f"{_fmt(s.ci_high, 4)} ({esc(s.ci_method or 'no interval')})</title>"
            f'<text class="label" x="{left - 8}" y="{_n(y + 4)}" text-anchor="end">'
            f"{esc(_short(s.label, 12))}</text>"
        )
        if s.ci_low is not None and s.ci_high is not None:
            out.append(f'<line class="ci" x1="{_n(x(s.ci_low))}" y1="{_n(y)}" x2="{_n(x(s.ci_high))}" y2="{_n(y)}"/>')
            for end in (s.ci_low, s.ci_high):
                out.append(f'<line class="ci" x1="{_n(x(end))}" y1="{_n(y - 6)}" x2="{_n(x(end))}" y2="{_n(y + 6)}"/>')
        if s.mean is not None:
            out.append(f'<circle class="pt" cx="{_n(x(s.mean))}" cy="{_n(y)}" r="5"/>')
        else:
            out.append(f'<text class="tick" x="{left}" y="{_n(y + 4)}">no attempt</text>')
        out.append("</g>")
    out += _x_axis(left, width - right, top + row * len(selectors) + 2, lo, hi)
    out.append("</svg>")
    return "".join(out)


def _bin(value: float, lo: float, hi: float, bins: int) -> int:
    return min(bins - 1, max(0, int((value - lo) / (hi - lo) * bins + 1e-9)))


def distribution_plot(stats: SelectorStats) -> str:
    """A histogram of one selector's per-task mean scores over its score scale, the mean marked."""
    width, height, left, right, top, bottom = 260, 150, 34, 12, 22, 24
    lo, hi = stats.scale if stats.scale[1] > stats.scale[0] else _scale([stats.scale])
    counts = [0] * BINS
    for ts in stats.per_task.values():
        counts[_bin(ts.mean, lo, hi, BINS)] += 1
    peak = max(counts) or 1
    plot_w, plot_h = width - left - right, height - top - bottom
    out = _open(
        "dist",
        width,
        height,
        f"Per-task mean scores of {stats.label}",
        f"{stats.n_tasks} tasks in {BINS} bins from {lo:g} to {hi:g}: " + ", ".join(map(str, counts)),
    )
    out.append(f'<text class="label" x="{left}" y="14">{esc(_short(stats.label, 30))}</text>')
    out.append(
        f'<text class="tick" x="{left - 4}" y="{top + 4}" text-anchor="end">{peak}</text>'
        f'<text class="tick" x="{left - 4}" y="{top + plot_h}" text-anchor="end">0</text>'
    )
    bw = plot_w / BINS
    for i, c in enumerate(counts):
        if not c:
            continue
        h = c / peak * plot_h
        a, b = lo + (hi - lo) * i / BINS, lo + (hi - lo) * (i + 1) / BINS
        out.append(
            f'<rect class="bar" x="{_n(left + i * bw + 1)}" y="{_n(top + plot_h - h)}" '
            f'width="{_n(bw - 2)}" height="{_n(h)}"><title>{c} task{"s" * (c != 1)} with a mean in '
            f"[{a:g}, {b:g}{']' if i == BINS - 1 else ')'}</title></rect>"
        )
    if stats.mean is not None:
        mx = left + (stats.mean - lo) / (hi - lo) * plot_w
        out.append(
            f'<line class="mean" x1="{_n(mx)}" y1="{top - 4}" x2="{_n(mx)}" y2="{top + plot_h}">'
            f"<title>mean {_fmt(stats.mean, 4)}</title></line>"
        )
    out += _x_axis(left, left + plot_w, top + plot_h, lo, hi, 2)
    out.append("</svg>")
    return "".join(out)


def paired_differences(pair: PairStats, a: SelectorStats, b: SelectorStats) -> list[tuple[str, float]]:
    """(task id, b - a) for every task both selectors attempted, in test order."""
    return [(tid, tb.mean - ta.mean) for tid, ta in a.per_task.items() if (tb := b.per_task.get(tid)) is not None]


def differences_plot(pair: PairStats, a: SelectorStats, b: SelectorStats) -> str:
    """Per-task differences ``b - a``: one bar per task, sorted, up to SORTED_BARS_MAX tasks; a histogram beyond.
    The mean difference and its 95% interval are drawn over them."""
    diffs = paired_differences(pair, a, b)
    lo, hi = pair.scale if pair.scale[1] > pair.scale[0] else (-1.0, 1.0)
    title = f"Per-task differences, {pair.b} minus {pair.a}"
    desc = (
        f"{len(diffs)} paired tasks: {pair.wins} higher, {pair.losses} lower, {pair.ties} tied; mean difference "
        f"{_fmt(pair.mean_diff)}, 95% interval {_fmt(pair.ci_low)} to {_fmt(pair.ci_high)}"
    )
    if len(diffs) <= SORTED_BARS_MAX:
        return _sorted_bars(diffs, pair, lo, hi, title, desc)
    return _diff_histogram(diffs, pair, lo, hi, title, desc)


def _sorted_bars(
    diffs: Sequence[tuple[str, float]], pair: PairStats, lo: float, hi: float, title: str, desc: str
) -> str:
    width, height, left, right, top, bottom = 400, 170, 36, 10, 10, 22
    plot_w, plot_h = width - left - right, height - top - bottom

    def y(v: float) -> float:
        return top + (hi - min(max(v, lo), hi)) / (hi - lo) * plot_h

    out = _open("diffs", width, height, title, desc)
    for v in _ticks(lo, hi):
        out.append(
            f'<line class="grid" x1="{left}" y1="{_n(y(v))}" x2="{left + plot_w}" y2="{_n(y(v))}"/>'
            f'<text class="tick" x="{left - 4}" y="{_n(y(v) + 4)}" text-anchor="end">{v:g}</text>'
        )
    if pair.ci_low is not None and pair.ci_high is not None:
        out.append(
            f'<rect class="band" x="{left}" y="{_n(y(pair.ci_high))}" width="{plot_w}" '
            f'height="{_n(max(y(pair.ci_low) - y(pair.ci_high), 1))}"><title>95% interval of the mean '
            f"difference: {_fmt(pair.ci_low, 4)} to {_fmt(pair.ci_high, 4)}</title></rect>"
        )
    ordered = sorted(diffs, key=lambda item: (-item[1], item[0]))
    bw = plot_w / max(len(ordered), 1)
    zero = y(0.0) if lo <= 0 <= hi else y(lo)
    for i, (tid, d) in enumerate(ordered):
        top_y, bottom_y = sorted((y(d), zero))
        kind = "pos" if d > 1e-9 else "neg" if d < -1e-9 else "tie"
        out.append(
            f'<rect class="bar {kind}" x="{_n(left + i * bw + bw * 0.1)}" y="{_n(top_y)}" '
            f'width="{_n(max(bw * 0.8, 0.5))}" height="{_n(max(bottom_y - top_y, 1))}">'
            f"<title>{esc(tid)}: {d:+.4f}</title></rect>"
        )
    out.append(f'<line class="axis" x1="{left}" y1="{_n(zero)}" x2="{left + plot_w}" y2="{_n(zero)}"/>')
    if pair.mean_diff is not None:
        out.append(
            f'<line class="mean" x1="{left}" y1="{_n(y(pair.mean_diff))}" x2="{left + plot_w}" '
            f'y2="{_n(y(pair.mean_diff))}"><title>mean difference {_fmt(pair.mean_diff, 4)}</title></line>'
        )
    out.append(
        f'<text class="tick" x="{left}" y="{height - 6}">tasks, sorted by {esc(_short(pair.b))} − '
        f"{esc(_short(pair.a))}</text></svg>"
    )
    return "".join(out)


def _diff_histogram(
    diffs: Sequence[tuple[str, float]], pair: PairStats, lo: float, hi: float, title: str, desc: str
) -> str:
    width, height, left, right, top, bottom = 400, 170, 36, 10, 10, 28
    plot_w, plot_h = width - left - right, height - top - bottom
    counts = [0] * DIFF_BINS
    for _, d in diffs:
        counts[_bin(d, lo, hi, DIFF_BINS)] += 1
    peak = max(counts) or 1

    def x(v: float) -> float:
        return left + (min(max(v, lo), hi) - lo) / (hi - lo) * plot_w

    out = _open("diffs", width, height, title, desc + "; counts per bin: " + ", ".join(map(str, counts)))
    if pair.ci_low is not None and pair.ci_high is not None:
        out.append(
            f'<rect class="band" x="{_n(x(pair.ci_low))}" y="{top}" '
            f'width="{_n(max(x(pair.ci_high) - x(pair.ci_low), 1))}" height="{plot_h}"><title>95% interval '
            f"of the mean difference: {_fmt(pair.ci_low, 4)} to {_fmt(pair.ci_high, 4)}</title></rect>"
        )
    bw = plot_w / DIFF_BINS
    for i, c in enumerate(counts):
        if not c:
            continue
        h = c / peak * plot_h
        a, b = lo + (hi - lo) * i / DIFF_BINS, lo + (hi - lo) * (i + 1) / DIFF_BINS
        kind = "pos" if a >= 0 else "neg" if b <= 0 else "tie"
        out.append(
            f'<rect class="bar {kind}" x="{_n(left + i * bw + 1)}" y="{_n(top + plot_h - h)}" '
            f'width="{_n(bw - 2)}" height="{_n(h)}"><title>{c} task{"s" * (c != 1)} with a difference in '
            f"[{a:g}, {b:g}{']' if i == DIFF_BINS - 1 else ')'}</title></rect>"
        )
    out.append(f'<text class="tick" x="{left - 4}" y="{top + 4}" text-anchor="end">{peak}</text>')
    if lo <= 0 <= hi:
        out.append(f'<line class="axis" x1="{_n(x(0))}" y1="{top}" x2="{_n(x(0))}" y2="{top + plot_h}"/>')
    if pair.mean_diff is not None:
        out.append(
            f'<line class="mean" x1="{_n(x(pair.mean_diff))}" y1="{top}" x2="{_n(x(pair.mean_diff))}" '
            f'y2="{top + plot_h}"><title>mean difference {_fmt(pair.mean_diff, 4)}</title></line>'
        )
    out += _x_axis(left, left + plot_w, top + plot_h, lo, hi)
    out.append("</svg>")
    return "".join(out)


__all__ = ["SORTED_BARS_MAX", "differences_plot", "distribution_plot", "esc", "means_plot", "paired_differences"]
