"""pass@k and pass^k per selector, and paired between selectors.

For a task with n attempts of which c succeed (score at least the threshold):

- **pass@k**, the chance that at least one of k attempts drawn without replacement succeeds, estimated without
  bias by 1 − C(n − c, k) / C(n, k) (Chen et al. 2021, "Evaluating Large Language Models Trained on Code");
- **pass^k**, the chance that all k succeed (as τ-bench reports reliability), estimated without bias by
  C(c, k) / C(n, k).

A selector's figure is the mean over the test tasks with at least k attempts (the estimand is the task mean, as
everywhere else), with the bounded interval of ``core.stats.intervals``; a pair's is the mean of the per-task
differences over the tasks both attempted at least k times. Both are defined only for success at the threshold:
a graded score counts as a success when it reaches it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from pydantic import BaseModel

from hermit_tui.core.records.scores import TaskTable
from hermit_tui.core.stats.intervals import difference_interval, task_mean_interval

DEFINITION = "success: a score at least the threshold; pass@k = 1 − C(n−c,k)/C(n,k), pass^k = C(c,k)/C(n,k)"


def _ratio(top: np.ndarray, n: np.ndarray, k: int) -> np.ndarray:
    """C(top, k) / C(n, k) elementwise (0 where top < k), as a product of k ratios (no big integers)."""
    out = np.ones(len(n), dtype=float)
    for i in range(k):
        out *= np.clip(top - i, 0, None) / (n - i)
    return out


def pass_at_k(n: np.ndarray, c: np.ndarray, k: int) -> np.ndarray:
    """Per task (n ≥ k), the unbiased pass@k estimate."""
    return 1.0 - _ratio(n - c, n, k)


def pass_hat_k(n: np.ndarray, c: np.ndarray, k: int) -> np.ndarray:
    """Per task (n ≥ k), the unbiased pass^k estimate."""
    return _ratio(c, n, k)


class PassFigure(BaseModel):
    k: int
    tasks: int  # test tasks with at least k attempts
    value: float | None
    ci_low: float | None = None
    ci_high: float | None = None


class SelectorPassK(BaseModel):
    label: str
    pass_at: list[PassFigure]
    pass_hat: list[PassFigure]


class PairPassK(BaseModel):
    a: str
    b: str
    pass_at: list[PassFigure]  # b − a
    pass_hat: list[PassFigure]


class PassK(BaseModel):
    threshold: float
    definition: str = DEFINITION
    selectors: list[SelectorPassK]
    pairs: list[PairPassK]


def _per_task(table: TaskTable) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(task positions, attempts, successes) of the attempted tasks."""
    return table.index, table.n.astype(float), table.solved.astype(float)


def _selector_figure(values: np.ndarray, n: np.ndarray, k: int) -> PassFigure:
    if not len(values):
        return PassFigure(k=k, tasks=0, value=None)
    binary = bool(np.all((values == 0.0) | (values == 1.0)))
    iv = task_mean_interval(values, n, binary, 0.0, 1.0)
    return PassFigure(
        k=k,
        tasks=len(values),
        value=float(values.mean()),
        ci_low=iv.low if iv is not None else None,
        ci_high=iv.high if iv is not None else None,
    )


def selector_pass_k(label: str, table: TaskTable, ks: Sequence[int]) -> SelectorPassK:
    _, n, c = _per_task(table)
    at, hat = [], []
    for k in ks:
        m = n >= k
        at.append(_selector_figure(pass_at_k(n[m], c[m], k), n[m], k))
        hat.append(_selector_figure(pass_hat_k(n[m], c[m], k), n[m], k))
    return SelectorPassK(label=label, pass_at=at, pass_hat=hat)


def _pair_figure(d: np.ndarray, k: int) -> PassFigure:
    if not len(d):
        return PassFigure(k=k, tasks=0, value=None)
    iv = difference_interval(d, 0.0, 1.0)
    return PassFigure(
        k=k,
        tasks=len(d),
        value=float(d.mean()),
        ci_low=iv.low if iv is not None else None,
        ci_high=iv.high if iv is not None else None,
    )


def pair_pass_k(a: str, ta: TaskTable, b: str, tb: TaskTable, ks: Sequence[int]) -> PairPassK:
    ia, na, ca = _per_task(ta)
    ib, nb, cb = _per_task(tb)
    _, ja, jb = np.intersect1d(ia, ib, return_indices=True)
    na, ca, nb, cb = na[ja], ca[ja], nb[jb], cb[jb]
    at, hat = [], []
    for k in ks:
        m = (na >= k) & (nb >= k)
        at.append(_pair_figure(pass_at_k(nb[m], cb[m], k) - pass_at_k(na[m], ca[m], k), k))
        hat.append(_pair_figure(pass_hat_k(nb[m], cb[m], k) - pass_hat_k(na[m], ca[m], k), k))
    return PairPassK(a=a, b=b, pass_at=at, pass_hat=hat)


def pass_k(tables: Mapping[str, TaskTable], pairs: Sequence[tuple[str, str]], threshold: float) -> PassK:
    """pass@k and pass^k for k = 1 … the largest repeat count, per selector and per pair (b − a)."""
    most = max((int(t.n.max()) for t in tables.values() if len(t.n)), default=0)
    ks = list(range(1, most + 1))
    return PassK(
        threshold=threshold,
        selectors=[selector_pass_k(label, t, ks) for label, t in tables.items()],
        pairs=[pair_pass_k(a, tables[a], b, tables[b], ks) for a, b in pairs],
    )


__all__ = ["DEFINITION", "PassK", "pair_pass_k", "pass_at_k", "pass_hat_k", "pass_k", "selector_pass_k"]
