"""Text from the data made safe for where it goes: one function per destination.

Every text hermit-tui did not write itself (a task id or field, a pipeline's output, a judge's feedback, an error, a
traceback, a transcript, a file or folder name, an argument) passes through one of these before it is printed:

- :func:`terminal` / :func:`line`: a terminal. Control characters (C0 but tab and newline, ESC among them; DEL; C1;
  a lone carriage return), bidirectional overrides and isolates, line and paragraph separators and lone surrogates
  are shown as their escape (``\\x1b``, ``\\x9b``, ``\\u202e``, ``\\udc80``), never sent as themselves: an OSC 52
  clipboard write, a title set or ``ESC[2J`` in the data arrives as the visible text ``\\x1b]52;…``. :func:`line`
  shows newlines and tabs as ``\\n`` and ``\\t`` too, for one-line places (an error line, a progress line, a cell).
- :func:`markup`: Rich/Textual console markup: the text shown literally (its ``[tags]`` escaped), as one line.
- :func:`markdown`: a Markdown table cell or inline text (reports, GitHub step summaries): one line, and every
  character that could make a heading, a table column, a link, an image, code or HTML escaped (``\\``, ``#``, ``|``,
  ``[``, ``]``, `` ` ``, a ``<`` opening a tag, the ``:`` of ``://`` and the ``.`` of ``www.``, which GitHub would
  turn into a link), so a folder name holding a newline and ``# Heading``, ``[x](https://…)`` or a bare address stays
  text. Emphasis characters (``*``, ``_``) are left: they can only restyle the text, and escaping them would clutter
  every file name.
- :func:`html`: HTML text and attribute values.
- :func:`csv_cell`: a CSV cell: a text starting with ``=``, ``+``, ``-``, ``@`` (or a tab or carriage return) gets a
  leading ``'`` so a spreadsheet does not read it as a formula; numbers and number-like texts are left alone.
- :func:`xml`: XML text and attribute values (JUnit): the characters XML 1.0 forbids shown as their escape.
- :func:`json_text`: a JSON document as ``json.dumps(..., ensure_ascii=False)`` wrote it, with C1 controls,
  bidirectional controls, separators and lone surrogates written as ``\\uXXXX``: the same JSON, nothing a terminal
  acts on.

The escapes are ASCII, so what is shown can be searched for and copied; a backslash in the data is left as it is.
"""

from __future__ import annotations

import re
from typing import Any


class _Lazy:
    """A regular expression compiled at its first use: ``--help`` and the commands that never escape a text skip
    compiling them (issue 30). ``.sub``, ``.search`` and ``.fullmatch`` as
    the compiled pattern's."""

    __slots__ = ("_args", "_compiled")

    def __init__(self, pattern: str, flags: int = 0):
        self._args = (pattern, flags)
        self._compiled: re.Pattern[str] | None = None

    def pattern(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(*self._args)
        return self._compiled

    def sub(self, repl: Any, string: str) -> str:
        return self.pattern().sub(repl, string)

    def search(self, string: str) -> re.Match[str] | None:
        return self.pattern().search(string)

    def fullmatch(self, string: str) -> re.Match[str] | None:
        return self.pattern().fullmatch(string)


# What a terminal (or a renderer) acts on rather than shows. Tab, newline and carriage return are decided per place.
_SPECIAL = (
    "\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f"  # C0 (but tab, newline, carriage return), DEL, C1
    "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"  # bidirectional marks, embeddings, overrides, isolates
    "\u2028\u2029"  # line and paragraph separators
    "\ud800-\udfff"  # lone surrogates (never encodable: they end a write with UnicodeEncodeError)
)
ACTED_ON = _Lazy(f"[{_SPECIAL}\r]")  # what a terminal acts on in a text that keeps its newlines and tabs
_BLOCK = _Lazy(f"[{_SPECIAL}]|\r(?!\n)")  # keeps newlines and tabs; a lone carriage return is shown
_LINE = _Lazy(f"[{_SPECIAL}\t\n\r]")
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
_MARKUP = _Lazy(r"(\\*)(\[[a-z#/@$][^[]*?])")  # Rich's and Textual's own escape, plus Textual's [$variable]
_MARKDOWN = _Lazy(r"([\\`\[\]#|]|<(?=[a-z/!?])|:(?=//)|(?<=www)\.)", re.IGNORECASE)
_FORMULA = tuple("=+-@\t\r")
_NUMBER = _Lazy(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?%?|[+-]?(inf|nan|infinity)", re.IGNORECASE)
_XML_BAD = _Lazy(f"[{_SPECIAL}\ufffe\uffff]|\r(?!\n)")
_JSON_BAD = _Lazy("[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ud800-\udfff]")


def _escape(char: str) -> str:
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _show(match: re.Match[str]) -> str:
    return _escape(match.group())


def terminal(text: object) -> str:
    """``text`` for a terminal, its lines kept: every control character but newline and tab shown as its escape
    (a CRLF becomes a newline, a lone CR is shown as ``\\r``)."""
    value = str(text)
    if "\r\n" in value:
        value = value.replace("\r\n", "\n")
    return _BLOCK.sub(_show, value)


def line(text: object) -> str:
    """``text`` for one line of a terminal: as :func:`terminal`, with newlines and tabs shown as ``\\n``/``\\t``."""
    return _LINE.sub(_show, str(text))


def markup(text: object) -> str:
    """``text`` inside Rich/Textual console markup, shown literally, on one line."""
    escaped = _MARKUP.sub(lambda m: f"{m.group(1)}{m.group(1)}\\{m.group(2)}", line(text))
    if escaped.endswith("\\") and not escaped.endswith("\\\\"):
        escaped += "\\"
    return escaped


def markdown(text: object) -> str:
    """``text`` as Markdown inline text or a table cell: one line, every Markdown character escaped."""
    return _MARKDOWN.sub(r"\\\1", line(text))  # "://" and "www." too: no autolink


def html(text: object) -> str:
    """``text`` for HTML text or a quoted attribute value."""
    value = terminal(text)
    return (
        value.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&#x27;")
    )


def csv_cell(value: Any) -> Any:
    """``value`` for a CSV cell: texts with their control characters shown and a formula start neutralised; other
    values (numbers, None) unchanged."""
    if not isinstance(value, str):
        return value
    if value.startswith(_FORMULA) and not _NUMBER.fullmatch(value):
        value = "'" + value
    return terminal(value)


def xml(text: object) -> str:
    """``text`` with the characters XML 1.0 forbids (and those a terminal acts on) shown as their escape; the XML
    writer escapes ``<``, ``&`` and quotes."""
    value = str(text)
    if "\r\n" in value:
        value = value.replace("\r\n", "\n")
    return _XML_BAD.sub(_show, value)


def json_text(document: str) -> str:
    """A JSON document with every character a terminal acts on written as a ``\\uXXXX`` escape (the same JSON)."""
    return _JSON_BAD.sub(lambda m: f"\\u{ord(m.group()):04x}", document)


__all__ = ["ACTED_ON", "csv_cell", "html", "json_text", "line", "markdown", "markup", "terminal", "xml"]
