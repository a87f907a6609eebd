"""The config picker: recent configs, the YAML-only file browser, the path field and the built-in demo."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from textual.widgets import Button, Input, OptionList, Static

from hermit_tui.dashboard.app import HermitApp
from hermit_tui.dashboard.screens.picker import PickerScreen, YamlTree
from hermit_tui.dashboard.state.store import EvalStore


@pytest.fixture
def workspace(tmp_path, monkeypatch) -> Path:
    """A fixed folder tree as the working directory, and an empty private settings folder."""
    monkeypatch.setenv("HERMIT_TUI_CONFIG_DIR", str(tmp_path / "settings"))
    root = tmp_path / "workspace"
    for folder in ("experiments", "runs", ".hidden", "__pycache__", "node_modules", ".git"):
        (root / folder).mkdir(parents=True)
    for name in (
        "run.yaml",
        "smoke.yml",
        "notes.txt",
        "pipeline.py",
        ".pre-commit-config.yaml",
        "experiments/bigger.yaml",
        "experiments/readme.md",
        "node_modules/package.yaml",
    ):
        (root / name).write_text("x: 1\n")
    monkeypatch.chdir(root)
    return root


def make_app() -> HermitApp:
    return HermitApp(store=EvalStore(), live_updates=False)


def write_recent(tmp_path: Path, paths: list[Path]) -> None:
    folder = tmp_path / "settings"
    folder.mkdir(exist_ok=True)
    (folder / "settings.json").write_text(json.dumps({"recent": [str(p) for p in paths]}))


async def loaded(pilot) -> YamlTree:
    """The file tree once every folder queued for loading is in (its loader worker itself never ends)."""
    await pilot.pause()
    tree = pilot.app.screen.query_one("#files", YamlTree)
    await tree._load_queue.join()
    await pilot.pause()
    return tree


async def test_recent_configs_newest_first_with_their_folder(workspace, tmp_path):
    newer, older = tmp_path / "proj-b" / "run.yaml", tmp_path / "proj-a" / "eval.yml"
    for p in (newer, older):
        p.parent.mkdir()
        p.write_text("x: 1\n")
    write_recent(tmp_path, [newer, tmp_path / "gone" / "run.yaml", older])  # a vanished one is dropped
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        assert isinstance(app.screen, PickerScreen)
        recent = app.screen.query_one("#recent", OptionList)
        assert [recent.get_option_at_index(i).id for i in range(recent.option_count)] == [str(newer), str(older)]
        prompts = [str(recent.get_option_at_index(i).prompt) for i in range(recent.option_count)]
        assert prompts[0].splitlines()[0] == "run.yaml" and prompts[0].endswith("proj-b")
        assert prompts[1].splitlines()[0] == "eval.yml" and prompts[1].endswith("proj-a")
        assert not app.screen.query_one("#recent-empty").display
        assert app.focused is recent


async def test_empty_recent_list_says_so(workspace):
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        empty = app.screen.query_one("#recent-empty", Static)
        assert empty.display and not app.screen.query_one("#recent").display
        assert "No recent configs yet" in str(empty.content)


async def test_tree_shows_only_folders_and_yaml(workspace):
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        tree = await loaded(pilot)
        assert str(tree.root.label) == "workspace/"
        assert [str(n.label) for n in tree.root.children] == ["experiments", "runs", "run.yaml", "smoke.yml"]
        experiments = tree.root.children[0]
        experiments.expand()
        await loaded(pilot)
        assert [str(n.label) for n in experiments.children] == ["bigger.yaml"]


async def test_enter_on_a_yaml_file_opens_it(monkeypatch, workspace):
    app = make_app()
    opened: list[object] = []
    monkeypatch.setattr(app, "open_config", opened.append)
    async with app.run_test(size=(120, 40)) as pilot:
        tree = await loaded(pilot)
        assert app.focused is tree  # no recent configs: the files have the focus
        await pilot.press("down", "down", "down")  # workspace/ -> experiments -> runs -> run.yaml
        assert tree.cursor_node is not None
        assert tree.cursor_node.data is not None
        assert tree.cursor_node.data.path == workspace / "run.yaml"
        await pilot.press("enter")
        await pilot.pause()
        assert opened == [workspace / "run.yaml"]


async def test_enter_on_a_recent_entry_opens_it(monkeypatch, workspace, tmp_path):
    config = tmp_path / "elsewhere" / "run.yaml"
    config.parent.mkdir()
    config.write_text("x: 1\n")
    write_recent(tmp_path, [config])
    app = make_app()
    opened: list[object] = []
    monkeypatch.setattr(app, "open_config", opened.append)
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        await pilot.press("enter")
        await pilot.pause()
        assert opened == [config]


async def test_typed_path_opens_a_file_or_a_folder_run_yaml(monkeypatch, workspace):
    app = make_app()
    opened: list[object] = []
    monkeypatch.setattr(app, "open_config", opened.append)
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        field = app.screen.query_one("#path", Input)
        field.focus()
        await pilot.press(*"smoke.yml", "enter")  # relative to the working directory
        field.value = str(workspace)  # a folder holding run.yaml
        await pilot.press("enter")
        field.value = "missing.yaml"
        await pilot.press("enter")
        await pilot.pause()
        assert opened == [workspace / "smoke.yml", workspace / "run.yaml"]
        field.value = "experiments"  # a folder without run.yaml: browse there
        await pilot.press("enter")
        tree = await loaded(pilot)
        assert str(tree.root.label) == "experiments/"
        assert [str(n.label) for n in tree.root.children] == ["bigger.yaml"]


async def test_demo_button_and_key(monkeypatch, workspace):
    app = make_app()
    demos = []
    monkeypatch.setattr(app, "action_open_demo", lambda: demos.append("demo"))
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        button = app.screen.query_one("#demo", Button)
        assert "demo" in str(button.label)
        assert "teaching demonstration" in str(app.screen.query_one("#demo-note", Static).content)
        await pilot.click("#demo")
        await pilot.pause()
        assert demos == ["demo"]
        app.screen.query_one("#files").focus()
        await pilot.press("d")
        await pilot.pause()
        assert demos == ["demo", "demo"]
        app.screen.query_one("#path", Input).focus()
        await pilot.press("d")  # typing in the path field is not a shortcut
        await pilot.pause()
        assert demos == ["demo", "demo"]
        assert app.screen.query_one("#path", Input).value == "d"


async def test_tab_order_recent_files_path_demo(workspace, tmp_path):
    write_recent(tmp_path, [workspace / "run.yaml"])
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        assert app.focused is not None
        order = [app.focused.id]
        for _ in range(3):
            await pilot.press("tab")
            order.append(app.focused.id)
        assert order == ["recent", "files", "path", "demo"]
        await pilot.press("r")
        assert app.focused.id == "recent"
        await pilot.press("f")
        assert app.focused.id == "files"


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
def test_snapshot(workspace, snap_compare, size):
    assert snap_compare(make_app(), terminal_size=size, run_before=loaded)


async def test_escape_goes_back_only_when_opened_over_a_config(workspace):
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        await pilot.press("escape")  # at start-up there is nothing to go back to
        assert isinstance(app.screen, PickerScreen) and len(app.screen_stack) == 2
        assert app.screen.check_action("back", ()) is False  # so the Footer does not offer it
        from hermit_tui.dashboard.screens.help import HelpScreen

        await app.push_screen(HelpScreen())  # any screen beneath, as a config's setup would be
        await app.push_screen(PickerScreen())
        await loaded(pilot)
        assert app.screen.check_action("back", ()) is True
        await pilot.press("escape")
        assert isinstance(app.screen, HelpScreen)
