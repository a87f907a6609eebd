"""Hostile text (issue 29): task ids and fields, outputs, errors, feedback and folder names holding terminal escape
sequences (OSC 52 clipboard writes, OSC 0 title sets, ``ESC[2J``, C1 controls, bidi overrides), Markdown and CSV
syntax. Two classes: what reaches a terminal (the bytes every command writes are checked for control characters),
and what goes into an HTML, Markdown or CSV file (read back by an independent parser). Each case runs under a time
limit with the workspace's file hashes compared before and after. The dashboard's part is tests/test_tmux_hostile.py.
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
import textwrap
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hostile_util import CLEAR, OSC0, OSC52, RLO, acted_on, snapshot, time_limit

LIMIT_S = 90
FOLDER = "ad" + OSC0 + "\n# Injected heading"  # a directory selector: a title set, a newline and a heading
LINKED = "lnk|x[click](https:evil.example)"  # a directory selector: a table column and a link
IDS = ["plain", "id" + OSC52, "t|x[l](https://evil.example) www.evil.example", "=1+1", "-2+3", "@cmd", "rlo" + RLO]
FIELD = "field" + OSC52 + CLEAR
OUTPUT = "out" + OSC52 + CLEAR + "\x9b2J" + RLO + "\r fake line"
FEEDBACK = "fb" + CLEAR + "\x9b0m [bold red]markup[/]"
ERROR = "boom " + OSC0


@pytest.fixture(autouse=True)
def limited():
    with time_limit(LIMIT_S * 3, "the case"):
        yield


def cli(ws: Path, *argv: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "hermit_tui", *argv],
        capture_output=True,
        cwd=ws,
        timeout=LIMIT_S,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> tuple[Path, bytes]:
    """A workspace whose every text is hostile, evaluated under none and two directory selectors; with the bytes
    ``eval`` wrote (its progress lines)."""
    ws = tmp_path_factory.mktemp("hostile-text")
    (ws / "tasks.jsonl").write_text(
        "".join(json.dumps({"id": i, "question": FIELD, "note" + CLEAR: 1}) + "\n" for i in IDS)
    )
    (ws / "test.txt").write_text("".join(i + "\n" for i in IDS))
    (ws / "train.txt").write_text("")
    (ws / "pipe.py").write_text(
        textwrap.dedent(
            f"""
            def run(task, adapter=None):
                if task["id"] == "plain":
                    raise ValueError({ERROR!r})
                print({OSC0!r})
                return {{"output": {OUTPUT!r}, "cost_usd": 0.01}}
            """
        )
    )
    (ws / "judge.py").write_text(f"def score(task, output):\n    return {{'score': 0.5, 'feedback': {FEEDBACK!r}}}\n")
    (ws / "run.yaml").write_text(
        "data: {tasks: tasks.jsonl, train: train.txt, test: test.txt}\n"
        "agent: {name: pipe.py:run, concurrency: 2}\njudge: {path: judge.py}\n"
        "trainer: {run_name: t, tree_dir: tree}\n"
    )
    for name in (FOLDER, LINKED):
        (ws / name).mkdir()
        (ws / name / "adapter.yaml").write_text("template: {id: x}\n")
    done = cli(ws, "eval", "--config", "run.yaml", "--adapter", "none", "--adapter", FOLDER, "--adapter", LINKED)
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")[-2000:]
    return ws, done.stdout + done.stderr


def checked(ws: Path, *argv: str, code: int | tuple[int, ...] = 0, env: dict | None = None) -> tuple[str, str]:
    """Run a command on the workspace: its exit code, no control character in what it wrote, no file changed."""
    before = snapshot(ws)
    done = cli(ws, *argv, env=env)
    assert done.returncode in ((code,) if isinstance(code, int) else code), done.stderr.decode("utf-8", "replace")[
        -2000:
    ]
    assert acted_on(done.stdout) == [] and acted_on(done.stderr) == [], argv
    assert b"Traceback" not in done.stderr
    assert snapshot(ws) == before
    return done.stdout.decode("utf-8"), done.stderr.decode("utf-8")


# -- class: terminal ---------------------------------------------------------------------------------------------------
def test_progress_lines_of_a_folder_named_with_an_osc_sequence_show_it(hostile):
    _, written = hostile
    assert acted_on(written) == []
    text = written.decode("utf-8")
    assert "ad\\x1b]0;PWNED\\x07\\n# Injected heading" in text  # shown, on the line it belongs to
    assert not any(line.startswith("# Injected") for line in text.splitlines())


@pytest.mark.parametrize("task", IDS[:3], ids=["error", "osc52-id", "markdown-id"])
def test_show_prints_every_field_output_error_and_feedback_visibly(hostile, task):
    ws, _ = hostile
    out, _ = checked(ws, "show", "--config", "run.yaml", "--adapter", "none", "--task", task)
    assert "\\x1b]52;c;ZXZpbA==\\x07\\x1b[2J" in out  # the task field, shown
    if task == "plain":
        assert "boom \\x1b]0;PWNED\\x07" in out  # the error, and the traceback below it
    else:
        assert "out\\x1b]52;c;ZXZpbA==\\x07\\x1b[2J\\x9b2J\\u202e" in out  # the lone CR: a line break, not a return
        assert "fb\\x1b[2J\\x9b0m [bold red]markup[/]" in out


def test_show_json_is_the_same_data_with_nothing_a_terminal_acts_on(hostile):
    ws, _ = hostile
    out, _ = checked(ws, "show", "--config", "run.yaml", "--adapter", FOLDER, "--task", IDS[1], "--format", "json")
    shown = json.loads(out)
    assert shown["attempts"][0]["output"] == OUTPUT and shown["attempts"][0]["feedback"] == FEEDBACK
    assert shown["task"]["id"] == IDS[1] and shown["label"].endswith("# Injected heading")


@pytest.mark.parametrize(
    "argv",
    [
        ["show", "--config", "run.yaml", "--adapter", "none", "--task", "nope" + OSC52],
        ["show", "--config", "run.yaml", "--adapter", "nope" + OSC0, "--task", "plain"],
        ["report", "--config", "run.yaml", "--adapter", "nope" + CLEAR],
        ["report", "--config", "run" + OSC0 + ".yaml"],
        ["gate", "--config", "run.yaml", "--candidate", "x" + OSC52 + "\ny"],
    ],
    ids=["task", "selector", "report-selector", "config-path", "gate-candidate"],
)
def test_an_error_line_echoing_a_hostile_argument_shows_it(hostile, argv):
    ws, _ = hostile
    _, err = checked(ws, *argv, code=2)
    assert err.count("\n") == 1 and err.startswith("hermit-tui: error: ")
    assert "\\x1b" in err or "\\x07" in err


@pytest.mark.parametrize(
    "fmt",
    [["md"], ["json"], ["csv"], ["csv", "--per", "attempt"], ["html"], ["junit"]],
    ids=["md", "json", "csv", "csv-attempt", "html", "junit"],
)
def test_every_report_format_on_stdout_carries_no_control_character(hostile, fmt):
    ws, _ = hostile
    argv = ["report", "--config", "run.yaml", "--format", fmt[0], *fmt[1:]]
    out, _ = checked(ws, *argv)
    if fmt == ["json"]:
        data = json.loads(out)
        assert any(s["label"].endswith("# Injected heading") and OSC0 in s["label"] for s in data["selectors"])
        assert set(IDS) == set(data["test_ids"])  # the same data: only its writing changed
    elif fmt == ["md"]:
        assert "ad\\x1b]0;PWNED\\x07\\n# Injected heading" in "".join(elements(markdown_html(out)).text)
    else:
        assert "\\x1b]0;PWNED\\x07" in out  # the label, shown


def test_gate_text_json_and_step_summary_carry_no_control_character(hostile, tmp_path):
    ws, _ = hostile
    summary = tmp_path / "summary.md"
    for fmt in ("text", "json"):
        args = ["gate", "--config", "run.yaml", "--candidate", FOLDER, "--baseline", "none", "--format", fmt]
        out, _ = checked(ws, *args, code=(0, 3), env={"GITHUB_STEP_SUMMARY": str(summary)})
        assert ("\\x1b]0;PWNED" in out) if fmt == "text" else (json.loads(out)["candidate"] == FOLDER)
    assert acted_on(summary.read_bytes()) == []


# -- class: html, markdown, csv ----------------------------------------------------------------------------------------
def markdown_html(text: str) -> str:
    """Markdown rendered as GitHub would (tables, linkify) by markdown-it-py, independent of hermit-tui."""
    from markdown_it import MarkdownIt

    return MarkdownIt("gfm-like", {"linkify": False}).enable("table").render(text)


class Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def elements(html: str) -> Elements:
    parser = Elements()
    parser.feed(html)
    return parser


def assert_inert_markdown(text: str) -> None:
    """No heading, link, image or raw HTML from the data; every table row has its header's number of cells."""
    import re

    assert not re.search(r"^(#+ )?# Injected", text, re.MULTILINE)  # the folder name's heading did not start a line
    page = elements(markdown_html(text))
    assert [t for t, _ in page.tags if t in ("a", "img", "script", "iframe")] == []
    assert not any("Injected" in t for t, _ in page.tags)
    headings = [t for t, _ in page.tags if t in ("h1", "h2", "h3", "h4", "h5", "h6")]
    assert len(headings) == text.count("\n#") + text.startswith("#")  # only the report's own headings
    for block in re.findall(r"(?:^\|.*\|$\n?)+", text, re.MULTILINE):
        rows = [re.split(r"(?<!\\)\|", row)[1:-1] for row in block.strip().splitlines()]
        assert len({len(r) for r in rows}) == 1, block


def test_the_markdown_report_gets_no_heading_column_or_link_from_a_folder_name(hostile):
    ws, _ = hostile
    out, _ = checked(ws, "report", "--config", "run.yaml", "--format", "md")
    assert_inert_markdown(out)
    rendered = "".join(elements(markdown_html(out)).text)
    assert "# Injected heading" in rendered and LINKED in rendered  # shown as the text it is


def test_the_step_summary_gets_no_column_or_live_link_from_a_label(hostile, tmp_path):
    ws, _ = hostile
    summary = tmp_path / "summary.md"
    args = ["gate", "--config", "run.yaml", "--candidate", LINKED, "--baseline", FOLDER]
    checked(ws, *args, code=(0, 3), env={"GITHUB_STEP_SUMMARY": str(summary)})
    text = summary.read_text()
    assert_inert_markdown(text)
    assert "evil.example" not in "".join(a.get("href", "") for _, a in elements(markdown_html(text)).tags)
    assert LINKED in "".join(elements(markdown_html(text)).text)


@pytest.mark.parametrize("per", ["task", "attempt"])
def test_csv_cells_are_neither_formulas_nor_control_characters(hostile, per):
    ws, _ = hostile
    out, _ = checked(ws, "report", "--config", "run.yaml", "--format", "csv", "--per", per)
    cells = [c for row in csv.reader(io.StringIO(out)) for c in row]
    for cell in cells:
        try:
            float(cell)
            continue
        except ValueError:
            pass
        assert cell[:1] not in ("=", "+", "-", "@", "\t", "\r"), cell
    assert "'=1+1" in cells and "'-2+3" in cells and "'@cmd" in cells
    assert "id\\x1b]52;c;ZXZpbA==\\x07" in cells


def test_the_html_report_escapes_and_shows_control_characters(hostile, tmp_path):
    ws, _ = hostile
    page = tmp_path / "r.html"
    checked(ws, "report", "--config", "run.yaml", "--format", "html", "--output", str(page))
    html = page.read_text()
    assert acted_on(html) == []
    parsed = elements(html)
    assert not any("evil.example" in (a.get("href") or "") + (a.get("src") or "") for _, a in parsed.tags)
    text = "".join(parsed.text)
    assert "id\\x1b]52;c;ZXZpbA==\\x07" in text and LINKED in text


def test_the_junit_report_is_xml_with_the_characters_shown(hostile):
    import xml.etree.ElementTree as ET

    ws, _ = hostile
    out, _ = checked(ws, "report", "--config", "run.yaml", "--format", "junit")
    root = ET.fromstring(out)
    names = [case.get("name") for case in root.iter("testcase")]
    assert "id\\x1b]52;c;ZXZpbA==\\x07" in names
    assert any("boom \\x1b]0;PWNED\\x07" in (f.text or "") + (f.get("message") or "") for f in root.iter("error"))
