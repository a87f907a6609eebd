"""Cost so far, cost at completion, and the ``--max-cost`` cap. An unknown cost is never counted as $0: it is shown
as unknown, and the cap counts it at the mean known cost per attempt (an estimate, said as such)."""
from __future__ import annotations

import math

from pydantic import BaseModel


def money(value: float) -> str:
    """Dollars: cents from $1 up, four decimals below (the demo's attempts cost fractions of a cent)."""
    return f"${value:,.2f}" if abs(value) >= 1 else f"${value:.4f}"


def projected_cost(known: float, done: int, expected: int) -> float | None:
    """The known cost at completion if the remaining attempts cost what the finished ones did on average (unknown
    ones included in the average's denominator as they will be among the remaining); None before any attempt."""
    if done <= 0 or expected <= 0:
        return None
    return known * max(expected, done) / done


def cost_phrase(known: float, unknown: int, done: int, expected: int, *, running: bool) -> str:
    """"$0.84 so far · ~$2.10 at the end · 3 unknown": what a live screen says about a launch's cost."""
    if done == 0:
        return "no attempt finished yet"
    if unknown >= done:
        parts = ["unknown so far"]
    else:
        parts = [f"{money(known)} so far" if running else money(known)]
        end = projected_cost(known, done, expected)
        if running and end is not None and done < expected:
            parts.append(f"~{money(end)} at the end")
    if unknown:
        parts.append(f"{unknown} unknown")
    return " · ".join(parts)


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
