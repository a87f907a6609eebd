"""Generated hostile input for the loaders (hypothesis): run.yaml texts, overrides, task rows, results lines and lock
files. Every outcome is success or InputError (exit 2) with one line; never another exception, a hang (each example
runs under a time limit) or a change on disk."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import tempfile
from pathlib import Path

import pytest
from hostile_util import snapshot, time_limit
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermit_tui.cli import main
from hermit_tui.core.errors import InputError
from hermit_tui.core.records.journal import check_eval_folder
from hermit_tui.core.records.results import read_results, summarize
from hermit_tui.core.run.runner import EvalRun
from hermit_tui.core.workspace.config import load_config
from hermit_tui.core.workspace.tasks import load_tasks

EXAMPLES = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
LIMIT_S = 20

PIPELINE = "def run(task, adapter):\n    return {'output': task['id'], 'cost_usd': 0.0}\n"
JUDGE = "def score(task, output):\n    return 1.0\n"
RUN_YAML = (
    "data: {tasks: tasks.jsonl, train: train.txt, test: test.txt}\n"
    "agent: {name: pipe.py:run, concurrency: 2}\njudge: {path: judge.py}\n"
    "trainer: {run_name: t, tree_dir: tree}\n"
)

# -- the pieces hostile input is made of ----------------------------------------------------------------------------
NUMBERS = st.sampled_from(
    [
        "0",
        "-1",
        "1e308",
        ".inf",
        "-.inf",
        ".nan",
        "9" * 30,
        "0x10",
        "1_000",
        "2**64",
        "true",
        "null",
        "~",
        "1.5",
        "-0",
        "1e-320",
        "0o17",
    ]
)
YAML_HOSTILE = st.sampled_from(
    [
        "&a [*a]",
        "&m {k: *m}",
        "!!python/object/apply:os.system ['true']",
        "!!binary aGVsbG8=",
        "*undefined",
        "[" * 500 + "]" * 500,
        "{a: " * 150 + "1" + "}" * 150,
        "[" * 60 + "]" * 60,
        "'\x00'",
        '"\\ud800"',
        "&x [1, 2]",
        "{? [1, 2] : 3}",
        "!!set {a, b}",
        "2026-01-01",
        "- - -",
        "|\n  block",
        ">-\n folded",
        "{"
        + ", ".join(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]" if i else "l0: &l0 [x]" for i in range(10))
        + "}",
    ]
)
KEYS = st.sampled_from(
    [
        "eval.repeats",
        "agent.concurrency",
        "agent.timeout_min",
        "agent.name",
        "agent.params",
        "agent.params.x",
        "judge.path",
        "judge.name",
        "data.tasks",
        "data.test",
        "data.shuffle",
        "trainer.run_name",
        "trainer.output_dir",
        "pipeline.concurrency",
        "pipeline.run",
        "template",
        "task_info",
        "model",
        "llm",
        "backends",
        "eval",
        "agent",
        "sandbox.allow",
        "nope.key",
        "",
        "eval..repeats",
        "eval.repeats.x",
        ".",
        "a" * 200,
    ]
)
VALUES = st.one_of(NUMBERS, YAML_HOSTILE, st.text(max_size=40))
JSON_LEAF = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20)
)
JSON_VALUE = st.recursive(
    JSON_LEAF,
    lambda kids: st.one_of(st.lists(kids, max_size=4), st.dictionaries(st.text(max_size=8), kids, max_size=4)),
    max_leaves=20,
)


def deep_json(depth: int) -> str:
    return "[" * depth + "]" * depth


def workspace() -> Path:
    ws = Path(tempfile.mkdtemp(prefix="hostile-prop-"))
    (ws / "tasks.jsonl").write_text('{"id": "a"}\n{"id": "b"}\n')
    (ws / "test.txt").write_text("a\nb\n")
    (ws / "train.txt").write_text("")
    (ws / "pipe.py").write_text(PIPELINE)
    (ws / "judge.py").write_text(JUDGE)
    (ws / "run.yaml").write_text(RUN_YAML)
    return ws


def one_line(exc: InputError) -> None:
    text = str(exc)
    assert text and "\n" not in text and len(text) < 2000, text


def load_everything(ws: Path, overrides=()) -> None:
    """What `hermit-tui eval` does before it writes anything."""
    config = load_config(ws / "run.yaml", list(overrides))
    EvalRun(config, ["none"], update_card=False)


def outcome(ws: Path, fn) -> None:
    before = snapshot(ws)
    try:
        with time_limit(LIMIT_S, "a generated case"):
            fn()
    except InputError as exc:
        one_line(exc)
    assert snapshot(ws) == before
    shutil.rmtree(ws, ignore_errors=True)


@pytest.fixture(autouse=True)
def private_tmp(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))


@EXAMPLES
@given(
    st.lists(
        st.one_of(
            st.tuples(KEYS, VALUES).map(lambda kv: f"{kv[0]}: {kv[1]}"),
            st.tuples(KEYS, VALUES).map(lambda kv: f"{kv[0]}:\n  x: {kv[1]}"),
            YAML_HOSTILE,
            st.text(max_size=30),
        ),
        max_size=5,
    )
)
def test_generated_run_yaml(pieces):
    ws = workspace()
    (ws / "run.yaml").write_text(RUN_YAML + "\n".join(pieces) + "\n", encoding="utf-8", errors="surrogatepass")
    outcome(ws, lambda: load_everything(ws))


@EXAMPLES
@given(
    st.lists(st.one_of(st.tuples(KEYS, VALUES).map(lambda kv: f"{kv[0]}={kv[1]}"), st.text(max_size=30)), max_size=4)
)
def test_generated_overrides(overrides):
    ws = workspace()
    outcome(ws, lambda: load_everything(ws, overrides))


@EXAMPLES
@given(
    st.lists(
        st.one_of(
            JSON_VALUE.map(lambda v: json.dumps(v)),
            st.dictionaries(st.sampled_from(["id", "task_id", "x"]), JSON_VALUE, max_size=3).map(json.dumps),
            st.integers(1, 3000).map(lambda d: '{"id": "d", "x": ' + deep_json(d) + "}"),
            st.text(max_size=30),
        ),
        min_size=1,
        max_size=6,
    ),
    st.lists(st.sampled_from(["a", "b", "d", "0", "", "#c", "x"]), max_size=4),
)
def test_generated_task_rows(rows, test_ids):
    ws = workspace()
    (ws / "tasks.jsonl").write_text("\n".join(rows) + "\n", encoding="utf-8", errors="surrogatepass")
    (ws / "test.txt").write_text("\n".join(test_ids) + "\n")

    def load():
        config = load_config(ws / "run.yaml")
        load_tasks(config)
        EvalRun(config, ["none"], update_card=False)

    outcome(ws, load)


RECORD = {
    "repeat": 1,
    "id": "a",
    "status": "ok",
    "error": None,
    "output": "a",
    "judge": {"score": 1.0},
    "cost_usd": 0.0,
    "wall_s": 0.1,
    "api_speed": None,
    "tokens": None,
    "log": None,
}
FIELDS = st.sampled_from(["repeat", "id", "status", "judge", "cost_usd", "wall_s", "output", "error", "log"])


@EXAMPLES
@given(
    st.lists(
        st.one_of(
            st.tuples(FIELDS, JSON_VALUE).map(lambda kv: json.dumps({**RECORD, kv[0]: kv[1]})),
            st.sampled_from(["NaN", "Infinity", "-Infinity", "1e999"]).map(
                lambda x: json.dumps(RECORD).replace('"score": 1.0', f'"score": {x}')
            ),
            st.integers(1, 3000).map(
                lambda d: json.dumps({**RECORD, "output": None}).replace('"output": null', '"output": ' + deep_json(d))
            ),
            st.text(max_size=40),
            JSON_VALUE.map(json.dumps),
        ),
        max_size=6,
    ),
    st.booleans(),
)
def test_generated_results_lines(lines, final_newline):
    ws = workspace()
    folder = ws / "runs/t/eval/none"
    folder.mkdir(parents=True)
    path = folder / "results.jsonl"
    path.write_text("\n".join(lines) + ("\n" if final_newline else ""), encoding="utf-8", errors="surrogatepass")

    def load():
        read = read_results(path)
        summary = summarize(read.records, adapter="none", commit=None, task_ids=["a", "b"], repeats=1, wall_s=0.0)
        json.loads(summary.to_json())  # writable as standard JSON
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["report", "--config", str(ws / "run.yaml"), "--format", "json"])
        assert code in (0, 2), err.getvalue()
        assert "Traceback" not in err.getvalue()
        if code == 2:
            assert len(err.getvalue().strip().splitlines()) == 1, err.getvalue()

    outcome(ws, load)


@EXAMPLES
@given(
    st.one_of(
        JSON_VALUE.map(json.dumps),
        st.binary(max_size=40).map(lambda b: b.decode("latin-1")),
        st.integers().map(lambda pid: json.dumps({"pid": pid, "host": "elsewhere"})),
        st.integers(-10, 1 << 70).map(lambda pid: json.dumps({"pid": pid})),
    )
)
def test_generated_lock_files(content):
    ws = workspace()
    folder = ws / "runs/t/eval/none"
    folder.mkdir(parents=True)
    (folder / ".hermit-tui.lock").write_text(content, encoding="utf-8", errors="surrogatepass")
    outcome(ws, lambda: check_eval_folder(ws / "runs/t/eval", "none"))
