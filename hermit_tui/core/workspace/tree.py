"""The adapter tree: the git repository hermit keeps adapters in.

The root commit is the template (tag ``root``); a training run is a branch; checkpoints and the final selection are
tags prefixed with the run name (``<run>/ckpt-step-N``, ``<run>/ckpt-epoch-N``, ``<run>/bootstrap``,
``<run>/final``). A commit whose message holds :data:`INVALID_MARK` failed hermit's spec check and is not an adapter.

User text never reaches git here: refs are looked up in a table read with ``git for-each-ref``, abbreviated commits
are checked to be hexadecimal before git sees them, and tag names are checked against git's ref-name rules.
"""

from __future__ import annotations

import io
import os
import re
import tarfile
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel

from hermit_tui.core.errors import InputError
from hermit_tui.core.lazy import lazy_module
from hermit_tui.core.workspace.gitrepo import GitError, GitReader, NotARepository, open_repo

if TYPE_CHECKING:
    import git
else:
    git = lazy_module("git")  # GitPython (and its `git version` call) when first used

INVALID_MARK = "[invalid: fails check_spec; the next commit repairs it]"
ROOT_TAG = "root"

_HEX = re.compile(r"[0-9a-fA-F]{4,40}")
_CHECKPOINT = re.compile(r"(?:ckpt-(step|epoch)-(\d+)|(bootstrap))")
_BAD_REF_CHARS = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]")

VersionKind = Literal["root", "final", "checkpoint", "tag", "commit"]


class Version(BaseModel):
    """One selectable adapter version: a tag, or an untagged commit of the run's branch."""

    name: str
    kind: VersionKind
    commit: str
    date: datetime
    message: str
    valid: bool
    run: str | None = None


def valid_ref_name(name: str) -> bool:
    """Whether ``name`` is acceptable as a branch or tag name by git's rules (``git check-ref-format``)."""
    if not name or name == "@" or name.startswith("-") or _BAD_REF_CHARS.search(name):
        return False
    if ".." in name or "@{" in name or "//" in name or name.endswith(("/", ".")):
        return False
    return all(part and not part.startswith(".") and not part.endswith(".lock") for part in name.split("/"))


_SHARED: ContextVar[dict[str, AdapterTree] | None] = ContextVar("hermit_tui_shared_trees", default=None)


@contextmanager
def one_tree_per_path() -> Iterator[None]:
    """Within it, :func:`open_tree` hands out one AdapterTree per path, opened at its first use and closed at the
    end: a command that reads the tree for several selectors (the report: each selector resolved, each version's
    files, the test-split reuse) opens GitPython's Repo, lists the config and starts the cat-file helpers once, not
    once per read. For reading only (nothing in it moves a ref); per thread (a context variable: another thread
    opens its own trees). Nested, the outer one holds the trees."""
    if _SHARED.get() is not None:
        yield
        return
    trees: dict[str, AdapterTree] = {}
    token = _SHARED.set(trees)
    try:
        yield
    finally:
        _SHARED.reset(token)
        for tree in trees.values():
            tree._close_repo()


def open_tree(path: Path | str) -> AdapterTree:
    """``AdapterTree(path)``, or inside :func:`one_tree_per_path` the tree already open on that path (its
    ``close`` then waits for the end of the scope). InputError as AdapterTree raises it (never kept)."""
    trees = _SHARED.get()
    if trees is None:
        return AdapterTree(Path(path))
    key = os.path.abspath(path)
    tree = trees.get(key)
    if tree is None:
        tree = trees[key] = AdapterTree(Path(path))
        tree._shared = True
    return tree


def run_of(tag: str) -> str | None:
    """The run a ``<run>/...`` tag belongs to, or None."""
    head, sep, _ = tag.rpartition("/")
    return head if sep else None


class AdapterTree:
    """Read and update an adapter tree: reads through plain git processes (``reader``), updates, exports and the
    version listing through GitPython (``repo``, opened at its first use)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._shared = False  # handed out by open_tree inside one_tree_per_path: closed at the end of it
        self._shared_refs: dict[str, str] | None = None
        self._repo: git.Repo | None = None
        if not self.path.exists():
            raise InputError(f"adapter tree {self.path} does not exist")
        try:
            self.reader = GitReader(self.path)
        except NotARepository:
            raise InputError(f"adapter tree {self.path} is not a git repository") from None

    @property
    def repo(self) -> git.Repo:
        """GitPython's Repo on the tree (see ``gitrepo.open_repo``), opened when first asked for."""
        if self._repo is None:
            try:
                self._repo = open_repo(self.path)
            except (git.InvalidGitRepositoryError, git.NoSuchPathError):
                raise InputError(f"adapter tree {self.path} is not a git repository") from None
        return self._repo

    def _close_repo(self) -> None:
        self.reader.close()
        if self._repo is not None:
            self._repo.close()

    # ---------- refs ----------
    def _refs(self) -> dict[str, str]:
        """Every tag and branch (full ref name) with the commit it points at; refs to other objects are left out.
        A shared tree (``one_tree_per_path``: reading only) lists them once."""
        if self._shared:
            if self._shared_refs is None:
                self._shared_refs = self._list_refs()
            return dict(self._shared_refs)
        return self._list_refs()

    def _list_refs(self) -> dict[str, str]:
        fmt = "%(refname)%00%(objecttype)%00%(objectname)%00%(*objecttype)%00%(*objectname)"
        out = self.reader.text("for-each-ref", f"--format={fmt}", "refs/tags", "refs/heads")
        refs: dict[str, str] = {}
        for line in out.splitlines():
            name, kind, sha, peeled_kind, peeled = line.split("\x00")
            if kind == "commit":
                refs[name] = sha
            elif kind == "tag" and peeled_kind == "commit":
                refs[name] = peeled
        return refs

    def _commit_type(self, sha: str) -> bool:
        if len(sha) % 2 or not _HEX.fullmatch(sha):
            return False  # (an id git is never asked about)
        return self.reader.object_type(sha) == "commit"

    def has_commit(self, sha: str) -> bool:
        """Whether ``sha`` (40 hex digits) is a commit of the tree."""
        return len(sha) == 40 and self._commit_type(sha)

    def _commits_with_prefix(self, prefix: str) -> list[str]:
        prefix = prefix.lower()
        if len(prefix) == 40:
            return [prefix] if self._commit_type(prefix) else []
        try:
            out = self.reader.text("rev-parse", f"--disambiguate={prefix}")
        except GitError:
            return []
        return [sha for sha in out.split() if self._commit_type(sha)]

    def lookup(self, ref: str) -> tuple[str, str | None]:
        """``(full sha, ref name)`` of what ``ref`` names as typed; the ref name is None for a commit given by sha.

        In this order: a full commit id; ``refs/tags/<t>`` or ``refs/heads/<b>`` (a branch is only ever named so);
        a tag; an abbreviated commit id. A text that names a tag and also abbreviates another commit is refused as
        ambiguous, as is a bare branch name (its head moves: name it ``refs/heads/<b>``). A branch that happens to be
        named like a commit's abbreviated id is never taken for it."""
        if len(ref) == 40 and _HEX.fullmatch(ref) and self._commit_type(ref.lower()):
            return ref.lower(), None  # (before the refs are listed: an export of a resolved commit lists none)
        refs = self._refs()
        if ref.startswith(("refs/tags/", "refs/heads/")):
            if ref in refs:
                return refs[ref], ref
            raise InputError(f"unknown adapter version '{ref}' in tree {self.path}: there is no such ref")
        tag = f"refs/tags/{ref}"
        found = self._commits_with_prefix(ref) if _HEX.fullmatch(ref) else []
        if tag in refs:
            others = [sha for sha in found if sha != refs[tag]]
            if others:
                raise InputError(
                    f"adapter version '{ref}' is ambiguous in tree {self.path}: it is a tag (at {refs[tag][:12]}) "
                    f"and abbreviates commit {others[0][:12]}; type refs/tags/{ref} for the tag or the full commit id"
                )
            return refs[tag], tag
        if len(found) == 1:
            return found[0], None
        if found:
            raise InputError(
                f"adapter version '{ref}' is ambiguous in tree {self.path}: it abbreviates "
                f"{len(found)} commits ({', '.join(sorted(s[:12] for s in found))}); type more digits"
            )
        if f"refs/heads/{ref}" in refs:
            raise InputError(
                f"adapter version '{ref}' is a branch of tree {self.path}, whose head moves: type refs/heads/{ref} "
                "to measure its head, or a tag or commit"
            )
        raise InputError(f"unknown adapter version '{ref}' in tree {self.path}")

    def resolve(self, ref: str) -> str:
        """The full sha of a tag, a branch or a (possibly abbreviated) commit."""
        return self.lookup(ref)[0]

    def tag_target(self, tag: str) -> str | None:
        """The commit tag ``tag`` points at, or None when there is no such tag."""
        return self._refs().get(f"refs/tags/{tag}")

    def message(self, commit: str) -> str:
        """The full message of a commit (given as any ref :meth:`resolve` accepts)."""
        return self.reader.commit_message(self.resolve(commit))

    def close(self) -> None:
        """Stop the git helper processes GitPython keeps open (a shared tree: when its ``one_tree_per_path``
        ends)."""
        if not self._shared:
            self._close_repo()

    def is_valid(self, commit: str) -> bool:
        """False for a commit hermit marked as failing its spec check."""
        return INVALID_MARK not in self.message(commit)

    def ref_value(self, name: str) -> str | None:
        """The object a ref (full name) points at, unpeeled (an annotated tag's own object), or None."""
        out = str(self.repo.git.for_each_ref("--format=%(refname)%00%(objectname)", "refs/tags", "refs/heads"))
        for line in out.splitlines():
            ref, _, sha = line.partition("\x00")
            if ref == name:
                return sha
        return None

    def move_tag(self, tag: str, commit: str, *, expected: str | None) -> None:
        """Point tag ``tag`` at ``commit`` only if the ref still holds ``expected`` (its unpeeled value as read, see
        :meth:`ref_value`; None: only if there is no such tag). A tag moved meanwhile is an InputError and stays."""
        if not valid_ref_name(tag):
            raise InputError(f"'{tag}' is not a valid tag name")
        if not self._commit_type(commit):
            raise InputError(f"'{commit}' is not a commit of tree {self.path}")
        self.swap_ref(f"refs/tags/{tag}", commit, expected)

    def swap_ref(self, ref: str, new: str | None, expected: str | None, message: str | None = None) -> None:
        """Compare-and-swap one ref: set it to ``new`` (None: delete it) only if it holds ``expected`` (None: only
        if it does not exist). Refused with an InputError naming what it holds now when it changed since read."""
        try:
            self._swap_ref(ref, new, expected, message)
        finally:
            self._shared_refs = None  # a ref moved (or may have): a shared tree lists them again

    def _swap_ref(self, ref: str, new: str | None, expected: str | None, message: str | None) -> None:
        old = expected if expected is not None else "0" * 40
        args = ["-m", message] if message else []
        try:
            if new is None:
                self.repo.git.update_ref(*args, "-d", ref, old)
            else:
                self.repo.git.update_ref(*args, ref, new, old)
        except git.GitCommandError:
            now = self.ref_value(ref)
            if now != expected:
                raise InputError(
                    f"{ref.removeprefix('refs/tags/').removeprefix('refs/heads/')} changed meanwhile (it points at "
                    f"{str(now)[:12]}, not at {str(expected)[:12]} as read): it is left as it is"
                ) from None
            raise

    # ---------- files ----------
    def export(self, commit: str, dest: Path) -> Path:
        """Write the files of ``commit`` (no git metadata) into ``dest``, created if missing."""
        sha = self.resolve(commit)
        dest = Path(dest)
        dest.mkdir(parents=True, exist_ok=True)
        try:  # plain git, as the lookups are: a launch's exports never load GitPython
            buffer = io.BytesIO(self.reader.run("archive", "--format=tar", sha))
        except GitError as exc:
            raise InputError(f"commit {sha[:12]} of tree {self.path} cannot be exported: {exc}") from None
        try:
            with tarfile.open(fileobj=buffer, mode="r:") as archive:
                archive.extractall(dest, filter="data")
        except tarfile.FilterError as exc:
            raise InputError(f"commit {sha[:12]} of tree {self.path} cannot be exported safely: {exc}") from None
        return dest

    # ---------- listing ----------
    def versions(self, run_name: str | None = None) -> list[Version]:
        """Every tagged commit, plus the untagged commits of ``run_name``'s branch.

        Order: ``root``; then each run's checkpoints (along the branch, bootstrap first) and its final, the given run
        first and the others by name; then the other tags by name; then the untagged commits of the run, oldest first.
        """
        refs = self._refs()
        tags = {name.removeprefix("refs/tags/"): sha for name, sha in refs.items() if name.startswith("refs/tags/")}
        branch = f"refs/heads/{run_name}" if run_name and f"refs/heads/{run_name}" in refs else None
        order = self._topo_index([*set(tags.values()), *([refs[branch]] if branch else [])])

        def make(name: str, kind: VersionKind, sha: str, run: str | None) -> Version:
            c = self.repo.commit(sha)
            return Version(
                name=name,
                kind=kind,
                commit=sha,
                date=c.committed_datetime,
                message=c.summary if isinstance(c.summary, str) else c.summary.decode(),
                valid=INVALID_MARK not in c.message,
                run=run,
            )

        runs: dict[str, list[tuple[tuple[int, ...], Version]]] = {}
        others: list[Version] = []
        root: list[Version] = []
        for name, sha in tags.items():
            run = run_of(name)
            leaf = name.rsplit("/", 1)[-1]
            checkpoint = _CHECKPOINT.fullmatch(leaf) if run else None
            if name == ROOT_TAG:
                root.append(make(name, "root", sha, None))
            elif run and leaf == "final":
                runs.setdefault(run, []).append(((1, 0, 0, 0), make(name, "final", sha, run)))
            elif checkpoint and run:
                what, number, bootstrap = checkpoint.groups()
                key = (0, order.get(sha, 0), 0 if bootstrap else 1 if what == "step" else 2, int(number or 0))
                runs.setdefault(run, []).append((key, make(name, "checkpoint", sha, run)))
            else:
                others.append(make(name, "tag", sha, run))
        listed = list(root)
        for run in sorted(runs, key=lambda r: (r != run_name, r)):
            listed += [v for _, v in sorted(runs[run], key=lambda kv: (kv[0], kv[1].name))]
        listed += sorted(others, key=lambda v: v.name)
        if branch:
            tagged = set(tags.values())
            exclude = ["--not", tags[ROOT_TAG]] if ROOT_TAG in tags else []
            for sha in self.repo.git.rev_list("--reverse", "--topo-order", branch, *exclude).split():
                if sha not in tagged:
                    listed.append(make(sha[:7], "commit", sha, run_name))
        return listed

    def _topo_index(self, shas: list[str]) -> dict[str, int]:
        """Position of each commit in a topological order (ancestors first) of the history of ``shas``."""
        if not shas:
            return {}
        out = self.repo.git.rev_list("--topo-order", "--reverse", *sorted(shas))
        return {sha: i for i, sha in enumerate(out.split())}


__all__ = ["INVALID_MARK", "ROOT_TAG", "AdapterTree", "Version", "run_of", "valid_ref_name"]
