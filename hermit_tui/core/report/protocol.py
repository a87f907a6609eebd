"""Protocol checks and test-reuse accounting: what can make a test figure less than untouched evidence.

The checks read the current config and task rows, and the training run's own records when there are any: the
resolved ``<run dir>/config.yaml`` hermit writes at the start of training (its ``config`` mapping), the run's
``summary.json`` and ``CARD.md``, and ``<run dir>/access/validation/`` where hermit copies the validation rows it
hands to the Evolver. A check states only what these files show; when they cannot tell, it says nothing.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel

from hermit_tui.core.errors import InputError
from hermit_tui.core.records.results import SOLVED_THRESHOLD, AttemptRecord
from hermit_tui.core.workspace.config import Config
from hermit_tui.core.workspace.files import load_yaml, read_text
from hermit_tui.core.workspace.tasks import TaskSet
from hermit_tui.core.workspace.tree import AdapterTree

ANSWER_FIELDS = frozenset(
    {
        "answer",
        "answers",
        "expected",
        "expected_output",
        "label",
        "labels",
        "solution",
        "target",
        "gold",
        "ground_truth",
    }
)
VAL_WARNING = "validation data is given to the evolver"  # hermit's start-of-training warning, lowercased
CARD_VAL = re.compile(r"^- validation data given to the Evolver: True\s*$", re.M)
SHOWN_IDS = 5


class Check(BaseModel):
    """One finding: ``error`` compromises the test figures, ``warning`` may, ``info`` is context."""

    level: Literal["warning", "error", "info"]
    code: str
    message: str


def _ids(ids: list[str]) -> str:
    return ", ".join(ids[:SHOWN_IDS]) + (", …" if len(ids) > SHOWN_IDS else "")


def _tasks(n: int) -> str:
    return f"{n} task{'s' * (n != 1)}"


def _items(value: Any) -> list[Any]:
    """A config list as a list (one string counts as a list of one; anything else as empty)."""
    return list(value) if isinstance(value, (list, tuple)) else [value] if isinstance(value, str) else []


def _get(data: Any, dotted: str, default: Any = None) -> Any:
    for part in dotted.split("."):
        if not isinstance(data, Mapping) or part not in data:
            return default
        data = data[part]
    return data


# ---------------------------------------------------------------------------------------------------- the run


def _shown(path: Path, base: Path) -> str:
    """A path as the user sees the workspace: relative to the config's folder when inside it."""
    try:
        return str(Path(path).relative_to(base))
    except ValueError:
        return str(path)


class _Training:
    """The training config (the run's resolved config.yaml when it exists, else the current config) and the
    run folder."""

    def __init__(self, config: Config) -> None:
        self.config = config
        try:
            self.run_dir: Path | None = Path(config.run_dir)
        except InputError:
            self.run_dir = None
        self.data: Any = config.data
        self.source = config.shown
        self.from_run = False
        self.run_warnings: list[str] = []
        path = self.run_dir / "config.yaml" if self.run_dir else None
        if path is not None and path.is_file():
            try:
                resolved = load_yaml(read_text(path), str(path))
            except (OSError, UnicodeDecodeError, yaml.YAMLError, InputError):
                resolved = None
            if isinstance(resolved, Mapping) and isinstance(resolved.get("config"), Mapping):
                self.data, self.source, self.from_run = resolved["config"], _shown(path, config.base), True
                self.run_warnings += [str(w) for w in resolved.get("warnings") or [] if w]
        summary = self.run_dir / "summary.json" if self.run_dir else None
        if summary is not None and summary.is_file():
            try:
                found = json.loads(read_text(summary))
                self.run_warnings += [str(w) for w in found.get("warnings") or [] if w]
            except (OSError, ValueError, AttributeError, RecursionError):
                pass

    def get(self, dotted: str, default: Any = None) -> Any:
        return _get(self.data, dotted, default)

    def path(self, value: Any) -> Path | None:
        try:
            return self.config.resolve_path(value) if isinstance(value, (str, int, float)) else None
        except (OSError, ValueError, RuntimeError):
            return None


def _split_ids(path: Path | None) -> list[str] | None:
    """The ids of a split file, read leniently (None when it cannot be read)."""
    try:
        text = read_text(path) if path else None
    except (OSError, UnicodeDecodeError):
        return None
    if text is None:
        return None
    return [s for s in (line.strip() for line in text.splitlines()) if s and not s.startswith("#")]


def _row_ids(path: Path) -> list[str] | None:
    """The ids of a JSONL task file, read leniently."""
    try:
        lines = read_text(path).splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    out = []
    for line in lines:
        try:
            row = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(row, dict) and ("id" in row or "task_id" in row):
            out.append(str(row["id"] if "id" in row else row["task_id"]))
    return out


# ---------------------------------------------------------------------------------------------------- checks


def _overlap(taskset: TaskSet) -> list[Check]:
    test = taskset.test_ids
    out = []
    for other in ("train", "val"):
        mine = set(taskset.splits.get(other, []))
        common = [t for t in test if t in mine]
        if common:
            out.append(
                Check(
                    level="error",
                    code="test_overlap",
                    message=(
                        f"test overlaps {other}: {_tasks(len(common))} ({_ids(common)}) were available for learning or "
                        "selection, so the test figures on them are not untouched evidence"
                    ),
                )
            )
    return out


def _answer_keys(row: Any, prefix: str = "") -> Iterable[str]:
    if isinstance(row, Mapping):
        for key, value in row.items():
            dotted = f"{prefix}{key}"
            if str(key).lower() in ANSWER_FIELDS:
                yield dotted
            yield from _answer_keys(value, dotted + ".")


def _answer_fields(taskset: TaskSet) -> list[Check]:
    out = []
    for split in ("train", "val"):
        fields: dict[str, int] = {}
        rows = 0
        for tid in taskset.splits.get(split, []):
            keys = set(_answer_keys(taskset.tasks.get(tid, {})))
            rows += bool(keys)
            for key in keys:
                fields[key] = fields.get(key, 0) + 1
        if rows:
            named = ", ".join(f"{k} ({n})" for k, n in sorted(fields.items()))
            rows_carry = f"{rows} {split} task row{'s' * (rows != 1)} {'carries' if rows == 1 else 'carry'}"
            out.append(
                Check(
                    level="warning",
                    code="answer_fields",
                    message=(
                        f"{rows_carry} answer-like fields: {named}. Every task "
                        "field is visible in learning material when the task is used for training; keep private "
                        "labels in judge-owned storage"
                    ),
                )
            )
    return out


def _sandbox(training: _Training) -> list[Check]:
    where = f"in {training.source}"
    if training.get("sandbox.enabled", True) is False:
        return [
            Check(
                level="warning",
                code="sandbox_disabled",
                message=(
                    f"the sandbox was disabled during training (sandbox.enabled: false {where}): the Evolver could "
                    "read anything on the machine, the test split and the judge's data included"
                ),
            )
        ]
    if _get(training.get("sandbox.profiles"), "learner.enabled", True) is False:
        return [
            Check(
                level="warning",
                code="sandbox_disabled",
                message=(
                    f"the learner's sandbox was disabled during training (sandbox.profiles.learner.enabled: false "
                    f"{where}): the Evolver could read anything on the machine, the test split included"
                ),
            )
        ]
    return []


def _grants(config: Config, training: _Training) -> list[Check]:
    """Read grants that equal or hold the test split file or the tasks file."""
    targets: dict[Path, str] = {}
    for cfg_path, what in ((config.test_path, "the test split"), (config.tasks_path, "the tasks file")):
        if cfg_path is not None:
            targets.setdefault(cfg_path, f"{what} {cfg_path.name}")
    if training.from_run:
        for key, what in (("data.test", "the run's test split"), ("data.tasks", "the run's tasks file")):
            found = training.path(training.get(key))
            if found is not None:
                targets.setdefault(found, f"{what} {found.name}")
    grants: list[tuple[str, Any]] = [
        (f"sandbox.read[{i}]", v) for i, v in enumerate(_items(training.get("sandbox.read")))
    ]
    profiles = training.get("sandbox.profiles") or {}
    if isinstance(profiles, Mapping):
        for role, prof in profiles.items():
            reads = _items(_get(prof, "read"))
            grants += [(f"sandbox.profiles.{role}.read[{i}]", v) for i, v in enumerate(reads)]
    for key in ("environment", "tools"):
        items = _items(training.get(f"evolver_access.{key}"))
        grants += [(f"evolver_access.{key}[{i}]", v) for i, v in enumerate(items) if isinstance(v, str)]
    out = []
    for key, value in grants:
        grant = training.path(value)
        if grant is None:
            continue
        exposed = [what for target, what in targets.items() if grant == target or grant in target.parents]
        if exposed:
            verb = "is" if any(grant == t for t in targets) else "holds"
            out.append(
                Check(
                    level="warning",
                    code="grant_exposes_test",
                    message=(
                        f"{key} grants {value!r} ({_shown(grant, config.base)}), which {verb} {' and '.join(exposed)} "
                        f"({training.source}): the Evolver could read the test rows during training"
                    ),
                )
            )
    return out


def _validation(taskset: TaskSet, training: _Training) -> list[Check]:
    """Validation rows handed to the Evolver, when the run's records show it (hermit 0.1.0 copies data.val into
    ``<run dir>/access/validation/tasks.jsonl``, readable by the Evolver, whenever data.val is set)."""
    run_dir = training.run_dir
    evidence, ids = [], None
    copied = run_dir / "access" / "validation" / "tasks.jsonl" if run_dir else None
    if copied is not None and copied.is_file():
        evidence.append(f"its rows are in {copied}")
        ids = _row_ids(copied)
    if training.from_run and training.get("data.val"):
        evidence.append(f"data.val is set in {training.source}, and hermit hands those rows to the Evolver")
        if ids is None:
            ids = _split_ids(training.path(training.get("data.val")))
    if any(VAL_WARNING in w.lower() for w in training.run_warnings):
        evidence.append("the run's start-of-training warnings say so")
    card = run_dir / "checkout" / "CARD.md" if run_dir else None
    try:
        if card is not None and card.is_file() and CARD_VAL.search(card.read_text(encoding="utf-8")):
            evidence.append("the run's CARD.md says so")
    except (OSError, UnicodeDecodeError):
        pass
    if not evidence:
        return []
    why = "; ".join(evidence)
    test = set(taskset.test_ids)
    leaked = [t for t in ids or [] if t in test]
    if leaked:
        return [
            Check(
                level="error",
                code="val_to_evolver",
                message=(
                    f"the validation data handed to the Evolver includes {_tasks(len(leaked))} of the test split "
                    f"({_ids(leaked)}): {why}"
                ),
            )
        ]
    size = f" ({_tasks(len(ids))})" if ids is not None else ""
    return [
        Check(
            level="info",
            code="val_to_evolver",
            message=(
                f"validation data{size} was handed to the Evolver ({why}): validation scores guided selection and are "
                "not test evidence"
            ),
        )
    ]


def _ordered(training: _Training) -> list[Check]:
    if training.get("data.shuffle", True) is False:
        return [
            Check(
                level="info",
                code="ordered_stream",
                message=(
                    f"data.shuffle is false ({training.source}): the tasks form an ordered stream. Where the "
                    "benchmark has task-specific state and ordering (ServeLearnBench, CL-Bench), follow its own "
                    "protocol: one aggregate evaluation of final does not substitute for it"
                ),
            )
        ]
    return []


def protocol_checks(config: Config, taskset: TaskSet) -> list[Check]:
    """Everything found in the config, the task rows and the run's training records, errors first."""
    training = _Training(config)
    checks = [
        *_overlap(taskset),
        *_answer_fields(taskset),
        *_sandbox(training),
        *_grants(config, training),
        *_validation(taskset, training),
        *_ordered(training),
    ]
    order = {"error": 0, "warning": 1, "info": 2}
    return sorted(checks, key=lambda c: order[c.level])


def checks_for_display(config: Config, taskset: TaskSet) -> list[Check]:
    """:func:`protocol_checks` for a view that must open whatever happens: a check that cannot run is itself a
    warning, never an exception."""
    try:
        return protocol_checks(config, taskset)
    except Exception as exc:  # a check that cannot run must not hide the screen that lists them
        return [Check(level="warning", code="checks_failed", message=f"protocol checks failed: {exc}")]


def score_scale_check(
    records_by_label: Mapping[str, Iterable[Any]], threshold: float = SOLVED_THRESHOLD
) -> Check | None:
    """A check when some score falls outside [0, 1]; records are AttemptRecords, (id, repeat, score) or numbers."""
    low: float | None = None
    high: float | None = None
    where = []
    for label, records in records_by_label.items():
        outside = False
        for rec in records:
            score = rec.judge.score if isinstance(rec, AttemptRecord) else rec[2] if isinstance(rec, tuple) else rec
            score = float(score)
            if not math.isfinite(score):
                continue
            low = score if low is None else min(low, score)
            high = score if high is None else max(high, score)
            outside = outside or not 0 <= score <= 1
        if outside:
            where.append(label)
    if not where:
        return None
    seen = f"scores range from {low:g} to {high:g} ({', '.join(where)}), outside [0, 1]"
    if threshold != SOLVED_THRESHOLD:
        return Check(
            level="info",
            code="score_scale",
            message=(
                f"{seen}: the solved rates here use the success threshold {threshold:g} you set; the files keep "
                f"hermit's {SOLVED_THRESHOLD:g}"
            ),
        )
    return Check(
        level="warning",
        code="score_scale",
        message=(
            f"{seen}: solved-at-least-once (threshold 1.0) is not a meaningful solved rate for this benchmark; set a "
            "success threshold"
        ),
    )


# ---------------------------------------------------------------------------------------------------- test reuse


class AdapterSeen(BaseModel):
    """One distinct adapter evaluated on the test split, and the evaluations that measured it."""

    identity: str  # "commit:<sha>", "dir:<content hash>", or "dir-named:<selector>" when hermit recorded neither
    commit: str | None = None
    content_hash: str | None = None
    evaluations: list[str]
    is_final: bool


class TestReuse(BaseModel):
    """How many different adapters of a run were evaluated on one test split (``none`` left out)."""

    __test__ = False  # not a pytest test class

    adapters: int
    non_final: int
    evaluations: int  # evaluations of an adapter on this split, archived ones included
    other_split: int  # evaluations left out: another test split (or a smoke subset), or no readable summary
    seen: list[AdapterSeen]
    note: str | None
    checkpoints: int = 0  # checkpoints of the run evaluated on this split (the checkpoint curve's points)
    final_checkpoint: str | None = None  # the checkpoint final is the adapter of (a checkpoint published), if any


_SHA = re.compile(r"[0-9a-f]{40}")
CARD_FILE = "CARD.md"


def _measured(tree: AdapterTree | None, sha: str, memo: dict[str, str] | None = None) -> str:
    """The commit whose adapter ``sha`` holds: card commits (whose only change is CARD.md) are followed back to
    their parent, so a final re-measured after its card update is still one adapter. ``memo``: the answers already
    found (a commit never changes, so each sha is followed once per count, however many evaluations name it)."""
    if tree is None or not _SHA.fullmatch(sha or ""):
        return sha
    if memo is not None:
        if sha not in memo:
            memo[sha] = _measured(tree, sha)
        return memo[sha]
    for _ in range(100):
        try:
            parents, _ = tree.reader.commit(sha)
            if len(parents) != 1:
                return sha
            parent = parents[0]
            # every path the commit changed (a rename: both of its names), as GitPython's parent.diff(commit) had it
            out = tree.reader.run(
                "diff-tree", "-r", "-z", "--name-only", "--no-renames", "--end-of-options", parent, sha
            )
            changed = {p for p in out.decode("utf-8", "surrogateescape").split("\0") if p}
        except Exception:  # a commit missing from the tree: keep the sha as recorded
            return sha
        if not changed or not changed <= {CARD_FILE}:
            return sha
        sha = parent
    return sha


def test_reuse(run_dir: Path, tree: AdapterTree | None, test_ids: list[str] | None = None) -> TestReuse:
    """Count the different adapters of this run evaluated on the test split ``test_ids`` (None: every split).

    Reads every current and archived summary. Adapters differ by commit (card-only commits followed back, when
    ``tree`` — an AdapterTree or None — is given) or by directory content hash. An evaluation is on this split
    when its fingerprint's test ids match, or, for a summary written by hermit, when its task count matches.
    """
    from hermit_tui.core.records.folders import list_evaluations
    from hermit_tui.core.workspace.fingerprint import _digest

    wanted = _digest([str(t) for t in test_ids]) if test_ids is not None else None
    run_name = Path(run_dir).name
    final_tag = tree.tag_target(f"{run_name}/final") if tree is not None else None
    memo: dict[str, str] = {}
    final_ids = {f"commit:{_measured(tree, final_tag, memo)}"} if final_tag else set()
    from hermit_tui.core.why.versions import kind_of

    seen: dict[str, AdapterSeen] = {}
    checkpoint_of: dict[str, str] = {}  # identity -> a checkpoint selector evaluated with it
    evaluations = other = 0
    for stored in list_evaluations(run_dir):
        summary = stored.summary
        if summary is None:
            other += 1
            continue
        if summary.adapter == "none" and summary.commit is None and summary.content_hash is None:
            continue
        if wanted is not None and test_ids is not None:
            fp = summary.fingerprint
            same = fp.test_ids_sha256 == wanted if fp else summary.tasks == len(test_ids)
            if not same:
                other += 1
                continue
        evaluations += 1
        if summary.commit:
            identity = f"commit:{_measured(tree, summary.commit, memo)}"
        elif summary.content_hash:
            identity = f"dir:{summary.content_hash}"
        else:
            identity = f"dir-named:{summary.adapter}"
        entry = seen.setdefault(
            identity,
            AdapterSeen(
                identity=identity,
                commit=summary.commit,
                content_hash=summary.content_hash,
                evaluations=[],
                is_final=False,
            ),
        )
        entry.evaluations.append(stored.name)
        if kind_of(summary.adapter)[0] == "checkpoint":
            checkpoint_of.setdefault(identity, summary.adapter)
        if stored.label == "final" or summary.adapter == "final":
            final_ids.add(identity)
    for entry in seen.values():
        entry.is_final = entry.identity in final_ids
    adapters = len(seen)
    non_final = sum(not e.is_final for e in seen.values())
    note = None
    if non_final > 1:
        note = (
            f"final was chosen after {adapters} adapters of this run were compared on the test split: the test "
            "score of final is not an untouched estimate"
        )
    published = next((checkpoint_of[i] for i in final_ids if i in checkpoint_of), None)
    if published is not None and _training_final(run_dir, tree, memo) in final_ids:
        published = None  # final is the checkpoint the training itself ended on (hermit's own choice)
    elif published is not None and _training_final(run_dir, tree, memo) is None:
        last = max(checkpoint_of.values(), key=lambda sel: kind_of(sel)[1] or 0)
        published = None if published == last else published  # without the run's summary: the last is no choice
    if published is not None and len(checkpoint_of) > 1:
        note = (note + "; " if note else "") + (
            f"final is the adapter of {published}, one of {len(checkpoint_of)} checkpoints evaluated on this test "
            "split: a checkpoint picked by its test score (the checkpoint curve) was selected on test"
        )
    return TestReuse(
        adapters=adapters,
        non_final=non_final,
        evaluations=evaluations,
        other_split=other,
        seen=list(seen.values()),
        note=note,
        checkpoints=len(checkpoint_of),
        final_checkpoint=published,
    )


def _training_final(run_dir: Path, tree: AdapterTree | None, memo: dict[str, str] | None = None) -> str | None:
    """The identity of the adapter hermit's training chose as final (the run's summary.json ``final_commit``)."""
    try:
        sha = json.loads((Path(run_dir) / "summary.json").read_text()).get("final_commit")
    except (OSError, ValueError, AttributeError):
        return None
    return f"commit:{_measured(tree, sha, memo)}" if isinstance(sha, str) and sha else None


test_reuse.__test__ = False  # type: ignore[attr-defined]  # its name must not make pytest collect it where a test module imports it

__all__ = [
    "ANSWER_FIELDS",
    "AdapterSeen",
    "Check",
    "TestReuse",
    "checks_for_display",
    "protocol_checks",
    "score_scale_check",
    "test_reuse",
]
