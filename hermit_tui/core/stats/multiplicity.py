"""Adjusting p-values for looking at many things at once: slices of the test split, or tasks.

- **Holm** (1979) controls the family-wise error rate: the chance that *any* claim "this one is hurt" is false. It
  is used where a single claim is the finding (a slice named as hurt, the gate).
- **Benjamini–Hochberg** (1995) controls the false-discovery rate: the expected share of false entries in a list.
  It is used for screening lists (the harmed tasks).

Both return adjusted p-values in the input's order (compare them with the level directly); None stays None and is
not counted in the family.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

HOLM = "Holm (family-wise error rate)"
BH = "Benjamini–Hochberg (false-discovery rate)"


def _valid(pvalues: Sequence[float | None]) -> tuple[np.ndarray, np.ndarray]:
    idx = np.array([i for i, p in enumerate(pvalues) if p is not None], dtype=np.int64)
    vals = np.array([pvalues[i] for i in idx], dtype=float)
    if len(vals) and (np.isnan(vals).any() or (vals < 0).any() or (vals > 1).any()):
        raise ValueError("p-values must lie in [0, 1]")
    return idx, vals


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjusted p-values: sorted ascending, p_(i) × (m − i + 1), made non-decreasing, capped at 1."""
    idx, p = _valid(pvalues)
    out: list[float | None] = [None] * len(pvalues)
    m = len(p)
    if not m:
        return out
    order = np.argsort(p, kind="stable")
    scaled = p[order] * (m - np.arange(m))
    adjusted = np.minimum(np.maximum.accumulate(scaled), 1.0)
    for k, j in enumerate(order):
        out[int(idx[j])] = float(adjusted[k])
    return out


def benjamini_hochberg(pvalues: Sequence[float | None]) -> list[float | None]:
    """BH step-up adjusted p-values (q-values): sorted ascending, p_(i) × m / i, made non-increasing from the top
    down, capped at 1."""
    idx, p = _valid(pvalues)
    out: list[float | None] = [None] * len(pvalues)
    m = len(p)
    if not m:
        return out
    order = np.argsort(p, kind="stable")
    scaled = p[order] * m / np.arange(1, m + 1)
    adjusted = np.minimum(np.minimum.accumulate(scaled[::-1])[::-1], 1.0)
    for k, j in enumerate(order):
        out[int(idx[j])] = float(adjusted[k])
    return out


__all__ = ["BH", "HOLM", "benjamini_hochberg", "holm"]
