"""``core.safe``: one function per destination, each checked against what its destination's own reader makes of it
(a terminal's view of control characters, Rich's markup parser, markdown-it, Python's HTML and XML parsers, the csv
module, json)."""

from __future__ import annotations

import csv
import io
import json
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import pytest
from hostile_util import HOSTILE_TEXTS, acted_on

from hermit_tui.core import safe

NASTY = ["".join(HOSTILE_TEXTS), "a\x00b\x7fc\u2066d\u2028e\ud800f", "tab\there\r\nnext\rover", "\x1b\\ end"]


@pytest.mark.parametrize("text", NASTY)
def test_terminal_and_line_show_every_control_character(text):
    shown = safe.terminal(text)
    assert acted_on(shown) == [] and "\x1b" not in shown and "\\x1b" in shown or "\x1b" not in text
    assert "\n" not in safe.line(text) and "\t" not in safe.line(text) and acted_on(safe.line(text)) == []
    assert shown.encode("utf-8")  # a lone surrogate is shown, so the text can be written


def test_the_escapes_read_back_as_the_characters():
    text = "a\x1b]0;t\x07b\x9bc\u202ed\ud800"
    shown = safe.line(text)
    assert shown == "a\\x1b]0;t\\x07b\\x9bc\\u202ed\\ud800"
    assert shown.encode("ascii").decode("unicode_escape") == text
    assert safe.terminal("one\r\ntwo\rthree\tfour") == "one\ntwo\\rthree\tfour"  # CRLF is a newline, lone CR shown
    assert safe.line("one\ntwo\tthree") == "one\\ntwo\\tthree"


@pytest.mark.parametrize("text", ["[bold red]x[/]", "[link=https://e]y[/link]", "\\[b]z", "end\\", "[$accent]v", "[1]"])
def test_markup_is_shown_literally_by_rich(text):
    from rich.text import Text

    assert Text.from_markup(f"[b]{safe.markup(text)}[/b]").plain == text  # inside markup of our own


def test_markdown_text_renders_as_the_text_it_is():
    from markdown_it import MarkdownIt

    text = "a\n# H | [x](https:e) ![i](j) <img src=x> `c` www.e.org \\[y]"
    cell = safe.markdown(text)
    html = MarkdownIt("gfm-like", {"linkify": False}).enable("table").render(f"| h |\n|---|\n| {cell} |\n")
    for tag in ("<a", "<img", "<h1", "<code"):
        assert tag not in html
    assert html.count("<td>") == 1

    class Texts(HTMLParser):
        parts: list[str] = []

        def handle_data(self, data):
            self.parts.append(data)

    parser = Texts()
    parser.feed(html)
    assert "".join(parser.parts).strip().endswith(safe.line(text).split("\\n", 1)[1])


def test_html_escapes_and_shows():
    class Texts(HTMLParser):
        parts: list[str] = []

        def handle_data(self, data):
            self.parts.append(data)

        def handle_starttag(self, tag, attrs):
            raise AssertionError(tag)

    text = '<script>alert("x")</script> & \x1b[2J'
    parser = Texts()
    parser.feed(safe.html(text))
    assert "".join(parser.parts) == '<script>alert("x")</script> & \\x1b[2J'


@pytest.mark.parametrize(
    "value, cell",
    [
        ("=1+1", "'=1+1"),
        ("+A1", "'+A1"),
        ("-2+3", "'-2+3"),
        ("@cmd", "'@cmd"),
        ("\t=x", "'\t=x"),
        ("-0.5", "-0.5"),
        ("1e3", "1e3"),
        ("plain", "plain"),
        ("a\x1bb", "a\\x1bb"),
        (0.25, 0.25),
        (None, None),
    ],
)
def test_csv_cells(value, cell):
    assert safe.csv_cell(value) == cell
    buf = io.StringIO()
    csv.writer(buf).writerow([safe.csv_cell(value)])
    assert acted_on(buf.getvalue().rstrip("\r\n")) == []


def test_xml_text_is_always_parseable():
    text = "".join(chr(c) for c in range(0, 0x100)) + "\ufffe\uffff\ud800"
    root = ET.fromstring(f"<a>{safe.xml(text).replace('&', '&amp;').replace('<', '&lt;')}</a>")
    assert acted_on(root.text or "") == []


def test_json_text_is_the_same_json():
    data = {"k\x9b": "v\x1b\x9b\u202e\u2028\x7f"}
    document = json.dumps(data, ensure_ascii=False)
    shown = safe.json_text(document)
    assert json.loads(shown) == data and acted_on(shown) == []
