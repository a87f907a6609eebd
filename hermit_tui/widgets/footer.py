"""The footer with the screen's keys, compact (less space between keys) on a narrow terminal so that they all fit
80 columns, help (?) and quit (q) included."""
from __future__ import annotations

from textual.widgets import Footer as TextualFooter

COMPACT_BELOW = 110  # columns


class Footer(TextualFooter):
    def on_mount(self) -> None:
        self._fit()

    def on_resize(self) -> None:
        self._fit()

    def _fit(self) -> None:
        self.compact = self.app.size.width < COMPACT_BELOW
