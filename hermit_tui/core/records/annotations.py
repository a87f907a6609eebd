"""Triage annotations: labels, a note and a corrected score on an attempt, kept beside hermit's files.

``<run dir>/eval/<label>/annotations.jsonl`` holds one JSON line per change, appended and never rewritten::

    {"repeat": 1, "id": "t05", "labels": ["format error"], "note": "", "corrected_score": null,
     "at": "2026-01-02T03:04:05.123456Z", "attempt": "5d0c9a3e1f2b4c6d"}

The latest line of a (task id, repeat) wins; a line with no labels, no note and no corrected score clears it. The file
belongs to the evaluation in its folder: it is moved into the archive with it when the selector is evaluated again
(``evalstore.archive_existing``), and it works for folders ``hermit eval`` wrote (it needs nothing from the summary).
``attempt`` is a digest of the attempt the line was written about: when that attempt was re-run since (a retry, or
``hermit eval`` writing the folder again in place), the line no longer applies and the views say so.

Writers take an exclusive ``fcntl`` lock on the file, read it, and append the new line in one ``write`` on a
descriptor opened with ``O_APPEND``: two dashboards (or a dashboard and ``hermit-tui annotate``) never interleave
lines, and a toggle made in one is not lost by the other (each change is applied to the latest line on disk).

The recorded score never changes: a corrected score is kept apart, and only views that say so use it.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from hermit_tui.core.errors import InputError
from hermit_tui.core.records.folders import ANNOTATIONS, check_no_links, run_dir_of
from hermit_tui.core.records.results import SOLVED_THRESHOLD, AttemptRecord
from hermit_tui.core.workspace.files import NotRegularFile, check_regular, read_bytes

try:  # POSIX; elsewhere the single O_APPEND write still keeps lines whole
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

JUDGE_DISAGREES = "judge disagrees"
#: The label set a run starts with (keys 1-9 in the dashboard); "judge disagrees" is built in and always first.
DEFAULT_LABEL_SET = (
    JUDGE_DISAGREES,
    "format error",
    "tool misuse",
    "wrong reasoning",
    "incomplete answer",
    "flaky infrastructure",
    "timeout",
)
MAX_LABELS = 9
MAX_LABEL_CHARS = 40
MAX_NOTE_CHARS = 2000
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")

Key = tuple[str, int]


# ---------------------------------------------------------------------------------------------------- one line


class Annotation(BaseModel):
    """The state of one attempt's annotation (one line of annotations.jsonl)."""

    repeat: int
    id: str
    labels: list[str] = Field(default_factory=list)
    note: str = ""
    corrected_score: float | None = None
    at: str = ""
    attempt: str | None = None  # digest of the attempt it was made on (None: applies to whatever is recorded)

    @property
    def key(self) -> Key:
        return (self.id, self.repeat)

    @property
    def empty(self) -> bool:
        return not self.labels and not self.note and self.corrected_score is None

    def applies_to(self, record: AttemptRecord | None) -> bool:
        """Whether it describes ``record`` (not an earlier attempt at the same task and repeat)."""
        return record is not None and (self.attempt is None or self.attempt == attempt_digest(record))

    def to_line(self) -> str:
        return json.dumps(self.model_dump(), ensure_ascii=False, allow_nan=False) + "\n"


class Change(BaseModel):
    """What a user asked for on one attempt. Applied to the attempt's latest annotation on disk."""

    toggle: list[str] = Field(default_factory=list)  # labels switched on if off, off if on
    add: list[str] = Field(default_factory=list)
    remove: list[str] = Field(default_factory=list)
    note: str | None = None  # None: unchanged; "" clears it
    corrected_score: float | None = None
    clear_score: bool = False
    clear: bool = False  # drop every label, the note and the corrected score (before the rest applies)

    def apply(self, current: Annotation | None, key: Key, digest: str | None) -> Annotation:
        labels = [] if self.clear or current is None else list(current.labels)
        note = "" if self.clear or current is None else current.note
        score = None if self.clear or current is None else current.corrected_score
        for label in self.toggle:
            if label in labels:
                labels.remove(label)
            else:
                labels.append(label)
        labels += [label for label in self.add if label not in labels]
        labels = [label for label in labels if label not in self.remove]
        if self.note is not None:
            note = self.note
        if self.clear_score:
            score = None
        if self.corrected_score is not None:
            score = self.corrected_score
            if JUDGE_DISAGREES not in labels:  # a corrected score is a disagreement with the judge
                labels.insert(0, JUDGE_DISAGREES)
        if JUDGE_DISAGREES not in labels:  # no disagreement: no corrected score
            score = None
        return Annotation(
            repeat=key[1], id=key[0], labels=labels, note=note, corrected_score=score, at=now_stamp(), attempt=digest
        )


def now_stamp() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def attempt_digest(record: AttemptRecord) -> str:
    """A short digest of what an attempt recorded (status, error, output, score, feedback, cost, tokens, log): the
    same for the record in memory and as read back from results.jsonl, different for a re-run attempt (almost
    always: a re-run that recorded exactly the same things is taken for the same attempt)."""
    fields = [
        record.status,
        record.error,
        record.output,
        record.judge.score,
        record.judge.feedback,
        record.cost_usd,
        record.tokens,
        record.log,
    ]
    try:
        text = json.dumps(fields, sort_keys=True, default=str, ensure_ascii=False)
    except (TypeError, ValueError):  # keys of mixed types, nan...: still deterministic
        text = repr(fields)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def check_label(text: str, where: str = "label") -> str:
    """A label as kept: surrounding spaces trimmed, inner runs of spaces made one. InputError when it is empty,
    too long or holds control characters."""
    label = " ".join(str(text).split())
    if not label:
        raise InputError(f"{where}: a label cannot be empty")
    if len(label) > MAX_LABEL_CHARS:
        raise InputError(f"{where}: {label[:20]!r}… is longer than {MAX_LABEL_CHARS} characters")
    if _CONTROL.search(str(text).strip("\n\t ")):
        raise InputError(f"{where}: {label!r} holds control characters")
    return label


def check_label_set(labels: Sequence[str]) -> list[str]:
    """A run's label set: "judge disagrees" first, then up to 8 distinct labels. InputError otherwise."""
    out = [JUDGE_DISAGREES]
    for i, text in enumerate(labels, start=1):
        if not str(text).strip():
            continue
        label = check_label(text, f"label {i}")
        if label in out:
            if label == JUDGE_DISAGREES:
                continue
            raise InputError(f"label {i}: {label!r} is in the set twice")
        out.append(label)
    if len(out) > MAX_LABELS:
        raise InputError(f"a label set holds at most {MAX_LABELS} labels (keys 1-9), got {len(out)}")
    return out


def check_note(text: str) -> str:
    note = str(text).strip()
    if len(note) > MAX_NOTE_CHARS:
        raise InputError(f"note: longer than {MAX_NOTE_CHARS} characters")
    if "\x00" in note:
        raise InputError("note: holds a NUL character")
    return note


def check_score(value: Any, where: str = "corrected score") -> float:
    try:
        score = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{where}: {value!r} is not a number") from None
    if isinstance(value, bool) or not math.isfinite(score):
        raise InputError(f"{where}: {value!r} is not a finite number")
    return score


# ---------------------------------------------------------------------------------------------------- the file


class AnnotationsFile(BaseModel):
    """An evaluation's annotations as read: the latest line per (task id, repeat), cleared ones left out."""

    entries: dict[Key, Annotation] = Field(default_factory=dict)
    skipped: list[str] = Field(default_factory=list)  # unreadable lines, one message each
    lines: int = 0


def parse_annotations(data: bytes, path: Path | str = ANNOTATIONS) -> AnnotationsFile:
    out = AnnotationsFile()
    latest: dict[Key, Annotation] = {}
    for n, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        out.lines += 1
        try:
            entry = Annotation.model_validate(json.loads(raw))
        except (ValueError, TypeError) as exc:
            out.skipped.append(f"{path}: line {n} skipped ({' '.join(str(exc).split())[:120]})")
            continue
        latest[entry.key] = entry
    out.entries = {k: v for k, v in latest.items() if not v.empty}
    return out


def read_annotations(folder: Path) -> AnnotationsFile:
    """The annotations of the evaluation in ``folder`` (an empty result when it has none). An unreadable file is an
    InputError naming it."""
    path = Path(folder) / ANNOTATIONS
    try:
        data = read_bytes(path)  # a FIFO or a device is refused before it is opened
    except FileNotFoundError:
        return AnnotationsFile()
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    return parse_annotations(data, path)


def _read_fd(fd: int) -> bytes:
    size = os.fstat(fd).st_size
    chunks, offset = [], 0
    while offset < size:
        chunk = os.pread(fd, min(1 << 20, size - offset), offset)
        if not chunk:
            break
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def update_annotation(folder: Path, record: AttemptRecord, change: Change) -> tuple[Annotation, AnnotationsFile]:
    """Apply ``change`` to ``record``'s latest annotation in ``folder`` and append the result as one line, under an
    exclusive lock on the file (so concurrent writers never interleave or lose each other's changes). Returns the new
    state of the attempt and of the whole file. An OSError (read-only folder, disk full) is an InputError; the file
    is left as it was."""
    new, read = update_annotations(folder, [(record, change)])
    return new[0], read


def update_annotations(
    folder: Path, changes: Sequence[tuple[AttemptRecord, Change]]
) -> tuple[list[Annotation], AnnotationsFile]:
    """Apply each ``(record, change)`` to its attempt's latest annotation in ``folder`` and append the results, one
    line each, in one write under one exclusive lock: a bulk label (every attempt of an error group, of the rows a
    filter or a search shows) reaches the file whole or not at all. A change to an attempt already changed earlier in
    ``changes`` applies to that new state. Returns the new states, in order, and the state of the whole file. An
    OSError (read-only folder, disk full) is an InputError; the file is left as it was."""
    path = Path(folder) / ANNOTATIONS
    check_no_links(run_dir_of(Path(folder)), Path(folder), [ANNOTATIONS])
    if not Path(folder).is_dir():
        raise InputError(f"{folder}: the evaluation's folder does not exist")
    created = False
    try:
        check_regular(path)  # a FIFO or a device is refused before it is opened
        flags = os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o644)
            created = True
        except FileExistsError:
            fd = os.open(path, flags | os.O_NONBLOCK)
    except NotRegularFile as exc:
        raise InputError(f"{path}: {exc.strerror}; nothing was changed") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot write ({exc.strerror or exc}); nothing was changed") from None
    done, data = False, None
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        data = _read_fd(fd)
        read = parse_annotations(data, path)
        latest: dict[Key, Annotation | None] = {}
        out: list[Annotation] = []
        for record, change in changes:
            digest = attempt_digest(record)
            current = latest[record.key] if record.key in latest else read.entries.get(record.key)
            if current is not None and not current.applies_to(record):
                current = None  # made on an earlier attempt, re-run since: start afresh
            new = change.apply(current, record.key, digest)
            latest[record.key] = new
            out.append(new)
        line = "".join(a.to_line() for a in out).encode("utf-8")
        if data and not data.endswith(b"\n"):  # a line cut by a crash: ours starts on a line of its own
            line = b"\n" + line
        try:
            written = os.write(fd, line)
            if written != len(line):
                raise OSError(28, "short write (disk full?)")
            os.fsync(fd)
        except OSError as exc:
            undone = _put_back(fd, path, data, created)
            raise InputError(f"{path}: cannot write ({exc.strerror or exc}){undone}") from None
        for key, state in latest.items():
            if state is None or state.empty:
                read.entries.pop(key, None)
            else:
                read.entries[key] = state
        read.lines += len(out)
        done = True
        return out, read
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror or exc}{_put_back(fd, path, data, created)}") from None
    finally:
        if not done and created:
            try:
                os.unlink(path)  # the file this call created and could not fill: gone again
            except OSError:
                pass
        os.close(fd)  # releases the lock


def restoring(previous: Annotation | None) -> Change:
    """The change that puts an attempt's annotation back to ``previous`` (None: no annotation): what undoing a bulk
    label writes for each attempt it changed."""
    if previous is None or previous.empty:
        return Change(clear=True)
    return Change(clear=True, add=list(previous.labels), note=previous.note, corrected_score=previous.corrected_score)


def bulk_label(label: str, current: Iterable[Annotation | None]) -> Change:
    """One label on many attempts at once: added to every one of them, or taken off every one when they all carry
    it already (a toggle of the whole set, never a toggle of each, which would leave them mixed)."""
    states = list(current)
    every = bool(states) and all(a is not None and label in a.labels for a in states)
    return Change(remove=[label]) if every else Change(add=[label])


def _put_back(fd: int, path: Path, data: bytes | None, created: bool) -> str:
    """Cut the file back to ``data`` after a failed append; the words to add to the error: "nothing was changed"
    only when the file now holds exactly what it held before (a file this call created is removed by the caller;
    ``data`` None: it was never read, so nothing was written)."""
    if data is None:
        return "; nothing was changed"
    try:
        os.ftruncate(fd, len(data))
        if os.fstat(fd).st_size == len(data):
            return "; nothing was changed"
    except OSError:
        pass
    if created:
        return "; nothing was changed"
    return f"; {path} may end in a partial line (the readers skip it)"


# ---------------------------------------------------------------------------------------------------- taxonomy


def is_failure(record: AttemptRecord, threshold: float = SOLVED_THRESHOLD) -> bool:
    """A failure: the pipeline or the judge raised (status error / judge_error), or the score is below the success
    threshold (hermit's 1.0 unless set otherwise): every attempt that did not solve its task."""
    return record.status != "ok" or not record.judge.score >= threshold


def applying(annotations: Mapping[Key, Annotation], records: Mapping[Key, AttemptRecord]) -> dict[Key, Annotation]:
    """The annotations that describe the attempts recorded now (not earlier attempts, re-run since)."""
    return {k: a for k, a in annotations.items() if a.applies_to(records.get(k))}


class SelectorTaxonomy(BaseModel):
    """One evaluation's labels: attempts per label (failed or not), and how far triage went."""

    label: str  # the evaluation (eval folder name)
    attempts: int
    failures: int  # attempts with status error/judge_error or a score below the success threshold
    labelled_failures: int  # failures carrying at least one label
    labelled_attempts: int
    counts: dict[str, int]  # label -> attempts carrying it, most frequent first
    failure_counts: dict[str, int]  # label -> failed attempts carrying it
    notes: int
    corrected: int  # attempts with a corrected score
    stale: int = 0  # annotations made on an earlier attempt at the same task and repeat (re-run since)
    corrected_mean: float | None = None  # the task mean with the corrected scores in place of the recorded ones
    recorded_mean: float | None = None  # the same mean as recorded (for comparison)


class LabelChange(BaseModel):
    """One label between two evaluations, by task (a task carries a label when any of its attempts does)."""

    label: str
    a_tasks: int
    b_tasks: int
    fixed: list[str]  # tasks where a had the label and b does not (every failure of b there carries a label)
    introduced: list[str]  # tasks where b has the label and a did not (every failure of a there carries a label)
    both: list[str]
    untriaged: list[str] = Field(default_factory=list)  # on one side only, the other side's failures there unlabelled


class PairTaxonomy(BaseModel):
    a: str
    b: str
    labels: list[LabelChange]


class FailureTaxonomy(BaseModel):
    """The report's "Failure taxonomy": hand labels from each evaluation's annotations.jsonl."""

    source: str = f"eval/<label>/{ANNOTATIONS}"
    threshold: float
    failure: str = "an attempt with status error or judge_error, or a score below the success threshold"
    label_set: list[str]
    selectors: list[SelectorTaxonomy]
    pairs: list[PairTaxonomy]
    warnings: list[str] = Field(default_factory=list)


def _ordered(counts: dict[str, int], label_set: Sequence[str]) -> dict[str, int]:
    rank = {label: i for i, label in enumerate(label_set)}
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], rank.get(kv[0], len(rank)), kv[0])))


def selector_taxonomy(
    label: str,
    records: Mapping[Key, AttemptRecord],
    annotations: Mapping[Key, Annotation],
    threshold: float = SOLVED_THRESHOLD,
    label_set: Sequence[str] = DEFAULT_LABEL_SET,
    task_ids: Sequence[str] | None = None,
) -> SelectorTaxonomy:
    """Counts per label for one evaluation (``records`` and ``annotations`` by (task id, repeat))."""
    live = applying(annotations, records)
    counts: dict[str, int] = {}
    failure_counts: dict[str, int] = {}
    failures = labelled_failures = 0
    for key, rec in records.items():
        failed = is_failure(rec, threshold)
        failures += failed
        ann = live.get(key)
        if ann is None or not ann.labels:
            continue
        labelled_failures += failed
        for name in ann.labels:
            counts[name] = counts.get(name, 0) + 1
            if failed:
                failure_counts[name] = failure_counts.get(name, 0) + 1
    corrected = {k: a.corrected_score for k, a in live.items() if a.corrected_score is not None}
    recorded_mean = corrected_mean = None
    if corrected:
        recorded_mean = task_mean(records.values(), task_ids)
        corrected_mean = task_mean(records.values(), task_ids, corrected)
    return SelectorTaxonomy(
        label=label,
        attempts=len(records),
        failures=failures,
        labelled_failures=labelled_failures,
        labelled_attempts=sum(1 for a in live.values() if a.labels),
        counts=_ordered(counts, label_set),
        failure_counts=_ordered(failure_counts, label_set),
        notes=sum(1 for a in live.values() if a.note),
        corrected=len(corrected),
        stale=len(annotations) - len(live),
        corrected_mean=corrected_mean,
        recorded_mean=recorded_mean,
    )


def task_mean(
    records: Iterable[AttemptRecord], task_ids: Sequence[str] | None = None, scores: Mapping[Key, float] | None = None
) -> float | None:
    """The mean over tasks of each task's mean score (the estimand of core.stats.selector), with ``scores`` in place of
    the recorded ones for the attempts it names; only ``task_ids`` when given."""
    wanted = set(task_ids) if task_ids is not None else None
    per: dict[str, list[float]] = {}
    for rec in records:
        if wanted is not None and rec.id not in wanted:
            continue
        s = scores.get(rec.key, rec.judge.score) if scores else rec.judge.score
        per.setdefault(rec.id, []).append(s if math.isfinite(s) else 0.0)
    if not per:
        return None
    return sum(sum(v) / len(v) for v in per.values()) / len(per)


def task_labels(records: Mapping[Key, AttemptRecord], annotations: Mapping[Key, Annotation]) -> dict[str, set[str]]:
    """task id -> the labels any of its attempts carries."""
    out: dict[str, set[str]] = {}
    for key, ann in applying(annotations, records).items():
        if ann.labels:
            out.setdefault(key[0], set()).update(ann.labels)
    return out


def untriaged_tasks(
    records: Mapping[Key, AttemptRecord], annotations: Mapping[Key, Annotation], threshold: float = SOLVED_THRESHOLD
) -> set[str]:
    """Tasks with a failure that carries no label."""
    live = applying(annotations, records)
    return {k[0] for k, r in records.items() if is_failure(r, threshold) and not (k in live and live[k].labels)}


def pair_taxonomy(
    a: str,
    records_a: Mapping[Key, AttemptRecord],
    annotations_a: Mapping[Key, Annotation],
    b: str,
    records_b: Mapping[Key, AttemptRecord],
    annotations_b: Mapping[Key, Annotation],
    label_set: Sequence[str] = DEFAULT_LABEL_SET,
    task_order: Sequence[str] | None = None,
    threshold: float = SOLVED_THRESHOLD,
) -> PairTaxonomy:
    """Per label, on the tasks both evaluations attempted: the tasks where ``a`` had it and ``b`` does not (fixed),
    where ``b`` has it and ``a`` did not (introduced), and where both do. A label missing on one side says something
    only where that side was triaged: when that side has a failure on the task that carries no label, the task is
    ``untriaged`` instead of fixed or introduced."""
    return pair_changes(
        a,
        b,
        task_labels(records_a, annotations_a),
        task_labels(records_b, annotations_b),
        untriaged_tasks(records_a, annotations_a, threshold),
        untriaged_tasks(records_b, annotations_b, threshold),
        {k[0] for k in records_a} & {k[0] for k in records_b},
        label_set,
        task_order,
    )


def pair_changes(
    a: str,
    b: str,
    ta: Mapping[str, set[str]],
    tb: Mapping[str, set[str]],
    open_a: set[str],
    open_b: set[str],
    paired: set[str],
    label_set: Sequence[str] = DEFAULT_LABEL_SET,
    task_order: Sequence[str] | None = None,
) -> PairTaxonomy:
    """:func:`pair_taxonomy` from its parts: each side's labels per task, its untriaged tasks, the paired tasks."""
    rank = {tid: i for i, tid in enumerate(task_order or [])}

    def order(ids: Iterable[str]) -> list[str]:
        return sorted(ids, key=lambda t: (rank.get(t, len(rank)), t))

    names = {n for v in (*ta.values(), *tb.values()) for n in v}
    out = []
    for name in names:
        in_a = {t for t, v in ta.items() if name in v and t in paired}
        in_b = {t for t, v in tb.items() if name in v and t in paired}
        only_a, only_b = in_a - in_b, in_b - in_a
        out.append(
            LabelChange(
                label=name,
                a_tasks=len(in_a),
                b_tasks=len(in_b),
                fixed=order(only_a - open_b),
                introduced=order(only_b - open_a),
                both=order(in_a & in_b),
                untriaged=order((only_a & open_b) | (only_b & open_a)),
            )
        )
    set_rank = {label: i for i, label in enumerate(label_set)}
    out.sort(key=lambda c: (-(c.a_tasks + c.b_tasks), set_rank.get(c.label, len(set_rank)), c.label))
    return PairTaxonomy(a=a, b=b, labels=out)


__all__ = [
    "ANNOTATIONS",
    "DEFAULT_LABEL_SET",
    "JUDGE_DISAGREES",
    "MAX_LABELS",
    "Annotation",
    "AnnotationsFile",
    "Change",
    "FailureTaxonomy",
    "LabelChange",
    "PairTaxonomy",
    "SelectorTaxonomy",
    "applying",
    "pair_changes",
    "attempt_digest",
    "check_label",
    "check_label_set",
    "check_note",
    "check_score",
    "is_failure",
    "pair_taxonomy",
    "parse_annotations",
    "read_annotations",
    "selector_taxonomy",
    "task_labels",
    "task_mean",
    "update_annotation",
]
