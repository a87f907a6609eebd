"""Task rows and split files: ids, file order, and one-line errors naming file and line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hermit_tui.core.errors import InputError
from hermit_tui.core.workspace.config import load_config
from hermit_tui.core.workspace.tasks import TaskSet, load_tasks, read_split

ROWS = [
    {"id": "t-01", "question": "What is Two plus two?", "meta": {"tags": ["Math", "EASY"], "level": 1}},
    {"task_id": "t-02", "question": "Capital of France"},
    {"id": 3, "question": "int id"},
    {"id": "t-04", "question": "last", "answer": None},
]


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def jsonl(rows) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)


@pytest.fixture
def project(tmp_path):
    """A config with tasks and three split files; returns tmp_path."""
    write(tmp_path / "data" / "tasks.jsonl", jsonl(ROWS))
    write(tmp_path / "data" / "train.txt", "t-01\n3\n")
    write(tmp_path / "data" / "val.txt", "# validation\n\nt-02\n")
    write(tmp_path / "data" / "test.txt", "# held out\nt-04\n  t-02  \n\n")
    write(
        tmp_path / "run.yaml",
        "data:\n  tasks: data/tasks.jsonl\n  train: data/train.txt\n  val: data/val.txt\n  test: data/test.txt\n",
    )
    return tmp_path


def load(root: Path, overrides=(), **kwargs) -> TaskSet:
    return load_tasks(load_config(root / "run.yaml", overrides), **kwargs)


def error_of(root: Path, overrides=(), **kwargs) -> str:
    with pytest.raises(InputError) as info:
        load(root, overrides, **kwargs)
    return str(info.value)


def test_tasks_and_splits_in_file_order(project):
    tasks = load(project)
    assert list(tasks.tasks) == ["t-01", "t-02", "3", "t-04"]
    assert tasks.source == project / "data" / "tasks.jsonl"
    assert tasks.splits == {"train": ["t-01", "3"], "val": ["t-02"], "test": ["t-04", "t-02"]}
    assert tasks.test_ids == ["t-04", "t-02"]
    # id set as hermit does: added when missing, an existing (int) id left as it is
    assert tasks.tasks["t-02"] == {"task_id": "t-02", "question": "Capital of France", "id": "t-02"}
    assert tasks.tasks["3"]["id"] == 3
    assert [row["question"] for row in tasks.rows("train")] == ["What is Two plus two?", "int id"]
    assert [row["question"] for row in tasks.rows("test")] == ["last", "Capital of France"]


def test_unset_splits_are_empty(project):
    tasks = load(project, ["data.train=", "data.val="])
    assert tasks.splits == {"train": [], "val": [], "test": ["t-04", "t-02"]}
    assert tasks.rows("train") == [] and tasks.overlaps() == []


def test_overlaps_one_line_per_pair(project):
    write(project / "data" / "train.txt", "t-01\nt-02\n3\nt-04\n")
    write(project / "data" / "val.txt", "3\n")
    assert load(project).overlaps() == ["test overlaps train: 2 tasks (t-04, t-02)", "val overlaps train: 1 task (3)"]
    write(project / "data" / "val.txt", "t-04\n")
    assert load(project).overlaps()[1] == "test overlaps val: 1 task (t-04)"


def test_overlap_list_is_shortened(tmp_path):
    ids = [f"t{i}" for i in range(7)]
    tasks = TaskSet(
        tasks={i: {"id": i} for i in ids},
        splits={"train": ids, "val": [], "test": ids[::-1]},
        source=tmp_path / "tasks.jsonl",
    )
    assert tasks.overlaps() == ["test overlaps train: 7 tasks (t6, t5, t4, t3, t2, …)"]


def test_text_of_flattens_values_lowercase(project):
    tasks = load(project)
    assert tasks.text_of("t-01") == "t-01 what is two plus two? math easy 1"
    assert tasks.text_of("t-04") == "t-04 last"


def test_require_test(project):
    config = f"{project / 'run.yaml'}"
    assert error_of(project, ["data.test="]) == f"{config}: data.test is not set (evaluation needs a test split)"
    assert load(project, ["data.test="], require_test=False).test_ids == []
    write(project / "data" / "test.txt", "# nothing yet\n\n")
    assert error_of(project) == f"{project / 'data' / 'test.txt'}: the test split is empty"
    assert load(project, require_test=False).test_ids == []
    assert error_of(project, ["data.tasks="], require_test=False) == f"{config}: data.tasks is not set"


def test_missing_files(project):
    (project / "data" / "val.txt").unlink()
    assert error_of(project) == f"{project / 'data' / 'val.txt'}: split file not found"
    (project / "data" / "tasks.jsonl").unlink()
    assert error_of(project) == f"{project / 'data' / 'tasks.jsonl'}: task file not found"


@pytest.mark.parametrize(
    "lines, message",
    [
        (['{"id": "a"}', "", '{"id": "b" "x": 1}'], "3: not valid JSON (Expecting ',' delimiter)"),
        (['{"id": "a"}', "[1, 2]"], "2: a task must be a JSON object, got list"),
        (['"text"'], "1: a task must be a JSON object, got str"),
        (['{"id": "a"}', '{"question": "no id"}'], "2: the task has no usable 'id' or 'task_id' (got None)"),
        (['{"id": null, "task_id": "x"}'], "1: the task has no usable 'id' or 'task_id' (got None)"),
        (['{"id": ""}'], "1: the task has no usable 'id' or 'task_id' (got '')"),
        (['{"id": true}'], "1: the task has no usable 'id' or 'task_id' (got True)"),
        (['{"id": [1]}'], "1: the task has no usable 'id' or 'task_id' (got [1])"),
        (['{"id": "a"}', "", '{"id": "b"}', '{"task_id": "a"}'], "4: duplicate task id 'a' (first on line 1)"),
        (['{"id": 7}', '{"id": "7"}'], "2: duplicate task id '7' (first on line 1)"),
    ],
)
def test_bad_task_lines_name_file_and_line(project, lines, message):
    path = write(project / "data" / "tasks.jsonl", "\n".join(lines) + "\n")
    assert error_of(project) == f"{path}:{message}"


def test_task_file_not_utf8_names_the_line(project):
    path = write(project / "data" / "tasks.jsonl", b'{"id": "t-01"}\n{"id": "t-02", "q": "caf\xe9"}\n')
    assert error_of(project) == f"{path}:2: not UTF-8 text"


def test_bom_crlf_and_unicode_line_separators(project):
    rows = [{"id": "t-01", "q": "a\u2028b"}, {"id": "t-02"}, {"id": 3}, {"id": "t-04"}]
    body = "\r\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\r\n"
    write(project / "data" / "tasks.jsonl", b"\xef\xbb\xbf" + body.encode("utf-8"))
    write(project / "data" / "test.txt", "t-04\r\n")
    tasks = load(project)
    assert list(tasks.tasks) == ["t-01", "t-02", "3", "t-04"]
    assert tasks.tasks["t-01"]["q"] == "a\u2028b"
    assert tasks.test_ids == ["t-04"]


def test_split_errors_name_file_and_line(project):
    test = project / "data" / "test.txt"
    write(test, "# c\nt-04\nt-99\n")
    assert error_of(project) == f"{test}:3: unknown task id 't-99' (not in the task file)"
    write(test, "t-04\n\nt-02\nt-04\n")
    assert error_of(project) == f"{test}:4: duplicate task id 't-04' (first on line 1)"
    write(test, b"t-04\n\xff\n")
    assert error_of(project) == f"{test}:2: not UTF-8 text"


def test_read_split_directly(tmp_path):
    path = write(tmp_path / "s.txt", "# header\n b \n\na\n   # indented comment\n")
    assert read_split(path, {"a": {}, "b": {}}) == ["b", "a"]
    with pytest.raises(InputError, match=r"s\.txt:2: unknown task id 'b'"):
        read_split(path, {"a": {}})


@pytest.mark.parametrize(
    ("value", "refused"),
    [
        ("[" * 99 + "]" * 99, False),  # the innermost list 99 levels below the row
        ("[" * 100 + "]" * 100, True),  # 100 levels below it: more than MAX_DEPTH (the row itself is level 0)
        ('"' + "[{" * 300 + '"', False),  # brackets inside a string nest nothing
        ('["' + "[" * 200 + '", {"a": ["' + "{" * 200 + '"]}]', False),
    ],
)
def test_a_task_row_is_refused_exactly_when_it_nests_past_max_depth(tmp_path, value, refused):
    from hermit_tui.core.workspace.files import MAX_DEPTH
    from hermit_tui.core.workspace.tasks import read_tasks

    path = tmp_path / "tasks.jsonl"
    path.write_text('{"id": "a"}\n{"id": "d", "x": ' + value + "}\n")
    if refused:
        with pytest.raises(InputError, match=rf"tasks.jsonl:2: the task nests more than {MAX_DEPTH} levels deep"):
            read_tasks(path)
    else:
        assert list(read_tasks(path)) == ["a", "d"]
