"""What a launch is asked to do: one validated model for the CLI (``hermit-tui eval``), the dashboard (the setup
screen, re-running failed attempts) and Ray.

``LaunchOptions`` holds the choices as given; None means "the config's value" (``eval.repeats``,
``agent.concurrency``, ``agent.timeout_min``). Building one with a bad value raises InputError with one line naming
the option, before anything is read or written. What needs the config or the adapter tree (the selectors, the
baseline among them, a resume's protocol) is checked when the launch is built (``core.run.runner.EvalRun``).
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from hermit_tui.core.errors import InputError
from hermit_tui.core.run.costs import check_max_cost
from hermit_tui.core.workspace.config import MAX_CONCURRENCY, MAX_REPEATS, MAX_TIMEOUT_MIN, Config

ExecutorName = Literal["threads", "processes", "ray"]
EXECUTOR_NAMES: tuple[ExecutorName, ...] = ("threads", "processes", "ray")
MAX_LIMIT = 10**9
MAX_FIRST_ROUND_LOOKS = 64  # --first-round-looks
#: {selector label: [(task id, repeat), ...]}: the attempts a retry re-runs.
RetryKeys = dict[str, list[tuple[str, int]]]


def check_margin(margin: Any) -> float | None:
    """The equivalence margin of --stop-when-decided (None: none), or InputError (one line)."""
    if margin is None:
        return None
    if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not math.isfinite(margin) or margin <= 0:
        raise InputError(
            f"--margin must be a positive number (a difference of mean scores, e.g. 0.05), got {str(margin)[:40]}"
        )
    return float(margin)


def positive_int(value: Any, key: str, most: int | None = None) -> int:
    """``value`` when it is a whole number from 1 to ``most``; else InputError naming ``key``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"{key} must be a positive whole number, got {str(repr(value))[:40]}")
    if most is not None and value > most:
        raise InputError(f"{key} must be at most {most}, got {str(value)[:40]}")
    return value


class LaunchOptions(BaseModel):
    """One launch's options. ``selectors`` may be empty only for a retry (``retry`` names the evaluations)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    selectors: list[str] = []
    repeats: int | None = None  # None: eval.repeats
    concurrency: int | None = None  # None: agent.concurrency
    limit: int | None = None  # --limit N: a smoke subset of the first N test tasks (eval/<label>/smoke/)
    update_card: bool = False  # hermit eval's card update when final finishes (the CLI publishes after review instead)
    retry: RetryKeys = {}  # re-run only these attempts of the current evaluations
    resume: bool = False  # continue interrupted evaluations: only the missing attempts run
    executor: ExecutorName = "threads"
    timeout_min: float | None = None  # None: agent.timeout_min
    ray_address: str | None = None  # --executor ray: the cluster (None: $RAY_ADDRESS, else a local one)
    judge_on_workers: bool = False  # --executor ray: judge on the workers instead of the driver
    retry_lost: bool = False  # --executor ray: run an attempt whose worker was lost once more
    max_cost: float | None = None  # USD: no new attempt starts once this launch's attempts cost that much
    stop_when_decided: bool = False  # whole rounds, stopping once every candidate is decided (core.stats.sequential)
    baseline: str | None = None  # --stop-when-decided: the selector the others are compared with
    margin: float | None = None  # --stop-when-decided: also "equivalent within ±margin"
    cluster_by: str | None = None  # --cluster-by: a field of the task rows whose values cluster the tasks
    first_round_looks: int | None = None  # --stop-when-decided: looks within the first round (None: by the tasks)
    futility: bool = True  # --stop-when-decided: the non-binding futility rule (--no-futility: off; off with a margin)
    anytime: bool = False  # --stop-when-decided --anytime: by confidence sequences (core.stats.sequential)

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise InputError(_first_problem(exc)) from None

    # -- each value on its own -------------------------------------------------------------------------------
    @field_validator("executor", mode="before")
    @classmethod
    def _executor(cls, value: Any) -> Any:
        if value not in EXECUTOR_NAMES:
            raise ValueError(f"--executor must be one of {', '.join(EXECUTOR_NAMES)}, got {value!r}")
        return value

    @field_validator("repeats", mode="before")
    @classmethod
    def _repeats(cls, value: Any) -> Any:
        return None if value is None else _checked(positive_int, value, "eval.repeats", MAX_REPEATS)

    @field_validator("concurrency", mode="before")
    @classmethod
    def _concurrency(cls, value: Any) -> Any:
        return None if value is None else _checked(positive_int, value, "--concurrency", MAX_CONCURRENCY)

    @field_validator("limit", mode="before")
    @classmethod
    def _limit(cls, value: Any) -> Any:
        return None if value is None else _checked(positive_int, value, "--limit", MAX_LIMIT)

    @field_validator("timeout_min", mode="before")
    @classmethod
    def _timeout(cls, value: Any) -> Any:
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= MAX_TIMEOUT_MIN
        ):
            raise ValueError(
                f"the attempt timeout must be a positive number of minutes up to {MAX_TIMEOUT_MIN} "
                f"(a week), got {str(repr(value))[:40]}"
            )
        return value

    @field_validator("max_cost", mode="before")
    @classmethod
    def _max_cost(cls, value: Any) -> Any:
        try:
            return check_max_cost(value)
        except ValueError as exc:
            raise ValueError(f"--max-cost: {exc}") from None

    @field_validator("margin", mode="before")
    @classmethod
    def _margin(cls, value: Any) -> Any:
        return _checked(check_margin, value)

    @field_validator("first_round_looks", mode="before")
    @classmethod
    def _first_round_looks(cls, value: Any) -> Any:
        return None if value is None else _checked(positive_int, value, "--first-round-looks", MAX_FIRST_ROUND_LOOKS)

    @field_validator("retry", mode="before")
    @classmethod
    def _retry(cls, value: Any) -> Any:
        if value is None:
            return {}
        try:
            return {str(label): [(str(t), int(r)) for t, r in keys] for label, keys in dict(value).items()}
        except (TypeError, ValueError):
            raise ValueError("retry must map selector labels to (task id, repeat) pairs") from None

    # -- the values together ---------------------------------------------------------------------------------
    @model_validator(mode="after")
    def _together(self) -> LaunchOptions:
        if self.anytime and not self.stop_when_decided:
            raise ValueError("--anytime is a design of --stop-when-decided (add it, or drop --anytime)")
        if self.anytime and self.first_round_looks is not None:
            raise ValueError(
                "--first-round-looks is for the group-sequential design: --anytime looks after every batch of tasks"
            )
        if not self.stop_when_decided:
            if self.first_round_looks is not None:
                raise ValueError("--first-round-looks is for --stop-when-decided (add it, or drop the option)")
            if not self.futility:
                raise ValueError("--no-futility is for --stop-when-decided (add it, or drop the option)")
            if self.baseline is not None or self.margin is not None:
                raise ValueError(
                    f"{'--baseline' if self.baseline is not None else '--margin'} is for "
                    "--stop-when-decided (add it, or drop the option)"
                )
        elif self.retry:
            raise ValueError("--stop-when-decided cannot re-run chosen attempts (a retry): it decides on whole rounds")
        elif self.limit is not None:
            raise ValueError(
                "--stop-when-decided with --limit: a smoke subset is a wiring check, there is nothing "
                "to decide (drop one of the two)"
            )
        if not self.selectors and not self.retry:
            raise ValueError("no adapter selector given (e.g. --adapter none --adapter root --adapter final)")
        return self

    # -- against the config ----------------------------------------------------------------------------------
    def concurrency_for(self, config: Config) -> int:
        if self.concurrency is not None:
            return self.concurrency
        return positive_int(config.concurrency, "agent.concurrency", MAX_CONCURRENCY)

    def repeats_for(self, config: Config) -> int:
        return self.repeats if self.repeats is not None else positive_int(config.repeats, "eval.repeats", MAX_REPEATS)

    def timeout_s_for(self, config: Config) -> float | None:
        """The attempt timeout in seconds (None: none)."""
        minutes = self.timeout_min if self.timeout_min is not None else config.timeout_min
        return float(minutes) * 60 if minutes else None

    @property
    def smoke(self) -> bool:
        """A smoke subset goes to eval/<label>/smoke/ and never touches the label's evaluation; a retry re-runs
        attempts of the current evaluations where they are."""
        return self.limit is not None and not self.retry


def _checked(check: Any, *args: Any) -> Any:
    """A check raising InputError, as a pydantic validator (which wants ValueError)."""
    try:
        return check(*args)
    except InputError as exc:
        raise ValueError(str(exc)) from None


def _first_problem(exc: ValidationError) -> str:
    """The first problem as one line: our own message as written, pydantic's with the option it is about."""
    error = exc.errors(include_url=False)[0]
    cause = (error.get("ctx") or {}).get("error")
    if isinstance(cause, ValueError):
        return str(cause)
    where = ".".join(str(part) for part in error.get("loc", ()))
    value = error.get("input")
    shown = "" if isinstance(value, dict) else f", got {str(repr(value))[:40]}"
    return f"launch option {where or '(the options)'}: {error.get('msg', 'invalid')}{shown}"


__all__ = ["EXECUTOR_NAMES", "ExecutorName", "LaunchOptions", "RetryKeys", "check_margin", "positive_int"]
