"""The config picker, shown by ``hermit-tui`` without an argument: recent configs, a file browser that shows only
folders and YAML files, a path field, and the built-in demo (a teaching demonstration)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, DirectoryTree, Header, Input, OptionList, Static
from textual.widgets.option_list import Option

from hermit_tui import settings
from hermit_tui.dashboard import bindings
from hermit_tui.dashboard.paths import style
from hermit_tui.dashboard.screens.base import HermitScreen
from hermit_tui.dashboard.widgets.footer import Footer
from hermit_tui.dashboard.widgets.textfield import TextField

YAML_SUFFIXES = (".yaml", ".yml")
SKIPPED_DIRS = frozenset({"__pycache__", ".git", "node_modules"})
DEMO_NOTE = (
    "A teaching demonstration: a small deterministic workspace with a simulated agent. "
    "It is not evidence of any real model's performance."
)


def display_path(path: Path, *, from_cwd: bool = True) -> str:
    """``path`` as a user reads it: relative to the working directory when inside it (``from_cwd``), else with
    ``~`` for the home folder."""
    path = Path(path)
    bases = ((Path.cwd(), ""),) if from_cwd else ()
    for base, prefix in (*bases, (Path.home(), "~/")):
        try:
            rel = path.relative_to(base)
        except ValueError:
            continue
        text = str(rel)
        return (prefix + text) if text != "." else (prefix.rstrip("/") or ".")
    return str(path)


class YamlTree(DirectoryTree):
    """A directory tree that lists folders and ``*.yaml``/``*.yml`` files only, without hidden or tool folders."""

    def __init__(self, path: str | Path, **kwargs):
        super().__init__(path, **kwargs)
        self._name_root()

    def filter_paths(self, paths: Iterable[Path]) -> Iterable[Path]:
        # Runs in the tree's loader thread, so the is_dir() calls stay off the event loop.
        for path in paths:
            if path.name.startswith(".") or path.name in SKIPPED_DIRS:
                continue
            if path.is_dir() or path.suffix.lower() in YAML_SUFFIXES:
                yield path

    async def watch_path(self) -> None:
        await super().watch_path()
        self._name_root()

    def _name_root(self) -> None:
        """Label the root with the folder's name rather than its whole path."""
        root = Path(self.path).expanduser().resolve()
        self.root.set_label(f"{root.name or root}/")


class PickerScreen(HermitScreen[None]):
    """Choose a run config: recent ones, the file browser, a typed path, or the built-in demo."""

    CSS_PATH = [style("picker.tcss")]
    BINDINGS = bindings.PICKER
    TITLE = "hermit-tui"
    SUB_TITLE = "open a run config"

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="picker-panes"):
            with Vertical(id="recent-pane"):
                yield Static("Recent configs", classes="section-title")
                yield OptionList(id="recent")
                yield Static(
                    "No recent configs yet. Choose a run.yaml in the files, type its path below, or "
                    "open the built-in demo.",
                    id="recent-empty",
                    classes="muted",
                )
            with Vertical(id="files-pane"):
                yield Static("Files (folders and YAML only)", classes="section-title")
                yield YamlTree(Path.cwd(), id="files")
        with Horizontal(id="path-row"):
            yield Static("Path", id="path-label")
            yield TextField(placeholder="type or paste the path of a run.yaml, then Enter", id="path")
        with Horizontal(id="demo-row"):
            yield Button("Open the built-in demo (d)", id="demo", variant="primary")
            yield Static(DEMO_NOTE, id="demo-note")
        yield Footer()

    def on_mount(self) -> None:
        self.refresh_recent()
        recent = self.query_one("#recent", OptionList)
        (recent if recent.option_count else self.query_one("#files", YamlTree)).focus()

    def on_screen_resume(self) -> None:
        self.refresh_recent()

    def refresh_recent(self) -> None:
        """Fill the recent list from the settings file (newest first), or show the empty state."""
        recent = self.query_one("#recent", OptionList)
        paths = settings.recent_configs()
        recent.clear_options()
        for n, path in enumerate(paths):
            if n:
                recent.add_option(None)  # a separator line
            prompt = Text(path.name, style="bold")
            prompt.append(f"\n{display_path(path.parent, from_cwd=False)}", style="dim")
            recent.add_option(Option(prompt, id=str(path)))
        if paths:
            recent.highlighted = 0
        recent.display = bool(paths)
        self.query_one("#recent-empty").display = not paths

    # -- choosing -------------------------------------------------------------------------------------------------
    def choose(self, path: Path) -> None:
        self.app.open_config(Path(path))

    @on(OptionList.OptionSelected, "#recent")
    def _recent_chosen(self, event: OptionList.OptionSelected) -> None:
        if event.option.id is not None:
            self.choose(Path(event.option.id))

    @on(DirectoryTree.FileSelected, "#files")
    def _file_chosen(self, event: DirectoryTree.FileSelected) -> None:
        event.stop()
        self.choose(event.path)

    @on(Input.Submitted, "#path")
    def _path_entered(self, event: Input.Submitted) -> None:
        text = event.value.strip().strip("'\"")
        if not text:
            return
        path = Path(text).expanduser()
        path = path if path.is_absolute() else Path.cwd() / path
        if path.is_dir():
            if (path / "run.yaml").is_file():
                self.choose(path / "run.yaml")
            else:  # browse there
                tree = self.query_one("#files", YamlTree)
                tree.path = path
                tree.focus()
            return
        if not path.is_file():
            self.notify(f"{text}: no such file", severity="error")
            return
        self.choose(path)

    @on(Button.Pressed, "#demo")
    def action_open_demo(self) -> None:
        self.app.action_open_demo()

    # -- keys -----------------------------------------------------------------------------------------------------
    def action_focus_recent(self) -> None:
        recent = self.query_one("#recent", OptionList)
        if recent.display:
            recent.focus()

    def focus_main(self) -> None:
        recent = self.query_one("#recent", OptionList)
        (recent if recent.display else self.query_one("#files", YamlTree)).focus()

    def action_focus_files(self) -> None:
        self.query_one("#files", YamlTree).focus()

    def action_back(self) -> None:
        if len(self.app.screen_stack) > 2:
            self.app.pop_screen()

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        if action == "back":  # only when the picker was opened over a config (not at start-up)
            return len(self.app.screen_stack) > 2
        return True
