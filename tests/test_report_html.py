"""The HTML report (no browser here; tests/test_browser.py opens it in Chromium): its figures are the JSON report's,
every string from the data is escaped, nothing can be fetched, and it stays usable at 10,000 tasks.

The page is read back with the standard library's HTML parser, independently of the code that wrote it."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest
from demo_copies import repair_worktree
from report_data import HOSTILE, synthetic_report

from hermit_tui.cli import main
from hermit_tui.core.report.build import Report
from hermit_tui.core.report.html import to_html
from hermit_tui.core.report.html_figures import PAGE_ROWS
from hermit_tui.core.run.runner import EvalRun
from hermit_tui.core.workspace.config import load_config

ALLOWED_TAGS = {
    "html",
    "head",
    "meta",
    "title",
    "style",
    "body",
    "main",
    "header",
    "nav",
    "section",
    "article",
    "footer",
    "h1",
    "h2",
    "h3",
    "h4",
    "p",
    "ul",
    "li",
    "a",
    "code",
    "pre",
    "strong",
    "span",
    "div",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "details",
    "summary",
    "noscript",
    "figure",
    "figcaption",
    "script",
    "svg",
    "g",
    "line",
    "rect",
    "circle",
    "text",
    "desc",
}


class Page(HTMLParser):
    """Every element with its attributes, its text (its descendants' included) and its parent, as the standard
    library's parser reads the page."""

    VOID = {"meta", "br", "input", "img", "link"}

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[dict] = []
        self.stack: list[dict] = []
        self.scripts: list[str] = []
        self.feed(text)
        self.close()
        for el in reversed(self.elements):  # children before their parents
            el["text"] = "".join(c if isinstance(c, str) else c["text"] for c in el["content"])

    def handle_starttag(self, tag, attrs):
        el = {
            "tag": tag,
            "attrs": dict(attrs),
            "text": "",
            "parent": self.stack[-1] if self.stack else None,
            "parents": [e["tag"] for e in self.stack],
            "classes": [e["attrs"].get("class") or "" for e in self.stack],
            "children": [],
            "content": [],
        }
        if self.stack:
            self.stack[-1]["children"].append(el)
            self.stack[-1]["content"].append(el)
        self.elements.append(el)
        if tag not in self.VOID:
            self.stack.append(el)

    def handle_endtag(self, tag):
        if any(e["tag"] == tag for e in self.stack):
            while self.stack.pop()["tag"] != tag:
                pass

    def handle_data(self, data):
        if self.stack:
            self.stack[-1]["content"].append(data)
        if self.stack and self.stack[-1]["tag"] == "script":
            self.scripts.append(data)

    def find(self, tag: str, **attrs) -> list[dict]:
        return [
            e
            for e in self.elements
            if e["tag"] == tag and all(e["attrs"].get(k.replace("_", "-")) == v for k, v in attrs.items())
        ]

    def children(self, el: dict, *tags: str) -> list[dict]:
        return [e for e in el["children"] if not tags or e["tag"] in tags]

    def task_rows(self) -> list[dict]:
        """The rows of the per-task table(s), in order."""
        return [
            e
            for e in self.elements
            if e["tag"] == "tr" and e["parents"][-1:] == ["tbody"] and any("tasks" in c.split() for c in e["classes"])
        ]


@pytest.fixture(scope="module")
def evaluated(demo_template, tmp_path_factory) -> Path:
    """A demo workspace where none, root and final were evaluated."""
    dest = tmp_path_factory.mktemp("html") / "demo"
    shutil.copytree(demo_template, dest, symlinks=True)
    repair_worktree(demo_template, dest)
    EvalRun(load_config(dest / "run.yaml", ["agent.params.latency_scale=0"]), ["none", "root", "final"]).run_sync()
    return dest / "run.yaml"


@pytest.fixture(scope="module")
def both(evaluated, tmp_path_factory) -> tuple[dict, str]:
    """The JSON and the HTML report of the same evaluations, both written by the CLI."""
    out = tmp_path_factory.mktemp("out")
    for fmt in ("json", "html"):
        assert main(["report", "--config", str(evaluated), "--format", fmt, "--output", str(out / f"r.{fmt}")]) == 0
    return json.loads((out / "r.json").read_text()), (out / "r.html").read_text(encoding="utf-8")


def _float(text: str | None) -> float | None:
    return None if text in (None, "") else float(text)


def test_the_figures_are_the_json_reports(both):
    data, text = both
    page = Page(text)
    rows = {r["attrs"]["data-label"]: r for r in page.find("tr") if "data-label" in r["attrs"]}
    assert list(rows) == [s["label"] for s in data["selectors"]] == ["none", "root", "final"]
    for sel in data["selectors"]:
        st, row = sel["stats"], rows[sel["label"]]
        attrs = row["attrs"]
        for key, attr in (
            ("mean", "data-mean"),
            ("ci_low", "data-ci-low"),
            ("ci_high", "data-ci-high"),
            ("attempt_mean", "data-attempt-mean"),
            ("solved_once", "data-solved-once"),
            ("pass_k", "data-pass-k"),
        ):
            assert _float(attrs.get(attr)) == st[key], (sel["label"], key)  # exactly the same float
        assert attrs["data-ci-method"] == st["ci_method"]
        assert int(attrs["data-errors"]) == sel["errors"] and int(attrs["data-n-tasks"]) == st["n_tasks"]
        cells = [c["text"] for c in page.children(row, "td")]
        # the shown figures are the JSON's, rounded as the Markdown report rounds them
        assert cells[:3] == [f"{st['mean']:.4f}", f"{st['ci_low']:.4f} to {st['ci_high']:.4f}", st["ci_method"]]
        assert f"{st['solved_once']:.3f}" in cells and str(sel["errors"]) in cells

    pairs = [a["attrs"] for a in page.find("article")]
    assert [(p["data-a"], p["data-b"]) for p in pairs] == [(p["a"], p["b"]) for p in data["pairs"]]
    for article, pair in zip(page.find("article"), data["pairs"]):
        attrs = article["attrs"]
        for key in ("mean_diff", "ci_low", "ci_high", "p_value"):
            assert _float(attrs[f"data-{key.replace('_', '-')}"]) == pair[key]
        assert attrs["data-decision"] == pair["decision"]
        assert [int(attrs[k]) for k in ("data-wins", "data-losses", "data-ties")] == [
            pair["wins"],
            pair["losses"],
            pair["ties"],
        ]
        assert pair["verdict"] in article["text"]
        assert f"{pair['ci_low']:.4f} to {pair['ci_high']:.4f}" in article["text"]

    task_rows = page.task_rows()
    assert len(task_rows) == len(data["test_ids"]) == 16
    labels = [s["label"] for s in data["selectors"]]
    per = {s["label"]: s["stats"]["per_task"] for s in data["selectors"]}
    for tid, row in zip(data["test_ids"], task_rows):
        cells = page.children(row, "th", "td")
        assert cells[0]["text"] == tid
        expected = [per[label][tid]["mean"] for label in labels]
        expected += [per[p["b"]][tid]["mean"] - per[p["a"]][tid]["mean"] for p in data["pairs"]]
        assert [_float(c["attrs"].get("data-v")) for c in cells[1:]] == expected, tid
        # the mean, then a mark when some of its attempts ended in an error (test_errors_are_marked_... checks it)
        # (✗ instead of the mean when every attempt ended in an error: test_errors_are_marked_... checks which)
        assert [c["text"].split(" ⚠")[0] for c in cells[1:4]] == [
            "✗" if c["text"].startswith("✗ ⚠") else f"{v:.3f}" for c, v in zip(cells[1:4], expected[:3])
        ]
        assert [("s" if per[label][tid]["solved"] else "u") for label in labels] == [
            c["attrs"]["class"] for c in cells[1:4]
        ]


def test_warnings_come_first_and_the_demo_has_its_banner(both):
    data, text = both
    page = Page(text)
    assert data["demo"] is True
    banner = page.find("p", id="demo-banner")
    assert len(banner) == 1 and banner[0]["text"] == data["warnings"][0]
    assert data["warnings"][0].startswith("Teaching demonstration")
    sections = [e["attrs"]["id"] for e in page.find("section")]
    assert sections[:4] == ["warnings", "protocol", "results", "pairs"]
    assert text.index('id="demo-banner"') < text.index('id="warnings"') < text.index('id="results"')
    shown = [e["text"] for e in page.elements if e["tag"] == "li" and e["parent"]["attrs"].get("class") == "warnings"]
    assert shown[: len(data["warnings"]) - 1] == data["warnings"][1:]
    # the protocol's checks and the interval method of each selector are on the page
    assert all(c["message"] in page.find("section", id="protocol")[0]["text"] for c in data["checks"])
    results = page.find("section", id="results")[0]["text"]
    assert "95% CI (none, root, final: score)" in results and "score interval with an effective sample size" in results
    assert "TRAINING" in page.find("section", id="training")[0]["text"]
    synthetic = Page(to_html(synthetic_report(20, demo=False)))
    assert synthetic.find("p", id="demo-banner") == []


def test_the_page_is_self_contained(both):
    _, text = both
    page = Page(text)
    assert {e["tag"] for e in page.elements} <= ALLOWED_TAGS
    assert len(page.find("script")) == 1 and "src" not in page.find("script")[0]["attrs"]
    for e in page.elements:  # nothing refers outside the page
        for name, value in e["attrs"].items():
            if name in ("src", "href", "action", "data", "poster", "srcset") or name.startswith("xlink"):
                assert (value or "").startswith("#"), (e["tag"], name, value)
    assert "@import" not in text and "url(" not in text
    csp = page.find("meta", http_equiv="Content-Security-Policy")[0]["attrs"]["content"]
    assert "default-src 'none'" in csp
    digest = base64.b64encode(hashlib.sha256(page.scripts[0].encode("utf-8")).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in csp  # the one script is allowed by its hash, and nothing else
    assert "prefers-color-scheme:dark" in text.replace(" ", "")
    start = text.index('<section id="attempts">')
    end = text.index("</section>", start)
    rest = text[:start] + text[end:]
    assert len(rest.encode("utf-8")) < 200_000  # the demo's figures: a few tens of KB, far under a few hundred
    assert len(text[start:end].encode("utf-8")) < 1_000_000  # its 144 attempts, well within the default 5 MB


def test_every_string_from_the_data_is_escaped():
    report = synthetic_report(60)
    text = to_html(report)
    page = Page(text)
    assert {e["tag"] for e in page.elements} <= ALLOWED_TAGS
    assert len(page.find("script")) == 1
    assert not [(e["tag"], a) for e in page.elements for a in e["attrs"] if a.startswith("on")]
    assert not page.find("img") and not page.find("style")[1:]
    ids = [page.children(row, "th")[0]["text"] for row in page.task_rows()]
    assert ids == report.test_ids  # the hostile ids are text, exactly as written
    assert all(h in ids for h in HOSTILE)
    warnings = [
        e["text"] for e in page.elements if e["tag"] == "li" and e["parent"]["attrs"].get("class") == "warnings"
    ]
    assert "A warning with <b>markup</b> & an id: <script>alert(1)</script>" in warnings
    titles = [e["text"] for e in page.elements if e["tag"] == "title" and "svg" in e["parents"]]
    assert any(t.startswith(HOSTILE[1] + ":") for t in titles)  # the per-task bars' tooltips too
    for raw in HOSTILE:
        if "<" in raw:
            assert raw not in text


def test_ten_thousand_tasks_are_paged_and_all_there():
    report = synthetic_report(10_000, hostile=False)
    text = to_html(report)
    page = Page(text)
    pages = page.find("details")
    assert len(pages) == 10_000 // PAGE_ROWS and "open" in pages[0]["attrs"]
    assert all("open" not in p["attrs"] for p in pages[1:])
    rows = page.task_rows()
    assert [page.children(row, "th")[0]["text"] for row in rows] == report.test_ids
    assert all("details" in row["parents"] for row in rows)
    assert page.find("noscript")
    # the per-pair plots become histograms (one bar per task would be 10,000 bars)
    assert text.count("<rect") < 200
    assert len(text.encode("utf-8")) < 5_000_000


def test_fields_added_to_the_model_later_are_rendered():
    """Another issue adds e.g. a failure taxonomy to the Report: the page shows it without being changed."""

    class Later(Report):
        failure_taxonomy: list[dict] = []

    base = synthetic_report(12)
    later = Later(
        **base.model_dump(),
        failure_taxonomy=[
            {"label": "wrong format", "count": 3, "tasks": ["t1", "<i>t2</i>"]},
            {"label": "<script>x()</script>", "count": 1, "tasks": []},
        ],
    )
    page = Page(to_html(later))
    section = page.find("section", id="extra-failure_taxonomy") or page.find("section", id="extra-failure-taxonomy")
    assert section and "Failure taxonomy" in section[0]["text"]
    assert "wrong format" in section[0]["text"] and "<script>x()</script>" in section[0]["text"]
    assert len(page.find("script")) == 1 and not page.find("i")
    assert any(a["attrs"].get("href") == f"#{section[0]['attrs']['id']}" for a in page.find("a"))


def test_the_cli_writes_html_and_keeps_an_existing_file(evaluated, tmp_path, capsys):
    out = tmp_path / "report.html"
    out.write_text("keep me")
    assert main(["report", "--config", str(evaluated), "--format", "html", "--output", str(out)]) == 2
    assert "already exists; pass --force" in capsys.readouterr().err and out.read_text() == "keep me"
    assert (
        main(["report", "--config", str(evaluated), "--format", "html", "--adapter", "root", "--adapter", "final"]) == 0
    )
    text = capsys.readouterr().out
    assert text.startswith("<!DOCTYPE html>") and re.search(r'data-label="final"', text)
    assert 'data-label="none"' not in text


# ---------------------------------------------------------------------------------------------------- the attempts


def _results(evaluated: Path, label: str) -> list[dict]:
    path = evaluated.parent / "runs/demo/eval" / label / "results.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line]


def test_the_page_carries_every_attempt_folded_with_its_output_and_transcript(evaluated, both):
    _, html = both
    page = Page(html)
    section = page.find("section", id="attempts")
    assert len(section) == 1 and any(a["attrs"].get("href") == "#attempts" for a in page.find("a"))
    test_ids = (evaluated.parent / "test.txt").read_text().split()
    tasks = [e for e in page.find("details") if e["attrs"].get("class") == "task"]
    assert [t["attrs"]["data-task"] for t in tasks] == test_ids  # every test task, in test order
    assert all("open" not in t["attrs"] for t in tasks)  # folded
    for label in ("none", "root", "final"):
        rows = _results(evaluated, label)
        shown = [
            e
            for e in page.find("details")
            if e["attrs"].get("class") == "attempt" and e["attrs"].get("data-selector") == label
        ]
        assert len(shown) == len(rows) == 48
        for row in rows[:6]:
            el = next(e for e in shown if e["parent"]["attrs"]["data-task"] == row["id"]
                      and e["attrs"]["data-repeat"] == str(row["repeat"]))  # fmt: skip
            assert el["attrs"]["data-status"] == row["status"]
            assert f"score {row['judge']['score']:.3f}" in el["text"]
            if isinstance(row["output"], str) and row["output"]:
                assert row["output"] in el["text"]
            if row.get("error"):
                assert row["error"] in el["text"]
    # the transcripts hermit-tui kept beside the results: a tool call of the demo's agent is in the page
    line = json.loads((evaluated.parent / "runs/demo/eval/final/transcripts.jsonl").read_text().splitlines()[0])
    texts = [m.get("content") for m in line["messages"] if isinstance(m.get("content"), str) and m.get("content")]
    assert texts and all(t.splitlines()[0] in section[0]["text"] for t in texts[:3])


def test_errors_are_marked_in_the_per_task_table(evaluated, both):
    _, html = both
    page = Page(html)
    for label in ("none", "final"):
        errors: dict[str, int] = {}
        attempts: dict[str, int] = {}
        for row in _results(evaluated, label):
            attempts[row["id"]] = attempts.get(row["id"], 0) + 1
            if row["status"] != "ok":
                errors[row["id"]] = errors.get(row["id"], 0) + 1
        assert errors  # the demo has a pipeline error and a judge error on every repeat
        rows = {r["children"][0]["text"]: r for r in page.task_rows()}
        col = 1 + ["none", "root", "final"].index(label)
        for tid, row in rows.items():
            cell = row["children"][col]["text"]
            assert cell.endswith(f"⚠{errors[tid]}") if tid in errors else "⚠" not in cell, (tid, cell)
            # every attempt an error: ✗, no 0.000 that reads as a measured score (issue 27, finding 12)
            assert cell.startswith("✗") == (errors.get(tid) == attempts[tid]), (tid, cell)
        assert any(errors.get(t) == attempts[t] for t in attempts)  # the demo has such a task


def test_beyond_the_size_the_attempts_are_left_out_and_the_page_says_how_to_get_them(evaluated, capsys):
    def page(*args: str) -> Page:
        assert main(["report", "--config", str(evaluated), "--format", "html", *args]) == 0
        return Page(capsys.readouterr().out)

    small = page("--details-max-mb", "0.001")  # 1,000 bytes: less than the demo's attempts
    (section,) = small.find("section", id="attempts")
    assert "come to more than 0.001 MB: they are not carried" in section["text"]
    assert not [e for e in small.find("details") if e["attrs"].get("class") == "attempt"]
    never = page("--details-max-mb", "0")
    assert "not carried (--details-max-mb 0)" in never.find("section", id="attempts")[0]["text"]
    for bad, needle in (("-1", "0 or more"), ("nan", "0 or more")):
        assert main(["report", "--config", str(evaluated), "--format", "html", "--details-max-mb", bad]) == 2
        assert needle in capsys.readouterr().err
    assert main(["report", "--config", str(evaluated), "--details-max-mb", "3"]) == 2
    assert "--details-max-mb goes with --format html" in capsys.readouterr().err


def test_hostile_text_in_an_attempt_is_escaped(evaluated, tmp_path):
    from hermit_tui.core.report.build import build_report
    from hermit_tui.core.report.html_attempts import report_html
    from hermit_tui.core.workspace.tasks import load_tasks

    dest = tmp_path / "demo"
    shutil.copytree(evaluated.parent, dest, symlinks=True)
    repair_worktree(evaluated.parent, dest)
    path = dest / "runs/demo/eval/root/results.jsonl"
    lines = path.read_text().splitlines()
    first = json.loads(lines[0])
    first["output"] = first["judge"]["feedback"] = "\n".join(HOSTILE)
    path.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    config = load_config(dest / "run.yaml")
    text = report_html(build_report(config, load_tasks(config), None))
    page = Page(text)
    assert {e["tag"] for e in page.elements} <= ALLOWED_TAGS
    (section,) = page.find("section", id="attempts")
    assert all(h in section["text"] for h in HOSTILE)  # shown as text, never as markup


def test_where_it_helps_and_hurts_has_sections_of_its_own_with_the_json_reports_figures(evaluated, tmp_path):
    """report --slice-by --harmed --error-bounds --pass-k: the page's Slices, Harmed tasks, Bounds and pass@k
    sections carry the JSON report's figures (not the generic dump of the model)."""
    flags = ["--slice-by", "category", "--harmed", "--error-bounds", "--pass-k"]
    for fmt in ("json", "html"):
        args = ["report", "--config", str(evaluated), "--format", fmt, *flags, "--output", str(tmp_path / f"w.{fmt}")]
        assert main(args) == 0
    report = json.loads((tmp_path / "w.json").read_text())
    page = Page((tmp_path / "w.html").read_text(encoding="utf-8"))
    nav = [a["attrs"]["href"] for a in page.elements if a["tag"] == "a" and "nav" in a["parents"]]
    assert {"#slices", "#harmed", "#bounds", "#pass-k"} <= set(nav)
    extras = {s["attrs"].get("id") for s in page.find("section") if s["attrs"].get("id", "").startswith("extra-")}
    assert extras <= {"extra-taxonomy"}  # the failure taxonomy is still drawn generically; these four are not
    slices = page.find("section", id="slices")[0]
    marks = [e for e in page.elements if e["tag"] == "span" and "data-slice" in e["attrs"] and slices in _up(e)]
    pairs = len(report["slices"]["slices"][0]["pairs"])
    names = [s["name"] for s in report["slices"]["slices"]]
    assert [m["attrs"]["data-slice"] for m in marks] == names * pairs
    for m, (sl, k) in zip(marks, [(s, k) for k in range(pairs) for s in report["slices"]["slices"]]):
        assert m["attrs"]["data-hurt"] == str(sl["pairs"][k]["hurt"]).lower()
        row = m["parent"]["parent"]  # span -> td -> tr
        cells = [c["text"] for c in page.children(row, "td")]
        expected = sl["pairs"][k]["mean_diff"]
        assert cells[4] == ("—" if expected is None else f"{expected:+.3f}")
    harm = page.find("article", **{"class": "harm"})
    assert [
        (a["attrs"]["data-baseline"], a["attrs"]["data-candidate"], int(a["attrs"]["data-harmed"])) for a in harm
    ] == [(h["baseline"], h["candidate"], len(h["harmed"])) for h in report["harm"]]
    bounds = page.find("article", **{"class": "bounds"})
    assert [b["attrs"]["data-holds"] for b in bounds] == [str(b["holds"]).lower() for b in report["error_bounds"]]
    passk = page.find("section", id="pass-k")[0]["text"]
    first = report["pass_k"]["selectors"][0]
    assert f"{first['label']} pass@1" in passk


def _up(el: dict) -> list[dict]:
    out = []
    while el["parent"] is not None:
        el = el["parent"]
        out.append(el)
    return out
