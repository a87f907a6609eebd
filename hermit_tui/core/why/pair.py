"""Why it changed, over a compared pair of evaluations: the adapter's diff beside the tasks the pair fixed, broke or
made flaky, where the trajectories first part ways, how tool use differs, and whether the adapter was used.

Attempts are paired by task and repeat (repeat r of ``a`` with repeat r of ``b``), on the test tasks both
evaluations attempted. Trajectories come from each evaluation's transcripts.jsonl, else from hermit's react logs.
The task transitions are ``core.stats.figures.pair_stats``'s, computed alone (``pair_transitions``; fixed: no repeat
of ``a`` solved it, every repeat of ``b`` did; broken the reverse; flaky: anything between, other than stable).
Everything here describes; nothing here is a causal claim.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import msgspec
from pydantic import BaseModel, Field

from hermit_tui.core.errors import InputError
from hermit_tui.core.records.folders import RESULTS, TRANSCRIPTS, eval_root
from hermit_tui.core.records.lines import pydantic_reads_alike
from hermit_tui.core.records.results import AttemptRecord, Status, read_results
from hermit_tui.core.records.transcripts import read_hermit_log
from hermit_tui.core.stats.figures import pair_transitions
from hermit_tui.core.why.adapter_diff import AdapterDiff, diff_versions
from hermit_tui.core.why.adapter_files import AdapterVersion, read_version
from hermit_tui.core.why.align import Alignment, Step, align, divergence_two, steps_of
from hermit_tui.core.why.usage import DESCRIPTIVE, RECORD_KEY, Usage, UsageHook, usage_of
from hermit_tui.core.workspace.config import Config
from hermit_tui.core.workspace.files import read_bytes

TIE = 1e-9
FLIPS = ("fixed", "broken", "flaky")

Key = tuple[str, int]


class ToolUse(BaseModel):
    tool: str
    calls: int
    calls_per_attempt: float
    attempts_using: int
    share_of_attempts: float
    errors: int  # results of its calls that report an error


class SelectorUse(BaseModel):
    label: str
    attempts: int
    with_transcript: int
    tools: list[ToolUse] = Field(default_factory=list)
    has_adapter: bool = False  # an adapter exporting tools, skills or subagents (whose use can be seen)
    used: int = 0  # attempts that used the adapter's exports (of those whose use is known)
    not_used: int = 0
    unknown: int = 0
    usage_by_export: dict[str, int] = Field(default_factory=dict)  # "tool lookup" -> attempts using it
    context_read: int = 0
    usage_source: dict[str, int] = Field(default_factory=dict)


class UsageGroup(BaseModel):
    group: str  # "used" or "not used"
    attempts: int
    tasks: int
    mean_score: float | None
    mean_diff: float | None  # mean over its attempts of (b's score - a's task mean)


class UsageSplit(BaseModel):
    label: str  # the selector whose attempts are split (b)
    groups: list[UsageGroup]
    note: str = DESCRIPTIVE


class PairWhy(BaseModel):
    a: str
    b: str
    diff: AdapterDiff | None  # None when a version could not be read (the note says why)
    flips: dict[str, list[str]]  # fixed / broken / flaky -> task ids
    paired_attempts: int = 0  # attempts paired by task and repeat with a trajectory on both sides
    divergence: dict[str, int] = Field(default_factory=dict)  # first divergence step ("1", "2"... or "never") -> n
    divergence_by_task: dict[str, list[int | None]] = Field(default_factory=dict)
    behaviour_changed_score_not: list[str] = Field(default_factory=list)
    score_changed_behaviour_not: list[str] = Field(default_factory=list)
    use: list[SelectorUse] = Field(default_factory=list)
    usage_split: UsageSplit | None = None
    notes: list[str] = Field(default_factory=list)


class _Head(msgspec.Struct):
    """What a transcripts.jsonl line is looked up by (the rest of the line is decoded only when it is asked for)."""

    id: Any = None
    repeat: Any = None


_HEAD = msgspec.json.Decoder(_Head)


def _sidecar(folder: Path) -> dict[Key, bytes]:
    """Every attempt's last line of a transcripts.jsonl, undecoded (damaged lines skipped): a line's bytes take a
    fraction of the memory of its decoded messages, and each is decoded once, when its steps are read."""
    path = folder / TRANSCRIPTS
    out: dict[Key, bytes] = {}
    if not path.is_file():
        return out
    with open(path, "rb") as fh:
        for line in fh:
            try:
                head = _HEAD.decode(line)
                key = (str(head.id), int(head.repeat))
            except (msgspec.DecodeError, msgspec.ValidationError, TypeError, ValueError):
                continue
            if head.id is not None:
                out[key] = line
    return out


def _messages(line: bytes) -> list[Any] | None:
    try:
        data = msgspec.json.decode(line)
    except msgspec.DecodeError:
        return None
    messages = data.get("messages") if isinstance(data, dict) else None
    return messages if isinstance(messages, list) or messages is None else [messages]


class _LightJudge(msgspec.Struct, gc=False):
    score: float
    feedback: str = ""
    extra: dict[str, Any] | None = None


class LightRecord(msgspec.Struct, gc=False):
    """A results.jsonl line as the why summary reads it, without a pydantic record: every field ``AttemptRecord``
    types, with its types (msgspec is stricter: a value pydantic would coerce is refused here, and the file is then
    read by ``read_results``), the values read by nobody here (output, api_speed, tokens) checked as JSON but left
    undecoded, and the adapter-usage key hermit-tui's pipelines may record (``core.why.usage.RECORD_KEY``)."""

    repeat: int
    id: str
    status: Status
    judge: _LightJudge
    error: str | None = None
    output: msgspec.Raw = msgspec.Raw(b"null")
    cost_usd: float | None = None
    wall_s: float = 0.0
    api_speed: msgspec.Raw = msgspec.Raw(b"null")
    tokens: msgspec.Raw = msgspec.Raw(b"null")
    log: str | None = None
    traceback: str | None = None
    printed: str | None = None
    replaced_surrogates: list[str] | None = None
    usage: Any = msgspec.field(default=None, name=RECORD_KEY)

    @property
    def key(self) -> Key:
        return (self.id, self.repeat)


_LIGHT = msgspec.json.Decoder(LightRecord)


def light_records(path: Path) -> list[LightRecord] | None:
    """Every record of a results.jsonl as a :class:`LightRecord`, in file order, when every line reads so and
    pydantic would read it alike (valid UTF-8, not nested deeper than pydantic reads: ``core.records.lines``'s
    checks); None otherwise, and ``read_results`` reads the file (its records, its truncated last line, its one-line
    error). Building a pydantic AttemptRecord per line was most of a 10,008-attempt report's why summary (issue 30)."""
    try:
        raw = read_bytes(path)
    except OSError:
        return None
    out = []
    for line in raw.split(b"\n"):
        if not line.strip():
            continue
        if not pydantic_reads_alike(line):
            return None
        try:
            out.append(_LIGHT.decode(line))
        except (msgspec.ValidationError, msgspec.DecodeError):
            return None
    return out


#: an evaluation of at most this many attempts keeps the compact steps it read: a report's pairs share their
#: selectors (none-root, none-final, root-final: each evaluation in two), and a larger one reads them again rather
#: than hold every trajectory (the memory stays that of one attempt's steps)
STEPS_KEPT = 1_000


class Evaluation:
    """One label's current evaluation: its records and, on demand, each attempt's messages and steps."""

    def __init__(self, config: Config, label: str):
        self.label = label
        self.folder = eval_root(config.run_dir) / label
        if not (self.folder / RESULTS).is_file():
            raise InputError(f"{self.folder / RESULTS}: no evaluation of '{label}'")
        last: dict[Key, AttemptRecord | LightRecord] = {}
        records = light_records(self.folder / RESULTS)
        for rec in records if records is not None else read_results(self.folder / RESULTS).records:
            last[rec.key] = rec
        self.by_key = last
        self._sidecar: dict[Key, bytes] | None = None
        self._compact: dict[Key, list[Step] | None] | None = {} if len(last) <= STEPS_KEPT else None

    def messages(self, key: Key) -> list[Any] | None:
        if self._sidecar is None:
            self._sidecar = _sidecar(self.folder)
        line = self._sidecar.get(key)
        found = _messages(line) if line is not None else None
        if found is not None:
            return found
        rec = self.by_key.get(key)
        if rec is None or not rec.log:
            return None  # read_hermit_log's note without a log, which nothing here shows
        return read_hermit_log(rec.log).messages

    def steps(self, key: Key, *, pretty: bool = True) -> list[Step] | None:
        """The attempt's steps (read only: the compact ones of a small evaluation are kept and handed out again)."""
        kept = self._compact if not pretty else None
        if kept is not None and key in kept:
            return kept[key]
        messages = self.messages(key)
        steps = None if messages is None else steps_of(messages, pretty=pretty)
        if kept is not None:
            kept[key] = steps
        return steps


def _record_usage(rec: AttemptRecord | LightRecord) -> Any:
    extra = rec.judge.extra if isinstance(rec.judge.extra, dict) else {}
    if RECORD_KEY in extra:
        return extra[RECORD_KEY]
    if isinstance(rec, LightRecord):
        return rec.usage
    return (rec.model_extra or {}).get(RECORD_KEY)


class _UseCounter:
    """One selector's tool use and adapter usage, counted attempt by attempt (the steps are not kept)."""

    def __init__(self, ev: Evaluation, version: AdapterVersion | None, hook: UsageHook | None):
        self.ev, self.hook = ev, hook
        exports = version.exports if version is not None and version.has_adapter else None
        if exports is not None and not (exports.tools or exports.skills or exports.agents):
            exports = None  # it exports its context alone: nothing whose use can be seen
        self.exports = exports
        self.calls: Counter[str] = Counter()
        self.using: Counter[str] = Counter()
        self.errors: Counter[str] = Counter()
        self.usages: dict[Key, Usage] = {}
        self.out = SelectorUse(label=ev.label, attempts=0, with_transcript=0, has_adapter=exports is not None)

    def add(self, key: Key, s: list[Step] | None) -> None:
        out = self.out
        out.attempts += 1
        if s is not None:
            out.with_transcript += 1
            seen: set[str] = set()
            for st in s:
                if st.kind == "call":
                    tool = st.tool or "?"
                    self.calls[tool] += 1
                    seen.add(tool)
                elif st.kind == "result" and st.error:
                    self.errors[st.tool or "?"] += 1
            for tool in seen:
                self.using[tool] += 1
        if self.exports is None:
            return
        rec = self.ev.by_key[key]
        messages = self.ev.messages(key) if self.hook is not None else None
        u = usage_of(s, messages, self.exports, _record_usage(rec), self.hook)
        self.usages[key] = u
        out.usage_source[u.source] = out.usage_source.get(u.source, 0) + 1
        if u.used is None:
            out.unknown += 1
            return
        out.used += u.used
        out.not_used += not u.used
        out.context_read += u.context_read
        for kind, names in (("tool", u.tools), ("skill", u.skills), ("subagent", u.agents)):
            for name in names:
                label = f"{kind} {name}"
                out.usage_by_export[label] = out.usage_by_export.get(label, 0) + 1

    def result(self) -> SelectorUse:
        out, calls = self.out, self.calls
        n = max(out.with_transcript, 1)
        out.tools = [
            ToolUse(
                tool=tool,
                calls=calls[tool],
                calls_per_attempt=round(calls[tool] / n, 3),
                attempts_using=self.using[tool],
                share_of_attempts=round(self.using[tool] / n, 3),
                errors=self.errors[tool],
            )
            for tool in sorted(calls, key=lambda t: (-calls[t], t))
        ]
        return out


def _task_means(ev: Evaluation, keys: Sequence[Key]) -> dict[str, float]:
    scores: dict[str, list[float]] = defaultdict(list)
    for key in keys:
        rec = ev.by_key[key]
        scores[key[0]].append(rec.judge.score if rec.status == "ok" else 0.0)
    return {t: sum(v) / len(v) for t, v in scores.items()}


def _split(
    b: Evaluation, keys_b: Sequence[Key], usages: dict[Key, Usage], means_a: dict[str, float]
) -> UsageSplit | None:
    if not usages:
        return None
    groups = []
    for name, flag in (("used", True), ("not used", False)):
        keys = [k for k in keys_b if usages.get(k) is not None and usages[k].used is flag and k[0] in means_a]
        scores = [b.by_key[k].judge.score if b.by_key[k].status == "ok" else 0.0 for k in keys]
        diffs = [s - means_a[k[0]] for s, k in zip(scores, keys)]
        groups.append(
            UsageGroup(
                group=name,
                attempts=len(keys),
                tasks=len({k[0] for k in keys}),
                mean_score=round(sum(scores) / len(scores), 4) if scores else None,
                mean_diff=round(sum(diffs) / len(diffs), 4) if diffs else None,
            )
        )
    return UsageSplit(label=b.label, groups=groups)


class _Reads:
    """Adapter versions and evaluations read once for several pairs (each version handed out as its own copy: a
    pair's notes stay its own; an evaluation is only read from)."""

    def __init__(self, config: Config):
        self.config = config
        self._versions: dict[str, AdapterVersion | InputError] = {}
        self._evaluations: dict[str, Evaluation] = {}

    def version(self, text: str) -> AdapterVersion:
        if text not in self._versions:
            try:
                self._versions[text] = read_version(text, self.config)
            except InputError as exc:
                self._versions[text] = exc
        found = self._versions[text]
        if isinstance(found, InputError):
            raise found
        return found.model_copy(deep=True)

    def evaluation(self, label: str) -> Evaluation:
        if label not in self._evaluations:
            self._evaluations[label] = Evaluation(self.config, label)
        return self._evaluations[label]


def pair_why(
    config: Config,
    a_text: str,
    b_text: str,
    test_ids: Sequence[str],
    hook: UsageHook | None = None,
    pause: Callable[[], None] | None = None,
    reads: _Reads | None = None,
) -> PairWhy:
    """The diff of ``a`` and ``b``'s adapter versions, and, when both are evaluated, what their attempts show.
    InputError (one line) when either names no adapter version. ``reads`` shares the versions and evaluations
    read among the pairs of one report."""
    reads = reads or _Reads(config)
    va, vb = reads.version(a_text), reads.version(b_text)
    diff = diff_versions(va, vb)
    out = PairWhy(a=va.label, b=vb.label, diff=diff, flips={k: [] for k in FLIPS})
    evaluated = {label: (eval_root(config.run_dir) / label / RESULTS).is_file() for label in (va.label, vb.label)}
    missing = [label for label, ok in evaluated.items() if not ok]
    if missing:
        out.notes.append(f"not evaluated: {', '.join(missing)}; no tasks, trajectories or usage to show")
        return out
    ea, eb = reads.evaluation(va.label), reads.evaluation(vb.label)
    tests = set(test_ids)
    keys_a = [k for k in ea.by_key if k[0] in tests]
    keys_b = [k for k in eb.by_key if k[0] in tests]
    scored_a = [(r.id, r.repeat, r.judge.score) for r in ea.by_key.values()]
    scored_b = [(r.id, r.repeat, r.judge.score) for r in eb.by_key.values()]
    transitions = pair_transitions(scored_a, scored_b, list(test_ids))
    out.flips = {k: sorted(transitions.get(k, [])) for k in FLIPS}
    use_a, use_b = _UseCounter(ea, va, hook), _UseCounter(eb, vb, hook)
    in_a, in_b = set(keys_a), set(keys_b)
    by_task: dict[str, list[int | None]] = defaultdict(list)
    hist: Counter[str] = Counter()
    # attempt by attempt, each trajectory read once and dropped: the memory stays that of one attempt's steps
    for i, key in enumerate(sorted(in_a | in_b)):
        sa = ea.steps(key, pretty=False) if key in in_a else None
        sb = eb.steps(key, pretty=False) if key in in_b else None
        if key in in_a:
            use_a.add(key, sa)
        if key in in_b:
            use_b.add(key, sb)
        if sa is not None and sb is not None:
            step = divergence_two(sa, sb)  # align()'s divergence step, without building the alignment
            by_task[key[0]].append(step)
            hist[str(step) if step is not None else "never"] += 1
        if pause is not None and i % 200 == 0:
            pause()
    out.paired_attempts = sum(hist.values())
    out.divergence = dict(sorted(hist.items(), key=lambda kv: (kv[0] == "never", int(kv[0]) if kv[0].isdigit() else 0)))
    out.divergence_by_task = dict(sorted(by_task.items()))
    means_a, means_b = _task_means(ea, keys_a), _task_means(eb, keys_b)
    for task, steps in out.divergence_by_task.items():
        if task not in means_a or task not in means_b:
            continue
        changed = any(s is not None for s in steps)
        scored = abs(means_b[task] - means_a[task]) > TIE
        if changed and not scored:
            out.behaviour_changed_score_not.append(task)
        elif scored and not changed:
            out.score_changed_behaviour_not.append(task)
    out.use = [use_a.result(), use_b.result()]
    out.usage_split = _split(eb, keys_b, use_b.usages, means_a)
    if not out.paired_attempts:
        out.notes.append("no attempt has a trajectory on both sides: no alignment to summarise")
    return out


def pairs_why(
    config: Config, texts: dict[str, str], pairs: Sequence[tuple[str, str]], test_ids: Sequence[str]
) -> list[PairWhy]:
    """The report's "why it changed" per compared pair (labels, with the selector text each was evaluated with);
    a pair whose versions cannot be read is a note, never an error of the report."""
    out = []
    reads = _Reads(config)  # each selector's version and evaluation read once, not once per pair it is in
    for a, b in pairs:
        try:
            out.append(pair_why(config, texts.get(a, a), texts.get(b, b), test_ids, reads=reads))
        except InputError as exc:
            out.append(PairWhy(a=a, b=b, diff=None, flips={k: [] for k in FLIPS}, notes=[str(exc)]))
    return out


class TaskAlignment(BaseModel):
    """One task's attempts of two or more selectors aligned, per repeat they all recorded."""

    task: str
    labels: list[str]
    repeats: list[int]
    alignments: list[Alignment]
    notes: list[str] = Field(default_factory=list)


def align_task(config: Config, texts: Sequence[str], task: str, repeat: int | None = None) -> TaskAlignment:
    """Align one task's trajectories under two or more selectors (the first is the pivot), for ``repeat`` or for
    every repeat all of them recorded. InputError (one line): fewer than two selectors, one given twice, one not
    evaluated, an unknown task or repeat, an attempt without a trajectory."""
    from hermit_tui.core.workspace.selectors import label_of

    if len(texts) < 2:
        raise InputError("--align: give at least one selector to align with --adapter's")
    labels = [label_of(t, config) for t in texts]
    if len(set(labels)) != len(labels):
        raise InputError(f"--align: a selector is given twice ({', '.join(labels)})")
    if repeat is not None and repeat < 1:
        raise InputError(f"--repeat must be a positive whole number, got {repeat}")
    evs = []
    for text, label in zip(texts, labels):
        if not (eval_root(config.run_dir) / label / RESULTS).is_file():
            raise InputError(f"--align {text}: no evaluation in {eval_root(config.run_dir) / label}")
        evs.append(Evaluation(config, label))
    per = [sorted(r for t, r in ev.by_key if t == task) for ev in evs]
    for text, reps in zip(texts, per):
        if not reps:
            raise InputError(f"--task {task}: no attempt of it is recorded under {text}")
    common = sorted(set(per[0]).intersection(*per[1:]))
    if repeat is not None:
        if repeat not in common:
            raise InputError(
                f"--repeat {repeat}: not recorded for {task} under every selector (common: "
                f"{', '.join(map(str, common)) or 'none'})"
            )
        common = [repeat]
    out = TaskAlignment(task=task, labels=labels, repeats=[], alignments=[])
    for r in common:
        steps = []
        for text, ev in zip(texts, evs):
            s = ev.steps((task, r))
            if s is None:
                note = read_hermit_log(ev.by_key[(task, r)].log).note
                if repeat is not None:
                    raise InputError(f"--align {text}: {task} repeat {r} has no transcript ({note})")
                out.notes.append(f"repeat {r}: {text} has no transcript ({note})")
                break
            steps.append(s)
        else:
            out.repeats.append(r)
            out.alignments.append(align(labels, steps))
    if not out.alignments:
        raise InputError(f"--align: no repeat of {task} has a transcript under every selector")
    return out


__all__ = [
    "FLIPS",
    "TaskAlignment",
    "align_task",
    "PairWhy",
    "SelectorUse",
    "ToolUse",
    "UsageGroup",
    "UsageSplit",
    "pair_why",
]
