"""In a real browser (headless Chromium, driven over the DevTools protocol, tests/browser.py): the HTML report
renders, reads right, sorts and pages, escapes hostile ids and fetches nothing; ``hermit-tui serve`` runs the
dashboard in the page.

Skipped only when no Chromium is installed (CI installs Debian's). Screenshots are kept under
``screenshots/browser/`` (not committed; ``screenshots/report-html.png`` is, made by
``python screenshots/make_report_screenshot.py``)."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from browser import Browser, find_chromium
from demo_copies import repair_worktree
from report_data import HOSTILE, synthetic_report
from waiting import wait_until

from hermit_tui.cli import main
from hermit_tui.core.report.html import to_html
from hermit_tui.core.run.runner import EvalRun
from hermit_tui.core.workspace.config import load_config

pytestmark = pytest.mark.skipif(find_chromium() is None, reason="chromium is not installed (apt-get install chromium)")
ARTEFACTS = Path(__file__).resolve().parent.parent / "screenshots" / "browser"

# Everything a page must not do: any element or attribute that runs or fetches something, read from the live DOM.
DOM_AUDIT = """(() => {
  const all = Array.from(document.querySelectorAll('*'));
  return {
    scripts: document.scripts.length,
    images: document.images.length,
    frames: document.querySelectorAll('iframe, object, embed, link, base').length,
    handlers: all.flatMap(e => Array.from(e.attributes).filter(a => a.name.startsWith('on')).map(a => a.name)),
    external: all.flatMap(e => ['src', 'href', 'action'].map(n => e.getAttribute(n)))
                 .filter(v => v !== null && !v.startsWith('#')),
  };
})()"""


@pytest.fixture(scope="module")
def browser():
    with Browser() as b:
        yield b


@pytest.fixture(scope="module")
def demo_report(demo_template, tmp_path_factory) -> tuple[Path, dict]:
    """The demo's HTML report (none, root and final evaluated) and its JSON twin, written by the CLI."""
    dest = tmp_path_factory.mktemp("browser") / "demo"
    shutil.copytree(demo_template, dest, symlinks=True)
    repair_worktree(demo_template, dest)
    EvalRun(load_config(dest / "run.yaml", ["agent.params.latency_scale=0"]), ["none", "root", "final"]).run_sync()
    html, js = dest / "report.html", dest / "report.json"
    assert main(["report", "--config", str(dest / "run.yaml"), "--format", "html", "--output", str(html)]) == 0
    assert main(["report", "--config", str(dest / "run.yaml"), "--format", "json", "--output", str(js)]) == 0
    return html, json.loads(js.read_text())


def assert_fetched_nothing(page, url: str) -> None:
    assert page.requests == [url]  # the document itself, nothing else
    assert page.proxied == []  # nothing reached the network through the page's proxy either
    assert [m for m in page.messages if m["level"] in ("error", "warning")] == []  # no CSP refusal, no JS error


def test_the_demo_report_in_chromium(browser, demo_report):
    path, data = demo_report
    url = path.as_uri()
    page = browser.page()
    page.set_view(1280, 900)
    page.navigate(url)
    text = page.evaluate("document.body.innerText")
    assert page.evaluate("document.title") == "Evaluation report: demo (teaching demonstration)"
    assert text.index(data["warnings"][0]) < text.index("Warnings") < text.index("Results on the test split")
    for sel in data["selectors"]:
        st = sel["stats"]
        assert f"{st['mean']:.4f}" in text and f"{st['ci_low']:.4f} to {st['ci_high']:.4f}" in text
    for pair in data["pairs"]:
        assert pair["verdict"] in text
    assert page.evaluate("document.querySelectorAll('svg.plot').length") == 1 + 3 + 3
    # the plots are drawn: the means plot's dots sit at the JSON's means on the axis
    dots = page.evaluate("Array.from(document.querySelectorAll('svg.means circle')).map(c => c.getBBox().x + 5)")
    left, right = 96, 400 - 20
    assert dots == pytest.approx([left + s["stats"]["mean"] * (right - left) for s in data["selectors"]], abs=0.1)
    # the script ran: the per-task table sorts (descending first) by final's mean, missing figures last
    assert page.evaluate("document.querySelector('#task-table .controls span').textContent") == "rows 1–16 of 16"
    page.evaluate("document.querySelectorAll('#task-table thead button')[3].click()")
    shown = page.evaluate(
        "Array.from(document.querySelectorAll('#task-table tbody tr'))"
        ".map(r => [r.cells[0].textContent, parseFloat(r.cells[3].dataset.v)])"
    )
    per = {s["label"]: s["stats"]["per_task"] for s in data["selectors"]}
    assert [v for _, v in shown] == sorted((per["final"][t]["mean"] for t in data["test_ids"]), reverse=True)
    assert {t for t, _ in shown} == set(data["test_ids"])
    audit = page.evaluate(DOM_AUDIT)
    assert audit == {"scripts": 1, "images": 0, "frames": 0, "handlers": [], "external": []}
    assert_fetched_nothing(page, url)
    page.evaluate("window.scrollTo(0, 0)")
    shot = page.screenshot(ARTEFACTS / "report-html.png", full_page=True)
    page.set_view(400, 900, dark=True)
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(17, 21, 24)"
    assert page.evaluate("document.documentElement.scrollWidth") <= 400  # nothing sticks out at 400 px
    page.screenshot(ARTEFACTS / "report-html-400-dark.png", full_page=True)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 50_000


def test_hostile_ids_and_pages_with_and_without_javascript(browser, tmp_path):
    report = synthetic_report(1_200)
    path = tmp_path / "hostile.html"
    path.write_text(to_html(report), encoding="utf-8")
    url = path.as_uri()
    page = browser.page()
    page.set_view(1280, 900)
    page.navigate(url)
    assert page.evaluate(DOM_AUDIT) == {"scripts": 1, "images": 0, "frames": 0, "handlers": [], "external": []}
    info = "document.querySelector('#task-table .controls span').textContent"
    assert page.evaluate(info) == "rows 1–100 of 1,200"
    assert page.evaluate("document.querySelectorAll('#task-table tbody tr').length") == 100
    page.evaluate("document.querySelectorAll('#task-table .controls button')[1].click()")  # Next
    assert page.evaluate(info) == "rows 101–200 of 1,200"
    ids = page.evaluate("Array.from(document.querySelectorAll('#task-table tbody th')).map(c => c.textContent)")
    assert ids == report.test_ids[100:200]
    # the filter finds a hostile id as the text it is
    page.evaluate(
        "(() => { const i = document.querySelector('#task-table input');"
        "i.value = 'onerror'; i.dispatchEvent(new Event('input')); })()"
    )
    assert page.evaluate("Array.from(document.querySelectorAll('#task-table tbody th')).map(c => c.textContent)") == [
        HOSTILE[1]
    ]
    assert_fetched_nothing(page, url)
    assert not [e for e in browser.events if e.get("method") == "Page.javascriptDialogOpening"]  # no alert() ran

    nojs = browser.page()
    nojs.call("Emulation.setScriptExecutionDisabled", {"value": True})
    nojs.set_view(1280, 900)
    nojs.navigate(url)
    assert nojs.evaluate("document.querySelectorAll('#task-table details').length") == 3
    assert nojs.evaluate("document.querySelectorAll('#task-table tbody tr').length") == 1_200
    assert nojs.evaluate("document.querySelector('#task-table .controls')") is None
    text = nojs.evaluate("document.body.innerText")
    assert "JavaScript is off: the table is shown in pages of 500 rows" in text and HOSTILE[0] in text
    assert_fetched_nothing(nojs, url)


def test_serve_runs_the_dashboard_in_the_page(browser, demo_config):
    from test_serve import free_port, processes_mentioning, serve, started_url, stop, wait_http

    pytest.importorskip("textual_serve", reason="the web extra is not installed (pip install -e '.[web]')")
    port = free_port()
    proc = serve(demo_config, port)
    try:
        url = started_url(proc)  # the page, with this start's token
        token = url.split("?token=", 1)[1]
        wait_http(url, proc)
        page = browser.page()
        page.set_view(1280, 800)
        page.navigate(url)
        assert page.evaluate("document.title") == "hermit-tui · demo"
        # The terminal draws on a WebGL canvas, so its text is not in the DOM: the page's own signal that the
        # dashboard's first screen arrived is the "-first-byte" class, and the bytes the websocket carried hold it.
        page.wait_until("document.body.classList.contains('-first-byte')", timeout=30)
        assert len(page.websockets) == 1 and page.websockets[0].startswith(f"ws://127.0.0.1:{port}/ws/{token}?width=")
        wait_until(
            lambda: b"Protocol (kept fixed" in page.websocket_bytes(), timeout=20, what="the setup screen's bytes"
        )
        received = page.websocket_bytes()
        assert b"hermit-tui" in received and b"teaching demonstration" in received
        assert b"Protocol (kept fixed" in received  # the setup screen's first panel
        assert all(r.startswith(f"http://127.0.0.1:{port}/") for r in page.requests)  # no third party
        assert page.proxied == []
        # the picture is an artefact for a reader, asserted nowhere; the WebGL canvas says nothing of when it painted
        # the bytes above, so the shot waits a moment for it
        time.sleep(0.5)
        page.screenshot(ARTEFACTS / "serve.png")
        sessions = processes_mentioning(f"hermit_tui --config {demo_config}")
        assert len(sessions) == 1  # one dashboard process for the one browser session
        page.call("Page.close")
    finally:
        code = stop(proc)
    assert code == 0
    wait_until(
        lambda: not processes_mentioning(f"hermit_tui --config {demo_config}"), timeout=10, what="the session to end"
    )
    assert processes_mentioning(f"hermit_tui --config {demo_config}") == []  # the session ended with the server


def test_a_page_of_another_origin_cannot_open_a_session_even_with_the_token(browser, demo_config, tmp_path):
    """What issue 29 found: any page the user visits could open the websocket and type into the dashboard. Here
    a page of another origin (a local file; its Origin is "null") knows even the token, and is still refused."""
    from test_serve import free_port, processes_mentioning, serve, started_url, stop, wait_http

    pytest.importorskip("textual_serve", reason="the web extra is not installed (pip install -e '.[web]')")
    port = free_port()
    proc = serve(demo_config, port)
    try:
        url = started_url(proc)
        token = url.split("?token=", 1)[1]
        wait_http(url, proc)
        evil = tmp_path / "evil.html"
        evil.write_text(
            "<!doctype html><title>evil</title><script>"
            f"const s = new WebSocket('ws://127.0.0.1:{port}/ws/{token}?width=80&height=24');"
            "s.onopen = () => { s.send(JSON.stringify(['stdin', 'l'])); document.title = 'opened'; };"
            "s.onerror = () => { document.title = 'refused'; };"
            "</script>"
        )
        page = browser.page()
        page.navigate(evil.as_uri())
        page.wait_until("document.title !== 'evil'", timeout=20)
        assert page.evaluate("document.title") == "refused"
        assert processes_mentioning(f"hermit_tui --config {demo_config}") == []  # no dashboard was started
    finally:
        code = stop(proc)
    assert code == 0
