"""The ``--max-cost`` cap. An unknown cost is never counted as $0: the cap counts it at the mean known cost per
attempt (an estimate, said as such). How a cost reads (so far, at completion) is core/present.py's."""

from __future__ import annotations

import math

from pydantic import BaseModel

from hermit_tui.core.present import money


class CostCap(BaseModel):
    """The ``--max-cost`` cap of one launch: what its attempts cost, counted as they finish.

    Only this launch's attempts count (an evaluation continued with ``--resume`` starts from zero). An attempt of
    unknown cost counts at the mean known cost per attempt; while no attempt has reported a cost, unknown ones
    cannot be counted, which ``blind`` says."""

    max_usd: float
    known: float = 0.0
    known_n: int = 0
    unknown_n: int = 0

    def add(self, cost: float | None) -> bool:
        """Count one finished attempt; True when the cap has just become blind (only unknown costs so far)."""
        was_blind = self.blind
        if cost is None:
            self.unknown_n += 1
        else:
            self.known += cost
            self.known_n += 1
        return self.blind and not was_blind

    @property
    def estimated_unknown(self) -> float:
        return self.unknown_n * self.known / self.known_n if self.known_n else 0.0

    @property
    def spent(self) -> float:
        return self.known + self.estimated_unknown

    @property
    def blind(self) -> bool:
        return self.unknown_n > 0 and self.known_n == 0

    @property
    def reached(self) -> bool:
        return self.spent >= self.max_usd

    def reason(self) -> str:
        text = f"max cost {money(self.max_usd)} reached: {money(self.known)} known"
        if self.unknown_n:
            text += f" + ~{money(self.estimated_unknown)} estimated for {self.unknown_n} of unknown cost"
        return text


def check_max_cost(value: object) -> float | None:
    """A ``--max-cost`` value: None, or a positive finite number of dollars; anything else is a ValueError."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"the maximum cost must be a positive number of dollars, got {value!r}")
    return float(value)
