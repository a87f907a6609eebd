"""The documents keep up with the code: every relative link in README.md, CONTRIBUTING.md and docs/ resolves (a
``#anchor`` to a heading of its page, by GitHub's slug rules); every command, option and choice of the command line
(read from the argparse parser itself) is documented in docs/cli.md under its command, and no option named in the
documents is one the command line does not have; README.md is the front door: at most 200 lines, the install-and-demo
command and the test command that .ci/run runs as its first two code blocks."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from urllib.parse import unquote

import pytest

from hermit_tui.cli import _parser

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
CLI_PAGE = ROOT / "docs" / "cli.md"
INSTALL_AND_DEMO = "python3 -m venv .venv && . .venv/bin/activate && pip install -e . && hermit-tui demo"
MAX_README_LINES = 200

# Options of other programs that the documents name, beside hermit-tui's own: pytest and its plugins, the benchmark
# scripts, git, ruff, Chromium.
OTHER_PROGRAMS_OPTIONS = {
    "--snapshot-update",  # pytest-textual-snapshot
    "--dist",  # pytest-xdist
    "--end-of-options",  # git
    "--check",  # ruff format --check
    "--write",  # benchmarks/run_all.py
    "--quick",
    "--only",
}

FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
LINK = re.compile(r"!?\[((?:[^\[\]]|\[[^\]]*\])*)\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")


def pages() -> list[Path]:
    return [README, ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md"))]


def prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) of the lines outside fenced code blocks."""
    out, fence = [], None
    for number, line in enumerate(text.splitlines(), 1):
        match = FENCE.match(line)
        if match:
            if fence is None:
                fence = match.group(1)
            elif match.group(1) == fence:
                fence = None
            continue
        if fence is None:
            out.append((number, line))
    return out


def code_blocks(text: str) -> list[str]:
    """The contents of the fenced code blocks, in order."""
    blocks: list[str] = []
    current: list[str] = []
    fence = None
    for line in text.splitlines():
        match = FENCE.match(line)
        if match and fence is None:
            fence, current = match.group(1), []
        elif match and match.group(1) == fence:
            blocks.append("\n".join(current))
            fence = None
        elif fence is not None:
            current.append(line)
    return blocks


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: the rendered text (link text kept, code marks and tags dropped), lower case,
    punctuation removed (letters, digits, ``_`` and ``-`` stay), each space a hyphen."""
    text = re.sub(r"!?\[((?:[^\[\]]|\[[^\]]*\])*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text).replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every heading anchor of a page, the repeats numbered as GitHub numbers them (``x``, ``x-1``, ``x-2``)."""
    seen: dict[str, int] = {}
    out = set()
    for _, line in prose_lines(page.read_text(encoding="utf-8")):
        match = HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        out.add(base if count == 0 else f"{base}-{count}")
    return out


def links(page: Path) -> list[tuple[int, str]]:
    """(line number, target) of every link and image outside code (fenced blocks and inline code spans)."""
    out: list[tuple[int, str]] = []
    for number, line in prose_lines(page.read_text(encoding="utf-8")):
        line = INLINE_CODE.sub("", line)
        out.extend((number, m.group(2)) for m in LINK.finditer(line))
        ref = REFERENCE.match(line)
        if ref:
            out.append((number, ref.group(1)))
    return out


def broken_links(page: Path, root: Path = ROOT) -> list[str]:
    problems = []
    for number, target in links(page):
        if SCHEME.match(target):
            continue  # http:, https:, mailto:: not ours to check offline
        path_part, _, anchor = target.partition("#")
        dest = (page.parent / unquote(path_part)).resolve() if path_part else page
        where = f"{page.relative_to(root)}:{number}: {target}"
        if not dest.exists():
            problems.append(f"{where}: no such file")
        elif root not in dest.parents and dest != root:
            problems.append(f"{where}: outside the repository")
        elif anchor and dest.suffix == ".md" and unquote(anchor) not in anchors(dest):
            problems.append(f"{where}: no heading with that anchor in {dest.relative_to(root)}")
    return problems


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    assert page.is_file()
    assert broken_links(page) == []


def test_the_slugs_follow_githubs_rules():
    # computed by hand from the rule: lower case, punctuation out, spaces to hyphens
    assert slug("Review & publish") == "review--publish"
    assert slug("`hermit-tui eval`") == "hermit-tui-eval"
    assert slug("`hermit-tui`: the dashboard") == "hermit-tui-the-dashboard"
    assert slug("Compatibility with hermit-harness 0.1.0") == "compatibility-with-hermit-harness-010"
    assert slug("Statistics (`benchmarks/bench_stats.py`; issues 15 and 19)") == (
        "statistics-benchmarksbench_statspy-issues-15-and-19"
    )
    assert slug("[Triage](triage.md) and the × grid") == "triage-and-the--grid"


def test_a_broken_link_or_anchor_is_found(tmp_path):
    """The checker itself can fail: a missing file, a missing anchor; a link in code is not a link."""
    (tmp_path / "other.md").write_text("# A title\n\n## A title\n\n```\n# not a heading\n```\n")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](other.md#a-title) [ok](other.md#a-title-1) [ok](#here) `[code](missing.md)`\n"
        "[gone](missing.md) [bad](other.md#not-a-heading) [bad](#nowhere)\n"
        "```\n[in a block](missing-too.md)\n```\n"
        "## Here\n"
    )
    assert broken_links(page, tmp_path) == [
        "page.md:2: missing.md: no such file",
        "page.md:2: other.md#not-a-heading: no heading with that anchor in other.md",
        "page.md:2: #nowhere: no heading with that anchor in page.md",
    ]


# -- the command line, documented ------------------------------------------------------------------------------------


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(actions[0].choices) if actions else {}


def documented_options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))]


def section(page_text: str, title_contains: str) -> str | None:
    """The text under the first heading that contains ``title_contains``, up to the next heading of its level or
    above."""
    lines = page_text.splitlines()
    prose = dict(prose_lines(page_text))
    for index, line in enumerate(lines, 1):
        match = HEADING.match(line) if index in prose else None
        if match and title_contains in match.group(2):
            level = len(match.group(1))
            body = []
            for number in range(index + 1, len(lines) + 1):
                other = HEADING.match(lines[number - 1]) if number in prose else None
                if other and len(other.group(1)) <= level:
                    break
                body.append(lines[number - 1])
            return "\n".join(body)
    return None


def named(text: str, word: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text) is not None


def undocumented(command: str, parser: argparse.ArgumentParser, page_text: str) -> list[str]:
    """What of ``parser`` the section of ``command`` in ``page_text`` does not name: options, their choices, and
    positional arguments (by metavar, else by their name in capitals)."""
    heading = f"`{command}`"
    body = section(page_text, heading)
    if body is None:
        return [f"no section whose heading names {heading}"]
    missing = []
    for action in documented_options(parser):
        names = list(action.option_strings) or [str(action.metavar or action.dest.upper())]
        missing += [f"{command} {name}" for name in names if not named(body, str(name))]
        for choice in action.choices or ():
            if not named(body, str(choice)):
                missing.append(f"{command} {names[0]} {choice}")
    return missing


def test_every_subcommand_and_option_of_help_is_in_the_docs():
    """Walks the parser ``hermit-tui --help`` prints: the top-level options under the dashboard's section, and each
    subcommand's options and choices under its own section of docs/cli.md."""
    parser = _parser()
    commands = subcommands(parser)
    assert {"eval", "report", "gate", "publish", "show", "serve", "annotate", "demo"} <= set(commands)
    text = CLI_PAGE.read_text(encoding="utf-8")
    missing = undocumented("hermit-tui", parser, text)
    for name, sub in commands.items():
        missing += undocumented(f"hermit-tui {name}", sub, text)
    assert missing == []
    every_page = "\n".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").glob("*.md")))
    assert all(named(every_page, f"hermit-tui {name}") for name in commands)


def test_an_undocumented_option_is_found():
    """The walk sees an option the parser gains, a choice it gains, and a command without a section."""
    parser = _parser()
    sub = subcommands(parser)["gate"]
    sub.add_argument("--brand-new-option", choices=("left", "right"))
    text = CLI_PAGE.read_text(encoding="utf-8")
    assert undocumented("hermit-tui gate", sub, text) == [
        "hermit-tui gate --brand-new-option",
        "hermit-tui gate --brand-new-option left",
        "hermit-tui gate --brand-new-option right",
    ]
    assert undocumented("hermit-tui frobnicate", sub, text) == [
        "no section whose heading names `hermit-tui frobnicate`"
    ]


def test_no_document_names_an_option_the_command_line_lacks():
    """A renamed or removed option leaves no stale name behind (options of other programs are listed above)."""
    parser = _parser()
    known = {s for a in parser._actions for s in a.option_strings}
    for sub in subcommands(parser).values():
        known |= {s for a in sub._actions for s in a.option_strings}
    stale = sorted(
        f"{page.relative_to(ROOT)}: {option}"
        for page in pages()
        for option in set(OPTION.findall(page.read_text(encoding="utf-8")))
        if option not in known | OTHER_PROGRAMS_OPTIONS
    )
    assert stale == []


# -- the front door --------------------------------------------------------------------------------------------------


def ci_test_command() -> str:
    """The last command of .ci/run: the README's test command, run verbatim."""
    lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    return [line for line in lines if line and not line.startswith("#")][-1]


def test_the_readme_is_a_front_door():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= MAX_README_LINES
    assert "pytest" in ci_test_command()
    assert code_blocks(text)[:2] == [INSTALL_AND_DEMO, ci_test_command()]


def test_every_docs_page_is_reachable_from_the_index():
    index = ROOT / "docs" / "README.md"
    linked = {(index.parent / unquote(t.partition("#")[0])).resolve() for _, t in links(index) if not SCHEME.match(t)}
    pages_of_docs = {p.resolve() for p in (ROOT / "docs").rglob("*.md")} - {index.resolve()}
    assert sorted(str(p.relative_to(ROOT)) for p in pages_of_docs - linked) == []
    from_readme = {(ROOT / unquote(t.partition("#")[0])).resolve() for _, t in links(README) if not SCHEME.match(t)}
    assert {index.resolve(), (ROOT / "CONTRIBUTING.md").resolve()} <= from_readme
