"""The dashboard's screens know their app: ``self.app`` is a :class:`~hermit_tui.app.HermitApp` to the type checker
(Textual's ``getters.app``, declared for mypy only: nothing changes at run time, and the app module, which imports
the screens, is not imported back)."""
from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from textual.screen import ModalScreen, Screen

if TYPE_CHECKING:
    from textual import getters

    from hermit_tui.app import HermitApp
    from hermit_tui.core.config import Config
    from hermit_tui.core.tasks import TaskSet

ResultType = TypeVar("ResultType")


class HermitScreen(Screen[ResultType]):
    """A full screen of the dashboard."""

    if TYPE_CHECKING:
        app = getters.app(HermitApp)


class HermitModal(ModalScreen[ResultType]):
    """A dialog of the dashboard."""

    if TYPE_CHECKING:
        app = getters.app(HermitApp)


def opened(app: HermitApp) -> tuple[Config, TaskSet]:
    """The config the dashboard opened and its tasks: every screen past the picker has them."""
    if app.config is None or app.taskset is None:
        raise RuntimeError("no config is open (the picker comes first)")
    return app.config, app.taskset
