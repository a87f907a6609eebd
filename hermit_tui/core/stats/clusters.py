"""Clusters above the task: tasks that share a template, a passage or a category are not independent draws, so the
standard errors, intervals and tests of ``core.stats.intervals`` can be clustered by a field of the task rows
(``--cluster-by FIELD``; Miller 2024, sec. 2.2, "clustered standard errors").

**The clustered variance of a mean** (:func:`clustered_var`): for the mean of ``N`` task values ``x_i`` in ``C``
clusters of ``n_c`` tasks, Bell & McCaffrey's bias-reduced cluster-robust (sandwich) variance of the intercept of an
OLS fit on a constant (CR2; Bell & McCaffrey 2002, Survey Methodology 28:169; Pustejovsky & Tipton 2018, JBES
36:672): each cluster's residuals scaled by ``(I - H_cc)^(-1/2)``, which for the mean (``H = J / N``, so
``H_cc = J / N`` on the cluster's block) leaves its residual sum ``S_c`` divided by ``sqrt(1 - n_c / N)``::

    V = sum_c S_c^2 / (1 - n_c / N) / N^2

With every task its own cluster it is the usual ``sd^2 / N``. With clusters of equal size (``n_c / N = 1 / C``) it
is exactly CR1, ``C / (C - 1) sum_c S_c^2 / N^2`` (Liang & Zeger 1986 with the usual small-sample factor;
statsmodels' ``OLS(x, 1).fit(cov_type="cluster")``); with unequal sizes it weighs the large clusters, whose
residuals the mean fits most, up. Inference uses Student's t on the Bell-McCaffrey degrees of freedom
(:func:`bell_mccaffrey_df`, fixed by the clusters' sizes): ``C - 1`` with clusters of equal size, fewer as their
sizes grow unequal (the clusters, not the tasks, are the independent units). CR1 on ``C - 1`` df, which these
figures used before, was liberal with unequal sizes (5.7-6.9% rejections of a true null at nominal 5% in
benchmarks/explore_clustered_sequential.py, CR2 on these df 4.6-5.3%). A pair's covariance (:func:`clustered_cov`)
is the same sandwich on the two selectors' cluster sums, ``sum_c S^a_c S^b_c / (1 - n_c / N) / N^2``, so that
``V(b - a) = V(b) + V(a) - 2 cov(a, b)`` is the CR2 variance of the task differences, on the same df.

Or from a file (``--cluster-file FILE``): task id -> cluster, as a JSON object or two columns of CSV/TSV (an ``id``
header is skipped). The file travels as the spec ``file:<absolute path>`` wherever a field name would (the
protocol fingerprint's ``cluster_by`` included, beside the mapping's sha256), so that ``report`` and ``gate`` read
the same file again by default.

What goes in a cluster: each value of the field is a cluster; a task without the field (or with an empty value) is a
cluster of its own. A field that holds a list or a mapping cannot cluster (a task belongs to one cluster). Fewer than
2 clusters over the test tasks is bad input: with one cluster nothing varies between clusters.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel

from hermit_tui.core.errors import InputError

FILE_PREFIX = "file:"  # a cluster spec naming a task id -> cluster file rather than a field of the task rows
OWN = "(own cluster) "  # the prefix of the cluster of a task without the field: one per such task
# the fixed design's clustered figures (the report's "clustered by" row, the methods of a selector and a pair)
CLUSTER_METHOD = "bias-reduced cluster-robust (CR2) standard error, Student t on the Bell-McCaffrey degrees of freedom"
# the clustered pair interval's floor (core.stats.intervals.pair_bounds), when a cluster holds several tasks
CLUSTER_PAIR_FLOOR = "never narrower than the CR2 t interval on the task differences"
# a clustered t interval's method, as a method line names an interval (the clustered sequential look's, say)
CLUSTER_T_METHOD = (
    "Student t interval with the bias-reduced cluster-robust (CR2) standard error, on the Bell-McCaffrey degrees of "
    "freedom of the clusters' sizes"
)


class Clustering(BaseModel):
    """Test task id -> cluster, and where it came from (``by``: the field of the task rows)."""

    by: str
    of: dict[str, str]

    def codes(self, ids: Sequence[str]) -> np.ndarray:
        """Integer cluster codes ``0..C-1`` of ``ids`` in their order (a task it does not name: its own cluster)."""
        seen: dict[str, int] = {}
        out = np.empty(len(ids), dtype=np.int64)
        for i, tid in enumerate(ids):
            key = self.of.get(tid, OWN + tid)
            out[i] = seen.setdefault(key, len(seen))
        return out

    def count(self, ids: Sequence[str]) -> int:
        return len({self.of.get(t, OWN + t) for t in ids})

    def digest(self) -> str:
        """sha256 of the field and the mapping: the protocol fingerprint records what the figures were clustered by."""
        data = json.dumps({"by": self.by, "of": self.of}, sort_keys=True).encode()
        return hashlib.sha256(data).hexdigest()


def _value(value: object, field: str, tid: str) -> str | None:
    if value is None or value == "":
        return None
    if isinstance(value, (list, tuple, set, dict)):
        raise InputError(
            f"--cluster-by {field}: task {tid}: the field holds a {type(value).__name__}; a cluster field holds one "
            "value per task"
        )
    return str(value)


def file_spec(path: str | Path) -> str:
    """The cluster spec of a task id -> cluster file (``--cluster-file``): ``file:`` and its absolute path."""
    return FILE_PREFIX + str(Path(path).expanduser().resolve())


def _file_rows(path: Path, shown: str) -> list[tuple[int, str, object]]:
    """(line, task id, cluster) of a cluster file: a JSON object, or two columns of CSV / TSV."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise InputError(f"--cluster-file {shown}: cannot read it ({reason})") from None
    if path.suffix.lower() == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"--cluster-file {shown}: line {exc.lineno}: not JSON ({exc.msg})") from None
        if not isinstance(data, dict):
            raise InputError(f"--cluster-file {shown}: a JSON file must hold one object, task id -> cluster")
        return [(0, str(k), v) for k, v in data.items()]
    import csv

    lines = text.splitlines()
    delimiter = "\t" if lines and "\t" in lines[0] else ","
    out: list[tuple[int, str, object]] = []
    for n, row in enumerate(csv.reader(lines, delimiter=delimiter), start=1):
        if not row or all(not cell.strip() for cell in row):
            continue
        if len(row) != 2:
            raise InputError(f"--cluster-file {shown}: line {n}: {len(row)} columns; give task id{delimiter}cluster")
        if n == 1 and row[0].strip().lower() in ("id", "task_id", "task"):
            continue
        out.append((n, row[0].strip(), row[1].strip()))
    return out


def clusters_from_file(spec_or_path: str, test_ids: Sequence[str]) -> Clustering:
    """The clusters of the test tasks from a task id -> cluster file (``--cluster-file``; ``spec_or_path``: a
    :func:`file_spec` or a path). Ids the file names that are not test tasks are ignored (a file may cover every
    split); a test task it does not name is a cluster of its own. InputError (one line naming the file and line)
    when it cannot be read, a row is malformed, an id appears twice, it names no test task, a cluster is a list or
    mapping, or the test tasks fall in fewer than 2 clusters."""
    raw = spec_or_path[len(FILE_PREFIX) :] if spec_or_path.startswith(FILE_PREFIX) else spec_or_path
    path = Path(raw)
    shown = str(path)[-80:]
    wanted = set(test_ids)
    of: dict[str, str] = {}
    seen: dict[str, int] = {}
    for line, tid, value in _file_rows(path, shown):
        where = f"line {line}: " if line else ""
        if tid in seen:
            raise InputError(
                f"--cluster-file {shown}: {where}task {tid[:60]!r} appears twice (first: line {seen[tid]})"
            )
        seen[tid] = line
        if isinstance(value, (list, tuple, set, dict)):
            raise InputError(f"--cluster-file {shown}: {where}task {tid[:60]}: a cluster is one value, not a list")
        if tid in wanted and value is not None and value != "":
            of[tid] = str(value)
    if not any(t in wanted for t in seen):
        raise InputError(f"--cluster-file {shown}: it names none of the {len(wanted)} test tasks")
    clustering = Clustering(by=FILE_PREFIX + str(path), of=of)
    if clustering.count(test_ids) < 2:
        raise InputError(f"--cluster-file {shown}: every test task is in one cluster; clustering needs at least 2")
    return clustering


def clusters_by_field(tasks: Mapping[str, Mapping[str, object]], test_ids: Sequence[str], field: str) -> Clustering:
    """The clusters of the test tasks by ``field`` of their rows (or, for a :func:`file_spec`, from that file:
    :func:`clusters_from_file`). InputError (one line) when no test task has the field (naming the fields they
    have), when a task holds a list or mapping there, or when the test tasks fall in fewer than 2 clusters."""
    if field.startswith(FILE_PREFIX):
        return clusters_from_file(field, test_ids)
    if not any(field in tasks.get(t, {}) for t in test_ids):
        known = sorted({k for t in test_ids for k in tasks.get(t, {}) if k != "id"})
        raise InputError(f"--cluster-by {field[:60]!r}: no test task has that field (they have: {', '.join(known)})")
    of: dict[str, str] = {}
    for tid in test_ids:
        value = _value(tasks.get(tid, {}).get(field), field, tid)
        if value is not None:
            of[tid] = value
    clustering = Clustering(by=field, of=of)
    n = clustering.count(test_ids)
    if n < 2:
        only = next(iter(of.values()), "")
        raise InputError(
            f"--cluster-by {field}: every test task is in one cluster ({only[:60]!r}); clustering needs at least 2"
        )
    return clustering


def resolve_clustering(
    tasks: Mapping[str, Mapping[str, object]],
    test_ids: Sequence[str],
    cluster_by: str | None,
    recorded: Sequence[str | None] = (),
    recorded_sha256: Sequence[str | None] = (),
) -> Clustering | None:
    """The clusters the figures use: ``cluster_by`` when given (``--cluster-by``), else the field every one of the
    ``recorded`` evaluations was launched with (``eval --cluster-by``, in their protocol fingerprints), else None.
    Bad input as :func:`clusters_by_field`; and when the recorded clusters are taken and the mapping they give now
    is not the one the evaluations recorded (``recorded_sha256``, their fingerprints' ``clusters_sha256``: a cluster
    file edited since the launch, say), InputError naming it, rather than figures clustered otherwise than the
    launch's without a word."""
    field = cluster_by
    if field is None:
        fields = set(recorded)
        if len(fields) == 1 and None not in fields and recorded:
            field = next(iter(fields))
    if field is None:
        return None
    clustering = clusters_by_field(tasks, test_ids, field)
    digests = {d for d in recorded_sha256 if d}
    if cluster_by is None and len(digests) == 1 and clustering.digest() not in digests:
        option, shown = spec_parts(field)
        raise ClustersChanged(
            f"{option} {shown[-80:]}: the test tasks' clusters are not the ones the evaluations were launched with "
            f"(sha256 {next(iter(digests))[:12]} recorded, {clustering.digest()[:12]} now)",
            option,
        )
    return clustering


def spec_parts(spec: str) -> tuple[str, str]:
    """A recorded cluster spec as the command line gives it: ``("--cluster-file", its path)`` or
    ``("--cluster-by", the field)``."""
    if spec.startswith(FILE_PREFIX):
        return "--cluster-file", spec[len(FILE_PREFIX) :]
    return "--cluster-by", spec


def spec_name(spec: str) -> str:
    """A cluster spec as a note names it: the task field, or the cluster file by its name (not the machine's path)."""
    option, value = spec_parts(spec)
    return Path(value).name if option == "--cluster-file" else value


def clustered_text(by: str, units: str) -> str:
    """How a method line says its figures are clustered: 'clustered by BY (UNITS): the method'."""
    return f"clustered by {by} ({units}): {CLUSTER_METHOD}"


def unclustered_note(labels: Sequence[str], recorded: Sequence[str | None]) -> str | None:
    """Why figures that some evaluations were launched clustered are not (:func:`resolve_clustering` clusters only
    when every evaluation recorded the same clusters), with the option that clusters them all; None when none of
    ``labels`` (their ``recorded`` ``cluster_by``, in the same order) was launched clustered."""
    fields = {r for r in recorded if r is not None}
    if not fields:
        return None
    by: dict[str | None, list[str]] = {}
    for label, field in zip(labels, recorded):
        by.setdefault(field, []).append(label)

    def option(field: str) -> str:
        return f"{spec_parts(field)[0]} {spec_name(field)}"

    parts = [f"{', '.join(names)} launched with {option(f)}" for f, names in by.items() if f is not None]
    parts += [f"{', '.join(by[None])} without clusters"] if None in by else []
    hint = f" ({option(next(iter(fields)))} clusters them all)" if len(fields) == 1 else ""
    return f"Not clustered: {'; '.join(parts)}: every figure takes the test tasks as independent{hint}"


class ClustersChanged(InputError):
    """The recorded clusters cannot be taken as they were launched: ``reason`` says why, and the message adds what a
    command's user can do (pass the option: the figures clustered as the mapping is now); a screen says its own."""

    def __init__(self, reason: str, option: str):
        super().__init__(f"{reason}; pass {option} to cluster by them as they are now")
        self.reason, self.option = reason, option


def _onehot(codes: np.ndarray) -> np.ndarray:
    codes = np.asarray(codes, dtype=np.int64)
    out = np.zeros((len(codes), int(codes.max()) + 1 if len(codes) else 0))
    out[np.arange(len(codes)), codes] = 1.0
    return out


def cluster_sums(x: Any, codes: np.ndarray) -> np.ndarray:
    """Per cluster (last axis), the sum of the residuals ``x - mean(x)`` of its tasks (``x``: last axis the tasks;
    leading axes: data sets)."""
    x = np.asarray(x, dtype=float)
    codes = np.asarray(codes, dtype=np.int64)
    resid = x - x.mean(-1, keepdims=True)
    if resid.ndim == 1:  # one data set: no tasks x clusters matrix (a hundred thousand tasks in thousands of clusters)
        sums: np.ndarray = np.bincount(codes, weights=resid, minlength=int(codes.max()) + 1 if len(codes) else 0)
        return sums
    out: np.ndarray = resid @ _onehot(codes)
    return out


def clustered_cov(x: Any, y: Any, codes: np.ndarray) -> np.ndarray:
    """The CR2 cluster-robust covariance of ``mean(x)`` and ``mean(y)`` (last axis: the tasks, clustered by
    ``codes``): ``sum_c S^x_c S^y_c / (1 - n_c / N) / N^2``; NaN with fewer than 2 clusters."""
    codes = np.asarray(codes, dtype=np.int64)
    n = len(codes)
    sizes = np.bincount(codes, minlength=int(codes.max()) + 1 if n else 0)
    sx, sy = cluster_sums(x, codes), cluster_sums(y, codes)
    if np.count_nonzero(sizes) < 2:
        return np.full(sx.shape[:-1], np.nan)
    out: np.ndarray = np.sum(sx * sy / (1 - sizes / n), -1) / n**2  # a code without a task: S_c = 0, n_c = 0
    return out


def clustered_var(x: Any, codes: np.ndarray) -> np.ndarray:
    """The CR2 cluster-robust variance of ``mean(x)``: ``sum_c S_c^2 / (1 - n_c / N) / N^2``."""
    return clustered_cov(x, x, codes)


def bias_reduced_var(x: Any, codes: np.ndarray) -> float:
    """:func:`clustered_var` of one data set, as a float (NaN with fewer than 2 clusters): the clustered sequential
    design's (``core.stats.sequential``) variance of its mean difference."""
    return float(clustered_var(np.asarray(x, dtype=float), codes))


def cluster_df(codes: np.ndarray) -> float:
    """The Bell-McCaffrey degrees of freedom of the tasks clustered by ``codes`` (:func:`bell_mccaffrey_df` of the
    clusters' sizes)."""
    return bell_mccaffrey_df(np.bincount(np.asarray(codes, dtype=np.int64)))


def bell_mccaffrey_df(sizes: Sequence[int] | np.ndarray) -> float:
    """The degrees of freedom of :func:`bias_reduced_var` for clusters of ``sizes`` tasks: Satterthwaite's
    ``(tr G)^2 / ||G||_F^2`` for tasks independent with equal variance (Bell & McCaffrey 2002; Imbens & Kolesár
    2016, REStat 98:701), ``G[c, d] = (delta_cd n_c - n_c n_d / N) / sqrt((1 - n_c / N)(1 - n_d / N))``: ``C - 1``
    with clusters of equal size, fewer as their sizes grow unequal (a few large clusters are what varies). Fixed by
    the clusters' sizes, before any attempt."""
    n_c = np.asarray([s for s in sizes if s > 0], dtype=float)
    if len(n_c) < 2:
        return math.nan
    if np.all(n_c == n_c[0]):  # equal sizes: G = N / (C - 1) (I - J / C), whose df is C - 1 exactly
        return float(len(n_c) - 1)
    n = float(n_c.sum())
    root = np.sqrt(1 - n_c / n)
    g = (np.diag(n_c) - np.outer(n_c, n_c) / n) / np.outer(root, root)
    return float(np.trace(g) ** 2 / np.sum(g * g))


__all__ = [
    "CLUSTER_METHOD",
    "CLUSTER_PAIR_FLOOR",
    "CLUSTER_T_METHOD",
    "bell_mccaffrey_df",
    "bias_reduced_var",
    "FILE_PREFIX",
    "Clustering",
    "cluster_df",
    "cluster_option",
    "cluster_sums",
    "clustered_cov",
    "clustered_text",
    "clustered_var",
    "clusters_by_field",
    "clusters_from_file",
    "file_spec",
    "resolve_clustering",
    "spec_name",
    "spec_parts",
    "unclustered_note",
]


def cluster_option(cluster_by: str | None, cluster_file: str | None) -> str | None:
    """The cluster spec of the command line's ``--cluster-by FIELD`` or ``--cluster-file FILE`` (not both)."""
    if cluster_by is not None and cluster_file is not None:
        raise InputError("--cluster-by and --cluster-file both name the clusters: give one of the two")
    return file_spec(cluster_file) if cluster_file is not None else cluster_by
