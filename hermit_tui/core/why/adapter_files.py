"""One adapter version's files and exports, read without touching the tree's work tree.

A tag or commit is read from git objects (the commit's tree listed, its blobs read in one batch); an adapter
directory from disk, its content checked against the hash its evaluation recorded (``summary.json``'s
``content_hash``); ``none`` is no adapter. When the selector's evaluation is on disk, the version read is the one
evaluated (its recorded commit), not what the tag points at now, so that the diff explains the scores shown beside
it.

The exports follow ``adapter.yaml`` as hermit-harness 0.1.0 defines it: ``exports.context`` (always
``ADAPTER.md``), ``exports.skills`` (a folder of skill folders, each holding ``SKILL.md``), ``exports.tools`` (a list
of declarations with a ``name``) and ``exports.agents`` (a folder of subagent Markdown files with a ``name`` in their
frontmatter, or a Python exporter, whose subagents cannot be known without running it).
"""

from __future__ import annotations

import os
import stat
from collections import deque
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field

from hermit_tui.core.errors import InputError
from hermit_tui.core.records.folders import SUMMARY, eval_root
from hermit_tui.core.records.results import read_summary
from hermit_tui.core.workspace.config import Config
from hermit_tui.core.workspace.selectors import (
    MANIFEST,
    SKIPPED_NAMES,
    Selector,
    directory_hash,
    label_of,
    resolve_selector,
)
from hermit_tui.core.workspace.tree import AdapterTree, open_tree

CONTEXT = "ADAPTER.md"
SKILL_FILE = "SKILL.md"
MAX_FILE_BYTES = 2_000_000  # a file larger than this is summarised, not read for a diff
SYMLINK_MODE = 0o120000

ExportKind = Literal["tool", "skill", "subagent"]


class Exports(BaseModel):
    """What an adapter version exports to the acting agent, by name."""

    context: str | None = None  # ADAPTER.md when the version has one
    tools: dict[str, Any] = Field(default_factory=dict)  # name -> its declaration (as written)
    skills_dir: str | None = None
    skills: list[str] = Field(default_factory=list)
    agents_dir: str | None = None
    agents: list[str] = Field(default_factory=list)
    agents_exporter: str | None = None  # a Python exporter's entrypoint: its subagents are not known here
    problem: str | None = None  # why adapter.yaml could not be read, if so

    def names(self, kind: ExportKind) -> list[str]:
        return {"tool": sorted(self.tools), "skill": self.skills, "subagent": self.agents}[kind]


class AdapterVersion(BaseModel):
    """One side of a comparison: which version it is, where it was read from, and its files (``path -> bytes``;
    a symlink is its target text)."""

    text: str
    label: str
    kind: str
    has_adapter: bool
    commit: str | None = None
    path: str | None = None
    content_hash: str | None = None
    recorded_hash: str | None = None
    source: str = ""  # in words: "commit 1a2b3c4 (as evaluated)", "adapter directory ...", "no adapter"
    notes: list[str] = Field(default_factory=list)
    exports: Exports = Field(default_factory=Exports)
    files: dict[str, bytes] = Field(default_factory=dict, exclude=True)
    sizes: dict[str, int] = Field(default_factory=dict)  # every file's size, the large ones (not read) included


def _recorded(config: Config, label: str) -> tuple[str | None, str | None]:
    """The commit and content hash the label's current evaluation recorded, if it is on disk."""
    path = eval_root(config.run_dir) / label / SUMMARY
    if not path.is_file():
        return None, None
    try:
        summary = read_summary(path)
    except InputError:
        return None, None
    return summary.commit, summary.content_hash


def _tree_files(tree: AdapterTree, commit: str) -> tuple[dict[str, bytes], dict[str, int]]:
    """A commit's files (``path -> bytes``, a symlink as ``symlink:<target>``, the large ones not read) and every
    file's size, in the order GitPython's ``tree.traverse()`` gives them (breadth first, each folder in tree order):
    one ``ls-tree`` and one ``cat-file --batch``, no GitPython."""
    listing = tree.reader.run("ls-tree", "-r", "-t", "-z", "-l", "--full-tree", "--end-of-options", commit)
    children: dict[str, list[tuple[str, int, str, str, str]]] = {}
    for entry in listing.split(b"\0"):
        if not entry:
            continue
        meta, _, raw_path = entry.partition(b"\t")
        octal, kind, sha, size = meta.decode().split()
        rel = raw_path.decode("utf-8", "surrogateescape")
        children.setdefault(rel.rpartition("/")[0], []).append((rel, int(octal, 8), kind, sha, size))
    sizes: dict[str, int] = {}
    wanted: list[tuple[str, int, str]] = []
    folders = deque([""])
    while folders:
        for rel, mode, kind, sha, size in children.get(folders.popleft(), []):
            if kind == "tree":
                folders.append(rel)
            if kind != "blob" or any(part in SKIPPED_NAMES for part in rel.split("/")):
                continue
            sizes[rel] = int(size)
            if mode == SYMLINK_MODE or sizes[rel] <= MAX_FILE_BYTES:
                wanted.append((rel, mode, sha))
    contents = tree.reader.blobs([sha for _, _, sha in wanted])
    files: dict[str, bytes] = {}
    for (rel, mode, _), data in zip(wanted, contents):
        files[rel] = b"symlink:" + data if mode == SYMLINK_MODE else data
    return files, sizes


def _directory_files(folder: Path) -> tuple[dict[str, bytes], dict[str, int]]:
    files: dict[str, bytes] = {}
    sizes: dict[str, int] = {}
    for base, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_NAMES)
        for name in sorted(names):
            if name in SKIPPED_NAMES:
                continue
            full = Path(base, name)
            rel = full.relative_to(folder).as_posix()
            try:
                mode = os.lstat(full).st_mode
                if stat.S_ISLNK(mode):
                    data = b"symlink:" + os.readlink(full).encode()
                    sizes[rel] = len(data)
                    files[rel] = data
                elif stat.S_ISREG(mode):
                    sizes[rel] = os.lstat(full).st_size
                    if sizes[rel] <= MAX_FILE_BYTES:
                        files[rel] = full.read_bytes()
            except OSError as exc:
                raise InputError(f"adapter directory {folder}: cannot read {rel} ({exc.strerror or exc})") from None
    return files, sizes


def frontmatter_name(text: str) -> str | None:
    if not text.startswith("---\n") or "\n---" not in text[4:]:
        return None
    try:
        head = yaml.safe_load(text[4 : text.index("\n---", 4)]) or {}
    except yaml.YAMLError:
        return None
    return str(head["name"]) if isinstance(head, dict) and head.get("name") else None


def _inside(folder: str) -> str | None:
    """A manifest's folder entry as a relative posix prefix, or None when it points outside the adapter."""
    parts = [p for p in Path(folder).as_posix().split("/") if p not in ("", ".")]
    if Path(folder).is_absolute() or ".." in parts:
        return None
    return "/".join(parts)


def read_exports(files: dict[str, bytes]) -> Exports:
    """The exports of a version's files (an unreadable adapter.yaml is a ``problem``, never an error)."""
    out = Exports(context=CONTEXT if CONTEXT in files else None)
    raw = files.get(MANIFEST)
    if raw is None:
        out.problem = f"no {MANIFEST}"
        return out
    try:
        data = yaml.safe_load(raw.decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        out.problem = f"{MANIFEST} cannot be read: {str(exc).splitlines()[0]}"
        return out
    exports = data.get("exports") if isinstance(data, dict) else None
    if not isinstance(exports, dict):
        out.problem = f"{MANIFEST} has no exports section"
        return out
    for tool in exports.get("tools") or []:
        if isinstance(tool, dict) and isinstance(tool.get("name"), str):
            out.tools[tool["name"]] = tool
    skills = exports.get("skills")
    if isinstance(skills, str) and (prefix := _inside(skills)) is not None:
        out.skills_dir = prefix
        lead = f"{prefix}/" if prefix else ""
        out.skills = sorted(
            {
                rel[len(lead) :].split("/")[0]
                for rel in files
                if rel.startswith(lead) and rel[len(lead) :].count("/") == 1 and rel.endswith("/" + SKILL_FILE)
            }
        )
    agents = exports.get("agents")
    if isinstance(agents, str) and (prefix := _inside(agents)) is not None:
        out.agents_dir = prefix
        lead = f"{prefix}/" if prefix else ""
        names = []
        for rel, data in files.items():
            if rel.startswith(lead) and rel.endswith(".md") and "/" not in rel[len(lead) :]:
                names.append(frontmatter_name(data.decode("utf-8", "replace")) or Path(rel).stem)
        out.agents = sorted(set(names))
    elif isinstance(agents, dict) and isinstance(agents.get("entrypoint"), str):
        out.agents_exporter = agents["entrypoint"]
    return out


def read_version(text: str, config: Config) -> AdapterVersion:
    """Read one selector's adapter version; InputError (one line) when the text names no adapter version."""
    label = label_of(text, config)
    commit_rec, hash_rec = _recorded(config, label)
    sel: Selector = resolve_selector(text, config)
    if sel.kind == "none":
        return AdapterVersion(text=text, label=label, kind="none", has_adapter=False, source="none: no adapter")
    if sel.kind == "directory":
        assert sel.path is not None
        files, sizes = _directory_files(sel.path)
        version = AdapterVersion(
            text=text,
            label=label,
            kind="directory",
            has_adapter=True,
            path=str(sel.path),
            content_hash=sel.content_hash or directory_hash(sel.path),
            recorded_hash=hash_rec,
            source=f"adapter directory {sel.path}",
            files=files,
            sizes=sizes,
        )
        if hash_rec and hash_rec != version.content_hash:
            version.notes.append(
                f"{label}: the directory changed since it was evaluated (content hash {hash_rec[:12]} recorded, "
                f"{str(version.content_hash)[:12]} now): the diff shows it as it is now"
            )
        elif hash_rec is None:
            version.notes.append(
                f"{label}: no content hash recorded (evaluated by hermit eval, or not yet): read as it is now"
            )
        version.exports = read_exports(files)
        return version
    tree = open_tree(Path(config.tree_dir))
    try:
        commit = str(sel.commit)
        notes = []
        if commit_rec and commit_rec != commit:
            if tree.has_commit(commit_rec):
                notes.append(
                    f"{label}: '{text}' now points at {commit[:7]}; the evaluation measured {commit_rec[:7]}, "
                    "which is what is compared"
                )
                commit = commit_rec
            else:
                notes.append(f"{label}: the evaluated commit {commit_rec[:7]} is not in the tree; read {commit[:7]}")
        files, sizes = _tree_files(tree, commit)
    finally:
        tree.close()
    evaluated = " (as evaluated)" if commit_rec == commit else ""
    version = AdapterVersion(
        text=text,
        label=label,
        kind=sel.kind,
        has_adapter=True,
        commit=commit,
        source=f"commit {commit[:7]}{evaluated}",
        notes=notes,
        files=files,
        sizes=sizes,
    )
    version.exports = read_exports(files)
    return version


__all__ = [
    "CONTEXT",
    "MAX_FILE_BYTES",
    "AdapterVersion",
    "ExportKind",
    "Exports",
    "frontmatter_name",
    "read_exports",
    "read_version",
]
