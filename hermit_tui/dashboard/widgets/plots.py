"""The compare screen's plots (plotext, through textual-plotext's ``PlotextPlot``) and the series they draw.

The series are computed by the plain functions below, off the event loop (they call ``core.stats.figures``); a plot
widget keeps what it was given in ``.data`` and turns it into plotext calls when it is painted, in the current theme's
colours so that dark and light themes both read. Long series are thinned to what a terminal can show.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual.color import Color
from textual_plotext import PlotextPlot

from hermit_tui.core.records.index import Snapshot
from hermit_tui.core.stats.selector import SelectorStats

CHECKPOINTS = 20  # points of the running mean
MAX_BARS = 120  # per-task differences drawn as at most this many bars (evenly spaced ranks of the sorted list)
BINS = 10


# ---------------------------------------------------------------------------------------------------- series


@dataclass(frozen=True)
class Histogram:
    """Counts of per-task mean scores in equal bins from ``edges[0]`` to ``edges[-1]`` (the last bin is closed)."""

    edges: list[float]
    counts: dict[str, list[int]]


@dataclass(frozen=True)
class MeanCI:
    label: str
    mean: float | None
    low: float | None
    high: float | None
    method: str | None = None  # the interval's method: "t", "score" or "no-spread" (core.stats.intervals)


@dataclass(frozen=True)
class RunningPoint:
    """The mean and its clustered 95% interval after the first ``n`` attempts (in arrival order)."""

    n: int
    mean: float | None
    low: float | None
    high: float | None
    method: str | None = None


def methods_used(methods) -> str:
    """The interval methods of a plot's series, in order of appearance: "score", "score, then t"."""
    used = list(dict.fromkeys(m for m in methods if m))
    return ", then ".join(used) if used else "none yet"


def task_means(stats: SelectorStats) -> list[float]:
    return [ts.mean for ts in stats.per_task.values()]


def histogram(values: dict[str, list[float]], bins: int = BINS) -> Histogram:
    """Bin each label's values on common edges spanning [0, 1] and whatever falls outside it."""
    flat = [v for vs in values.values() for v in vs]
    lo, hi = min([0.0, *flat]), max([1.0, *flat])
    width = (hi - lo) / bins
    edges = [lo + i * width for i in range(bins)] + [hi]
    counts = {}
    for label, vs in values.items():
        row = [0] * bins
        for v in vs:
            row[min(int((v - lo) / width), bins - 1)] += 1
        counts[label] = row
    return Histogram(edges, counts)


def checkpoints(n: int, k: int = CHECKPOINTS) -> list[int]:
    """About ``k`` attempt counts from 1 to ``n``, evenly spread and ending at ``n``."""
    return sorted({max(1, math.ceil(n * i / k)) for i in range(1, k + 1)}) if n else []


def running_series(
    label: str, records: Sequence[Any] | Snapshot, task_ids: Sequence[str] | None, k: int = CHECKPOINTS
) -> list[RunningPoint]:
    """The running mean with its clustered interval at ``checkpoints(len(records))``, records in arrival order."""
    from hermit_tui.core.stats.selector import selector_stats

    out = []
    for n in checkpoints(len(records), k):
        s = selector_stats(label, records[:n], task_ids)
        out.append(RunningPoint(n, s.mean, s.ci_low, s.ci_high, s.ci_method))
    return out


def sorted_differences(a: SelectorStats, b: SelectorStats) -> list[tuple[str, float]]:
    """(task, b's mean - a's mean) for the tasks both attempted, smallest difference first (ties by task)."""
    diffs = [(t, b.per_task[t].mean - ts.mean) for t, ts in a.per_task.items() if t in b.per_task]
    return sorted(diffs, key=lambda d: (d[1], d[0]))


def thin(items: Sequence[Any], limit: int) -> list[Any]:
    """At most ``limit`` items at evenly spaced positions, the first and the last included."""
    n = len(items)
    if n <= limit:
        return list(items)
    return [items[round(i * (n - 1) / (limit - 1))] for i in range(limit)]


def int_ticks(top: int, start: int = 0, most: int = 6) -> list[int]:
    """Whole-number ticks from ``start`` to at least ``top``, at most about ``most`` of them."""
    step = max(1, math.ceil((top - start) / (most - 1)))
    return list(range(start, max(top, start) + 1, step))


def nice_ticks(lo: float, hi: float, most: int = 6) -> list[float]:
    """Round ticks (steps of 1, 2, 2.5 or 5 times a power of ten) covering [lo, hi], at most about ``most``."""
    span = hi - lo
    if not math.isfinite(span) or span <= 0:
        return [lo]
    base = 10 ** math.floor(math.log10(span / most))
    step = next(m * base for m in (1, 2, 2.5, 5, 10) if span / (m * base) <= most - 1)
    first = math.ceil(lo / step - 1e-9)
    return [round(i * step, 10) for i in range(first, math.floor(hi / step + 1e-9) + 1)]


# ---------------------------------------------------------------------------------------------------- widgets


class StatPlot(PlotextPlot):
    """A plot of ``data`` (None: nothing yet), redrawn when painted after the data or the theme changed."""

    EMPTY = "No attempts yet"

    def __init__(self, *, id: str | None = None, classes: str | None = None):
        super().__init__(id=id, classes=classes)
        self.data: Any = None
        self._drawn: tuple | None = None  # (data, theme) the plotext figure was configured for
        self._built: tuple | None = None  # ((data, theme, size), the text built from it)

    def show(self, data: Any) -> None:
        self.data = data
        self._drawn = self._built = None
        self.refresh()

    def colour(self, name: str) -> tuple[int, int, int]:
        """A theme colour (``primary``, ``accent``, ``success``, ``error``, ``foreground``...) as RGB."""
        value = self.app.theme_variables.get(name) or self.app.theme_variables["foreground"]
        return Color.parse(value).rgb

    def series_colours(self) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        return self.colour("primary"), self.colour("accent")

    def render(self):
        """Build the plot only when its data, the theme or the size changed (a build takes tens of ms)."""
        key = (id(self.data), self.app.theme)
        built = (key, self.size)
        if self._built is not None and self._built[0] == built:
            return self._built[1]
        try:
            if self._drawn != key:
                plt = self.plt
                plt.clear_figure()
                if self.data is None:
                    plt.title(self.EMPTY)
                else:
                    self.draw(plt, self.data)
                self._drawn = key
            text = super().render()
        except Exception as exc:  # plotext fails on some shapes and sizes: say so rather than crash the screen
            self._drawn = None
            text = Text(f"The plot cannot be drawn here ({type(exc).__name__}); the Numbers tab has the figures.")
        self._built = (built, text)
        return text

    def draw(self, plt: Any, data: Any) -> None:
        """Configure plotext's figure for ``data`` (never None: the empty plot says EMPTY)."""
        raise NotImplementedError


class DistributionPlot(StatPlot):
    """Histogram of the per-task mean scores, the two selectors side by side in each bin."""

    data: Histogram | None

    def draw(self, plt: Any, data: Histogram) -> None:
        h = data
        labels = list(h.counts)
        ticks = [f"{lo:.2g}" for lo in h.edges[:-1]]
        colours = list(self.series_colours())[: len(labels)]
        plt.multiple_bar(ticks, [h.counts[k] for k in labels], labels=labels, color=colours)
        top = max((max(c) for c in h.counts.values()), default=0)
        plt.xlim(0.4, len(ticks) + 0.6)
        plt.ylim(0, top * 1.35 + 0.5)  # room for the legend above the bars
        plt.yticks(int_ticks(top))
        plt.title("Per-task mean score: number of tasks in each bin")
        plt.xlabel(f"task mean score (bins {h.edges[1] - h.edges[0]:.2g} wide, from each label)")


class MeansPlot(StatPlot):
    """Each selector's mean (●) on its 95% interval (a horizontal line)."""

    data: list[MeanCI] | None

    def draw(self, plt: Any, data: list[MeanCI]) -> None:
        ys = list(range(len(data), 0, -1))
        for y, m, colour in zip(ys, data, self.series_colours()):
            if m.low is not None:
                plt.plot([m.low, m.high], [y, y], color=colour, marker="─")
                plt.scatter([m.low, m.high], [y, y], color=colour, marker="┃")
            if m.mean is not None:
                plt.scatter([m.mean], [y], color=colour, marker="●")
        plt.yticks(ys, [m.label for m in data])
        values = [v for m in data for v in (m.mean, m.low, m.high) if v is not None]
        if values:
            plt.xticks(nice_ticks(min(values), max(values)))
        plt.ylim(0.5, len(data) + 0.5)
        methods = "; ".join(f"{m.label}: {m.method}" for m in data if m.method)
        plt.title(f"Mean score (mean of task means) with its 95% interval ({methods or 'no interval'})")


class DifferencesPlot(StatPlot):
    """Per-task differences (b - a), sorted, as bars: above 0 where b did better."""

    data: tuple[str, str, list[tuple[str, float]]] | None  # (a, b, sorted differences)

    def draw(self, plt: Any, data: tuple[str, str, list[tuple[str, float]]]) -> None:
        a, b, diffs = data
        if not diffs:
            plt.title(f"No task has attempts from both {a} and {b}")
            return
        shown = thin(list(enumerate(diffs, 1)), MAX_BARS)
        up = [(i, d) for i, (_, d) in shown if d > 0]
        down = [(i, d) for i, (_, d) in shown if d < 0]
        for bars, colour in ((up, self.colour("success")), (down, self.colour("error"))):
            if bars:
                plt.bar([i for i, _ in bars], [d for _, d in bars], color=colour, width=0.8, reset_ticks=False)
        plt.horizontal_line(0, color=self.colour("foreground"))
        plt.xlim(0.5, len(diffs) + 0.5)
        plt.xticks(int_ticks(len(diffs), start=1))
        lo, hi = min(0.0, diffs[0][1]), max(0.0, diffs[-1][1])
        plt.ylim(lo - 0.05, hi + 0.05)
        plt.yticks(nice_ticks(lo, hi))
        plt.title(f"{b} − {a} per task, sorted ({len(diffs)} tasks)")
        plt.xlabel("tasks, by difference")


class RunningPlot(StatPlot):
    """The running mean (line) and its 95% interval (dotted) over attempts, per selector."""

    data: dict[str, list[RunningPoint]] | None

    def draw(self, plt: Any, data: dict[str, list[RunningPoint]]) -> None:
        for (label, points), colour in zip(data.items(), self.series_colours()):
            pts = [p for p in points if p.mean is not None]
            if not pts:
                continue
            plt.plot([p.n for p in pts], [p.mean for p in pts], color=colour, marker="hd", label=label)
            ci = [p for p in pts if p.low is not None]
            if ci:
                plt.plot([p.n for p in ci], [p.low for p in ci], color=colour, marker="·")
                plt.plot([p.n for p in ci], [p.high for p in ci], color=colour, marker="·")
        last = max((p.n for pts in data.values() for p in pts), default=1)
        plt.xlim(0, last)
        plt.xticks(int_ticks(last))
        values = [v for pts in data.values() for p in pts for v in (p.mean, p.low, p.high) if v is not None]
        if values:
            plt.yticks(nice_ticks(min(values), max(values)))
        methods = methods_used(p.method for pts in data.values() for p in pts)
        plt.title(f"Running mean with its 95% interval ({methods}) as attempts arrive")
        plt.xlabel("attempts")


@dataclass(frozen=True)
class BoundarySeries:
    """A stop-when-decided pair: the critical |z| of each planned round and the z observed at each round run."""

    label: str  # "final − none"
    boundaries: list[float]  # rounds 1..R (inf: nothing spent at that round)
    observed: list[float | None]  # rounds run so far
    unit: str = "round"  # what the x axis counts: "look" when the first round is looked at batch by batch


class BoundaryPlot(StatPlot):
    """The group-sequential boundary (±critical z, ▬, per planned round) and the z observed at each round run (●):
    a candidate is decided once its observed z lies beyond the boundary (or, with a margin, once its interval lies
    within the margin). Marks only, no lines: rounds are discrete looks."""

    EMPTY = "No round checked yet"
    TOP = 8.0  # |z| drawn up to this (larger boundaries and observations sit at the edge)

    data: BoundarySeries | None

    def draw(self, plt: Any, data: BoundarySeries) -> None:
        d = data
        finite = [(r, c) for r, c in enumerate(d.boundaries, 1) if math.isfinite(c)]
        seen = [(r, z) for r, z in enumerate(d.observed, 1) if z is not None]
        top = min(self.TOP, max([2.5, *(c for _, c in finite), *(abs(z) for _, z in seen if math.isfinite(z))]))
        top = math.ceil(top + 0.5)

        def clip(v: float) -> float:
            return max(-top, min(top, v))

        edge = self.colour("error")
        if finite:
            xs = [r for r, _ in finite]
            plt.scatter(xs, [clip(c) for _, c in finite], color=edge, marker="▬")
            plt.scatter(xs, [clip(-c) for _, c in finite], color=edge, marker="▬")
        plt.horizontal_line(0, color=self.colour("foreground"))
        if seen:
            plt.scatter([r for r, _ in seen], [clip(z) for _, z in seen], color=self.colour("primary"), marker="●")
        rounds = len(d.boundaries)
        plt.xlim(0.5, rounds + 0.5)
        plt.xticks(int_ticks(rounds, start=1))
        plt.ylim(-top - 0.5, top + 0.5)
        plt.yticks(nice_ticks(-top, top))
        none = len(d.boundaries) - len(finite)
        plt.title(
            f"{d.label}: observed z (●) against the boundary ±z (▬) at each {d.unit}"
            + (f"; {d.unit}s 1-{none} spend nothing (no boundary)" if none else "")
        )
        plt.xlabel(f"{d.unit} (|z| drawn up to the edge)")
