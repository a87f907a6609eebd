"""Every git repository hermit-tui opens (the adapter tree, a run's checkout) is opened here, so that nothing the
repository holds is ever run.

An adapter tree is learner-written material: its ``.git/hooks``, its config (``core.fsmonitor``, a pager, an
editor, a filter, diff or merge driver, a credential helper, a signing program) and its ``.gitattributes`` could each
name a command that git would otherwise start. :func:`open_repo` gives the GitPython ``Repo`` an environment in which
every git call (GitPython's own persistent ``cat-file`` processes included) runs with these switched off, through
git's command-level configuration (``GIT_CONFIG_COUNT``/``GIT_CONFIG_KEY_n``/``GIT_CONFIG_VALUE_n``, which beats every
config file): hooks are looked up in ``/dev/null`` (so none is found), fsmonitor is off, every filter, textconv,
external diff and merge driver configured at any level is emptied (an empty command is no command), signing, auto gc
and every transport are off, and git never prompts. What publishing relied on git's hooks for, hermit-tui checks
itself (``core.publish.card``: ref names, compare-and-swap moves, a card commit that changes CARD.md alone).

Reading needs no GitPython: :class:`GitReader` runs plain ``git`` processes under the same environment (what the
report, gate and show read of a tree: refs, commit types and messages, a commit's files, its parents and what it
changed), so a command that only reads does not pay GitPython's import and its ``git version`` call (issue 30).
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from hermit_tui.core.lazy import lazy_module

if TYPE_CHECKING:
    import git
else:
    git = lazy_module("git")  # GitPython (and its `git version` call) when first used

#: Settings that name no command or switch one off (each overrides any config file, at any level).
SAFE_CONFIG: tuple[tuple[str, str], ...] = (
    ("core.hooksPath", os.devnull),  # hooks are looked up in /dev/null/<name>: never found, never run
    ("core.fsmonitor", "false"),
    ("core.untrackedCache", "false"),
    ("core.pager", "cat"),
    ("core.editor", ":"),
    ("sequence.editor", ":"),
    ("core.askPass", ""),
    ("core.sshCommand", ""),
    ("core.gitProxy", ""),
    ("core.alternateRefsCommand", ""),
    ("credential.helper", ""),  # an empty value clears the list of helpers
    ("diff.external", ""),
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
    ("protocol.allow", "never"),  # no fetch, push or clone of any kind
    ("submodule.recurse", "false"),
    ("status.submoduleSummary", "false"),
)
#: Environment for every git call: no pager, editor or prompt, no optional lock (``status`` writes no index, so no
#: index hook could fire), no replace refs (a commit is what its id says).
SAFE_ENV: dict[str, str] = {
    "GIT_PAGER": "cat",
    "PAGER": "cat",
    "GIT_EDITOR": ":",
    "GIT_SEQUENCE_EDITOR": ":",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_NO_REPLACE_OBJECTS": "1",
}
# per-driver keys that name a command: <section>.<driver>.<key>; the value that switches each off
_DRIVER_KEYS = {
    "filter": {"clean": "", "smudge": "", "process": "", "required": "false"},
    "diff": {"textconv": "", "command": ""},
    "merge": {"driver": ""},
}
_DRIVER_NAME = re.compile(r"^(filter|diff|merge)\.(.+)\.([a-z]+)$", re.IGNORECASE)


def driver_overrides(config_names: Iterable[str]) -> list[tuple[str, str]]:
    """For every filter, diff or merge driver named in ``config_names`` (keys as ``git config --list --name-only``
    prints them), the settings that empty each of its commands."""
    drivers: set[tuple[str, str]] = set()
    for name in config_names:
        m = _DRIVER_NAME.match(name.strip())
        if m and m.group(1).lower() in _DRIVER_KEYS:
            drivers.add((m.group(1).lower(), m.group(2)))
    return [
        (f"{section}.{driver}.{key}", value)
        for section, driver in sorted(drivers)
        for key, value in _DRIVER_KEYS[section].items()
    ]


def safe_env(config_names: Iterable[str] = (), base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment additions that switch off every configurable command (``base``: the environment whose own
    ``GIT_CONFIG_COUNT`` entries are kept before ours, ``os.environ`` by default)."""
    base = dict(os.environ if base is None else base)
    pairs = [*SAFE_CONFIG, *driver_overrides(config_names)]
    raw = base.get("GIT_CONFIG_COUNT", "")
    start = int(raw) if raw.isdigit() and int(raw) < 10_000 else 0
    env = dict(SAFE_ENV)
    env["GIT_CONFIG_COUNT"] = str(start + len(pairs))
    for i, (key, value) in enumerate(pairs, start):
        env[f"GIT_CONFIG_KEY_{i}"] = key
        env[f"GIT_CONFIG_VALUE_{i}"] = value
    return env


def open_repo(path: str | Path) -> git.Repo:
    """A GitPython ``Repo`` on ``path`` whose every git call runs with hooks, fsmonitor, filters, drivers, pagers,
    editors, helpers and signing off (see the module's docstring). Raises what ``git.Repo`` raises
    (InvalidGitRepositoryError, NoSuchPathError)."""
    repo = git.Repo(Path(path))
    try:
        repo.git.update_environment(**safe_env())
        # the drivers configured at any level (reading the config runs nothing), then each of them emptied
        names = repo.git.config("--list", "--name-only", "-z").split("\0")
        repo.git.update_environment(**safe_env(names))
    except git.GitCommandError:
        pass  # no config at all to list: the base settings stand
    except BaseException:
        repo.close()
        raise
    return repo


_FULL_ID = re.compile(r"[0-9a-f]{40}")


class GitError(Exception):
    """A git command of :class:`GitReader` that failed (its exit status; what it printed on stderr)."""


class NotARepository(GitError):
    """The folder is not a git repository (nor a bare one) itself: git's search is not allowed above it."""


def git_executable() -> str:
    """The git program GitPython would run (its ``GIT_PYTHON_GIT_EXECUTABLE``, else ``git``)."""
    return os.environ.get("GIT_PYTHON_GIT_EXECUTABLE") or "git"


class GitReader:
    """Plain git processes reading the repository at ``path``, each with hooks, fsmonitor, filters, drivers,
    pagers, editors, helpers and signing off (as :func:`open_repo`'s). Raises :class:`NotARepository` when ``path``
    is not itself a repository, as ``git.Repo(path)`` does (git is not let search the folders above it)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._commits: dict[str, bytes] = {}  # a commit's raw object by its full id (an object never changes)
        self._batch: subprocess.Popen[bytes] | None = None  # one `cat-file --batch` for every object read
        self._lock = threading.Lock()
        base = dict(os.environ)
        self._env = {**base, **safe_env(base=base)}
        ceiling = {"GIT_CEILING_DIRECTORIES": str(self.path.resolve().parent)}
        try:
            self.run("rev-parse", "--git-dir", env=ceiling)
        except GitError:
            raise NotARepository(f"{self.path} is not a git repository") from None
        try:
            names = self.text("config", "--list", "--name-only", "-z").split("\0")
        except GitError:
            names = []  # no config at all to list: the base settings stand
        self._env = {**base, **safe_env(names, base=base)}

    def run(self, *args: str, stdin: bytes | None = None, env: dict[str, str] | None = None) -> bytes:
        """What ``git ARGS`` prints on stdout; GitError when it exits with another status than 0."""
        try:
            done = subprocess.run(
                [git_executable(), *args],
                cwd=self.path,
                env={**self._env, **(env or {})},
                input=stdin if stdin is not None else b"",
                capture_output=True,
                check=False,
            )
        except OSError as exc:
            raise GitError(f"git {args[0] if args else ''}: {exc}") from None
        if done.returncode:
            raise GitError(f"git {args[0] if args else ''} exited with {done.returncode}: {done.stderr[-500:]!r}")
        return done.stdout

    def text(self, *args: str) -> str:
        """:meth:`run`'s output as text without its last newline, as GitPython's ``repo.git.<command>`` gives it
        (bytes that are not UTF-8 kept as surrogate escapes)."""
        out = self.run(*args).decode("utf-8", "surrogateescape")
        return out[:-1] if out.endswith("\n") else out

    def _object(self, sha: str) -> tuple[str, bytes] | None:
        """(type, content) of the object with the full id ``sha``, None when there is none: one ``cat-file
        --batch`` process kept for the reader's life (as GitPython keeps its own), each object asked for in turn."""
        if not _FULL_ID.fullmatch(sha):
            raise GitError(f"not a full object id: {sha!r}")  # (never a revision git would interpret)
        with self._lock:
            if self._batch is None or self._batch.poll() is not None:
                try:
                    self._batch = subprocess.Popen(
                        [git_executable(), "cat-file", "--batch"],
                        cwd=self.path,
                        env=self._env,
                        stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE,
                        stderr=subprocess.DEVNULL,
                    )
                except OSError as exc:
                    raise GitError(f"git cat-file: {exc}") from None
            batch = self._batch
            assert batch.stdin is not None and batch.stdout is not None
            try:
                batch.stdin.write(f"{sha}\n".encode())
                batch.stdin.flush()
                header = batch.stdout.readline().split()
                if len(header) == 2 and header[1] == b"missing":
                    return None
                if len(header) != 3:
                    raise GitError(f"git cat-file --batch: unexpected answer for {sha}: {header!r}")
                size = int(header[2])
                data = batch.stdout.read(size + 1)
            except (OSError, ValueError) as exc:
                self._stop()
                raise GitError(f"git cat-file --batch: {exc}") from None
            if len(data) != size + 1:
                self._stop()
                raise GitError(f"git cat-file --batch ended while reading {sha}")
            return header[1].decode(), data[:-1]

    def _stop(self) -> None:
        batch, self._batch = self._batch, None
        if batch is None:
            return
        for stream in (batch.stdin, batch.stdout):
            if stream is not None:
                stream.close()
        try:
            batch.wait(timeout=5)
        except subprocess.TimeoutExpired:
            batch.kill()
            batch.wait()

    def close(self) -> None:
        """Stop the ``cat-file --batch`` process, if one was started (reading again starts another)."""
        with self._lock:
            self._stop()

    def __del__(self) -> None:
        # a reader dropped without close(): its cat-file ends at the end of its input (as GitPython's Repo does on
        # collection), reaped by subprocess later; nothing waits here
        batch = getattr(self, "_batch", None)
        if batch is not None and batch.stdin is not None:
            try:
                batch.stdin.close()
            except OSError:
                pass

    def object_type(self, sha: str) -> str | None:
        """``commit``, ``tree``, ``blob`` or ``tag`` for an object id, None when there is no such object."""
        if _FULL_ID.fullmatch(sha):
            found = self._object(sha)
            return found[0] if found is not None else None
        try:
            return self.text("cat-file", "-t", "--end-of-options", sha) or None
        except GitError:
            return None

    def _commit_object(self, sha: str) -> bytes:
        raw = self._commits.get(sha)
        if raw is not None:
            return raw
        if not _FULL_ID.fullmatch(sha):
            return self.run("cat-file", "commit", "--end-of-options", sha)  # never an option, whatever sha holds
        for _ in range(100):  # an annotated tag (of a tag ...) is followed to its commit, as `cat-file commit` does
            found = self._object(sha)
            if found is None:
                raise GitError(f"git cat-file: no object {sha}")
            kind, data = found
            if kind == "commit":
                self._commits[sha] = data
                return data
            target = data.split(b"\n", 1)[0]
            if kind != "tag" or not target.startswith(b"object "):
                raise GitError(f"git cat-file: {sha} is a {kind}, not a commit")
            sha = target[7:].decode("ascii", "replace")
        raise GitError(f"git cat-file: tags nested too deeply at {sha}")

    def commit(self, sha: str) -> tuple[list[str], bytes]:
        """A commit's parents and raw message (GitError when ``sha`` is not a commit)."""
        head, _, message = self._commit_object(sha).partition(b"\n\n")
        parents = [line[7:].decode() for line in head.split(b"\n") if line.startswith(b"parent ")]
        return parents, message

    def commit_message(self, sha: str) -> str:
        """A commit's message as text, in the encoding its header names (UTF-8 by default; what does not decode
        is replaced)."""
        head, _, message = self._commit_object(sha).partition(b"\n\n")
        encoding = "utf-8"
        for line in head.split(b"\n"):
            if line.startswith(b"encoding "):
                encoding = line[9:].decode("ascii", "replace").strip() or encoding
        try:
            return message.decode(encoding, "replace")
        except LookupError:
            return message.decode("utf-8", "replace")

    def blobs(self, shas: Sequence[str]) -> list[bytes]:
        """The contents of blobs, in order (GitError when one is missing or not a blob)."""
        contents: list[bytes] = []
        for sha in shas:
            found = self._object(sha)
            if found is None or found[0] != "blob":
                raise GitError(f"git cat-file: {sha} is not a blob")
            contents.append(found[1])
        return contents


__all__ = [
    "SAFE_CONFIG",
    "SAFE_ENV",
    "GitError",
    "GitReader",
    "NotARepository",
    "driver_overrides",
    "git_executable",
    "open_repo",
    "safe_env",
]
