"""The adapter tree and selector resolution, on real git repositories built in tmp_path."""

from __future__ import annotations

import hashlib
import os
import subprocess
from datetime import datetime
from pathlib import Path
from typing import cast

import git
import pytest

from hermit_tui.core.errors import InputError
from hermit_tui.core.workspace.config import Config
from hermit_tui.core.workspace.selectors import (
    TEMP_PREFIX,
    check_selector_text,
    directory_hash,
    label_for,
    materialize,
    resolve_selector,
    resolve_selectors,
)
from hermit_tui.core.workspace.tree import INVALID_MARK, AdapterTree

IDENTITY = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@localhost",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@localhost",
}


class Cfg:
    """The part of Config the selectors use."""

    def __init__(self, base: Path, run_name: str = "demo"):
        self.base = base
        self.run_name = run_name
        self.run_dir = base / "runs" / run_name
        self.tree_dir = base / "runs" / "trees" / "demo-tpl"

    def resolve_path(self, text: str) -> Path | None:
        path = Path(os.path.expandvars(os.path.expanduser(text)))
        return path if path.is_absolute() else self.base / path


def stand_in(base: Path, run_name: str = "demo") -> Config:
    """A Cfg where the selectors take a Config: they read no more of it than Cfg has."""
    return cast(Config, Cfg(base, run_name))


def commit(repo: git.Repo, files: dict[str, str], message: str) -> str:
    for rel, text in files.items():
        assert repo.working_tree_dir is not None
        target = Path(repo.working_tree_dir) / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        repo.git.add("--", rel)
    repo.git.commit("-q", "-m", message, env=IDENTITY)
    return repo.git.rev_parse("HEAD")


class Built:
    """Shas and file contents of the fixture tree, recorded as it is built."""

    cfg: Config
    files: dict[str, dict[str, str]]
    tree: git.Repo
    root: str
    step1: str
    step2: str
    invalid: str
    repair: str
    final: str
    other: str


@pytest.fixture
def built(tmp_path) -> Built:
    """Tree: trunk + root; branch demo with ckpt-step-1, ckpt-step-2 (= ckpt-epoch-1), an invalid commit, its repair,
    final; branch other with other/final; tags v1 (on root) and demo/x (on step 1); checkout at runs/demo/checkout."""
    b = Built()
    b.cfg = stand_in(tmp_path / "work")
    tree = git.Repo.init(b.cfg.tree_dir, mkdir=True, initial_branch="trunk")
    b.files = {}
    b.files["root"] = {"adapter.yaml": "template: {id: demo-tpl, version: '1'}\n", "ADAPTER.md": "seed\n"}
    b.root = commit(tree, b.files["root"], "root: template demo-tpl@1")
    tree.git.tag("root")
    tree.git.tag("v1")
    checkout = b.cfg.run_dir / "checkout"
    tree.git.worktree("add", "-q", "-b", "demo", str(checkout), "root")
    run = git.Repo(checkout)
    b.step1 = commit(run, {"ADAPTER.md": "step one\n"}, "step 1: learn greetings")
    b.files["step1"] = {**b.files["root"], "ADAPTER.md": "step one\n"}
    b.step2 = commit(run, {"ADAPTER.md": "step two\n", "notes/tips.txt": "ünïcode ✓\n"}, "step 2: add tips")
    b.files["step2"] = {**b.files["step1"], "ADAPTER.md": "step two\n", "notes/tips.txt": "ünïcode ✓\n"}
    b.invalid = commit(run, {"adapter.yaml": "broken: ["}, f"step 3: break it\n\n{INVALID_MARK}\n")
    b.repair = commit(run, {"adapter.yaml": b.files["root"]["adapter.yaml"]}, "step 3: repair")
    b.final = commit(run, {"CARD.md": "# card\n"}, "final: demo")
    for tag, sha in [
        ("demo/ckpt-step-1", b.step1),
        ("demo/ckpt-step-2", b.step2),
        ("demo/ckpt-epoch-1", b.step2),
        ("demo/final", b.final),
        ("demo/x", b.step1),
    ]:
        tree.git.tag(tag, sha)
    tree.git.branch("other", "root")
    tree.git.worktree("add", "-q", str(tmp_path / "other-checkout"), "other")
    b.other = commit(git.Repo(tmp_path / "other-checkout"), {"ADAPTER.md": "other\n"}, "final: other")
    tree.git.tag("other/final", b.other)
    b.tree = tree
    return b


def make_adapter_dir(path: Path, text: str = "x\n") -> Path:
    path.mkdir(parents=True)
    (path / "adapter.yaml").write_text("template: {id: outside, version: '1'}\n")
    (path / "ADAPTER.md").write_text(text)
    return path


def files_under(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): p.read_text() for p in folder.rglob("*") if p.is_file()}


def temp_exports() -> set[str]:
    import tempfile

    return {p.name for p in Path(tempfile.gettempdir()).glob(TEMP_PREFIX + "*")}


# ---------------------------------------------------------------- tree


def test_tree_missing_or_not_git(tmp_path):
    with pytest.raises(InputError, match=f"adapter tree {tmp_path / 'nope'} does not exist"):
        AdapterTree(tmp_path / "nope")
    (tmp_path / "plain").mkdir()
    with pytest.raises(InputError, match="is not a git repository"):
        AdapterTree(tmp_path / "plain")


def test_resolve_tags_branches_and_commits(built):
    tree = AdapterTree(built.cfg.tree_dir)
    assert tree.resolve("root") == built.root
    assert tree.resolve("demo/ckpt-step-2") == built.step2
    assert tree.resolve("refs/heads/demo") == built.final  # the run's branch head, named as a branch
    with pytest.raises(InputError, match="'demo' is a branch"):
        tree.resolve("demo")  # a bare branch name is not a version (issue 29)
    assert tree.resolve(built.step1[:7]) == built.step1
    assert tree.resolve(built.step1.upper()) == built.step1
    assert tree.resolve(built.step1) == built.step1
    with pytest.raises(InputError, match="unknown adapter version 'nosuch' in tree"):
        tree.resolve("nosuch")
    with pytest.raises(InputError, match="unknown adapter version 'root~1'"):
        tree.resolve("root~1")  # revision syntax is not a version name
    for missing in ("0" * 40, built.root[:3], "HEAD"):
        with pytest.raises(InputError, match="unknown adapter version"):
            tree.resolve(missing)
    assert tree.tag_target("demo/final") == built.final
    assert tree.tag_target("demo/nosuch") is None


def test_resolve_ambiguous_abbreviation(built):
    """Two commit objects crafted to share their first four hex digits."""
    empty_tree = built.tree.git.hash_object("-t", "tree", "/dev/null")
    seen: dict[str, bytes] = {}
    i = 0
    while True:
        body = (
            f"tree {empty_tree}\nparent {built.root}\nauthor t <t@localhost> 0 +0000\n"
            f"committer t <t@localhost> 0 +0000\n\ncrafted {i}\n"
        ).encode()
        sha = hashlib.sha1(b"commit %d\0" % len(body) + body).hexdigest()
        if sha[:4] in seen:
            break
        seen[sha[:4]] = body
        i += 1
    shas = []
    for data in (seen[sha[:4]], body):
        out = subprocess.run(
            ["git", "-C", str(built.cfg.tree_dir), "hash-object", "-t", "commit", "-w", "--stdin"],
            input=data,
            capture_output=True,
            check=True,
        )
        shas.append(out.stdout.decode().strip())
    assert shas[0] != shas[1] and shas[0][:4] == shas[1][:4] == sha[:4]
    tree = AdapterTree(built.cfg.tree_dir)
    with pytest.raises(InputError, match=f"adapter version '{sha[:4]}' is ambiguous"):
        tree.resolve(sha[:4])
    assert tree.resolve(shas[1]) == shas[1]


def test_is_valid_and_export(built, tmp_path):
    tree = AdapterTree(built.cfg.tree_dir)
    assert tree.is_valid(built.repair) and not tree.is_valid(built.invalid)
    dest = tree.export(built.step2, tmp_path / "out")
    assert files_under(dest) == built.files["step2"]
    assert not (dest / ".git").exists()


def test_move_tag(built):
    tree = AdapterTree(built.cfg.tree_dir)
    with pytest.raises(InputError, match="demo/final changed meanwhile"):
        tree.move_tag("demo/final", built.step1, expected=built.step2)  # compare-and-swap: it holds final
    assert built.tree.git.rev_parse("demo/final^{commit}") == built.final
    tree.move_tag("demo/final", built.step1, expected=tree.ref_value("refs/tags/demo/final"))
    assert built.tree.git.rev_parse("demo/final^{commit}") == built.step1
    with pytest.raises(InputError, match="changed meanwhile"):
        tree.move_tag("demo/new", built.step1, expected=built.step1)  # there is no such tag
    tree.move_tag("demo/new", built.step1, expected=None)
    with pytest.raises(InputError, match="changed meanwhile"):
        tree.move_tag("demo/new", built.step2, expected=None)  # only if it does not exist
    with pytest.raises(InputError):
        tree.move_tag("-f", built.step1, expected=None)


def test_versions_order_and_fields(built):
    tree = AdapterTree(built.cfg.tree_dir)
    got = [(v.name, v.kind, v.commit, v.run, v.valid) for v in tree.versions("demo")]
    assert got == [
        ("root", "root", built.root, None, True),
        ("demo/ckpt-step-1", "checkpoint", built.step1, "demo", True),
        ("demo/ckpt-step-2", "checkpoint", built.step2, "demo", True),
        ("demo/ckpt-epoch-1", "checkpoint", built.step2, "demo", True),
        ("demo/final", "final", built.final, "demo", True),
        ("other/final", "final", built.other, "other", True),
        ("demo/x", "tag", built.step1, "demo", True),
        ("v1", "tag", built.root, None, True),
        (built.invalid[:7], "commit", built.invalid, "demo", False),
        (built.repair[:7], "commit", built.repair, "demo", True),
    ]
    by_name = {v.name: v for v in tree.versions("demo")}
    assert by_name["demo/ckpt-step-2"].message == "step 2: add tips"
    assert by_name[built.invalid[:7]].message == "step 3: break it"
    date = by_name["root"].date
    assert isinstance(date, datetime) and date.tzinfo is not None
    assert date.timestamp() == built.tree.commit(built.root).committed_date
    # another run first when it is the one asked for; no untagged commits without a run
    names = [v.name for v in tree.versions("other")]
    assert names[:3] == ["root", "other/final", "demo/ckpt-step-1"] and built.invalid[:7] not in names
    assert [v.kind for v in tree.versions()][-1] == "tag"


# ---------------------------------------------------------------- selectors


def test_label_for():
    assert label_for("demo/ckpt-step-1") == "demo_ckpt-step-1"
    assert label_for("bc7efd7") == "bc7efd7"


@pytest.mark.parametrize("text", ["", "-h", "--output=/x", "a b", "tab\there", "nl\n", "\x1b[31m", "zw\u200bsp"])
def test_check_selector_text_refuses(text):
    with pytest.raises(InputError):
        check_selector_text(text)


def test_every_selector_kind(built):
    cfg = built.cfg
    got = {
        t: resolve_selector(t, cfg) for t in ["none", "root", "final", "demo/ckpt-step-1", built.step2[:9], built.step2]
    }
    assert [(s.kind, s.label, s.commit, s.ref) for s in got.values()] == [
        ("none", "none", None, None),
        ("root", "root", built.root, "root"),
        ("final", "final", built.final, "demo/final"),
        ("tag", "demo_ckpt-step-1", built.step1, "demo/ckpt-step-1"),
        ("commit", built.step2[:9], built.step2, built.step2),
        ("commit", built.step2, built.step2, built.step2),
    ]
    assert all(s.text == t and s.path is None and s.content_hash is None for t, s in got.items())


def test_directory_selector(built, monkeypatch):
    cfg = built.cfg
    folder = make_adapter_dir(cfg.base / "adapters" / "mine")
    sel = resolve_selector("adapters/mine", cfg)
    assert (sel.kind, sel.label, sel.commit, sel.path) == ("directory", "mine", None, folder)
    # absolute, ~ and $VAR spellings name the same folder
    monkeypatch.setenv("HT_TEST_ADAPTERS", str(cfg.base / "adapters"))
    assert resolve_selector("$HT_TEST_ADAPTERS/mine", cfg).path == folder
    assert resolve_selector(str(folder) + "/../mine", cfg).path == folder
    # a folder named like a ref is checked first, as hermit does; one starting with '-' is fine too
    make_adapter_dir(cfg.base / "root")
    assert resolve_selector("root", cfg).kind == "directory"
    make_adapter_dir(cfg.base / "-odd name")
    assert resolve_selector("-odd name", cfg).label == "-odd name"


def test_directory_content_hash(tmp_path):
    folder = make_adapter_dir(tmp_path / "a", "hello\n")
    expected = hashlib.sha256()
    for rel, data in sorted({"adapter.yaml": (folder / "adapter.yaml").read_bytes(), "ADAPTER.md": b"hello\n"}.items()):
        expected.update(rel.encode() + b"\0" + str(len(data)).encode() + b"\0" + data)
    assert directory_hash(folder) == expected.hexdigest()
    (folder / "__pycache__").mkdir()
    (folder / "__pycache__" / "x.pyc").write_bytes(b"junk")
    (folder / ".git").write_text("gitdir: elsewhere\n")
    assert directory_hash(folder) == expected.hexdigest()
    (folder / "ADAPTER.md").write_text("hellO\n")
    assert directory_hash(folder) != expected.hexdigest()


def test_directory_without_manifest(built):
    (built.cfg.base / "adapters" / "empty").mkdir(parents=True)
    with pytest.raises(InputError, match=r"adapter directory .*adapters/empty has no adapter.yaml"):
        resolve_selector("adapters/empty", built.cfg)


def test_invalid_commit_refused(built):
    short = built.invalid[:7]
    with pytest.raises(InputError, match=f"selector '{short}' is an invalid commit \\(fails check_spec\\), not an"):
        resolve_selector(short, built.cfg)
    assert resolve_selector(built.repair[:7], built.cfg).commit == built.repair


def test_unknown_and_missing(built, tmp_path):
    with pytest.raises(InputError, match="unknown adapter version 'demo/ckpt-step-9'"):
        resolve_selector("demo/ckpt-step-9", built.cfg)
    with pytest.raises(InputError, match="unknown adapter version 'final'.*'ghost/final'"):
        resolve_selector("final", stand_in(built.cfg.base, run_name="ghost"))
    lonely = stand_in(tmp_path / "lonely")
    with pytest.raises(InputError, match=f"adapter tree {lonely.tree_dir} does not exist"):
        resolve_selector("root", lonely)
    assert resolve_selector("none", lonely).kind == "none"


def test_option_looking_selectors_write_nothing(built, tmp_path, monkeypatch):
    monkeypatch.chdir(built.cfg.tree_dir)
    target = tmp_path / "x" / "pwned"
    before = sorted(p for p in tmp_path.rglob("*"))
    texts = [f"--output={target}", f"--output={target}.tar", "-o" + str(target), f"root --output={target}"]
    for text in texts:
        with pytest.raises(InputError, match="begins with '-'|whitespace"):
            resolve_selector(text, built.cfg)
        with pytest.raises(InputError):
            resolve_selectors(["none", text], built.cfg)
    tree = AdapterTree(built.cfg.tree_dir)
    for call in (tree.resolve, lambda t: tree.export(t, tmp_path / "dest")):
        with pytest.raises(InputError):
            call(f"--output={target}")
    assert not (tmp_path / "x").exists() and not (tmp_path / "dest").exists()
    assert sorted(p for p in tmp_path.rglob("*")) == before


def test_selectors_of_one_launch(built):
    sels = resolve_selectors(["none", "root", "final", "demo/final"], built.cfg)
    assert [s.label for s in sels] == ["none", "root", "final", "demo_final"]
    with pytest.raises(InputError, match="selector 'root' is given twice"):
        resolve_selectors(["root", "none", "root"], built.cfg)


def test_label_collisions_refused(built):
    cfg = built.cfg
    make_adapter_dir(cfg.base / "adapters" / "root")
    with pytest.raises(InputError, match="selectors 'root' and 'adapters/root' would both write eval/root/"):
        resolve_selectors(["root", "adapters/root"], cfg)
    assert resolve_selector("adapters/root", cfg).label == "root"  # alone it is fine
    make_adapter_dir(cfg.base / "adapters" / "demo_x")
    with pytest.raises(InputError, match="'demo/x' and 'adapters/demo_x' would both write eval/demo_x/"):
        resolve_selectors(["demo/x", "adapters/demo_x"], cfg)
    make_adapter_dir(cfg.base / "elsewhere" / "none")
    with pytest.raises(InputError, match="eval/none/"):
        resolve_selectors(["elsewhere/none", "none"], cfg)


# ---------------------------------------------------------------- materialize


def test_materialize_tree_selector(built):
    before = temp_exports()
    sel = resolve_selector("demo/ckpt-step-2", built.cfg)
    with materialize(sel, built.cfg) as path:
        assert path is not None
        assert path.name.startswith(TEMP_PREFIX)
        assert files_under(path) == built.files["step2"]
    assert not path.exists() and temp_exports() == before
    with pytest.raises(RuntimeError):
        with materialize(resolve_selector("root", built.cfg), built.cfg) as path:
            assert path is not None
            assert files_under(path) == built.files["root"]
            raise RuntimeError("pipeline crashed")
    assert path is not None
    assert not path.exists() and temp_exports() == before


def test_materialize_none_and_directory(built):
    folder = make_adapter_dir(built.cfg.base / "mine")
    with materialize(resolve_selector("none", built.cfg), built.cfg) as path:
        assert path is None
    with materialize(resolve_selector("mine", built.cfg), built.cfg) as path:
        assert path == folder
    assert folder.is_dir()


def test_a_missing_directory_is_named_as_one_not_as_an_unknown_version(built):
    """Issue 27 (finding 11): ``adapters/nope`` said "unknown adapter version"; it is a directory that does not
    exist. A name that is no path (``demo/ckpt-step-9``: no folder ``demo``) stays an unknown version."""
    (built.cfg.base / "adapters").mkdir(parents=True)
    for text in ("adapters/nope", "./nope", "nope/"):
        with pytest.raises(InputError, match=r"^no such directory: .*nope \(and no tag or commit"):
            resolve_selector(text, built.cfg)
    with pytest.raises(InputError, match="unknown adapter version 'demo/ckpt-step-9'"):
        resolve_selector("demo/ckpt-step-9", built.cfg)


def test_one_tree_per_path_opens_the_tree_once_and_closes_it_at_the_end(built, monkeypatch):
    """Inside one_tree_per_path every selector resolved opens no tree of its own (issue 30: the report opened the
    adapter tree five times, 26 git processes on the demo); the refs a shared tree listed follow a tag it moves;
    outside it, each open is its own tree."""
    from hermit_tui.core.workspace import tree as tree_module
    from hermit_tui.core.workspace.gitrepo import GitReader
    from hermit_tui.core.workspace.tree import one_tree_per_path, open_tree

    opened: list[str] = []

    def counted(path):
        opened.append(str(path))
        return GitReader(path)

    monkeypatch.setattr(tree_module, "GitReader", counted)
    with one_tree_per_path():
        selectors = [resolve_selector(text, built.cfg) for text in ("root", "final", "demo/ckpt-step-1", built.step2)]
        assert [s.commit for s in selectors] == [built.root, built.final, built.step1, built.step2]
        shared = open_tree(built.cfg.tree_dir)
        assert open_tree(str(built.cfg.tree_dir) + "/") is shared
        shared.close()  # a shared tree is closed by the scope, not by its reader
        assert shared.resolve("v1") == built.root
        with one_tree_per_path():  # nested: the outer scope's trees
            assert open_tree(built.cfg.tree_dir) is shared
        shared.move_tag("v1", built.step1, expected=shared.ref_value("refs/tags/v1"))
        assert shared.resolve("v1") == built.step1 == resolve_selector("v1", built.cfg).commit
    assert len(opened) == 1
    assert open_tree(built.cfg.tree_dir) is not shared
    assert len(opened) == 2 and resolve_selector("root", built.cfg).commit == built.root and len(opened) == 3


def test_the_selectors_of_one_launch_open_the_tree_once(built, monkeypatch):
    """resolve_selectors (a launch's plan) reads the tree once for all its selectors (issue 30: root and final
    started 10 git processes at every eval's start, 4 now): the same selectors, one GitReader, closed at the end."""
    from hermit_tui.core.workspace import tree as tree_module
    from hermit_tui.core.workspace.gitrepo import GitReader

    opened: list[GitReader] = []

    def counted(path):
        opened.append(GitReader(path))
        return opened[-1]

    monkeypatch.setattr(tree_module, "GitReader", counted)
    texts = ["none", "root", "final", "demo/ckpt-step-1", built.step2[:9]]
    sels = resolve_selectors(texts, built.cfg)
    assert [(s.kind, s.commit) for s in sels] == [
        ("none", None),
        ("root", built.root),
        ("final", built.final),
        ("tag", built.step1),
        ("commit", built.step2),
    ]
    assert len(opened) == 1 and opened[0]._batch is None  # its cat-file helper stopped with the scope
    with pytest.raises(InputError, match="unknown adapter version 'nope'"):
        resolve_selectors(["root", "nope"], built.cfg)
    assert len(opened) == 2 and opened[1]._batch is None
