"""The run config, hermit's ``run.yaml``: framework defaults, then the file, then ``key.sub=value`` overrides.

Every key hermit-harness 0.1.0 knows is accepted, so a real hermit config loads unchanged even where hermit-tui
ignores a section. Unknown keys are errors, except inside the free sections (FREE_SECTIONS) and under a key whose
default is null (such a key takes any value, as in hermit). Nothing here writes to the config file.
"""

from __future__ import annotations

import copy
import difflib
import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, PrivateAttr

from hermit_tui.core.errors import InputError
from hermit_tui.core.workspace.files import load_yaml, read_bytes

#: Sections whose keys are not checked, wherever they sit.
FREE_SECTIONS: frozenset[str] = frozenset({"params", "llm", "backends", "profiles"})

#: hermit-harness 0.1.0's framework defaults: every section and key a run.yaml may set.
DEFAULTS: dict[str, Any] = {
    "data": {
        "tasks": None,
        "train": None,
        "val": None,
        "test": None,
        "step_size": 8,
        "shuffle": True,
        "shuffle_seed": 0,
    },
    "task_info": None,
    "agent": {"name": None, "concurrency": 4, "timeout_min": None, "params": {}},
    "pipeline": {"run": None, "concurrency": None, "params": {}},  # older spelling of `agent` (run -> name)
    "judge": {"path": None, "name": "score"},
    "template": None,
    "start_from": None,
    "evolver": {"name": None, "resume": False, "params": {}},
    "evolver_access": {"environment": [], "tools": [], "send_material_out": False},
    "sandbox": {
        "enabled": True,
        "enforce": "required",
        "network": "isolated",
        "allow": [],
        "read": [],
        "packages": [],
        "env": None,
        "audit": None,
        "profiles": {},
    },
    "model": None,
    "backends": {},
    "llm": None,
    "trainer": {
        "run_name": None,
        "output_dir": "runs",
        "tree_dir": None,
        "epochs": 1,
        "allow_early_stop": False,
        "resume_mode": "auto",
        "save_freq": {"steps": None, "epochs": 1},
        "budget": {"usd": None, "tokens": None, "hours": None},
        "call_timeout_min": 60,
    },
    "eval": {"repeats": 1},
}

RUN_NAME = re.compile(r"[A-Za-z0-9][\w.-]{0,80}")
TEMPLATE_ID = re.compile(r"[a-z][a-z0-9-]{0,63}")
#: Bounds past which a number is a mistake that would only fail later (after an earlier evaluation was archived).
MAX_CONCURRENCY = 1024
MAX_REPEATS = 1000
MAX_TIMEOUT_MIN = 7 * 24 * 60
PATH_KEYS = (
    "data.tasks",
    "data.train",
    "data.val",
    "data.test",
    "judge.path",
    "trainer.output_dir",
    "trainer.tree_dir",
)
_LEAF = object()  # schema marker: a key with a non-null scalar or list default, nothing below it


def _kind(value: Any) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean"}.get(type(value), repr(value))


def _unknown(where: str, dotted: str, schema: Mapping[str, Any]) -> InputError:
    *head, last = dotted.split(".")
    close = difflib.get_close_matches(last, [str(k) for k in schema], n=1)
    hint = f" (did you mean '{'.'.join([*head, close[0]])}'?)" if close else ""
    return InputError(f"{where}: unknown key '{dotted}'{hint}")


def _child_schema(schema: Mapping[str, Any], key: str) -> Any:
    """What is known below `key`: a dict of keys, None (anything goes) or _LEAF (nothing)."""
    sub = schema[key]
    if key in FREE_SECTIONS or sub is None:
        return None
    return sub if isinstance(sub, dict) else _LEAF


def _merge(
    schema: Mapping[str, Any], base: dict[str, Any], given: Mapping[str, Any], prefix: str, where: str
) -> dict[str, Any]:
    """`base` updated by `given`, checking keys against `schema`; null for a section leaves it as it was."""
    out = copy.deepcopy(base)
    for key, value in given.items():
        dotted = f"{prefix}{key}"
        if key not in schema:
            raise _unknown(where, dotted, schema)
        if isinstance(schema[key], dict):
            if value is None:
                continue
            if not isinstance(value, dict):
                raise InputError(f"{where}: {dotted} must be a mapping, got {_kind(value)}")
            child = _child_schema(schema, key)
            current = out[key] if isinstance(out.get(key), dict) else {}
            out[key] = copy.deepcopy(value) if child is None else _merge(child, current, value, dotted + ".", where)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _apply_override(data: dict[str, Any], item: str) -> str:
    """Apply one ``key.sub=value`` to `data` in place; returns the dotted key it set."""
    where = f"override '{item if len(item) <= 80 else item[:77] + '...'}'"
    key, sep, raw = item.partition("=")
    parts = key.strip().split(".")
    if not sep or not all(parts):
        raise InputError(f"{where}: expected key.sub=value")
    try:
        value = load_yaml(raw, where) if raw != "" else None
    except yaml.YAMLError as exc:
        raise InputError(f"{where}: the value is not valid YAML ({getattr(exc, 'problem', None) or exc})") from None
    node, schema = data, DEFAULTS
    for i, part in enumerate(parts):
        dotted = ".".join(parts[: i + 1])
        child = default = None
        if schema is not None:
            if part not in schema:
                raise _unknown(where, dotted, schema)
            child, default = _child_schema(schema, part), schema[part]
        if i == len(parts) - 1:
            if not isinstance(default, dict):
                node[part] = value
            elif value is None:
                pass  # null for a section leaves it as it was, as in the file
            elif not isinstance(value, dict):
                raise InputError(f"{where}: {dotted} must be a mapping, got {_kind(value)}")
            elif child is None:
                node[part] = value  # a free section is replaced whole
            else:
                current = node[part] if isinstance(node.get(part), dict) else {}
                node[part] = _merge(child, current, value, dotted + ".", where)
        else:
            if child is _LEAF:
                raise InputError(f"{where}: unknown key '{key.strip()}' ({dotted} is not a section)")
            if node.get(part) is None:
                node[part] = {}
            elif not isinstance(node[part], dict):
                raise InputError(f"{where}: {dotted} is {_kind(node[part])}, not a section")
            node, schema = node[part], child
    return key.strip()


def _read_yaml(path: Path, shown: str) -> Any:
    try:
        raw = read_bytes(path)
    except FileNotFoundError:
        raise InputError(f"{shown}: config file not found") from None
    except IsADirectoryError:
        raise InputError(f"{shown}: is a directory, not a config file") from None
    except OSError as exc:
        raise InputError(f"{shown}: cannot read the config file ({exc.strerror or exc})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InputError(f"{shown}:{line}: not UTF-8 text") from None
    try:
        return load_yaml(text, shown)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f":{mark.line + 1}" if mark is not None else ""
        reason = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"{shown}{at}: not valid YAML ({reason})") from None


def _lookup(data: Mapping[str, Any], dotted: str, default: Any = None) -> Any:
    node: Any = data
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return default
        node = node[part]
    return node


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class Config(BaseModel):
    """A loaded run config: the merged `data` plus the paths and names derived from it."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    path: Path
    base: Path
    data: dict[str, Any]
    overrides: list[str]
    _shown: str = PrivateAttr(default="")
    # template_id's reading of the template's adapter.yaml, by the file's path and stat: a command asks for the
    # tree folder several times (the report: 5), and the file is parsed once while it stays as it was
    _template_ids: dict[tuple[Path, int, int, int], str] = PrivateAttr(default_factory=dict)

    @property
    def shown(self) -> str:
        """The config file as the user named it, for messages."""
        return self._shown or str(self.path)

    def get(self, dotted: str, default: Any = None) -> Any:
        """The value at ``a.b.c``, or `default` when some part of it is absent (a present null stays None)."""
        return _lookup(self.data, dotted, default)

    def resolve_path(self, value: Any) -> Path | None:
        """A config path made absolute: ``~`` and ``$VARS`` expanded, relative to the config's folder."""
        if value is None or value == "":
            return None
        p = Path(os.path.expandvars(str(value))).expanduser()
        return (p if p.is_absolute() else self.base / p).resolve()

    # ----- names and folders -----
    @property
    def run_name(self) -> str:
        name = self.get("trainer.run_name")
        if name:
            return str(name)
        evolver, template = self.get("evolver.name"), self.get("template")
        for key, value in (("evolver.name", evolver), ("template", template)):
            if not value:
                raise InputError(f"{self.shown}: {key} is required to name the run (or set trainer.run_name)")
        return f"{evolver}-{Path(str(template)).name.split('@')[0]}".replace("/", "-")

    @property
    def output_dir(self) -> Path:
        path = self.resolve_path(self.get("trainer.output_dir"))
        if path is None:
            raise InputError(f"{self.shown}: trainer.output_dir is not set")
        return path

    @property
    def run_dir(self) -> Path:
        return self.output_dir / self.run_name

    @property
    def template_dir(self) -> Path | None:
        """The template as a folder holding adapter.yaml; None for a built-in ``id@version`` (or no template)."""
        value = self.get("template")
        if not value:
            return None
        text = str(value)
        path = self.resolve_path(text)
        if path is None:  # (a non-empty value always resolves)
            return None
        if (path / "adapter.yaml").is_file():
            return path
        if "@" not in text and path.is_dir():
            raise InputError(f"{self.shown}: template '{text}' is a folder without adapter.yaml")
        if not TEMPLATE_ID.fullmatch(text.split("@")[0]):
            raise InputError(
                f"{self.shown}: template '{text}' is neither a folder holding adapter.yaml nor a built-in id@version"
            )
        return None

    @property
    def template_id(self) -> str:
        if not self.get("template"):
            raise InputError(f"{self.shown}: template is required to find the adapter tree (or set trainer.tree_dir)")
        folder = self.template_dir
        if folder is None:
            return str(self.get("template")).split("@")[0]
        manifest = folder / "adapter.yaml"
        try:
            st = manifest.stat()
            key: tuple[Path, int, int, int] | None = (manifest, st.st_ino, st.st_size, st.st_mtime_ns)
        except OSError:
            key = None  # _read_yaml words what is wrong with it
        if key is not None and key in self._template_ids:
            return self._template_ids[key]
        data = _read_yaml(manifest, str(manifest))
        ident = (
            data.get("template", {}).get("id")
            if isinstance(data, dict) and isinstance(data.get("template"), dict)
            else None
        )
        if not isinstance(ident, str) or not TEMPLATE_ID.fullmatch(ident):
            raise InputError(f"{manifest}: template.id must be a lowercase slug, got {ident!r}")
        if key is not None:
            self._template_ids[key] = ident
        return ident

    @property
    def tree_dir(self) -> Path:
        tree = self.resolve_path(self.get("trainer.tree_dir"))
        return tree if tree is not None else self.output_dir / "trees" / self.template_id

    # ----- data, agent, judge -----
    @property
    def tasks_path(self) -> Path | None:
        return self.resolve_path(self.get("data.tasks"))

    @property
    def train_path(self) -> Path | None:
        return self.resolve_path(self.get("data.train"))

    @property
    def val_path(self) -> Path | None:
        return self.resolve_path(self.get("data.val"))

    @property
    def test_path(self) -> Path | None:
        return self.resolve_path(self.get("data.test"))

    @property
    def agent_name(self) -> str | None:
        name = self.get("agent.name")
        return str(name) if name else None

    @property
    def agent_params(self) -> dict[str, Any]:
        return self.get("agent.params") or {}

    @property
    def concurrency(self) -> int:
        return int(self.get("agent.concurrency"))

    @property
    def timeout_min(self) -> float | None:
        value = self.get("agent.timeout_min")
        return None if value is None else float(value)

    @property
    def judge_path(self) -> Path | None:
        return self.resolve_path(self.get("judge.path"))

    @property
    def judge_name(self) -> str:
        return str(self.get("judge.name"))

    @property
    def repeats(self) -> int:
        return int(self.get("eval.repeats"))

    @property
    def shuffle(self) -> bool:
        return bool(self.get("data.shuffle"))

    @property
    def model(self) -> Any:
        return self.get("model")

    def require_for_eval(self) -> None:
        """Refuse a config that cannot be evaluated: tasks, test split, agent and judge must be set."""
        missing = [k for k in ("data.tasks", "data.test", "agent.name", "judge.path") if not self.get(k)]
        if missing:
            raise InputError(f"{self.shown}: evaluation needs {', '.join(missing)} (not set)")

    def with_overrides(self, more: Sequence[str]) -> Config:
        """The same file loaded again with `more` overrides after the existing ones."""
        return _load(self.path, [*self.overrides, *more], self.shown)


def load_config(path: str | Path, overrides: Sequence[str] = ()) -> Config:
    """Load `path` over DEFAULTS, apply `overrides` in order, fold ``pipeline`` into ``agent`` and validate."""
    return _load(path, list(overrides), str(path))


def _load(path: str | Path, overrides: list[str], shown: str) -> Config:
    given = Path(path).expanduser()
    base = given.parent.resolve()
    user = _read_yaml(given, shown)
    if user is None:
        user = {}
    if not isinstance(user, dict):
        raise InputError(f"{shown}: the top level must be a mapping of sections, got {_kind(user)}")
    data = _merge(DEFAULTS, DEFAULTS, user, "", shown)
    origin: dict[str, str] = {}
    for item in overrides:
        origin[_apply_override(data, item)] = f"override '{item}'"
    _fold_pipeline(data)
    _validate(data, lambda key: _origin_of(key, origin, shown))
    config = Config(path=base / given.name, base=base, data=data, overrides=list(overrides))
    config._shown = shown
    return config


def _origin_of(key: str, origin: Mapping[str, str], shown: str) -> str:
    """Who set `key` last: the latest override naming it or a section holding it, else the file."""
    found = shown
    for set_key, where in origin.items():
        if key == set_key or key.startswith(set_key + "."):
            found = where
    return found


def _fold_pipeline(data: dict[str, Any]) -> None:
    """hermit's older spelling: ``pipeline.run`` becomes ``agent.name`` when that is empty."""
    pipeline, agent = data["pipeline"], data["agent"]
    if pipeline.get("run") and not agent.get("name"):
        agent["name"] = pipeline["run"]
        if pipeline.get("params"):
            agent["params"] = {**(agent.get("params") or {}), **pipeline["params"]}
        if pipeline.get("concurrency") is not None:
            agent["concurrency"] = pipeline["concurrency"]


def _validate(data: dict[str, Any], where: Callable[[str], str]) -> None:
    def fail(key: str, message: str) -> InputError:
        return InputError(f"{where(key)}: {key} {message}")

    for key in ("pipeline.concurrency", "agent.concurrency", "eval.repeats"):
        value = _lookup(data, key)
        if key.startswith("pipeline") and value is None:
            continue
        if not _is_int(value) or value < 1:
            raise fail(key, f"must be a positive integer, got {_short(value)}")
        most = MAX_REPEATS if key == "eval.repeats" else MAX_CONCURRENCY
        if value > most:
            raise fail(key, f"must be at most {most}, got {_short(value)}")
    timeout = _lookup(data, "agent.timeout_min")
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or math.isnan(timeout) or timeout <= 0
    ):
        raise fail("agent.timeout_min", f"must be a positive number of minutes or null, got {_short(timeout)}")
    if timeout is not None and not timeout <= MAX_TIMEOUT_MIN:
        raise fail("agent.timeout_min", f"must be at most {MAX_TIMEOUT_MIN} minutes (a week), got {_short(timeout)}")
    if not isinstance(_lookup(data, "data.shuffle"), bool):
        raise fail("data.shuffle", f"must be true or false, got {_lookup(data, 'data.shuffle')!r}")
    run_name = _lookup(data, "trainer.run_name")
    if run_name and (
        not isinstance(run_name, (str, int)) or isinstance(run_name, bool) or not RUN_NAME.fullmatch(str(run_name))
    ):
        raise fail(
            "trainer.run_name",
            f"may hold only letters, digits, '.', '_' and '-' (starting with a letter "
            f"or digit, at most 81), got {run_name!r}",
        )
    for key in PATH_KEYS:
        value = _lookup(data, key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (str, int, float))):
            raise fail(key, f"must be a path, got {_kind(value)}")
    for key in ("agent.name", "judge.name"):
        value = _lookup(data, key)
        if value is not None and not isinstance(value, str):
            raise fail(key, f"must be a string, got {_kind(value)}")
    if not _lookup(data, "judge.name"):
        raise fail("judge.name", "must name the judge function")
