"""The gate's objects: the facts of one evaluation, the interval that decides improvement and no-regression, one
check and the result (``core.report.gate``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from hermit_tui.core.records.results import SequentialEntry
from hermit_tui.core.workspace.fingerprint import Fingerprint

FORMAT = "hermit-tui gate 1"
Role = Literal["baseline", "candidate"]


class SelectorFacts(BaseModel):
    """What the gate needs of one evaluation, read from its summary and its results on the test tasks."""

    role: Role
    label: str
    folder: str
    smoke_folder: bool = False  # read from eval/<label>/smoke/
    adapter: str | None = None
    commit: str | None = None
    written_by: str  # "hermit-tui", "hermit eval", or "unknown" (no readable summary.json)
    summary_problem: str | None = None
    smoke_limit: int | None = None
    cancelled: bool = False
    summary_complete: bool | None = None
    tasks: int | None = None  # the summary's test task count
    repeats: int | None = None  # the summary's repeats
    n_test: int  # test tasks of the config's split
    present: int  # distinct (test task, repeat) attempts with repeat in 1..repeats
    expected: int | None  # n_test x repeats (None without a summary)
    attempts: int  # attempts recorded on the test tasks (a later record of a (task, repeat) replaces an earlier)
    pipeline_errors: int
    judge_errors: int
    known_cost_usd: float
    unknown_cost_attempts: int
    mean: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    ci_method: str | None = None
    fingerprint: Fingerprint | None = None
    sequential: SequentialEntry | None = None

    @property
    def errors(self) -> int:
        return self.pipeline_errors + self.judge_errors


class GateInterval(BaseModel):
    """The 95% interval for candidate - baseline that decides improvement and no-regression."""

    low: float
    high: float
    method: str  # in words
    source: Literal["paired", "sequential"]
    n_paired: int | None = None


class GateCheck(BaseModel):
    """One check: the requirement, the selector it is about (per-selector checks), PASS or FAIL, and the figure
    that decided it."""

    requirement: str
    selector: str | None = None
    passed: bool
    figure: str
    value: float | None = None

    @property
    def name(self) -> str:
        return f"{self.requirement} {self.selector}" if self.selector else self.requirement

    @property
    def line(self) -> str:
        return f"{'PASS' if self.passed else 'FAIL'} {self.name}: {self.figure}"


class GateResult(BaseModel):
    format: str = FORMAT
    run_name: str = ""
    config: str = ""
    baseline: str | None
    candidate: str
    requirements: list[str]
    margin: float
    max_error_rate: float | None
    smoke: bool = False
    allow_unchecked: bool = False
    selectors: list[SelectorFacts]
    interval: GateInterval | None = None
    pair_verdict: str | None = None  # the report's verdict on the pair, for the reader (the checks decide)
    lenient: bool = False  # no-regression read as "the interval does not lie entirely below -M"
    evidence: str = ""  # what the checks rest on, in words (``evidence_line``)
    checks: list[GateCheck]
    passed: bool

    @property
    def failed(self) -> list[GateCheck]:
        return [c for c in self.checks if not c.passed]


__all__ = ["FORMAT", "GateCheck", "GateInterval", "GateResult", "Role", "SelectorFacts"]
