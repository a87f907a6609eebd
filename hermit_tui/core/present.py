"""Domain wording: how hermit-tui says a cost, an interval, a p-value and the caveats of an evaluation.

One place, so that the report (Markdown and HTML), the card and its publish plan, the gate's lines, the CLI's
progress, the banners and the screens say the same thing the same way. Plain text only (no Rich, no Textual): a view
styles what it gets. The rules these functions keep:

- an unknown cost is never $0: it reads "unknown", and a sum of costs names the attempts whose cost is unknown;
- a p-value near 0.05 is never rounded onto it (``p = 0.0502``, not ``p = 0.050``);
- a caveat names what it is about and why it matters, in one sentence.
"""

from __future__ import annotations

import math
from typing import Any

UNKNOWN = "unknown"
NO_DATA = "—"
#: A card row whose evaluation recorded no protocol fingerprint (nothing to compare it with final by)
NO_FINGERPRINT = "no protocol fingerprint"


# ---------------------------------------------------------------------------------------------------- costs


def money(value: float) -> str:
    """Dollars: cents from $1 up, four decimals below (the demo's attempts cost fractions of a cent)."""
    return f"${value:,.2f}" if abs(value) >= 1 else f"${value:.4f}"


def cost_text(cost: float | None) -> str:
    """One attempt's (or one summary's) cost: ``$0.0123``, or ``unknown`` when nobody reported it (never $0)."""
    return UNKNOWN if cost is None or not math.isfinite(cost) else f"${cost:.4f}"


def cost_cell(cost: float | None) -> str:
    """A cost in a table whose column says USD (hermit's card table): ``0.0123``, or ``unknown``."""
    return UNKNOWN if cost is None or not math.isfinite(cost) else f"{cost:.4f}"


def partial_cost(known: float | None, unknown: int, *, dollars: bool = True, attempts: int | None = None) -> str:
    """A sum of costs over attempts that says what it leaves out: ``$0.1234``, ``$0.1234 + 3 unknown``, and
    ``unknown (3 attempts)`` when the sum itself is unknown (``known`` None, or every one of ``attempts`` lacks a
    cost: no known part to show). ``dollars=False`` for a table whose column says USD."""
    if known is None or (attempts is not None and unknown and unknown >= attempts):
        return f"{UNKNOWN} ({plural(unknown, 'attempt')})"
    return (f"${known:.4f}" if dollars else f"{known:.4f}") + (f" + {unknown} {UNKNOWN}" if unknown else "")


def known_cost_text(known: float, unknown: int) -> str:
    """A sum of costs that says what it leaves out: ``$0.1234 known``, ``$0.1234 known + 3 unknown``."""
    return f"${known:.4f} known" + (f" + {unknown} {UNKNOWN}" if unknown else "")


def projected_cost(known: float, done: int, expected: int) -> float | None:
    """The known cost at completion if the remaining attempts cost what the finished ones did on average (unknown
    ones included in the average's denominator as they will be among the remaining); None before any attempt."""
    if done <= 0 or expected <= 0:
        return None
    return known * max(expected, done) / done


def cost_phrase(known: float, unknown: int, done: int, expected: int, *, running: bool) -> str:
    """ "$0.84 + 3 unknown so far · ~$2.10 at the end": what a live view says about a launch's cost, in the words of
    every other sum of costs (``partial_cost``: "$X + N unknown", "unknown (N attempts)")."""
    if done == 0:
        return "no attempt finished yet"
    so_far = " so far" if running else ""
    if unknown >= done:
        return f"{UNKNOWN} ({plural(unknown, 'attempt')}){so_far}"
    parts = [money(known) + (f" + {unknown} {UNKNOWN}" if unknown else "") + so_far]
    end = projected_cost(known, done, expected)
    if running and end is not None and done < expected:
        parts.append(f"~{money(end)} at the end")
    return " · ".join(parts)


# ---------------------------------------------------------------------------------------------------- figures


def tokens_text(tokens: Any) -> str:
    """An attempt's token counts as hermit records them (a mapping, a number, or nothing reported)."""
    if tokens is None:
        return "not reported"
    if isinstance(tokens, dict):
        return " · ".join(f"{k} {v}" for k, v in tokens.items()) or "not reported"
    return str(tokens)


def fixed(x: float | None, digits: int = 3) -> str:
    """A figure to ``digits`` decimals, or ``—``; the same for the same number however it was summed: the value is
    first rounded to 10 decimals, so that two neighbouring floats of one mean (27/80 summed in two orders:
    0.33749999999999991 and 0.33750000000000002) print alike, not as 0.337 on one screen and 0.338 on the next."""
    return NO_DATA if x is None else f"{round(x, 10):.{digits}f}"


def short_num(x: float) -> str:
    """A difference in a sentence: two significant digits when it is tiny, else two decimals."""
    return f"{x:.2g}" if 0 < abs(x) < 0.01 else f"{x:.2f}"


def short_interval(low: float, high: float) -> str:
    """An interval in a sentence, both ends to the same decimals: two, or as many more (up to six) as it takes for no
    end that is not 0 to print as 0 (``-0.005 to 0.830``, where each end alone would read ``-0.0048 to 0.83``)."""
    digits = 2
    while digits < 6 and any(x and round(x, digits) == 0 for x in (low, high)):
        digits += 1
    return f"{low:.{digits}f} to {high:.{digits}f}"


def interval_text(low: float | None, high: float | None, digits: int = 3) -> str:
    """``0.120 to 0.400``, or ``—`` without an interval."""
    return NO_DATA if low is None or high is None else f"{fixed(low, digits)} to {fixed(high, digits)}"


def p_text(p: float | None) -> str:
    """``p = 0.31``, ``p = 0.046``, ``p < 0.001``; never a rounded 0.05 (``p = 0.0502``); ``p —`` without a test."""
    if p is None:
        return f"p {NO_DATA}"
    if p < 0.001:
        return "p < 0.001"
    if 0.0495 <= p < 0.0505:
        return f"p = {p:.4f}"
    return f"p = {p:.3f}" if p < 0.1 else f"p = {p:.2f}"


def p_value(p: float | None) -> str:
    """A p-value in a table cell: ``0.031``, ``< 0.001``, ``0.0502`` near 0.05, ``—``."""
    if p is None:
        return NO_DATA
    return "< 0.001" if p < 0.001 else f"{p:.4f}" if 0.0495 <= p < 0.0505 else f"{p:.3f}"


#: The test printed beside a pair's interval, in words: it tests that interval's null, so the two cannot disagree
INTERVAL_TEST = (
    "test of the interval's null (mean difference 0): the smallest alpha whose interval excludes 0, so p < 0.05 "
    "exactly when the 95% interval excludes 0"
)
#: The secondary test of a pair: another hypothesis than the interval's, labelled as such wherever it is shown
SHARP_TEST = "the sharp null that on every task the two selectors' attempts are interchangeable"
#: The row or line that shows the secondary test's p-value
SHARP_TEST_ROW = "sharp-null test p (secondary)"
INTERVAL_INCLUDES_0 = "the 95% interval includes 0 (so its test's p is not below 0.05)"
#: Why no minimum detectable difference or tasks-needed figure is shown for a sample without spread
NO_SPREAD_POWER = (
    "Every paired task shows the same difference: with no spread to project from, no minimum detectable "
    "difference or tasks-needed figure is shown."
)


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' * (n != 1)}"


# ---------------------------------------------------------------------------------------------------- caveats


def smoke_caveat(limit: int | None) -> str:
    """A smoke subset (``--limit N``) is never an evaluation."""
    return f"smoke subset{' of ' + plural(limit, 'task') if limit else ''}: a wiring check, not an evaluation"


def incomplete_caveat(done: int | None = None, expected: int | None = None, *, cancelled: bool = False) -> str:
    """An evaluation that did not finish: its figures cover part of the protocol, and it cannot be published."""
    counted = (
        f"{done} of {plural(expected, 'attempt')}" if done is not None and expected else "not every attempt finished"
    )
    return f"incomplete: {counted}{', cancelled' if cancelled else ''}; it cannot be published"


def retry_caveat(retries: int) -> str:
    """Re-running only the failed attempts can bias a mean upwards."""
    return f"{plural(retries, 'attempt')} re-run after failing: re-running only failures can bias the mean"


SEQUENTIAL_CAVEAT = (
    "a stop-when-decided launch stopped on what it saw: its decisions use the sequential test's "
    "repeated intervals; the fixed design's figures do not account for the stopping"
)


def caveats(
    *,
    smoke_limit: int | None = None,
    smoke: bool = False,
    done: int | None = None,
    expected: int | None = None,
    complete: bool = True,
    cancelled: bool = False,
    retries: int | None = None,
) -> list[str]:
    """Every caveat of one evaluation, most serious first: a smoke subset (``smoke`` or a ``smoke_limit``), an
    incomplete or cancelled run, retried attempts. A view prefixes each with the evaluation's name."""
    out = []
    if smoke or smoke_limit is not None:
        out.append(smoke_caveat(smoke_limit))
    if not complete or cancelled:
        out.append(incomplete_caveat(done, expected, cancelled=cancelled))
    if retries:
        out.append(retry_caveat(retries))
    return out


__all__ = [
    "INTERVAL_INCLUDES_0",
    "INTERVAL_TEST",
    "NO_DATA",
    "NO_SPREAD_POWER",
    "SHARP_TEST",
    "SHARP_TEST_ROW",
    "NO_FINGERPRINT",
    "SEQUENTIAL_CAVEAT",
    "UNKNOWN",
    "caveats",
    "cost_cell",
    "cost_phrase",
    "cost_text",
    "fixed",
    "incomplete_caveat",
    "interval_text",
    "known_cost_text",
    "partial_cost",
    "money",
    "p_text",
    "p_value",
    "plural",
    "projected_cost",
    "retry_caveat",
    "short_interval",
    "short_num",
    "smoke_caveat",
    "tokens_text",
]
