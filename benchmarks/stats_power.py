"""bench_stats.py's power section: the power figures of ``core.stats.power`` (the MDE, ``power_at``, "tasks needed")
checked against their claims on the issue-25 grid's law (:mod:`stats_grid`), its cells run on :data:`WORKERS`
processes, each from its own seed.

    python benchmarks/bench_stats.py --only power [--reps N] [--quick] [--markdown PATH]
"""

from __future__ import annotations

import math
import time

import numpy as np
import synth
from stats_grid import GRID_DELTA, GRID_KAPPA, GRID_MU, GRID_REPEATS, GRID_T, SEED, grid_cell, grid_data, observed_half

from hermit_tui.core.stats.intervals import attempts_cap, pair_bounds


def model_power(ma, mb, ka: int, kb: int, d: float, sets: int) -> float:
    """The mean over the first ``sets`` data sets with a spread of the power ``PairStats.power_at(d)`` gives: the
    pair interval's power simulated under the model fitted to each data set (``core.stats.power``)."""
    from hermit_tui.core.stats.power import fit_power_model

    g = ma.shape[-1]
    live = np.flatnonzero(np.ptp(mb - ma, axis=-1) > 1e-12)[:sets]
    powers = []
    for i in live.tolist():
        model = fit_power_model(ma[i], mb[i], np.full(g, ka), np.full(g, kb))
        if model is not None:
            powers.append(model.power(d))
    return float(np.mean(powers)) if powers else math.nan


def mde_cell(rng, n, g, mu, kappa, delta, ka, kb, mde_sets: int = 40) -> dict:
    """The minimum detectable difference's own claim, checked: on data sets of the cell, the MDE each data set's
    figures give and the side it is for (``PairStats.mde``: for pass/fail scores the pair interval's power simulated
    under the model fitted to the data set, ``core.stats.power``, on the first ``mde_sets`` data sets; and on all ``n``
    the closed form it replaced, the interval's half-width on the observed side, the larger at a tie, plus t(0.80,
    T-1) x se). Then per side with at least a quarter of the data sets: ``n`` fresh data sets at a true difference of
    the median of that side's MDEs, moved to that side, and the share whose interval excludes 0 on it: the power the
    MDE claims is 0.80. A data set whose simulated power stays under 0.80 over the whole room counts as an MDE of
    infinity (``unreachable``: their share); no power where the median leaves the room."""
    from scipy.special import stdtrit

    from hermit_tui.core.stats.power import fit_power_model

    ma, mb, _, _ = grid_data(rng, n, g, mu, kappa, delta, ka, kb)
    cap_a, cap_b = attempts_cap(np.full(g, ka)), attempts_cap(np.full(g, kb))
    low, high, _ = pair_bounds(ma, mb, cap_a, cap_b)
    diffs = mb - ma
    dbar, se = diffs.mean(1), diffs.std(1, ddof=1) / math.sqrt(g)
    half = observed_half(dbar, low, high)
    live = se > 0  # no MDE from zero spread
    sims: list[tuple[int, float]] = []
    for i in np.flatnonzero(np.ptp(diffs, axis=1) > 1e-12)[:mde_sets].tolist():
        model = fit_power_model(ma[i], mb[i], np.full(g, ka), np.full(g, kb))
        if model is not None:
            found = model.mde()
            sims.append((model.side, math.inf if found is None else found))
    closed_side = np.where(dbar >= 0, 1, -1)[live]  # (at a tie, either side: the larger half-width)
    closed = list(zip(closed_side.tolist(), (half[live] + stdtrit(g - 1, 0.8) * se[live]).tolist()))
    out: dict = {"unreachable": float(np.mean([math.isinf(m) for _, m in sims])) if sims else math.nan}
    for what, by_side in (("sim", sims), ("closed", closed)):
        for side in (1, -1):
            values = [m for s, m in by_side if s == side]
            if len(values) < max(3, len(by_side) // 4):
                continue
            m = float(np.median(values))
            room = 1 - mu if side > 0 else mu
            key = f"{what}{'+' if side > 0 else '-'}"
            out[f"{key}_mde"] = m
            if math.isfinite(m) and m <= room:
                ma2, mb2, _, d = grid_data(rng, n, g, mu, kappa, m, ka, kb, side=side)
                low2, high2, _ = pair_bounds(ma2, mb2, cap_a, cap_b)
                out[f"{key}_power"] = float(np.mean(low2 > 0) if d > 0 else np.mean(high2 < 0))
    return out


NEED_CELLS = (  # (tasks of the sample, mu, kappa, repeats a, repeats b, the difference to detect)
    (16, 0.5, 10.0, 3, 3, 0.15),
    (16, 0.05, 10.0, 10, 1, 0.1),
    (16, 0.5, 1.0, 1, 1, 0.2),
    (64, 0.5, 10.0, 3, 3, 0.1),
    (64, 0.95, 10.0, 3, 3, -0.05),
    (64, 0.05, 1.0, 10, 10, 0.05),
)


def need_cell(rng, n, sets, g, mu, kappa, ka, kb, target) -> dict:
    """ "Tasks needed" checked against its claim: on ``sets`` data sets of ``g`` tasks without an effect, the tasks
    each data set's figures say would detect ``target`` (``PairStats.tasks_needed``, pass/fail: simulated), then ``n``
    fresh data sets of the median of those at a true difference of ``target`` and the share whose interval excludes 0
    on its side: the claim is 0.80."""
    from hermit_tui.core.stats.power import fit_power_model

    ma, mb, _, _ = grid_data(rng, sets, g, mu, kappa, 0.0, ka, kb)
    needs: list[float] = []
    for i in range(sets):
        model = fit_power_model(ma[i], mb[i], np.full(g, ka), np.full(g, kb))
        found = model.tasks_needed(target) if model is not None else None
        needs.append(math.inf if found is None else float(found))
    need = float(np.median(needs))
    out: dict[str, float] = {"need": need}
    if math.isfinite(need):
        k = int(round(need))
        ma2, mb2, _, d = grid_data(rng, n, k, mu, kappa, abs(target), ka, kb, side=1 if target > 0 else -1)
        low, high, _ = pair_bounds(ma2, mb2, attempts_cap(np.full(k, ka)), attempts_cap(np.full(k, kb)))
        out["power"] = float(np.mean(low > 0) if d > 0 else np.mean(high < 0))
    return out


HET_CELLS = tuple((g, kappa, k) for g in (64, 256) for kappa in (1.0, 10.0) for k in (1, 3))


def het_data(rng, n, g, mu, kappa, delta, k):
    """Effects that vary by task beyond the power model's proportional move: of a's tasks (p ~ Beta(mu, kappa)) half,
    at random, are not moved and half are moved twice as far (``2 delta (1 - p) / (1 - mu)``), so the mean
    difference is still delta; k repeats on both sides."""
    p = rng.beta(mu * kappa, (1 - mu) * kappa, size=(n, g))
    pb = np.clip(p + 2 * rng.integers(0, 2, size=(n, g)) * delta * (1 - p) / (1 - mu), 0.0, 1.0)
    return rng.binomial(k, p) / k, rng.binomial(k, pb) / k


def het_cell(rng, n, sets, g, kappa, k, mu=0.5, delta=0.1) -> float:
    """The MDE's power under effects that vary by task (``het_data``): the median MDE of ``sets`` data sets whose
    observed difference is a gain, then ``n`` data sets at it."""
    from hermit_tui.core.stats.power import fit_power_model

    ma, mb = het_data(rng, sets, g, mu, kappa, delta, k)
    mdes = []
    for i in range(sets):
        model = fit_power_model(ma[i], mb[i], np.full(g, k), np.full(g, k))
        if model is not None and model.side > 0:
            found = model.mde()
            mdes.append(math.inf if found is None else found)
    m = float(np.median(mdes)) if mdes else math.inf
    if not math.isfinite(m) or 2 * m > 1 - mu:
        return math.nan
    ma2, mb2 = het_data(rng, n, g, mu, kappa, m, k)
    low, _, _ = pair_bounds(ma2, mb2, attempts_cap(np.full(g, k)), attempts_cap(np.full(g, k)))
    return float(np.mean(low > 0))


WORKERS = 2  # processes: the cells are independent (each its own seed)


def power_cell(job: tuple) -> dict:
    """One grid cell's power figures (its own seed): the simulated power at the true difference, the mean of
    ``PairStats.power_at`` over the first ``sim_sets`` data sets (and of the closed form over all), the same model with
    the cell's true parameters, and the MDE check (:func:`mde_cell`)."""
    from hermit_tui.core.stats.power import PowerModel

    index, n, g, mu, delta, kappa, ka, kb, sim_sets, mde_sets = job
    rng = np.random.default_rng([SEED + 26, index])
    out = grid_cell(rng, n, g, mu, kappa, delta, ka, kb, sim_sets) if delta else {}
    if delta:
        ma, mb = out.pop("sets")
        d = delta if delta <= 1 - mu + 1e-12 else -delta
        out["implied"] = model_power(ma, mb, ka, kb, d, sim_sets)
        truth = PowerModel(
            mean_a=mu, between=mu * (1 - mu) / (kappa + 1), repeats=[(ka, kb, g)], side=1 if d > 0 else -1
        )
        out["true_model"] = truth.power(d)  # what is left between it and power is the model's, the rest the fit's
    out["mde"] = mde_cell(rng, n, g, mu, kappa, delta, ka, kb, mde_sets)
    return out


def _need_job(job: tuple) -> dict:
    index, n, sets, case = job
    return need_cell(np.random.default_rng([SEED + 27, index]), n, sets, *case)


def _het_job(job: tuple) -> float:
    index, n, sets, case = job
    return het_cell(np.random.default_rng([SEED + 28, index]), n, sets, *case)


def power_section(args, md: list[str]) -> None:
    """The power figures (core.stats.power) against their claims, on the issue-25 grid's law (T >= 8)."""
    from multiprocessing import Pool

    n = max(100, args.reps // 5) if args.quick else args.reps
    sizes = (16, 64) if args.quick else tuple(g for g in GRID_T if g >= 8)
    sim_sets, mde_sets, need_sets = (5, 3, 4) if args.quick else (60, 40, 30)
    keys = [
        (g, mu, delta, kappa, ka, kb)
        for g in sizes
        for mu in GRID_MU
        for delta in GRID_DELTA
        for kappa in GRID_KAPPA
        for ka, kb in GRID_REPEATS
    ]
    needs = NEED_CELLS[:2] if args.quick else NEED_CELLS
    hets = HET_CELLS[:1] if args.quick else HET_CELLS
    t0 = time.perf_counter()
    with Pool(WORKERS) as pool:
        found = pool.map(power_cell, [(i, n, *k, sim_sets, mde_sets) for i, k in enumerate(keys)], chunksize=4)
        need_found = pool.map(_need_job, [(i, n, need_sets, c) for i, c in enumerate(needs)])
        het_found_all = pool.map(_het_job, [(i, n, need_sets, c) for i, c in enumerate(hets)])
    wall = time.perf_counter() - t0
    cells = dict(zip(keys, found))
    need_rows = list(zip(needs, need_found))
    het_rows = list(zip(hets, het_found_all))
    power_cells = [(k, c) for k, c in cells.items() if k[0] >= 8 and "power" in c and math.isfinite(c["implied"])]
    gaps = [abs(c["implied"] - c["power"]) for _, c in power_cells]
    closed_gaps = [abs(c["closed"] - c["power"]) for _, c in power_cells]
    model_gaps = [abs(c["true_model"] - c["power"]) for _, c in power_cells]
    synth.figure(
        "stats.grid.power_gap",
        max(gaps) if gaps else None,
        target="<= 0.05",
        detail=f"largest |implied power - simulated power| at the true difference over {len(gaps)} cells with "
        f"T >= 8 and an effect (mean over cells {np.mean(gaps):.3f}); implied = PairStats.power_at, the pair "
        f"interval's power simulated under the model fitted to each data set (mean over {sim_sets} data sets per "
        f"cell); the closed form it replaced: largest {max(closed_gaps):.3f}, mean {np.mean(closed_gaps):.3f}; the "
        f"model with each cell's true parameters: largest {max(model_gaps):.3f}, mean {np.mean(model_gaps):.3f}",
    )

    # the MDE's claim (80% power at it), checked by simulating at it
    mde_cells = {key: c["mde"] for key, c in cells.items()}
    mde_gaps = {(*k, s): c[f"sim{s}_power"] - 0.8 for k, c in mde_cells.items() for s in "+-" if f"sim{s}_power" in c}
    closed_mde = {
        (*k, s): c[f"closed{s}_power"] - 0.8 for k, c in mde_cells.items() for s in "+-" if f"closed{s}_power" in c
    }
    worst_mde = min(mde_gaps.values(), default=math.nan)
    synth.figure(
        "stats.grid.mde_power_gap",
        max((abs(v) for v in mde_gaps.values()), default=None),
        target="<= 0.05",
        detail=f"largest |simulated power - 0.80| at the median minimum detectable difference (PairStats.mde, "
        f"{mde_sets} data sets per cell) over {len(mde_gaps)} cells and sides with T >= 8 where it fits the room "
        f"(lowest power {0.8 + worst_mde:.3f}; mean gap {np.mean([abs(v) for v in mde_gaps.values()]):.3f}); the "
        f"closed form it replaced: largest {max(abs(v) for v in closed_mde.values()):.3f} over {len(closed_mde)} "
        f"(lowest power {0.8 + min(closed_mde.values()):.3f}); {wall:.0f} s for the section on {WORKERS} "
        "processes",
    )

    # "tasks needed" against its claim
    need_gaps = [abs(r["power"] - 0.8) for _, r in need_rows if "power" in r]
    synth.figure(
        "stats.grid.tasks_needed_gap",
        max(need_gaps, default=None),
        target="<= 0.05",
        detail=f"largest |simulated power - 0.80| with the median 'tasks needed' of {need_sets} data sets, at the "
        f"difference asked, over {len(need_gaps)} of {len(need_rows)} cases (PairStats.tasks_needed, simulated)",
    )

    # the MDE's power when effects vary by task beyond the model's proportional move
    het_found = [x for _, x in het_rows if math.isfinite(x)]
    synth.figure(
        "stats.grid.mde_power_heterogeneous",
        min(het_found, default=None),
        target=">= 0.75",
        detail=f"lowest simulated power at the median MDE when half the tasks are not moved and half twice as far "
        f"(base 0.5, difference 0.1 in the data; {len(het_found)} cells: 64 and 256 tasks, kappa 1 and 10, 1 and 3 "
        "repeats): the power model assumes a proportional move on every task",
    )

    md += [
        "### The power figures against their claims (`core.stats.power`)",
        "",
        f"The issue-25 grid's law at T >= 8; {n} data sets per cell for the simulated power, each cell its own seed, "
        f"{wall:.0f} s on {WORKERS} processes.",
    ]
    worst_cells = sorted(power_cells, key=lambda kc: -abs(kc[1]["implied"] - kc[1]["power"]))[:12]
    md += [
        "",
        f"The cells with the largest power gap (T >= 8, an effect; power from {n} data sets, Monte-Carlo error "
        f"~{math.sqrt(0.25 / n):.3f}). implied = `PairStats.power_at`, the pair interval's power simulated under "
        f"the model fitted to each data set (`core.stats.power`; the mean over {sim_sets} data sets); closed form "
        "= the shifted central t `T_{n-1}((|d| - h) / se)` it replaced; h / se = the median over data sets of the "
        "interval's half-width over the standard error (t(0.975, T-1) for a t interval); true model = the simulated "
        "power with the cell's own mean and between-task variance in place of each data set's fit (so the gap between "
        "it and power is the model's, the rest is the fit's noise).",
        "",
        "| T | mu | delta | kappa | repeats | power | implied | gap | true model | closed form | gap | h / se "
        "(t(0.975)) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (g, mu, delta, kappa, ka, kb), c in worst_cells:
        from scipy.special import stdtrit

        md.append(
            f"| {g} | {mu:g} | {delta:g} | {kappa:g} | {ka}v{kb} | {c['power']:.3f} | {c['implied']:.3f} | "
            f"{c['implied'] - c['power']:+.3f} | {c['true_model']:.3f} | {c['closed']:.3f} | "
            f"{c['closed'] - c['power']:+.3f} | "
            f"{c['ratio']:.2f} ({stdtrit(g - 1, 0.975):.2f}) |"
        )
    md += [
        "",
        "The minimum detectable difference checked against its own claim (`PairStats.mde`: 80% power at it, on the "
        f"observed difference's side). Per cell and side: the median of the MDEs of the data sets on that side "
        f"({mde_sets} data sets; none reachable counts as infinite; a side with under a quarter of them is skipped), "
        f"then {n} fresh data sets at that true difference on that side (b up by `mde (1 - p) / (1 - mu)`, or down "
        "by `mde p / mu`) and the share whose interval excludes 0 on it; beside it the closed form the simulated MDE "
        f"replaced (the interval's half-width plus t(0.80) x se, over {n} data sets). Per T: the power at the median "
        "MDE over cells and sides, lowest / median / highest, and how many within 0.75-0.85; unreachable: cells and "
        "sides whose median data set has no MDE (not even the whole room reaches 80%).",
        "",
        "| T | MDE | cells and sides | lowest | median | highest | within 0.75-0.85 | unreachable |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for g in sorted({k[0] for k in mde_cells}):
        for what, name in (("sim", "simulated"), ("closed", "closed form")):
            at = [c for k, c in mde_cells.items() if k[0] == g]
            powers = sorted(c[f"{what}{s}_power"] for c in at for s in "+-" if f"{what}{s}_power" in c)
            gone = sum(math.isinf(c.get(f"{what}{s}_mde", 0.0)) for c in at for s in "+-")
            if powers:
                md.append(
                    f"| {g} | {name} | {len(powers)} | {powers[0]:.3f} | {float(np.median(powers)):.3f} | "
                    f"{powers[-1]:.3f} | {sum(0.75 <= x <= 0.85 for x in powers)} | {gone} |"
                )
    ranked = [((*k, s), c) for k, c in mde_cells.items() for s in "+-" if f"sim{s}_power" in c]
    worst_rows = sorted(ranked, key=lambda kc: abs(kc[1][f"sim{kc[0][-1]}_power"] - 0.8), reverse=True)[:10]
    md += [
        "",
        "The cells farthest from 0.80 (simulated MDE; the closed form on the same side beside it):",
        "",
        "| T | mu | delta (data) | kappa | repeats | side | median MDE | power at it | data sets without one | "
        "closed form | power at it |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    md += [
        f"| {g} | {mu:g} | {delta:g} | {kappa:g} | {ka}v{kb} | {'up' if s == '+' else 'down'} | "
        f"{c[f'sim{s}_mde']:.3f} | {c[f'sim{s}_power']:.3f} | {c['unreachable']:.2f} | "
        f"{c.get(f'closed{s}_mde', math.nan):.3f} | {c.get(f'closed{s}_power', math.nan):.3f} |"
        for (g, mu, delta, kappa, ka, kb, s), c in worst_rows
    ]
    md += [
        "",
        '"Tasks needed" checked against its claim (`PairStats.tasks_needed`, simulated for pass/fail scores): on '
        f"{need_sets} data sets of the sample's size without an effect, the tasks each says would detect the "
        f"difference asked; then {n} data sets of the median of those at that true difference, and the share whose "
        "interval excludes 0 on its side (the claim: 0.80).",
        "",
        "| tasks in the sample | mu | kappa | repeats | difference asked | median tasks needed | power with them |",
        "|---|---|---|---|---|---|---|",
        *[
            f"| {g} | {mu:g} | {kappa:g} | {ka}v{kb} | {t:+g} | {r['need']:.0f} | "
            + (f"{r['power']:.3f} |" if "power" in r else "— |")
            for (g, mu, kappa, ka, kb, t), r in need_rows
        ],
        "",
        "The MDE's power when effects vary by task beyond the model's proportional move: half of a's tasks, at "
        "random, not moved and half moved twice as far (base 0.5; the samples' difference 0.1; the median MDE of "
        f"{need_sets} samples whose difference is a gain, then {n} data sets at it). The claim is 0.80.",
        "",
        "| tasks | kappa | repeats | power at the median MDE |",
        "|---|---|---|---|",
        *[f"| {g} | {kappa:g} | {k}v{k} | {x:.3f} |" for (g, kappa, k), x in het_rows],
        "",
    ]
    md.append("")
