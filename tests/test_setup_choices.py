"""What the setup screen shows, worked out in the core: the versions it offers
(core.workspace.selectors.version_choices), what a typed selector names (describe_selector), and protocol checks that
never keep the screen from opening."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from hermit_tui.core.errors import InputError
from hermit_tui.core.report import protocol
from hermit_tui.core.workspace.config import load_config
from hermit_tui.core.workspace.selectors import describe_selector, version_choices
from hermit_tui.core.workspace.tasks import load_tasks


def git(tree, *args: str) -> str:
    return subprocess.run(["git", "-C", str(tree), *args], capture_output=True, text=True, check=True).stdout.strip()


def test_the_valid_versions_are_offered_by_the_selector_that_launches_them(demo_config):
    config = load_config(demo_config)
    tags = git(config.tree_dir, "tag").split()
    wanted = {"root" if t == "root" else "final" if t == f"{config.run_name}/final" else t for t in tags}
    choices = version_choices(config)
    values = [value for value, _ in choices.versions]
    assert set(values) == wanted and len(values) == len(wanted)  # the demo's untagged commit is invalid
    assert choices.in_tree == len(values) + 1 and choices.problem is None and choices.added == []
    by_value = dict(choices.versions)
    assert by_value["final"].commit == git(config.tree_dir, "rev-parse", f"{config.run_name}/final^{{commit}}")


def test_selectors_typed_earlier_are_checked_again(demo_config):
    config = load_config(demo_config)
    folder = demo_config.parent / "adapters" / "variant"
    folder.mkdir(parents=True)
    (folder / "adapter.yaml").write_text("name: variant\n")
    root = git(config.tree_dir, "rev-parse", "root^{commit}")
    choices = version_choices(config, ["root", "adapters/variant", root[:9], "no-such-tag", "--all"])
    got = {a.text: (a.note, a.refused) for a in choices.added}
    assert got["root"] == (f"tag · {root[:7]}", None)
    note, refused = got["adapters/variant"]
    # inside the project its text says where; the note names its files' digest (the same files, the same digest)
    assert refused is None and note is not None and re.fullmatch(r"adapter directory · files [0-9a-f]{7}", note)
    twin = demo_config.parent / "adapters" / "twin"
    shutil.copytree(folder, twin)
    again = {a.text: a.note for a in version_choices(config, ["adapters/twin"]).added}
    assert again["adapters/twin"] == note
    assert got[root[:9]] == (f"commit {root[:7]}", None)
    assert got["no-such-tag"][0] is None and "no-such-tag" in (got["no-such-tag"][1] or "")
    assert got["--all"][0] is None and "--all" in (got["--all"][1] or "")  # never handed to git as an option
    with pytest.raises(InputError):
        describe_selector("no-such-tag", config)


def test_a_tree_that_cannot_be_opened_is_said_not_raised(demo_config):
    config = load_config(demo_config)
    shutil.rmtree(config.tree_dir)
    choices = version_choices(config, ["none-such"])
    assert choices.versions == [] and choices.in_tree == 0
    assert choices.problem is not None and str(config.tree_dir.name) in choices.problem
    assert [a.text for a in choices.added] == ["none-such"] and choices.added[0].refused


def test_protocol_checks_that_fail_are_a_warning_for_the_screen(demo_config, monkeypatch):
    config = load_config(demo_config)
    taskset = load_tasks(config)
    assert protocol.checks_for_display(config, taskset) == protocol.protocol_checks(config, taskset)

    def broken(*args: object) -> list[protocol.Check]:
        raise OSError("disk on fire")

    monkeypatch.setattr(protocol, "protocol_checks", broken)
    (check,) = protocol.checks_for_display(config, taskset)
    assert (check.level, check.code, check.message) == (
        "warning",
        "checks_failed",
        "protocol checks failed: disk on fire",
    )
