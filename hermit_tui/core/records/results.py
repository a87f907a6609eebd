"""Attempt records (one line of ``results.jsonl``) and evaluation summaries (``summary.json``), in hermit's format.

hermit-harness 0.1.0 writes the same two files; both tools read each other's. The record keys and the summary keys
below are hermit's; hermit-tui adds keys only beside them (never renames or drops one).
"""

from __future__ import annotations

import json
import math
import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, SerializerFunctionWrapHandler, model_serializer

from hermit_tui.core.errors import InputError
from hermit_tui.core.workspace.files import read_bytes
from hermit_tui.core.workspace.fingerprint import Fingerprint

Status = Literal["ok", "error", "judge_error"]

#: hermit's keys of a results.jsonl line, in hermit's order.
RECORD_KEYS = ("repeat", "id", "status", "error", "output", "judge", "cost_usd", "wall_s", "api_speed", "tokens", "log")
#: hermit's keys of an evaluation summary.json, in hermit's order.
SUMMARY_KEYS = (
    "adapter",
    "commit",
    "tasks",
    "repeats",
    "mean_score",
    "solved_once",
    "cost_usd",
    "unknown_cost_tasks",
    "errors",
    "wall_s",
)
#: hermit's fixed success threshold for ``solved_once``.
SOLVED_THRESHOLD = 1.0


#: The fields of a record whose text may come from a pipeline or a judge (``id`` comes from the task file).
TEXT_FIELDS = ("error", "output", "judge", "api_speed", "tokens", "log", "traceback", "printed")


def without_lone_surrogates(value: Any) -> tuple[Any, bool]:
    """``value`` with every lone surrogate (a code point U+D800..U+DFFF that is not half of a pair: not Unicode
    text, it cannot be written as UTF-8 and JSON readers refuse its escape) replaced by U+FFFD, in strings, mapping
    keys and nested values; and whether anything was replaced. A pair of surrogates becomes the character it
    encodes."""
    kind = type(value)
    if kind is str:
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace"), True
        return value, False
    if isinstance(value, dict):
        changed = False
        out = {}
        for k, v in value.items():
            k2, a = without_lone_surrogates(k)
            v2, b = without_lone_surrogates(v)
            out[k2] = v2
            changed = changed or a or b
        return (out if changed else value), changed
    if isinstance(value, (list, tuple)):
        items = [without_lone_surrogates(v) for v in value]
        if any(c for _, c in items):
            return [v for v, _ in items], True
        return value, False
    return value, False


def _may_hold_lone_surrogates(value: Any) -> bool:
    kind = type(value)
    if kind is str:
        if value.isascii():
            return False
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if value is None or kind is int or kind is float or kind is bool:
        return False
    if kind is dict and not value:
        return False
    try:
        return "\\ud" in json.dumps(value, default=str)
    except Exception:  # not JSON at all: encoding the line says why (the attempt's error)
        return False


class Judged(BaseModel):
    """The judge's verdict as recorded: ``extra`` is absent on pipeline errors, as hermit writes it."""

    model_config = ConfigDict(extra="allow")

    score: float
    feedback: str = ""
    extra: dict[str, Any] | None = None


class AttemptRecord(BaseModel):
    """One attempt: one task, one repeat, one selector."""

    model_config = ConfigDict(extra="allow")

    repeat: int
    id: str
    status: Status
    error: str | None = None
    output: Any = None
    judge: Judged
    cost_usd: float | None = None
    wall_s: float = 0.0
    api_speed: Any = None
    tokens: Any = None
    log: str | None = None
    traceback: str | None = None  # hermit-tui's, on a failed attempt: the Python traceback (hermit's readers ignore it)
    # hermit-tui's: the file holding what the attempt printed (its last 64 KiB; core/run/printed.py), absent when
    # nothing
    printed: str | None = None
    # hermit-tui's: the fields whose text held lone surrogates (not Unicode), written with U+FFFD in their place
    replaced_surrogates: list[str] | None = None
    # The attempt's trajectory (RunOutput.messages) on its way from the executor to the journal, which writes it to
    # the transcripts sidecar and drops it: never a key of results.jsonl, never kept by the dashboard.
    _messages: list[Any] | None = PrivateAttr(default=None)
    # The results.jsonl line encoded when the attempt was checked for being writable (``encode_line``), so that the
    # journal does not encode it a second time; dropped once written, like ``_messages``.
    _line: bytes | None = PrivateAttr(default=None)

    @property
    def score(self) -> float:
        return self.judge.score

    @property
    def key(self) -> tuple[str, int]:
        return (self.id, self.repeat)

    def to_json_line(self) -> str:
        """The results.jsonl line (strict JSON). Text holding lone surrogates is first replaced on the record itself
        (``replace_lone_surrogates``), so that every reader of the file (and of the record) gets Unicode text."""
        self.clean_text()
        return self._json_line()

    def clean_text(self) -> None:
        """Lone surrogates replaced (``replace_lone_surrogates``) when the record may hold any: before pydantic's
        JSON mode, which refuses or mangles them."""
        if self._may_hold_lone_surrogates():
            self.replace_lone_surrogates()

    def _may_hold_lone_surrogates(self) -> bool:
        """Whether some text of the record may hold a lone surrogate: plain strings are checked at once, nested
        values by one C-speed dump (an escaped surrogate, of a pair or a lone one); the walk that tells them apart
        runs only then."""
        judge = self.judge
        for value in (self.error, self.output, judge.feedback, judge.extra, self.api_speed, self.tokens, self.log):
            if _may_hold_lone_surrogates(value):
                return True
        return _may_hold_lone_surrogates(self.traceback) or _may_hold_lone_surrogates(self.printed)

    def replace_lone_surrogates(self) -> list[str]:
        """Replace lone surrogates in the record's texts by U+FFFD; the fields changed (also kept, added to any
        earlier ones, in ``replaced_surrogates``)."""
        changed = []
        for name in TEXT_FIELDS:
            value = getattr(self, name)
            if name == "judge":
                value = self.judge.model_dump()
            clean, replaced = without_lone_surrogates(value)
            if replaced:
                changed.append(name)
                setattr(self, name, Judged.model_validate(clean) if name == "judge" else clean)
        if changed:
            self.replaced_surrogates = sorted({*(self.replaced_surrogates or ()), *changed})
        return changed

    def _json_line(self) -> str:
        data = self.model_dump(mode="json", exclude_none=False)
        if data["judge"].get("extra") is None:  # hermit writes no judge.extra when the pipeline failed
            data["judge"].pop("extra", None)
        ordered = {k: data[k] for k in RECORD_KEYS}
        ordered.update({k: v for k, v in data.items() if k not in ordered and v is not None})
        return json.dumps(ordered, default=str, allow_nan=False) + "\n"

    def __setattr__(self, name: str, value: Any) -> None:
        if name[0] != "_":
            self._private()["_line"] = None  # a field changed: the kept line no longer says what the record holds
        super().__setattr__(name, value)

    def _private(self) -> dict[str, Any]:
        """pydantic's dict of private attributes, used directly for ``_line`` (its setter costs microseconds, twice
        per attempt); it exists on every record, the private attributes having defaults."""
        private = self.__pydantic_private__
        assert private is not None
        return private

    def encode_line(self) -> bytes:
        """``to_json_line`` as UTF-8, kept for ``take_line`` (setting a field drops it)."""
        line = self._private()["_line"] = self.to_json_line().encode("utf-8")
        return line

    def take_line(self) -> bytes:
        """The line ``encode_line`` kept (dropping it), or the record encoded now."""
        private = self._private()
        line: bytes | None = private.get("_line")
        if line is None:
            return self.to_json_line().encode("utf-8")
        private["_line"] = None
        return line


NEW_SEQUENTIAL_KEYS = frozenset(
    {
        "futility",
        "conditional_power",
        "estimate",
        "estimate_interval",
        "p_value",
        *("cluster_by", "clusters_sha256", "clusters", "cluster_of", "clusters_looked"),
    }
)


class SequentialEntry(BaseModel):
    """summary.json's ``sequential`` object, written by a launch with ``--stop-when-decided``
    (``core.stats.sequential``).

    On a candidate's summary: its ``decision`` against ``baseline`` after ``rounds`` whole rounds of at most
    ``max_rounds`` (``eval.repeats``), the round it was decided at, and the repeated confidence interval for the
    difference ``candidate - baseline`` of task means. On the baseline's own summary ``decision`` is absent and
    ``candidates`` gives each candidate's decision."""

    model_config = ConfigDict(extra="allow")

    baseline: str
    decision: Literal["improvement", "regression", "equivalent", "undecided", "futile"] | None = None
    rounds: int
    max_rounds: int
    method: str
    alpha: float
    spend: float | None = None  # what the candidate's boundaries spent in total (absent before issue 25: alpha)
    split_over: int | None = None  # the candidates alpha was split over (Bonferroni)
    margin: float | None = None
    decided_at: int | None = None
    interval: tuple[float, float] | None = None
    mean_diff: float | None = None
    candidates: dict[str, str] | None = None
    batches: int | None = None  # looks within the first round (absent before issue 25, item 4: 1)
    tasks_looked: int | None = None  # the paired tasks of the last look (fewer than the test tasks: within round 1)
    total_tasks: int | None = None  # the test tasks of a round
    # issue 25, item 4 (absent before): the futility rule's conditional-power threshold (None: no futility rule),
    # the conditional power at the last look, and the inference at stopping adjusted for the stopping rule
    futility: float | None = None
    conditional_power: float | None = None
    estimate: float | None = None  # median-unbiased (stagewise ordering)
    estimate_interval: tuple[float, float] | None = None
    p_value: float | None = None
    # the clustered design (``--cluster-by`` / ``--cluster-file``; absent: tasks taken as independent): the spec and
    # the mapping's sha256 (as the protocol fingerprint), the test tasks' clusters, each task the mapping names and
    # its cluster (what the looks are replayed by), and the clusters the last look saw
    cluster_by: str | None = None
    clusters_sha256: str | None = None
    clusters: int | None = None
    cluster_of: dict[str, str] | None = None
    clusters_looked: int | None = None

    @model_serializer(mode="wrap")
    def _new_keys_only_when_set(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """The keys of issue 25, item 4 are written only with a value: an entry without them is written as before."""
        return {k: v for k, v in handler(self).items() if v is not None or k not in NEW_SEQUENTIAL_KEYS}

    @property
    def within_first_round(self) -> bool:
        """The last look was after a batch of the first round's tasks, before the round was complete."""
        return self.tasks_looked is not None and self.total_tasks is not None and self.tasks_looked < self.total_tasks

    @property
    def stopped_early(self) -> bool:
        return self.rounds < self.max_rounds or self.within_first_round


class InProgress(BaseModel):
    """summary.json's ``in_progress``: a launch is still writing this evaluation (absent once it has finished)."""

    model_config = ConfigDict(extra="allow")

    pid: int
    updated_at: str


class Published(BaseModel):
    """summary.json's ``published``: the card commit a publish made from this evaluation and where the final tag was
    before (``core.publish.apply``); ``undone_at`` once an undo moved the tag back."""

    model_config = ConfigDict(extra="allow")

    measured_commit: str | None = None
    card_commit: str
    previous_tag_target: str | None = None
    at: str | None = None
    undone_at: str | None = None

    @model_serializer(mode="wrap")
    def _without_nulls(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """As publish writes it: ``undone_at`` only once undone."""
        return {k: v for k, v in handler(self).items() if v is not None}


class Summary(BaseModel):
    """An evaluation summary: hermit's ten keys, then hermit-tui's extra keys (all optional when reading).

    Every key hermit-tui writes is declared here, in the order it is written (``to_json``: hermit's ten keys first,
    then ours, absent when None). Keys another tool adds are kept (``extra="allow"``) and never looked up."""

    model_config = ConfigDict(extra="allow")

    adapter: str
    commit: str | None = None
    tasks: int
    repeats: int
    mean_score: float
    solved_once: float
    cost_usd: float | None = None
    unknown_cost_tasks: int = 0
    errors: int = 0
    wall_s: float = 0.0

    # hermit-tui extras (absent in files written by hermit itself)
    label: str | None = None
    attempts: int | None = None
    expected_attempts: int | None = None
    complete: bool | None = None
    cancelled: bool | None = None
    smoke_limit: int | None = Field(default=None, description="--limit N: a wiring check, never a full evaluation")
    known_cost_usd: float | None = None
    pipeline_errors: int | None = None
    judge_errors: int | None = None
    content_hash: str | None = None
    retries: int | None = None
    started_at: str | None = None
    finished_at: str | None = None
    hermit_tui_version: str | None = None
    sequential: SequentialEntry | None = None  # --stop-when-decided: the decision against the baseline
    concurrency: int | None = None
    executor: str | None = None
    fingerprint: Fingerprint | None = None  # the protocol, hashed (core.workspace.fingerprint)
    in_progress: InProgress | None = None  # written while the launch runs
    retry_lost: bool | None = None  # --retry-lost-once (Ray): shown even when no worker was lost
    ray_retries: int | None = None  # attempts run once more after a lost Ray worker
    scores_outside_unit: int | None = None
    max_cost_usd: float | None = None  # --max-cost
    stop_reason: str | None = None  # why --max-cost stopped the launch short
    stopped: str | None = None  # why the run stopped short (too many hung threads)
    protocol_warnings: list[str] | None = None
    ignored_attempts: int | None = None  # attempts outside the test ids or the repeats (another tool's lines)
    nonfinite_scores: int | None = None  # NaN or infinite scores in a file another tool wrote, counted 0
    # sums that overflowed to infinity (numbers near 1e308 in a file another tool wrote): "cost_usd" is then null
    # (unknown), never infinity; hermit-tui's own attempts never report a number beyond ±1e12
    overflowed: list[str] | None = None
    published: Published | None = None  # written by publish (core.publish.apply), after the evaluation

    @property
    def written_by_hermit(self) -> bool:
        return self.hermit_tui_version is None

    @property
    def is_smoke(self) -> bool:
        return self.smoke_limit is not None

    @property
    def is_complete(self) -> bool:
        """hermit's own summaries are written only at the end of a finished run."""
        return self.complete is not False

    def to_json(self) -> str:
        data = self.model_dump(mode="json")
        ordered = {k: data[k] for k in SUMMARY_KEYS}
        ordered.update({k: v for k, v in data.items() if k not in ordered and v is not None})
        return json.dumps(ordered, indent=1, allow_nan=False)


def summarize(
    records: Iterable[AttemptRecord],
    *,
    adapter: str,
    commit: str | None,
    task_ids: list[str],
    repeats: int,
    wall_s: float,
    **extra: Any,
) -> Summary:
    """The summary of a set of attempts, computed as hermit does.

    ``mean_score`` is over every recorded attempt (failed ones count 0), ``solved_once`` is the share of the test
    tasks with an attempt scoring at least 1.0, ``cost_usd`` is the sum of known costs or None when any attempt's
    cost is unknown, ``unknown_cost_tasks`` counts attempts with unknown cost, ``errors`` counts error and
    judge_error attempts.

    Attempts on ids outside ``task_ids`` or repeats outside 1..``repeats`` are not counted (``ignored_attempts``
    says how many); a score that is not a finite number (NaN, infinity: only a file written by another tool can
    hold one) counts 0 and ``nonfinite_scores`` says how many. A sum that overflows to infinity (finite numbers near
    1e308, again only in another tool's file) is never written: the known cost is then None and ``overflowed`` names
    it; the mean is computed as a sum of shares, which stays finite.
    """
    records = records if isinstance(records, (list, tuple)) else list(records)
    total = 0.0
    n = 0
    solved: set[str] = set()
    known_cost = 0.0
    unknown = 0
    pipeline_errors = judge_errors = 0
    ignored = nonfinite = 0
    wanted = set(task_ids)
    for rec in records:
        if rec.id not in wanted or not 1 <= rec.repeat <= repeats:
            ignored += 1
            continue
        s = rec.judge.score
        if not math.isfinite(s):
            nonfinite += 1
        total += s if math.isfinite(s) else 0.0
        n += 1
        if math.isfinite(s) and s >= SOLVED_THRESHOLD:
            solved.add(rec.id)
        if rec.cost_usd is None or not math.isfinite(rec.cost_usd):
            unknown += 1
        else:
            known_cost += rec.cost_usd
        if rec.status == "error":
            pipeline_errors += 1
        elif rec.status == "judge_error":
            judge_errors += 1
    tasks = len(task_ids)
    overflowed = []
    mean = total / n if n else 0.0
    if not math.isfinite(total):  # finite scores whose sum overflowed: the mean as a sum of shares stays finite
        mean = math.fsum(
            s / n
            for rec in records
            if rec.id in wanted and 1 <= rec.repeat <= repeats and math.isfinite(s := rec.score)
        )
    known: float | None = known_cost
    if not math.isfinite(known_cost):
        known = None
        overflowed.append("cost_usd")
    if overflowed:
        extra["overflowed"] = overflowed
    if ignored:
        extra["ignored_attempts"] = ignored
    if nonfinite:
        extra["nonfinite_scores"] = nonfinite
    return Summary(
        adapter=adapter,
        commit=commit,
        tasks=tasks,
        repeats=repeats,
        mean_score=mean,
        solved_once=len(solved & wanted) / tasks if tasks else 0.0,
        cost_usd=None if unknown else known,
        unknown_cost_tasks=unknown,
        errors=pipeline_errors + judge_errors,
        wall_s=round(wall_s, 1),
        attempts=n,
        known_cost_usd=known,
        pipeline_errors=pipeline_errors,
        judge_errors=judge_errors,
        **extra,
    )


class ResultsFile:
    """What a results.jsonl holds: the records, plus the lines that could not be read."""

    def __init__(self, records: list[AttemptRecord], skipped: list[str]):
        self.records = records
        self.skipped = skipped


def read_results(path: Path) -> ResultsFile:
    """Read a results.jsonl. A truncated last line (a run killed mid-write) is skipped with a warning; a bad line
    anywhere else is an error naming the file and line."""
    path = Path(path)
    try:
        raw = read_bytes(path)
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    lines = raw.split(b"\n")
    records: list[AttemptRecord] = []
    skipped: list[str] = []
    last = len(lines) - 1
    while last >= 0 and not lines[last].strip():
        last -= 1
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            records.append(AttemptRecord.model_validate_json(line))
        except ValueError as exc:
            if number - 1 == last and not raw.endswith(b"\n"):
                skipped.append(f"{path}:{number}: truncated last line ignored (the run was interrupted mid-write)")
                continue
            first = str(exc).splitlines()
            reason = first[1].strip() if len(first) > 1 else first[0] if first else "invalid"
            raise InputError(f"{path}:{number}: not a results record ({reason})") from None
    return ResultsFile(records, skipped)


def read_summary(path: Path) -> Summary:
    path = Path(path)
    try:
        return Summary.model_validate_json(read_bytes(path))
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except ValueError as exc:
        lines = str(exc).splitlines()
        reason = " ".join(lines[1:3]).strip() if len(lines) > 1 else lines[0]
        raise InputError(f"{path}: not an evaluation summary ({reason})") from None


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` so that a reader sees the old or the new file, never half of one."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)  # the file keeps its permissions
    except OSError:
        mode = None
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            if mode is not None:
                os.fchmod(fh.fileno(), mode)
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
