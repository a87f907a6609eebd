"""core/present.py: the one place hermit-tui words a cost, a p-value, an interval and an evaluation's caveats. Each
rule is checked on values worked out by hand, and every view that states it is checked to use these words."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from hermit_tui.core import present as p


@pytest.mark.parametrize("cost", [None, math.nan, math.inf])
def test_an_unknown_cost_is_never_0(cost):
    assert p.cost_text(cost) == "unknown" and p.cost_cell(cost) == "unknown"


def test_costs_keep_their_decimals():
    assert (p.cost_text(0.01234), p.cost_cell(0.01234), p.cost_text(0.0)) == ("$0.0123", "0.0123", "$0.0000")
    assert (p.money(0.8), p.money(2.1), p.money(1234.5)) == ("$0.8000", "$2.10", "$1,234.50")


def test_a_sum_of_costs_names_the_attempts_it_leaves_out():
    assert p.known_cost_text(0.5, 0) == "$0.5000 known"
    assert p.known_cost_text(0.5, 3) == "$0.5000 known + 3 unknown"
    assert p.partial_cost(0.5, 0) == "$0.5000" and p.partial_cost(0.5, 2, dollars=False) == "0.5000 + 2 unknown"
    assert p.partial_cost(None, 3) == "unknown (3 attempts)" and p.partial_cost(None, 1) == "unknown (1 attempt)"
    # every attempt without a cost: no known part to show, whatever the (zero) known sum says
    assert p.partial_cost(0.0, 3, attempts=3) == "unknown (3 attempts)"
    assert p.partial_cost(0.0, 2, attempts=3) == "$0.0000 + 2 unknown"
    assert p.partial_cost(0.0, 0, attempts=0) == "$0.0000"


def test_the_live_cost_projects_the_known_mean_over_the_expected_attempts():
    # 4 of 10 done for $0.84: $0.21 each, so $2.10 at the end
    assert p.projected_cost(0.84, 4, 10) == pytest.approx(2.10)
    assert p.projected_cost(0.84, 0, 10) is None
    assert p.cost_phrase(0.84, 1, 4, 10, running=True) == "$0.8400 + 1 unknown so far · ~$2.10 at the end"
    assert p.cost_phrase(0.0, 4, 4, 10, running=True) == "unknown (4 attempts) so far"  # not "$0.0000 so far"


@pytest.mark.parametrize(
    ("value", "text", "cell"),
    [
        (0.3149, "p = 0.31", "0.315"),
        (0.046, "p = 0.046", "0.046"),
        (0.0502, "p = 0.0502", "0.0502"),  # never rounded onto 0.05
        (0.0496, "p = 0.0496", "0.0496"),
        (0.0004, "p < 0.001", "< 0.001"),
        (None, "p —", "—"),
    ],
)
def test_p_values_never_round_onto_005(value, text, cell):
    assert p.p_text(value) == text and p.p_value(value) == cell


def test_figures_and_intervals():
    assert (p.fixed(0.12345), p.fixed(0.12345, 4), p.fixed(None)) == ("0.123", "0.1235", "—")
    assert p.interval_text(0.1, 0.4) == "0.100 to 0.400" and p.interval_text(None, 0.4) == "—"
    assert (p.short_num(0.004), p.short_num(-0.25), p.short_num(0.0)) == ("0.004", "-0.25", "0.00")


def test_an_interval_in_a_sentence_prints_both_ends_alike_and_no_end_that_is_not_0_as_0():
    assert p.short_interval(0.2, 0.53) == "0.20 to 0.53"
    assert p.short_interval(-0.0048, 0.83) == "-0.005 to 0.830"  # each end alone: "-0.0048 to 0.83"
    assert p.short_interval(0.00004, 0.2) == "0.00004 to 0.20000"
    assert p.short_interval(0.0, 0.25) == "0.00 to 0.25"  # a true 0 stays 0
    assert p.short_interval(-1e-9, 0.5) == "-0.000000 to 0.500000"  # at most six decimals


def test_caveats_come_most_serious_first_and_say_why():
    assert p.caveats() == []
    got = p.caveats(smoke_limit=2, done=3, expected=6, complete=False, cancelled=True, retries=1)
    assert got == [
        "smoke subset of 2 tasks: a wiring check, not an evaluation",
        "incomplete: 3 of 6 attempts, cancelled; it cannot be published",
        "1 attempt re-run after failing: re-running only failures can bias the mean",
    ]
    assert p.caveats(smoke=True) == ["smoke subset: a wiring check, not an evaluation"]
    assert p.incomplete_caveat() == "incomplete: not every attempt finished; it cannot be published"


def test_no_view_writes_the_cost_rule_out_again():
    """The wording lives in present.py: no other module spells an unknown cost or a caveat by hand."""
    package = Path(p.__file__).resolve().parent.parent
    rules = [
        re.compile(r'"unknown" if [\w.]*cost'),
        re.compile(r"\$\{[\w.]*cost[\w.]*:\.4f\}"),
        re.compile("re-running only failures can bias the mean"),
        re.compile("a wiring check, not an evaluation"),
    ]
    offenders = [
        f"{path.relative_to(package)}: {rule.pattern}"
        for path in sorted(package.rglob("*.py"))
        if path.name != "present.py"
        for rule in rules
        if rule.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_one_mean_prints_alike_however_it_was_summed():
    """27/80 summed in two orders gives two neighbouring floats: each prints 0.338 (the fixed design of the display
    rounds to 10 decimals first), where f"{x:.3f}" printed 0.337 for one and 0.338 for the other."""
    below, above = 0.33749999999999991, 0.33750000000000002
    assert below != above and f"{below:.3f}" != f"{above:.3f}"  # the problem, as it was
    assert p.fixed(below) == p.fixed(above) == "0.338"
    assert p.fixed(None) == p.NO_DATA and p.fixed(0.1234567, 4) == "0.1235" and p.fixed(-0.0004) == "-0.000"
    assert p.interval_text(below, above) == "0.338 to 0.338"
