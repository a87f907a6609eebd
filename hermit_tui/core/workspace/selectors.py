"""Adapter selectors: what ``--adapter`` names, resolved the way ``hermit eval`` resolves it.

``none`` is no adapter. A folder holding ``adapter.yaml`` (relative to the config's folder) is checked before any git
ref. ``root`` is tag ``root``, ``final`` is tag ``<run>/final``; any other text is a tag, a branch or a full or
abbreviated commit of the adapter tree. Commits hermit marked invalid are refused.

The ``config`` argument is duck-typed: only ``base``, ``resolve_path(text)``, ``run_name``, ``run_dir`` and
``tree_dir`` are used.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import tempfile
import unicodedata
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from hermit_tui.core.errors import InputError
from hermit_tui.core.workspace.config import Config
from hermit_tui.core.workspace.files import kind_of, read_bytes
from hermit_tui.core.workspace.processes import alive, process_start
from hermit_tui.core.workspace.tree import ROOT_TAG, AdapterTree, Version, one_tree_per_path, open_tree

MANIFEST = "adapter.yaml"
NAME_MAX = 255  # the longest file name (bytes) most file systems take: a label is a folder's name
SKIPPED_NAMES = {".git", "__pycache__"}
TEMP_PREFIX = "hermit-tui-adapter-"

SelectorKind = Literal["none", "root", "final", "tag", "commit", "directory"]


class Selector(BaseModel):
    """A resolved selector: what the pipeline receives and where its results go (``eval/<label>/``).

    ``ref`` is ``root``, ``<run>/final``, the tag or branch as typed, or the full sha of a commit; a branch (only ever
    named as ``refs/heads/<b>``) counts as kind ``commit`` (its head at resolution time).
    """

    text: str
    kind: SelectorKind
    label: str
    commit: str | None = None
    ref: str | None = None
    path: Path | None = None
    content_hash: str | None = None

    def resolution(self) -> str:
        """What the selector was resolved to, in words (shown when a launch starts): ``no adapter``, ``adapter
        directory <path>``, ``tag <name> at commit <12 hex>``, ``branch head refs/heads/<b> at commit …`` or ``commit
        <12 hex>``."""
        if self.kind == "none":
            return "no adapter"
        if self.kind == "directory":
            return f"adapter directory {self.path}"
        commit = str(self.commit)[:12]
        if self.kind in ("root", "final", "tag"):
            name = self.ref if self.kind != "tag" else str(self.ref).removeprefix("refs/tags/")
            return f"tag {name} at commit {commit}"
        if self.ref and self.ref.startswith("refs/heads/"):
            return f"the head of branch {self.ref.removeprefix('refs/heads/')} at commit {commit}"
        return f"commit {commit}"


def label_for(text: str) -> str:
    """The ``eval/<label>/`` folder name of a tree selector: the text with ``/`` replaced by ``_``."""
    return text.replace("/", "_")


def label_of(text: str, config: Config | None = None) -> str:
    """The ``eval/<label>/`` folder of a selector as typed, without opening the tree: an adapter directory (relative
    to the config's folder, holding ``adapter.yaml``) gives its name; ``none``, ``root``, ``final``, a tag or a commit
    the text with ``/`` replaced by ``_``, as :func:`resolve_selector` labels them. Every command that names an
    evaluation, the publish plan and the dashboard ask this; text that can name no folder is an InputError."""
    text = str(text).strip()
    if not text:
        raise InputError("--adapter: empty selector")
    label = None
    if config is not None and text not in ("none", "root", "final"):
        folder = _as_directory(text, config)
        if _has_manifest(folder):
            label = str(folder and folder.name)
    if label is None:
        label = label_for(text)
    return check_label(label, text)


def check_label(label: str, text: str, *, typed: bool = True) -> str:
    """``label`` when it can name exactly one folder directly inside ``eval/``: never ``.``/``..``, a path or a name
    longer than a file name may be (nor, for a label asked of typed text, ``typed``, one that looks like an option);
    else an InputError (one line)."""
    if not label or label in (".", "..") or "\\" in label or "/" in label or (typed and label.startswith("-")):
        raise InputError(f"--adapter {text[:80]!r}: not an evaluated selector")
    if len(label.encode("utf-8", "surrogateescape")) > NAME_MAX:
        raise InputError(
            f"--adapter {text[:40]!r}...: {len(text)} characters, too long to name an evaluation's folder "
            f"(at most {NAME_MAX} bytes)"
        )
    return label


def _has_manifest(folder: Path | None) -> bool:
    """Whether ``folder`` holds adapter.yaml (a path too long or unreadable to ask about holds none)."""
    if folder is None:
        return False
    try:
        return (folder / MANIFEST).is_file()
    except (OSError, ValueError):
        return False


def check_selector_text(text: str) -> None:
    """Refuse a selector that could be read as a git option or is not a single word."""
    if not text:
        raise InputError("empty adapter selector (use none, root, final, a tag, a commit or an adapter directory)")
    if text.startswith("-"):
        raise InputError(f"selector {text!r} begins with '-': it is not an adapter directory, tag or commit")
    if any(ch.isspace() or unicodedata.category(ch)[0] == "C" for ch in text):
        raise InputError(
            f"selector {text!r} holds whitespace or control characters: it is not an adapter directory, tag or commit"
        )


def directory_hash(path: Path) -> str:
    """sha256 over the folder's files: for each file in sorted relative-path order, its posix path, a NUL, its size,
    a NUL and its bytes (a symlink contributes its target text). ``.git`` and ``__pycache__`` are skipped.

    A FIFO, socket or device inside the folder (reading one could block forever), or a file or folder that cannot
    be read, is an InputError naming it."""
    path = Path(path)
    entries: list[tuple[str, Path]] = []

    def unreadable(exc: OSError) -> None:
        raise InputError(f"adapter directory {path}: cannot read {exc.filename} ({exc.strerror or exc})")

    for folder, dirs, files in os.walk(path, onerror=unreadable):
        dirs[:] = [d for d in dirs if d not in SKIPPED_NAMES]
        for name in files:
            if name not in SKIPPED_NAMES:
                full = Path(folder, name)
                entries.append((full.relative_to(path).as_posix(), full))
    digest = hashlib.sha256()
    for rel, full in sorted(entries):
        try:
            mode = os.lstat(full).st_mode
            if stat.S_ISLNK(mode):
                data = b"symlink:" + os.readlink(full).encode()
            elif not stat.S_ISREG(mode):
                raise InputError(f"adapter directory {path}: {rel} is {kind_of(mode)}, not a regular file")
            else:
                data = read_bytes(full)
        except OSError as exc:
            raise InputError(f"adapter directory {path}: cannot read {rel} ({exc.strerror or exc})") from None
        digest.update(rel.encode() + b"\0" + str(len(data)).encode() + b"\0")
        digest.update(data)
    return digest.hexdigest()


def _open_tree(config: Config, text: str) -> AdapterTree:
    try:
        return open_tree(Path(config.tree_dir))
    except InputError as exc:
        raise InputError(f"selector {text!r} needs the adapter tree: {exc}") from None


def _as_directory(text: str, config: Config) -> Path | None:
    try:
        path = config.resolve_path(text)
    except (OSError, ValueError):
        return None
    return None if path is None else Path(os.path.abspath(path))


def _looks_like_a_missing_directory(text: str, folder: Path | None) -> bool:
    """``text`` names a path whose folder exists but not the path itself (``adapters/nope``), or is written as a
    path (``./x``, ``../x``, ``/x``, ``x/``): a missing directory rather than an unknown version of the tree."""
    if folder is None or folder.exists():
        return False
    if text.startswith(("./", "../", "/", "~")) or text.endswith("/"):
        return True
    return "/" in text and folder.parent.is_dir()


def resolve_selector(text: str, config: Config) -> Selector:
    """Resolve one ``--adapter`` text; InputError (one line) when it names nothing usable."""
    if text == "none":
        return Selector(text=text, kind="none", label="none")
    folder = _as_directory(text, config) if text else None
    if folder is not None and _has_manifest(folder):
        if not folder.name:
            raise InputError(f"adapter directory {folder} has no name to label its results with")
        return Selector(
            text=text,
            kind="directory",
            label=check_label(folder.name, text, typed=False),
            path=folder,
            content_hash=directory_hash(folder),
        )
    check_selector_text(text)
    check_label(label_for(text), text)
    try:
        is_dir = folder is not None and folder.is_dir()
    except OSError:
        is_dir = False
    if is_dir and not Path(config.tree_dir).exists():
        raise InputError(f"adapter directory {folder} has no {MANIFEST}")
    tree = _open_tree(config, text)
    try:
        if text in ("root", "final"):
            ref = ROOT_TAG if text == "root" else f"{config.run_name}/final"
            commit = tree.tag_target(ref)
            if commit is None:
                raise InputError(f"unknown adapter version '{text}' in tree {tree.path}: it has no tag '{ref}'")
            kind, label = text, text
        else:
            try:
                commit, refname = tree.lookup(text)
            except InputError:
                if is_dir:
                    raise InputError(f"adapter directory {folder} has no {MANIFEST}") from None
                if _looks_like_a_missing_directory(text, folder):
                    raise InputError(
                        f"no such directory: {folder} (and no tag or commit '{text}' in the adapter tree)"
                    ) from None
                raise
            kind = "tag" if refname and refname.startswith("refs/tags/") else "commit"
            ref, label = (text if refname else commit), label_for(text)
        if not tree.is_valid(commit):
            raise InputError(f"selector '{text}' is an invalid commit (fails check_spec), not an adapter")
    finally:
        tree.close()
    return Selector(text=text, kind=kind, label=label, commit=commit, ref=ref)


def resolve_selectors(texts: Sequence[str], config: Config) -> list[Selector]:
    """Resolve the selectors of one launch, refusing repeats and any two that would share ``eval/<label>/``.

    The adapter tree is opened once for them all (``one_tree_per_path``: its git directory, config and refs read
    once, one ``cat-file`` helper): root and final cost 4 git processes, not 10 (about 25 ms of a launch's start,
    issue 30)."""
    seen: set[str] = set()
    for text in texts:
        if text in seen:
            raise InputError(f"selector {text!r} is given twice")
        seen.add(text)
    with one_tree_per_path():
        selectors = [resolve_selector(text, config) for text in texts]
    by_label: dict[str, Selector] = {}
    for sel in selectors:
        other = by_label.setdefault(sel.label, sel)
        if other is not sel:
            raise InputError(
                f"selectors {other.text!r} and {sel.text!r} would both write "
                f"eval/{sel.label}/; evaluate them in separate launches"
            )
    return selectors


@contextmanager
def materialize(selector: Selector, config: Config) -> Iterator[Path | None]:
    """The adapter folder the pipeline receives: None, the directory itself, or a temporary export of the commit
    that is removed on exit (also when the body raises)."""
    if selector.kind == "none":
        yield None
        return
    if selector.kind == "directory" or selector.commit is None:
        yield selector.path
        return
    tmp = Path(tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{os.getpid()}-{process_start(os.getpid()) or 0}-"))
    try:
        tree = _open_tree(config, selector.text)
        try:
            tree.export(selector.commit, tmp)
        finally:
            tree.close()
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


_EXPORT = re.compile(re.escape(TEMP_PREFIX) + r"(\d{1,7})-(\d+)-")


def remove_stale_exports(folder: Path | None = None) -> list[Path]:
    """Remove the temporary adapter exports that a killed process (kill -9 skips every cleanup) left in the temp
    folder: only those whose process is gone (or whose pid now names another process)."""
    folder = Path(folder or tempfile.gettempdir())
    removed: list[Path] = []
    try:
        entries = [p for p in folder.iterdir() if p.name.startswith(TEMP_PREFIX)]
    except OSError:
        return removed
    for entry in entries:
        m = _EXPORT.match(entry.name)
        if not m or not entry.is_dir() or entry.is_symlink():
            continue
        pid, start = int(m.group(1)), m.group(2)
        if pid == os.getpid() or alive(pid, None if start == "0" else start):
            continue
        shutil.rmtree(entry, ignore_errors=True)
        removed.append(entry)
    return removed


# ---------------------------------------------------------------------------------------------------- choosing


def describe_selector(text: str, config: Config) -> str:
    """What a typed selector names (``adapter directory <path>``, ``tag · 1a2b3c4``, ``commit 1a2b3c4``), or
    InputError (one line) when it names nothing usable. Text that looks like an option never reaches git."""
    sel = resolve_selector(text, config)
    if sel.kind == "directory":
        files = f" · files {sel.content_hash[:7]}" if sel.content_hash else ""
        inside = sel.path is not None and Path(sel.path).is_relative_to(Path(config.base).resolve())
        return f"adapter directory{'' if inside else f' {sel.path}'}{files}"  # inside the project: its text says where
    if sel.kind in ("root", "final", "tag"):
        return f"tag · {str(sel.commit)[:7]}"
    return f"commit {str(sel.commit)[:7]}"


def choice_value(version: Version, run: str) -> str:
    """The selector a listed version is launched with: root, final (this run's), a tag's name, or a commit's
    first 12 hex digits."""
    if version.kind == "root":
        return "root"
    if version.kind == "final" and version.run == run:
        return "final"
    return version.commit[:12] if version.kind == "commit" else version.name


class AddedChoice(BaseModel):
    """A selector typed in earlier, checked again: what it names now, or why it can no longer be launched."""

    text: str
    note: str | None = None
    refused: str | None = None


class VersionChoices(BaseModel):
    """What the setup screen offers to launch: the tree's valid versions (by their selector), the selectors typed
    in earlier (checked again: a folder or tag may be gone), and why the tree could not be read (if so)."""

    versions: list[tuple[str, Version]]
    added: list[AddedChoice]
    in_tree: int = 0  # versions in the tree, the invalid ones (not offered) included
    problem: str | None = None


def version_choices(config: Config, added: Sequence[str] = ()) -> VersionChoices:
    """Open the adapter tree and list what can be launched (git and file reads: call it off the UI thread)."""
    checked = []
    for text in added:
        try:
            checked.append(AddedChoice(text=text, note=describe_selector(text, config)))
        except InputError as exc:
            checked.append(AddedChoice(text=text, refused=str(exc)))
    try:
        tree = AdapterTree(config.tree_dir)
        try:
            versions = tree.versions(config.run_name)
        finally:
            tree.close()
    except InputError as exc:
        return VersionChoices(versions=[], added=checked, problem=str(exc))
    return VersionChoices(
        versions=[(choice_value(v, config.run_name), v) for v in versions if v.valid],
        added=checked,
        in_tree=len(versions),
    )


__all__ = [
    "MANIFEST",
    "AddedChoice",
    "Selector",
    "VersionChoices",
    "check_selector_text",
    "choice_value",
    "describe_selector",
    "directory_hash",
    "label_for",
    "label_of",
    "materialize",
    "remove_stale_exports",
    "resolve_selector",
    "resolve_selectors",
    "version_choices",
]
