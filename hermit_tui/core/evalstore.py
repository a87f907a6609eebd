"""Where evaluations live on disk: ``<run dir>/eval/<label>/results.jsonl`` + ``summary.json`` (hermit's layout),
and the archive of earlier evaluations that hermit-tui keeps instead of overwriting them."""
from __future__ import annotations

import os
import shutil
from datetime import datetime, timezone
from pathlib import Path

from pydantic import BaseModel

from hermit_tui.core.records import ResultsFile, Summary, read_results, read_summary

RESULTS = "results.jsonl"
SUMMARY = "summary.json"
TRANSCRIPTS = "transcripts.jsonl"  # hermit-tui's sidecar of trajectories (core/transcripts.py)
ANNOTATIONS = "annotations.jsonl"  # hermit-tui's triage labels and notes (core/annotations.py)
ARCHIVE = "archive"


def eval_root(run_dir: Path) -> Path:
    return Path(run_dir) / "eval"


def archive_existing(label_dir: Path, *, copy: bool = False) -> Path | None:
    """Move (or ``copy``) an earlier results.jsonl/summary.json pair (and its transcripts.jsonl and
    annotations.jsonl) into ``<label dir>/archive/<UTC time>/``; return that folder, or None when there was nothing
    to keep."""
    label_dir = Path(label_dir)
    present = [label_dir / n for n in (RESULTS, SUMMARY, TRANSCRIPTS, ANNOTATIONS) if (label_dir / n).exists()]
    if not present:
        return None
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
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

    @property
    def results_path(self) -> Path:
        return self.folder / RESULTS

    @property
    def name(self) -> str:
        return f"{self.label} @ {self.archived_at}" if self.archived else self.label

    def load_results(self) -> ResultsFile:
        return read_results(self.results_path)


def _stored(label: str, folder: Path, archived_at: str | None) -> StoredEvaluation:
    summary, problem = None, None
    if (folder / SUMMARY).is_file():
        try:
            summary = read_summary(folder / SUMMARY)
        except Exception as exc:  # a damaged summary must not hide the others
            problem = str(exc)
    else:
        problem = "no summary.json (interrupted, or still running)"
    return StoredEvaluation(label=label, folder=folder, archived=archived_at is not None, archived_at=archived_at,
                            summary=summary, problem=problem)


def list_evaluations(run_dir: Path, *, include_archived: bool = True) -> list[StoredEvaluation]:
    """Every evaluation under ``<run dir>/eval``: the current one of each label, then its archived ones (newest
    first). Any folder holding a results.jsonl counts, including folders that ``hermit eval`` wrote."""
    root = eval_root(run_dir)
    found: list[StoredEvaluation] = []
    if not root.is_dir():
        return found
    for label_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        if (label_dir / RESULTS).is_file():
            found.append(_stored(label_dir.name, label_dir, None))
        archive = label_dir / ARCHIVE
        if include_archived and archive.is_dir():
            for old in sorted((p for p in archive.iterdir() if (p / RESULTS).is_file()), reverse=True):
                found.append(_stored(label_dir.name, old, old.name))
    return found


def open_evaluation(folder: Path) -> StoredEvaluation:
    """An evaluation folder given by path (anywhere, e.g. copied out of a run)."""
    folder = Path(folder).resolve()
    archived = folder.parent.name == ARCHIVE
    label = folder.parent.parent.name if archived else folder.name
    return _stored(label, folder, folder.name if archived else None)

