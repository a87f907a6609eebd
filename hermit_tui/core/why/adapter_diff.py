"""What an adapter changed between two versions: exports named first, then each file's diff.

Skills, tools and subagents added, removed or changed come first (a tool changes when its declaration does, a skill
when a file of its folder does, a subagent when its file does); then every file that differs, with a unified diff of
its text. A binary file (a NUL byte, or not UTF-8) and a large one (over :data:`MAX_DIFF_BYTES`, or a diff over
:data:`MAX_DIFF_LINES` lines) are summarised by their sizes and line counts. ``none`` has no adapter: against it,
every file of the other side is added, and the diff says so.
"""

from __future__ import annotations

import difflib
from typing import Literal

from pydantic import BaseModel, Field

from hermit_tui.core.why.adapter_files import MAX_FILE_BYTES, AdapterVersion, ExportKind, frontmatter_name

MAX_DIFF_BYTES = 200_000  # a text file larger than this on either side is summarised
MAX_DIFF_LINES = 400  # a diff longer than this is summarised
CONTEXT_LINES = 3

Change = Literal["added", "removed", "changed"]


class ExportChange(BaseModel):
    kind: ExportKind
    name: str
    change: Change


class FileChange(BaseModel):
    path: str
    change: Change
    kind: Literal["text", "binary", "large"] = "text"
    size_a: int | None = None
    size_b: int | None = None
    added_lines: int = 0
    removed_lines: int = 0
    diff: list[str] = Field(default_factory=list)  # unified diff lines (no header), empty when summarised
    note: str | None = None  # why the diff is not shown


class VersionInfo(BaseModel):
    text: str
    label: str
    kind: str
    has_adapter: bool
    source: str
    commit: str | None = None
    content_hash: str | None = None
    recorded_hash: str | None = None
    tools: list[str] = Field(default_factory=list)
    skills: list[str] = Field(default_factory=list)
    agents: list[str] = Field(default_factory=list)
    problem: str | None = None


class AdapterDiff(BaseModel):
    a: VersionInfo
    b: VersionInfo
    same: bool
    exports: list[ExportChange] = Field(default_factory=list)
    files: list[FileChange] = Field(default_factory=list)
    unchanged_files: int = 0
    notes: list[str] = Field(default_factory=list)


def _info(v: AdapterVersion) -> VersionInfo:
    return VersionInfo(
        text=v.text,
        label=v.label,
        kind=v.kind,
        has_adapter=v.has_adapter,
        source=v.source,
        commit=v.commit,
        content_hash=v.content_hash,
        recorded_hash=v.recorded_hash,
        tools=v.exports.names("tool"),
        skills=v.exports.names("skill"),
        agents=v.exports.names("subagent"),
        problem=v.exports.problem if v.has_adapter else None,
    )


def _text(data: bytes | None) -> str | None:
    if data is None or b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def file_change(path: str, a: bytes | None, b: bytes | None, size_a: int | None, size_b: int | None) -> FileChange:
    """One file's change; ``a``/``b`` None with a size is a file too large to have been read."""
    change: Change = "added" if size_a is None else "removed" if size_b is None else "changed"
    out = FileChange(path=path, change=change, size_a=size_a, size_b=size_b)
    unread = (size_a is not None and a is None) or (size_b is not None and b is None)
    big = unread or max(size_a or 0, size_b or 0) > MAX_DIFF_BYTES
    ta, tb = _text(a), _text(b)
    if (a is not None and ta is None) or (b is not None and tb is None):
        out.kind, out.note = "binary", "binary file: not shown as text"
        return out
    if big:
        limit = MAX_FILE_BYTES if unread else MAX_DIFF_BYTES
        out.kind, out.note = "large", f"over {limit // 1000} kB: not shown as text"
        return out
    lines_a = (ta or "").splitlines()
    lines_b = (tb or "").splitlines()
    diff = list(difflib.unified_diff(lines_a, lines_b, lineterm="", n=CONTEXT_LINES))[2:]
    out.added_lines = sum(1 for line in diff if line.startswith("+"))
    out.removed_lines = sum(1 for line in diff if line.startswith("-"))
    if len(diff) > MAX_DIFF_LINES:
        out.kind, out.note = "large", f"a diff of {len(diff)} lines: not shown (over {MAX_DIFF_LINES})"
        return out
    out.diff = diff
    return out


def _export_changes(a: AdapterVersion, b: AdapterVersion, changed_paths: set[str]) -> list[ExportChange]:
    out: list[ExportChange] = []
    ea, eb = a.exports, b.exports
    for kind in ("tool", "skill", "subagent"):
        names_a, names_b = set(ea.names(kind)), set(eb.names(kind))
        for name in sorted(names_b - names_a):
            out.append(ExportChange(kind=kind, name=name, change="added"))
        for name in sorted(names_a - names_b):
            out.append(ExportChange(kind=kind, name=name, change="removed"))
        for name in sorted(names_a & names_b):
            if kind == "tool":
                changed = ea.tools[name] != eb.tools[name]
            elif kind == "skill":
                prefixes = {f"{d}/{name}/" if d else f"{name}/" for d in (ea.skills_dir, eb.skills_dir)}
                changed = any(p.startswith(tuple(prefixes)) for p in changed_paths)
            else:
                changed = _agent_file_changed(a, b, name, changed_paths)
            if changed:
                out.append(ExportChange(kind=kind, name=name, change="changed"))
    return out


def _agent_file_changed(a: AdapterVersion, b: AdapterVersion, name: str, changed_paths: set[str]) -> bool:
    for version in (a, b):
        folder = version.exports.agents_dir
        if folder is None:
            continue
        lead = f"{folder}/" if folder else ""
        for rel in changed_paths:
            if rel.startswith(lead) and rel.endswith(".md") and "/" not in rel[len(lead) :]:
                data = version.files.get(rel)
                found = frontmatter_name(data.decode("utf-8", "replace")) if data is not None else None
                if (found or rel[len(lead) : -3]) == name:
                    return True
    return False


def diff_versions(a: AdapterVersion, b: AdapterVersion) -> AdapterDiff:
    """What changed from ``a`` to ``b``."""
    paths = sorted(set(a.sizes) | set(b.sizes))
    files: list[FileChange] = []
    unchanged = 0
    for path in paths:
        size_a, size_b = a.sizes.get(path), b.sizes.get(path)
        da, db = a.files.get(path), b.files.get(path)
        if size_a is not None and size_b is not None and size_a == size_b and da is not None and da == db:
            unchanged += 1
            continue
        files.append(file_change(path, da, db, size_a, size_b))
    notes = [*a.notes, *b.notes]
    for side in (a, b):
        if not side.has_adapter:
            other = b if side is a else a
            notes.append(f"{side.label} has no adapter: every file of {other.label} counts as added or removed")
    exports = _export_changes(a, b, {f.path for f in files})
    return AdapterDiff(
        a=_info(a), b=_info(b), same=not files, exports=exports, files=files, unchanged_files=unchanged, notes=notes
    )


__all__ = [
    "MAX_DIFF_BYTES",
    "MAX_DIFF_LINES",
    "AdapterDiff",
    "ExportChange",
    "FileChange",
    "VersionInfo",
    "diff_versions",
    "file_change",
]
