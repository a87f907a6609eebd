"""The evaluation report's model: what ``core.report.build.build_report`` computes and every renderer reads (Markdown,
JSON and CSV in ``core.report.text``, HTML in ``core.report.html``). The JSON report is this model, its keys in the
order of the fields."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from hermit_tui.core.records.annotations import FailureTaxonomy
from hermit_tui.core.records.results import SequentialEntry
from hermit_tui.core.report.protocol import Check, TestReuse
from hermit_tui.core.stats.bounds import ErrorBounds
from hermit_tui.core.stats.figures import PairStats
from hermit_tui.core.stats.harm import HarmReport
from hermit_tui.core.stats.noise import NoiseBudget
from hermit_tui.core.stats.passk import PassK
from hermit_tui.core.stats.selector import SelectorStats
from hermit_tui.core.stats.slices import SliceReport
from hermit_tui.core.why.pair import PairWhy
from hermit_tui.core.why.versions import CheckpointCurve
from hermit_tui.core.workspace.fingerprint import Fingerprint

FORMAT = "hermit-tui report 1"
NOT_RECORDED = "not recorded"
UNKNOWN = "unknown:"
TRAINING_LABEL = (
    "TRAINING evidence: rollout scores on the train split while the adapter was being trained. Not test "
    "evidence, and not comparable with the test figures above."
)


class SelectorReport(BaseModel):
    """One evaluated selector: hermit's summary, the statistics and what to be careful about."""

    label: str
    folder: str
    adapter: str | None  # the selector as typed
    commit: str | None  # the commit measured (null for none and directories)
    content_hash: str | None  # a directory selector's content
    written_by: str  # "hermit-tui", "hermit eval" (no extras), or "unknown" (no summary.json)
    summary: dict[str, Any] | None  # hermit's ten keys
    fingerprint: Fingerprint | None
    stats: SelectorStats
    errors: int  # error + judge_error attempts
    known_cost_usd: float
    unknown_cost_attempts: int
    smoke_limit: int | None
    complete: bool
    retries: int
    flags: list[str]
    sequential: SequentialEntry | None = None  # summary.json's entry of a --stop-when-decided launch


class Difference(BaseModel):
    a: str
    b: str
    differences: list[str]


class TrainingStep(BaseModel):
    step: int | None
    epoch: int | None
    tasks: int | None
    mean_score: float | None
    bootstrap: bool = False


class TrainingEvidence(BaseModel):
    label: str = TRAINING_LABEL
    source: str
    steps: list[TrainingStep]
    skipped_lines: int = 0


class Report(BaseModel):
    format: str = FORMAT
    hermit_tui_version: str
    config: str
    run_name: str
    run_dir: str
    demo: bool
    threshold: float
    dataset_revision: str
    splits: dict[str, int]  # tasks, train, val, test
    comparable: bool
    differences: list[Difference]
    warnings: list[str]
    selectors: list[SelectorReport]
    pairs: list[PairStats]
    checks: list[Check]
    test_reuse: TestReuse
    training: TrainingEvidence | None
    test_ids: list[str]
    cluster_by: str | None = None  # --cluster-by (or recorded by eval --cluster-by): figures clustered by this field
    n_clusters: int | None = None  # the clusters of the test tasks
    taxonomy: FailureTaxonomy | None = None  # hand labels from the triage (core/records/annotations.py)
    slices: SliceReport | None = None  # report --slice-by: where it helps and hurts (core/stats/slices.py)
    harm: list[HarmReport] = []  # report --harmed: per pair, the tasks worse with evidence (core/stats/harm.py)
    error_bounds: list[ErrorBounds] = []  # report --error-bounds: per pair, errors as failures/successes/left out
    pass_k: PassK | None = None  # report --pass-k: pass@k and pass^k per selector and pair (core/stats/passk.py)
    noise: list[
        NoiseBudget
    ] = []  # per pair: the variance split and what detecting --noise-at would take (core/stats/noise.py)
    why: list[PairWhy] = []  # per compared pair: the adapter's diff, the flips, divergence, usage (core/why)
    checkpoints: CheckpointCurve | None = None  # root, the checkpoints, final on test: description only (core/why)

    def noise_of(self, a: str, b: str) -> NoiseBudget | None:
        """The noise budget of the pair (a, b), or None (a sequential pair has none)."""
        return next((n for n in self.noise if (n.a, n.b) == (a, b)), None)


__all__ = [
    "FORMAT",
    "NOT_RECORDED",
    "TRAINING_LABEL",
    "UNKNOWN",
    "Difference",
    "Report",
    "SelectorReport",
    "TrainingEvidence",
    "TrainingStep",
]
