"""The protocol fingerprint stored beside each summary: what must stay fixed for two evaluations to compare.

Hashes (sha256, hex) of the test task ids and rows, the judge's and the pipeline's source files, the agent's
params and the model settings, plus repeats, the smoke limit, the hermit-tui version, a dataset revision when
the config or the task rows carry one, and the clusters of ``--cluster-by`` (the field and a hash of the task ->
cluster mapping). Two summaries compare when their fingerprints agree on everything but the hermit-tui version and
the clusters (an analysis choice, reported, not required to match: the figures use the clusters asked for).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from hermit_tui.core.version import __version__
from hermit_tui.core.workspace.config import Config
from hermit_tui.core.workspace.files import read_bytes

#: Field -> how a difference is named to the user.
FIELD_NAMES = {
    "test_ids_sha256": "the test task ids",
    "test_rows_sha256": "the test task rows",
    "judge_sha256": "the judge's source",
    "pipeline_sha256": "the pipeline's source",
    "agent_params_sha256": "the agent params",
    "model_sha256": "the model settings",
    "repeats": "repeats",
    "smoke_limit": "the smoke limit",
    "dataset_revision": "the dataset revision",
}
#: Recorded, but a difference does not make two evaluations incomparable.
INFORMATIONAL = ("hermit_tui_version", "cluster_by", "clusters_sha256")
REVISION_KEYS = ("dataset_revision", "revision")


class Fingerprint(BaseModel):
    """summary.json's ``fingerprint``. hermit-tui writes every field; when reading, a field may be missing (a file
    written by hand or by another tool): a missing field compares as None."""

    model_config = ConfigDict(extra="allow")

    test_ids_sha256: str | None = None
    test_rows_sha256: str | None = None
    judge_sha256: str | None = None
    pipeline_sha256: str | None = None
    agent_params_sha256: str | None = None
    model_sha256: str | None = None
    repeats: int | None = None
    smoke_limit: int | None = None
    dataset_revision: str | None = None
    hermit_tui_version: str | None = None
    cluster_by: str | None = None  # eval --cluster-by: the field of the task rows whose values cluster the tasks
    clusters_sha256: str | None = None  # of that field and the task id -> cluster mapping

    def field(self, name: str) -> Any:
        """A field by name (FIELD_NAMES' keys), None when it is not recorded."""
        return getattr(self, name, None)


def _digest(value: Any) -> str:
    data = value if isinstance(value, bytes) else json.dumps(value, sort_keys=True, default=str).encode()
    return hashlib.sha256(data).hexdigest()


def _file_digest(path: Path | None) -> str | None:
    try:
        return _digest(read_bytes(path)) if path else None
    except OSError:
        return None


def _pipeline_file(config: Config) -> Path | None:
    name = str(config.agent_name or "")
    module, _, _ = name.partition(":")
    if module.endswith(".py"):
        return config.resolve_path(module)
    return None


def dataset_revision(config: Config, rows: list[dict[str, Any]]) -> str | None:
    """``task_info.revision`` / ``task_info.dataset_revision`` when task_info is a mapping, else the one revision
    the test rows agree on (a ``dataset_revision`` or ``revision`` field)."""
    info = config.get("task_info")
    if isinstance(info, dict):
        for key in REVISION_KEYS:
            if info.get(key) is not None:
                return str(info[key])
    for key in REVISION_KEYS:
        found = {str(r[key]) for r in rows if r.get(key) is not None}
        if len(found) == 1:
            return found.pop()
        if len(found) > 1:
            return "mixed: " + ", ".join(sorted(found)[:3])
    return None


def compute_fingerprint(
    config: Config,
    rows: list[dict[str, Any]],
    *,
    repeats: int,
    limit: int | None,
    cluster_by: str | None = None,
    clusters_sha256: str | None = None,
) -> Fingerprint:
    params = dict(config.agent_params or {})
    model = {"model": config.get("model"), "llm": config.get("llm"), "agent.params.model": params.get("model")}
    return Fingerprint(
        test_ids_sha256=_digest([str(r["id"]) for r in rows]),
        test_rows_sha256=_digest(rows),
        judge_sha256=_file_digest(config.judge_path),
        pipeline_sha256=_file_digest(_pipeline_file(config)),
        agent_params_sha256=_digest(params),
        model_sha256=_digest(model),
        repeats=repeats,
        smoke_limit=limit,
        dataset_revision=dataset_revision(config, rows),
        hermit_tui_version=__version__,
        cluster_by=cluster_by,
        clusters_sha256=clusters_sha256,
    )


def fingerprint_of(summary: Any) -> Fingerprint | None:
    """The fingerprint a summary carries, or None (e.g. written by hermit itself)."""
    value = getattr(summary, "fingerprint", None)
    return value if isinstance(value, Fingerprint) else None


def differences(a: Fingerprint | None, b: Fingerprint | None) -> list[str]:
    """What differs between two fingerprints, named for a user; [] when they agree. A missing fingerprint (an
    evaluation written by hermit, or by an older hermit-tui) cannot be checked and says so."""
    if a is None or b is None:
        return ["unknown: an evaluation without a protocol fingerprint (written by hermit eval?) cannot be checked"]
    return [name for key, name in FIELD_NAMES.items() if a.field(key) != b.field(key)]
