"""Where evaluations live on disk: ``<run dir>/eval/<label>/results.jsonl`` + ``summary.json`` (hermit's layout),
and the archive of earlier evaluations that hermit-tui keeps instead of overwriting them.

A smoke subset (``--limit N``, a wiring check) goes to ``eval/<label>/smoke/`` (archived there too:
``eval/<label>/smoke/archive/<UTC time>/``), so it never displaces the full evaluation of its label. hermit itself
never reads that folder; hermit-tui lists smoke evaluations only when asked (History, ``--smoke``).
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel

from hermit_tui.core.errors import InputError
from hermit_tui.core.records.results import ResultsFile, Summary, read_results, read_summary

if TYPE_CHECKING:
    from hermit_tui.core.records.columns import AttemptTable

RESULTS = "results.jsonl"
SUMMARY = "summary.json"
TRANSCRIPTS = "transcripts.jsonl"  # hermit-tui's sidecar of trajectories (core/records/transcripts.py)
ANNOTATIONS = "annotations.jsonl"  # hermit-tui's triage labels and notes (core/records/annotations.py)
ARCHIVE = "archive"
SMOKE = "smoke"  # eval/<label>/smoke/: the label's smoke subsets (--limit N), kept apart from its evaluation
WHICH = ("full", "smoke", "all")


LOGS = "logs"
LOCK = ".hermit-tui.lock"
#: What hermit-tui writes inside an evaluation's folder (each checked by :func:`check_no_links` before a write).
WRITTEN_NAMES = (RESULTS, SUMMARY, TRANSCRIPTS, ANNOTATIONS, LOGS, ARCHIVE, SMOKE, LOCK)


def run_dir_of(folder: Path) -> Path | None:
    """The run folder an evaluation folder lies in (the parent of its nearest ``eval`` ancestor), or None."""
    folder = Path(os.path.abspath(folder))
    for parent in (folder, *folder.parents):
        if parent.name == "eval":
            return parent.parent
    return None


def _refuse_link(path: Path, run_dir: Path) -> None:
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return
    except OSError as exc:
        raise InputError(f"{path}: cannot inspect it ({exc.strerror or exc})") from None
    if stat.S_ISLNK(st.st_mode):
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
        real, home = os.path.realpath(path), os.path.realpath(run_dir)
        where = "inside" if real == home or real.startswith(home.rstrip(os.sep) + os.sep) else "outside"
        raise InputError(
            f"{path}: a symbolic link (to {target}, {where} the run folder); hermit-tui writes nothing through a "
            "link in the run folder: replace it by a real file or folder"
        )


def check_no_links(run_dir: Path | None, path: Path, names: Iterable[str] = ()) -> None:
    """The run folder is a boundary: refuse (InputError, one line naming the link) when ``path``, any folder between
    the run folder and it, or any of ``names`` inside ``path`` is a symbolic link, dangling or not (the run folder
    itself, and what lies above it, may be links). A ``path`` outside ``run_dir`` is refused too; with ``run_dir``
    None only ``path`` and ``names`` are checked. Every command that writes in a run folder asks this first."""
    target = Path(os.path.abspath(path))
    if run_dir is not None:
        base = Path(os.path.abspath(run_dir))
        try:
            parts = target.relative_to(base).parts
        except ValueError:
            raise InputError(f"{path}: outside the run folder {base}; hermit-tui writes nothing there") from None
        current = base
        for part in parts:
            current = current / part
            _refuse_link(current, base)
    else:
        _refuse_link(target, target.parent)
    for name in names:
        _refuse_link(target / name, run_dir if run_dir is not None else target)


def eval_root(run_dir: Path) -> Path:
    return Path(run_dir) / "eval"


def eval_folder(run_dir: Path, label: str, *, smoke: bool = False) -> Path:
    """The folder of a label's current evaluation: ``eval/<label>/``, or ``eval/<label>/smoke/`` for a smoke subset."""
    folder = eval_root(run_dir) / label
    return folder / SMOKE if smoke else folder


def archive_existing(label_dir: Path, *, copy: bool = False) -> Path | None:
    """Move (or ``copy``) an earlier results.jsonl/summary.json pair (and its transcripts.jsonl and
    annotations.jsonl) into ``<label dir>/archive/<UTC time>/``; return that folder, or None when there was nothing
    to keep."""
    label_dir = Path(label_dir)  # a label's folder, or its smoke folder
    present = [label_dir / n for n in (RESULTS, SUMMARY, TRANSCRIPTS, ANNOTATIONS) if (label_dir / n).exists()]
    if not present:
        return None
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    dest = label_dir / ARCHIVE / stamp
    n = 1
    while dest.exists():
        n += 1
        dest = label_dir / ARCHIVE / f"{stamp}-{n}"
    dest.mkdir(parents=True)
    for src in present:
        if copy:
            shutil.copy2(src, dest / src.name)
        else:
            os.replace(src, dest / src.name)
    return dest


class StoredEvaluation(BaseModel):
    """One evaluation found on disk, written by hermit-tui or by ``hermit eval``."""

    label: str
    folder: Path
    archived: bool = False
    archived_at: str | None = None
    summary: Summary | None = None
    problem: str | None = None  # why the summary could not be read, if it could not
    smoke: bool = False  # a smoke subset, found under eval/<label>/smoke/

    @property
    def results_path(self) -> Path:
        return self.folder / RESULTS

    @property
    def name(self) -> str:
        label = f"{self.label} (smoke)" if self.smoke else self.label
        return f"{label} @ {self.archived_at}" if self.archived else label

    def load_results(self) -> ResultsFile:
        return read_results(self.results_path)

    def load_table(self) -> AttemptTable:
        """The results as columns (``core.records.columns.AttemptTable``: what the report, the gate and the dashboard
        read); the same attempts, warnings and errors as :meth:`load_results`. The caller closes it."""
        from hermit_tui.core.records.columns import read_table

        return read_table(self.results_path)


def _stored(label: str, folder: Path, archived_at: str | None, smoke: bool = False) -> StoredEvaluation:
    summary, problem = None, None
    if (folder / SUMMARY).is_file():
        try:
            summary = read_summary(folder / SUMMARY)
        except Exception as exc:  # a damaged summary must not hide the others
            problem = str(exc)
    else:
        problem = "no summary.json (interrupted, or still running)"
    return StoredEvaluation(
        label=label,
        folder=folder,
        archived=archived_at is not None,
        archived_at=archived_at,
        summary=summary,
        problem=problem,
        smoke=smoke,
    )


def list_evaluations(run_dir: Path, *, include_archived: bool = True, which: str = "full") -> list[StoredEvaluation]:
    """Every evaluation under ``<run dir>/eval``: the current one of each label, then its archived ones (newest
    first). Any folder holding a results.jsonl counts, including folders that ``hermit eval`` wrote.

    ``which``: "full" (default: the evaluations; smoke subsets under ``eval/<label>/smoke/`` are left out), "smoke"
    (only those), or "all" (each label's evaluations, then its smoke subsets)."""
    if which not in WHICH:
        raise ValueError(f"which must be one of {WHICH}, got {which!r}")
    root = eval_root(run_dir)
    found: list[StoredEvaluation] = []
    if not root.is_dir():
        return found
    for label_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        folders = ([(label_dir, False)] if which != "smoke" else []) + (
            [(label_dir / SMOKE, True)] if which != "full" and (label_dir / SMOKE).is_dir() else []
        )
        for folder, smoke in folders:
            if (folder / RESULTS).is_file():
                found.append(_stored(label_dir.name, folder, None, smoke))
            archive = folder / ARCHIVE
            if include_archived and archive.is_dir():
                for old in sorted((p for p in archive.iterdir() if (p / RESULTS).is_file()), reverse=True):
                    found.append(_stored(label_dir.name, old, old.name, smoke))
    return found


def open_evaluation(folder: Path) -> StoredEvaluation:
    """An evaluation folder given by path (anywhere, e.g. copied out of a run)."""
    folder = Path(folder).resolve()
    archived = folder.parent.name == ARCHIVE
    home = folder.parent.parent if archived else folder  # the label's folder, or its smoke folder
    smoke = home.name == SMOKE and home.parent.parent.name == "eval"
    label = home.parent.name if smoke else home.name
    return _stored(label, folder, folder.name if archived else None, smoke)
