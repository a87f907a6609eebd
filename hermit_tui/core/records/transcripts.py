"""Transcripts: the trajectory of each attempt (hermit's ``RunOutput.messages``), kept beside hermit's files.

``eval/<label>/transcripts.jsonl`` holds one line per attempt that returned messages,
``{"repeat": 1, "id": "t01", "messages": [...]}``, appended and flushed as the attempt is recorded (before its
results.jsonl line), so a run killed at any moment leaves it readable like results.jsonl (a cut last line is
ignored). results.jsonl and summary.json stay exactly hermit's: a trajectory can be a hundred times the size of its
record, and the files every view reads at start stay small. One file per evaluation, not one per attempt: 100,000
attempts are one file, archived, compacted and resumed with its results.jsonl, line for line:

- a later line for the same (task, repeat) replaces an earlier one (a retried or resumed attempt); a line whose
  ``messages`` is null says the newer attempt returned none;
- compaction (after a retry or a resume) keeps one line per recorded attempt, in results.jsonl's order;
- ``archive_existing`` moves (or copies) it with the results and summary.

For evaluations ``hermit eval`` wrote there is no sidecar: the trajectory is read from the attempt's ``log`` when that
file is hermit's react JSON, ``{"task", "model", "adapter", "messages"}``. A missing or unreadable log is a one-line
note, never an error.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from pydantic import BaseModel

from hermit_tui.core.outputs import RunOutput
from hermit_tui.core.records.appending import AppendedLines
from hermit_tui.core.records.folders import TRANSCRIPTS
from hermit_tui.core.records.results import AttemptRecord, without_lone_surrogates

LOG_LIMIT_BYTES = 50_000_000  # a log larger than this is not read as a transcript
_HEAD = re.compile(rb'^\{"repeat":\s*(-?\d+),\s*"id":\s*("(?:[^"\\]|\\.)*")')

Key = tuple[str, int]


# -- making trajectories storable ---------------------------------------------------------------------------------
def _plain(value: Any) -> Any:
    """json.dumps's fallback: SDK message objects (pydantic models, dataclasses) as their fields, else text."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        try:
            return dump(mode="json")
        except Exception:
            pass
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def jsonable(messages: Any) -> list[Any] | None:
    """A trajectory as plain JSON values (what the sidecar stores and what crosses a process boundary), or None.

    Message objects of an SDK become their fields; anything else that JSON cannot hold becomes its text. A value
    that is not a list is kept as a one-element list."""
    if messages is None:
        return None
    if not isinstance(messages, (list, tuple)):
        messages = [messages]
    try:
        plain: list[Any] = json.loads(json.dumps(list(messages), default=_plain, ensure_ascii=False, allow_nan=False))
        return plain
    except Exception as exc:  # any value a pipeline returns: its __str__ may raise too
        return [{"role": "note", "content": f"the trajectory could not be kept: {type(exc).__name__}"}]


def output_payload(out: RunOutput) -> dict[str, Any]:
    """A RunOutput as plain values, to send back from a worker process or a Ray worker."""
    payload = {f.name: getattr(out, f.name) for f in dataclasses.fields(out)}
    payload["log"] = str(out.log) if isinstance(out.log, (str, Path)) else out.log
    payload["messages"] = jsonable(out.messages)
    return payload


# -- writing ------------------------------------------------------------------------------------------------------
def _line(record_id: str, repeat: int, messages: list[Any] | None) -> bytes:
    """One sidecar line; a trajectory holding lone surrogates (not Unicode) is written with U+FFFD in their place
    and the line says so (``"replaced_surrogates": true``, after ``messages``)."""
    entry: dict[str, Any] = {"repeat": repeat, "id": record_id, "messages": messages}
    try:
        return (json.dumps(entry, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")
    except UnicodeEncodeError:
        entry["messages"] = without_lone_surrogates(messages)[0]
        entry["replaced_surrogates"] = True
        return (json.dumps(entry, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")


class TranscriptLog:
    """The transcripts.jsonl of one selector in one launch (written by the journal, from the event loop only).

    Created on the first trajectory, so evaluations whose pipeline returns none have no sidecar. In a continued
    evaluation (retry, resume) an attempt without messages writes a null line, so that the earlier attempt's
    trajectory is not shown for it."""

    def __init__(self, folder: Path, continues: bool):
        self.path = Path(folder) / TRANSCRIPTS
        self.continues = continues
        self._lines = AppendedLines(self.path)

    def _open(self) -> BinaryIO:
        out = self._lines.open(append=self.continues)
        if self._lines.good:
            with open(self.path, "rb") as fh:
                fh.seek(-1, os.SEEK_END)
                cut = fh.read(1) != b"\n"
            if cut:  # a line cut by a crash: keep the file line-aligned
                out.write(b"\n")
                out.flush()
                self._lines.good = out.tell()
        return out

    def write(self, record_id: str, repeat: int, messages: list[Any] | None) -> None:
        """Append one attempt's line (flushed). OSError after rolling the file back to its last whole line."""
        if messages is None and not (self.continues and (self._lines.fh is not None or self.path.exists())):
            return
        line = _line(record_id, repeat, messages)
        if self._lines.fh is None:
            self._open()
        self._lines.write(line)

    def mark(self) -> int:
        """The file's length now (whole lines), for :meth:`undo_to`."""
        return self._lines.good

    def undo_to(self, mark: int) -> None:
        """Take back the lines written after :meth:`mark` (their attempt's results line could not be written)."""
        try:
            self._lines.truncate(mark)
        except OSError:
            pass

    def rollback(self) -> None:
        self._lines.rollback()

    def close(self) -> None:
        self._lines.close()

    def compact(self, keys: list[Key]) -> None:
        """One line per recorded attempt (``keys``, in results.jsonl's order), written atomically; the file goes
        away when no attempt has a trajectory."""
        self.close()
        compact_transcripts(self.path.parent, keys)


def compact_transcripts(folder: Path, keys: list[Key]) -> None:
    path = Path(folder) / TRANSCRIPTS
    if not path.is_file():
        return
    index = TranscriptIndex.build(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    kept = 0
    with open(path, "rb") as src, open(tmp, "wb") as dst:
        for key in keys:
            where = index.spans.get(key)
            if where is None:
                continue
            src.seek(where[0])
            line = src.read(where[1])
            if _is_null(line):
                continue
            dst.write(line.rstrip(b"\n") + b"\n")
            kept += 1
        dst.flush()
        os.fsync(dst.fileno())
    if kept:
        os.replace(tmp, path)
    else:
        tmp.unlink()
        path.unlink()
    _INDEXES.pop(str(path), None)


def _is_null(line: bytes) -> bool:
    return line.rstrip().endswith(b'"messages": null}')


# -- reading ------------------------------------------------------------------------------------------------------
@dataclass
class TranscriptIndex:
    """Where each attempt's (last) line lies in a transcripts.jsonl: (task id, repeat) -> (offset, length)."""

    spans: dict[Key, tuple[int, int]] = field(default_factory=dict)
    bad: int = 0  # whole lines that could not be read (damage)
    partial: bool = False  # the file ends in a cut line (a crash, or a line being written)
    end: int = 0  # the offset after the last whole line read

    @property
    def skipped(self) -> int:
        return self.bad + self.partial

    @classmethod
    def build(cls, path: Path) -> TranscriptIndex:
        index = cls()
        index.extend(path)
        return index

    def extend(self, path: Path) -> None:
        """Read the whole lines after ``end``: a file that only grew (a live run appending) is not read again."""
        offset = self.end
        self.partial = False
        with open(path, "rb") as fh:
            fh.seek(offset)
            for line in fh:
                if not line.endswith(b"\n"):
                    self.partial = bool(line.strip())
                    break
                key = _key_of(line)
                if key is None:
                    self.bad += bool(line.strip())
                else:
                    self.spans[key] = (offset, len(line))
                offset += len(line)
                self.end = offset


def _key_of(line: bytes) -> Key | None:
    match = _HEAD.match(line)
    try:
        if match:
            return json.loads(match.group(2)), int(match.group(1))
        data = json.loads(line)
        return str(data["id"]), int(data["repeat"])
    except (ValueError, KeyError, TypeError):
        return None


_INDEXES: dict[str, tuple[int, TranscriptIndex]] = {}  # path -> (inode, index)
_INDEX_LOCK = threading.Lock()


def _index_of(path: Path) -> TranscriptIndex:
    """The index of a sidecar. The drill-down asks for one attempt at a time: a file that only grew since is read
    from where the index ended; a replaced (compacted) or shorter one is read again."""
    with _INDEX_LOCK:
        stat = path.stat()
        cached = _INDEXES.get(str(path))
        if cached is not None and cached[0] == stat.st_ino and stat.st_size >= cached[1].end:
            index = cached[1]
            if stat.st_size > index.end or index.partial:
                index.extend(path)
            return index
        index = TranscriptIndex.build(path)
        if len(_INDEXES) > 32:
            _INDEXES.clear()
        _INDEXES[str(path)] = (stat.st_ino, index)
        return index


class Transcript(BaseModel):
    """An attempt's trajectory and where it came from; ``messages`` is None with a one-line ``note`` saying why."""

    messages: list[Any] | None = None
    source: str | None = None  # "transcripts.jsonl" or "log"
    path: str | None = None
    note: str = ""


def read_sidecar(folder: Path | None, task_id: str, repeat: int) -> Transcript | None:
    """The attempt's line of ``<folder>/transcripts.jsonl``, or None when it has none."""
    if folder is None:
        return None
    path = Path(folder) / TRANSCRIPTS
    try:
        if not path.is_file():
            return None
        index = _index_of(path)
        where = index.spans.get((str(task_id), int(repeat)))
        if where is None:
            return None
        with open(path, "rb") as fh:
            fh.seek(where[0])
            data = json.loads(fh.read(where[1]))
    except (OSError, ValueError) as exc:
        return Transcript(path=str(path), note=f"{path}: cannot read ({getattr(exc, 'strerror', None) or exc})")
    messages = data.get("messages") if isinstance(data, dict) else None
    if messages is None:
        return None
    return Transcript(
        messages=messages if isinstance(messages, list) else [messages], source=TRANSCRIPTS, path=str(path)
    )


def read_hermit_log(log: str | None) -> Transcript:
    """The trajectory in a log file when it is hermit's react JSON, else a one-line note saying why not."""
    if not log:
        return Transcript(note="no transcript: the attempt recorded no messages and no log")
    path = Path(log)
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return Transcript(path=log, note=f"no transcript: the log {log} is not found")
    except OSError as exc:
        return Transcript(path=log, note=f"no transcript: the log {log} cannot be read ({exc.strerror or exc})")
    if not path.is_file():
        return Transcript(path=log, note=f"no transcript: the log {log} is not a file")
    if size > LOG_LIMIT_BYTES:
        return Transcript(
            path=log, note=f"no transcript: the log {log} is {size / 1e6:.0f} MB, too large to read as one"
        )
    try:
        data = json.loads(path.read_bytes())
    except OSError as exc:
        return Transcript(path=log, note=f"no transcript: the log {log} cannot be read ({exc.strerror or exc})")
    except ValueError:
        return Transcript(
            path=log, note=f"no transcript: the log {path.name} is not hermit's react JSON (open it as text)"
        )
    if not (isinstance(data, dict) and "task" in data and isinstance(data.get("messages"), list)):
        return Transcript(
            path=log,
            note=f"no transcript: the log {path.name} is JSON but not hermit's react log (no task and messages)",
        )
    return Transcript(messages=data["messages"], source="log", path=log)


def load_transcript(folder: Path | None, record: AttemptRecord) -> Transcript:
    """An attempt's trajectory: the sidecar's line, else hermit's react log, else a note saying why there is none."""
    found = read_sidecar(folder, record.id, record.repeat)
    if found is not None and found.messages is not None:
        return found
    from_log = read_hermit_log(record.log)
    if from_log.messages is None and found is not None and found.note:
        from_log.note = found.note
    return from_log


# -- reading a trajectory as turns ---------------------------------------------------------------------------------
@dataclass
class ToolCall:
    id: str | None
    name: str
    arguments: str  # pretty JSON when the arguments are JSON, else as given


@dataclass
class Turn:
    """One message: who spoke, what they said, the tools they called, or the tool result they carry."""

    index: int
    role: str
    text: str
    calls: list[ToolCall] = field(default_factory=list)
    call_id: str | None = None  # a tool result: the call it answers
    tool: str | None = None  # ... and that call's tool name

    @property
    def title(self) -> str:
        if self.role == "tool" or self.call_id is not None and self.role != "assistant":
            name = self.tool or "tool"
            return f"tool result · {name}" + (f" ({self.call_id})" if self.call_id else "")
        return self.role

    def searchable(self) -> str:
        parts = [self.title, self.text] + [f"{c.name} {c.arguments}" for c in self.calls]
        return "\n".join(parts).lower()


def _pretty_json(value: Any) -> str:
    if isinstance(value, str):
        stripped = value.strip()
        if stripped[:1] in ("{", "["):
            try:
                return json.dumps(json.loads(stripped), indent=2, ensure_ascii=False)
            except ValueError:
                return value
        return value
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def _compact_json(value: Any) -> str:
    """JSON arguments on one line (the C encoder: the indented form is the pure-Python one, ~10x slower)."""
    if isinstance(value, str):
        stripped = value.strip()
        if stripped[:1] in ("{", "["):
            try:
                return json.dumps(json.loads(stripped), ensure_ascii=False)
            except ValueError:
                return value
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def _call(raw: Any, pretty: bool = True) -> ToolCall:
    if not isinstance(raw, dict):
        return ToolCall(id=None, name="?", arguments=str(raw))
    fn: dict[str, Any] = raw["function"] if isinstance(raw.get("function"), dict) else raw
    name = str(fn.get("name") or raw.get("name") or "?")
    args = fn.get("arguments", fn.get("input", raw.get("input", raw.get("arguments"))))
    return ToolCall(
        id=raw.get("id") or raw.get("call_id"),
        name=name,
        arguments="" if args in (None, "", {}) else (_pretty_json(args) if pretty else _compact_json(args)),
    )


def _content(content: Any, turn: Turn, pretty: bool = True) -> str:
    """The text of a message's content: a string, or a list of parts (text, images, Anthropic tool blocks)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        pieces = []
        for part in content:
            if isinstance(part, str):
                pieces.append(part)
                continue
            if not isinstance(part, dict):
                pieces.append(str(part))
                continue
            kind = part.get("type")
            if kind in ("text", "input_text", "output_text") or (kind is None and "text" in part):
                pieces.append(str(part.get("text", "")))
            elif kind == "tool_use":
                turn.calls.append(_call(part, pretty))
            elif kind == "tool_result":
                turn.call_id = turn.call_id or part.get("tool_use_id")
                pieces.append(_content(part.get("content"), turn, pretty))
            elif kind in ("image", "image_url", "input_image"):
                pieces.append("[image]")
            elif kind in ("thinking", "reasoning"):
                pieces.append(f"(thinking) {part.get('thinking') or part.get('text') or ''}".rstrip())
            else:
                pieces.append(_pretty_json(part))
        return "\n".join(p for p in pieces if p)
    return _pretty_json(content)


def turns_of(messages: list[Any] | None, *, pretty: bool = True) -> list[Turn]:
    """The turns of a trajectory (OpenAI chat messages, with Anthropic-style content blocks understood too); each
    tool result names the tool whose call it answers. ``pretty=False``: a call's JSON arguments on one line."""
    turns: list[Turn] = []
    names: dict[str, str] = {}
    for i, message in enumerate(messages or []):
        if not isinstance(message, dict):
            turns.append(Turn(index=i, role="?", text=_pretty_json(message)))
            continue
        turn = Turn(index=i, role=str(message.get("role") or "?"), text="")
        turn.text = _content(message.get("content"), turn, pretty)
        for raw in message.get("tool_calls") or []:
            turn.calls.append(_call(raw, pretty))
        if isinstance(message.get("function_call"), dict):  # the older OpenAI spelling
            turn.calls.append(_call(message["function_call"], pretty))
        if message.get("tool_call_id"):
            turn.call_id = str(message["tool_call_id"])
        for call in turn.calls:
            if call.id:
                names[str(call.id)] = call.name
        if turn.call_id is not None:
            turn.tool = names.get(turn.call_id) or message.get("name")
        elif turn.role in ("tool", "function"):
            turn.tool = message.get("name")
        turns.append(turn)
    return turns


def transcript_lines(turns: list[Turn], *, indent: str = "  ") -> list[str]:
    """A trajectory as plain text, every turn whole (for ``hermit-tui show``)."""
    out: list[str] = []
    for turn in turns:
        out.append(f"[{turn.index + 1}] {turn.title}")
        if turn.text:
            out += [indent + line for line in turn.text.splitlines()] or [indent]
        for call in turn.calls:
            out.append(f"{indent}→ calls {call.name}" + (f" ({call.id})" if call.id else ""))
            out += [indent * 3 + line for line in call.arguments.splitlines()]
        if not turn.text and not turn.calls:
            out.append(indent + "(empty)")
    return out


__all__ = [
    "TRANSCRIPTS",
    "ToolCall",
    "Transcript",
    "TranscriptIndex",
    "TranscriptLog",
    "Turn",
    "compact_transcripts",
    "jsonable",
    "load_transcript",
    "output_payload",
    "read_hermit_log",
    "read_sidecar",
    "transcript_lines",
    "turns_of",
]
