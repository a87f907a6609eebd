"""A text field that Escape leaves: the screen's keys work again at once (the screen's ``focus_main`` says where the
focus goes; else the first widget that is not a text field)."""

from __future__ import annotations

from textual.widgets import Input

from hermit_tui.dashboard import bindings


class TextField(Input):
    BINDINGS = bindings.TEXT_FIELD

    def action_leave(self) -> None:
        screen = self.screen
        focus_main = getattr(screen, "focus_main", None)
        if callable(focus_main):
            focus_main()
        else:
            others = [w for w in screen.focus_chain if not isinstance(w, Input)]
            screen.set_focus(others[0] if others else None)
        if screen.focused is self:  # nowhere else to go
            screen.set_focus(None)
